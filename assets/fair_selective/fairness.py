"""Fairness measures, the three estimators of Δ, the decomposition Δ_true = Δ_imp + B, the
overlap bound and SELLF's weights — no Dagster import, numpy only.

Notation (per group g over a window of decisions): n_g rows, α_g the acceptance rate, y the
true label, ŷ the imputed label on rejected rows, ỹ = a·y + (1 − a)·ŷ, and
e_g = E[ŷ − y | a = 0, g] the imputation bias on the rejected part.

Measures U_g (Δ = U_1 − U_0, signed; the constraint is |Δ| ≤ ω):
  tpr            P(a = 1 | y = 1, g)      (equal opportunity; the main measure)
  accuracy       P(a = y | g)
  qualification  E[y | g]

Signed per-group bias b_g = U_g^true − U_g^imp (exact):
  accuracy       b_g =  (1 − α_g)·e_g
  qualification  b_g = −(1 − α_g)·e_g
  tpr            b_g =  U_g^true·(1 − α_g)·e_g / E[ỹ | g]
so Δ_true = Δ_imp + B with B = b_1 − b_0, and |b_g| ≤ k_g·|e_g| with k_g = 1 − α_g
(accuracy, qualification) or (1 − α_g)/E[ỹ | g] (tpr, since U^true ≤ 1).
"""
from __future__ import annotations

import numpy as np

MEASURES = ("tpr", "accuracy", "qualification")
ESTIMATORS = ("full", "accepted", "imputation")
# window sums per group: n, Σa, Σy, Σa·y, Σỹ (ỹ = y where a = 1, so Σa·ỹ = Σa·y)
SUMS = ("n", "a", "y", "ay", "yt")


class FairnessInputError(ValueError):
    """Decision data the estimators cannot use (leaked labels, one group, bad probabilities...)."""


def group_sums(group: np.ndarray, action: np.ndarray, y_true: np.ndarray, y_tilde: np.ndarray) -> np.ndarray:
    """(2, 5) float: the SUMS of each group over the given rows (a full recount)."""
    g = np.asarray(group).astype(np.int64)
    a = np.asarray(action, dtype=float)
    y = np.asarray(y_true, dtype=float)
    yt = np.asarray(y_tilde, dtype=float)
    cols = np.stack([np.ones_like(a), a, y, a * y, yt], axis=1)
    out = np.zeros((2, len(SUMS)))
    np.add.at(out, g, cols)
    return out


def _utility(measure: str, n, a, y, ay) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        if measure == "tpr":
            u = ay / y
        elif measure == "accuracy":
            u = (n - a - y + 2 * ay) / n
        elif measure == "qualification":
            u = y / n
        else:
            raise ValueError(f"unknown measure {measure!r}; known: {MEASURES}")
    return np.where(np.isfinite(u), u, 0.0)     # an empty group has utility 0 (as the reference)


def utilities(sums: np.ndarray, measure: str, estimator: str) -> np.ndarray:
    """(2,) U_g from window sums (2, 5) with one estimator.

    full: the true labels; imputation: ỹ; accepted: only accepted rows (on them a = 1, so TPR
    is Σay/Σay = 1 whenever the group has an accepted positive: Δ_accepted ≡ 0 for TPR)."""
    n, a, y, ay, yt = (sums[:, i] for i in range(len(SUMS)))
    if estimator == "full":
        return _utility(measure, n, a, y, ay)
    if estimator == "imputation":
        return _utility(measure, n, a, yt, ay)
    if estimator == "accepted":
        return _utility(measure, a, a, ay, ay)
    raise ValueError(f"unknown estimator {estimator!r}; known: {ESTIMATORS}")


def delta(sums: np.ndarray, measure: str, estimator: str) -> float:
    """Signed Δ = U_1 − U_0."""
    u = utilities(sums, measure, estimator)
    return float(u[1] - u[0])


def _u_scalar(measure: str, n: float, a: float, y: float, ay: float) -> float:
    if measure == "tpr":
        return ay / y if y > 0 else 0.0
    if measure == "accuracy":
        return (n - a - y + 2 * ay) / n if n > 0 else 0.0
    if measure == "qualification":
        return y / n if n > 0 else 0.0
    raise ValueError(f"unknown measure {measure!r}; known: {MEASURES}")


def delta_scalar(sums: list, measure: str, estimator: str) -> float:
    """`delta` on sums given as nested Python lists (the per-step fast path; same values)."""
    u = []
    for n, a, y, ay, yt in sums:
        if estimator == "full":
            u.append(_u_scalar(measure, n, a, y, ay))
        elif estimator == "imputation":
            u.append(_u_scalar(measure, n, a, yt, ay))
        elif estimator == "accepted":
            u.append(_u_scalar(measure, a, a, ay, ay))
        else:
            raise ValueError(f"unknown estimator {estimator!r}; known: {ESTIMATORS}")
    return u[1] - u[0]


def decomposition(sums: np.ndarray, measure: str) -> dict:
    """Δ_true, Δ_imp, b_g (closed form above), B = b_1 − b_0 and the residual
    |Δ_true − (Δ_imp + B)| (≈ 1e-16: an identity), plus α_g, e_g and k_g."""
    n, a, y, ay, yt = (sums[:, i] for i in range(len(SUMS)))
    alpha = np.divide(a, n, out=np.zeros(2), where=n > 0)
    rejected = n - a
    # Σ_{a=0} (ŷ − y) = Σỹ − Σy (the accepted rows cancel)
    e = np.divide(yt - y, rejected, out=np.zeros(2), where=rejected > 0)
    u_true = utilities(sums, measure, "full")
    u_imp = utilities(sums, measure, "imputation")
    pred_rate = np.divide(yt, n, out=np.zeros(2), where=n > 0)
    if measure == "accuracy":
        k, b = 1 - alpha, (1 - alpha) * e
    elif measure == "qualification":
        k, b = 1 - alpha, -(1 - alpha) * e
    elif measure == "tpr":
        k = np.divide(1 - alpha, pred_rate, out=np.full(2, np.inf), where=pred_rate > 0)
        b = np.where(pred_rate > 0, u_true * (1 - alpha) * e / np.where(pred_rate > 0, pred_rate, 1), 0.0)
    else:
        raise ValueError(f"unknown measure {measure!r}")
    d_true, d_imp = float(u_true[1] - u_true[0]), float(u_imp[1] - u_imp[0])
    big_b = float(b[1] - b[0])
    return {"delta_true": d_true, "delta_imp": d_imp, "b": b, "B": big_b, "alpha": alpha, "e": e, "k": k,
            "residual": abs(d_true - (d_imp + big_b))}


class RingWindow:
    """The last W decisions with running per-group SUMS: O(1) per decision.

    `push` adds one decision (evicting the oldest once full); `sums` are the running sums,
    `recount()` recomputes them from the stored rows (the O(W) reference)."""

    def __init__(self, size: int):
        if size < 1:
            raise FairnessInputError(f"window size must be ≥ 1, got {size}")
        self.size = int(size)
        self.group = np.zeros(self.size, dtype=np.int64)
        self.rows = np.zeros((self.size, len(SUMS)))
        self.sums = np.zeros((2, len(SUMS)))
        self.filled, self.head = 0, 0

    def fill(self, group: np.ndarray, action: np.ndarray, y_true: np.ndarray, y_tilde: np.ndarray) -> None:
        """Replace the content with the given rows (the last `size` of them), one batched pass."""
        group, action = np.asarray(group)[-self.size:], np.asarray(action)[-self.size:]
        y_true, y_tilde = np.asarray(y_true)[-self.size:], np.asarray(y_tilde)[-self.size:]
        m = len(group)
        self.group[:m] = group
        a, y, yt = (np.asarray(v, dtype=float) for v in (action, y_true, y_tilde))
        self.rows[:m] = np.stack([np.ones(m), a, y, a * y, yt], axis=1)
        self.filled, self.head = m, m % self.size
        self.sums = group_sums(group, action, y_true, y_tilde)

    def push(self, group: int, action: int, y_true: int, y_tilde: float) -> None:
        row = (1.0, float(action), float(y_true), float(action * y_true), float(y_tilde))
        if self.filled == self.size:
            old = self.group[self.head]
            self.sums[old] -= self.rows[self.head]
        else:
            self.filled += 1
        self.group[self.head] = group
        self.rows[self.head] = row
        self.sums[group] += row
        self.head = (self.head + 1) % self.size

    def recount(self) -> np.ndarray:
        """(2, 5) sums recomputed from the stored rows (O(W))."""
        out = np.zeros((2, len(SUMS)))
        np.add.at(out, self.group[:self.filled], self.rows[:self.filled])
        return out


def recount_window(group, action, y_true, y_tilde, t: int, size: int) -> np.ndarray:
    """(2, 5) sums of the rows (t − size, t] of full decision arrays (the naive O(W) update)."""
    lo = max(0, t + 1 - size)
    return group_sums(group[lo:t + 1], action[lo:t + 1], y_true[lo:t + 1], y_tilde[lo:t + 1])


def coverage(past_accept: np.ndarray) -> np.ndarray:
    """a_K(x) = 1 − Π_k (1 − π_k(x)): P(at least one past policy accepts x).

    past_accept: (K, n) acceptance probabilities of K past policies at n points → (n,)."""
    p = np.asarray(past_accept, dtype=float)
    if p.ndim == 1:
        p = p[None]
    if p.size and ((p < 0) | (p > 1) | ~np.isfinite(p)).any():
        raise FairnessInputError("past acceptance probabilities must lie in [0, 1]")
    return 1.0 - np.prod(1.0 - p, axis=0)


def importance_weights(accept_prob: np.ndarray, a_k: np.ndarray) -> np.ndarray:
    """w(x) = (1 − π(x)) / a_K(x) (the rejected-over-covered density ratio, unnormalised)."""
    a_k = np.asarray(a_k, dtype=float)
    if (a_k <= 0).any():
        raise FairnessInputError(f"a_K = 0 on {int((a_k <= 0).sum())} row(s): no past policy ever accepts "
                                 "them, so the rejected region is not covered (overlap fails)")
    return (1.0 - np.asarray(accept_prob, dtype=float)) / a_k


def renyi_weights(group: np.ndarray, action: np.ndarray, a_k: np.ndarray, y_tilde: np.ndarray | None,
                  measure: str) -> np.ndarray:
    """(2,) c_g = mean(a_K | g) / r_g, r_g the group's rejection rate (floored at 1/n_g);
    for TPR c_g = mean(a_K | g) / (r_g · mean(ỹ | g))."""
    g = np.asarray(group).astype(np.int64)
    out = np.zeros(2)
    for k in (0, 1):
        m = g == k
        if not m.any():
            raise FairnessInputError(f"group {k} has no rows")
        r = max(float((np.asarray(action)[m] == 0).mean()), 1.0 / m.sum())
        c = float(np.asarray(a_k)[m].mean()) / r
        if measure == "tpr":
            c /= max(float(np.asarray(y_tilde)[m].mean()), 1.0 / m.sum())
        out[k] = c
    return out


def renyi_term(accept_prob, a_k, group, c) -> float:
    """R = Σ_g c_g · mean_g((1 − π)² / a_K) / Σ_g c_g (numpy version of the training loss term)."""
    val = (1.0 - np.asarray(accept_prob, dtype=float)) ** 2 / np.asarray(a_k, dtype=float)
    g = np.asarray(group).astype(np.int64)
    return float(sum(c[k] * val[g == k].mean() for k in (0, 1)) / (c[0] + c[1]))


def overlap_bound(err_acc: np.ndarray, w_acc: np.ndarray) -> dict:
    """Cauchy–Schwarz bound on the rejected-part bias of one group from accepted rows.

    err_acc: (m,) f(x) − y on accepted rows; w_acc: (m,) importance weights. With the
    self-normalised ratio ρ = w / mean(w): ê_IW = mean(ρ·err) estimates E_rej[err],
    D̂₂ = mean(ρ²) (the exponentiated order-2 Rényi divergence) and
    |E_rej[err]| ≤ sqrt(D̂₂ · mean(err²))."""
    err = np.asarray(err_acc, dtype=float)
    w = np.asarray(w_acc, dtype=float)
    if len(err) == 0 or w.sum() <= 0:
        raise FairnessInputError("no accepted rows with positive weight in a group: the bound is undefined")
    rho = w / w.mean()
    d2 = float((rho ** 2).mean())
    mse = float((err ** 2).mean())
    return {"e_iw": float((rho * err).mean()), "d2": d2, "mse": mse, "bound": float(np.sqrt(d2 * mse))}


def certificate(delta_imp: float, bias_bound: float, omega: float) -> bool:
    """|Δ_imp| ≤ ω/2 and the bound on |B| ≤ ω/2 ⇒ |Δ_true| ≤ ω (sufficient condition)."""
    return bool(abs(delta_imp) <= omega / 2 and bias_bound <= omega / 2)


def validate_log(group, action, label, accept_prob=None) -> None:
    """Bad decision logs raise FairnessInputError: labels on rejected rows (leakage), not exactly
    two groups {0, 1}, actions not in {0, 1}, probabilities outside [0, 1], a group with no
    accepted positive."""
    g, a = np.asarray(group), np.asarray(action)
    lab = np.asarray(label, dtype=float)
    if set(np.unique(g).tolist()) != {0, 1}:
        raise FairnessInputError(f"exactly two groups 0 and 1 are needed, got {sorted(set(np.unique(g).tolist()))}")
    if not set(np.unique(a).tolist()) <= {0, 1}:
        raise FairnessInputError("actions must be 0 (reject) or 1 (accept)")
    leaked = int((~np.isnan(lab) & (a == 0)).sum())
    if leaked:
        raise FairnessInputError(f"{leaked} rejected row(s) carry a label: selective labels must be empty "
                                 "when the action is 0 (leakage)")
    if np.isnan(lab[a == 1]).any():
        raise FairnessInputError("accepted rows must carry their label")
    if accept_prob is not None:
        p = np.asarray(accept_prob, dtype=float)
        if (~np.isfinite(p) | (p < 0) | (p > 1)).any():
            raise FairnessInputError("acceptance probabilities must lie in [0, 1]")
    for k in (0, 1):
        if not ((g == k) & (a == 1) & (lab == 1)).any():
            raise FairnessInputError(f"group {k} has no accepted positive: its accepted-row utility is undefined")
