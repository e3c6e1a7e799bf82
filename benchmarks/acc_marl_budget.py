"""acc_marl ablation: does the PBRS / progression gap appear with more PPO steps than the cpu profile affords?

Trains ACC-MARL (pbrs), no_pbrs and gru on one layout and seed for `--iterations` PPO iterations (32 envs × 128
steps each) and evaluates RAD in-distribution success (random assignment, shared task tuples) after the
iterations listed in `--at`. Writes JSON rows to `--out`.

    .venv/bin/python benchmarks/acc_marl_budget.py --layout rooms2 --iterations 24 --at 6 12 24 --out /tmp/x.json
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--layout", default="rooms2")
    ap.add_argument("--variants", nargs="+", default=["pbrs", "no_pbrs"])
    ap.add_argument("--iterations", type=int, default=24)
    ap.add_argument("--at", type=int, nargs="+", default=[6, 12, 24])
    ap.add_argument("--episodes", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="/tmp/acc_marl_budget.json")
    args = ap.parse_args()

    import torch

    from assets.acc_marl import layouts as lay_mod
    from assets.acc_marl import model as model_mod
    from assets.acc_marl import ppo, runs
    from assets.acc_marl.params import AccMarlParams
    from assets.common.params import parse
    from resources.profiles import load_params

    torch.set_num_threads(1)
    p = parse(AccMarlParams, load_params("acc_marl", "cpu"), "acc_marl.cpu")
    layouts = runs.layouts_table(p)
    pool = runs.build_pool(p, layouts, lambda *k: np.random.default_rng([7, len(k), *map(len, map(str, k))]))
    arrays, dpool = runs.pool_from_table(pool)
    graphs = model_mod.dfa_graphs(dpool)
    layout = lay_mod.parse(lay_mod.LAYOUTS[args.layout], args.layout)
    train_ids, test_ids = runs.roots(pool, "train", "RAD"), runs.roots(pool, "test", "RAD")
    tasks = runs.draw_tasks(np.random.default_rng([args.seed, 3]), test_ids, args.episodes, layout.n_agents,
                            arrays.trivial)
    enc = ppo.Encoded(torch, graphs, arrays.n_states)
    rows = []
    for variant in args.variants:
        cfg = dataclasses.replace(runs.ppo_config(p), total_steps=args.iterations * p.train.n_envs * p.train.n_steps)
        start = time.perf_counter()

        def evaluate(it, net, variant=variant, cfg=cfg, start=start):
            if it + 1 not in args.at:
                return
            rng_state = torch.get_rng_state()         # evaluation must not perturb the training stream
            res = ppo.rollout(torch, net, layout, arrays, enc, tasks, p.eval.max_len, 5, recurrent=variant == "gru")
            torch.set_rng_state(rng_state)
            rows.append({"layout": args.layout, "variant": variant, "iterations": it + 1,
                         "steps": (it + 1) * p.train.n_envs * p.train.n_steps,
                         "test_success": float(res["success"].mean()), "test_length": float(res["length"].mean()),
                         "seconds": time.perf_counter() - start})
            print(rows[-1], flush=True)
            with open(args.out, "w") as fh:
                json.dump(rows, fh, indent=1)

        ppo.train(layout, arrays, graphs, train_ids, cfg, variant, 1000 + args.seed, callback=evaluate)

if __name__ == "__main__":
    main()
