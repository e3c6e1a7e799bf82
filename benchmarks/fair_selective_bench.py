"""fair_selective performance, as ratios measured in one run:

1. the window Δ update per decision: ring buffer with running sums (O(1)) vs a recount of the last
   W decisions (O(W)), at W = 2 000 and 20 000, asserting the same Δ values;
2. SELLF vs PPO training cost per env step (same env, seed and steps), after one warm-up
   iteration of each (the first training in a process pays torch's one-off costs).

    .venv/bin/python -m benchmarks.fair_selective_bench [--steps 20480]
Writes data/reports/fair_selective_bench.md; the three pairs are rows of results/bench.csv
(benchmarks/_bench.py).
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from assets.fair_selective import agents as ag
from assets.fair_selective import env as envs
from assets.fair_selective import fairness as fm
from benchmarks._bench import record


def window_ratio(size: int, decisions: int = 2000, seed: int = 0) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    n = size + decisions
    g, a, y = rng.integers(0, 2, n), rng.integers(0, 2, n), rng.integers(0, 2, n)
    yt = np.where(a == 1, y, rng.integers(0, 2, n))
    win = fm.RingWindow(size)
    win.fill(g[:size], a[:size], y[:size], yt[:size])
    ring, start = [], time.perf_counter()
    for t in range(size, n):
        win.push(int(g[t]), int(a[t]), int(y[t]), float(yt[t]))
        ring.append(fm.delta_scalar(win.sums.tolist(), "tpr", "imputation"))
    t_ring = time.perf_counter() - start
    recount, start = [], time.perf_counter()
    for t in range(size, n):
        recount.append(fm.delta(fm.recount_window(g, a, y, yt, t, size), "tpr", "imputation"))
    t_recount = time.perf_counter() - start
    assert np.allclose(ring, recount, atol=1e-12), "ring buffer and recount disagree"
    return t_ring / decisions * 1e6, t_recount / decisions * 1e6


def training_cost(kind: str, steps: int) -> float:
    spec = envs.lending_spec()
    pool = envs.sample_pool(spec, 2000, np.random.default_rng(0))
    cfg = ag.AgentConfig(kind=kind, beta1=2.0, beta2=0.05 if kind == "sellf" else 0.0, lr=3e-4, total_steps=steps)
    start = time.perf_counter()
    ag.train_agent(spec, pool, cfg, 0, 2000, 2000, 1000.0)
    return (time.perf_counter() - start) / steps * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20480)
    args = parser.parse_args()
    measured = []
    lines = ["# fair_selective performance", "", "| measurement | µs | ratio |", "|---|---|---|"]
    for size in (2000, 20000):
        ring, recount = window_ratio(size)
        measured.append((f"us_per_decision@delta_update_W={size}", ring, recount))
        lines.append(f"| Δ update W={size}: ring / recount | {ring:.1f} / {recount:.1f} | {recount / ring:.0f}× |")
    for kind in ("ppo", "sellf"):     # warm-up: torch's first-use costs (~1.5 ms per step at 2048 steps) hit
        training_cost(kind, 2048)     # whichever kind runs first; one iteration (n_steps) of each
    ppo, sellf = training_cost("ppo", args.steps), training_cost("sellf", args.steps)
    measured.append(("us_per_env_step@training_sellf_vs_ppo", sellf, ppo))
    lines.append(f"| training per env step: SELLF / PPO | {sellf:.0f} / {ppo:.0f} | {sellf / ppo:.2f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    out = Path("data/reports/fair_selective_bench.md")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    for metric, method, baseline in measured:
        record("fair_selective_bench", metric, method, baseline, "us", "lower")


if __name__ == "__main__":
    main()
