"""Profiles and run parameters in params.yaml — no Dagster import.

params.yaml at the repository root is the single source of truth for run parameters; DVC
tracks it, the `compute` resource reads it, tests read it. Each paper's section is

    <slug>:
      base:  {...}   # values shared by the profiles
      smoke: {...}   # overrides of base (deep-merged: mappings merge, everything else replaces)
      cpu:   {...}
      gpu:   {...}

The file is parsed once per process and re-read only when it changes on disk.
"""
from __future__ import annotations

import copy
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
PARAMS_FILE = REPO_ROOT / "params.yaml"
PROFILES = ("smoke", "cpu", "gpu")
PROFILE_ENV_VAR = "PAPERLAB_PROFILE"
DEFAULT_PROFILE = "cpu"
SECTION_KEYS = ("base", *PROFILES)


def default_profile() -> str:
    """Profile from PAPERLAB_PROFILE, else "cpu"; raises on an unknown name."""
    return check_profile(os.environ.get(PROFILE_ENV_VAR, DEFAULT_PROFILE))


def check_profile(profile: str) -> str:
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}: choose one of {', '.join(PROFILES)}")
    return profile


def file_stamp(path: Path) -> tuple[str, int, int]:
    """(path, mtime, size): a cache key that changes when the file does."""
    stat = Path(path).stat()
    return str(path), stat.st_mtime_ns, stat.st_size


@lru_cache(maxsize=8)
def _parse(stamp: tuple[str, int, int]) -> dict[str, Any]:
    with open(stamp[0], encoding="utf-8") as fh:
        return yaml.safe_load(fh) or {}


def load_all_params(path: Path = PARAMS_FILE) -> dict[str, Any]:
    """The whole file as parsed (cached until the file changes). Do not mutate it."""
    return _parse(file_stamp(path))


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """A new dict: mappings merge key by key, every other value of `override` replaces."""
    out = copy.deepcopy(base)
    for name, value in (override or {}).items():
        if isinstance(value, dict) and isinstance(out.get(name), dict):
            out[name] = deep_merge(out[name], value)
        else:
            out[name] = copy.deepcopy(value)
    return out


def load_params(slug: str, profile: str, path: Path = PARAMS_FILE) -> dict[str, Any]:
    """The parameter block of one paper at one profile: base deep-merged with the profile.

    Raises KeyError naming the missing paper or profile, and ValueError for a section with
    keys other than base/smoke/cpu/gpu, so a typo in params.yaml is an error at the first
    asset, not a silent default.
    """
    check_profile(profile)
    params = load_all_params(path)
    if slug not in params:
        raise KeyError(f"params.yaml has no section for paper {slug!r}")
    section = params[slug]
    unknown = sorted(set(section) - set(SECTION_KEYS))
    if unknown:
        raise ValueError(f"params.yaml: {slug} has keys {unknown}; a paper section holds only "
                         f"{', '.join(SECTION_KEYS)}")
    if profile not in section:
        raise KeyError(f"params.yaml: paper {slug!r} has no {profile!r} profile")
    return deep_merge(section.get("base") or {}, section[profile] or {})


def base_seed(path: Path = PARAMS_FILE) -> int:
    return int(load_all_params(path).get("base_seed", 0))


def override_problems(overrides: dict[str, Any], profiles: tuple[str, ...] = PROFILES,
                      path: Path = PARAMS_FILE) -> list[str]:
    """What is wrong with `params_overrides` ({slug: {key: value}}), by key path: an unknown paper,
    a top-level key that no profile of the paper has, or a value whose type differs from params.yaml's
    (an int where a float is expected is fine). Empty when every key and type is known."""
    problems: list[str] = []
    params = load_all_params(path)

    def walk(where: str, value: Any, known: list[Any]) -> None:
        dicts = [k for k in known if isinstance(k, dict)]
        if isinstance(value, dict) and dicts:
            for key, sub in value.items():
                if not any(key in d for d in dicts):
                    # a nested key params.yaml leaves at its dataclass default is for the paper's typed
                    # parameters to accept or refuse (with its path) at the first asset
                    if "." not in where:
                        problems.append(f"params_overrides.{where}.{key}: unknown key")
                else:
                    walk(f"{where}.{key}", sub, [d[key] for d in dicts if key in d])
            return
        # scalar against scalar only: a mapping or list where params.yaml has a scalar (a per-task
        # table, say) is for the paper's typed parameters to accept or refuse at its first asset
        scalars = (str, bool, int, float)
        types = {type(k) for k in known if isinstance(k, scalars)}
        mixed = any(not isinstance(k, scalars) for k in known if k is not None)
        if not types or not isinstance(value, scalars) or mixed:
            return
        numeric = {int, float}
        if type(value) in types or (type(value) in numeric and types <= numeric):
            return
        names = "/".join(sorted(t.__name__ for t in types))
        problems.append(f"params_overrides.{where}: {type(value).__name__} {value!r}, params.yaml has {names}")

    for slug, override in (overrides or {}).items():
        if slug not in params or not isinstance(params[slug], dict):
            problems.append(f"params_overrides.{slug}: no paper {slug!r} in params.yaml")
            continue
        if not isinstance(override, dict):
            problems.append(f"params_overrides.{slug}: a mapping of parameters, got {type(override).__name__}")
            continue
        walk(slug, override, [load_params(slug, p, path) for p in profiles])
    return problems
