"""The benchmarks/ scripts in two kinds, and the one function that records a performance result.

PERFORMANCE scripts time the method against a baseline measured in the same run; each calls
`record` for its headline comparison(s), which prints the ratio and writes a row to
results/bench.csv. `make bench` runs every one of them. STUDIES are ablations, budget and
learning-curve studies, diagnostics and cost profiles without a baseline: they explain a verdict
or size a budget, are run by hand (their docstrings say how) and write no bench.csv row.
The device checks (`*_device_check.py`, `_torch_parity.py`) are neither: `python -m jobs.device_check`
runs them. A new script fails tests/platform/test_bench.py until it is listed here.

    python -m benchmarks._bench --list       # the PERFORMANCE scripts, one a line
    python -m benchmarks._bench --run-all    # run each one (make bench), then say where the CSV is
"""
from __future__ import annotations

import argparse
import csv
import datetime as dt
import math
import os
import subprocess
import sys
from pathlib import Path

from jobs.run import machine  # the runs record's cores / cpu_model (no Dagster import)

ROOT = Path(__file__).resolve().parents[1]
CSV_ENV = "PAPERLAB_BENCH_CSV"
DEFAULT_CSV = ROOT / "results" / "bench.csv"
COLUMNS = ["benchmark", "metric", "unit", "method", "baseline", "ratio", "better", "git_sha", "cores", "cpu_model",
           "load_1min", "date"]

PERFORMANCE = (
    "fair_selective_bench",      # ring-buffer Δ update vs a window recount (W = 2k, 20k); SELLF vs PPO per env step
    "hir_step",                  # HiR vs GRPO-binary RL step, CPU s per step and per generated response
    "logit_distill_throughput",  # the asset's training loop vs a bare torch loop, samples/s on the same student
    "oscs_latency",              # OSCS step vs a naive refit-on-the-prefix decision at n = 1e3, 1e4, 1e5
    "pac_labels_bench",          # vectorised PAC labeling vs the straightforward loop version, same draws and answers
    "pfn_causal_cost",           # zero-shot / MSF / PWF seconds per answered query vs the oracle-graph g-formula
    "skill_recompose_latency",   # D&R retrieval vs X-ICM-like ranking, ms per query at 360 and 10k demos
    "vcot_cost",                 # lifting vs plain verification per program; judging a task vs re-verifying
    "viar_throughput",           # VIAR vs VAR-d8 training steps/s and sampling images/s (full schedule)
)

STUDIES = (
    "brew_detection",                  # cost profile of the BREW detector by stage; no baseline is timed
    "brew_length_sync",                # detector acceptance vs text length (issue 46); no timing
    "dispat_ablation",                 # self-play ablations on a finished run: why the rounds are rejected
    "dream_mpc_determinism",           # bit-for-bit retrain of a stored run: CPU kernels decide a gate
    "fair_selective_ablation",         # exact TPR gap of a run's checkpoints: unfair policy vs window noise
    "fair_selective_lr",               # learning-rate calibration on plain PPO reward
    "fair_selective_renyi_ablation",   # SELLF with the Rényi overlap term off (β2 = 0)
    "flowtracer_sft_errors",           # where the calibrated SFT checkpoints' greedy traces go wrong
    "flowtracer_sft_positional",       # SFT accuracy vs steps per positional encoding (recipe probe)
    "flowtracer_steps_vs_seeds",       # rl_gain: more GRPO steps or more seeds (issue 48)
    "lari_stop_steps",                 # why the room stop index collapses to S = 1: more training steps
    "limix_learning_curve",            # held-out AUC vs steps per variant and schedule (issue 22)
    "skill_recompose_static_ablation",  # why static coverage barely moves Level-2 success (claim 3)
    "spgcl_scaling",                   # SPGCL cost vs graph size (scaling exponent) alone; no baseline is timed
)


def ratio(method: float, baseline: float, better: str) -> float:
    """Speed-up of the method over the baseline: > 1 means the method is better.

    baseline / method when lower is better (seconds), method / baseline when higher is better
    (throughput). Both values must be positive and finite: a ratio of 0 or inf says nothing.
    """
    if better not in ("lower", "higher"):
        raise ValueError(f"better must be 'lower' or 'higher', not {better!r}")
    for name, value in (("method", method), ("baseline", baseline)):
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"{name} value must be positive and finite, got {value!r}")
    return baseline / method if better == "lower" else method / baseline


def git_sha() -> str:
    """HEAD of this checkout, or '' when git or the repository is not there."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def csv_path(path: str | Path | None = None) -> Path:
    """Where bench rows go: `path`, else $PAPERLAB_BENCH_CSV, else results/bench.csv."""
    return Path(path or os.environ.get(CSV_ENV) or DEFAULT_CSV)


def record(benchmark: str, metric: str, method: float, baseline: float, unit: str, better: str,
           path: str | Path | None = None) -> dict:
    """Print one benchmark result with its ratio and write it to the bench CSV; returns the row.

    `method` and `baseline` are the two values measured in the same run, in `unit`; `better` is
    'lower' (seconds) or 'higher' (throughput). The row replaces any row with the same
    (benchmark, metric); other rows stay; rows are sorted by (benchmark, metric).
    """
    r = ratio(float(method), float(baseline), better)
    verdict = "method better" if r > 1 else "baseline better" if r < 1 else "equal"
    shown = f"{r:.0f}" if r >= 100 else f"{r:.3g}"
    print(f"{benchmark}  {metric}  method {method:.3g} {unit}  baseline {baseline:.3g} {unit}  "
          f"ratio {shown}x ({verdict})", flush=True)
    host = machine()
    row = {"benchmark": benchmark, "metric": metric, "unit": unit, "method": float(method),
           "baseline": float(baseline), "ratio": r, "better": better, "git_sha": git_sha(), "cores": host["cores"],
           "cpu_model": host["cpu_model"], "load_1min": round(os.getloadavg()[0], 2),
           "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
    target = csv_path(path)
    rows = []
    if target.exists():
        with target.open(newline="", encoding="utf-8") as f:
            rows = [old for old in csv.DictReader(f) if (old["benchmark"], old["metric"]) != (benchmark, metric)]
    rows.append(row)
    rows.sort(key=lambda x: (x["benchmark"], x["metric"]))
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    with tmp.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    os.replace(tmp, target)
    return row


def run_all(names: tuple[str, ...] = PERFORMANCE) -> int:
    """Run each performance script at its defaults, one after another; 1 when any of them failed."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    failed = []
    for name in names:
        print(f"\n=== benchmarks/{name}.py ===", flush=True)
        if subprocess.run([sys.executable, "-m", f"benchmarks.{name}"], cwd=ROOT, env=env).returncode != 0:
            failed.append(name)
    print(f"\nbench rows: {csv_path().resolve()}")
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--list", action="store_true", help="print the PERFORMANCE scripts, one a line")
    group.add_argument("--run-all", action="store_true", help="run every PERFORMANCE script (make bench)")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(PERFORMANCE))
        return 0
    return run_all()


if __name__ == "__main__":
    sys.exit(main())
