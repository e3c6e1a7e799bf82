"""acc_marl budget curve: RAD in-distribution test success of ACC-MARL vs env steps, against a random policy.

Trains `--variants` (default pbrs = ACC-MARL) on one layout for each of `--seeds`, for `--iterations` PPO
iterations of the cpu profile (32 envs × 128 steps each, its precision unless `--precision`), and after each
iteration listed in `--at` evaluates RAD in-distribution success (random assignment, 100-step episodes, sampled
actions) on `--episodes` task tuples drawn per seed; the random policy plays the same tuples. Writes JSON rows to
`--out` (one per variant × seed × checkpoint, plus the random policy per seed). `--summarise FILE ...` prints
mean success per checkpoint and the paired 90 % CI over seeds of trained − random (the premise of claims 1–4).

    .venv/bin/python benchmarks/acc_marl_budget.py --layout rooms2 --seeds 0 --iterations 48 --at 6 48 --out /tmp/a.json
    .venv/bin/python benchmarks/acc_marl_budget.py --summarise /tmp/a.json /tmp/b.json
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np


def run(args) -> None:
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
    enc = ppo.Encoded(torch, graphs, arrays.n_states)
    per_iter = p.train.n_envs * p.train.n_steps
    rows = []

    def save():
        Path(args.out).write_text(json.dumps(rows, indent=1))

    for seed in args.seeds:
        tasks = runs.draw_tasks(np.random.default_rng([seed, 3]), test_ids, args.episodes, layout.n_agents,
                                arrays.trivial)
        res = ppo.rollout(torch, None, layout, arrays, enc, tasks, p.eval.max_len, 5, random_policy=True)
        rows.append({"layout": args.layout, "variant": "random", "seed": seed, "iterations": 0, "steps": 0,
                     "test_success": float(res["success"].mean()), "seconds": 0.0})
        for variant in args.variants:
            cfg = dataclasses.replace(runs.ppo_config(p), total_steps=args.iterations * per_iter,
                                      precision=args.precision or p.train.precision)
            start, cpu0 = time.perf_counter(), time.process_time()

            def evaluate(it, net, variant=variant, seed=seed, tasks=tasks, start=start, cpu0=cpu0, cfg=cfg):
                if it + 1 not in args.at:
                    return
                rng_state = torch.get_rng_state()         # evaluation must not perturb the training stream
                out = ppo.rollout(torch, net, layout, arrays, enc, tasks, p.eval.max_len, 5,
                                  recurrent=variant == "gru")
                torch.set_rng_state(rng_state)
                rows.append({"layout": args.layout, "variant": variant, "seed": seed, "iterations": it + 1,
                             "steps": (it + 1) * per_iter, "test_success": float(out["success"].mean()),
                             "test_length": float(out["length"].mean()), "precision": cfg.precision,
                             "seconds": time.perf_counter() - start, "cpu_seconds": time.process_time() - cpu0})
                print(rows[-1], flush=True)
                save()

            log = ppo.train(layout, arrays, graphs, train_ids, cfg, variant, 1000 + seed, callback=evaluate)["log"]
            rows.append({"layout": args.layout, "variant": variant, "seed": seed, "iterations": -1,
                         "final_entropy": log[-1]["entropy"], "train_success": [r["success"] for r in log]})
            save()


def summarise(paths: list[str]) -> str:
    import pandas as pd

    from assets.common.claims import paired_ci

    rows = [r for path in paths for r in json.loads(Path(path).read_text())]
    df = pd.DataFrame([r for r in rows if r["iterations"] >= 0])
    out = ["| layout | variant | steps | seeds | success (mean) | random | trained − random, paired 90 % CI |",
           "|---|---|---|---|---|---|---|"]
    rnd = df[df["variant"] == "random"].set_index(["layout", "seed"])["test_success"]
    for (layout, variant, steps), g in df[df["variant"] != "random"].groupby(["layout", "variant", "steps"]):
        g = g.set_index("seed").sort_index()
        base = rnd.loc[layout].reindex(g.index)
        ci = paired_ci(g["test_success"].to_numpy(float), base.to_numpy(float), 0.90) if len(g) > 1 else None
        out.append(f"| {layout} | {variant} | {steps:,} | {len(g)} | {g['test_success'].mean():.3f} | "
                   f"{base.mean():.3f} | {ci.text(3) if ci else '—'} |")
    ent = [r for r in rows if r["iterations"] == -1]
    if ent:
        out.append("")
        out.append("final entropy: " + ", ".join(f"{r['layout']}/{r['variant']}/seed {r['seed']} "
                                                 f"{r['final_entropy']:.3f}" for r in ent))
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--layout", default="rooms2")
    ap.add_argument("--variants", nargs="+", default=["pbrs"])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--iterations", type=int, default=48)
    ap.add_argument("--at", type=int, nargs="+", default=[6, 12, 24, 48])
    ap.add_argument("--episodes", type=int, default=200)
    ap.add_argument("--precision", default=None, help="fp32 / bf16 (default: the cpu profile's)")
    ap.add_argument("--out", default="/tmp/acc_marl_budget.json")
    ap.add_argument("--summarise", nargs="+", default=None, metavar="FILE")
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    if args.summarise:
        print(summarise(args.summarise))
    else:
        run(args)


if __name__ == "__main__":
    main()
