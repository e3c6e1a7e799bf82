"""DiSPaT's objective and the AnoLLM scorer — numpy / torch, no Dagster.

f-divergence pieces (the spec's f-SPIN-style reconstruction [I]; the paper's equations are not
public). With r = dP/dQ and the variational bound D_f(P‖Q) = sup_T E_P[T] − E_Q[f*(T)],
attained at T = f′(r), the per-round loss with the implicit critic T_θ = f′(r_θ) is

    L_f(θ; θt) = −E_{x∼data}[f′(r_θ(x))] + E_{x′∼p_θt}[f*(f′(r_θ(x′)))],
    r_θ(x) = exp(β · (log p_θ(x) − log p_θt(x)))         (log-probabilities of value tokens)

so L_f = −D_f(P‖Q) exactly when r_θ = P/Q. Per f (u = log r, clipped to ±CLIP):

| f | f(r) | f′(r) | f*(t) | f*(f′(r)) |
|---|---|---|---|---|
| kl | r log r | 1 + log r | exp(t − 1) | r |
| js | r log r − (1 + r) log((1 + r)/2) | log(2r / (1 + r)) | −log(2 − eᵗ) | log((1 + r)/2) |
| chi2 | (r − 1)² | 2(r − 1) | t + t²/4 | r² − 1 |

JS in GAN form: L_js = E_data[softplus(−u)] + E_gen[softplus(u)] − 2 log 2.

The samples come from the schema-constrained decoder q_θt (p_θt masked to an allowed set A(h) and
renormalised at each token), so the log-probabilities in r are those of q (`allowed_logprobs`):
with the unconstrained log p the sample term's expected gradient at θ = θt is f″(1)·β·∇log P_θ(A),
not 0 (issue 48; tested in closed form). The data term uses log q as well (train rows lie in A).
"""
from __future__ import annotations

import math

import numpy as np
import torch
from torch.nn import functional as F

CLIP = 10.0
F_NAMES = ("js", "kl", "chi2")


# ------------------------------------------------------------------------------ f-divergences
def f_value(name: str, r: torch.Tensor) -> torch.Tensor:
    """f(r) for r > 0."""
    if name == "kl":
        return r * torch.log(r)
    if name == "js":
        return r * torch.log(r) - (1 + r) * torch.log((1 + r) / 2)
    if name == "chi2":
        return (r - 1) ** 2
    raise ValueError(f"unknown f {name!r}; known: {F_NAMES}")


def f_prime_log(name: str, u: torch.Tensor) -> torch.Tensor:
    """f′(r) as a function of u = log r (numerically stable)."""
    if name == "kl":
        return 1 + u
    if name == "js":
        return math.log(2.0) - F.softplus(-u)          # log(2r/(1+r)) = log 2 − log(1 + e^{−u})
    if name == "chi2":
        return 2 * (torch.exp(u) - 1)
    raise ValueError(f"unknown f {name!r}; known: {F_NAMES}")


def f_conjugate(name: str, t: torch.Tensor) -> torch.Tensor:
    """f*(t) (the convex conjugate; js needs t < log 2)."""
    if name == "kl":
        return torch.exp(t - 1)
    if name == "js":
        return -torch.log(2 - torch.exp(t))
    if name == "chi2":
        return t + t ** 2 / 4
    raise ValueError(f"unknown f {name!r}; known: {F_NAMES}")


def f_conjugate_of_prime_log(name: str, u: torch.Tensor) -> torch.Tensor:
    """f*(f′(r)) in closed form as a function of u = log r (no overflow for js)."""
    if name == "kl":
        return torch.exp(u)
    if name == "js":
        return F.softplus(u) - math.log(2.0)            # log((1 + r)/2)
    if name == "chi2":
        return torch.exp(2 * u) - 1
    raise ValueError(f"unknown f {name!r}; known: {F_NAMES}")


def f_loss(name: str, u_data: torch.Tensor, u_gen: torch.Tensor, weights_data: torch.Tensor | None = None,
           weights_gen: torch.Tensor | None = None) -> torch.Tensor:
    """L_f = −E_data[f′(r)] + E_gen[f*(f′(r))] with u = log r clipped to ±CLIP; expectations are
    plain means, or weighted sums when weights (summing to 1) are given (exact toy expectations)."""
    u_data, u_gen = u_data.clamp(-CLIP, CLIP), u_gen.clamp(-CLIP, CLIP)
    a, b = f_prime_log(name, u_data), f_conjugate_of_prime_log(name, u_gen)
    ea = a.mean() if weights_data is None else (weights_data * a).sum()
    eb = b.mean() if weights_gen is None else (weights_gen * b).sum()
    return -ea + eb


def js_gan_loss(u_data: torch.Tensor, u_gen: torch.Tensor) -> torch.Tensor:
    """softplus(−u) on data + softplus(u) on samples (= L_js + 2 log 2)."""
    u_data, u_gen = u_data.clamp(-CLIP, CLIP), u_gen.clamp(-CLIP, CLIP)
    return F.softplus(-u_data).mean() + F.softplus(u_gen).mean()


def f_divergence(name: str, p: np.ndarray, q: np.ndarray) -> float:
    """D_f(P‖Q) = Σ q f(p/q) for discrete P, Q with full support."""
    p, q = torch.as_tensor(p, dtype=torch.float64), torch.as_tensor(q, dtype=torch.float64)
    return float((q * f_value(name, p / q)).sum())


# ------------------------------------------------------------------------------ toy self-play
def toy_self_play(p_data: np.ndarray, p_init: np.ndarray, f: str = "js", beta: float = 1.0, rounds: int = 8,
                  steps: int = 200, lr: float = 0.1, optimizer: str = "adam") -> list[np.ndarray]:
    """Self-play on a categorical distribution with exact expectations: θ are logits; round t
    minimises L_f(θ; θt) (data = p_data, samples = p_θt) for `steps` Adam (or SGD) steps.
    Returns the distribution after every round (index 0 = p_init).

    With β = 1 the round's minimiser is p_data itself. With β < 1 the ratio constraint
    exp(β Δ) = p_data/p_θt asks for p_θ ∝ p_θt^{1−1/β} p_data^{1/β}, which overshoots; the
    gradient at θ = θt is still β·f″(1)·(the MLE gradient) (JS: β/2), so a few small steps per
    round move toward the data."""
    target = torch.as_tensor(p_data, dtype=torch.float64)
    logits = torch.log(torch.as_tensor(p_init, dtype=torch.float64)).clone().requires_grad_(True)
    history = [torch.softmax(logits, 0).detach().numpy().copy()]
    for _ in range(rounds):
        ref_logp = torch.log_softmax(logits, 0).detach()
        q = torch.exp(ref_logp)
        opt = torch.optim.Adam([logits], lr=lr) if optimizer == "adam" else torch.optim.SGD([logits], lr=lr)
        for _ in range(steps):
            u = beta * (torch.log_softmax(logits, 0) - ref_logp)
            loss = f_loss(f, u, u, weights_data=target, weights_gen=q)
            opt.zero_grad()
            loss.backward()
            opt.step()
        history.append(torch.softmax(logits, 0).detach().numpy().copy())
    return history


# ------------------------------------------------------------------------------ sequence log-probs
def sequence_logprobs(model, tokens: torch.Tensor, value_mask: torch.Tensor) -> torch.Tensor:
    """Σ log p(token) over value tokens per row: tokens (B, L), value_mask (B, L) → (B,)."""
    from assets.common.tiny_lm import token_logprobs

    logp = token_logprobs(model, tokens)
    return (logp * value_mask[:, 1:].float()).sum(dim=1)


def allowed_logprobs(log_probs: torch.Tensor, targets: torch.Tensor, allowed: torch.Tensor
                     ) -> tuple[torch.Tensor, torch.Tensor]:
    """Token log-probabilities renormalised over an allowed set, and the log-mass of that set.

    log_probs (…, V) are the model's (unconstrained) log-softmax, targets (…) the tokens, allowed
    (…, V) bool the set the constrained decoder samples from at each position. Returns
    (log q(target) = log p(target) − log P(allowed), log P(allowed)), both (…). The target is
    always counted as allowed (a no-op for rows the constraint generated or accepts; it keeps
    log q finite on any other row)."""
    allowed = allowed | F.one_hot(targets, log_probs.shape[-1]).bool()
    log_mass = torch.logsumexp(log_probs.masked_fill(~allowed, float("-inf")), dim=-1)
    return log_probs.gather(-1, targets[..., None]).squeeze(-1) - log_mass, log_mass


def sft_loss(model, tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean next-token NLL over the real target tokens (column names and separators included)."""
    from assets.common.tiny_lm import token_logprobs

    logp = token_logprobs(model, tokens)
    m = mask[:, 1:].float()
    return -(logp * m).sum() / m.sum().clamp(min=1)


def self_play_loss(f: str, beta: float, logp_data: torch.Tensor, ref_data: torch.Tensor, logp_gen: torch.Tensor,
                   ref_gen: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(L_f, u_data, u_gen) with u = β (log p_θ − log p_θt) on value tokens."""
    u_data = beta * (logp_data - ref_data)
    u_gen = beta * (logp_gen - ref_gen)
    return f_loss(f, u_data, u_gen), u_data.detach(), u_gen.detach()


# ------------------------------------------------------------------------------ AnoLLM score
def span_nll(model, tokens: torch.Tensor, span: torch.Tensor, n_columns: int, text_columns: list[int]
             ) -> torch.Tensor:
    """Per row and column: the value span's NLL (B, C) — summed over its tokens; text columns
    divided by the span length (AnoLLM). tokens, span (B, L); span −1 outside value tokens."""
    from assets.common.tiny_lm import token_logprobs

    nll = -token_logprobs(model, tokens)                       # (B, L − 1) for targets 1..L−1
    target_span = span[:, 1:]
    onehot = F.one_hot(target_span.clamp(min=0), n_columns).float() * (target_span >= 0)[..., None].float()
    per_col = torch.einsum("bl,blc->bc", nll, onehot)
    if text_columns:
        counts = onehot.sum(dim=1).clamp(min=1)
        idx = torch.tensor(text_columns, device=per_col.device)
        per_col[:, idx] = per_col[:, idx] / counts[:, idx]
    return per_col


# ------------------------------------------------------------------------------ calibration, metrics
def calibrated_threshold(val_scores: np.ndarray, alpha: float) -> float:
    """The (1 − α) empirical quantile of validation-normal scores: the value with exactly
    round(α n) validation scores above it (so the validation FPR is round(α n)/n)."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    s = np.sort(np.asarray(val_scores, float))
    if len(s) == 0 or not np.isfinite(s).all():
        raise ValueError("validation scores must be finite and non-empty")
    m = int(round(alpha * len(s)))
    return float(s[len(s) - m - 1]) if m < len(s) else float(s[0] - 1.0)


def detection_metrics(scores: np.ndarray, labels: np.ndarray, threshold: float) -> dict[str, float]:
    """AUROC, AUPRC (average precision), F1 and test-normal FPR at `threshold` (flag = score > threshold)."""
    from sklearn.metrics import average_precision_score, f1_score, roc_auc_score

    scores, labels = np.asarray(scores, float), np.asarray(labels, int)
    flags = scores > threshold
    return {"auroc": float(roc_auc_score(labels, scores)), "auprc": float(average_precision_score(labels, scores)),
            "f1": float(f1_score(labels, flags, zero_division=0)), "fpr": float(flags[labels == 0].mean())}


def paired_bootstrap_auc(a: list[np.ndarray], b: list[np.ndarray], labels: list[np.ndarray], n_boot: int,
                         seed: int, level: float = 0.90) -> tuple[float, float, float]:
    """(mean, low, high) of mean-over-cells AUROC(a) − AUROC(b), test rows resampled within
    each cell with the same indices for both methods (paired)."""
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(seed)
    point = float(np.mean([roc_auc_score(y, x) - roc_auc_score(y, z) for x, z, y in zip(a, b, labels)]))
    reps = np.zeros(n_boot)
    for k in range(n_boot):
        diffs = []
        for x, z, y in zip(a, b, labels):
            pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
            idx = np.concatenate([rng.choice(pos, len(pos)), rng.choice(neg, len(neg))])
            diffs.append(roc_auc_score(y[idx], x[idx]) - roc_auc_score(y[idx], z[idx]))
        reps[k] = np.mean(diffs)
    low, high = np.quantile(reps, [0.5 - level / 2, 0.5 + level / 2])
    return point, float(low), float(high)


def c2st_auc(real: np.ndarray, fake: np.ndarray, seed: int, folds: int = 5) -> float:
    """Classifier two-sample test: cross-validated AUROC of a fresh gradient-boosted classifier
    separating `real` (n, d) from `fake` (m, d) feature rows; 0.5 = indistinguishable."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    x = np.vstack([real, fake])
    y = np.r_[np.zeros(len(real)), np.ones(len(fake))]
    clf = HistGradientBoostingClassifier(max_iter=100, learning_rate=0.1, random_state=seed)
    cv = StratifiedKFold(folds, shuffle=True, random_state=seed)
    prob = cross_val_predict(clf, x, y, cv=cv, method="predict_proba")[:, 1]
    return float(roc_auc_score(y, prob))
