"""Profiles (smoke / cpu / gpu) and the parameters in params.yaml — no Dagster import.

params.yaml at the repository root is the single source of truth for run parameters; DVC
tracks it, the `compute` resource reads it, tests read it.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
PARAMS_FILE = REPO_ROOT / "params.yaml"
PROFILES = ("smoke", "cpu", "gpu")
PROFILE_ENV_VAR = "PAPERLAB_PROFILE"
DEFAULT_PROFILE = "cpu"


def default_profile() -> str:
    """Profile from PAPERLAB_PROFILE, else "cpu"; raises on an unknown name."""
    return check_profile(os.environ.get(PROFILE_ENV_VAR, DEFAULT_PROFILE))


def check_profile(profile: str) -> str:
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}: choose one of {', '.join(PROFILES)}")
    return profile


def load_all_params(path: Path = PARAMS_FILE) -> dict[str, Any]:
    with open(path, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def load_params(slug: str, profile: str, path: Path = PARAMS_FILE) -> dict[str, Any]:
    """The parameter block of one paper at one profile.

    Raises KeyError naming the missing paper or profile, so a typo in params.yaml is an
    error at the first asset, not a silent default.
    """
    check_profile(profile)
    params = load_all_params(path)
    if slug not in params:
        raise KeyError(f"params.yaml has no section for paper {slug!r}")
    if profile not in params[slug]:
        raise KeyError(f"params.yaml: paper {slug!r} has no {profile!r} profile")
    return dict(params[slug][profile])


def base_seed(path: Path = PARAMS_FILE) -> int:
    return int(load_all_params(path).get("base_seed", 0))
