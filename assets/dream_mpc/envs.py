"""Offline continuous-control environments: dm_control suite tasks on MuJoCo (no rendering).

The suite XMLs ship in the dm-control wheel and physics runs on mujoco from PyPI (pinned
below 4: dm-control 1.0.50 fails on mujoco 4.0.0 with AttributeError 'flex_vertedge').
Only state observations are used; nothing here calls physics.render.

An environment step of `TaskEnv` is one *decision*: the action is repeated `action_repeat`
physics control steps and the rewards are summed, so a decision's reward lies in
[0, action_repeat] and an episode's return in [0, time_limit_steps] (dm_control rewards are
in [0, 1] per control step). The normalised score is return / time_limit_steps (= return/1000
for the standard 1000-step episodes).
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass

import numpy as np

os.environ.setdefault("MUJOCO_GL", "disable")  # state-only: never initialise a GL backend

# task id -> (domain, task) of the dm_control suite
KNOWN_TASKS: dict[str, tuple[str, str]] = {
    "pendulum-swingup": ("pendulum", "swingup"),
    "cartpole-swingup": ("cartpole", "swingup"),
    "cartpole-swingup_sparse": ("cartpole", "swingup_sparse"),
    "reacher-easy": ("reacher", "easy"),
    "reacher-hard": ("reacher", "hard"),
    "cheetah-run": ("cheetah", "run"),
    "cartpole-balance": ("cartpole", "balance"),
    "walker-stand": ("walker", "stand"),
    "walker-walk": ("walker", "walk"),
    "walker-run": ("walker", "run"),
    "hopper-hop": ("hopper", "hop"),
    "acrobot-swingup": ("acrobot", "swingup"),
    "finger-spin": ("finger", "spin"),
    "finger-turn_easy": ("finger", "turn_easy"),
    "point_mass-easy": ("point_mass", "easy"),
    "ball_in_cup-catch": ("ball_in_cup", "catch"),
    "hopper-stand": ("hopper", "stand"),
}


class UnknownTaskError(KeyError):
    """A task id outside KNOWN_TASKS."""


class NonFiniteObservationError(ValueError):
    """The simulator returned NaN/inf in an observation."""


def resolve_task(task_id: str) -> tuple[str, str]:
    if task_id not in KNOWN_TASKS:
        raise UnknownTaskError(f"unknown task id {task_id!r}; known dm_control tasks: "
                               f"{', '.join(sorted(KNOWN_TASKS))}")
    return KNOWN_TASKS[task_id]


@dataclass(frozen=True)
class TaskSpec:
    """One row of the environment catalog."""

    task: str
    domain: str
    task_name: str
    obs_dim: int
    act_dim: int
    time_limit_steps: int          # physics control steps per episode
    action_repeat: int
    decisions_per_episode: int     # time_limit_steps / action_repeat
    control_timestep_s: float
    score_normaliser: float        # max return = time_limit_steps (reward ≤ 1 per control step)

    def to_dict(self) -> dict:
        return asdict(self)


def _flatten(observation: dict) -> np.ndarray:
    return np.concatenate([np.asarray(v, dtype=np.float64).reshape(-1) for v in observation.values()])


class TaskEnv:
    """A dm_control task with action repeat and flat float32 observations.

    `seed` fixes the task's initial-state randomness, so episode `seed` is identical for
    every planner evaluated on it (paired comparisons).
    """

    def __init__(self, task_id: str, time_limit_steps: int, action_repeat: int, seed: int):
        from dm_control import suite

        domain, task = resolve_task(task_id)
        if time_limit_steps % action_repeat:
            raise ValueError(f"time_limit_steps {time_limit_steps} is not a multiple of action_repeat {action_repeat}")
        self.task_id, self.action_repeat, self.time_limit_steps = task_id, action_repeat, time_limit_steps
        self._env = suite.load(domain, task, task_kwargs={"random": int(seed)})
        spec = self._env.action_spec()
        if not (np.allclose(spec.minimum, -1) and np.allclose(spec.maximum, 1)):
            raise ValueError(f"{task_id}: action bounds {spec.minimum}..{spec.maximum} are not [-1, 1]")
        self.act_dim = int(np.prod(spec.shape))
        self.obs_dim = int(sum(int(np.prod(v.shape)) for v in self._env.observation_spec().values()))
        self.control_timestep = float(self._env.control_timestep())
        self._t = 0

    def _check(self, obs: np.ndarray) -> np.ndarray:
        if not np.isfinite(obs).all():
            raise NonFiniteObservationError(f"{self.task_id}: non-finite observation at control step "
                                            f"{self._t}: {obs.tolist()}")
        return obs.astype(np.float32)

    def reset(self) -> np.ndarray:
        self._t = 0
        return self._check(_flatten(self._env.reset().observation))

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool]:
        """One decision: (next obs (obs_dim,), summed reward, episode over)."""
        action = np.asarray(action, dtype=np.float64).reshape(self.act_dim)
        if not np.isfinite(action).all():
            raise ValueError(f"{self.task_id}: non-finite action {action.tolist()} at control step {self._t}")
        reward = 0.0
        for _ in range(self.action_repeat):
            ts = self._env.step(np.clip(action, -1.0, 1.0))
            self._t += 1
            reward += float(ts.reward or 0.0)
            if self._t >= self.time_limit_steps or ts.last():
                break
        done = self._t >= self.time_limit_steps or ts.last()
        return self._check(_flatten(ts.observation)), reward, done


def task_spec(task_id: str, time_limit_steps: int, action_repeat: int) -> TaskSpec:
    """Catalog row built by actually loading the task (dims come from the simulator)."""
    env = TaskEnv(task_id, time_limit_steps, action_repeat, seed=0)
    domain, task = resolve_task(task_id)
    return TaskSpec(task=task_id, domain=domain, task_name=task, obs_dim=env.obs_dim, act_dim=env.act_dim,
                    time_limit_steps=time_limit_steps, action_repeat=action_repeat,
                    decisions_per_episode=time_limit_steps // action_repeat,
                    control_timestep_s=env.control_timestep, score_normaliser=float(time_limit_steps))
