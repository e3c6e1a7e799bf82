"""pfn_causal claims on constructed measurements with known answers: the one verdict rule on the
paired CI over seeds, and each claim's arithmetic."""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.common.claims import all_of
from assets.pfn_causal import benchmark as B


def test_comparison_is_judged_by_the_interval():
    assert B.compare(np.array([3.0, 3.1, 2.9]), np.array([1.0, 1.0, 1.0]), "greater").verdict.outcome == "holds"
    # mean and 2/3 seeds hold, but one seed goes the other way: the interval includes 0
    c = B.compare(np.array([3.0, 3.0, 0.5]), np.array([1.0, 1.0, 1.0]), "greater")
    assert c.verdict.outcome == "inconclusive"
    assert B.compare(np.array([0.05, 0.06, 0.04]), np.zeros(3), "less", 0.10).verdict.outcome == "holds"
    assert B.compare(np.array([0.05, 0.06, 0.04]), np.zeros(3), "greater", 0.10).verdict.outcome == "refuted"
    assert B.compare(np.array([0.05]), np.zeros(1), "less", 0.10).verdict.outcome == "inconclusive"  # one seed


def test_conjunction_refutes_on_any_refuted_part():
    good = B.compare(np.array([3.0, 3.1, 2.9]), np.ones(3), "greater")
    bad = B.compare(np.array([0.5, 0.6, 0.4]), np.ones(3), "greater")
    open_ = B.compare(np.array([3.0, 3.0, 0.5]), np.ones(3), "greater")
    assert all_of([("a", *good), ("b", *good)], **B._ALL_OF)[0].outcome == "holds"
    assert all_of([("a", *good), ("b", *open_)], **B._ALL_OF)[0].outcome == "inconclusive"
    assert all_of([("a", *open_), ("b", *bad)], **B._ALL_OF)[0].outcome == "refuted"


def bank(sizes=(1, 3)) -> pd.DataFrame:
    rows = []
    q = 0
    for size in sizes:
        for kind in ("grid",):
            rows.append({"query": q, "kind": kind, "target": "", "subset": f"s{size}", "size": size})
            q += 1
    rows += [{"query": q, "kind": "target", "target": "t0", "subset": "s3", "size": 3},
             {"query": q + 1, "kind": "far", "target": "t0", "subset": "s3", "size": 3}]
    frame = pd.DataFrame(rows)
    return pd.concat([frame.assign(scm=s) for s in range(4)], ignore_index=True).assign(mu=0.0, se=0.001, var_y=1.0)


def preds(method: str, errors: dict[int, float], seeds=(0, 1, 2), n=(32, 96), target="") -> pd.DataFrame:
    """mu_hat = sqrt(error) so the squared error is exactly `errors[query]`."""
    rows = [{"seed": s, "method": method, "target": target, "n": k, "scm": scm, "query": q,
             "mu_hat": float(np.sqrt(e)), "var_hat": 1.0}
            for s in seeds for k in n for scm in range(4) for q, e in errors.items()]
    return pd.DataFrame(rows)


def test_uncoverage_bias_uses_the_g_formula_ratio():
    b = bank().rename(columns={"target": "target_y"})
    err = B.errors(preds("zero_shot", {0: 0.01, 1: 0.05}), b)
    base = B.errors(preds("g_formula", {0: 0.01, 1: 0.015}, seeds=(0,)).drop(columns=["seed", "target", "var_hat"]), b)
    claim, info = B.uncoverage_bias(err, base, [0, 1, 2], 96)
    assert np.allclose(info["ratio"], 5.0) and np.isclose(info["g_ratio"], 1.5)
    # constant across seeds: the paired interval has zero width and is strictly on the right side
    assert claim.holds
    base_hi = B.errors(preds("g_formula", {0: 0.01, 1: 0.03}, seeds=(0,)).drop(columns=["seed", "target", "var_hat"]),
                       b)
    assert B.uncoverage_bias(err, base_hi, [0, 1, 2], 96)[0].verdict == "refuted"     # 5 < 2 × 3


def test_pwf_local_compares_target_and_far_points():
    b = bank()
    frames = [preds("zero_shot", {2: 0.10, 3: 0.10}), preds("continued", {2: 0.09, 3: 0.10}),
              preds("pwf", {2: 0.05, 3: 0.09}, target="t0")]
    err = B.errors(pd.concat(frames), b.rename(columns={"target": "target_y"}))
    table = B.pwf_table(err, 96)
    assert set(table["point"]) == {"target", "far"}
    rng = np.random.default_rng(0)
    table["pwf"] = table["pwf"] * (1 + 0.01 * rng.random(len(table)))      # seeds differ a little
    claim = B.pwf_local(table, [0, 1, 2])
    assert claim.holds                                                     # cut 50 % at v*, 10 % far
    table.loc[table["point"] == "target", "pwf"] = 0.08                    # cut 20 % < 30 %
    assert B.pwf_local(table, [0, 1, 2]).verdict == "refuted"


def test_inconsistency_needs_a_flat_uncovered_curve_and_a_falling_covered_one():
    b = bank().rename(columns={"target": "target_y"})
    small = preds("zero_shot", {0: 0.10, 1: 0.30}, n=(32,))
    big = preds("zero_shot", {0: 0.07, 1: 0.29}, n=(96,))                 # −30 % covered, −3.3 % uncovered
    err = B.errors(pd.concat([small, big]), b)
    assert B.inconsistency(err, [0, 1, 2], (32, 96)).holds
    big = preds("zero_shot", {0: 0.07, 1: 0.20}, n=(96,))                 # uncovered also −33 %: consistent
    assert B.inconsistency(B.errors(pd.concat([small, big]), b), [0, 1, 2], (32, 96)).verdict == "refuted"
    big = preds("zero_shot", {0: 0.09, 1: 0.29}, n=(96,))                 # covered only −10 %
    assert B.inconsistency(B.errors(pd.concat([small, big]), b), [0, 1, 2], (32, 96)).verdict == "refuted"


def test_msf_uniform_compares_worst_subset_mean_and_covered_subsets():
    b = bank().rename(columns={"target": "target_y"})
    zs, rnd = preds("zero_shot", {0: 0.05, 1: 0.40}), preds("random_ft", {0: 0.05, 1: 0.30})

    def claim(msf_errors):
        return B.msf_uniform(B.errors(pd.concat([zs, rnd, preds("msf", msf_errors)]), b), [0, 1, 2], 96)[0]

    assert claim({0: 0.052, 1: 0.20}).holds                               # worst 0.20 < 0.30; covered +4 %
    assert claim({0: 0.06, 1: 0.20}).verdict == "refuted"                            # covered +20 % > +10 %
    assert claim({0: 0.05, 1: 0.35}).verdict == "refuted"                            # worst 0.35 > random's 0.30


def test_acquisition_ablation_summarises_msf_uniform_s_parts_and_says_which_acquisition_is_worse():
    b = bank()
    frames = [preds("zero_shot", {0: 0.05, 1: 0.40}, seeds=(0,), n=(96,)),
              preds("msf", {0: 0.05, 1: 0.30}, seeds=(0,), n=(96,)),
              preds("random_ft", {0: 0.05, 1: 0.35}, seeds=(0,), n=(96,))]
    traces = [{"seed": 0, "regime": "msf", "round": 0, "subset": "s1", "size": 1, "picked": True},
              {"seed": 0, "regime": "msf", "round": 0, "subset": "s3", "size": 3, "picked": False},
              {"seed": 0, "regime": "msf_nmse", "round": 0, "subset": "s3", "size": 3, "picked": True}]

    def table(nmse_errors):
        return B.acquisition_summary(pd.concat([*frames, preds("msf_nmse", nmse_errors, seeds=(0,), n=(96,))]),
                                     b, traces)

    t = table({0: 0.06, 1: 0.20}).set_index("method")
    assert list(t.index) == ["zero_shot", "msf", "msf_nmse", "random_ft"]
    assert np.isclose(t.loc["msf_nmse", "worst"], 0.20) and t.loc["msf_nmse", "worst_subset"] == "s3"
    assert np.isclose(t.loc["msf_nmse", "mean"], 0.13) and np.isclose(t.loc["msf_nmse", "covered"], 0.06)
    assert np.isclose(t.loc["msf", "worst"], 0.30) and np.isclose(t.loc["zero_shot", "uncovered"], 0.40)
    assert t.loc["msf_nmse", "picks"] == "s3" and t.loc["msf", "picks"] == "s1" and t.loc["zero_shot", "picks"] == ""
    text = B.acquisition_sentence(t.reset_index())
    assert "lowers MSF's worst-subset nMSE" in text and "0.2000 vs 0.3000" in text and "lower on 1/1 seed" in text
    assert "1/1 of its picks ∣S∣ = 1" in text and "no interval" in text             # NLL: x1; one seed
    worse = table({0: 0.06, 1: 0.36})
    assert "raises MSF's worst-subset nMSE" in B.acquisition_sentence(worse)
    row = B.acquisition_observation(t.reset_index())
    assert row.kind == "observation" and row.seeds == "0 (1)" and "msf_nmse worst 0.2000" in row.measured_value
    assert B.acquisition_observation(pd.DataFrame()).measured_value == "not run"
    assert "not run" in B.acquisition_sentence(pd.DataFrame())
