"""Ablation of SELLF's Rényi overlap term: retrain SELLF (cpu profile, selected β1) with β2 = 0 on
the same pools, env seeds and training seeds as the cpu run, and compare its last training
iteration (acceptance rate, true and observed |Δ|, last episode's resource) with β2 = 0.05.

    .venv/bin/python -m benchmarks.fair_selective_renyi_ablation [--seeds 0] [--workers 2]
"""
from __future__ import annotations

import argparse
import dataclasses

from assets.common.parallel import spawn_imap
from assets.common.params import parse
from assets.fair_selective import runs
from assets.fair_selective.params import FairSelectiveParams
from resources.compute import ComputeResource
from resources.profiles import load_params

SELECTED_BETA1 = {"lending": 2.0, "hiring": 10.0}      # the cpu run's selected_config


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    p = parse(FairSelectiveParams, load_params("fair_selective", "cpu"), "fair_selective.cpu")
    compute = ComputeResource(profile="cpu")
    table = runs.env_spec_table(p)
    pools = runs.applicant_pools(p, table, lambda *k: compute.rng("fair_selective", *k))
    jobs = [j for j in runs.training_jobs(p, table, pools, lambda *k: compute.seed_for("fair_selective", *k))
            if j["kind"] == "sellf" and j["beta1"] == SELECTED_BETA1[j["env"]] and j["seed"] in args.seeds]
    for j in jobs:
        j["cfg"] = dataclasses.replace(j["cfg"], beta2=0.0)
    print("| env | seed | β2 | accept rate | true |Δ| | observed |Δ| | last resource |")
    print("|---|---|---|---|---|---|---|")
    for job, out in zip(jobs, spawn_imap(runs.train_job, jobs, args.workers)):
        last = out["curve"][-1]
        print(f"| {job['env']} | {job['seed']} | 0 | {last['accept_rate']:.3f} | {last['delta_true']:.3f} | "
              f"{last['delta_obs']:.3f} | {last['last_resource']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
