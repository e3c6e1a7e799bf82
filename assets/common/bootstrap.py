"""The paired hierarchical bootstrap over seeds × prompts, for papers whose comparisons pair
both — no Dagster import.

A comparison "method − baseline" evaluated on the same prompts under the same seeds is a (S, P)
array of paired differences; each replicate resamples seeds with replacement, then prompts
within each resampled seed, so the interval reflects both seed and prompt variation. A claim
judged by it holds only when the whole interval is on the claimed side (assets.common.claims).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class BootCI:
    """A `level` interval of the mean paired difference over `seeds` × `prompts`."""

    mean: float
    low: float
    high: float
    seeds: int
    prompts: int
    level: float = 0.90

    def text(self) -> str:
        return (f"Δ {self.mean:+.3f} [{self.level:.0%} CI {self.low:+.3f}, {self.high:+.3f}] "
                f"({self.seeds} seeds × {self.prompts} prompts, paired hierarchical bootstrap)")


def hierarchical_bootstrap(diff: np.ndarray, n_boot: int, seed: int, level: float = 0.90) -> BootCI:
    """CI of the mean of diff (S seeds, P prompts): resample seeds, then prompts within each.
    With one seed the interval is (−∞, +∞): one seed establishes nothing about seeds."""
    diff = np.asarray(diff, dtype=float)
    if diff.ndim != 2 or diff.size == 0 or not np.isfinite(diff).all():
        raise ValueError(f"need a finite (seeds, prompts) array, got shape {diff.shape}")
    s, p = diff.shape
    rng = np.random.default_rng(seed)
    means = np.empty(n_boot)
    for b in range(n_boot):
        rows = rng.integers(0, s, size=s)
        cols = rng.integers(0, p, size=(s, p))
        means[b] = diff[rows[:, None], cols].mean()
    low, high = np.quantile(means, [0.5 - level / 2, 0.5 + level / 2])
    if s == 1:
        low, high = -math.inf, math.inf
    return BootCI(float(diff.mean()), float(low), float(high), s, p, level)
