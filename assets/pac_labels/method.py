"""PAC labeling: labels whose overall error is ≤ ε with probability ≥ 1 − α (pure numpy/scipy).

Candès, Ilyas, Zrnic, "Probably Approximately Correct Labels" (arXiv 2506.10908), as written
in ../shared/papers/pac_labels.md (the algorithm of the authors' pac_utils.py, re-implemented).

Setting: n items with AI labels Ŷ_i, uncertainties U_i (higher = less trusted) and hidden expert
labels Y_i that can only be *bought* through an `ExpertOracle`. The data are fixed; the
probability is over the algorithm's own randomness (the K draws).

    1. draw i_1..i_K uniformly WITH replacement from [n], ξ_k ~ Bernoulli(π_{i_k});
       buy Y_{i_k} when ξ_k = 1 (those items get Ỹ = Y, provenance "expert_sampled");
    2. Z_k(u) = ℓ(Y_{i_k}, Ŷ_{i_k}) ξ_k / π_{i_k} 1{U_{i_k} < u}  — unbiased for
       L(u) = (1/n) Σ_i ℓ(Y_i, Ŷ_i) 1{U_i < u}, the error if every item with U ≥ u is bought;
    3. UCB_α(u): one-sided CLT (mean + z_{1−α} sd/√K) or Waudby-Smith–Ramdas betting on Z/B,
       B = a loss bound known a priori divided by min π (never computed from hidden labels);
    4. û = the largest u in sorted(U) with UCB_α(u) ≤ ε, by binary search; when none is
       feasible û = −∞ (everything is expert-labelled — the reference code's wrap-around to
       the largest uncertainty is a bug we do not reproduce);
    5. buy Y for every item with U_i ≥ û ("expert_threshold"); all other items keep Ŷ ("ai").

Nothing here reads a hidden label except through `ExpertOracle.buy`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

PROVENANCE = ("ai", "expert_sampled", "expert_threshold", "expert_calibration")
AI, EXPERT_SAMPLED, EXPERT_THRESHOLD, EXPERT_CALIBRATION = range(4)
CI_TYPES = ("clt", "wsr", "plugin")
LOSSES = ("zero_one", "squared")
TIE_BREAK_JITTER = 1e-5


class InputError(ValueError):
    """Bad input for PAC labeling; the message names the column or parameter and the rows."""


# ============================================================================ losses
def zero_one_loss(y: np.ndarray, yhat: np.ndarray) -> np.ndarray:
    """1{y ≠ ŷ} per item; shapes (n,), (n,) → (n,) float."""
    return (np.asarray(y) != np.asarray(yhat)).astype(float)


def squared_loss(y: np.ndarray, yhat: np.ndarray) -> np.ndarray:
    """(y − ŷ)² per item; shapes (n,), (n,) → (n,) float."""
    diff = np.asarray(y, dtype=float) - np.asarray(yhat, dtype=float)
    return diff * diff


def loss_fn(name: str):
    if name == "zero_one":
        return zero_one_loss
    if name == "squared":
        return squared_loss
    raise InputError(f"loss must be one of {LOSSES}, got {name!r}")


def loss_upper_bound(loss: str, yhat: np.ndarray, label_range: tuple[float, float] | None = None) -> float:
    """An a-priori bound on ℓ(Y_i, Ŷ_i) for every item, from Ŷ and the label range only.

    0-1 loss: 1. Squared loss: max_i max((ŷ_i − lo)², (ŷ_i − hi)²) for labels in [lo, hi]
    (needed by the WSR bound; the reference code used max over the *hidden* labels instead).
    """
    if loss == "zero_one":
        return 1.0
    if label_range is None:
        raise InputError("squared loss with the WSR bound needs label_range (lo, hi) of the expert labels")
    lo, hi = float(label_range[0]), float(label_range[1])
    yhat = np.asarray(yhat, dtype=float)
    return float(max(np.max((yhat - lo) ** 2), np.max((yhat - hi) ** 2), 1e-12))


def uncertainty_from_confidence(confidence: np.ndarray, seed: int = 0,
                                jitter: float = TIE_BREAK_JITTER) -> np.ndarray:
    """U_i = 1 − conf_i + N(0, jitter²) noise from a fixed seed (ties broken deterministically).

    confidence: (n,) in [0, 1] → (n,) float. The same seed gives the same U.
    """
    confidence = np.asarray(confidence, dtype=float)
    noise = np.random.default_rng(np.random.SeedSequence([int(seed), 0x7AC])).normal(
        0.0, jitter, size=confidence.shape)
    return 1.0 - confidence + noise


# ============================================================================ oracle
class ExpertOracle:
    """The only way to read a true label: `buy` returns labels and records them in a ledger.

    hidden_labels: (n,) numeric labels (class codes or real values). An item bought twice is
    paid once. `ledger_reason[i]` is the provenance code of the first purchase of item i
    (0 = never bought). The method code never receives hidden labels in any other way.
    """

    def __init__(self, hidden_labels):
        self._hidden = hidden_labels
        n = len(hidden_labels)
        self._reason = np.zeros(n, dtype=np.int8)
        self._values = np.full(n, np.nan)
        self.purchase_calls = 0

    @property
    def n_items(self) -> int:
        return len(self._reason)

    def buy(self, items: np.ndarray, reason: int) -> np.ndarray:
        """Labels of `items` (int array, any order, repeats allowed); new items are charged."""
        items = np.asarray(items, dtype=np.int64)
        if reason not in (EXPERT_SAMPLED, EXPERT_THRESHOLD, EXPERT_CALIBRATION):
            raise ValueError(f"unknown purchase reason {reason}")
        if items.size and (items.min() < 0 or items.max() >= self.n_items):
            raise IndexError("item index outside the pool")
        new = np.unique(items[self._reason[items] == 0])
        if new.size:
            self.purchase_calls += 1
            self._values[new] = np.asarray(self._hidden[new], dtype=float)
            self._reason[new] = reason
        return self._values[items].copy()

    @property
    def ledger_reason(self) -> np.ndarray:
        return self._reason.copy()

    @property
    def bought(self) -> np.ndarray:
        return self._reason > 0

    @property
    def n_bought(self) -> int:
        return int(np.count_nonzero(self._reason))

    def counts(self) -> dict[str, int]:
        """Purchases per reason: {"expert_sampled": ..., "expert_threshold": ..., ...}."""
        return {PROVENANCE[code]: int(np.count_nonzero(self._reason == code)) for code in range(1, 4)}


# ============================================================================ bounds
def ucb_clt(z: np.ndarray, alpha: float) -> float:
    """One-sided CLT upper bound mean + z_{1−α} · sd / √K (sd with ddof 0). z: (K,)."""
    from scipy.stats import norm  # lazy: scipy.stats costs ~0.7 s at import

    z = np.asarray(z, dtype=float)
    return float(z.mean() + norm.isf(alpha) * z.std() / math.sqrt(z.size))


def _wsr_log_capital_max(x: np.ndarray, lam: np.ndarray, m: float, c: float) -> float:
    """max_t log Π_{s≤t} (1 − λ_s⁻(m) (x_s − m)), λ⁻ truncated at c / (1 − m)."""
    lam_m = np.minimum(lam, c / (1.0 - m))
    return float(np.cumsum(np.log1p(-lam_m * (x - m))).max())


def wsr_predictable_lambdas(x: np.ndarray, alpha: float) -> np.ndarray:
    """Predictable plug-in bets λ_t = sqrt(2 log(2/α) / (K σ̂²_{t−1})) (WSR 2023, fixed K).

    μ̂_t = (1/2 + Σ_{s≤t} x_s)/(t + 1), σ̂²_t = (1/4 + Σ_{s≤t} (x_s − μ̂_s)²)/(t + 1), σ̂²_0 = 1/4.
    x: (K,) in [0, 1] → (K,). (log(2/α), as in the authors' code: a choice of bet size only.)
    """
    K = x.size
    t = np.arange(1, K + 1)
    mu_hat = (0.5 + np.cumsum(x)) / (1 + t)
    sigma2 = (0.25 + np.cumsum((x - mu_hat) ** 2)) / (1 + t)
    sigma2_prev = np.concatenate([[0.25], sigma2[:-1]])
    return np.sqrt(2.0 * math.log(2.0 / alpha) / (K * sigma2_prev))


def wsr_grid(grid_size: int) -> np.ndarray:
    return np.linspace(1e-5, 1 - 1e-5, int(grid_size))


def ucb_wsr(z: np.ndarray, alpha: float, upper: float, grid_size: int = 100_000,
            c: float = 0.75) -> float:
    """One-sided Waudby-Smith–Ramdas betting upper bound for the mean of z ∈ [0, upper].

    A grid value m is rejected when the capital of the bettor on "mean < m",
    Π_t (1 − λ_t⁻(m)(x_t − m)) with x = z / upper, reaches 1/α at some t ≤ K. Each factor
    is non-decreasing in m, so the rejected set is an up-set of the grid: we find its first
    point by bisection (O(K log G)) instead of scanning the grid (O(K · G)); the answer is the
    largest non-rejected grid point, identical to a full scan. Returns the bound in z units.
    """
    x = np.clip(np.asarray(z, dtype=float) / upper, 0.0, 1.0)
    lam = wsr_predictable_lambdas(x, alpha)
    grid = wsr_grid(grid_size)
    threshold = math.log(1.0 / alpha)
    if _wsr_log_capital_max(x, lam, grid[0], c) >= threshold:
        return float(grid[0] * upper)      # even the smallest grid point is rejected: bound < grid[0]
    if _wsr_log_capital_max(x, lam, grid[-1], c) < threshold:
        return float(grid[-1] * upper)
    lo, hi = 0, grid.size - 1              # invariant: grid[lo] accepted, grid[hi] rejected
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _wsr_log_capital_max(x, lam, grid[mid], c) >= threshold:
            hi = mid
        else:
            lo = mid
    return float(grid[lo] * upper)


# ============================================================================ PAC labeling
@dataclass(frozen=True)
class PACConfig:
    """Parameters of one PAC labeling run.

    epsilon: target error (loss units); alpha: failure probability; num_draws: K;
    ci: "clt" | "wsr" | "plugin" (the plug-in baseline: L̂(u) ≤ ε, no confidence bound);
    loss: "zero_one" | "squared"; label_range: (lo, hi) of labels, needed for squared + WSR;
    wsr_grid_size: grid resolution of the WSR bound.
    """

    epsilon: float = 0.05
    alpha: float = 0.05
    num_draws: int = 500
    ci: str = "wsr"
    loss: str = "zero_one"
    label_range: tuple[float, float] | None = None
    wsr_grid_size: int = 100_000
    wsr_c: float = 0.75


def validate_config(config: PACConfig, n_items: int) -> None:
    """Raise InputError naming the bad parameter."""
    problems = []
    for name in ("epsilon", "alpha"):
        value = getattr(config, name)
        if not (isinstance(value, (int, float)) and math.isfinite(value) and 0 < value < 1):
            problems.append(f"{name} must lie in (0, 1), got {value!r}")
    if int(config.num_draws) < 2:
        problems.append(f"num_draws (K) must be ≥ 2, got {config.num_draws}")
    if int(config.num_draws) > n_items:
        problems.append(f"num_draws (K) = {config.num_draws} is larger than the pool ({n_items} items)")
    if config.ci not in CI_TYPES:
        problems.append(f"ci must be one of {CI_TYPES}, got {config.ci!r}")
    if config.loss not in LOSSES:
        problems.append(f"loss must be one of {LOSSES}, got {config.loss!r}")
    if config.ci == "wsr" and config.loss == "squared" and config.label_range is None:
        problems.append("ci='wsr' with squared loss needs label_range (lo, hi)")
    if problems:
        raise InputError("; ".join(problems))


@dataclass
class Calibration:
    """Result of steps 1–4. draws/xi: (K,); u_hat = −inf when no threshold is feasible."""

    u_hat: float
    feasible: bool
    draws: np.ndarray
    xi: np.ndarray
    ucb_at_u_hat: float
    bound_evaluations: int
    upper: float


@dataclass
class PACResult:
    """Ỹ (n,) float, provenance codes (n,) int8 (index into PROVENANCE), the calibration."""

    labels: np.ndarray
    provenance: np.ndarray
    calibration: Calibration
    counts: dict[str, int] = field(default_factory=dict)


def draw_items(n: int, num_draws: int, pi: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """K indices uniform WITH replacement and ξ_k ~ Bernoulli(π_{i_k}); → (K,) int64, (K,) bool."""
    draws = rng.integers(0, n, size=int(num_draws))
    xi = rng.random(int(num_draws)) < pi[draws]
    return draws, xi


def _upper_confidence(z: np.ndarray, config: PACConfig, upper: float) -> float:
    if config.ci == "clt":
        return ucb_clt(z, config.alpha)
    if config.ci == "wsr":
        return ucb_wsr(z, config.alpha, upper, config.wsr_grid_size, config.wsr_c)
    return float(np.mean(z))          # plug-in baseline: no confidence bound


def calibrate_threshold(yhat: np.ndarray, uncertainty: np.ndarray, oracle: ExpertOracle,
                        config: PACConfig, rng: np.random.Generator,
                        pi: np.ndarray | None = None) -> Calibration:
    """Steps 1–4: draw, buy the sampled labels, bisect sorted(U) for û. Shapes (n,)."""
    yhat = np.asarray(yhat)
    uncertainty = np.asarray(uncertainty, dtype=float)
    n = yhat.shape[0]
    validate_config(config, n)
    pi = np.ones(n) if pi is None else np.asarray(pi, dtype=float)
    if pi.shape != (n,) or not np.all((pi > 0) & (pi <= 1)):
        raise InputError("pi must have one value in (0, 1] per item")
    draws, xi = draw_items(n, config.num_draws, pi, rng)
    losses = np.zeros(draws.size)
    bought = np.flatnonzero(xi)
    if bought.size:
        labels = oracle.buy(draws[bought], EXPERT_SAMPLED)
        losses[bought] = loss_fn(config.loss)(labels, yhat[draws[bought]])
    base = losses / pi[draws]                       # ℓ ξ / π; zero where ξ = 0
    upper = (loss_upper_bound(config.loss, yhat, config.label_range) / float(pi.min())
             if config.ci == "wsr" else float("nan"))
    drawn_u = uncertainty[draws]
    candidates = np.sort(uncertainty)

    evaluations = 0
    lo, hi = 0, n - 1
    bound_at: dict[int, float] = {}
    while lo <= hi:
        j = (lo + hi) // 2
        bound = _upper_confidence(base * (drawn_u < candidates[j]), config, upper)
        bound_at[j] = bound
        evaluations += 1
        if bound > config.epsilon:
            hi = j - 1
        else:
            lo = j + 1
    if lo == 0:                                     # nothing feasible: label everything
        return Calibration(-math.inf, False, draws, xi, float("nan"), evaluations, upper)
    return Calibration(float(candidates[lo - 1]), True, draws, xi, bound_at.get(lo - 1, float("nan")),
                       evaluations, upper)


def label_with_threshold(yhat: np.ndarray, uncertainty: np.ndarray, oracle: ExpertOracle,
                         calibration: Calibration) -> PACResult:
    """Step 5: buy every item with U ≥ û; Ỹ = bought label, else Ŷ. Shapes (n,)."""
    uncertainty = np.asarray(uncertainty, dtype=float)
    above = np.flatnonzero(uncertainty >= calibration.u_hat)
    oracle.buy(above, EXPERT_THRESHOLD)
    return finalize_labels(yhat, uncertainty, oracle, calibration)


def finalize_labels(yhat: np.ndarray, uncertainty: np.ndarray, oracle: ExpertOracle,
                    calibration: Calibration) -> PACResult:
    """Ỹ and provenance from the algorithm's own record (draws, ξ, û), independent of the
    oracle's ledger (a check compares the two): sampled items first, then U ≥ û, else "ai"."""
    uncertainty = np.asarray(uncertainty, dtype=float)
    provenance = np.zeros(uncertainty.shape[0], dtype=np.int8)
    provenance[uncertainty >= calibration.u_hat] = EXPERT_THRESHOLD
    provenance[calibration.draws[calibration.xi]] = EXPERT_SAMPLED
    labels = np.asarray(yhat, dtype=float).copy()
    expert = np.flatnonzero(provenance > 0)
    labels[expert] = oracle.buy(expert, EXPERT_THRESHOLD)      # already paid: no new charge
    return PACResult(labels, provenance, calibration, oracle.counts())


def replay_calibration(n: int, u_hat: float, seed_rng: np.random.Generator, num_draws: int,
                       pi: np.ndarray | None = None) -> Calibration:
    """The draws of a stored calibration, re-derived from its seed (draws are a pure function
    of the generator state), with the stored û."""
    pi = np.ones(n) if pi is None else np.asarray(pi, dtype=float)
    draws, xi = draw_items(n, num_draws, pi, seed_rng)
    return Calibration(float(u_hat), bool(np.isfinite(u_hat)), draws, xi, float("nan"), 0, float("nan"))


def pac_labeling(yhat: np.ndarray, uncertainty: np.ndarray, oracle: ExpertOracle, config: PACConfig,
                 rng: np.random.Generator, pi: np.ndarray | None = None) -> PACResult:
    """The whole algorithm (steps 1–5). yhat, uncertainty: (n,). Returns Ỹ with provenance."""
    calibration = calibrate_threshold(yhat, uncertainty, oracle, config, rng, pi)
    return label_with_threshold(yhat, uncertainty, oracle, calibration)


def ucb_curve(yhat: np.ndarray, uncertainty: np.ndarray, calibration: Calibration, oracle: ExpertOracle,
              config: PACConfig, points: int = 60, pi: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """UCB_α(u) at `points` quantiles of U for one calibration (for plots): (points,), (points,).

    Uses only the labels already bought for the K draws (no new purchase)."""
    yhat = np.asarray(yhat)
    uncertainty = np.asarray(uncertainty, dtype=float)
    pi = np.ones(yhat.shape[0]) if pi is None else np.asarray(pi, dtype=float)
    losses = np.zeros(calibration.draws.size)
    bought = np.flatnonzero(calibration.xi)
    if bought.size:
        losses[bought] = loss_fn(config.loss)(oracle.buy(calibration.draws[bought], EXPERT_SAMPLED),
                                              yhat[calibration.draws[bought]])
    base = losses / pi[calibration.draws]
    grid = np.quantile(uncertainty, np.linspace(0, 1, points))
    drawn_u = uncertainty[calibration.draws]
    values = np.array([_upper_confidence(base * (drawn_u < u), config, calibration.upper) for u in grid])
    return grid, values


# ============================================================================ baselines
def naive_threshold_labels(yhat: np.ndarray, confidence: np.ndarray, oracle: ExpertOracle,
                           epsilon: float) -> np.ndarray:
    """Baseline: use Ŷ where confidence ≥ 1 − ε, buy the rest. → Ỹ (n,) float."""
    confidence = np.asarray(confidence, dtype=float)
    low = np.flatnonzero(confidence < 1.0 - epsilon)
    labels = np.asarray(yhat, dtype=float).copy()
    labels[low] = oracle.buy(low, EXPERT_THRESHOLD)
    return labels


# ============================================================================ evaluation
def realized_error(true_labels: np.ndarray, labels: np.ndarray, loss: str) -> float:
    """(1/n) Σ ℓ(Y_i, Ỹ_i) — the evaluator's judgement with full ground truth (never used by
    the method)."""
    return float(np.mean(loss_fn(loss)(true_labels, labels)))
