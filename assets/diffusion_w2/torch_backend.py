"""Torch backend of the coupled reverse-time chains (the gpu profile) — pure torch, no Dagster.

Same mathematics, coefficients and step order as `method.simulate_coupled` (numpy): the
true-score chain, an independent replica and one perturbed chain per error model, vectorised
over particles as one (2 + E, n, d) tensor on `device` (cuda on a GPU machine), float64 by
default. Per step k (coefficients at the step's start τ_k):

    score  = ∇ log p_{τ_k}(Y)                         closed form (GMM / Gaussian) or table (logistic)
    score[perturbed] += 1_window · (mean + sd · z_k)   Assumption-1 error, z_k ~ N(0, I)
    Y     += h (α Y + c γ score)                        Euler / Euler–Maruyama drift
    Y     += √(γ h) ξ_k                                 SDE only; perturbed chains share ξ_k

Closed-form scores (shared covariance Σ, V = a²Σ + σ²I): posterior weights
w_m(y) = softmax_m(log π_m + a μ_mᵀV⁻¹y − ½a² μ_mᵀV⁻¹μ_m) and ∇ log p_τ(y) = −V⁻¹(y − a Σ_m w_m μ_m)
(the yᵀV⁻¹y term cancels in the softmax, so no (n, M, d) tensor is formed). Logistic: the
same (x, score, Hessian) tables as numpy, linearly interpolated (clamped like np.interp).
Hessian extremes along the true path use the same identities as `GaussianMixture.spectrum_extremes`.

With fixed draws (`method.ChainDraws`) both backends produce the same trajectories up to
float64 round-off (tests/diffusion_w2/test_torch_backend.py).
"""
from __future__ import annotations

import time
from typing import Callable

import numpy as np
import pandas as pd

from assets.diffusion_w2.method import ChainDraws, ErrorModel, check_em_stability
from assets.diffusion_w2.processes import sampler_c
from assets.diffusion_w2.targets import GaussianMixture


def _torch():
    import torch

    return torch


def resolve_dtype(name: str):
    torch = _torch()
    dtypes = {"float64": torch.float64, "float32": torch.float32}
    if name not in dtypes:
        raise ValueError(f"torch dtype must be one of {tuple(dtypes)}, got {name!r}")
    return dtypes[name]


def synchronize(device: str) -> None:
    """Wait for queued kernels (CUDA timing); a no-op on CPU."""
    torch = _torch()
    if str(device).startswith("cuda"):
        torch.cuda.synchronize()


def interp(x, xs, fs):
    """np.interp for a torch tensor x (any shape) on an increasing 1-D grid xs: linear inside,
    clamped to the end values outside."""
    torch = _torch()
    x = x.clamp(xs[0], xs[-1])
    idx = torch.searchsorted(xs, x.contiguous()).clamp(1, len(xs) - 1)
    x0, x1, f0, f1 = xs[idx - 1], xs[idx], fs[idx - 1], fs[idx]
    return f0 + (x - x0) * ((f1 - f0) / (x1 - x0))


class TorchTarget:
    """A target's score, Hessian extremes and marginal sampler as torch closures on a device."""

    def __init__(self, target, device: str = "cpu", dtype=None):
        torch = _torch()
        self.target, self.device = target, device
        self.dtype = dtype or torch.float64
        self.dim = target.dim
        self.is_mixture = isinstance(target, GaussianMixture)
        if self.is_mixture:
            kw = {"dtype": self.dtype, "device": device}
            self.means = torch.as_tensor(target.means, **kw)                    # (M, d)
            self.log_weights = torch.log(torch.as_tensor(target.weights, **kw))
            self.weights = torch.as_tensor(target.weights, **kw)
            self.chol = torch.as_tensor(np.linalg.cholesky(target.cov), **kw)
            self.M = len(target.weights)

    def _tensor(self, x):
        return _torch().as_tensor(np.asarray(x), dtype=self.dtype, device=self.device)

    # ------------------------------------------------------------------ per-step closures
    def score_fn(self, a: float, sigma: float) -> Callable:
        t = self.target
        if not self.is_mixture:                                   # logistic: tabulated score
            xs, s, _ = t.table(a, sigma)
            xs, s = self._tensor(xs), self._tensor(s)
            return lambda y: interp(y[..., 0], xs, s)[..., None]
        if t.isotropic:
            v = float(a * a * t.cov[0, 0] + sigma * sigma)
            if self.M == 1:
                centre = a * self.means[0]
                return lambda y: -(y - centre) / v
            proj = (a / v) * self.means.T                                       # (d, M)
            consts = self.log_weights - 0.5 * a * a * (self.means ** 2).sum(1) / v

            def iso_score(y):
                w = _torch().softmax(y @ proj + consts, dim=-1)
                return -(y - a * (w @ self.means)) / v
            return iso_score
        V_inv = self._tensor(np.linalg.inv(a * a * t.cov + sigma * sigma * np.eye(self.dim)))
        if self.M == 1:
            centre = a * self.means[0]
            return lambda y: -((y - centre) @ V_inv)
        proj = a * (V_inv @ self.means.T)                                       # (d, M)
        consts = self.log_weights - 0.5 * a * a * ((self.means @ V_inv) * self.means).sum(1)

        def full_score(y):
            w = _torch().softmax(y @ proj + consts, dim=-1)
            return -((y - a * (w @ self.means)) @ V_inv)
        return full_score

    def extremes_fn(self, a: float, sigma: float) -> Callable:
        """y (n, d) → (λ_min, λ_max) of ∇² log p_τ(y), two (n,) tensors."""
        torch = _torch()
        t = self.target
        if not self.is_mixture:
            xs, _, h = t.table(a, sigma)
            xs, h = self._tensor(xs), self._tensor(h)

            def logistic_extremes(y):
                value = interp(y[..., 0], xs, h)
                return value, value
            return logistic_extremes
        if self.M == 1:
            eig = np.linalg.eigvalsh(a * a * t.cov + sigma * sigma * np.eye(self.dim))
            lo, hi = -1 / eig[0], -1 / eig[-1]
            return lambda y: (torch.full(y.shape[:-1], lo, dtype=self.dtype, device=self.device),
                              torch.full(y.shape[:-1], hi, dtype=self.dtype, device=self.device))
        V_inv_np = np.linalg.inv(a * a * t.cov + sigma * sigma * np.eye(self.dim))
        V_inv = self._tensor(V_inv_np)
        proj = a * (V_inv @ self.means.T)
        consts = self.log_weights - 0.5 * a * a * ((self.means @ V_inv) * self.means).sum(1)
        if t.isotropic and self.dim >= self.M:                  # rank(Cov_w) ≤ M − 1 < d: Gram trick
            v = float(a * a * t.cov[0, 0] + sigma * sigma)

            def gram_extremes(y):
                w = torch.softmax(y @ proj + consts, dim=-1)                    # (n, M)
                centred = self.means - (w @ self.means)[:, None, :]            # (n, M, d)
                gram = torch.sqrt(w[:, :, None] * w[:, None, :]) * (centred @ centred.transpose(-1, -2))
                top = torch.linalg.eigvalsh(gram)[..., -1]
                return torch.full_like(top, -1 / v), -1 / v + (a * a / (v * v)) * top
            return gram_extremes

        def full_extremes(y):
            w = torch.softmax(y @ proj + consts, dim=-1)
            mbar = w @ self.means
            cov_w = torch.einsum("nm,md,me->nde", w, self.means, self.means) - mbar[:, :, None] * mbar[:, None, :]
            H = -V_inv + (a * a) * (V_inv @ cov_w @ V_inv)
            if self.dim == 1:
                return H[..., 0, 0], H[..., 0, 0]
            if self.dim == 2:
                mid = 0.5 * (H[..., 0, 0] + H[..., 1, 1])
                rad = torch.sqrt(0.25 * (H[..., 0, 0] - H[..., 1, 1]) ** 2 + H[..., 0, 1] ** 2)
                return mid - rad, mid + rad
            eig = torch.linalg.eigvalsh(H)
            return eig[..., 0], eig[..., -1]
        return full_extremes

    def sample_marginal(self, n: int, a: float, sigma: float, generator):
        """n draws of p_τ = law(a X0 + σZ) on the device, shape (n, d)."""
        torch = _torch()
        kw = {"dtype": self.dtype, "device": self.device, "generator": generator}
        if self.is_mixture:
            comp = torch.multinomial(self.weights, n, replacement=True, generator=generator)
            x0 = self.means[comp] + torch.randn((n, self.dim), **kw) @ self.chol.T
        else:                                                   # standard logistic by inversion
            tiny = torch.finfo(self.dtype).tiny
            u = torch.rand((n, 1), **kw).clamp(tiny, 1 - torch.finfo(self.dtype).eps)
            x0 = torch.log(u) - torch.log1p(-u)
        return a * x0 + sigma * torch.randn((n, self.dim), **kw)


class TorchSteps:
    """Per-step score and Hessian-extreme closures of one (target, grid) on a device."""

    def __init__(self, target, grid: pd.DataFrame, device: str = "cpu", dtype=None):
        self.torch_target = TorchTarget(target, device, dtype)
        pairs = [(self.torch_target.score_fn(a, s), self.torch_target.extremes_fn(a, s))
                 for a, s in zip(grid["a"].to_numpy(), grid["sigma"].to_numpy())]
        self.scores = [p[0] for p in pairs]
        self.extremes = [p[1] for p in pairs]


def simulate_coupled_torch(target, grid: pd.DataFrame, sampler: str, errors: list[ErrorModel], n: int,
                           seed: int, device: str = "cpu", dtype=None, steps: TorchSteps | None = None,
                           T: float = 1.0, record_curvature: bool = True,
                           draws: ChainDraws | None = None) -> dict:
    """`method.simulate_coupled` in torch. Returns device tensors true (n, d), replica (n, d),
    perturbed (E, n, d) and numpy arrays path_lambda_min / path_lambda_max (K,).

    Randomness: a torch.Generator on `device` seeded with `seed` (init, replica, then per step
    the error draws and the two Brownian increments), or the fixed `draws` (numpy arrays,
    copied to the device step by step).
    """
    torch = _torch()
    check_em_stability(target, grid, sampler)
    dtype = dtype or torch.float64
    steps = steps or TorchSteps(target, grid, device, dtype)
    c = sampler_c(sampler)
    d, E = target.dim, len(errors)
    kw = {"dtype": dtype, "device": device}
    gen = None
    if draws is None:
        gen = torch.Generator(device=device)
        gen.manual_seed(int(seed))
    a0, s0 = float(grid["a"].iat[0]), float(grid["sigma"].iat[0])
    y = torch.empty((2 + E, n, d), **kw)
    if draws is None:
        y[0] = steps.torch_target.sample_marginal(n, a0, s0, gen)
        y[1] = steps.torch_target.sample_marginal(n, a0, s0, gen)
    else:
        y[0], y[1] = torch.as_tensor(draws.init, **kw), torch.as_tensor(draws.init_replica, **kw)
    y[2:] = y[0]
    taus = grid["tau"].to_numpy()
    active = torch.as_tensor(np.array([e.active(taus, T) for e in errors], dtype=float).reshape(E, -1), **kw)
    means = torch.as_tensor([e.mean for e in errors], **kw).reshape(E, 1, 1)
    sds = torch.as_tensor([e.sd for e in errors], **kw).reshape(E, 1, 1)
    lam_min = np.full(len(grid), np.nan)
    lam_max = np.full(len(grid), np.nan)
    low_sum, high_sum = [], []
    for k, (h, alpha, gamma) in enumerate(grid[["h", "alpha", "gamma"]].to_numpy()):
        h, alpha, gamma = float(h), float(alpha), float(gamma)
        score = steps.scores[k](y)
        if E:
            on = active[:, k].reshape(E, 1, 1)
            z = (torch.randn((E, n, d), generator=gen, **kw) if draws is None
                 else torch.as_tensor(draws.errors[k], **kw))
            score[2:] += on * (means + sds * z)
        if record_curvature:
            low, high = steps.extremes[k](y[0])
            low_sum.append(low.mean())
            high_sum.append(high.mean())
        y += h * (alpha * y + (c * gamma) * score)
        if sampler == "sde":
            if draws is None:
                xi = torch.randn((n, d), generator=gen, **kw)
                xi_replica = torch.randn((n, d), generator=gen, **kw)
            else:
                xi = torch.as_tensor(draws.brownian[k], **kw)
                xi_replica = torch.as_tensor(draws.brownian_replica[k], **kw)
            scale = float(np.sqrt(gamma * h))
            y[0] += scale * xi
            y[1] += scale * xi_replica
            y[2:] += scale * xi
    if record_curvature:                                    # one device → host copy, not K
        lam_min[:] = torch.stack(low_sum).cpu().numpy()
        lam_max[:] = torch.stack(high_sum).cpu().numpy()
    return {"true": y[0], "replica": y[1], "perturbed": y[2:],
            "path_lambda_min": lam_min, "path_lambda_max": lam_max}


# ------------------------------------------------------------------------------ measurements
def coupling_rms(delta) -> tuple[float, float]:
    """(RMS, standard error) of ‖Δ‖ over particles, delta (n, d) tensor (as empirical.coupling_rms)."""
    sq = (delta ** 2).sum(-1)
    rms = float(sq.mean().sqrt())
    se = float(sq.std() / np.sqrt(len(sq)) / (2 * rms)) if rms > 0 and len(sq) > 1 else 0.0
    return rms, se


def w2_sorted(x, y) -> float:
    """Exact 1-D W2 between equal-size empirical measures, x, y (n, 1) tensors."""
    torch = _torch()
    xs, ys = torch.sort(x.reshape(-1)).values, torch.sort(y.reshape(-1)).values
    return float(((xs - ys) ** 2).mean().sqrt())


def sliced_w2_lower_bound(x, y, directions) -> float:
    """√d · sliced W2 over the given unit directions (P, d) tensor; see empirical.py."""
    torch = _torch()
    px = torch.sort(x @ directions.T, dim=0).values
    py = torch.sort(y @ directions.T, dim=0).values
    return float((x.shape[-1] * ((px - py) ** 2).mean()).sqrt())


def gaussian_moments(x) -> tuple[np.ndarray, np.ndarray]:
    """(mean (d,), ML covariance (d, d)) of x (n, d), as numpy."""
    m = x.mean(0)
    centred = x - m
    return m.cpu().numpy(), (centred.T @ centred / len(x)).cpu().numpy()


def w2_estimate(x, y, method: str, ot_subsample: int, directions=None) -> float:
    """The W2 estimator named by empirical.w2_method, on device tensors (OT: on the host)."""
    from assets.diffusion_w2 import empirical as EMP
    from assets.diffusion_w2.method import bures_w2

    if method == "sorted":
        return w2_sorted(x, y)
    if method.startswith("ot_m"):
        return EMP.w2_ot(x[:ot_subsample].cpu().numpy(), y[:ot_subsample].cpu().numpy())
    if method == "gauss_moments":
        return bures_w2(*gaussian_moments(x), *gaussian_moments(y))
    return sliced_w2_lower_bound(x, y, directions)


def time_chain(fn: Callable[[], dict], device: str) -> tuple[dict, float]:
    """(result, wall seconds) of one chain run, synchronising the device before stopping the clock."""
    synchronize(device)
    t0 = time.perf_counter()
    out = fn()
    synchronize(device)
    return out, time.perf_counter() - t0
