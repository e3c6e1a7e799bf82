"""Every counted ts_layers claim judged from constructed measurements by the one verdict rule."""
from types import SimpleNamespace

import numpy as np
import pandas as pd

from assets.ts_layers import benchmark as bm

P = SimpleNamespace(depths=[4, 8, 16], seeds=[0, 1, 2])
TASKS = ["a", "b", "c", "d", "e"]


def _ev(winning_series=5, noise=0.01):
    """L = 16 has MSE 1.0; L = 8 beats it by 0.2 on the first `winning_series` series (every seed)."""
    rng = np.random.default_rng(0)
    rows = []
    for depth in P.depths:
        for s in P.seeds:
            for i, task in enumerate(TASKS):
                base = 1.0 if depth == 16 else (0.8 if (depth == 8 and i < winning_series) else 1.3)
                for start in range(20):
                    rows.append({"family": "tsfm", "depth": depth, "seed": s, "method": "full", "task": task,
                                 "channel": 0, "start": start, "mse": base + noise * rng.standard_normal()})
    return pd.DataFrame(rows)


def _ckpts(deep_loss=1.0):
    return pd.DataFrame({"family": "tsfm", "depth": P.depths, "synthetic_val_loss": [1.2, 1.05, deep_loss]})


def test_scaling_paradox():
    assert bm.scaling_paradox(_ev(5), _ckpts(), P)[0].verdict == "holds"
    assert bm.scaling_paradox(_ev(0), _ckpts(), P)[0].verdict == "refuted"
    assert bm.scaling_paradox(_ev(1), _ckpts(), P)[0].verdict == "refuted"        # 3/15 cells
    assert bm.scaling_paradox(_ev(3), _ckpts(), P)[0].verdict == "inconclusive"   # 9/15 cells: CI spans 0.6
    c = bm.scaling_paradox(_ev(5), _ckpts(deep_loss=1.2), P)[0]                   # L = 16 under-trained
    assert c.verdict == "inconclusive" and "FAILED" in c.premise


def _imp(shares=(0.7, 0.72, 0.69), redundant=(0.6, 0.62, 0.65), rho_sign=1.0):
    rows = []
    for s, (share, red) in enumerate(zip(shares, redundant)):
        n = 16
        s_vals = np.full(n, (1 - share) / (n - 4))
        s_vals[:4] = share / 4
        n_red = int(round(red * n))
        importance = np.arange(n, 0, -1, dtype=float) + 0.1 * s
        drop = np.where(np.arange(n) < n - n_red, 0.1 + 0.01 * (n - np.arange(n)), 0.001 * (n - np.arange(n)))
        for layer in range(n):
            rows.append({"family": "tsfm", "depth": 16, "seed": s, "layer": layer, "s": s_vals[layer],
                         "importance": importance[layer] * rho_sign, "removal_drop": drop[layer]})
    return pd.DataFrame(rows)


def test_concentration():
    assert bm.concentration(_imp(), P).verdict == "holds"
    assert bm.concentration(_imp(shares=(0.3, 0.32, 0.29)), P).verdict == "refuted"
    assert bm.concentration(_imp(shares=(0.3, 0.9, 0.6)), P).verdict == "inconclusive"


def test_majority_redundant():
    assert bm.majority_redundant(_imp(), P)[0].verdict == "holds"
    assert bm.majority_redundant(_imp(redundant=(0.1, 0.12, 0.15)), P)[0].verdict == "refuted"
    assert bm.majority_redundant(_imp(rho_sign=-1.0), P)[0].verdict == "refuted"     # the score ranks backwards
    assert bm.majority_redundant(_imp(redundant=(0.1, 0.9, 0.5)), P)[0].verdict == "inconclusive"


def _table(full_continued=(-0.05, -0.07, -0.03)):
    rows = [{"family": "tsfm", "depth": 16, "baseline": b, "keep_mse": 0.6, "baseline_mse": 0.65, "diff": -0.05,
             "low": -0.07, "high": -0.03, "relative": -0.08} for b in bm.BASELINES]
    rows[0].update(diff=full_continued[0], low=full_continued[1], high=full_continued[2])
    return pd.DataFrame(rows)


def test_pruned_better():
    assert bm.pruned_better(_table(), P).verdict == "holds"
    assert bm.pruned_better(_table((0.01, -0.02, 0.04)), P).verdict == "inconclusive"
    assert bm.pruned_better(_table((0.03, 0.01, 0.05)), P).verdict == "refuted"
    one_seed = SimpleNamespace(depths=P.depths, seeds=[0])
    assert bm.pruned_better(_table(), one_seed).verdict == "inconclusive"


def test_superior_95():
    def cells(n_sup, n=45):
        return pd.DataFrame({"superior": [True] * n_sup + [False] * (n - n_sup), "family": "tsfm", "depth": 16})
    assert bm.superior_95(cells(45, 100), P).verdict == "refuted"
    assert bm.superior_95(cells(100, 100), P).verdict == "holds"
    assert bm.superior_95(cells(44), P).verdict == "inconclusive"


def _lat(ratios=(4.0, 4.1, 3.9), param_fraction=0.25):
    rows = []
    for s, r in enumerate(ratios):
        for batch in (1, 256):
            rows.append({"family": "tsfm", "depth": 16, "seed": s, "batch": batch, "k": 4, "full_ms": 10.0 * r,
                         "pruned_ms": 10.0, "ratio": r, "param_fraction": param_fraction, "flop_fraction": 0.252})
    return pd.DataFrame(rows)


def test_speedup_against_the_paper_and_the_flop_bound():
    c = bm.speedup(_lat(), P)
    assert c.verdict == "holds" and c.volatile and "FLOP" in c.measured_value
    assert bm.speedup(_lat((1.5, 1.6, 1.4)), P).verdict == "refuted"
    assert bm.speedup(_lat((4.0,)), P).verdict == "inconclusive"                     # one seed
    c = bm.speedup(_lat(param_fraction=0.5), P)
    assert c.verdict == "inconclusive" and "FAILED" in c.premise
    s = bm.flop_ratio(_lat(), P)
    assert s.kind == "sanity" and "3.97" in s.measured_value
    assert bm.flop_ratio(_lat(param_fraction=0.5), P).measured_value.startswith("VIOLATED")
