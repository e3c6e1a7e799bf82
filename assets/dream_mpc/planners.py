"""Planners on a frozen latent model, behind one interface (no Dagster import).

A planner acts for a batch of B episodes that run in lock-step:

    planner.reset(B)                       # at episode start: forget the previous plan
    action, info = planner.act(z)          # z (B, latent) -> action (B, act_dim) in [-1, 1]

`info` holds per-decision accounting read from the model's counter of dynamics
evaluations (`model.dynamics_evaluations`, incremented by every call of `model.next`):
    optimisation_evaluations  d-calls of the optimisation rollouts per episode and decision
                              (Dream-MPC N·I·H = 5·1·3 = 15, MPPI 512·6·3 = 9216)
    proposal_evaluations      d-calls of the initial policy rollouts (extra, reported apart)
    objective (B,)            J of the chosen candidate, uncertainty (B,) its mean u

The model interface (WorldModel and the synthetic LQ system implement it):
    next(z, a) -> z',  reward(z, a) -> (B, 1),  q_all(z, a) -> (K, B, 1),
    pi(z, generator) -> (mean action, sampled action, log-prob),  dynamics_evaluations: int

Reconstructed equations (the method section of the paper was not available; each choice is
a flag of PlannerConfig, see the spec):
    Eq. 5  u_τ = std_k Q_k(z_τ, a_τ)  over the ensemble's expected values
    Eq. 6  J = Σ_{τ<H} γ^τ (r̂_τ − λ u_τ) + γ^H (q̂_H − λ u_H),  a_H = π_mean(z_H),
           q̂_H = ensemble mean (terminal_q="mean") or mean of 2 random heads ("avg2")
    Eq. 3  a^(n) = (1 − β) a_π^(n) + β ā,  ā = previous chosen plan shifted by one with
           the policy action appended (reuse_mode "blend"; "candidate": ā replaces
           candidate 0; "first": only candidate 0 is blended)
    update a ← clip(a + α ∇_a J, −1, 1); output the first action of argmax_n J^(n).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

import torch

PLANNER_KINDS = ("policy", "mppi", "cem", "grad")


@dataclass(frozen=True)
class PlannerConfig:
    """One planner. `kind` selects the algorithm; the other fields are its settings."""

    name: str
    kind: str
    horizon: int = 3
    discount: float = 0.99
    terminal_q: str = "mean"            # "mean" of all heads | "avg2" (TD-MPC2's 2 random heads)
    # sampling planners (MPPI / CEM), TD-MPC2 defaults
    num_samples: int = 512
    iterations: int = 6
    num_elites: int = 64
    num_pi_trajs: int = 24
    min_std: float = 0.05
    max_std: float = 2.0
    temperature: float = 0.5
    # gradient planners (Dream-MPC, naive gradient MPC)
    candidates: int = 5
    step_size: float = 0.1
    reuse: float = 0.1                  # β
    uncertainty: float = 0.01           # λ
    init: str = "policy"                # policy | zero | random
    reuse_mode: str = "blend"           # blend | candidate | first
    uncertainty_mode: str = "all"       # all steps | terminal only
    warm_start: bool = True             # sampling planners: shift the previous mean

    def __post_init__(self):
        if self.kind not in PLANNER_KINDS:
            raise ValueError(f"planner kind {self.kind!r} not in {PLANNER_KINDS}")
        for field, allowed in (("terminal_q", ("mean", "avg2")), ("init", ("policy", "zero", "random")),
                               ("reuse_mode", ("blend", "candidate", "first")),
                               ("uncertainty_mode", ("all", "terminal"))):
            if getattr(self, field) not in allowed:
                raise ValueError(f"{self.name}: {field}={getattr(self, field)!r} not in {allowed}")

    def optimisation_evaluations(self) -> int:
        """d-calls per decision the optimisation loop must make (what the counters assert)."""
        if self.kind == "policy":
            return 0
        if self.kind in ("mppi", "cem"):
            return self.num_samples * self.iterations * self.horizon
        return self.candidates * self.iterations * self.horizon

    def to_dict(self) -> dict:
        return asdict(self)


# ------------------------------------------------------------------------------ objective
def trajectory_objective(model, z0: torch.Tensor, actions: torch.Tensor, cfg: PlannerConfig,
                         uncertainty: float, generator: torch.Generator | None = None
                         ) -> tuple[torch.Tensor, torch.Tensor]:
    """Eq. 6 for M trajectories: z0 (M, latent), actions (H, M, act) -> (J (M,), mean u (M,)).

    Differentiable in `actions` (nothing is detached). With uncertainty λ = 0 and
    uncertainty_mode "all", the per-step ensemble is not evaluated (saves Q calls).
    """
    H = actions.shape[0]
    z, J = z0, torch.zeros(z0.shape[0], dtype=z0.dtype, device=z0.device)
    u_sum = torch.zeros_like(J)
    u_terms = 0
    for t in range(H):
        r = model.reward(z, actions[t]).squeeze(-1)
        if uncertainty and cfg.uncertainty_mode == "all":
            u = model.q_all(z, actions[t]).squeeze(-1).std(0, unbiased=False)
            r = r - uncertainty * u
            u_sum, u_terms = u_sum + u, u_terms + 1
        J = J + cfg.discount ** t * r
        z = model.next(z, actions[t])
    a_H = model.pi(z, generator)[0]
    q = model.q_all(z, a_H).squeeze(-1)                      # (K, M)
    u_H = q.std(0, unbiased=False)
    if cfg.terminal_q == "avg2" and q.shape[0] > 1:
        idx = torch.randperm(q.shape[0], generator=generator, device=q.device)[:2]
        q_hat = q[idx].mean(0)
    else:
        q_hat = q.mean(0)
    terminal = q_hat - (uncertainty * u_H if uncertainty else 0.0)
    J = J + cfg.discount ** H * terminal
    u_mean = (u_sum + u_H) / (u_terms + 1)
    return J, u_mean


def policy_rollout(model, z: torch.Tensor, horizon: int, generator: torch.Generator | None,
                   sample: bool = True) -> torch.Tensor:
    """Actions (H, M, act) of the policy rolled out through d from z (M, latent): H−1 d-calls."""
    actions = []
    for t in range(horizon):
        mean, sampled, _ = model.pi(z, generator)
        a = sampled if sample else mean
        actions.append(a)
        if t < horizon - 1:
            z = model.next(z, a)
    return torch.stack(actions)


# ------------------------------------------------------------------------------ planners
class Planner:
    """Base class: per-episode state and the evaluation accounting."""

    def __init__(self, model, cfg: PlannerConfig, act_dim: int, generator: torch.Generator):
        self.model, self.cfg, self.act_dim, self.gen = model, cfg, act_dim, generator
        self.batch = 0

    def reset(self, batch: int) -> None:
        self.batch = batch

    def act(self, z: torch.Tensor) -> tuple[torch.Tensor, dict[str, Any]]:
        raise NotImplementedError

    def _info(self, start: int, after_proposal: int, end: int, batch: int, J, u, plan) -> dict:
        return {"proposal_evaluations": (after_proposal - start) / batch,
                "optimisation_evaluations": (end - after_proposal) / batch,
                "objective": J.detach(), "uncertainty": u.detach(), "plan": plan.detach()}


class PolicyOnly(Planner):
    """(a) the policy prior's mean action; no model rollout."""

    def act(self, z):
        with torch.no_grad():
            a = self.model.pi(z, self.gen)[0]
        c = self.model.dynamics_evaluations
        nan = torch.full((z.shape[0],), float("nan"), device=z.device)
        return a, self._info(c, c, c, z.shape[0], nan, nan, a.unsqueeze(0))


class SamplingPlanner(Planner):
    """(b) MPPI as in TD-MPC2 (policy trajectories, elites, softmax-weighted refit, warm-started
    mean, elite sampled by its score) and (c) CEM (no policy, uniform elite weights, best elite)."""

    def reset(self, batch):
        super().reset(batch)
        self.prev_mean = None

    def act(self, z):
        cfg, m = self.cfg, self.model
        B, H, S, A = z.shape[0], cfg.horizon, cfg.num_samples, self.act_dim
        P = cfg.num_pi_trajs if cfg.kind == "mppi" else 0
        dev = z.device
        start = m.dynamics_evaluations
        with torch.no_grad():
            pi_actions = (policy_rollout(m, z.repeat_interleave(P, 0), H, self.gen).view(H, B, P, A)
                          if P else torch.empty(H, B, 0, A, device=dev))
            after_proposal = m.dynamics_evaluations
            mean = torch.zeros(H, B, A, device=dev)
            if cfg.warm_start and self.prev_mean is not None:
                mean[:-1] = self.prev_mean[1:]
            std = torch.full((H, B, A), cfg.max_std, device=dev)
            z_rep = z.repeat_interleave(S, 0)
            for _ in range(cfg.iterations):
                eps = torch.randn(H, B, S - P, A, generator=self.gen, device=dev)
                sampled = (mean.unsqueeze(2) + std.unsqueeze(2) * eps).clamp(-1, 1)
                actions = torch.cat([pi_actions, sampled], dim=2)               # (H, B, S, A)
                value, unc = trajectory_objective(m, z_rep, actions.reshape(H, B * S, A), cfg, 0.0, self.gen)
                value, unc = value.view(B, S), unc.view(B, S)
                elite_value, elite_idx = value.topk(cfg.num_elites, dim=1)      # (B, E)
                elite_actions = torch.gather(actions, 2, elite_idx.view(1, B, -1, 1).expand(H, B, -1, A))
                if cfg.kind == "mppi":
                    score = torch.exp(cfg.temperature * (elite_value - elite_value.max(1, keepdim=True).values))
                    score = score / score.sum(1, keepdim=True)
                else:
                    score = torch.full_like(elite_value, 1.0 / cfg.num_elites)
                w = score.view(1, B, -1, 1)
                mean = (w * elite_actions).sum(2)
                std = ((w * (elite_actions - mean.unsqueeze(2)) ** 2).sum(2)).sqrt().clamp(cfg.min_std, cfg.max_std)
            end = m.dynamics_evaluations
            if cfg.kind == "mppi":
                pick = torch.multinomial(score, 1, generator=self.gen).squeeze(1)   # (B,)
            else:
                pick = torch.zeros(B, dtype=torch.long, device=dev)               # best elite
            rows = torch.arange(B, device=dev)
            plan = elite_actions[:, rows, pick]                                     # (H, B, A)
            J = elite_value[rows, pick]
            u = torch.gather(unc, 1, elite_idx)[rows, pick]
        self.prev_mean = mean
        self.last_std = std          # (H, B, A): TD-MPC2 adds std[0]·ε to the action while collecting
        return plan[0], self._info(start, after_proposal, end, B, J, u, plan)


class GradientPlanner(Planner):
    """(d) naive gradient MPC and (e–h) Dream-MPC: N candidates, I gradient-ascent steps on J
    through the frozen model, first action of the best candidate, reuse of the chosen plan."""

    def reset(self, batch):
        super().reset(batch)
        self.prev_plan = None

    def _initial(self, z_rep: torch.Tensor, B: int) -> torch.Tensor:
        cfg, N, H, A = self.cfg, self.cfg.candidates, self.cfg.horizon, self.act_dim
        dev = z_rep.device
        if cfg.init == "zero":
            return torch.zeros(H, B * N, A, device=dev)
        if cfg.init == "random":
            return torch.rand(H, B * N, A, generator=self.gen, device=dev) * 2 - 1
        with torch.no_grad():
            a_pi = policy_rollout(self.model, z_rep, H, self.gen)               # (H, B·N, A)
        if not cfg.reuse or self.prev_plan is None:
            return a_pi
        a_pi = a_pi.view(H, B, N, A)
        # shift the previous chosen plan by one decision; append each candidate's policy action
        shifted = torch.cat([self.prev_plan[1:].unsqueeze(2).expand(-1, -1, N, -1), a_pi[-1:]], dim=0)
        blended = (1 - cfg.reuse) * a_pi + cfg.reuse * shifted
        if cfg.reuse_mode == "blend":
            out = blended
        elif cfg.reuse_mode == "candidate":
            out = a_pi.clone()
            out[:, :, 0] = shifted[:, :, 0]
        else:  # "first": warm-start candidate 0 only
            out = a_pi.clone()
            out[:, :, 0] = blended[:, :, 0]
        return out.reshape(H, B * N, A)

    def act(self, z):
        cfg, m = self.cfg, self.model
        B, N, H, A = z.shape[0], cfg.candidates, cfg.horizon, self.act_dim
        z_rep = z.detach().repeat_interleave(N, 0)                                # row b·N + n
        start = m.dynamics_evaluations
        actions = self._initial(z_rep, B)
        after_proposal = m.dynamics_evaluations
        J = u = None
        for _ in range(cfg.iterations):
            actions = actions.detach().requires_grad_(True)
            with torch.enable_grad():
                J, u = trajectory_objective(m, z_rep, actions, cfg, cfg.uncertainty, self.gen)
                (grad,) = torch.autograd.grad(J.sum(), actions)   # J^(n) depends on a^(n) only
            actions = (actions + cfg.step_size * grad).clamp(-1, 1).detach()
        end = m.dynamics_evaluations
        J, u = J.detach().view(B, N), u.detach().view(B, N)
        best = J.argmax(1)                                                         # Algorithm 1
        rows = torch.arange(B, device=z.device)
        plan = actions.view(H, B, N, A)[:, rows, best]                            # (H, B, A)
        self.prev_plan = plan
        return plan[0], self._info(start, after_proposal, end, B, J[rows, best], u[rows, best], plan)


def make_planner(model, cfg: PlannerConfig, act_dim: int, generator: torch.Generator) -> Planner:
    cls = {"policy": PolicyOnly, "mppi": SamplingPlanner, "cem": SamplingPlanner,
           "grad": GradientPlanner}[cfg.kind]
    return cls(model, cfg, act_dim, generator)


# ------------------------------------------------------------------------------ the grid
def default_planners(discount: float, horizon: int = 3) -> list[PlannerConfig]:
    """The spec's planners (a)–(h) with the paper's single set of parameters."""
    base = dict(horizon=horizon, discount=discount)
    dream = PlannerConfig(name="dream_mpc", kind="grad", candidates=5, iterations=1, step_size=0.1,
                          reuse=0.1, uncertainty=0.01, init="policy", **base)
    return [
        PlannerConfig(name="policy_only", kind="policy", **base),
        PlannerConfig(name="mppi", kind="mppi", num_samples=512, iterations=6, num_elites=64,
                      num_pi_trajs=24, **base),
        PlannerConfig(name="cem", kind="cem", num_samples=512, iterations=6, num_elites=64,
                      num_pi_trajs=0, **base),
        PlannerConfig(name="naive_grad", kind="grad", candidates=5, iterations=10, step_size=0.1,
                      reuse=0.0, uncertainty=0.0, init="zero", **base),
        dream,
        replace(dream, name="dream_mpc_no_uncertainty", uncertainty=0.0),
        replace(dream, name="dream_mpc_no_reuse", reuse=0.0),
        replace(dream, name="dream_mpc_i3", iterations=3),
    ]
