"""The `compute` resource: profile, device, threads, seeds, determinism."""
from __future__ import annotations

import os
import random
import zlib
from typing import Any

import dagster as dg
import numpy as np
from pydantic import Field

from resources.profiles import PROFILES, check_profile, load_params

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
    changed) in the launchpad under resources.compute.config.profile. Frozen like every
    ConfigurableResource: methods compute, they never mutate.
    """

    profile: str = Field(default="cpu",
                         description=f"Run scale, one of {', '.join(PROFILES)} (params.yaml).")
    device: str = Field(default="auto", description="auto (cuda when available), cpu or cuda.")
    threads: int = Field(default=1, description="Torch threads per step process (2 cores run two steps at once).")
    deterministic: bool = Field(default=True, description="Deterministic torch kernels.")
    base_seed: int = Field(default=0, description="Root of every seed derived by rng().")

    def params(self, slug: str) -> dict[str, Any]:
        """The paper's parameter block for the active profile (params.yaml)."""
        return load_params(slug, check_profile(self.profile))

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

    def torch(self, seed: int | None = None):
        """Import torch configured for this resource: threads, determinism, seed.

        Torch is imported lazily so numpy-only papers never pay its import time.
        """
        import torch

        torch.set_num_threads(self.threads)
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
