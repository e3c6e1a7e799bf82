"""Typed parameters → the method's configurations, and the dimensions of the experiment grid.

No Dagster import and no torch at import time (model / training are imported when a config
is built), so definitions.py, checks.py and the probe CLI can import it for wiring.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from assets.dream_mpc.params import BUDGETS, DreamMPCParams, EvaluationParams, TrainingParams

if TYPE_CHECKING:
    from assets.dream_mpc.model import ModelConfig
    from assets.dream_mpc.training import TrainConfig

# snapshot fraction of the training budget -> checkpoint name (weak / medium / strong prior)
BUDGET_NAMES = dict(zip((0.25, 0.5, 1.0), BUDGETS))


def per_task(setting, task: str, name: str, default=None):
    """A setting given as one value for every task or as a mapping {task: value, "default":
    value}; a mapping without either entry gives `default`, or raises when there is none."""
    if not isinstance(setting, Mapping):
        return setting
    if task in setting:
        return setting[task]
    if "default" in setting:
        return setting["default"]
    if default is None:
        raise ValueError(f"{name} has no entry for {task!r} and no 'default': {dict(setting)}")
    return default


def action_repeat(setting: int | Mapping[str, int], task: str) -> int:
    """The task's action repeat: params `action_repeat` is one int for every task or a mapping
    {task: repeat, "default": repeat} (per-task repeats as PlaNet/Dreamer: cartpole 8, reacher 4)."""
    return int(per_task(setting, task, "action_repeat"))


def reward_balance(setting: float | Mapping[str, float], task: str) -> float:
    """The task's reward-balanced replay share: one number for every task or a mapping
    {task: share, "default": share} (missing default: 0, TD-MPC2's uniform sampling)."""
    return float(per_task(setting, task, "reward_balance", 0.0))


def seed_phase(training: TrainingParams, decisions_per_episode: int) -> tuple[int, int]:
    """(seed decisions, pretraining updates): `seed_episodes` episodes of uniform random actions,
    then as many updates as seed decisions (TD-MPC2: seed_steps of each)."""
    n = int(training.seed_episodes) * int(decisions_per_episode)
    return n, n


def model_config(spec: dict, params: DreamMPCParams) -> ModelConfig:
    """The world model of a catalog row (obs/action dims) at the profile's sizes; the discount
    comes from the task's episode length."""
    from assets.dream_mpc import model as M

    m = params.model
    return M.ModelConfig(obs_dim=int(spec["obs_dim"]), act_dim=int(spec["act_dim"]),
                         latent_dim=m.latent_dim, mlp_dim=m.mlp_dim, enc_dim=m.enc_dim, num_q=m.num_q,
                         horizon=m.horizon, lr=m.lr, activation=m.activation,
                         discount=M.discount_from_episode_length(int(spec["decisions_per_episode"])))


def train_config(training: TrainingParams, decisions_per_episode: int, task: str = "") -> TrainConfig:
    """The profile's `training` block as a TrainConfig for `task` with this episode length."""
    from assets.dream_mpc.training import TrainConfig

    seed_decisions, pretrain_updates = seed_phase(training, decisions_per_episode)
    return TrainConfig(decisions=training.decisions, seed_decisions=seed_decisions,
                       pretrain_updates=pretrain_updates, batch_size=training.batch_size,
                       collect_with=training.collect_with, heldout_episodes=training.heldout_episodes,
                       eval_episodes=len(training.eval_seeds), updates_per_decision=training.updates_per_decision,
                       collect_mppi_samples=training.collect_mppi_samples,
                       collect_mppi_iterations=training.collect_mppi_iterations,
                       planner_noise=training.planner_noise,
                       reward_fraction=reward_balance(training.reward_balance, task))


def checkpoint_name(task: str, seed: int, budget: str) -> str:
    return f"{task}_seed{seed}_{budget}"


def evaluation_grid(world_model: dict, planner_configs: dict, evaluation: EvaluationParams) -> list:
    """(checkpoint entry, planner config dict, episode seeds) for every cell of the grid:
    every strong-checkpoint planner of `planners_strong`, the prior sweep on weak / medium."""
    jobs = []
    for entry in world_model["checkpoints"]:
        wanted = evaluation.planners_strong if entry["budget"] == "strong" else evaluation.planners_prior_sweep
        for cfg in planner_configs["per_task"][entry["task"]]:
            if cfg["name"] not in wanted:
                continue
            n = evaluation.episodes_sampling if cfg["kind"] in ("mppi", "cem") else evaluation.episodes
            seeds = [int(evaluation.first_episode_seed) + 1000 * int(entry["seed"]) + i for i in range(int(n))]
            jobs.append((entry, cfg, seeds))
    return jobs
