"""Online TD-MPC2-lite training on one task and seed (no Dagster import).

The loop (TD-MPC2): `seed_decisions` uniformly random decisions, then `pretrain_updates`
updates on that data, then one acting decision + `updates_per_decision` updates per step.
The acting agent is MPPI through the current model (`collect_with: mppi`, as TD-MPC2, with
its training-time exploration: the executed action is the MPPI action plus the final MPPI
std of the first step times ε) or the policy prior's sampled action (`policy`; its std starts
near e^-4, so it barely explores: the smoke profile only). All tensors live on `device`
(compute.resolved_device(): CUDA on the gpu profile); snapshots are CPU copies.
Snapshots of the whole model are taken at the given fractions of the decision budget
(25/50/100 % = weak/medium/strong prior). After the budget, `heldout_episodes` more episodes
are collected with the final agent and never trained on: the held-out slice for the
world-model gates. Every snapshot's policy (mean action) and a uniformly random policy are
evaluated on the same `eval_episodes` initial states.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch

from assets.dream_mpc.envs import TaskEnv, TaskSpec
from assets.dream_mpc.model import (
    Learner,
    ModelConfig,
    WorldModel,
    make_generator,
    model_device,
    state_dict_for_checkpoint,
    tune_allocator,
)
from assets.dream_mpc.planners import PlannerConfig, make_planner


@dataclass(frozen=True)
class TrainConfig:
    decisions: int                    # acting budget (decisions = env steps / action_repeat)
    seed_decisions: int
    pretrain_updates: int
    updates_per_decision: int = 1
    batch_size: int = 256
    collect_with: str = "policy"      # policy | mppi
    collect_mppi_samples: int = 256
    collect_mppi_iterations: int = 4
    snapshot_fractions: tuple[float, ...] = (0.25, 0.5, 1.0)
    heldout_episodes: int = 1
    eval_episodes: int = 2
    curve_every: int = 50             # decisions between logged training-curve points
    exploration_std: float = 0.0      # extra Gaussian noise on MPPI actions while collecting
    planner_noise: bool = True        # TD-MPC2: collected action = MPPI action + MPPI std[0]·ε
    reward_fraction: float = 0.0      # reward-balanced replay: batch share from rewarded segments


@dataclass
class Episode:
    obs: list = field(default_factory=list)      # decisions + 1 observations
    action: list = field(default_factory=list)
    reward: list = field(default_factory=list)
    split: str = "train"


class SegmentSampler:
    """Uniform (H+1)-step segments that never cross an episode boundary.

    `reward_fraction` > 0 (reward-balanced replay): that share of every batch is drawn
    uniformly from the segments with a non-zero reward in their H steps (uniformly from all
    segments while there is none), the rest uniformly from all segments; 0 is TD-MPC2's
    uniform sampling (and the same random draws as before the option existed).
    """

    def __init__(self, horizon: int, rng: np.random.Generator, reward_fraction: float = 0.0):
        if not 0.0 <= reward_fraction <= 1.0:
            raise ValueError(f"reward_fraction must be in [0, 1], got {reward_fraction}")
        self.horizon, self.rng, self.reward_fraction = horizon, rng, float(reward_fraction)
        self.episodes: list[Episode] = []

    def rewarded_starts(self, usable: list[Episode]) -> np.ndarray:
        """Flat start indices (over `usable`'s segments) whose H steps hold a non-zero reward."""
        H = self.horizon
        flags = [np.lib.stride_tricks.sliding_window_view(np.asarray(e.reward[:len(e.action)]) != 0, H).any(1)
                 for e in usable]
        return np.flatnonzero(np.concatenate(flags)) if flags else np.zeros(0, dtype=np.int64)

    def sample(self, batch: int, device: str | torch.device = "cpu"
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """obs (H+1, batch, obs_dim), action (H, batch, act_dim), reward (H, batch, 1) on `device`."""
        H = self.horizon
        usable = [e for e in self.episodes if len(e.action) >= H]
        starts_per_ep = np.array([len(e.action) - H + 1 for e in usable])
        n_rewarded = int(round(self.reward_fraction * batch))
        flat = self.rng.integers(0, starts_per_ep.sum(), size=batch - n_rewarded)
        if n_rewarded:
            rewarded = self.rewarded_starts(usable)
            extra = (rewarded[self.rng.integers(0, len(rewarded), size=n_rewarded)] if len(rewarded)
                     else self.rng.integers(0, starts_per_ep.sum(), size=n_rewarded))
            flat = np.concatenate([flat, extra])
        bounds = np.cumsum(starts_per_ep)
        ep_idx = np.searchsorted(bounds, flat, side="right")
        offs = flat - np.concatenate([[0], bounds[:-1]])[ep_idx]
        obs = np.stack([np.asarray(usable[e].obs[s:s + H + 1]) for e, s in zip(ep_idx, offs)], axis=1)
        act = np.stack([np.asarray(usable[e].action[s:s + H]) for e, s in zip(ep_idx, offs)], axis=1)
        rew = np.stack([np.asarray(usable[e].reward[s:s + H]) for e, s in zip(ep_idx, offs)], axis=1)
        return (torch.as_tensor(obs, dtype=torch.float32, device=device),
                torch.as_tensor(act, dtype=torch.float32, device=device),
                torch.as_tensor(rew, dtype=torch.float32, device=device).unsqueeze(-1))


def evaluate_policy(model: WorldModel | None, spec: TaskSpec, episode_seeds: list[int],
                    rng: np.random.Generator) -> list[float]:
    """Returns of the policy prior's mean action (model given) or of uniform random actions
    (model None), one episode per seed, all episodes stepped in lock-step."""
    envs = [TaskEnv(spec.task, spec.time_limit_steps, spec.action_repeat, seed=s) for s in episode_seeds]
    obs = np.stack([e.reset() for e in envs])
    returns = np.zeros(len(envs))
    was_training = model.training if model is not None else False
    if model is not None:
        model.eval()
        device = model_device(model)
    for _ in range(spec.decisions_per_episode):
        if model is None:
            actions = rng.uniform(-1, 1, size=(len(envs), spec.act_dim))
        else:
            with torch.no_grad():
                actions = model.pi(model.encode(torch.as_tensor(obs, device=device)))[0].cpu().numpy()
        steps = [e.step(a) for e, a in zip(envs, actions)]
        obs = np.stack([s[0] for s in steps])
        returns += [s[1] for s in steps]
    if model is not None and was_training:
        model.train()
    return returns.tolist()


def policy_vs_random(model: WorldModel, spec: TaskSpec, episode_seeds: list[int], random_seed: int,
                     level: float = 0.90) -> dict:
    """The policy prior's mean action against uniform random actions on the same initial states
    (one episode per seed, paired by seed): mean returns, the mean paired difference and its
    two-sided `level` Student-t interval over episodes (claims.paired_ci). random_seed drives
    the random actions (one draw per task: the random reference does not depend on the
    checkpoint). Returns {gate_episodes, gate_policy_return, gate_random_return, gate_diff,
    gate_diff_low, gate_diff_high} (undiscounted returns per episode)."""
    from assets.common.claims import paired_ci

    if len(episode_seeds) < 2:
        raise ValueError(f"policy_vs_random needs ≥ 2 episodes for an interval, got {len(episode_seeds)}")
    policy = np.asarray(evaluate_policy(model, spec, episode_seeds, np.random.default_rng(0)))
    random = np.asarray(evaluate_policy(None, spec, episode_seeds, np.random.default_rng(random_seed)))
    ci = paired_ci(policy, random, level, "t")
    return {"gate_episodes": len(episode_seeds), "gate_policy_return": float(policy.mean()),
            "gate_random_return": float(random.mean()), "gate_diff": ci.mean, "gate_diff_low": ci.low,
            "gate_diff_high": ci.high}


def train_online(spec: TaskSpec, model_cfg: ModelConfig, cfg: TrainConfig, seed: int,
                 eval_seeds: list[int], log: Callable[[str], None] = print,
                 device: str = "cpu") -> dict:
    """Run the online loop. Returns
        episodes:  list[Episode] (split "seed" | "train" | "heldout")
        snapshots: {fraction: state_dict}
        curve:     list of dicts (decision, updates, losses, wall time, episode return)
        evals:     {fraction: [policy returns]}, "random": [random-policy returns]
        timing:    decisions, updates, seconds, decisions/s (= env steps/s / action repeat)
    """
    tune_allocator()
    torch.manual_seed(seed)
    gen = make_generator(seed, device)       # all torch draws on the training device
    rng = np.random.default_rng(seed)
    model = WorldModel(model_cfg).to(device)
    learner = Learner(model, gen)
    sampler = SegmentSampler(model_cfg.horizon, rng, cfg.reward_fraction)
    env = TaskEnv(spec.task, spec.time_limit_steps, spec.action_repeat, seed=seed)
    collector = None
    if cfg.collect_with == "mppi":
        pcfg = PlannerConfig(name="collect_mppi", kind="mppi", horizon=model_cfg.horizon,
                             discount=model_cfg.discount, num_samples=cfg.collect_mppi_samples,
                             iterations=cfg.collect_mppi_iterations,
                             num_elites=min(64, cfg.collect_mppi_samples // 4),        # TD-MPC2: 64 of 512
                             num_pi_trajs=min(24, cfg.collect_mppi_samples // 8))      # TD-MPC2: 24 of 512
        collector = make_planner(model, pcfg, spec.act_dim, gen)
    elif cfg.collect_with != "policy":
        raise ValueError(f"collect_with must be 'policy' or 'mppi', got {cfg.collect_with!r}")

    snapshot_at = {max(1, int(round(f * cfg.decisions))): f for f in cfg.snapshot_fractions}
    episodes, snapshots, evals, curve = [], {}, {}, []
    updates, losses = 0, {}
    start = time.monotonic()
    ep = Episode(split="seed")
    ep.obs.append(env.reset())
    sampler.episodes.append(ep)
    if collector is not None:
        collector.reset(1)

    def act(obs: np.ndarray, decision: int) -> np.ndarray:
        if decision < cfg.seed_decisions:
            return rng.uniform(-1, 1, size=spec.act_dim).astype(np.float32)
        with torch.no_grad():
            z = model.encode(torch.as_tensor(obs, device=device).unsqueeze(0))
        if collector is None:
            with torch.no_grad():
                return model.pi(z, gen)[1][0].cpu().numpy()
        model.eval()
        a = collector.act(z)[0][0].cpu().numpy()
        model.train()
        if cfg.planner_noise:   # TD-MPC2 (training mode): a + std_0 · ε with the final MPPI std
            a = np.clip(a + collector.last_std[0, 0].cpu().numpy() * rng.standard_normal(a.shape), -1, 1)
        if cfg.exploration_std:
            a = np.clip(a + cfg.exploration_std * rng.standard_normal(a.shape), -1, 1)
        return a.astype(np.float32)

    for decision in range(cfg.decisions):
        a = act(ep.obs[-1], decision)
        obs, reward, done = env.step(a)
        ep.action.append(np.asarray(a, dtype=np.float32))
        ep.reward.append(reward)
        ep.obs.append(obs)
        if decision + 1 == cfg.seed_decisions:
            n = cfg.pretrain_updates
        elif decision + 1 > cfg.seed_decisions:
            n = cfg.updates_per_decision
        else:
            n = 0
        for _ in range(n):
            losses = learner.update(*sampler.sample(cfg.batch_size, device))
            updates += 1
        if done:
            episodes.append(ep)
            curve.append({"decision": decision + 1, "updates": updates, "kind": "episode_return",
                          "value": float(np.sum(ep.reward)), "seconds": time.monotonic() - start})
            ep = Episode(split="seed" if decision + 1 < cfg.seed_decisions else "train")
            ep.obs.append(env.reset())
            sampler.episodes.append(ep)
            if collector is not None:
                collector.reset(1)
        if (decision + 1) % cfg.curve_every == 0 and losses:
            curve += [{"decision": decision + 1, "updates": updates, "kind": k, "value": v,
                       "seconds": time.monotonic() - start} for k, v in losses.items()]
        if decision + 1 in snapshot_at:
            frac = snapshot_at[decision + 1]
            snapshots[frac] = state_dict_for_checkpoint(model)
            evals[frac] = evaluate_policy(model, spec, eval_seeds, rng)
            curve.append({"decision": decision + 1, "updates": updates, "kind": "eval_return",
                          "value": float(np.mean(evals[frac])), "seconds": time.monotonic() - start})
            log(f"{spec.task} seed {seed}: {decision + 1}/{cfg.decisions} decisions, {updates} updates, "
                f"policy eval return {np.mean(evals[frac]):.1f} ({time.monotonic() - start:.0f} s)")
    seconds = time.monotonic() - start
    if ep.action:
        episodes.append(ep)   # the unfinished last training episode (kept, marked by its length)

    # held-out episodes with the final agent: never in the sampler
    for _ in range(cfg.heldout_episodes):
        held = Episode(split="heldout")
        held.obs.append(env.reset())
        if collector is not None:
            collector.reset(1)
        done = False
        while not done:
            a = act(held.obs[-1], cfg.decisions)
            obs, reward, done = env.step(a)
            held.action.append(np.asarray(a, dtype=np.float32))
            held.reward.append(reward)
            held.obs.append(obs)
        episodes.append(held)
    evals["random"] = evaluate_policy(None, spec, eval_seeds, rng)
    return {"episodes": episodes, "snapshots": snapshots, "curve": curve, "evals": evals,
            "model": model,
            "timing": {"decisions": cfg.decisions, "updates": updates, "seconds": seconds,
                       "env_steps_per_s": cfg.decisions * spec.action_repeat / max(seconds, 1e-9)}}


def train_job(job: dict) -> dict:
    """One (task, seed) training run for a worker process: `job` holds train_online's keyword
    arguments plus `torch_threads`. Returns train_online's result without the live model
    (snapshots are CPU state dicts), so it can be sent back from a spawned process."""
    job = dict(job)
    torch.set_num_threads(int(job.pop("torch_threads", 1)))
    out = train_online(**job, log=print)
    out.pop("model", None)
    return out
