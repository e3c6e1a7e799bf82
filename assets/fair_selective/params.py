"""fair_selective run parameters (params.yaml `fair_selective`), typed and frozen — no Dagster import."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class BehaviourPolicy:
    """π_b(x) = (1 − ε)·1[p(x) > c + offset] + ε/2."""

    name: str
    offset: float
    epsilon: float


@dataclass(frozen=True)
class StaticParams:
    """The static estimator study."""

    seeds: tuple[int, ...]
    log_size: int                   # M logged decisions per (env, seed, policy)
    batch: int                      # decisions per estimation batch (= W)
    policies: tuple[BehaviourPolicy, ...]
    measures: tuple[str, ...]


@dataclass(frozen=True)
class AgentParams:
    """PPO / A-PPO / SELLF training (spec defaults; lr calibrated on PPO reward, NOTES.md)."""

    grid: Mapping[str, tuple[float, ...]]   # agent kind → β1 values trained (ppo: [0]; elbert: bias
                                            # coefficient; focops: cost limit)
    beta2_grid: tuple[float, ...]   # SELLF's Rényi weights trained (× its β1 grid)
    pocar_beta2: float              # A-PPO's third advantage term
    lr: float
    total_steps: int
    n_steps: int
    batch_size: int
    epochs: int
    predictor: str                  # linear | deep
    predictor_steps: int
    history: int                    # past policies in a_K
    nu_max_grid: tuple[float, ...] = (2.0,)   # FOCOPS's ν_max values trained (× its cost-limit grid)
    censor: float = 0.25            # SELLF-censored: forced reject where π(x) < censor (reference config)


@dataclass(frozen=True)
class EvalParams:
    episodes: int                   # sampled-action evaluation episodes per checkpoint
    log_every: int                  # eval_rollouts keeps every k-th step (all steps enter the means)


@dataclass(frozen=True)
class FairSelectiveParams:
    envs: tuple[str, ...]           # lending, hiring
    cost: float                     # c: reward a·(y − c)
    shares: tuple[float, float]     # group shares of the pool
    pool_size: int                  # N
    horizon: int                    # T
    window: int                     # W decisions in the fairness window
    resource0: float                # R0, the starting resource
    omega: float                    # fairness threshold ω
    measure: str                    # the agents' fairness measure (tpr)
    seeds: tuple[int, ...]          # RL seeds
    static: StaticParams
    agents: AgentParams
    eval: EvalParams
    workers: int                    # worker processes for the training jobs
    bootstrap: int                  # seed-bootstrap resamples of the shown CIs
