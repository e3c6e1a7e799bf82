"""GRPO pieces shared by the RL papers (flowtracer, hir) — torch only, no Dagster.

    Â_i = (r_i − mean_g r) / (std_g r + eps)                      within each group g
    L = −(1/G) Σ_i (1/|o_i|) Σ_t γ_{i,t} · min(ρ_{i,t} Â_i, clip(ρ_{i,t}, 1 − ε, 1 + ε) Â_i)
    ρ_{i,t} = exp(log π_θ(o_{i,t} | ·) − log π_old(o_{i,t} | ·))

γ are per-token credit weights (1 = plain GRPO). A group whose rewards are all equal gets
Â = 0 (no signal, no gradient).
"""
from __future__ import annotations

import torch


def group_advantages(rewards: torch.Tensor, groups: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """Group-normalised advantages; rewards (N,) float, groups (N,) long ids. Population std
    (GRPO's normalisation); equal rewards in a group give exactly 0."""
    rewards = rewards.float()
    advantages = torch.zeros_like(rewards)
    for g in torch.unique(groups):
        member = groups == g
        r = rewards[member]
        centred = r - r.mean()
        std = r.std(unbiased=False)
        advantages[member] = torch.where(std > 0, centred / (std + eps), torch.zeros_like(centred))
    return advantages


def clipped_policy_loss(logp: torch.Tensor, logp_old: torch.Tensor, advantages: torch.Tensor,
                        mask: torch.Tensor, weights: torch.Tensor | None = None, clip: float = 0.2) -> torch.Tensor:
    """The loss above. logp, logp_old, mask, weights: (N, T) over completion tokens;
    advantages (N,). Each sequence is averaged over its own tokens, then over sequences."""
    mask = mask.float()
    ratio = torch.exp(logp - logp_old)
    adv = advantages[:, None]
    surrogate = torch.minimum(ratio * adv, torch.clamp(ratio, 1 - clip, 1 + clip) * adv)
    if weights is not None:
        surrogate = surrogate * weights
    per_sequence = (surrogate * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1)
    return -per_sequence.mean()
