"""Per-decision latency of OSCSController.step vs a naive refit-on-the-whole-prefix rule.

For each stream length n in (1e3, 1e4, 1e5):

- OSCS: feed n - k scores to a fresh controller, then time the next k single ``step`` calls
  (k = 200) with ``perf_counter_ns``; report the median, then the median over repeats. The
  recursive KDE keeps the per-step cost O(grid) whatever n is.
- naive: one decision at prefix length n that refits everything from scratch: a Gaussian KDE
  of all n past scores (Silverman bandwidth) evaluated at S_t, and Storey's pi0 from all n
  past conformal p-values. A single decision is cheap to measure directly even at n = 1e5
  (O(n) work), so nothing is extrapolated per decision; the *whole-stream* cost of the naive
  rule (sum over t <= n, ~ n/2 times the cost at n since it is linear in t) is extrapolated
  and labelled as such.

Each length's per-decision pair is a row of results/bench.csv (benchmarks/_bench.py).

Usage: python benchmarks/oscs_latency.py [--out data/reports/oscs/latency.json] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from assets.oscs.method import (  # noqa: E402
    OSCSConfig,
    OSCSController,
    conformal_p_values,
    gaussian_kde,
    gaussian_stream,
    silverman_bandwidth,
)
from benchmarks._bench import record  # noqa: E402

STREAM_LENGTHS = (1_000, 10_000, 100_000)
TIMED_STEPS = 200


def oscs_step_latency_seconds(scores: np.ndarray, calib: np.ndarray, n: int) -> float:
    """Median seconds of one ``step`` at stream positions n-k+1..n."""
    controller = OSCSController(calib, OSCSConfig(alpha=0.1))
    for score in scores[: n - TIMED_STEPS].tolist():
        controller.step(score)
    timings = []
    for score in scores[n - TIMED_STEPS : n].tolist():
        start = time.perf_counter_ns()
        controller.step(score)
        timings.append(time.perf_counter_ns() - start)
    return float(np.median(timings)) * 1e-9


def naive_decision_latency_seconds(scores: np.ndarray, calib: np.ndarray, n: int, trials: int = 5) -> float:
    """Median seconds of one decision that refits the densities on all n past scores."""
    prefix, current = scores[:n], float(scores[n])
    benign_bandwidth = silverman_bandwidth(calib)
    timings = []
    for _ in range(trials):
        start = time.perf_counter_ns()
        mixture = gaussian_kde(np.array([current]), prefix, silverman_bandwidth(prefix))[0]
        benign = gaussian_kde(np.array([current]), calib, benign_bandwidth)[0]
        p_values = conformal_p_values(prefix, calib)
        pi0 = min(1.0, (1.0 + np.sum(p_values > 0.5)) / (0.5 * n))
        _m_hat = 1.0 - min(1.0, pi0 * benign / max(mixture, 1e-6))
        timings.append(time.perf_counter_ns() - start)
    return float(np.median(timings)) * 1e-9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="data/reports/oscs/latency.json")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    scores, _, calib = gaussian_stream(mu=3.0, pi1=0.2, T=max(STREAM_LENGTHS) + 1, m=500, seed=0)
    rows = []
    for n in STREAM_LENGTHS:
        oscs = float(np.median([oscs_step_latency_seconds(scores, calib, n) for _ in range(args.repeats)]))
        naive = float(np.median([naive_decision_latency_seconds(scores, calib, n) for _ in range(args.repeats)]))
        rows.append(
            {
                "stream_length": n,
                "oscs_step_seconds": oscs,
                "naive_decision_seconds": naive,
                "speedup": naive / oscs,
                "oscs_whole_stream_seconds_extrapolated": oscs * n,
                "naive_whole_stream_seconds_extrapolated": naive * n / 2.0,
            }
        )

    print("| stream length | OSCS step (µs) | naive refit decision (µs) | speed-up | whole stream OSCS (s)* "
          "| whole stream naive (s)* |")
    print("|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row['stream_length']:,} | {row['oscs_step_seconds'] * 1e6:.1f} "
            f"| {row['naive_decision_seconds'] * 1e6:.1f} "
            f"| {row['speedup']:.1f}× | {row['oscs_whole_stream_seconds_extrapolated']:.2f} "
            f"| {row['naive_whole_stream_seconds_extrapolated']:.2f} |"
        )
    print(
        "\n*Per-decision costs are measured at each length (median of the last 200 steps for OSCS, "
        "median of 5 single refits for naive; median over repeats). Whole-stream columns are "
        "extrapolated: OSCS = n × step (cost is flat in t), naive = n/2 × decision at n (cost linear in t)."
    )

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "rows": rows,
        "timed_steps": TIMED_STEPS,
        "repeats": args.repeats,
        "grid_size": OSCSConfig().grid_size,
        "machine": {"python": platform.python_version(), "processor": platform.processor(), "numpy": np.__version__},
        "note": "whole-stream columns are extrapolated from per-decision timings",
    }
    out.write_text(json.dumps(payload, indent=2))
    print(f"\nwrote {out}\n")
    for row in rows:
        record("oscs_latency", f"per_decision_s@n={row['stream_length']}", row["oscs_step_seconds"],
               row["naive_decision_seconds"], "s", "lower")


if __name__ == "__main__":
    main()
