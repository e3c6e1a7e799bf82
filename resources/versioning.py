"""Versioning helpers — no Dagster import.

`file_md5` equals the md5 DVC 3 records for a file (plain md5 of the bytes), so a path's
hash in Dagster metadata can be matched against dvc.lock.
"""
from __future__ import annotations

import hashlib
import json
import subprocess
from functools import lru_cache
from pathlib import Path
from typing import Any

from resources.profiles import REPO_ROOT, load_params


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
