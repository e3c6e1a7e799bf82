"""acc_marl run parameters (params.yaml `acc_marl`), typed and frozen — no Dagster import."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PoolParams:
    """DFA task pools (dfax sampler semantics; sizes are states before minimisation)."""

    train: int                      # distinct RAD training DFAs
    test: int                       # distinct test DFAs per sampler (in-distribution, ∉ train)
    ood: int                        # distinct OOD DFAs per sampler
    max_size: int                   # in-distribution maximum size (3 here, 5 in the paper)
    ood_max_size: int               # OOD maximum size (6 here, 10 in the paper)
    stutter: float                  # prob_stutter of R / RA
    rad_stutter: float              # RAD's underlying RA (avoid/advance edges at ½)
    max_mutations: int              # RAD: 0..max mutations


@dataclass(frozen=True)
class TrainParams:
    """Shared-parameter PPO (spec settings; rollout 32 envs × 128 steps on CPU)."""

    total_steps: int                # env steps per run
    n_envs: int
    n_steps: int
    epochs: int
    minibatches: int
    lr: float
    gamma: float
    gae_lambda: float
    clip: float
    vf_coef: float
    ent_coef: float
    max_grad_norm: float
    precision: str = "fp32"         # "bf16": network under bfloat16 autocast (ppo.PPOConfig.precision)


@dataclass(frozen=True)
class EvalParams:
    episodes: int                   # per sampler × {in, OOD} × assignment cell
    samplers: tuple[str, ...]       # R, RA, RAD
    max_len: int                    # in-distribution episode length
    ood_max_len: int                # OOD episode length


@dataclass(frozen=True)
class AssignmentParams:
    instances: int                  # task tuples per layout × seed
    rollouts: int                   # Monte-Carlo rollouts per permutation (the oracle)
    gap: float                      # oracle agreement is measured where the oracle gap > this


@dataclass(frozen=True)
class TraceParams:
    episodes: int                   # rollouts per curated scenario × layout × seed


@dataclass(frozen=True)
class PerfParams:
    envs: int                       # parallel envs of the progression benchmark
    steps: int                      # steps timed per mode


@dataclass(frozen=True)
class BudgetParams:
    fractions: tuple[float, ...]    # budget curve: ACC-MARL snapshots after these fractions of its PPO iterations


@dataclass(frozen=True)
class AccMarlParams:
    layouts: tuple[str, ...]        # buttons2, rooms2
    variants: tuple[str, ...]       # pbrs, no_pbrs, gru
    seeds: tuple[int, ...]
    pool: PoolParams
    train: TrainParams
    eval: EvalParams
    assignment: AssignmentParams
    traces: TraceParams
    perf: PerfParams
    budget: BudgetParams
    workers: int                    # worker processes for independent runs
