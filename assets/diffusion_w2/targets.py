"""Data distributions p0 with closed-form (or quadrature) marginal scores, Hessians and the
curvature intervals the bounds are built from — pure numpy/scipy.

For p_τ = law(a X0 + σ Z) every target provides
    score(x, a, σ)    ∇ log p_τ(x),          x: (..., d) → (..., d)
    hessian(x, a, σ)  ∇² log p_τ(x),         x: (..., d) → (..., d, d)
and `curvature_interval(target, family, a, σ)` returns (lo, hi) with
lo·I ⪯ ∇² log p_τ(x) ⪯ hi·I for every x (arrays broadcast over τ). Families:

- "gmm_sup" (Gaussian mixtures with one shared covariance Σ; a single Gaussian is the M = 1
  case) [inferred, standard identity]: with V = a²Σ + σ²I,
      ∇² log p_τ(x) = −V⁻¹ + a² V⁻¹ Cov_{w(x)}(μ_m) V⁻¹,  0 ⪯ Cov_w(μ_m) ⪯ (D²/4) I
  (Popoviciu, D = max‖μ_i − μ_j‖), so lo = −1/λmin(V), hi = −1/λmax(V) + a²D²/(4 λmin(V)²).
- "general" (support in a ball of radius R; spec "General p0"):
      ∇² log p_τ = −I/σ² + (a²/σ⁴) Cov(X0 | X_τ = x),  0 ⪯ Cov ⪯ R² I
  so lo = −1/σ², hi = −1/σ² + a²R²/σ⁴ — it blows up as σ → 0. Our targets have unbounded
  support: R is an *effective* radius holding all but ~1e-6 of the mass. For the Gaussian
  mixtures R² ≥ s_max² + D²/4 ≥ sup_x λmax Cov(X0|x), so the bound is certified there; for the
  logistic it is checked numerically (blocking check `hessian_bounds_hold`).
- "lipschitz" (−L I ⪯ ∇² log p0 ⪯ L I) [inferred, spec "Sharpening"]: Brascamp–Lieb on the
  posterior of X0 given x and the Cramér–Rao lower bound on its covariance give
      −L/(a² + σ²L) ⪯ ∇² log p_τ ⪯ L/(a² − σ²L)   (upper valid for σ²L < a²),
  intersected with the general interval (which it improves at small times only).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable

import numpy as np
from numpy.polynomial.hermite_e import hermegauss
from scipy.special import log_ndtr, logsumexp
from scipy.stats import chi2

FAMILIES = ("gmm_sup", "general", "lipschitz")
TAIL_MASS = 1e-6          # effective radius R leaves at most this much mass outside


@dataclass(frozen=True)
class GaussianMixture:
    """p0 = Σ_m π_m N(μ_m, Σ) with one covariance Σ shared by all components.

    weights: (M,), means: (M, d), cov: (d, d) symmetric positive definite.
    """

    name: str
    weights: np.ndarray
    means: np.ndarray
    cov: np.ndarray
    kind: str = field(default="gmm")

    def __post_init__(self):
        object.__setattr__(self, "weights", np.asarray(self.weights, dtype=float).reshape(-1))
        object.__setattr__(self, "means", np.atleast_2d(np.asarray(self.means, dtype=float)))
        object.__setattr__(self, "cov", np.atleast_2d(np.asarray(self.cov, dtype=float)))
        problems = mixture_problems(self.weights, self.means, self.cov)
        if problems:
            raise ValueError(f"target {self.name}: " + "; ".join(problems))

    @property
    def dim(self) -> int:
        return self.means.shape[1]

    @cached_property
    def cov_eigvals(self) -> np.ndarray:
        return np.linalg.eigvalsh(self.cov)

    @cached_property
    def diameter(self) -> float:
        """D = max ‖μ_i − μ_j‖ (0 for a single Gaussian)."""
        diff = self.means[:, None, :] - self.means[None, :, :]
        return float(np.sqrt((diff ** 2).sum(-1)).max())

    @cached_property
    def lipschitz_L(self) -> float:
        """L with −L I ⪯ ∇² log p0 ⪯ L I: ∇² log p0 ∈ [−1/s_min², −1/s_max² + D²/(4 s_min⁴)]."""
        s_min2, s_max2 = self.cov_eigvals[0], self.cov_eigvals[-1]
        return float(max(1 / s_min2, abs(-1 / s_max2 + self.diameter ** 2 / (4 * s_min2 ** 2))))

    @cached_property
    def radius_R(self) -> float:
        """Effective support radius: max ‖μ_m‖ + s_max·√χ²_d(1 − 1e-6)."""
        q = float(np.sqrt(chi2.ppf(1 - TAIL_MASS, self.dim)))
        return float(np.sqrt((self.means ** 2).sum(1)).max() + np.sqrt(self.cov_eigvals[-1]) * q)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        comp = rng.choice(len(self.weights), size=n, p=self.weights)
        chol = np.linalg.cholesky(self.cov)
        return self.means[comp] + rng.standard_normal((n, self.dim)) @ chol.T

    def sample_marginal(self, n: int, a: float, sigma: float, rng: np.random.Generator) -> np.ndarray:
        return a * self.sample(n, rng) + sigma * rng.standard_normal((n, self.dim))

    def _parts(self, x: np.ndarray, a: float, sigma: float):
        V = a * a * self.cov + sigma * sigma * np.eye(self.dim)
        V_inv = np.linalg.inv(V)
        diff = x[..., None, :] - a * self.means                     # (..., M, d)
        g = -diff @ V_inv                                           # (..., M, d): component scores
        logw = np.log(self.weights) + 0.5 * np.einsum("...md,...md->...m", diff, g)
        w = np.exp(logw - logw.max(-1, keepdims=True))
        w /= w.sum(-1, keepdims=True)
        return V_inv, g, w

    @cached_property
    def isotropic(self) -> bool:
        return bool(np.allclose(self.cov, self.cov[0, 0] * np.eye(self.dim)))

    def _posterior_means(self, x: np.ndarray, a: float, v: float) -> tuple[list[np.ndarray], np.ndarray]:
        """Isotropic fast path (V = v I): posterior weights [w_m (...,)] and E_w[μ_m] (..., d).
        Elementwise over the M components: numpy reductions over a tiny last axis are slow."""
        proj = x @ (a * self.means.T / v)                                    # (..., M)
        consts = np.log(self.weights) - 0.5 * a * a * (self.means ** 2).sum(1) / v
        if len(self.weights) == 2:                  # one exp: w_1 = sigmoid(logit_1 − logit_0)
            with np.errstate(over="ignore"):
                w1 = 1 / (1 + np.exp(proj[..., 0] - proj[..., 1] + (consts[0] - consts[1])))
            w = [1 - w1, w1]
            return w, self.means[0] + w1[..., None] * (self.means[1] - self.means[0])
        logits = [proj[..., m] + consts[m] for m in range(len(self.weights))]
        top = logits[0].copy()
        for logit in logits[1:]:
            np.maximum(top, logit, out=top)
        w = [np.exp(logit - top) for logit in logits]
        total = w[0].copy()
        for wm in w[1:]:
            total += wm
        w = [wm / total for wm in w]
        mbar = w[0][..., None] * self.means[0]
        for m in range(1, len(w)):
            mbar += w[m][..., None] * self.means[m]
        return w, mbar

    def score(self, x: np.ndarray, a: float, sigma: float) -> np.ndarray:
        """∇ log p_τ(x) = Σ_m w_m(x) g_m(x), g_m = −V⁻¹(x − aμ_m). x: (..., d) → (..., d)."""
        x = np.asarray(x, dtype=float)
        if self.isotropic:
            v = a * a * self.cov[0, 0] + sigma * sigma
            if len(self.weights) == 1:
                return -(x - a * self.means[0]) / v
            _, mbar = self._posterior_means(x, a, v)
            return -(x - a * mbar) / v
        _, g, w = self._parts(x, a, sigma)
        return np.einsum("...m,...md->...d", w, g)

    def hessian(self, x: np.ndarray, a: float, sigma: float) -> np.ndarray:
        """∇² log p_τ(x) = −V⁻¹ + Σ w_m g_m g_mᵀ − ḡḡᵀ (= −V⁻¹ + a²V⁻¹Cov_w(μ)V⁻¹).
        x: (..., d) → (..., d, d)."""
        x = np.asarray(x, dtype=float)
        if self.isotropic:
            v = a * a * self.cov[0, 0] + sigma * sigma
            eye = np.eye(self.dim)
            if len(self.weights) == 1:
                return np.broadcast_to(-eye / v, x.shape + (self.dim,)).copy()
            w, mbar = self._posterior_means(x, a, v)
            cov_w = -mbar[..., :, None] * mbar[..., None, :]
            for m, wm in enumerate(w):
                cov_w += wm[..., None, None] * np.outer(self.means[m], self.means[m])
            return -eye / v + (a * a / (v * v)) * cov_w
        V_inv, g, w = self._parts(x, a, sigma)
        gbar = np.einsum("...m,...md->...d", w, g)
        second = np.einsum("...m,...md,...me->...de", w, g, g)
        return -V_inv + second - gbar[..., :, None] * gbar[..., None, :]

    def spectrum_extremes(self, x: np.ndarray, a: float, sigma: float) -> tuple[np.ndarray, np.ndarray]:
        """(λ_min, λ_max) of ∇² log p_τ(x) at every point, x: (..., d) → two (...,) arrays.

        Same matrix as `hessian`, without forming it when d is large:
        - one component: ∇² log p_τ = −V⁻¹ is constant: (−1/λmin(V), −1/λmax(V));
        - isotropic, d ≥ M: ∇² log p_τ = −I/v + (a²/v²) Cov_w(μ) and Cov_w(μ) = UᵀU with
          U_m = √w_m (μ_m − μ̄) (M × d) has rank ≤ M − 1 < d, so λ_min(Cov_w) = 0 and
          λ_max(Cov_w) = λ_max(UUᵀ), an M × M Gram matrix;
        - otherwise the eigenvalues of the full Hessian (closed form for d ≤ 2).
        """
        x = np.asarray(x, dtype=float)
        shape = x.shape[:-1]
        if len(self.weights) == 1:
            eig = np.linalg.eigvalsh(a * a * self.cov + sigma * sigma * np.eye(self.dim))
            return np.full(shape, -1 / eig[0]), np.full(shape, -1 / eig[-1])
        if self.isotropic and self.dim >= len(self.weights):
            v = a * a * self.cov[0, 0] + sigma * sigma
            w, mbar = self._posterior_means(x, a, v)
            w = np.stack(w, -1)                                              # (..., M)
            centred = self.means - mbar[..., None, :]                        # (..., M, d)
            gram = np.sqrt(w[..., :, None] * w[..., None, :]) * (centred @ np.swapaxes(centred, -1, -2))
            top = np.linalg.eigvalsh(gram)[..., -1]
            return np.full(shape, -1 / v), -1 / v + (a * a / (v * v)) * top
        return eig_extremes(self.hessian(x, a, sigma))

    def score_fn(self, a: float, sigma: float) -> Callable[[np.ndarray], np.ndarray]:
        return lambda x: self.score(x, a, sigma)

    def hessian_fn(self, a: float, sigma: float) -> Callable[[np.ndarray], np.ndarray]:
        return lambda x: self.hessian(x, a, sigma)

    def extremes_fn(self, a: float, sigma: float) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
        return lambda x: self.spectrum_extremes(x, a, sigma)

    def describe(self) -> dict:
        return {"target": self.name, "kind": "gaussian" if len(self.weights) == 1 else "gmm",
                "dim": self.dim, "n_components": len(self.weights),
                "weights": self.weights.tolist(), "means": self.means.tolist(), "cov": self.cov.tolist(),
                "lipschitz_L": self.lipschitz_L, "diameter_D": self.diameter, "radius_R": self.radius_R}


def eig_extremes(H: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(λ_min, λ_max) of symmetric matrices H (..., d, d); closed form for d ≤ 2."""
    d = H.shape[-1]
    if d == 1:
        return H[..., 0, 0], H[..., 0, 0]
    if d == 2:
        mid = 0.5 * (H[..., 0, 0] + H[..., 1, 1])
        rad = np.sqrt(0.25 * (H[..., 0, 0] - H[..., 1, 1]) ** 2 + H[..., 0, 1] ** 2)
        return mid - rad, mid + rad
    eig = np.linalg.eigvalsh(H)
    return eig[..., 0], eig[..., -1]


def hessian_extremes(target, x: np.ndarray, a: float, sigma: float) -> tuple[np.ndarray, np.ndarray]:
    """(λ_min, λ_max) of ∇² log p_τ at points x (..., d), for any target."""
    if isinstance(target, GaussianMixture):
        return target.spectrum_extremes(x, a, sigma)
    return eig_extremes(target.hessian(x, a, sigma))


def mixture_problems(weights, means, cov) -> list[str]:
    """Why (weights, means, cov) is not a valid shared-covariance mixture (empty list = valid)."""
    weights, means, cov = (np.asarray(v, dtype=float) for v in (weights, means, cov))
    problems = []
    if weights.ndim != 1 or len(weights) != len(np.atleast_2d(means)):
        problems.append(f"weights shape {weights.shape} does not match means shape {np.shape(means)}")
    if not np.isfinite(weights).all() or (weights < 0).any():
        problems.append(f"weights must be finite and non-negative, got {weights.tolist()}")
    if abs(weights.sum() - 1) > 1e-9:
        problems.append(f"mixture weights sum to {weights.sum():.12g}, not 1")
    cov = np.atleast_2d(cov)
    if cov.shape[0] != cov.shape[1] or cov.shape[0] != np.atleast_2d(means).shape[1]:
        problems.append(f"covariance shape {cov.shape} does not match dimension {np.atleast_2d(means).shape[1]}")
    elif not np.allclose(cov, cov.T) or not np.isfinite(cov).all():
        problems.append("covariance is not symmetric/finite")
    else:
        eig = np.linalg.eigvalsh(cov)
        if eig[0] <= 0:
            problems.append(f"covariance is not positive definite (smallest eigenvalue {eig[0]:.4g})")
    return problems


class Logistic1D:
    """p0(x) = e^{−x}/(1 + e^{−x})² (standard logistic), score −tanh(x/2), ∇² log p0 =
    −½ sech²(x/2) ∈ [−½, 0], so L = ½. Marginal scores/Hessians by 1-D quadrature:

    - σ/a ≤ 1: x = a·y + σz, p_τ(x) = E_z[p0((x − σz)/a)]/a with Gauss–Hermite nodes in z;
      score = E_q[s0(y)]/a, Hessian = (Var_q s0 + E_q s0')/a², q ∝ φ(z) p0(y).
    - σ/a > 1: posterior q(y|x) ∝ p0(y) φ((x − ay)/σ) by Simpson's rule on |y| ≤ 40 plus
      closed-form truncated-Gaussian tails (p0 ≈ e^{−|y|} there); score = (a E[y|x] − x)/σ²,
      Hessian = −1/σ² + a² Var(y|x)/σ⁴.
    |score| ≤ 1/a everywhere (score = E[s0(y)|x]/a, |s0| ≤ 1): a score bias ≥ 1/a meets no
    restoring force in the tails, so biased VE chains drift far out — a property of the
    exponential tails, not a numerical artefact.
    The chains read a table of these on an x-grid per step (np.interp): a chord slope of the
    tabulated score equals the true Hessian somewhere in the cell, so every curvature interval
    below still holds for the tabulated score.
    """

    name = "logistic"
    kind = "logistic"
    dim = 1
    lipschitz_L = 0.5
    diameter = float("nan")
    HERMITE_NODES = 64
    INNER_HALF_WIDTH = 40.0         # σ/a > 1: Simpson on |y| ≤ 40 (+ closed-form tails)
    INNER_INTERVALS = 200
    TABLE_POINTS = 801              # dense core of the score table
    MID_POINTS = 120                # per side, core → ±(30a + 10σ + 10)
    TAIL_POINTS = 80                # per side, out to ±(30a + 10σ + 10 + 4σ²/a)

    def __init__(self, name: str = "logistic"):
        self.name = name
        self._z, wz = hermegauss(self.HERMITE_NODES)
        self._log_wz = np.log(wz)
        n = self.INNER_INTERVALS
        self._inner_nodes = np.linspace(-self.INNER_HALF_WIDTH, self.INNER_HALF_WIDTH, n + 1)
        simpson = np.ones(n + 1)
        simpson[1:-1:2], simpson[2:-1:2] = 4, 2
        self._inner_log_weights = np.log(simpson * (2 * self.INNER_HALF_WIDTH / n) / 3)

    def _posterior_moments(self, x: np.ndarray, a: float, sigma: float) -> tuple[np.ndarray, np.ndarray]:
        """(E[y|x], Var[y|x]) for q(y|x) ∝ p0(y) exp(−(x − ay)²/(2σ²)), x: (n,).

        Simpson's rule on |y| ≤ Y0 plus the two tails |y| > Y0 in closed form, where
        p0(y) = e^{−|y|}(1 + O(e^{−|y|})) makes q a truncated Gaussian with mean (ax ∓ σ²)/a²
        and sd σ/a (relative error ~e^{−Y0}). Exact for every x, however far out.
        """
        y, log_w = self._inner_nodes, self._inner_log_weights
        logq = log_w + self.log_density0(y) - (x[:, None] - a * y) ** 2 / (2 * sigma ** 2)
        top = logq.max(1)
        q = np.exp(logq - top[:, None])
        total = q.sum(1)
        log_mass_in = top + np.log(total)
        q /= total[:, None]
        mean_in = (q * y).sum(1)
        var_in = (q * (y - mean_in[:, None]) ** 2).sum(1)
        sd = sigma / a
        parts = [(log_mass_in, mean_in, var_in)]
        for sign in (1.0, -1.0):                   # right tail (y > Y0), left tail (y < −Y0)
            m = (a * sign * x - sigma ** 2) / a ** 2           # in the mirrored variable sign·y
            log_c = (a * m) ** 2 / (2 * sigma ** 2) - x ** 2 / (2 * sigma ** 2)
            alpha = (self.INNER_HALF_WIDTH - m) / sd
            log_tail = log_ndtr(-alpha)
            log_mass = log_c + np.log(sd * np.sqrt(2 * np.pi)) + log_tail
            mills = np.exp(-0.5 * alpha ** 2 - 0.5 * np.log(2 * np.pi) - log_tail)
            t_mean = m + sd * mills
            t_var = sd ** 2 * np.clip(1 + alpha * mills - mills ** 2, 0, None)
            parts.append((log_mass, sign * t_mean, t_var))
        log_masses = np.stack([p[0] for p in parts])
        weights = np.exp(log_masses - logsumexp(log_masses, axis=0))
        means = np.stack([p[1] for p in parts])
        variances = np.stack([p[2] for p in parts])
        mean = (weights * means).sum(0)
        var = (weights * (variances + (means - mean) ** 2)).sum(0)
        return mean, var

    @property
    def radius_R(self) -> float:
        return float(np.log(2 / TAIL_MASS - 1))      # P(|X0| > R) = 1e-6

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return rng.logistic(size=(n, 1))

    def sample_marginal(self, n: int, a: float, sigma: float, rng: np.random.Generator) -> np.ndarray:
        return a * self.sample(n, rng) + sigma * rng.standard_normal((n, 1))

    @staticmethod
    def log_density0(y: np.ndarray) -> np.ndarray:
        ay = np.abs(y)
        return -ay - 2 * np.log1p(np.exp(-ay))

    def score_hessian_1d(self, x: np.ndarray, a: float, sigma: float) -> tuple[np.ndarray, np.ndarray]:
        """(score, Hessian) of log p_τ at points x (any shape) by quadrature."""
        x = np.asarray(x, dtype=float)
        flat = x.reshape(-1, 1)
        if sigma <= a:
            y = (flat - sigma * self._z) / a                            # (n, nodes)
            logq = self._log_wz + self.log_density0(y)
            q = np.exp(logq - logq.max(1, keepdims=True))
            q /= q.sum(1, keepdims=True)
            th = np.tanh(y / 2)
            s0, ds0 = -th, -0.5 * (1 - th * th)
            m = (q * s0).sum(1, keepdims=True)
            score = m[:, 0] / a
            hess = ((q * (s0 - m) ** 2).sum(1) + (q * ds0).sum(1)) / (a * a)
        else:
            mean, var = self._posterior_moments(flat[:, 0], a, sigma)
            score = (a * mean - flat[:, 0]) / sigma ** 2
            hess = -1 / sigma ** 2 + a * a * var / sigma ** 4
        return score.reshape(x.shape), hess.reshape(x.shape)

    def score(self, x: np.ndarray, a: float, sigma: float) -> np.ndarray:
        return self.score_hessian_1d(np.asarray(x)[..., 0], a, sigma)[0][..., None]

    def hessian(self, x: np.ndarray, a: float, sigma: float) -> np.ndarray:
        return self.score_hessian_1d(np.asarray(x)[..., 0], a, sigma)[1][..., None, None]

    def table(self, a: float, sigma: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(x grid, score, Hessian) in three tiers: dense core ±(8a + 6σ + 3) (where the true
        chains live), a middle band to ±(30a + 10σ + 10) and sparse tails to ±(… + 4σ²/a)
        (where biased chains drift). np.interp clamps beyond (slope 0 there, which lies inside
        every curvature interval). Linear interpolation error in the core is ~1e-5."""
        core = 8 * a + 6 * sigma + 3
        mid = 30 * a + 10 * sigma + 10
        far = mid + 4 * sigma ** 2 / a
        band = np.linspace(core, mid, self.MID_POINTS + 1)[1:]
        tail = np.linspace(mid, far, self.TAIL_POINTS + 1)[1:]
        outer = np.concatenate([band, tail])
        xs = np.concatenate([-outer[::-1], np.linspace(-core, core, self.TABLE_POINTS), outer])
        s, h = self.score_hessian_1d(xs, a, sigma)
        return xs, s, h

    def score_fn(self, a: float, sigma: float) -> Callable[[np.ndarray], np.ndarray]:
        xs, s, _ = self.table(a, sigma)
        return lambda x: np.interp(x[..., 0], xs, s)[..., None]

    def hessian_fn(self, a: float, sigma: float) -> Callable[[np.ndarray], np.ndarray]:
        xs, _, h = self.table(a, sigma)
        return lambda x: np.interp(x[..., 0], xs, h)[..., None, None]

    def extremes_fn(self, a: float, sigma: float) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
        xs, _, h = self.table(a, sigma)

        def extremes(x):
            value = np.interp(x[..., 0], xs, h)
            return value, value
        return extremes

    def describe(self) -> dict:
        return {"target": self.name, "kind": "logistic", "dim": 1, "n_components": 0,
                "weights": [], "means": [], "cov": [], "lipschitz_L": self.lipschitz_L,
                "diameter_D": float("nan"), "radius_R": self.radius_R}


def mixture_arrays(spec: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(weights (M,), means (M, d), cov (d, d)) of a gmm/gaussian spec, not validated.

    means: list of M points; with `dim` > their length they are padded with zeros (modes in
    the first coordinates of a d-dimensional space). Covariance, one of:
      cov: explicit d × d matrix;  std: isotropic std² I;
      cov_eigs: {min, max, seed}: Q diag(λ) Qᵀ with λ geometric from min to max and Q a
      Haar-random rotation from numpy's default_rng(seed) (QR of a Gaussian matrix with the
      sign fix) — a reproducible non-diagonal covariance for d too large to write out.
    """
    means = np.atleast_2d(np.asarray(spec["means"], dtype=float))
    dim = int(spec.get("dim", means.shape[1]))
    if dim > means.shape[1]:
        means = np.concatenate([means, np.zeros((len(means), dim - means.shape[1]))], axis=1)
    if "cov" in spec:
        cov = np.asarray(spec["cov"], dtype=float)
    elif "cov_eigs" in spec:
        eigs = spec["cov_eigs"]
        lam = np.geomspace(float(eigs["min"]), float(eigs["max"]), dim)
        q, r = np.linalg.qr(np.random.default_rng(int(eigs["seed"])).standard_normal((dim, dim)))
        q = q * np.sign(np.diag(r))
        cov = (q * lam) @ q.T
        cov = 0.5 * (cov + cov.T)
    else:
        cov = float(spec["std"]) ** 2 * np.eye(dim)
    weights = np.asarray(spec.get("weights", [1.0 / len(means)] * len(means)), dtype=float)
    return weights, means, cov


def build_target(spec: dict):
    """A target from its params.yaml spec: {kind: gmm|gaussian, weights, means, cov | std |
    cov_eigs, dim} (see mixture_arrays) or {kind: logistic}."""
    kind = spec["kind"]
    if kind == "logistic":
        return Logistic1D(spec["name"])
    if kind not in ("gmm", "gaussian"):
        raise ValueError(f"unknown target kind {kind!r}")
    weights, means, cov = mixture_arrays(spec)
    return GaussianMixture(spec["name"], weights, means, cov)


def has_family(target, family: str) -> bool:
    if family not in FAMILIES:
        raise ValueError(f"curvature family must be one of {FAMILIES}, got {family!r}")
    return family != "gmm_sup" or isinstance(target, GaussianMixture)


def curvature_interval(target, family: str, a, sigma) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) bounding the spectrum of ∇² log p_τ uniformly in x; a, σ broadcast over τ."""
    a = np.asarray(a, dtype=float)
    sigma = np.asarray(sigma, dtype=float)
    if not has_family(target, family):
        raise ValueError(f"curvature family {family!r} does not apply to target {target.name}")
    if family == "gmm_sup":
        eig = target.cov_eigvals
        v_lo, v_hi = a * a * eig[0] + sigma ** 2, a * a * eig[-1] + sigma ** 2
        return -1 / v_lo, -1 / v_hi + a * a * target.diameter ** 2 / (4 * v_lo ** 2)
    s2 = sigma ** 2
    with np.errstate(divide="ignore"):
        lo, hi = -1 / s2, -1 / s2 + a * a * target.radius_R ** 2 / s2 ** 2
    if family == "general":
        return lo, hi
    L = target.lipschitz_L
    lo = np.maximum(lo, -L / (a * a + s2 * L))
    regime = s2 * L < a * a
    with np.errstate(divide="ignore", invalid="ignore"):
        lip_hi = np.where(regime, L / (a * a - s2 * L), np.inf)
    return lo, np.minimum(hi, lip_hi)
