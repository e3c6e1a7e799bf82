"""Score-error model, coupled reverse-time chains, the stepwise bounds and the exact Gaussian
closed form — pure numpy.

Coupling (spec "Stepwise recursion"): the true-score chain Y and the perturbed chain Ỹ start
from the same Y_T and use the same Brownian increments ξ_k, so Δ_k = Ỹ_k − Y_k obeys

    Δ_{k+1} = (I + h_k A_k) Δ_k + b_k e_k,   A_k = α_k I + c γ_k H̄_k,   b_k = h_k c γ_k,

with H̄_k = ∫₀¹ ∇² log p_{τ_k}(Y_k + uΔ_k) du (the pathwise Hessian average). If the spectrum of
every ∇² log p_{τ_k} lies in [lo_k, hi_k], then ‖I + h_k A_k‖ ≤ ρ_k := max over both ends of
|1 + h_k(α_k + cγ_k λ)| (both ends: a large negative λ with a large h gives ρ > 1).

Bounds on the coupling RMS (E‖Δ_K‖²)^{1/2} ≥ W2(law Y_K, law Ỹ_K):
- Minkowski form (spec): Σ_k b_k Π_{j>k} ρ_j (‖μ_k‖² + tr D_kD_kᵀ)^{1/2}.
- Stepwise recursion [inferred, used as the primary bound]: e_k's noise part is independent
  of (Y_k, Δ_k), so E‖Δ_{k+1}‖² = E‖(I + hA_k)Δ_k + b_kμ_k‖² + b_k² tr D_kD_kᵀ and
      r_{k+1}² ≤ (ρ_k r_k + b_k‖μ_k‖)² + b_k² tr D_kD_kᵀ,   r_0 = 0.
  It is never larger than the Minkowski form (by induction) and stays valid when H̄ depends
  on the state (unlike the spec's square-summed variant, which needs a deterministic H̄).
Everything is computed in log space: the general bound reaches 10^50 and beyond.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd
from scipy.special import logsumexp

from assets.diffusion_w2.processes import sampler_c
from assets.diffusion_w2.targets import GaussianMixture, curvature_interval, eig_extremes, has_family  # noqa: F401

WINDOWS = ("all", "low_t", "high_t")        # all τ; τ ≤ 0.4T; τ ≥ 0.6T (forward time)
SMALL_TIME = 0.05                           # "small times" τ ≤ 0.05T for the amplification diagnostics


@dataclass(frozen=True)
class ErrorModel:
    """Assumption 1: ŝ(x, τ_k) = ∇ log p_{τ_k}(x) + e_k, e_k ~ N(mean·1_d, sd² I_d) drawn
    independently per step and per trajectory, independent of the state, and zero outside
    the injection window."""

    name: str
    mean: float
    sd: float
    window: str = "all"

    def __post_init__(self):
        if self.window not in WINDOWS:
            raise ValueError(f"error model {self.name}: window must be one of {WINDOWS}, got {self.window!r}")
        if not (np.isfinite(self.mean) and np.isfinite(self.sd) and self.sd >= 0):
            raise ValueError(f"error model {self.name}: need finite mean and sd >= 0, got {self.mean}, {self.sd}")

    def active(self, tau: np.ndarray, T: float) -> np.ndarray:
        tau = np.asarray(tau, dtype=float)
        if self.window == "all":
            return np.ones_like(tau, dtype=bool)
        if self.window == "low_t":
            return tau <= 0.4 * T + 1e-12
        return tau >= 0.6 * T - 1e-12

    def moments(self, tau: np.ndarray, T: float, dim: int) -> tuple[np.ndarray, np.ndarray]:
        """Per step: (‖μ_k‖, tr D_kD_kᵀ), shapes (K,)."""
        on = self.active(tau, T).astype(float)
        return on * abs(self.mean) * np.sqrt(dim), on * self.sd ** 2 * dim

    @property
    def biased(self) -> bool:
        return self.mean != 0


@dataclass
class StepFunctions:
    """Per-step callables at τ_k: x (..., d) → score (..., d), → Hessian (..., d, d) and →
    (λ_min, λ_max) of the Hessian, two (...,) arrays."""

    scores: list[Callable[[np.ndarray], np.ndarray]]
    hessians: list[Callable[[np.ndarray], np.ndarray]]
    extremes: list[Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]]


def step_functions(target, grid: pd.DataFrame) -> StepFunctions:
    """Score/Hessian callables for every step of a grid (logistic: tabulated once here)."""
    triples = [(target.score_fn(a, s), target.hessian_fn(a, s), target.extremes_fn(a, s))
               for a, s in zip(grid["a"].to_numpy(), grid["sigma"].to_numpy())]
    return StepFunctions(*(list(t) for t in zip(*triples)))


@dataclass
class ChainDraws:
    """Every random draw of one coupled run, fixed in advance (to feed two backends the same
    noise): init / init_replica (n, d): Y_T of the true (and perturbed) chains and of the
    replica; brownian / brownian_replica (K, n, d): standard-normal ξ_k; errors (K, E, n, d):
    standard-normal score-error draws z_k (e_k = mean + sd·z_k inside the window)."""

    init: np.ndarray
    init_replica: np.ndarray
    brownian: np.ndarray
    brownian_replica: np.ndarray
    errors: np.ndarray

    @classmethod
    def draw(cls, target, grid: pd.DataFrame, n_errors: int, n: int, seed: int) -> "ChainDraws":
        rng = np.random.default_rng(seed)
        a0, s0, K, d = float(grid["a"].iat[0]), float(grid["sigma"].iat[0]), len(grid), target.dim
        return cls(target.sample_marginal(n, a0, s0, rng), target.sample_marginal(n, a0, s0, rng),
                   rng.standard_normal((K, n, d)), rng.standard_normal((K, n, d)),
                   rng.standard_normal((K, n_errors, n, d)))


def check_em_stability(target, grid: pd.DataFrame, sampler: str) -> None:
    """Raise if a step of the *true-score* chain is beyond the Euler stability limit:
    1 + h(α + cγ λ_min) < −1 for the target's tightest certified λ_min (the linearised chain
    then flips sign and grows). Names the step, τ, h and the factor."""
    c = sampler_c(sampler)
    family = "gmm_sup" if has_family(target, "gmm_sup") else "lipschitz"
    lo, _ = curvature_interval(target, family, grid["a"].to_numpy(), grid["sigma"].to_numpy())
    h, alpha, gamma = (grid[col].to_numpy() for col in ("h", "alpha", "gamma"))
    factor = 1 + h * (alpha + c * gamma * lo)
    if (factor < -1).any():
        k = int(np.argmin(factor))
        raise ValueError(
            f"unstable Euler step for target {target.name}, {grid['process'].iat[0]}/{sampler}, "
            f"grid {grid['grid'].iat[0]} (K={grid['K'].iat[0]}, delta={grid['delta'].iat[0]:g}): step k={k} "
            f"at tau={grid['tau'].iat[k]:.4g} with h={h[k]:.4g} has amplification factor "
            f"{factor[k]:.3f} < -1 (EM stability limit); increase K or refine the grid there")


def simulate_coupled(target, grid: pd.DataFrame, sampler: str, errors: list[ErrorModel], n: int,
                     seed: int, steps: StepFunctions | None = None, T: float = 1.0,
                     record_curvature: bool = True, draws: ChainDraws | None = None) -> dict[str, np.ndarray]:
    """Run, on one reverse grid, the true-score chain, an independent replica of it and one
    perturbed chain per error model, all vectorised over n particles.

    The perturbed chains share the true chain's Y_T and ξ_k (synchronous coupling); the
    replica has its own (it measures the Monte-Carlo noise floor). Y_T is drawn exactly from
    p_T, so initialisation error plays no part. Returns
        true (n, d), replica (n, d), perturbed (E, n, d),
        path_lambda_min / path_lambda_max (K,): mean extreme Hessian eigenvalues along the
        true path (the pathwise surrogate's input; NaN when not recorded).
    `draws` (optional) replaces the seeded generators by fixed draws (then `seed` is unused).
    """
    check_em_stability(target, grid, sampler)
    c = sampler_c(sampler)
    steps = steps or step_functions(target, grid)
    d, E = target.dim, len(errors)
    init_rng, noise_rng, replica_rng, error_rng = (np.random.default_rng(s)
                                                   for s in np.random.SeedSequence(seed).spawn(4))
    a0, s0 = float(grid["a"].iat[0]), float(grid["sigma"].iat[0])
    y = np.empty((2 + E, n, d))
    if draws is None:
        y[0] = target.sample_marginal(n, a0, s0, init_rng)
        y[1] = target.sample_marginal(n, a0, s0, replica_rng)
    else:
        y[0], y[1] = draws.init, draws.init_replica
    y[2:] = y[0]
    taus = grid["tau"].to_numpy()
    active = np.array([e.active(taus, T) for e in errors]).reshape(E, -1)
    means = np.array([e.mean for e in errors]).reshape(E, 1, 1)
    sds = np.array([e.sd for e in errors]).reshape(E, 1, 1)
    lam_min = np.full(len(grid), np.nan)
    lam_max = np.full(len(grid), np.nan)
    noise = np.empty((2 + E, n, d))
    for k, (h, alpha, gamma) in enumerate(grid[["h", "alpha", "gamma"]].to_numpy()):
        score = steps.scores[k](y)
        if E:
            on = active[:, k].reshape(E, 1, 1)
            z = error_rng.standard_normal((E, n, d)) if draws is None else draws.errors[k]
            score[2:] += on * (means + sds * z)
        if record_curvature:
            low, high = steps.extremes[k](y[0])
            lam_min[k], lam_max[k] = low.mean(), high.mean()
        y += h * (alpha * y + c * gamma * score)
        if sampler == "sde":
            if draws is None:
                noise[0] = noise_rng.standard_normal((n, d))
                noise[1] = replica_rng.standard_normal((n, d))
            else:
                noise[0], noise[1] = draws.brownian[k], draws.brownian_replica[k]
            noise[2:] = noise[0]
            y += np.sqrt(gamma * h) * noise
    return {"true": y[0], "replica": y[1], "perturbed": y[2:],
            "path_lambda_min": lam_min, "path_lambda_max": lam_max}


# ------------------------------------------------------------------------------ bounds
def amplification(h, alpha, gamma, c, lo, hi) -> np.ndarray:
    """ρ_k = max(|1 + h(α + cγ lo)|, |1 + h(α + cγ hi)|) ≥ ‖I + h_k A_k‖ (shape (K,))."""
    with np.errstate(invalid="ignore"):
        rho = np.maximum(np.abs(1 + h * (alpha + c * gamma * lo)), np.abs(1 + h * (alpha + c * gamma * hi)))
    return np.where(np.isfinite(lo) & np.isfinite(hi), rho, np.inf)


def log_stepwise_bounds(rho: np.ndarray, b: np.ndarray, mean_norm: np.ndarray,
                        trace: np.ndarray) -> tuple[float, float]:
    """(log recursion bound, log Minkowski bound) on the coupling RMS, natural logs.

    rho, b, mean_norm = ‖μ_k‖, trace = tr D_kD_kᵀ: shapes (K,) in step order k = 0..K−1.
    """
    with np.errstate(divide="ignore"):
        log_rho, log_b = np.log(rho), np.log(b)
        log_bm = log_b + np.log(mean_norm)
        log_b2v = 2 * log_b + np.log(trace)
        log_r = -np.inf
        for k in range(len(rho)):
            carried = log_rho[k] + log_r if np.isfinite(log_r) else -np.inf
            first = np.logaddexp(carried, log_bm[k])
            log_r = 0.5 * np.logaddexp(2 * first, log_b2v[k])
        suffix = np.concatenate([np.cumsum(log_rho[::-1])[::-1][1:], [0.0]])    # Σ_{j>k} log ρ_j
        terms = log_b + 0.5 * np.log(mean_norm ** 2 + trace) + suffix
        log_mink = float(logsumexp(terms)) if (terms > -np.inf).any() else -np.inf
    if np.isnan(log_r):
        log_r = np.inf
    return float(log_r), float(log_mink)


def bound_for_interval(grid: pd.DataFrame, sampler: str, error: ErrorModel, dim: int,
                       lo: np.ndarray, hi: np.ndarray, T: float = 1.0) -> dict[str, float]:
    """Recursion and Minkowski bounds (plain and log10) for one curvature interval per step."""
    c = sampler_c(sampler)
    h, alpha, gamma = (grid[col].to_numpy() for col in ("h", "alpha", "gamma"))
    rho = amplification(h, alpha, gamma, c, lo, hi)
    mean_norm, trace = error.moments(grid["tau"].to_numpy(), T, dim)
    log_r, log_m = log_stepwise_bounds(rho, h * c * gamma, mean_norm, trace)
    small = grid["tau"].to_numpy() <= SMALL_TIME * T
    return {"log10_recursion": log_r / np.log(10), "log10_minkowski": log_m / np.log(10),
            "max_log10_rho": float(np.log10(rho).max()), "sum_log10_rho": float(np.log10(rho).sum()),
            "sum_log10_rho_small_t": float(np.log10(rho[small]).sum())}


def family_bound(target, family: str, grid: pd.DataFrame, sampler: str, error: ErrorModel,
                 T: float = 1.0) -> dict[str, float]:
    """A certified bound on the coupling RMS from a curvature family of targets.py."""
    lo, hi = curvature_interval(target, family, grid["a"].to_numpy(), grid["sigma"].to_numpy())
    return bound_for_interval(grid, sampler, error, target.dim, lo, hi, T)


def pathwise_surrogate(grid: pd.DataFrame, sampler: str, error: ErrorModel, dim: int,
                       path_lambda_min: np.ndarray, path_lambda_max: np.ndarray,
                       T: float = 1.0) -> dict[str, float]:
    """The 'expected Hessian along true paths' surrogate: the recursion with [E λmin, E λmax]
    in place of a uniform interval. NOT a certified bound (spec pitfall) — reported only."""
    return bound_for_interval(grid, sampler, error, dim, np.asarray(path_lambda_min),
                              np.asarray(path_lambda_max), T)


# ------------------------------------------------------------------------------ Gaussian exact
def _sqrtm_psd(S: np.ndarray) -> np.ndarray:
    w, U = np.linalg.eigh((S + S.T) / 2)
    return (U * np.sqrt(np.clip(w, 0, None))) @ U.T


def bures_w2(m1: np.ndarray, S1: np.ndarray, m2: np.ndarray, S2: np.ndarray) -> float:
    """W2 between N(m1, S1) and N(m2, S2): ‖Δm‖² + tr(S1 + S2 − 2(S1^{½} S2 S1^{½})^{½})."""
    r1 = _sqrtm_psd(S1)
    cross = _sqrtm_psd(r1 @ S2 @ r1)
    value = float(np.sum((m1 - m2) ** 2) + np.trace(S1 + S2 - 2 * cross))
    return float(np.sqrt(max(value, 0.0)))


def gaussian_exact(target: GaussianMixture, grid: pd.DataFrame, sampler: str, error: ErrorModel,
                   T: float = 1.0) -> dict[str, object]:
    """Closed form for Gaussian p0 = N(m, Σ0): both chains stay Gaussian.

    With V_k = a_k²Σ0 + σ_k²I and the linear score −V_k⁻¹(y − a_k m), each step is
    y ← A_k y + h c γ a_k V_k⁻¹ m (+ noise), A_k = (1 + hα)I − hcγ V_k⁻¹. Means and covariances
    of the true chain, the perturbed chain and of Δ propagate analytically (no samples):
        S ← A S Aᵀ + γh I (SDE),   S̃ ← A S̃ Aᵀ + γh I (SDE) + b² sd² I,   C_Δ ← A C_Δ Aᵀ + b² sd² I.
    Returns the Bures W2 between the two terminal laws, the exact coupling RMS, and moments.
    """
    if len(target.weights) != 1:
        raise ValueError(f"gaussian_exact needs a single Gaussian, {target.name} has {len(target.weights)} components")
    c = sampler_c(sampler)
    d = target.dim
    eye = np.eye(d)
    m0, S0 = target.means[0], target.cov
    a_T, s_T = float(grid["a"].iat[0]), float(grid["sigma"].iat[0])
    mean_true = a_T * m0
    cov_true = a_T ** 2 * S0 + s_T ** 2 * eye
    mean_pert, cov_pert = mean_true.copy(), cov_true.copy()
    mean_delta, cov_delta = np.zeros(d), np.zeros((d, d))
    on = error.active(grid["tau"].to_numpy(), T)
    for k, (h, alpha, gamma, a, s) in enumerate(grid[["h", "alpha", "gamma", "a", "sigma"]].to_numpy()):
        V_inv = np.linalg.inv(a * a * S0 + s * s * eye)
        A = (1 + h * alpha) * eye - h * c * gamma * V_inv
        const = h * c * gamma * a * V_inv @ m0
        b = h * c * gamma
        mu = error.mean * np.ones(d) * on[k]
        var = error.sd ** 2 * on[k]
        noise = gamma * h * eye if sampler == "sde" else 0 * eye
        mean_true = A @ mean_true + const
        cov_true = A @ cov_true @ A.T + noise
        mean_pert = A @ mean_pert + const + b * mu
        cov_pert = A @ cov_pert @ A.T + noise + b * b * var * eye
        mean_delta = A @ mean_delta + b * mu
        cov_delta = A @ cov_delta @ A.T + b * b * var * eye
    return {"w2": bures_w2(mean_true, cov_true, mean_pert, cov_pert),
            "rms": float(np.sqrt(mean_delta @ mean_delta + np.trace(cov_delta))),
            "mean_true": mean_true, "cov_true": cov_true, "mean_pert": mean_pert, "cov_pert": cov_pert}
