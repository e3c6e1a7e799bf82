"""Forward diffusions (VP linear-β, VE geometric-σ) and reverse-time grids — pure numpy.

Conventions (spec "Setting"): the forward marginal is p_t = law(a_t X0 + σ_t Z).
- VP: dX = −½β(t)X dt + √β(t) dW with β(t) = β_min + t(β_max − β_min);
  B(t) = ∫₀ᵗβ, a_t = exp(−B/2), σ_t² = 1 − a_t².
- VE: dX = g(t) dW with g(t)² = d/dt[σ_min² r^{2t}], r = σ_max/σ_min. Started at X0 at t = 0 the
  exact marginal variance is σ_t² = ∫₀ᵗ g² = σ_min²(r^{2t} − 1), so σ_0 = 0 and σ_T ≈ σ_max.
  (The spec writes "VE geometric (σ 0.01→50)"; using the exact marginal makes δ → 0 reach the
  data, which the small-time blow-up of the general bound is about.)

A reverse step at τ_k with step h_k = τ_k − τ_{k+1} (Euler–Maruyama / Euler for the PF-ODE):
    Y_{k+1} = Y_k + h_k [α_k Y_k + c γ_k ŝ(Y_k, τ_k)] (+ √(γ_k h_k) ξ_k for the SDE)
with α = ½β (VP) or 0 (VE), γ = β (VP) or g² (VE), c = 1 (SDE) or ½ (ODE). Every coefficient
is evaluated at the step's start τ_k, both in the chains and in the bounds (spec pitfall).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

PROCESSES = ("vp", "ve")
GRIDS = ("uniform", "quadratic", "edm", "logsnr")
SAMPLERS = ("sde", "ode")
EDM_RHO = 7.0


def sampler_c(sampler: str) -> float:
    """Score coefficient c: 1 for the reverse SDE, ½ for the probability-flow ODE."""
    if sampler not in SAMPLERS:
        raise ValueError(f"sampler must be one of {SAMPLERS}, got {sampler!r}")
    return 1.0 if sampler == "sde" else 0.5


@dataclass(frozen=True)
class Process:
    """A forward process. Times are in [0, T]; all methods accept arrays of times."""

    kind: str
    T: float = 1.0
    beta_min: float = 0.1
    beta_max: float = 20.0
    sigma_min: float = 0.01
    sigma_max: float = 50.0

    def __post_init__(self):
        if self.kind not in PROCESSES:
            raise ValueError(f"process must be one of {PROCESSES}, got {self.kind!r}")
        if not self.T > 0:
            raise ValueError(f"T must be > 0, got {self.T}")
        if self.kind == "vp" and not (0 < self.beta_min <= self.beta_max):
            raise ValueError(f"VP needs 0 < beta_min <= beta_max, got {self.beta_min}, {self.beta_max}")
        if self.kind == "ve" and not (0 < self.sigma_min < self.sigma_max):
            raise ValueError(f"VE needs 0 < sigma_min < sigma_max, got {self.sigma_min}, {self.sigma_max}")

    # --- VP helpers
    def _B(self, t):
        t = np.asarray(t, dtype=float) / self.T
        return self.T * (self.beta_min * t + 0.5 * (self.beta_max - self.beta_min) * t ** 2)

    @property
    def _log_r(self) -> float:
        return float(np.log(self.sigma_max / self.sigma_min))

    def alpha_sigma(self, t) -> tuple[np.ndarray, np.ndarray]:
        """(a_t, σ_t): p_t = law(a_t X0 + σ_t Z)."""
        t = np.asarray(t, dtype=float)
        if self.kind == "vp":
            B = self._B(t)
            return np.exp(-0.5 * B), np.sqrt(-np.expm1(-B))
        return np.ones_like(t), self.sigma_min * np.sqrt(np.expm1(2 * self._log_r * t / self.T))

    def drift_coef(self, t) -> np.ndarray:
        """α(t): the linear part of the reverse drift (½β for VP, 0 for VE)."""
        t = np.asarray(t, dtype=float)
        return 0.5 * self.beta(t) if self.kind == "vp" else np.zeros_like(t)

    def beta(self, t) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        return self.beta_min + (t / self.T) * (self.beta_max - self.beta_min)

    def diffusion_sq(self, t) -> np.ndarray:
        """γ(t) = β(t) (VP) or g(t)² = dσ²/dt (VE): the score's coefficient in the drift."""
        t = np.asarray(t, dtype=float)
        if self.kind == "vp":
            return self.beta(t)
        return 2 * self._log_r / self.T * self.sigma_min ** 2 * np.exp(2 * self._log_r * t / self.T)

    def nsr(self, t) -> np.ndarray:
        """Noise-to-signal ratio ς_t = σ_t / a_t (EDM's σ; log-SNR = −2 log ς)."""
        a, s = self.alpha_sigma(t)
        return s / a

    def time_of_nsr(self, nsr) -> np.ndarray:
        """Inverse of nsr(t) (closed form for both processes)."""
        nsr = np.asarray(nsr, dtype=float)
        if self.kind == "vp":
            B = np.log1p(nsr ** 2)
            dbeta = (self.beta_max - self.beta_min) / self.T
            if dbeta == 0:
                return B / self.beta_min
            return (-self.beta_min + np.sqrt(self.beta_min ** 2 + 2 * dbeta * B)) / dbeta
        return np.log1p((nsr / self.sigma_min) ** 2) * self.T / (2 * self._log_r)


def make_taus(process: Process, grid: str, delta: float, K: int) -> np.ndarray:
    """Reverse-time grid τ_0 = T > τ_1 > … > τ_K = δ, shape (K + 1,).

    uniform: equal steps; quadratic: uniform in √τ (fine near 0); edm: uniform in ς^{1/ρ},
    ρ = 7 (Karras et al.); logsnr: uniform in log-SNR = −2 log ς.
    Raises ValueError naming the parameter for δ ≥ T, δ ≤ 0, K < 1 or an unknown grid.
    """
    T = process.T
    if not (np.isfinite(delta) and delta > 0):
        raise ValueError(f"delta (early stopping) must be > 0, got {delta}")
    if delta >= T:
        raise ValueError(f"delta (early stopping) = {delta} must be < T = {T}")
    if int(K) != K or K < 1:
        raise ValueError(f"K (number of steps) must be a positive integer, got {K}")
    u = np.arange(K + 1) / K                      # 0 → 1 along the reverse chain
    if grid == "uniform":
        taus = T - (T - delta) * u
    elif grid == "quadratic":
        taus = (np.sqrt(T) + u * (np.sqrt(delta) - np.sqrt(T))) ** 2
    elif grid in ("edm", "logsnr"):
        hi, lo = float(process.nsr(T)), float(process.nsr(delta))
        if grid == "edm":
            nsr = (hi ** (1 / EDM_RHO) + u * (lo ** (1 / EDM_RHO) - hi ** (1 / EDM_RHO))) ** EDM_RHO
        else:
            nsr = np.exp(np.log(hi) + u * (np.log(lo) - np.log(hi)))
        taus = process.time_of_nsr(nsr)
    else:
        raise ValueError(f"grid must be one of {GRIDS}, got {grid!r}")
    taus[0], taus[-1] = T, delta                   # exact endpoints (no round-off drift)
    return taus


def time_grid_frame(process: Process, grid: str, delta: float, K: int) -> pd.DataFrame:
    """One row per reverse step k = 0..K−1: tau (start), tau_next, h, alpha, gamma, a, sigma,
    all evaluated at the step's start τ_k (units: forward time; alpha, gamma per unit time)."""
    taus = make_taus(process, grid, delta, K)
    start = taus[:-1]
    a, s = process.alpha_sigma(start)
    return pd.DataFrame({"process": process.kind, "grid": grid, "delta": float(delta), "K": int(K),
                         "k": np.arange(K), "tau": start, "tau_next": taus[1:],
                         "h": start - taus[1:], "alpha": process.drift_coef(start),
                         "gamma": process.diffusion_sq(start), "a": a, "sigma": s})


def validate_grid(frame: pd.DataFrame, T: float) -> list[str]:
    """Problems with one grid's step table (empty list = valid): strictly decreasing τ,
    h > 0, contiguous steps, τ_0 = T, τ_K = δ < T, finite coefficients."""
    problems = []
    tau, nxt, h = (frame[c].to_numpy(dtype=float) for c in ("tau", "tau_next", "h"))
    name = f"{frame['process'].iat[0]}/{frame['grid'].iat[0]}/delta={frame['delta'].iat[0]:g}/K={frame['K'].iat[0]}"
    if len(frame) != int(frame["K"].iat[0]):
        problems.append(f"{name}: {len(frame)} steps but K = {frame['K'].iat[0]}")
    if not np.all(np.diff(tau) < 0):
        bad = int(np.argmax(~(np.diff(tau) < 0)))
        problems.append(f"{name}: tau not strictly decreasing at step k={bad} ({tau[bad]:.6g} → {tau[bad + 1]:.6g})")
    if not np.all(h > 0):
        problems.append(f"{name}: non-positive step h_k at k={int(np.argmax(~(h > 0)))}")
    if not np.allclose(nxt[:-1], tau[1:], rtol=0, atol=1e-12):
        problems.append(f"{name}: steps are not contiguous (tau_next[k] != tau[k+1])")
    if abs(tau[0] - T) > 1e-12:
        problems.append(f"{name}: first tau {tau[0]} != T = {T}")
    delta = float(frame["delta"].iat[0])
    if abs(nxt[-1] - delta) > 1e-12 or not (0 < delta < T):
        problems.append(f"{name}: last tau {nxt[-1]} must equal delta = {delta} with 0 < delta < T = {T}")
    coefs = frame[["alpha", "gamma", "a", "sigma"]].to_numpy(dtype=float)
    if not np.isfinite(coefs).all():
        problems.append(f"{name}: non-finite step coefficients")
    return problems
