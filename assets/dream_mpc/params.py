"""Dream-MPC run parameters (params.yaml `dream_mpc`), typed and frozen — no Dagster import."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

SLUG = "dream_mpc"
BUDGETS = ("weak", "medium", "strong")          # checkpoints at 25 / 50 / 100 % of the budget


@dataclass(frozen=True)
class ModelParams:
    """TD-MPC2-lite world model (the rest of model.ModelConfig keeps TD-MPC2's defaults)."""

    num_q: int                      # Q ensemble heads
    horizon: int                    # H of training segments and of every planner
    lr: float
    activation: str                 # silu | mish
    latent_dim: int
    mlp_dim: int
    enc_dim: int


@dataclass(frozen=True)
class TrainingParams:
    """The online TD-MPC2-lite run of one task × seed."""

    seed_episodes: int              # episodes of uniform random actions, then as many pretraining updates
    batch_size: int
    collect_with: Literal["policy", "mppi"]
    heldout_episodes: int           # episodes after the budget, never trained on (the gates' held-out slice)
    decisions: int                  # acting budget (whole episodes)
    eval_seeds: tuple[int, ...]     # initial states of the policy / random-policy evaluation
    min_transitions: int            # the replay-buffer gate's minimum per run
    updates_per_decision: int = 1
    collect_mppi_samples: int = 256
    collect_mppi_iterations: int = 4
    planner_noise: bool = True      # TD-MPC2: collected action = MPPI action + MPPI std·ε
    # share of each batch from segments with a non-zero reward (0: uniform, TD-MPC2); one number
    # or {task: share, "default": share}
    reward_balance: float | Mapping[str, float] = 0.0


@dataclass(frozen=True)
class GateParams:
    """Blocking world-model gates (None: not enforced at this profile, wiring only)."""

    max_consistency_relative: float          # held-out 1-step consistency MSE / latent variance
    max_reward_mse: float                    # held-out reward MSE per control step
    policy_margin_over_random: float | None
    min_q_ensemble_std: float | None
    fit_budgets: tuple[str, ...] = BUDGETS   # checkpoints the held-out fit gate judges
    # policy_beats_random: the strong policy against random actions on this many fresh initial
    # states (episode seeds policy_episode_seed + 1 …), paired by state, judged by the 90 % t
    # interval's lower bound; 0: the point estimate on training's eval_seeds (NOTES: why)
    policy_episodes: int = 0
    policy_episode_seed: int = 7000


@dataclass(frozen=True)
class EvaluationParams:
    episodes: int                   # per task × seed × budget × planner
    episodes_sampling: int          # for MPPI / CEM
    first_episode_seed: int
    planners_strong: tuple[str, ...]
    planners_prior_sweep: tuple[str, ...]   # planners also run on the weak / medium checkpoints


@dataclass(frozen=True)
class MicrobenchParams:
    action_dims: tuple[int, ...]    # synthetic linear-quadratic system
    seed: int
    discount: float
    start_states: int               # held-out start states of the frozen-model benchmark
    synthetic_states: int
    latency_repeats: int


@dataclass(frozen=True)
class SurveyParams:
    """Report only: spec tasks this profile trains and judges but does not claim on."""

    tasks: tuple[str, ...] = ()
    seeds: tuple[int, ...] = ()


@dataclass(frozen=True)
class ReportParams:
    bootstrap: int                  # bootstrap resamples of every CI


@dataclass(frozen=True)
class DreamMPCParams:
    tasks: tuple[str, ...]
    seeds: tuple[int, ...]
    time_limit_steps: int           # control steps per episode (score = return / time_limit_steps)
    action_repeat: int | Mapping[str, int]   # one repeat, or {task: repeat, "default": repeat}
    torch_threads: int              # intra-op thread cap (thousands of tiny ops: 1 is fastest on CPU)
    model: ModelParams
    training: TrainingParams
    gates: GateParams
    evaluation: EvaluationParams
    microbench: MicrobenchParams
    report: ReportParams
    task_survey: SurveyParams = SurveyParams()
    workers: int = 1                # worker processes for independent runs / cells (CPU only)
    planner_overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


def load(compute: Any) -> DreamMPCParams:
    """The typed parameters of a compute resource's profile (with its params_overrides), for
    pure code that has no Paper object (the probe CLI and its worker processes)."""
    from assets.common.params import parse

    return parse(DreamMPCParams, compute.params(SLUG), f"{SLUG}.{compute.profile}")
