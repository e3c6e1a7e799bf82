"""Evaluation episodes of a planner on a frozen model in the real simulator (no Dagster).

Planning only ever queries the learned model; the simulator only executes the chosen action
(no state copies, no true-return selection). The policy is evaluated by its mean action.
Any failure — a non-finite action, a wrong action shape, a planner counter that differs
from N·I·H — raises; there is no fallback to random actions.
"""
from __future__ import annotations

import time

import numpy as np
import pandas as pd
import torch

from assets.common.worker import torch_worker
from assets.dream_mpc.envs import TaskEnv, TaskSpec
from assets.dream_mpc.model import WorldModel, make_generator, model_device, tune_allocator
from assets.dream_mpc.planners import PlannerConfig, make_planner


class CounterMismatchError(AssertionError):
    """A planner made a different number of model evaluations than its configuration says."""


def check_compatible(model: WorldModel, spec: TaskSpec) -> None:
    """Raise ValueError when a checkpoint's dimensions do not fit the environment."""
    if model.cfg.act_dim != spec.act_dim or model.cfg.obs_dim != spec.obs_dim:
        raise ValueError(f"checkpoint/environment mismatch on {spec.task}: checkpoint has action dim "
                         f"{model.cfg.act_dim} and obs dim {model.cfg.obs_dim}, the environment "
                         f"{spec.act_dim} and {spec.obs_dim}")


def run_episodes(model: WorldModel, spec: TaskSpec, planner_cfg: PlannerConfig,
                 episode_seeds: list[int], generator_seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run len(episode_seeds) episodes in lock-step (one batched planner call per decision).

    Returns (episodes, steps):
      episodes: episode_seed, return, normalised_score (return / time_limit_steps),
                seconds_per_decision (batched wall time / batch size)
      steps:    episode_seed, step, reward, optimisation_evaluations, proposal_evaluations,
                wall_s (per batched decision), objective J, uncertainty u
    """
    check_compatible(model, spec)
    tune_allocator()
    model.freeze()
    device = model_device(model)             # planning runs where the model lives (CUDA on the gpu profile)
    gen = make_generator(int(generator_seed), device)
    planner = make_planner(model, planner_cfg, spec.act_dim, gen)
    envs = [TaskEnv(spec.task, spec.time_limit_steps, spec.action_repeat, seed=s) for s in episode_seeds]
    B = len(envs)
    obs = np.stack([e.reset() for e in envs])
    planner.reset(B)
    expected = planner_cfg.optimisation_evaluations()
    returns = np.zeros(B)
    rows = []
    for step in range(spec.decisions_per_episode):
        start = time.perf_counter()
        with torch.no_grad():
            z = model.encode(torch.as_tensor(obs, device=device))
        action, info = planner.act(z)
        action = action.detach().cpu().numpy()     # synchronises a CUDA device before timing
        wall = time.perf_counter() - start
        if action.shape != (B, spec.act_dim) or not np.isfinite(action).all():
            raise ValueError(f"{planner_cfg.name} on {spec.task}: invalid action batch of shape "
                             f"{action.shape} (finite: {bool(np.isfinite(action).all())}) at step {step}")
        if info["optimisation_evaluations"] != expected:
            raise CounterMismatchError(f"{planner_cfg.name}: {info['optimisation_evaluations']} optimisation "
                                       f"evaluations at step {step}, configuration says {expected}")
        stepped = [e.step(a) for e, a in zip(envs, action)]
        obs = np.stack([s[0] for s in stepped])
        rewards = np.array([s[1] for s in stepped])
        returns += rewards
        J, u = info["objective"].cpu().numpy(), info["uncertainty"].cpu().numpy()
        for b in range(B):
            rows.append((episode_seeds[b], step, float(rewards[b]), float(info["optimisation_evaluations"]),
                         float(info["proposal_evaluations"]), wall, float(J[b]), float(u[b])))
    steps = pd.DataFrame(rows, columns=["episode_seed", "step", "reward", "optimisation_evaluations",
                                        "proposal_evaluations", "wall_s", "objective", "uncertainty"])
    per_decision = steps.groupby("episode_seed")["wall_s"].mean() / B
    episodes = pd.DataFrame({"episode_seed": episode_seeds, "return": returns,
                             "normalised_score": returns / spec.score_normaliser,
                             "seconds_per_decision": per_decision.reindex(episode_seeds).to_numpy()})
    return episodes, steps


def evaluate_cell(job: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One evaluation cell (checkpoint × planner × episode seeds) for a worker process.

    job: loader (module-level callable (ref, spec dict, device) -> (frozen model, sidecar)),
    ref, spec (catalog row), planner (PlannerConfig dict), episode_seeds, generator_seed,
    device, torch_threads. Results do not depend on which process runs the cell: every
    random draw comes from the cell's own seeded generator."""
    torch_worker(job.get("torch_threads", 1))
    model, _ = job["loader"](job["ref"], job["spec"], job["device"])
    return run_episodes(model, TaskSpec(**job["spec"]), PlannerConfig(**job["planner"]),
                        list(job["episode_seeds"]), generator_seed=int(job["generator_seed"]))
