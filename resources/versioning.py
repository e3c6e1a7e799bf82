"""Versioning helpers — no Dagster import.

`file_md5` equals the md5 DVC 3 records for a file (plain md5 of the bytes), so a path's
hash in Dagster metadata can be matched against dvc.lock.
"""
from __future__ import annotations

import ast
import hashlib
import json
import subprocess
from functools import lru_cache
from pathlib import Path
from typing import Any

from resources.profiles import REPO_ROOT, load_all_params, load_params

SHARED_PACKAGES = ("assets.common", "resources")


def file_md5(path: str | Path, chunk_bytes: int = 1 << 20) -> str:
    digest = hashlib.md5()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(chunk_bytes), b""):
            digest.update(chunk)
    return digest.hexdigest()


def bytes_md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


@lru_cache(maxsize=1)
def git_sha() -> str:
    """HEAD's sha with "-dirty" when tracked files differ; "unknown" outside git."""
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True,
                             text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout
        return sha + ("-dirty" if dirty.strip() else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def params_hash(params: dict[str, Any]) -> str:
    """sha256 (first 16 hex chars) of the canonical JSON of a parameter block."""
    canonical = json.dumps(params, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def provenance(slug: str, profile: str) -> dict[str, str]:
    """What files record: profile and params hash. Deterministic (no git sha, no time), so
    a rerun at the same seed writes the same bytes; prefer compute.provenance(slug), which
    includes the resource's parameter overrides."""
    return {"profile": profile, "params_hash": params_hash(load_params(slug, profile))}


def run_provenance(slug: str, profile: str) -> dict[str, str]:
    """What run records and UI metadata carry: provenance plus the git sha."""
    return {"git_sha": git_sha(), **provenance(slug, profile)}


# ---------------------------------------------------------------- what a paper's stage depends on
def _module_file(module: str) -> Path | None:
    base = REPO_ROOT.joinpath(*module.split("."))
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    return None


def _imports(path: Path) -> frozenset[str]:
    """Modules a file imports (absolute names), `from pkg import sub` resolved to pkg.sub."""
    return _imports_of(path, path.stat().st_mtime_ns)


@lru_cache(maxsize=4096)
def _imports_of(path: Path, _mtime_ns: int) -> frozenset[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names
                      if _module_file(f"{node.module}.{alias.name}")}
    return frozenset(found)


# A paper's bring-your-own-data command line (assets/<slug>/cli.py) is not part of its pipeline: no
# asset imports it, so editing it must not recompute the paper. .dvcignore leaves it out of the
# stage's folder hash too (`/assets/*/cli.py`).
NOT_IN_STAGE = ("cli.py",)


def stage_files(slug: str) -> list[Path]:
    """The files of assets/<slug> that its DVC stage hashes (sorted): .dvcignore's rules."""
    folder = REPO_ROOT / "assets" / slug
    return [p for p in sorted(folder.rglob("*")) if p.is_file() and "__pycache__" not in p.parts
            and p.suffix != ".pyc" and p.relative_to(folder).as_posix() not in NOT_IN_STAGE]


def shared_dependencies(slug: str) -> list[str]:
    """Files under assets/common and resources/ that the paper's pipeline code reaches (sorted)."""
    todo = [p for p in stage_files(slug) if p.suffix == ".py"]
    seen: set[Path] = set()
    shared: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for module in _imports(path):
            if not module.startswith(SHARED_PACKAGES):
                continue
            file = _module_file(module)
            if file is not None:
                shared.add(file)
                todo.append(file)
            parent = _module_file(module.rsplit(".", 1)[0])   # package __init__ runs first
            if parent is not None and parent not in shared:
                shared.add(parent)
                todo.append(parent)
    return sorted(p.relative_to(REPO_ROOT).as_posix() for p in shared)



def stage_code_version(slug: str, params_file: Path | None = None) -> str:
    """One hash of what the paper's DVC stage depends on (jobs.dvc_stages): the stage files of
    assets/<slug> (all but its cli.py) and of the shared code they import, and its params.yaml section with base_seed
    and dvc_profile. Dagster assets carry it as code_version, so the UI marks a paper's assets
    unsynced exactly when DVC would rerun its stage (external inputs excepted)."""
    listing = {p.relative_to(REPO_ROOT).as_posix(): file_md5(p) for p in stage_files(slug)}
    listing.update({rel: file_md5(REPO_ROOT / rel) for rel in shared_dependencies(slug)})
    params = load_all_params(params_file) if params_file else load_all_params()
    section = {"base_seed": params.get("base_seed"), "dvc_profile": params.get("dvc_profile"),
               slug: params.get(slug)}
    canonical = json.dumps({"files": listing, "params": section}, sort_keys=True, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]
