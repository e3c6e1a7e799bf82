"""PAC labeling of 10^4 and 10^5 items: our implementation vs a straightforward one.

Both get the same inputs (a generated 5-class pool whose AI errors grow as confidence drops,
ε = α = 0.05, WSR bound on the authors' 1e5-point grid, K = n / 10 draws as in the ImageNet
notebook) and the same random draws, and must return the same threshold û and the same labels
(asserted). The straightforward version (assets/pac_labels/straightforward.py) is written the
way the reference code is: Python loops over the draws and items, the per-threshold loss
vector rebuilt from scratch, and the WSR bound found by scanning the grid upward from its low
end, recomputing the capital process at every grid value (O(K · G) per threshold). Ours
vectorises the draws and finds the first rejected grid value by bisection (O(K log G)),
which is exact because the betting capital is non-decreasing in the candidate mean. Each size's
median seconds (ours vs straightforward) is a row of results/bench.csv (benchmarks/_bench.py).

Usage: python benchmarks/pac_labels_bench.py [--sizes 10000 100000] [--repeats 3]
       [--out data/reports/pac_labels/bench.json]
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

from assets.pac_labels import method as M  # noqa: E402
from assets.pac_labels.straightforward import pac_labeling_straightforward  # noqa: E402
from benchmarks._bench import record  # noqa: E402


def make_pool(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(y, yhat, confidence): 5 classes, confidence ~ U(0.5, 1), P(wrong) = 1.2 (1 − conf)."""
    rng = np.random.default_rng(seed)
    conf = rng.uniform(0.5, 1.0, n)
    y = rng.integers(0, 5, n).astype(float)
    wrong = rng.random(n) < 1.2 * (1 - conf)
    return y, np.where(wrong, (y + 1) % 5, y), conf


def time_once(fn) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def bench(n: int, repeats: int, grid: int) -> dict:
    y, yhat, conf = make_pool(n)
    u = M.uncertainty_from_confidence(conf)
    config = M.PACConfig(epsilon=0.05, alpha=0.05, num_draws=n // 10, ci="wsr", wsr_grid_size=grid)
    ours_t, ref_t = [], []
    for r in range(repeats):
        t_ours, fast = time_once(lambda r=r: M.pac_labeling(yhat, u, M.ExpertOracle(y), config,
                                                            np.random.default_rng(r)))
        t_ref, (labels, expert, u_hat) = time_once(
            lambda r=r: pac_labeling_straightforward(yhat, u, y, config, np.random.default_rng(r)))
        assert fast.calibration.u_hat == u_hat, (fast.calibration.u_hat, u_hat)
        assert np.array_equal(fast.labels, labels) and np.array_equal(fast.provenance > 0, expert)
        ours_t.append(t_ours)
        ref_t.append(t_ref)
    return {"n": n, "num_draws": n // 10, "grid": grid, "repeats": repeats,
            "ours_median_s": float(np.median(ours_t)), "straightforward_median_s": float(np.median(ref_t)),
            "speedup": float(np.median(ref_t) / np.median(ours_t)), "same_answers": True,
            "saved_fraction": float(1 - np.mean(fast.provenance > 0))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--grid", type=int, default=100_000)
    parser.add_argument("--out", type=Path, default=Path("data/reports/pac_labels/bench.json"))
    args = parser.parse_args()
    rows = []
    for n in args.sizes:
        row = bench(n, args.repeats, args.grid)
        rows.append(row)
        print(f"n={n:>7} K={row['num_draws']:>6}: ours {row['ours_median_s'] * 1e3:9.1f} ms | straightforward "
              f"{row['straightforward_median_s'] * 1e3:10.1f} ms | ×{row['speedup']:.0f} | same answers")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"results": rows, "python": platform.python_version(),
                                    "machine": platform.machine()}, indent=1) + "\n")
    print(f"wrote {args.out}")
    for row in rows:
        record("pac_labels_bench", f"seconds@n={row['n']}", row["ours_median_s"], row["straightforward_median_s"],
               "s", "lower")


if __name__ == "__main__":
    main()
