"""Evaluation: SSI alignment to the GT layers, point sampling by a stop index, Chamfer distance and
F-scores, and the non-learned baselines (heuristic completion, the "z grows by > τ" rule). numpy/scipy,
no Dagster import. Units: unit-bbox (object / room) units; points (…, 3) in the camera frame.
"""
from __future__ import annotations

import numpy as np


def ssi_fit(pred: np.ndarray, gt: np.ndarray, mask: np.ndarray) -> tuple[float, float]:
    """(s, t) minimising Σ_mask ‖s·P̂ + (0, 0, t) − P‖² (2×2 normal equations); (1, 0) when det ≤ 0.

    pred, gt (..., 3); mask (...) bool.
    """
    p, g = pred[mask].reshape(-1, 3), gt[mask].reshape(-1, 3)
    a00, a01, a11 = (p ** 2).sum(), p[:, 2].sum(), float(len(p))
    b0, b1 = (p * g).sum(), g[:, 2].sum()
    det = a00 * a11 - a01 ** 2
    if len(p) == 0 or det <= 1e-12 * max(a00 * a11, 1e-30):
        return 1.0, 0.0
    return float((a11 * b0 - a01 * b1) / det), float((-a01 * b0 + a00 * b1) / det)


def aligned(points: np.ndarray, s: float, t: float) -> np.ndarray:
    out = points * s
    out[..., 2] += t
    return out


def layer_mask(stop: np.ndarray, layers: int) -> np.ndarray:
    """(H, W, L) bool prefix mask l < S from a stop index (H, W)."""
    return np.arange(layers)[None, None, :] < stop[..., None]


def chamfer_f(pred: np.ndarray, gt: np.ndarray, thresholds: tuple[float, ...]) -> dict[str, float]:
    """CD = ½(mean NN distance pred→GT + mean GT→pred), un-squared L2; F@τ = 2PR/(P+R) with
    P = frac(pred NN < τ), R = frac(GT NN < τ). Empty prediction: F = 0, CD = nan."""
    from scipy.spatial import cKDTree

    out: dict[str, float] = {}
    if len(pred) == 0 or len(gt) == 0:
        out["cd"] = float("nan")
        for tau in thresholds:
            out[f"f@{tau:g}"] = 0.0
            out[f"precision@{tau:g}"] = 0.0
            out[f"recall@{tau:g}"] = 0.0
        return out
    d_pg = cKDTree(gt).query(pred, k=1)[0]
    d_gp = cKDTree(pred).query(gt, k=1)[0]
    out["cd"] = float(0.5 * (d_pg.mean() + d_gp.mean()))
    for tau in thresholds:
        p, r = float((d_pg < tau).mean()), float((d_gp < tau).mean())
        out[f"f@{tau:g}"] = 2 * p * r / (p + r) if p + r > 0 else 0.0
        out[f"precision@{tau:g}"] = p
        out[f"recall@{tau:g}"] = r
    return out


def mirrored_completion(points: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Heuristic completion: the visible layer plus its mirror about the median visible depth along each
    pixel ray (z' = 2·median − z, kept where z' > z). points (H, W, 3) aligned layer 1; valid (H, W).
    Returns (N, 3) points."""
    vis = points[valid]
    if len(vis) == 0:
        return vis.reshape(0, 3)
    z = vis[:, 2]
    z_back = 2 * np.median(z) - z
    behind = z_back > z
    back = vis[behind] * (z_back[behind] / z[behind])[:, None]
    return np.concatenate([vis, back])


def z_rule_stop(points: np.ndarray, tau: float) -> np.ndarray:
    """(H, W) stop index of the "z grows by > τ" rule: layer 1 always valid, layer l + 1 valid while
    z_{l+1} > z_l + τ (and every earlier layer valid). points (H, W, L, 3) aligned."""
    z = points[..., 2]
    grows = np.diff(z, axis=-1) > tau                               # (H, W, L − 1)
    ok = np.cumprod(grows, axis=-1).astype(bool)
    return 1 + ok.sum(-1)


def order_violations(points: np.ndarray, stop: np.ndarray) -> tuple[int, int]:
    """(violations, pairs): consecutive valid predicted layers with z_{l+1} ≤ z_l, over valid pairs."""
    if points.shape[-2] < 2:
        return 0, 0
    z = points[..., 2]
    valid = layer_mask(stop, points.shape[-2])[..., 1:]
    bad = (np.diff(z, axis=-1) <= 0) & valid
    return int(bad.sum()), int(valid.sum())
