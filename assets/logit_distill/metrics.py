"""Distances between models of the family p(y|x) = softmax_y(f(x)ᵀ g(y)) — pure numpy.

Notation (shapes): n inputs, k labels, d representation dimension.
    F  (n, d)   embeddings f(x) of one model on n inputs
    G  (k, d)   unembeddings g(y) (rows of a bias-free linear head)
    Z  (n, k)   logits Z = F Gᵀ (natural-log units, "nats")

Everything here is written from the definitions in the spec (the reference repository is
GPL-3.0 and was only read):
- clr(z) = z − mean_y z: centred logits = centred log-probabilities (Aitchison clr).
- d²_logit = E_x ‖clr z₁(x) − clr z₂(x)‖²         (nats²)
- d_rep    = mean over pivots p, d-subsets L, inputs x of ‖f₁(x) − A_{p,L} f₂(x)‖²,
             A_{p,L} = M₁⁻¹ M₂, M_m rows g_m(y) − g_m(p) for y ∈ L.
- mCCA     = mean of the d canonical correlations between F₁ and F₂.
- the derived bound d_rep ≤ 2(d+1)·d²_logit / min_{p,L} σ_min(M₁^{p,L})², and
  d²_logit ≤ 2·KL/τ² when every probability of both models is ≥ τ.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CONDITION_LIMIT = 1e8   # M₁ with a larger condition number is skipped in d_rep (near-singular)


# ----------------------------------------------------------------------------- logits
def clr(logits: np.ndarray) -> np.ndarray:
    """Centred logits (n, k): z − mean_y z, i.e. the clr transform of softmax(z)."""
    logits = np.asarray(logits, dtype=float)
    return logits - logits.mean(axis=-1, keepdims=True)


def log_softmax(logits: np.ndarray) -> np.ndarray:
    logits = np.asarray(logits, dtype=float)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def d2_logit(logits_1: np.ndarray, logits_2: np.ndarray) -> float:
    """Squared logit distance E_x Σ_y (clr z₁ − clr z₂)² (nats²); inputs (n, k) each."""
    _same_shape(logits_1, logits_2)
    diff = clr(logits_1) - clr(logits_2)
    return float((diff ** 2).sum(axis=1).mean())


def kl_divergence(logits_p: np.ndarray, logits_q: np.ndarray) -> float:
    """Mean over inputs of KL(p(·|x) ‖ q(·|x)) in nats; p is the reference (teacher)."""
    _same_shape(logits_p, logits_q)
    log_p, log_q = log_softmax(logits_p), log_softmax(logits_q)
    return float((np.exp(log_p) * (log_p - log_q)).sum(axis=1).mean())


def min_probability(logits: np.ndarray) -> float:
    """τ: the smallest predicted probability over all inputs and labels."""
    return float(np.exp(log_softmax(logits).min()))


def agreement(logits_1: np.ndarray, logits_2: np.ndarray) -> float:
    """Fraction of inputs where both models predict the same argmax label."""
    _same_shape(logits_1, logits_2)
    return float((np.argmax(logits_1, axis=1) == np.argmax(logits_2, axis=1)).mean())


def kl_bound_on_d2_logit(kl: float, tau: float) -> float:
    """2·KL/τ²: the upper bound on d²_logit implied by KL when all probabilities ≥ τ.

    ‖clr p − clr q‖ ≤ ‖log p − log q‖ ≤ ‖p − q‖₂/τ ≤ √(2 KL)/τ (projection, mean value
    theorem, Pinsker), then average over x.
    Computed in float64 without raising: τ² underflows to 0 for τ < 1e-154 (a confident
    teacher), and the bound is then +inf (0 when KL = 0).
    """
    if kl <= 0:
        return 0.0
    with np.errstate(over="ignore", divide="ignore", under="ignore"):
        return float(np.float64(2.0 * kl) / np.float64(max(tau, 0.0)) ** 2)


# ----------------------------------------------------------------------------- d_rep
@dataclass
class DRep:
    """Result of d_rep: value, the evaluated subsets, skips, and min σ_min(M₁) (bound)."""

    value: float
    evaluated: int
    skipped: int
    min_sigma: float           # min over evaluated (p, L) of σ_min(M₁^{p,L})
    max_condition: float       # max condition number of the evaluated M₁


def label_subsets(n_labels: int, dim: int, n_pivots: int, n_subsets: int,
                  rng: np.random.Generator) -> list[tuple[int, np.ndarray]]:
    """(pivot, L) pairs: up to n_pivots distinct pivots, each with n_subsets random
    d-subsets L of the other labels (drawn without replacement inside a subset)."""
    if dim > n_labels - 1:
        raise ValueError(f"representation dimension d={dim} needs at least d+1={dim + 1} labels, "
                         f"got {n_labels}")
    pivots = rng.permutation(n_labels)[:min(n_pivots, n_labels)]
    pairs = []
    for p in pivots:
        others = np.delete(np.arange(n_labels), p)
        for _ in range(n_subsets):
            pairs.append((int(p), np.sort(rng.choice(others, size=dim, replace=False))))
    return pairs


def d_rep(F1: np.ndarray, G1: np.ndarray, F2: np.ndarray, G2: np.ndarray,
          pairs: list[tuple[int, np.ndarray]], condition_limit: float = CONDITION_LIMIT) -> DRep:
    """Representational dissimilarity of model 1 (F1 (n,d), G1 (k,d)) to model 2.

    For each (p, L): M_m = G_m[L] − G_m[p] (d, d); A = M₁⁻¹M₂; squared residual
    ‖f₁(x) − A f₂(x)‖² averaged over x; then averaged over the (p, L) that were not
    skipped (cond(M₁) > condition_limit). Returns NaN when every subset was skipped.
    """
    F1, F2, G1, G2 = (np.asarray(a, dtype=float) for a in (F1, F2, G1, G2))
    if F1.shape != F2.shape or G1.shape != G2.shape or F1.shape[1] != G1.shape[1]:
        raise ValueError(f"shape mismatch: F1 {F1.shape}, F2 {F2.shape}, G1 {G1.shape}, G2 {G2.shape}")
    values, sigmas, conds, skipped = [], [], [], 0
    for p, L in pairs:
        M1 = G1[L] - G1[p]
        M2 = G2[L] - G2[p]
        singular = np.linalg.svd(M1, compute_uv=False)
        cond = singular[0] / singular[-1] if singular[-1] > 0 else np.inf
        if not np.isfinite(cond) or cond > condition_limit:
            skipped += 1
            continue
        A = np.linalg.solve(M1, M2)                       # (d, d)
        residual = F1 - F2 @ A.T                           # rows f₁(x) − A f₂(x)
        values.append(float((residual ** 2).sum(axis=1).mean()))
        sigmas.append(float(singular[-1]))
        conds.append(float(cond))
    if not values:
        return DRep(float("nan"), 0, skipped, float("nan"), float("nan"))
    return DRep(float(np.mean(values)), len(values), skipped, float(min(sigmas)), float(max(conds)))


def d_rep_bound(d2: float, dim: int, min_sigma: float) -> float:
    """2(d+1)·d²_logit / σ²_min — the derived upper bound on d_rep (spec, [I])."""
    return float(2 * (dim + 1) * d2 / min_sigma ** 2)


# ----------------------------------------------------------------------------- CCA
def canonical_correlations(X: np.ndarray, Y: np.ndarray, n_components: int | None = None,
                           ridge: float = 1e-10) -> np.ndarray:
    """Canonical correlations (descending) between X (n, p) and Y (n, q), closed form.

    They are the singular values of Cxx^{-1/2} Cxy Cyy^{-1/2} (here via Cholesky factors);
    `ridge` (relative to the trace) only guards exactly rank-deficient inputs.
    """
    X = np.asarray(X, dtype=float) - np.mean(X, axis=0)
    Y = np.asarray(Y, dtype=float) - np.mean(Y, axis=0)
    n = X.shape[0]
    Cxx, Cyy, Cxy = X.T @ X / (n - 1), Y.T @ Y / (n - 1), X.T @ Y / (n - 1)
    Cxx += ridge * np.trace(Cxx) / len(Cxx) * np.eye(len(Cxx))
    Cyy += ridge * np.trace(Cyy) / len(Cyy) * np.eye(len(Cyy))
    Lx, Ly = np.linalg.cholesky(Cxx), np.linalg.cholesky(Cyy)
    T = np.linalg.solve(Lx, np.linalg.solve(Ly, Cxy.T).T)
    rho = np.clip(np.linalg.svd(T, compute_uv=False), 0.0, 1.0)
    k = n_components or min(X.shape[1], Y.shape[1])
    return rho[:k]


def mean_cca(X: np.ndarray, Y: np.ndarray, n_components: int | None = None) -> float:
    """mCCA: the mean of the first n_components (default min(p, q)) canonical correlations."""
    return float(canonical_correlations(X, Y, n_components).mean())


# ----------------------------------------------------------------------------- helpers
def _same_shape(a: np.ndarray, b: np.ndarray) -> None:
    if np.shape(a) != np.shape(b):
        raise ValueError(f"label sets differ: logits of shape {np.shape(a)} vs {np.shape(b)}")


def pair_metrics(student: dict, teacher: dict, pairs: list[tuple[int, np.ndarray]]) -> dict[str, float]:
    """Every representation metric of one student against its teacher on the same inputs.

    student / teacher: {"F": (n, d), "G": (k, d), "logits": (n, k)}. The student is model 1
    (f₁ = student, as in the paper's code), so A maps teacher embeddings onto the student's.
    """
    dim = student["F"].shape[1]
    d2 = d2_logit(student["logits"], teacher["logits"])
    rep = d_rep(student["F"], student["G"], teacher["F"], teacher["G"], pairs)
    kl = kl_divergence(teacher["logits"], student["logits"])
    tau_teacher, tau_student = min_probability(teacher["logits"]), min_probability(student["logits"])
    bound = d_rep_bound(d2, dim, rep.min_sigma) if rep.evaluated else float("nan")
    return {"agreement": agreement(student["logits"], teacher["logits"]),
            "kl_to_teacher": kl, "d2_logit": d2, "d_rep": rep.value,
            "mcca": mean_cca(student["F"], teacher["F"], dim),
            "teacher_min_prob": tau_teacher, "student_min_prob": tau_student,
            "kl_bound_on_d2_logit": kl_bound_on_d2_logit(kl, min(tau_teacher, tau_student)),
            "sigma_min_m1": rep.min_sigma, "max_condition_m1": rep.max_condition,
            "d_rep_bound": bound, "bound_slack": bound - rep.value,
            "subsets_evaluated": float(rep.evaluated), "subsets_skipped": float(rep.skipped)}
