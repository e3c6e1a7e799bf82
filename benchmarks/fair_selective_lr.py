"""Calibrate one learning rate for every fair_selective agent on plain PPO reward.

The spec's lr 1e-5 assumes 500k steps; at the cpu budget (100k steps) we pick, among a few
values, the lr with the highest mean training reward over the last 10 iterations of plain PPO
(reward only: no fairness quantity is looked at), on both envs, seed 0. Prints a table.

    .venv/bin/python -m benchmarks.fair_selective_lr [--steps 100000] [--lrs 1e-4 3e-4 1e-3 3e-3]
"""
from __future__ import annotations

import argparse

import numpy as np

from assets.fair_selective import agents as ag
from assets.fair_selective import env as envs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--lrs", type=float, nargs="+", default=[1e-4, 3e-4, 1e-3, 3e-3])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print("| env | lr | mean reward / iteration (last 10) |")
    print("|---|---|---|")
    for name in ("lending", "hiring"):
        spec = envs.env_spec(name, 0.5, (0.7, 0.3))
        pool = envs.sample_pool(spec, 2000, np.random.default_rng(args.seed))
        for lr in args.lrs:
            cfg = ag.AgentConfig(kind="ppo", lr=lr, total_steps=args.steps)
            out = ag.train_agent(spec, pool, cfg, args.seed, 2000, 2000, 1000.0)
            rewards = [r["reward"] for r in out["curve"]][-10:]
            print(f"| {name} | {lr:g} | {np.mean(rewards):.1f} |", flush=True)


if __name__ == "__main__":
    main()
