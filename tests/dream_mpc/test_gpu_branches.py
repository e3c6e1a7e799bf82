"""The gpu profile's options that no other test runs (tests/platform/test_gpu_coverage.py lists them):
its six dm_control tasks (cpu and smoke train cartpole only) and the world-model fit gate on the weak /
medium / strong checkpoints. Toy sizes, on the CPU."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from assets.dream_mpc import checks, configs, envs, evaluation
from assets.dream_mpc import model as M
from assets.dream_mpc import planners as P
from assets.dream_mpc.params import load
from resources.compute import ComputeResource
from tests.conftest import smoke_run

GPU = load(ComputeResource(profile="gpu"))


run = smoke_run("dream_mpc")


NEW_TASKS = [t for t in GPU.tasks if t not in load(ComputeResource(profile="cpu")).tasks]


@pytest.mark.parametrize("task", NEW_TASKS)
def test_every_gpu_task_loads_steps_and_plans(task):
    """The task resolves in the simulator with the gpu block's action repeat; a world model with the gpu
    block's architecture (mish, 5 Q heads, horizon 3; widths shrunk) built on its dims plans two decisions
    per episode with one planner of each kind among the gpu block's strong-checkpoint planners (every
    planner runs on cartpole at smoke); rewards stay in [0, action repeat] per decision."""
    repeat = configs.action_repeat(GPU.action_repeat, task)
    full = envs.task_spec(task, GPU.time_limit_steps, repeat)
    assert full.decisions_per_episode * repeat == GPU.time_limit_steps and GPU.training.decisions % \
        full.decisions_per_episode == 0
    assert full.obs_dim > 0 and full.act_dim > 0
    env = envs.TaskEnv(task, 2 * repeat, repeat, seed=0)
    obs = env.reset()
    assert obs.shape == (full.obs_dim,) and env.act_dim == full.act_dim
    rng = np.random.default_rng(0)
    obs, reward, done = env.step(rng.uniform(-1, 1, env.act_dim))
    assert np.isfinite(obs).all() and 0.0 <= reward <= repeat and not done
    _, _, done = env.step(rng.uniform(-1, 1, env.act_dim))
    assert done                                                   # the time limit ends the episode

    spec = envs.task_spec(task, 2 * repeat, repeat)
    small = replace(GPU, model=replace(GPU.model, latent_dim=16, mlp_dim=16, enc_dim=16))
    cfg = configs.model_config(spec.to_dict(), small)
    assert cfg.activation == GPU.model.activation == "mish" and (cfg.obs_dim, cfg.act_dim) == (full.obs_dim,
                                                                                               full.act_dim)
    torch.manual_seed(0)
    model = M.WorldModel(cfg)
    planners = {c.name: c for c in P.default_planners(cfg.discount, cfg.horizon)}
    one_per_kind = {planners[name].kind: name for name in reversed(GPU.evaluation.planners_strong)}
    assert len(one_per_kind) >= 3
    for name in one_per_kind.values():
        pc = planners[name]
        if pc.kind in ("mppi", "cem"):
            pc = replace(pc, num_samples=16, iterations=2, num_elites=4, num_pi_trajs=4 if pc.kind == "mppi" else 0)
        episodes, steps = evaluation.run_episodes(model, spec, pc, [1], generator_seed=0)
        assert len(steps) == spec.decisions_per_episode, name
        assert (steps["optimisation_evaluations"] == pc.optimisation_evaluations()).all(), name
        assert np.isfinite(episodes["return"]).all() and (0 <= episodes["return"]).all()
        assert (episodes["return"] <= spec.time_limit_steps).all(), name


def test_smoke_fits_every_budget_the_gpu_profile_gates(run):
    """gpu gates.fit_budgets = weak/medium/strong (cpu gates strong only). Smoke trains and gates all three
    (the params default), so the gate's loop over budgets runs; and it judges exactly those budgets."""
    smoke = load(ComputeResource(profile="smoke"))
    assert set(GPU.gates.fit_budgets) == {"weak", "medium", "strong"} <= set(smoke.gates.fit_budgets)
    value = run.value("world_model")
    assert {e["budget"] for e in value["checkpoints"]} >= set(GPU.gates.fit_budgets)
    assert run.seen["checks"]["heldout_fit"] is True
    # a bad fit of the weak checkpoint fails the gpu gate and not a strong-only (cpu) gate
    bad = {**value, "checkpoints": [dict(e, consistency_relative=1e9) if e["budget"] == "weak" else e
                                    for e in value["checkpoints"]]}
    gpu_like = replace(smoke, gates=replace(smoke.gates, fit_budgets=GPU.gates.fit_budgets))
    cpu_like = replace(smoke, gates=replace(smoke.gates, fit_budgets=("strong",)))
    assert not checks.world_model_fit(bad, gpu_like).passed
    assert checks.world_model_fit(bad, cpu_like).passed
