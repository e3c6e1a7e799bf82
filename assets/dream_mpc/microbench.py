"""Planner micro-benchmark: objective reached vs model evaluations vs action dimension.

Two settings, both pure CPU and deterministic given a seed:
  1. frozen learned models: one decision from held-out start states, the plan's J (λ = 0,
     the shared objective) against the optimisation evaluations it cost;
  2. a synthetic differentiable latent system (stable linear dynamics, quadratic reward,
     discounted-LQR value as terminal Q, a detuned LQR gain as policy prior) for action
     dims {1, 4, 16, 64}, rescaled to unit curvature (so the paper's fixed step α = 0.1 is a
     stable step in every dimension), where the constrained optimum J* of the H-step problem is known
     (projected gradient ascent to convergence on a strongly concave quadratic), so the
     fraction of the prior→optimum gap each planner closes is exact.
"""
from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import pandas as pd
import scipy.linalg
import torch

from assets.dream_mpc.model import make_generator
from assets.dream_mpc.planners import PlannerConfig, make_planner, policy_rollout, trajectory_objective


class LinearQuadraticLatent:
    """z' = A z + B a; r = −(zᵀQz + aᵀRa); Q(z, a) = −zᵀPz with P the discounted-LQR value.

    Implements the planner's model interface; the "ensemble" has one head (u = 0).
    Policy prior: mean clip(−gain_scale·K z, −1, 1), sample = mean + prior_std·ε, clipped.
    """

    def __init__(self, latent_dim: int, act_dim: int, discount: float, seed: int,
                 gain_scale: float = 0.5, prior_std: float = 0.3, control_cost: float = 0.1,
                 unit_curvature_horizon: int | None = None):
        rng = np.random.default_rng(seed)
        n, m = latent_dim, act_dim
        orth, _ = np.linalg.qr(rng.standard_normal((n, n)))
        self.A = 0.98 * orth
        self.B = rng.standard_normal((n, m)) / np.sqrt(m)
        self.Qc, self.Rc = np.eye(n), control_cost * np.eye(m)
        g = np.sqrt(discount)
        self.P = scipy.linalg.solve_discrete_are(g * self.A, g * self.B, self.Qc, self.Rc)
        self.K = discount * np.linalg.solve(self.Rc + discount * self.B.T @ self.P @ self.B,
                                            self.B.T @ self.P @ self.A)
        self.discount, self.gain_scale, self.prior_std = discount, gain_scale, prior_std
        self.latent_dim, self.act_dim = n, m
        self.scale = 1.0
        if unit_curvature_horizon:
            # rescale rewards and value so the H-step objective has curvature (largest Hessian
            # eigenvalue) 1: the same fixed gradient step then means the same thing for every
            # action dimension (a pure change of units; optima and policies are unchanged)
            M, _, _ = self.quadratic(np.zeros((1, n)), unit_curvature_horizon)
            self.scale = 1.0 / float(np.linalg.eigvalsh(M).max())
        self._A, self._B, self._Q, self._R, self._P, self._K = (
            torch.as_tensor(x, dtype=torch.float32) for x in (self.A, self.B, self.Qc, self.Rc, self.P, self.K))
        self.dynamics_evaluations = 0

    def next(self, z, a):
        self.dynamics_evaluations += int(z.shape[0])
        return z @ self._A.T + a @ self._B.T

    def reward(self, z, a):
        return -self.scale * (((z @ self._Q) * z).sum(-1, keepdim=True) + ((a @ self._R) * a).sum(-1, keepdim=True))

    def q_all(self, z, a, target: bool = False):
        return -self.scale * ((z @ self._P) * z).sum(-1, keepdim=True).unsqueeze(0)

    def pi(self, z, generator=None):
        mean = (-self.gain_scale * z @ self._K.T).clamp(-1, 1)
        eps = torch.randn(mean.shape, generator=generator, device=mean.device)
        return mean, (mean + self.prior_std * eps).clamp(-1, 1), torch.zeros(mean.shape[0], 1, device=mean.device)

    def freeze(self):
        return self

    # -- the H-step problem as an explicit concave quadratic ---------------------------
    def quadratic(self, z0: np.ndarray, horizon: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """J(a) = c + gᵀa − ½ aᵀMa for a = vec(a_0..a_{H−1}) (H·m,), per start state.

        Returns (M (Hm, Hm), g (S, Hm), c (S,)) for z0 (S, n). Exact for this system
        (the terminal Q ignores a_H, so the policy does not enter J).
        """
        n, m, H, gam = self.latent_dim, self.act_dim, horizon, self.discount
        M = np.zeros((H * m, H * m))
        g = np.zeros((z0.shape[0], H * m))
        c = np.zeros(z0.shape[0])
        for t in range(H + 1):
            weight = self.P if t == H else self.Qc
            # z_t = A^t z0 + G_t a
            Gt = np.zeros((n, H * m))
            for s in range(t):
                Gt[:, s * m:(s + 1) * m] = np.linalg.matrix_power(self.A, t - 1 - s) @ self.B
            free = z0 @ np.linalg.matrix_power(self.A, t).T                   # (S, n)
            M += 2 * gam ** t * Gt.T @ weight @ Gt
            g -= 2 * gam ** t * free @ weight @ Gt
            c -= gam ** t * np.einsum("si,ij,sj->s", free, weight, free)
            if t < H:
                M[t * m:(t + 1) * m, t * m:(t + 1) * m] += 2 * gam ** t * self.Rc
        return self.scale * M, self.scale * g, self.scale * c

    def optimum(self, z0: np.ndarray, horizon: int, iterations: int = 3000) -> np.ndarray:
        """Box-constrained maximum J* per start state by projected gradient ascent (step 1/L)."""
        M, g, c = self.quadratic(z0, horizon)
        L = float(np.linalg.eigvalsh(M).max())
        a = np.zeros_like(g)
        for _ in range(iterations):
            a = np.clip(a + (g - a @ M) / L, -1, 1)
        return c + (g * a).sum(1) - 0.5 * np.einsum("si,ij,sj->s", a, M, a)


def _sync(device: torch.device) -> None:
    """Wait for queued CUDA kernels so wall times measure the work, not the launch."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def plan_once(model, cfg: PlannerConfig, z: torch.Tensor, act_dim: int, seed: int) -> dict:
    """One decision from each start state (fresh planner): the plan's shared-objective J
    (λ = 0), optimisation evaluations per state, and wall seconds per state."""
    gen = make_generator(seed, z.device)
    planner = make_planner(model, cfg, act_dim, gen)
    planner.reset(z.shape[0])
    start = time.perf_counter()
    _, info = planner.act(z)
    _sync(z.device)
    wall = time.perf_counter() - start
    shared = replace(cfg, uncertainty=0.0, terminal_q="mean")
    before = model.dynamics_evaluations
    with torch.no_grad():
        # the policy's plan is its H-step mean-action rollout (its act() only returns a_t)
        plan = policy_rollout(model, z, cfg.horizon, gen, sample=False) if cfg.kind == "policy" else info["plan"]
        J, _ = trajectory_objective(model, z, plan, shared, 0.0, gen)
    model.dynamics_evaluations = before      # re-scoring is not part of the planner's budget
    return {"J": J.cpu().numpy(), "optimisation_evaluations": info["optimisation_evaluations"],
            "seconds_per_state": wall / z.shape[0]}


def budget_ladder(base: list[PlannerConfig], policy_init: bool = True) -> list[PlannerConfig]:
    """Planner variants at several budgets (the x-axis of the J-vs-evaluations plot)."""
    by = {c.name: c for c in base}
    dream, mppi, cem, naive = by["dream_mpc"], by["mppi"], by["cem"], by["naive_grad"]
    out = [by["policy_only"]]
    out += [replace(dream, name=f"dream_mpc/I={i}", iterations=i, reuse=0.0) for i in (1, 3, 10, 30)]
    out += [replace(naive, name=f"naive_grad/I={i}", iterations=i) for i in (10, 30)]
    for s, i in ((32, 1), (128, 2), (512, 6)):
        out.append(replace(mppi, name=f"mppi/{s}x{i}", num_samples=s, iterations=i,
                           num_elites=min(mppi.num_elites, s // 2), num_pi_trajs=min(mppi.num_pi_trajs, s // 4)))
        out.append(replace(cem, name=f"cem/{s}x{i}", num_samples=s, iterations=i,
                           num_elites=min(cem.num_elites, s // 2)))
    return out


def family(name: str) -> str:
    return name.split("/")[0]


def synthetic_benchmark(base: list[PlannerConfig], action_dims: list[int], states: int, seed: int,
                        horizon: int, discount: float) -> pd.DataFrame:
    """Rows (action_dim, planner, family, optimisation_evaluations, J, J_policy, J_opt,
    gap_closed = (mean J − mean J_policy)/(mean J* − mean J_policy)) over `states` start states."""
    rows = []
    ladder = [replace(c, horizon=horizon, discount=discount) for c in budget_ladder(base)]
    for m in action_dims:
        system = LinearQuadraticLatent(latent_dim=max(4, m), act_dim=m, discount=discount, seed=seed + m,
                                       unit_curvature_horizon=horizon)
        rng = np.random.default_rng(seed + 1000 + m)
        z0 = rng.standard_normal((states, system.latent_dim))
        # scale so the LQR action of the mean state stays mostly inside the box
        z0 *= 0.5 / max(1e-6, np.abs(z0 @ system.K.T).mean())
        j_opt = system.optimum(z0, horizon)
        z = torch.as_tensor(z0, dtype=torch.float32)
        results = {c.name: plan_once(system, c, z, m, seed) for c in ladder}
        j_pol = results["policy_only"]["J"]
        for c in ladder:
            r = results[c.name]
            gap = (np.mean(r["J"]) - np.mean(j_pol)) / max(np.mean(j_opt) - np.mean(j_pol), 1e-12)
            rows.append({"setting": "synthetic_lq", "action_dim": m, "planner": c.name, "family": family(c.name),
                         "optimisation_evaluations": r["optimisation_evaluations"], "J": float(np.mean(r["J"])),
                         "J_policy": float(np.mean(j_pol)), "J_opt": float(np.mean(j_opt)),
                         "gap_closed": float(gap), "seconds_per_state": r["seconds_per_state"]})
    return pd.DataFrame(rows)


def frozen_model_benchmark(model, base: list[PlannerConfig], z: torch.Tensor, act_dim: int,
                           seed: int) -> pd.DataFrame:
    """Rows (planner, family, optimisation_evaluations, J, J_policy, improvement = J − J_policy)
    for one frozen learned model and encoded held-out start states z (S, latent)."""
    rows = []
    results = {c.name: plan_once(model, c, z, act_dim, seed) for c in budget_ladder(base)}
    j_pol = results["policy_only"]["J"]
    for name, r in results.items():
        rows.append({"planner": name, "family": family(name),
                     "optimisation_evaluations": r["optimisation_evaluations"], "J": float(np.mean(r["J"])),
                     "J_policy": float(np.mean(j_pol)), "improvement": float(np.mean(r["J"] - j_pol)),
                     "seconds_per_state": r["seconds_per_state"]})
    return pd.DataFrame(rows)


def decision_latency(model, configs: list[PlannerConfig], z: torch.Tensor, act_dim: int, seed: int,
                     repeats: int) -> pd.DataFrame:
    """Median wall seconds of one decision for a single state (batch 1), per planner."""
    rows = []
    for cfg in configs:
        gen = make_generator(seed, z.device)
        planner = make_planner(model, cfg, act_dim, gen)
        planner.reset(1)
        times = []
        for i in range(repeats + 1):
            start = time.perf_counter()
            planner.act(z[i % z.shape[0]:i % z.shape[0] + 1])
            _sync(z.device)
            times.append(time.perf_counter() - start)
        rows.append({"planner": cfg.name, "median_seconds": float(np.median(times[1:])),  # first = warm-up
                     "decisions_per_s": float(1.0 / np.median(times[1:]))})
    return pd.DataFrame(rows)
