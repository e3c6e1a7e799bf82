"""The paper's theory, checked numerically (numpy only; seconds).

(a1) exact reparametrisation f′ = A f, g′ = A^{-T} g: identical distributions, d_logit = 0,
     d_rep = 0, mCCA = 1.
(a2) the 8-label "swapped unembedding" construction: equal embeddings, unembeddings of
     labels 5↔6 and 7↔8 swapped; inputs of those labels sit on the bisector of the swapped
     pair, so the distributions barely change (small KL) while g and g′ are not linearly
     related (low CCA).
(a3) the derived bound d_rep ≤ 2(d+1)·d²_logit/σ²_min on random model pairs.
"""
from __future__ import annotations

import numpy as np

from assets.logit_distill import metrics as M


def reparametrisation_example(rng: np.random.Generator, n: int = 400, k: int = 7, d: int = 3,
                              n_pivots: int = 7, n_subsets: int = 15) -> dict[str, float]:
    """(a1) Model 2 = model 1 under an invertible linear map A (d, d)."""
    F = rng.standard_normal((n, d))
    G = rng.standard_normal((k, d))
    A = rng.standard_normal((d, d)) + 2 * np.eye(d)            # invertible w.p. 1
    F2, G2 = F @ A.T, G @ np.linalg.inv(A)                      # f′ = A f, g′ = A^{-T} g
    pairs = M.label_subsets(k, d, n_pivots, n_subsets, rng)
    rep = M.d_rep(F, G, F2, G2, pairs)
    return {"d2_logit": M.d2_logit(F @ G.T, F2 @ G2.T), "d_rep": rep.value,
            "mcca": M.mean_cca(F, F2, d), "kl": M.kl_divergence(F @ G.T, F2 @ G2.T),
            "condition_A": float(np.linalg.cond(A))}


def _polar(angles: np.ndarray, lengths: np.ndarray | float) -> np.ndarray:
    """2-D vectors (…, 2) from angles (rad) and lengths."""
    return np.stack([np.cos(angles), np.sin(angles)], axis=-1) * np.asarray(lengths)[..., None]


def swapped_unembedding_example(rng: np.random.Generator, per_label: int = 500) -> dict[str, float]:
    """(a2) Two 8-label models with equal embeddings and partly swapped unembeddings.

    Unembeddings (length 5.5) at angles 0, 1, 2, 3 · π/16 (labels 1–4) and 10, 16, 20,
    26 · π/16 (labels 5–8); model 2 swaps labels 5↔6 and 7↔8. Inputs of labels 1–4 point
    at their own unembedding; inputs of labels 5/6 at 13π/16 and 7/8 at 23π/16 — the
    bisectors of the swapped pairs — with angular jitter U(±π/256) and length |N(0,1)| + 2.
    """
    from sklearn.cross_decomposition import CCA

    g1 = _polar(np.array([0, 1, 2, 3, 10, 16, 20, 26]) * np.pi / 16, 5.5)      # (8, 2)
    g2 = g1[[0, 1, 2, 3, 5, 4, 7, 6]]
    centre = np.array([0, 1, 2, 3, 13, 13, 23, 23]) * np.pi / 16
    angles = centre[:, None] + rng.uniform(-np.pi / 256, np.pi / 256, (8, per_label))
    lengths = np.abs(rng.standard_normal((8, per_label))) + 2
    F = _polar(angles, lengths).reshape(-1, 2)                                  # (8·n, 2)
    z1, z2 = F @ g1.T, F @ g2.T
    cca = CCA(n_components=2, max_iter=1000).fit(g1, g2)
    return {"kl_12": M.kl_divergence(z1, z2), "kl_21": M.kl_divergence(z2, z1),
            "d2_logit": M.d2_logit(z1, z2), "agreement": M.agreement(z1, z2),
            "cca_score_unembeddings": float(cca.score(g1, g2)),
            "mcca_unembeddings": M.mean_cca(g1, g2, 2),
            "mcca_embeddings": M.mean_cca(F, F, 2)}


def bound_property(rng: np.random.Generator, n_pairs: int = 100, n: int = 200) -> dict[str, float]:
    """(a3) d_rep ≤ 2(d+1)·d²_logit/σ²_min on random pairs of (F, G) models of varied size,
    closeness and scale. Returns the worst slack (bound − d_rep) and the worst ratio."""
    slacks, ratios, skipped = [], [], 0
    for _ in range(n_pairs):
        d = int(rng.integers(1, 5))
        k = int(rng.integers(d + 2, 13))
        scale = float(10 ** rng.uniform(-1, 1))
        noise = float(10 ** rng.uniform(-3, 0))
        F1, G1 = scale * rng.standard_normal((n, d)), rng.standard_normal((k, d))
        B = np.eye(d) + 0.5 * rng.standard_normal((d, d))
        F2 = F1 @ B.T + noise * scale * rng.standard_normal((n, d))
        G2 = G1 @ np.linalg.pinv(B) + noise * rng.standard_normal((k, d))
        pairs = M.label_subsets(k, d, 5, 5, rng)
        rep = M.d_rep(F1, G1, F2, G2, pairs)
        if not rep.evaluated:
            skipped += 1
            continue
        bound = M.d_rep_bound(M.d2_logit(F1 @ G1.T, F2 @ G2.T), d, rep.min_sigma)
        slacks.append(bound - rep.value)
        ratios.append(rep.value / bound if bound > 0 else 0.0)
    return {"pairs": float(len(slacks)), "pairs_skipped": float(skipped),
            "min_slack": float(min(slacks)), "max_ratio_drep_over_bound": float(max(ratios))}


def theory_examples(rng: np.random.Generator) -> dict[str, dict[str, float]]:
    return {"reparametrisation": reparametrisation_example(rng),
            "swapped_unembedding": swapped_unembedding_example(rng),
            "bound_property": bound_property(rng)}


def theory_problems(theory: dict[str, dict[str, float]]) -> list[str]:
    """Why the theory examples fail their expectations (empty when they all pass)."""
    problems = []
    a1, a2, a3 = theory["reparametrisation"], theory["swapped_unembedding"], theory["bound_property"]
    if not a1["d2_logit"] < 1e-10:
        problems.append(f"(a1) d²_logit = {a1['d2_logit']:.3g} under an exact reparametrisation (want 0)")
    if not a1["d_rep"] < 1e-8:
        problems.append(f"(a1) d_rep = {a1['d_rep']:.3g} under an exact reparametrisation (want < 1e-8)")
    if not abs(a1["mcca"] - 1) < 1e-6:
        problems.append(f"(a1) mCCA = {a1['mcca']:.6f} under an exact reparametrisation (want 1)")
    if not (a2["kl_12"] < 1e-2 and a2["kl_21"] < 1e-2):
        problems.append(f"(a2) KL = {a2['kl_12']:.3g}/{a2['kl_21']:.3g}, want small (< 1e-2)")
    if not a2["cca_score_unembeddings"] < 0.5:
        problems.append(f"(a2) CCA score of unembeddings {a2['cca_score_unembeddings']:.3f} not low (< 0.5)")
    if not a3["min_slack"] >= 0:
        problems.append(f"(a3) bound violated: min slack {a3['min_slack']:.3g}")
    return problems
