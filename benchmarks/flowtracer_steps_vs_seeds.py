"""FlowTracer rl_gain at the cpu profile: more GRPO steps or more seeds? (issue 48)

rl_gain is flowtracer − uniform held-out accuracy AUC, its 90 % CI the report's paired
hierarchical bootstrap (seeds, then prompts; `benchmark.hierarchical_bootstrap`, n_boot and the
bootstrap seed as in the report). This script runs the pipeline's own job functions
(`runs.sft_job`, `runs.flow_job`, `runs.grpo_job`) at the cpu profile's sizes for SFT seeds
0 … S−1 and the two compared methods only, with `--factor` × the profile's GRPO steps:

- SFT: a seed whose checkpoint is in `--stored` (a cpu run's data directory, read only) is
  reused from there (md5-checked); the others are calibrated here with the pipeline's rule, all
  at once, one process each (as `sft_steps` does).
- GRPO: flowtracer and uniform × every seed at factor × grpo.steps, the pipeline's seeds. GRPO
  has no schedule in the step count, so the first grpo.steps steps of a longer run are the
  profile's run: its evaluations at steps 0 … grpo.steps are the 1× arm (checked bit for bit
  against `--stored`'s evals for the stored seeds).
- Arms: S' seeds (every subset of S' of the S seeds) × horizon H (AUC over evaluation steps
  0 … H): CI half-width, how often the CI excludes 0, and the between-seed / within-seed parts
  of the variance of the mean difference.
- Masking at S seeds: the masking criterion's two gaps (`benchmark.masking_gaps`) on every
  subset of 3 seeds and on all S, from `flow_job` on each checkpoint.
- Cost: CPU seconds of every job (process time, one thread each), for the projection of the
  cpu profile's wall time (`project`).

    PYTHONPATH=. nice -n 10 .venv/bin/python benchmarks/flowtracer_steps_vs_seeds.py \
        --stored /tmp/repro/data --seeds 5 --factor 2 --out data/benchmarks/flowtracer_steps_vs_seeds
"""
from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pandas as pd

from assets.common.bootstrap import hierarchical_bootstrap
from assets.common.params import parse
from assets.flowtracer import benchmark as B
from assets.flowtracer import runs as R
from assets.flowtracer.params import FlowtracerParams
from resources.compute import stable_seed
from resources.profiles import load_params

SLUG = "flowtracer"
COMPARED = ("flowtracer", "uniform")


def seed_for(*keys) -> int:
    """ComputeResource.seed_for at base_seed 0 (the pipeline's)."""
    return int(stable_seed(0, SLUG, *keys).generate_state(1)[0] & 0x7FFFFFFF)


def timed(job: dict) -> dict:
    """Run job["fn"] (sft, flow or grpo) and add its CPU seconds (process time) and wall seconds."""
    fn = {"sft": R.sft_job, "flow": R.flow_job, "grpo": R.grpo_job}[job["fn"]]
    cpu, wall = time.process_time(), time.perf_counter()
    out = fn({k: v for k, v in job.items() if k != "fn"})
    return {**out, "cpu_s": time.process_time() - cpu, "wall_s": time.perf_counter() - wall}


def run_pool(jobs: list[dict], workers: int, costs: list[float] | None = None) -> list[dict]:
    from assets.common.parallel import longest_first

    costs = costs or [1.0] * len(jobs)
    out: list[dict | None] = [None] * len(jobs)
    for i, result in longest_first(timed, jobs, workers, costs):
        out[i] = result
    return out


# ----------------------------------------------------------------------------- arms

def auc_matrices(evals: pd.DataFrame, horizon: int, seeds: list[int]) -> np.ndarray:
    """flowtracer − uniform AUC per (seed, prompt), over the evaluation steps 0 … horizon."""
    part = evals[(evals["step"] <= horizon) & evals["seed"].isin(seeds)]
    auc = B.accuracy_auc(part)
    return B._auc_matrix(auc, "flowtracer") - B._auc_matrix(auc, "uniform")


def arm(diff: np.ndarray, n_boot: int, seed: int) -> dict:
    ci = hierarchical_bootstrap(diff, n_boot, seed, B.LEVEL)
    per_seed = diff.mean(axis=1)
    s, p = diff.shape
    between = float(np.var(per_seed, ddof=1)) if s > 1 else float("nan")
    within = float(np.mean(np.var(diff, axis=1, ddof=1)) / p)     # prompt noise of one seed's mean
    return {"mean": ci.mean, "low": ci.low, "high": ci.high, "half_width": (ci.high - ci.low) / 2,
            "excludes_0": bool(ci.low > 0 or ci.high < 0), "per_seed": [round(float(x), 4) for x in per_seed],
            # var of the S-seed mean ≈ between / S (it contains the within part once)
            "sd_between_seeds": between ** 0.5, "se_within_seed": within ** 0.5}


def arms_table(evals: pd.DataFrame, seeds: list[int], horizons: list[int], sizes: list[int], n_boot: int,
               boot_seed: int) -> list[dict]:
    rows = []
    for h in horizons:
        for k in sizes:
            for subset in itertools.combinations(seeds, k):
                a = arm(auc_matrices(evals, h, list(subset)), n_boot, boot_seed)
                rows.append({"horizon": h, "n_seeds": k, "subset": list(subset), **a})
    return rows


def summary(rows: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    return frame.groupby(["n_seeds", "horizon"]).agg(
        subsets=("mean", "size"), mean=("mean", "mean"), half_width_median=("half_width", "median"),
        half_width_min=("half_width", "min"), half_width_max=("half_width", "max"),
        excludes_0=("excludes_0", "mean"), sd_between=("sd_between_seeds", "median"),
        se_within=("se_within_seed", "median")).reset_index()


# ----------------------------------------------------------------------------- projection

def shared_cores(demands: list[float], cores: int = 2) -> float:
    """Wall time of single-thread jobs of these CPU demands started at once on `cores` cores
    (processor sharing: each running job gets min(1, cores / running) of a core)."""
    left, t = sorted(float(d) for d in demands), 0.0
    while left:
        rate = min(1.0, cores / len(left))
        dt = left[0] / rate
        t += dt
        left = [d - dt * rate for d in left[1:]]
    return t


def list_schedule(durations: list[float], workers: int = 2) -> float:
    """Wall time of jobs handed longest first to `workers` processes (assets.common.parallel)."""
    free = [0.0] * workers
    for d in sorted(durations, reverse=True):
        i = int(np.argmin(free))
        free[i] += d
    return max(free)


# The stored cold cpu run (0abad2e6, 3 seeds × 40 steps, 553 s, AMD EPYC, alone: 977 CPU-s), its
# Dagster step times: outside the job, the dataset, the gates and the glue between steps (fixed);
# the report (∝ seeds, an upper bound); flow_annotations (3 seeds on 2 workers, two rounds).
FIXED_S, REPORT_S, FLOW_ROUND_S = 31.8, 12.6, 27.5 / 2


def sft_cpu_model(steps: list[int], seconds: list[float], warmup: int) -> tuple[float, float]:
    """CPU seconds per warm-up step and per later step (snapshots included), fitted by least
    squares to single-thread seeds that ran at once on 2 cores: their CPU demands are recovered
    from the wall times under processor sharing (the i-th to finish ran at 2 / running)."""
    order = np.argsort(seconds)
    cpu, prev, t = [0.0] * len(steps), 0.0, 0.0
    for rank, i in enumerate(order):
        running = len(steps) - rank
        t += min(1.0, 2 / running) * (seconds[i] - prev)
        prev, cpu[i] = seconds[i], t
    x = np.array([[min(n, warmup), max(n - warmup, 0)] for n in steps], float)
    a, b = np.linalg.lstsq(x, np.array(cpu), rcond=None)[0]
    return float(a), float(b)


def projection(stored: Path, sft_steps: dict[int, int], n_seeds: int, factor: float, warmup: int) -> dict:
    """The cpu profile's wall time alone on 2 cores at n_seeds (0 … n−1) × factor × the GRPO steps,
    phase by phase, scaled from the stored run (each phase's simulated 3-seed time matched to its
    measured one)."""
    timings = stored / "runs" / SLUG / "timings"
    sft = pd.read_parquet(timings / "sft_steps.parquet").sort_values("seed")
    grpo = pd.read_parquet(timings / "grpo_runs.parquet")
    a, b = sft_cpu_model([sft_steps[s] for s in sft["seed"]], list(sft["seconds"]), warmup)
    demand = [a * min(sft_steps[s], warmup) + b * max(sft_steps[s] - warmup, 0) for s in range(n_seeds)]
    sft_s = shared_cores(demand) * float(sft["seconds"].max()) / shared_cores(demand[:3])
    runs = list(grpo["seconds"]) + [v for v in grpo.groupby("method")["seconds"].mean()
                                    for _ in range(n_seeds - grpo["seed"].nunique())]
    grpo_s = list_schedule([factor * d for d in runs])      # a run's evaluations scale like its steps (±1 s)
    phases = {"fixed": FIXED_S, "sft": sft_s, "flow": FLOW_ROUND_S * -(-n_seeds // 2), "grpo": grpo_s,
              "report": REPORT_S * n_seeds / 3}
    return {"seeds": n_seeds, "factor": factor, "sft_cpu_per_step": [a, b], **phases,
            "total_s": sum(phases.values())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stored", default="", help="a cpu run's data directory (read only), e.g. /tmp/repro/data")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--factor", type=int, default=2, help="GRPO steps = factor × the profile's")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default="data/benchmarks/flowtracer_steps_vs_seeds")
    parser.add_argument("--project-only", action="store_true", help="print the projection from --out's report.json")
    args = parser.parse_args()
    if args.project_only:
        print_projection(json.loads((Path(args.out) / "report.json").read_text()), Path(args.stored))
        return

    out = Path(args.out).resolve()
    (out / SLUG / "checkpoints").mkdir(parents=True, exist_ok=True)
    os.environ["PAPERLAB_DATA_DIR"] = str(out)          # checkpoints are data-root-relative; workers inherit it
    p = parse(FlowtracerParams, load_params(SLUG, "cpu"), "flowtracer.cpu")
    base_steps = p.grpo.steps
    long = dataclasses.replace(p, grpo=dataclasses.replace(p.grpo, steps=args.factor * base_steps))
    seeds = list(range(args.seeds))
    stored = Path(args.stored) if args.stored else None
    frame = R.dataset(p, np.random.default_rng(stable_seed(0, SLUG, p.data.task)))
    report: dict = {"seeds": seeds, "factor": args.factor, "grpo_steps": base_steps}
    if stored:
        same = frame.equals(pd.read_parquet(stored / SLUG / "trace_dataset.parquet"))
        report["dataset_equals_stored"] = bool(same)
        print(f"dataset equals the stored trace_dataset: {same}", flush=True)
    provenance = {"profile": "cpu", "params_hash": "benchmark"}
    t0 = time.perf_counter()

    # --- SFT: reuse the stored checkpoints, calibrate the others here (all at once)
    stored_sft = {}
    if stored and (stored / SLUG / "sft_steps.json").exists():
        stored_sft = {s["seed"]: s for s in json.loads((stored / SLUG / "sft_steps.json").read_text())["seeds"]}
    train, val = R.split(frame, "train").to_dict("records"), R.split(frame, "val").to_dict("records")
    test = R.split(frame, "test")[["prompt", "answer"]].to_dict("records")
    sft: dict[int, dict] = {}
    to_train = []
    for s in seeds:
        if s in stored_sft:
            src = stored / stored_sft[s]["checkpoint"]
            for suffix in ("", ".json"):
                shutil.copyfile(f"{src}{suffix}", out / f"{stored_sft[s]['checkpoint']}{suffix}")
            sft[s] = {**stored_sft[s], "source": "stored"}
        else:
            to_train.append({"fn": "sft", "params": p, "seed": seed_for("sft", s), "seed_index": s,
                             "threads": p.threads, "train": train, "val": val, "test": test,
                             "path": str(out / SLUG / "checkpoints" / f"sft_seed{s}.pt"), "provenance": provenance})
    if to_train:
        from assets.common.parallel import spawn_imap
        print(f"SFT: calibrating seeds {[j['seed_index'] for j in to_train]} at once", flush=True)
        for job, res in zip(to_train, spawn_imap(timed, to_train, len(to_train))):
            low, high = p.sft.band
            sft[job["seed_index"]] = {
                "seed": job["seed_index"], "sft_seed": res["seed"], "steps": res["steps"],
                "checkpoint": res["checkpoint"], "md5": res["md5"], "test_accuracy": res["test_accuracy"],
                "in_band": bool(res["curve"]) and low <= res["curve"][-1]["val_accuracy"] <= high,
                "val_accuracy": res["curve"][-1]["val_accuracy"], "cpu_s": res["cpu_s"], "wall_s": res["wall_s"],
                "source": "trained"}
            print(f"  SFT seed {job['seed_index']}: {res['steps']} steps, test accuracy {res['test_accuracy']:.3f}, "
                  f"{res['cpu_s']:.0f} CPU-s, {res['wall_s']:.0f} s", flush=True)
    report["sft"] = [{k: v for k, v in sft[s].items() if k != "curve"} for s in seeds]
    report["wall_sft_s"] = time.perf_counter() - t0

    # --- flow analysis (masking) on every checkpoint, all layer bands as the pipeline does
    t1 = time.perf_counter()
    problems = R.split(frame, "test").head(p.analysis.prompts).to_dict("records")
    flow_jobs = [{"fn": "flow", "params": p, "seed": int(sft[s]["sft_seed"]), "seed_index": s, "threads": p.threads,
                  "checkpoint": {"checkpoint": sft[s]["checkpoint"], "md5": sft[s]["md5"]}, "problems": problems}
                 for s in seeds]
    flows = run_pool(flow_jobs, args.workers)
    masking = pd.concat([pd.DataFrame(f["masking"]).assign(seed=f["seed"]) for f in flows], ignore_index=True)
    masking.to_parquet(out / "masking.parquet")
    report["flow_cpu_s"] = {int(f["seed"]): f["cpu_s"] for f in flows}
    report["wall_flow_s"] = time.perf_counter() - t1
    print(f"flow analysis: {report['flow_cpu_s']} CPU-s", flush=True)

    # --- GRPO: flowtracer and uniform × seeds at factor × steps
    t2 = time.perf_counter()
    rl = R.split(frame, "rl")[["prompt", "answer"]].to_dict("records")
    held = R.split(frame, "rl_eval")[["prompt", "answer"]].to_dict("records")
    specs = [s for s in R.grpo_run_specs(long) if s["method"] in COMPARED]
    grpo_jobs = [{"fn": "grpo", "params": long, **spec, "seed": seed_for("grpo", s), "seed_index": s,
                  "threads": p.threads, "checkpoint": {"checkpoint": sft[s]["checkpoint"], "md5": sft[s]["md5"]},
                  "rl": rl, "rl_eval": held, "provenance": provenance,
                  "path": str(out / SLUG / "checkpoints" / f"grpo_{spec['method']}_seed{s}.pt")}
                 for s in seeds for spec in specs]
    costs = [1.2 if j["rule"] == "flowtracer" else 1.0 for j in grpo_jobs]
    results = run_pool(grpo_jobs, args.workers, costs)
    evals = pd.DataFrame([e for r in results for e in r["evals"]])
    evals.to_parquet(out / "evals.parquet")
    report["grpo_cpu_s"] = [{"method": r["method"], "seed": r["seed"], "cpu_s": r["cpu_s"], "wall_s": r["wall_s"]}
                            for r in results]
    report["wall_grpo_s"] = time.perf_counter() - t2
    steps = pd.DataFrame([s for r in results for s in r["steps"]])
    # the share of a run's time up to step grpo.steps (its evaluations included)
    per_step = steps.groupby(["method", "seed"])["seconds_step"].sum()
    report["grpo_step_s_sum"] = {f"{m}/{s}": float(v) for (m, s), v in per_step.items()}
    print(f"GRPO: {len(results)} runs of {long.grpo.steps} steps, {report['wall_grpo_s']:.0f} s", flush=True)

    # --- check: the 1× prefix is the stored run's
    if stored and (stored / SLUG / "grpo" / "evals.parquet").exists():
        old = pd.read_parquet(stored / SLUG / "grpo" / "evals.parquet")
        old = old[old["method"].isin(COMPARED)]
        key = ["method", "seed", "step", "prompt"]
        mine = evals[(evals["step"] <= base_steps) & evals["seed"].isin(old["seed"].unique())]
        merged = mine.merge(old, on=key, suffixes=("", "_stored"))
        report["prefix_rows"] = len(merged)
        report["prefix_equal"] = bool(len(merged) == len(old) and (merged["reward"] == merged["reward_stored"]).all())
        print(f"1× prefix equals the stored evals: {report['prefix_equal']} ({len(merged)} rows)", flush=True)

    # --- arms
    boot_seed = 0 + 200            # the report's rl_claim seed at base_seed 0
    horizons = [h for h in range(base_steps, long.grpo.steps + 1, p.grpo.eval_every)]
    sizes = sorted({3, len(seeds)} | set(range(3, len(seeds) + 1)))
    rows = arms_table(evals, seeds, horizons, sizes, p.bootstrap, boot_seed)
    report["arms"] = rows
    table = summary(rows)
    print("\nrl_gain (flowtracer − uniform accuracy AUC), by seeds × horizon (every subset of the seeds):")
    print(table.to_string(index=False, float_format=lambda x: f"{x:.4f}"))

    # --- masking at 3 vs all seeds
    band = B.A.band_name(p.flow.layers)
    mrows = []
    for k in sorted({3, len(seeds)}):
        for subset in itertools.combinations(seeds, k):
            part = masking[masking["seed"].isin(subset)]
            tr, rb, judgement = B.masking_gaps(part, p.bootstrap, 0, band)
            mrows.append({"n_seeds": k, "subset": list(subset), "top_random": [tr.mean, tr.low, tr.high],
                          "random_bottom": [rb.mean, rb.low, rb.high], "verdict": judgement.outcome})
    report["masking"] = mrows
    print("\nmasking gaps (layers 1-2) by seed subset:")
    for r in mrows:
        print(f"  {r['subset']}: top − random {r['top_random'][0]:+.3f} [{r['top_random'][1]:+.3f}, "
              f"{r['top_random'][2]:+.3f}], random − bottom {r['random_bottom'][0]:+.3f} "
              f"[{r['random_bottom'][1]:+.3f}, {r['random_bottom'][2]:+.3f}] → {r['verdict']}")
    report["wall_total_s"] = time.perf_counter() - t0
    (out / "report.json").write_text(json.dumps(report, indent=1, default=str))
    if stored:
        print_projection(report, stored)
    print(f"\nwall {report['wall_total_s']:.0f} s; {out / 'report.json'}")


def print_projection(report: dict, stored: Path) -> None:
    p = parse(FlowtracerParams, load_params(SLUG, "cpu"), "flowtracer.cpu")
    steps = {int(s["seed"]): int(s["steps"]) for s in report["sft"]}
    print("\nprojected cpu profile wall time alone on 2 cores (s), by seeds × GRPO steps:")
    for n in range(3, len(steps) + 1):
        for factor in (1.0, 1.5, 2.0):
            r = projection(stored, steps, n, factor, p.sft.curriculum)
            print(f"  {n} seeds × {factor * p.grpo.steps:.0f} steps: " + ", ".join(
                f"{k} {r[k]:.0f}" for k in ("fixed", "sft", "flow", "grpo", "report"))
                  + f" → {r['total_s']:.0f} s = {r['total_s'] / 60:.1f} min")


if __name__ == "__main__":
    main()
