"""fair_selective device check (issue 49): no device parity (the gpu profile trains on the CPU), then a
timed slice of its dominant phase, agent training, and the projection.

- parity: n/a. `agents.train_agent` builds its networks and tensors on the CPU (no device argument;
  rollouts read the policy through .numpy() lookup tables) at every profile: the gpu profile's
  "gpu" is more and bigger runs (16 worker processes), not a device.
- timed slice (host CPU, one torch thread as each worker): `agents.train_agent` for ITERATIONS PPO
  iterations (n_steps env steps + the kind's update) of every agent kind of the gpu profile's grid
  (first β1, first β2 of each kind; configs from runs.agent_config) on the lending env at the gpu
  profile's pool, window and horizon; seconds per iteration × iterations per run × runs of that kind.

    .venv/bin/python benchmarks/fair_selective_device_check.py --device cuda --out /tmp/fair_selective_device.json
    .venv/bin/python benchmarks/fair_selective_device_check.py --device cpu --tiny     # exercises the code (tests)
"""
from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np

ITERATIONS = 2          # SELLF kinds skip the update on iteration 0: time two
ENV = "lending"
PARITY = "n/a: no device path (agents.train_agent trains on the CPU at every profile)"


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))      # the repo root, from any directory
    from assets.common import device_check

    args = device_check.arguments(argv)
    if device_check.prepare(args.device) is None:
        return device_check.NO_DEVICE

    from assets.common.params import parse
    from assets.fair_selective import agents as ag
    from assets.fair_selective import env as envs
    from assets.fair_selective import runs
    from assets.fair_selective.params import FairSelectiveParams
    from resources.profiles import load_params

    gpu = parse(FairSelectiveParams, load_params("fair_selective", "gpu"), "fair_selective.gpu")
    p = gpu
    if args.tiny:         # the smoke profile's sizes and PPO settings, the gpu profile's agent kinds
        smoke = parse(FairSelectiveParams, load_params("fair_selective", "smoke"), "fair_selective.smoke")
        from dataclasses import replace
        p = replace(gpu, pool_size=smoke.pool_size, horizon=smoke.horizon, window=smoke.window,
                    agents=replace(gpu.agents, n_steps=smoke.agents.n_steps // 2, epochs=1,
                                   predictor_steps=smoke.agents.predictor_steps, predictor="linear"))
    spec = runs.spec_of(p, ENV)
    pool = envs.sample_pool(spec, p.pool_size, np.random.default_rng(0))
    warm = runs.agent_config(p, "ppo", 0.0, total_steps=p.agents.n_steps)
    ag.train_agent(spec, pool, warm, 0, p.window, p.horizon, p.resource0, threads=1, env_seed=1)   # warm-up
    per_iteration = {}
    for kind, betas in p.agents.grid.items():
        cfg = runs.agent_config(p, kind, float(betas[0]), float(runs.beta2_grid(p, kind)[0]),
                                total_steps=ITERATIONS * p.agents.n_steps)
        started = time.perf_counter()
        out = ag.train_agent(spec, pool, cfg, 0, p.window, p.horizon, p.resource0, threads=1, env_seed=1)
        per_iteration[kind] = (time.perf_counter() - started) / ITERATIONS
        assert len(out["curve"]) == ITERATIONS and all(np.isfinite(r["reward"]) for r in out["curve"])
    iterations = math.ceil(gpu.agents.total_steps / gpu.agents.n_steps)
    parts = []
    for kind, betas in gpu.agents.grid.items():
        jobs = len(gpu.envs) * len(betas) * len(runs.beta2_grid(gpu, kind)) * len(gpu.seeds)
        parts.append((f"{kind} PPO iteration ({gpu.agents.n_steps} steps + update), {jobs} runs × {iterations}",
                      per_iteration[kind], jobs * iterations))
    projection = device_check.projection(parts, note=(
        f"serial host-CPU seconds of agent training (the profile spreads the runs over {gpu.workers} worker "
        f"processes); every env at {ENV}'s cost; leaves out evaluation ({gpu.eval.episodes} episodes × horizon "
        f"{gpu.horizon} per selected config), the static study, bootstrap CIs and the report"))
    report = {"paper": "fair_selective", "device": args.device, "tiny": args.tiny, "parity": PARITY,
              "slice": {"env": ENV, "iterations": ITERATIONS, "n_steps": p.agents.n_steps, "epochs": p.agents.epochs,
                        "predictor": p.agents.predictor, "seconds_per_iteration": per_iteration},
              "projection": projection,
              "projected_wall_with_workers_s": projection["gpu_profile_s"] / max(1, gpu.workers)}
    return device_check.finish(report, True, args.out)


if __name__ == "__main__":
    sys.exit(main())
