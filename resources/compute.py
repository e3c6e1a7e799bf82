"""The `compute` resource: profile, parameters, device, threads and workers, seeds, determinism.

One thread policy for every paper (2 shared cores; many processes × many threads thrash):
- `threads` is the torch intra-op thread budget of one step process (default 1);
- `torch_threads(cap)` is what a workload actually uses: min(threads, cap), where a paper
  caps it (thousands of tiny ops run fastest on one thread);
- `blas_limits()` bounds BLAS/OpenMP threads of numpy/scipy to the same budget;
- `workers(jobs, requested)` is how many spawned worker processes independent jobs get:
  1 on a GPU (one device, no CUDA in workers), else min(requested, jobs, CPU count).
"""
from __future__ import annotations

import os
import random
import zlib
from typing import Any

import dagster as dg
import numpy as np
from pydantic import Field, field_validator

from resources.profiles import PROFILES, check_profile, deep_merge, load_params, override_problems

DEVICES = ("auto", "cpu", "cuda")


def stable_seed(base_seed: int, *keys: Any) -> np.random.SeedSequence:
    """A SeedSequence from a base seed and any keys (strings hashed with crc32, stable
    across processes and Python versions, unlike hash())."""
    words = [int(base_seed)]
    for key in keys:
        words.append(int(key) if isinstance(key, (int, np.integer)) else zlib.crc32(str(key).encode()))
    return np.random.SeedSequence(words)


class ComputeResource(dg.ConfigurableResource):
    """Where and how paper code runs.

    `profile` is the one switch between smoke / cpu / gpu scale; it is shown (and can be
    changed) in the launchpad under resources.compute.config.profile. `params_overrides`
    deep-merges into a paper's parameters ({"oscs": {"stream_length": 300}}): for one-off
    runs from the launchpad and for tests; the params hash includes it. Frozen like every
    ConfigurableResource: methods compute, they never mutate.
    """

    profile: str = Field(default="cpu",
                         description=f"Run scale, one of {', '.join(PROFILES)} (params.yaml).")
    device: str = Field(default="auto", description="auto (cuda when available), cpu or cuda.")
    threads: int = Field(default=1, description="Torch/BLAS threads per step process (2 cores run two steps at once).")
    deterministic: bool = Field(default=True, description="Deterministic torch kernels.")
    base_seed: int = Field(default=0, description="Root of every seed derived by rng().")
    params_overrides: dict[str, Any] = Field(
        default={}, description="Per-paper parameter overrides, deep-merged into params.yaml's block.")

    @field_validator("params_overrides")
    @classmethod
    def _known_keys_and_types(cls, value: dict[str, Any]) -> dict[str, Any]:
        """Refused when the run's resources are built, before any asset runs: an unknown paper or
        key, or a wrong type, named by its path (params_overrides.oscs.stream_lenght)."""
        problems = override_problems(value)
        if problems:
            raise ValueError("; ".join(problems))
        return value

    def params(self, slug: str) -> dict[str, Any]:
        """The paper's parameter block for the active profile (params.yaml + overrides)."""
        params = load_params(slug, check_profile(self.profile))
        override = self.params_overrides.get(slug)
        return deep_merge(params, override) if override else params

    def provenance(self, slug: str) -> dict[str, str]:
        """Deterministic provenance for files: profile and params hash (no git sha or time)."""
        from resources.versioning import params_hash

        return {"profile": self.profile, "params_hash": params_hash(self.params(slug))}

    def rng(self, *keys: Any) -> np.random.Generator:
        """A numpy Generator seeded from base_seed and keys, e.g. rng("oscs", "stream", 3)."""
        return np.random.default_rng(stable_seed(self.base_seed, *keys))

    def seed_for(self, *keys: Any) -> int:
        """A 31-bit integer seed derived like rng() (for libraries that take an int)."""
        return int(stable_seed(self.base_seed, *keys).generate_state(1)[0] & 0x7FFFFFFF)

    def resolved_device(self) -> str:
        if self.device not in DEVICES:
            raise ValueError(f"device must be one of {DEVICES}, got {self.device!r}")
        if self.device == "cpu":
            return "cpu"
        cuda = _cuda_available()
        if self.device == "cuda" and not cuda:
            raise RuntimeError("device='cuda' was requested but torch sees no CUDA GPU")
        return "cuda" if cuda else "cpu"

    def torch_threads(self, cap: int | None = None) -> int:
        """Intra-op threads for a workload: the resource's budget, capped by the paper."""
        return max(1, min(self.threads, int(cap) if cap else self.threads))

    def workers(self, jobs: int, requested: int = 1) -> int:
        """Worker processes for `jobs` independent jobs (1 = in this process)."""
        if self.resolved_device() != "cpu":
            return 1
        return max(1, min(int(requested), int(jobs), os.cpu_count() or 1))

    def blas_limits(self, threads: int | None = None):
        """Context manager bounding BLAS/OpenMP threads (numpy, scipy) to the budget."""
        from threadpoolctl import threadpool_limits

        return threadpool_limits(limits=self.torch_threads(threads), user_api="blas")

    def torch(self, seed: int | None = None, threads: int | None = None):
        """Import torch configured for this resource: threads (capped by `threads`),
        determinism, seed. Torch is imported lazily so numpy-only papers never pay for it."""
        import torch

        torch.set_num_threads(self.torch_threads(threads))
        if self.deterministic:
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
            torch.use_deterministic_algorithms(True, warn_only=True)
        if seed is not None:
            torch.manual_seed(seed)
            random.seed(seed)
        return torch

    def describe(self) -> dict[str, Any]:
        return {"profile": self.profile, "device": self.resolved_device(),
                "threads": self.threads, "base_seed": self.base_seed}


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())
