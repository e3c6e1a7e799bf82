"""D&R query latency vs X-ICM-like ranking at 360 and 10 000 demos (not a test; `make bench`).

A library of scripted seen demos (ground-truth verbs as labels, random scene features) is tiled to each size;
one query's dual-library retrieval (dynamic scores + IDF + greedy coverage) is timed against X-ICM-like's
visual + instruction ranking. Writes data/reports/skill_recompose_latency.md; each size's ms/query
(D&R vs X-ICM-like) is a row of results/bench.csv (benchmarks/_bench.py).
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from assets.skill_recompose import method as M
from assets.skill_recompose.tasks import SEEN, UNSEEN
from benchmarks._bench import record


def main(sizes=(360, 10_000), queries: int = 50) -> str:
    rng = np.random.default_rng(0)
    base = [list(t.verbs) for t in SEEN for _ in range(20)]
    hp = M.HParams(0.5, 0.5, 1.0, 0.1, 4, 4)
    measured = []
    lines = ["| demos | D&R ms/query | X-ICM-like ms/query | ratio |", "|---|---|---|---|"]
    for size in sizes:
        verbs = (base * (-(-size // len(base))))[:size]
        vis, instr = rng.normal(size=(size, 64)), rng.normal(size=(size, 384))
        toks = [M.tokens(v) for v in verbs]
        w = M.idf_weights(toks, hp.beta)
        times = {}
        for name in ("dnr", "xicm"):
            t0 = time.perf_counter()
            for q in range(queries):
                plan = list(UNSEEN[q % len(UNSEEN)].verbs)
                M.retrieve(name, plan, vis @ vis[q], instr @ instr[q], verbs, hp, np.random.default_rng(q), w, toks)
            times[name] = 1000 * (time.perf_counter() - t0) / queries
        measured.append((size, times))
        lines.append(f"| {size} | {times['dnr']:.2f} | {times['xicm']:.3f} | {times['dnr'] / times['xicm']:.0f} |")
    text = "\n".join(lines)
    out = Path("data/reports/skill_recompose_latency.md")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text + "\n")
    for size, times in measured:
        record("skill_recompose_latency", f"ms_per_query@demos={size}", times["dnr"], times["xicm"], "ms", "lower")
    return text


if __name__ == "__main__":
    print(main())
