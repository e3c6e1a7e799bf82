"""Empirical distances between terminal samples — pure numpy / POT.

- 1-D: exact W2 between two equal-size empirical measures by sorting (quantile coupling).
- d ≥ 2: exact W2 between m-point subsamples by optimal transport (POT `ot.emd2`); with
  uniform weights this is the assignment problem. It is an estimate of the population W2
  with an upward bias of the order of the noise floor (W2 between two independent samples).
- d > 2, Gaussian targets ("gauss_moments"): both terminal laws are exactly Gaussian (linear
  score, Gaussian noise and errors), so W2 is the Bures distance between them; it is estimated
  by the Bures distance between the two samples' moment fits (means and ML covariances).
- d > 2, other targets ("sliced_lb_p<P>"): √d × the sliced W2 over P = F·d directions made
  of F Haar-random orthonormal frames (exact 1-D W2 by sorting along each). A full frame has
  Σ_i θ_iθ_iᵀ = I, so the direction average of θθᵀ is exactly I/d and, for the optimal coupling
  π of the two samples, mean_θ W2²(θ·x, θ·y) ≤ mean_θ E_π(θ·(X − Y))² = W2²(x, y)/d: √d·SW2 is
  a certified LOWER bound on the samples' W2 (hence ≤ the coupling RMS), exact for a pure
  translation. (Independent uniform directions only give this in expectation: with P = 256 a
  translation is over-estimated by ~9% at one s.d.) OT on subsamples is not used in d > 2: its
  upward bias ~ m^{-1/d} swamps the signal.
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


def w2_gaussian_moments(x: np.ndarray, y: np.ndarray) -> float:
    """Bures W2 between the Gaussian moment fits of x (n, d) and y (n', d) (ML covariances)."""
    from assets.diffusion_w2.method import bures_w2

    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    mx, my = x.mean(0), y.mean(0)
    cx = (x - mx).T @ (x - mx) / len(x)
    cy = (y - my).T @ (y - my) / len(y)
    return bures_w2(mx, cx, my, cy)


def sliced_frames(dim: int, projections: int) -> int:
    """Number F ≥ 1 of orthonormal frames giving about `projections` directions in d dims."""
    return max(1, int(round(projections / dim)))


def sliced_directions(dim: int, projections: int, seed: int) -> np.ndarray:
    """F = sliced_frames(d, P) Haar-random orthonormal frames stacked, shape (F·d, d): unit
    rows with mean θθᵀ = I/d exactly."""
    rng = np.random.default_rng(seed)
    frames = []
    for _ in range(sliced_frames(dim, projections)):
        q, r = np.linalg.qr(rng.standard_normal((dim, dim)))
        frames.append((q * np.sign(np.diag(r))).T)
    return np.concatenate(frames)


def sliced_w2_lower_bound(x: np.ndarray, y: np.ndarray, directions: np.ndarray) -> float:
    """√d · SW2 = √d · (mean over directions θ of W2²(θ·x, θ·y))^{1/2}, ≤ W2(x, y) when the
    directions (P, d) are whole orthonormal frames (sliced_directions); x, y: (n, d), equal n."""
    px, py = np.sort(x @ directions.T, axis=0), np.sort(y @ directions.T, axis=0)
    return float(np.sqrt(x.shape[-1] * np.mean((px - py) ** 2)))


def w2_method(target, ot_subsample: int, projections: int) -> str:
    """Which W2 estimator a target gets (see the module docstring)."""
    if target.dim == 1:
        return "sorted"
    if target.dim == 2:
        return f"ot_m{ot_subsample}"
    if getattr(target, "kind", "") == "gmm" and len(target.weights) == 1:
        return "gauss_moments"
    return f"sliced_lb_p{sliced_frames(target.dim, projections) * target.dim}"


def w2_empirical(x: np.ndarray, y: np.ndarray, ot_subsample: int, directions: np.ndarray | None = None,
                 method: str | None = None) -> float:
    """W2 estimate: exact sorting in 1-D (all particles); OT on the first m particles in d = 2
    (particles are i.i.d., so the first m are a random subsample); in d > 2 the Gaussian
    moment-fit Bures distance (method "gauss_moments") or √d·sliced W2 with `directions`."""
    if x.shape[-1] == 1:
        return w2_sorted(x, y)
    if x.shape[-1] == 2:
        return w2_ot(x[:ot_subsample], y[:ot_subsample])
    if method == "gauss_moments":
        return w2_gaussian_moments(x, y)
    if directions is None:
        raise ValueError("w2_empirical in d > 2 needs method='gauss_moments' or sliced directions")
    return sliced_w2_lower_bound(x, y, directions)


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
