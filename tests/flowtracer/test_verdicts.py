"""Each counted flowtracer claim judged by the one rule from constructed measurements."""
import pandas as pd

from assets.flowtracer import benchmark as B
from tests.flowtracer.test_analysis import _evals, _masking

RATES = {"recency": 0.3, "attention": 0.3, "one_hop": 0.3, "rollout": 0.3}
IN_BAND = pd.DataFrame({"seed": [0, 1, 2], "test_accuracy": [0.45, 0.50, 0.55], "test_prompts": 256})
OUT_OF_BAND = IN_BAND.assign(test_accuracy=[0.45, 0.50, 0.20])


def test_masking_verdicts_and_the_band_premise():
    good = _masking({"flow": 0.6, "random": 0.35, "bottom": 0.1, **RATES})
    assert B.masking_claim(good, 300, 0, "1-2", B.band_premise(IN_BAND, (0.4, 0.6))).verdict == "holds"
    out = B.masking_claim(good, 300, 0, "1-2", B.band_premise(OUT_OF_BAND, (0.4, 0.6)))
    assert out.verdict == "inconclusive" and "FAILED" in out.premise
    reversed_ = _masking({"flow": 0.1, "random": 0.35, "bottom": 0.6, **RATES})
    assert B.masking_claim(reversed_, 300, 0, "1-2").verdict == "refuted"


def test_rl_gain_verdicts():
    good = _evals({"flowtracer": 0.8, "uniform": 0.3, "random": 0.3, "attention": 0.3, "entropy": 0.3, "bottom": 0.0})
    assert B.rl_claim(good, 300, 0)[0].verdict == "holds"
    assert B.rl_claim(good, 300, 0, B.band_premise(OUT_OF_BAND, (0.4, 0.6)))[0].verdict == "inconclusive"
    worse = _evals({"flowtracer": 0.0, "uniform": 0.8, "random": 0.8, "attention": 0.8, "entropy": 0.8, "bottom": 0.0})
    assert B.rl_claim(worse, 300, 0)[0].verdict == "refuted"
    assert B.rl_claim(good[good["method"] != "bottom"], 300, 0)[0].verdict == "inconclusive"   # arm not run


def test_overhead_verdicts():
    def times(credit):
        return pd.DataFrame({"method": "flowtracer", "seed": [0, 0, 1, 1, 2, 2], "step": [1, 2] * 3,
                             "seconds_credit": credit, "seconds_step": 1.0})
    assert B.overhead_claim(times([0.02, 0.02, 0.021, 0.021, 0.019, 0.019]))[0].verdict == "holds"
    assert B.overhead_claim(times([0.10, 0.10, 0.095, 0.095, 0.098, 0.098]))[0].verdict == "refuted"
    assert B.overhead_claim(times([0.01, 0.01, 0.09, 0.09, 0.04, 0.04]))[0].verdict == "inconclusive"
    assert B.overhead_claim(None)[0].verdict == "inconclusive"


def test_all_of_takes_the_refuted_then_the_inconclusive_part():
    from assets.common.claims import all_of, verdict

    h, i, r = verdict(1, 0.5, 1.5), verdict(1, -0.5, 1.5), verdict(-1, -1.5, -0.5)
    assert all_of([("h", h), ("i", i)], holding=B._shown)[0].outcome == "inconclusive"
    assert all_of([("h", h), ("i", i), ("r", r)], holding=B._shown)[0].outcome == "refuted"
    assert all_of([("a", h), ("b", h)], holding=B._shown)[0].outcome == "holds"
