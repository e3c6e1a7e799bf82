"""Empirical distances between terminal samples — pure numpy / POT.

- 1-D: exact W2 between two equal-size empirical measures by sorting (quantile coupling).
- d ≥ 2: exact W2 between m-point subsamples by optimal transport (POT `ot.emd2`); with
  uniform weights this is the assignment problem. It is an estimate of the population W2
  with an upward bias of the order of the noise floor (W2 between two independent samples).
- Coupling RMS (E‖Ỹ_K − Y_K‖²)^{1/2} of coupled particles, with its delta-method standard error.
"""
from __future__ import annotations

import numpy as np


def w2_sorted(x: np.ndarray, y: np.ndarray) -> float:
    """Exact W2 between the empirical measures of x and y, shapes (n,) or (n, 1), same n."""
    x, y = np.sort(np.ravel(x)), np.sort(np.ravel(y))
    if x.shape != y.shape:
        raise ValueError(f"w2_sorted needs equal sample sizes, got {x.shape} and {y.shape}")
    return float(np.sqrt(np.mean((x - y) ** 2)))


ASSIGNMENT_MAX = 600     # up to this size (equal m) solve the OT problem as an assignment


def w2_ot(x: np.ndarray, y: np.ndarray) -> float:
    """Exact W2 between the uniform empirical measures of x (m, d) and y (m', d).

    POT's network simplex (`ot.emd2`); for small equal-size clouds the same optimum is found
    by scipy's linear_sum_assignment (uniform equal weights: OT = assignment), which spares
    POT's import (it pulls in scikit-learn) at smoke sizes.
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) == len(y) and len(x) <= ASSIGNMENT_MAX:
        from scipy.optimize import linear_sum_assignment
        from scipy.spatial.distance import cdist

        cost = cdist(x, y, "sqeuclidean")
        rows, cols = linear_sum_assignment(cost)
        return float(np.sqrt(max(cost[rows, cols].mean(), 0.0)))
    import ot

    cost = ot.dist(x, y, metric="sqeuclidean")
    value = ot.emd2(np.full(len(x), 1 / len(x)), np.full(len(y), 1 / len(y)), cost, numItermax=10 ** 7)
    return float(np.sqrt(max(float(value), 0.0)))


def w2_empirical(x: np.ndarray, y: np.ndarray, ot_subsample: int) -> float:
    """W2 estimate: exact sorting in 1-D (all particles); OT on the first m particles in d ≥ 2
    (particles are i.i.d., so the first m are a random subsample)."""
    if x.shape[-1] == 1:
        return w2_sorted(x, y)
    return w2_ot(x[:ot_subsample], y[:ot_subsample])


def coupling_rms(delta: np.ndarray) -> tuple[float, float]:
    """(RMS, standard error) of ‖Δ‖ over particles; delta: (n, d). se(RMS) ≈ se(mean ‖Δ‖²)/(2 RMS)."""
    sq = np.sum(np.asarray(delta, dtype=float) ** 2, axis=-1)
    rms = float(np.sqrt(sq.mean()))
    se = float(sq.std(ddof=1) / np.sqrt(len(sq)) / (2 * rms)) if rms > 0 and len(sq) > 1 else 0.0
    return rms, se


def bootstrap_mean_ci(values: np.ndarray, rng: np.random.Generator, n_boot: int = 2000,
                      level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean of `values` (e.g. per-seed W2 estimates)."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if len(values) == 0:
        return float("nan"), float("nan")
    if len(values) == 1:
        return float(values[0]), float(values[0])
    means = values[rng.integers(0, len(values), size=(n_boot, len(values)))].mean(1)
    lo, hi = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)
