"""Option B of the spec — an explicit critic D_φ ("a critic discriminator learns to distinguish these
from real normal samples"; our design [I], the gpu profile's method `dispat_critic`) — torch, no Dagster.

Critic. φ is an MLP on a feature vector of a row (lm.row_features: the frozen θt's final hidden
states) whose output v_φ(x) estimates log r(x) = log p_data(x) / p_θt(x). Its variational function is
T_φ = f′(exp v_φ) — the f-GAN output activation of f (JS: log 2 − softplus(−v), KL: 1 + v,
χ²: 2(eᵛ − 1)) — trained to maximise the f-GAN bound

    E_data[T_φ] − E_gen[f*(T_φ)]  ≤  D_f(P‖Q),      equality at T* = f′(P/Q), i.e. v* = log P/Q,

so the loss minimised is exactly method.f_loss(f, v_data, v_gen) (the same f′ / f* helpers as the
implicit critic), and −loss is the critic's estimate D̂_f of D_f(data ‖ p_θt).

Policy. With the critic frozen, the policy lowers D_f(P‖p_θ), whose gradient at θ = θt is

    ∇_θ D_f(P‖p_θ) = Σ_x ∇p_θ(x) [f(r) − r f′(r)] = −E_{x∼p_θ}[∇ log p_θ(x) · R(x)],   R = f*(f′(r)),

a policy gradient (rows are discrete token sequences). With the critic's reward R_φ = f*(T_φ) and a
constant baseline b, two estimators of ∇J, J(θ) = −E_{p_θ}[R_φ], from the round's rows:

- generated rows x′ ∼ p_θt: −(R_φ(x′) − b) ρ_θ(x′) ∇ log p_θ(x′) — a penalty on rows the critic calls
  generated (R_φ < b), unbiased for any critic;
- real rows x ∼ p_data: −(R_φ(x) − b) e^{−v_φ(x)} ρ_θ(x) ∇ log p_θ(x) — importance weights
  1/r̂ = p_θt/p_data from the critic, unbiased when v_φ = log P/Q (then E_P[(Q/P) g] = E_Q[g]);

ρ_θ = p_θ/p_θt (the rows are θt's; log ρ clipped to ±CLIP, v too) makes both unbiased at any θ, not
only at θt. `pg_surrogate` mixes them (real_share, 1 − real_share); its gradient is the estimator.
Rows: log-probabilities summed over value tokens, as for the implicit critic.
"""
from __future__ import annotations

import numpy as np
import torch
from torch import nn

from assets.dispat.method import CLIP, f_conjugate_of_prime_log, f_loss, f_prime_log


def critic_loss(f: str, v_data: torch.Tensor, v_gen: torch.Tensor, weights_data: torch.Tensor | None = None,
                weights_gen: torch.Tensor | None = None) -> torch.Tensor:
    """The f-GAN critic loss −(E_data[T_φ] − E_gen[f*(T_φ)]) with T_φ = f′(exp v): v_data (N,), v_gen
    (M,) log-ratio estimates (nats); plain means, or weighted sums (weights summing to 1: exact
    expectations over a finite support). At v = log P/Q it equals −D_f(P‖Q)."""
    return f_loss(f, v_data, v_gen, weights_data, weights_gen)


def critic_T(f: str, v: torch.Tensor) -> torch.Tensor:
    """The critic's variational function T_φ = f′(exp v) (the f-GAN output activation)."""
    return f_prime_log(f, v.clamp(-CLIP, CLIP))


def reward(f: str, v: torch.Tensor) -> torch.Tensor:
    """R_φ = f*(T_φ) = f*(f′(exp v)) (JS: softplus(v) − log 2, KL: eᵛ, χ²: e²ᵛ − 1); increasing in v."""
    return f_conjugate_of_prime_log(f, v.clamp(-CLIP, CLIP))


class Critic(nn.Module):
    """D_φ: standardised features (B, in_dim) → v_φ (B,), a log-ratio estimate. Two GELU hidden
    layers of `hidden` units; `mean`/`scale` are buffers set by `train_critic` from its pools."""

    def __init__(self, in_dim: int, hidden: int):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_dim, hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU(),
                                 nn.Linear(hidden, 1))
        self.register_buffer("mean", torch.zeros(in_dim))
        self.register_buffer("scale", torch.ones(in_dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net((x - self.mean) / self.scale).squeeze(-1)


def train_critic(critic: Critic, data: torch.Tensor, gen: torch.Tensor, f: str, steps: int, batch: int, lr: float,
                 weight_decay: float, rng: np.random.Generator) -> list[float]:
    """Fit D_φ by AdamW on `steps` minibatches (`batch` rows of each pool, drawn with replacement
    by `rng`) of critic_loss(f, v(data), v(gen)); data (N, d) real-row features, gen (M, d)
    generated-row features, on the critic's device. Sets the standardisation from both pools.
    Returns D̂_f = −loss per step (nats)."""
    both = torch.cat([data, gen])
    critic.mean.copy_(both.mean(0))
    critic.scale.copy_(both.std(0).clamp(min=1e-6))
    opt = torch.optim.AdamW(critic.parameters(), lr=lr, weight_decay=weight_decay)
    dev = data.device
    curve = []
    critic.train()
    for _ in range(steps):
        i = torch.from_numpy(rng.integers(0, len(data), size=batch)).to(dev)
        j = torch.from_numpy(rng.integers(0, len(gen), size=batch)).to(dev)
        loss = critic_loss(f, critic(data[i]), critic(gen[j]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        curve.append(-loss.item())
    critic.eval()
    return curve


def pg_surrogate(f: str, logp_data: torch.Tensor, ref_data: torch.Tensor, v_data: torch.Tensor,
                 logp_gen: torch.Tensor, ref_gen: torch.Tensor, v_gen: torch.Tensor, baseline: float,
                 real_share: float) -> tuple[torch.Tensor, dict[str, float]]:
    """A loss whose gradient is the mixed policy-gradient estimator of ∇J (module docstring).

    logp_* (B,): log p_θ of the rows (value tokens, differentiable); ref_* (B,): log p_θt (no
    grad); v_* (B,): the frozen critic's log-ratio (no grad); baseline: b (a constant, e.g. the
    mean reward of the round's samples); real_share ∈ [0, 1]: weight of the real-row estimator.
    Returns (loss, {"reward_data", "reward_gen", "weight_data": mean importance weight e^{−v},
    "rho_gen": mean ρ on generated rows})."""
    v_data, v_gen = v_data.detach().clamp(-CLIP, CLIP), v_gen.detach().clamp(-CLIP, CLIP)
    rho_data = torch.exp((logp_data - ref_data.detach()).clamp(-CLIP, CLIP))
    rho_gen = torch.exp((logp_gen - ref_gen.detach()).clamp(-CLIP, CLIP))
    r_data, r_gen = reward(f, v_data), reward(f, v_gen)
    w_data = torch.exp(-v_data)
    real = ((r_data - baseline) * w_data * rho_data).mean() if len(logp_data) else logp_gen.new_zeros(())
    fake = ((r_gen - baseline) * rho_gen).mean() if len(logp_gen) else logp_data.new_zeros(())
    loss = -(real_share * real + (1 - real_share) * fake)
    stats = {"reward_data": float(r_data.mean()) if len(r_data) else float("nan"),
             "reward_gen": float(r_gen.mean()) if len(r_gen) else float("nan"),
             "weight_data": float(w_data.mean()) if len(w_data) else float("nan"),
             "rho_gen": float(rho_gen.detach().mean()) if len(rho_gen) else float("nan")}
    return loss, stats
