"""SPGCL's graph-signal quantities in numpy: Dirichlet energies, the high/low split, the
edge-keep probabilities of energy-guided positive sampling (EPS), and the pre-alignment
diagnostics. No torch, no Dagster.

Notation: edge_index (2, E) int64 lists directed entries (both directions of an undirected
edge); x (n, F) features; n nodes, F dims.
"""
from __future__ import annotations

import numpy as np


def node_degrees(edge_index: np.ndarray, n: int) -> np.ndarray:
    """d_i = appearances of node i in edge_index as source plus as target, (n,) float64.

    This is the reference's definition done right: the homophilous reference script wrote
    `deg[edge_index[0]] += 1`, an advanced-index assignment that does not accumulate
    duplicates (d = 2 for every non-isolated node, a no-op normalisation). We accumulate
    with bincount. On a symmetric edge list d_i = 2·deg_i, a constant factor that leaves the
    ranking of per-feature energies unchanged.
    """
    src, dst = edge_index
    return (np.bincount(src, minlength=n) + np.bincount(dst, minlength=n)).astype(np.float64)


def dirichlet_energy_per_feature(x: np.ndarray, edge_index: np.ndarray,
                                 degree_normalized: bool = True) -> np.ndarray:
    """E_f = mean over edge entries (i, j) of (x_if/√d_i − x_jf/√d_j)², shape (F,).

    The reference's ("faithful") energy: no self-loops, no normalisation by the feature's
    norm. degree_normalized=False sets d ≡ 1 (what the reference's indexing bug amounts to,
    up to a factor 1/2). A graph without edges has zero energy in every dim.
    """
    x = np.asarray(x, dtype=np.float64)
    src, dst = edge_index
    if len(src) == 0:
        return np.zeros(x.shape[1])
    if degree_normalized:
        scale = 1.0 / np.sqrt(np.maximum(node_degrees(edge_index, len(x)), 1.0))
        xs = x * scale[:, None]
    else:
        xs = x
    return ((xs[src] - xs[dst]) ** 2).mean(axis=0)


def rayleigh_energy_per_feature(x: np.ndarray, edge_index: np.ndarray) -> np.ndarray:
    """Variant: E_f / mean_i x_if² (scale-free Rayleigh-quotient form), shape (F,).

    Spec pitfall: normalising by the feature's norm changes the ranking relative to the
    reference; this is reported as a variant only, never used by SPGCL here.
    """
    energy = dirichlet_energy_per_feature(x, edge_index)
    power = (np.asarray(x, dtype=np.float64) ** 2).mean(axis=0)
    return np.where(power > 0, energy / np.maximum(power, 1e-300), 0.0)


def energy_ranks(energy: np.ndarray) -> np.ndarray:
    """rank_f ∈ {0..F−1}, 0 = highest energy (stable: ties keep the lower index first)."""
    order = np.argsort(-np.asarray(energy), kind="stable")
    ranks = np.empty(len(order), dtype=np.int64)
    ranks[order] = np.arange(len(order))
    return ranks


def high_energy_mask(energy: np.ndarray, k: int) -> np.ndarray:
    """(F,) bool: the top-k dims by energy (H); the rest is L. k > F marks every dim high, which
    the feature_energy check reports as |H| ≠ k."""
    return energy_ranks(energy) < int(k)


def edge_keep_probability(x_low: np.ndarray, edge_index: np.ndarray, alpha: float) -> np.ndarray:
    """EPS keep probability per edge entry, shape (E,):
    P_ij = min(α · clamp(cos(x_i^L, x_j^L), 0, 1), 1).

    The reference calls the matrix `drop_prob` but uses it as a KEEP probability
    (bernoulli(P) is the keep mask). Rows with zero norm have cosine 0. The diagonal
    (P_ii = 1: self is always a positive) is not an edge and is handled by the loss.
    """
    x_low = np.asarray(x_low, dtype=np.float64)
    norms = np.linalg.norm(x_low, axis=1)
    unit = x_low / np.where(norms > 0, norms, 1.0)[:, None]
    src, dst = edge_index
    cosine = (unit[src] * unit[dst]).sum(axis=1)
    return np.minimum(alpha * np.clip(cosine, 0.0, 1.0), 1.0)


# ----------------------------------------------------------------------------- diagnostics
def mean_edge_cosine(z: np.ndarray, edge_index: np.ndarray) -> float:
    """Mean cosine similarity of z_i and z_j over edge entries (i, j)."""
    z = np.asarray(z, dtype=np.float64)
    unit = z / np.maximum(np.linalg.norm(z, axis=1, keepdims=True), 1e-12)
    src, dst = edge_index
    return float((unit[src] * unit[dst]).sum(axis=1).mean()) if len(src) else float("nan")


def normalized_dirichlet_energy(z: np.ndarray, edge_index: np.ndarray, self_loops: bool = True) -> float:
    """Rayleigh quotient tr(Zᵀ L̃ Z) / tr(Zᵀ Z) on the GCN's normalized graph:
    L̃ = I − Â, Â = D̃^{-1/2}(A + I)D̃^{-1/2}, d̃ = degree + 1 (the spec's E(X) = tr(Xᵀ L̃ X)).
    tr(Zᵀ L̃ Z) = ½ Σ over edge entries ‖z_i/√d̃_i − z_j/√d̃_j‖² (the self-loops cancel).
    self_loops=False uses L = I − D^{-1/2} A D^{-1/2} instead (values in [0, 2]); on degree-10
    graphs the two differ by ~0.001 in the GCN/MLP ratio (measured)."""
    z = np.asarray(z, dtype=np.float64)
    src, dst = edge_index
    degree = np.bincount(src, minlength=len(z)).astype(np.float64)
    degree = degree + 1.0 if self_loops else np.maximum(degree, 1.0)
    zs = z / np.sqrt(degree)[:, None]
    numerator = 0.5 * ((zs[src] - zs[dst]) ** 2).sum()
    return float(numerator / max((z ** 2).sum(), 1e-300))


def normalized_adjacency_scipy(edge_index: np.ndarray, n: int):
    """Â = D̃^{-1/2}(A + I)D̃^{-1/2} as a scipy CSR matrix (n, n); d̃ = in-degree + 1."""
    import scipy.sparse as sp

    src, dst = edge_index
    degree = np.bincount(dst, minlength=n).astype(np.float64) + 1.0
    inv_sqrt = 1.0 / np.sqrt(degree)
    rows = np.concatenate([dst, np.arange(n)])
    cols = np.concatenate([src, np.arange(n)])
    vals = np.concatenate([inv_sqrt[src] * inv_sqrt[dst], inv_sqrt ** 2])
    return sp.csr_matrix((vals, (rows, cols)), shape=(n, n))


def smooth_embeddings(z: np.ndarray, edge_index: np.ndarray, hops: int) -> np.ndarray:
    """Â^hops z (the reference's `numhop` evaluation smoothing), (n, D) float64."""
    z = np.asarray(z, dtype=np.float64)
    if hops <= 0:
        return z
    adj = normalized_adjacency_scipy(edge_index, len(z))
    for _ in range(hops):
        z = adj @ z
    return np.asarray(z)
