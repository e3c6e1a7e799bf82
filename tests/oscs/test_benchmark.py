"""The benchmark layer: metrics, separation AUC, oracle posterior and the claim logic."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from assets.oscs import benchmark


def test_outcome_metrics_by_hand():
    decision = np.array([1, 1, 1, 0, 0, 1])
    label = np.array([0, 1, 0, 1, 0, 0])
    m = benchmark.outcome_metrics(decision, label, burn_in=2, short_horizon=3)
    assert m["far_selected"] == pytest.approx(1 / 4)          # 1 malicious among 4 accepted
    assert m["far_malicious"] == pytest.approx(1 / 2)          # 1 of 2 malicious accepted
    assert m["tar"] == pytest.approx(3 / 4)                    # 3 of 4 benign accepted
    assert m["far_selected_post_burnin"] == pytest.approx(0.0)  # t=3..6: accepted 3 and 6, both benign
    assert m["far_selected_short"] == pytest.approx(1 / 3)


def test_separation_auc_known_answers():
    rows = [("d", "stream", "benign", s) for s in [1.0, 2.0, 3.0, 4.0]]
    rows += [("d", "attack", "above", s) for s in [10.0, 11.0]]      # always higher: AUC 1
    rows += [("d", "attack", "below", s) for s in [0.0, -1.0]]       # always lower: AUC 0
    rows += [("d", "attack", "tied", s) for s in [2.0, 3.0]]         # (1.5 + 2.5) / 8
    frame = pd.DataFrame(rows, columns=["detector", "role", "attack", "score"])
    auc = benchmark.separation_table(frame).set_index("attack")["auc"]
    assert auc["above"] == 1.0 and auc["below"] == 0.0 and auc["tied"] == pytest.approx(0.5)


def test_label_aware_posterior_matches_bayes_on_separated_pools():
    rng = np.random.default_rng(0)
    benign, malicious = rng.normal(0, 1, 20000), rng.normal(1, 1, 20000)
    grid = np.array([-1.0, 0.5, 2.0])
    m = benchmark.label_aware_posterior(grid, benign, malicious, pi1=0.2)
    # Bayes with the true N(0,1) / N(1,1) densities: m(s) = 0.2 e^{s-1/2} / (0.8 + 0.2 e^{s-1/2})
    ratio = np.exp(grid - 0.5)
    assert m == pytest.approx(0.2 * ratio / (0.8 + 0.2 * ratio), abs=0.02)


SEEDS = range(5)


def _results(far_oscs, far_fixed, far_short, far_two_sided=None):
    """Text-stream rows: every seed at the given mean FAR excess (± 0.001 seed noise)."""
    rows = []
    for seed in SEEDS:
        noise = 0.001 * (seed - 2)
        for scenario in ("mix_p05", "mix_p20", "mix_p40", "hard_p40"):
            for alpha in (0.05, 0.10):
                for method, far in (("oscs", far_oscs), ("fixed_threshold", far_fixed),
                                    ("oscs_two_sided", far_oscs if far_two_sided is None else far_two_sided)):
                    rows.append(("perplexity", scenario, seed, alpha, method, "far_selected", alpha + far + noise))
                rows.append(("perplexity", scenario, seed, alpha, "oscs", "far_selected_short", alpha + far_short))
    return pd.DataFrame(rows, columns=["detector", "scenario", "seed", "alpha", "method", "metric", "value"])


def _gaussian(ratio, far_excess=0.0, noise=0.01):
    """Gaussian-suite rows: OSCS TAR = ratio × oracle TAR per seed (± noise), FAR at α + excess."""
    rows = []
    for seed in SEEDS:
        wiggle = noise * (seed - 2)
        for mu in (1.0, 2.0):
            for alpha in (0.05, 0.10):
                rows += [(mu, seed, alpha, "oracle", "tar", 0.8),
                         (mu, seed, alpha, "oscs", "tar", 0.8 * ratio + wiggle),
                         (mu, seed, alpha, "oscs", "far_selected", alpha + far_excess)]
    return pd.DataFrame(rows, columns=["mu", "seed", "alpha", "method", "metric", "value"])


def test_claims_hold_when_the_numbers_say_so():
    claims = {c.claim_id: c for c in benchmark.evaluate_claims(_results(0.005, 0.08, 0.02), _gaussian(0.9))}
    assert all(c.verdict == "holds" for c in claims.values()), {k: c.detail for k, c in claims.items() if not c.holds}
    assert claims["power_vs_oracle"].seeds == "0–4 (5)" and "CI" in claims["power_vs_oracle"].measured_value


def test_claims_fail_when_the_numbers_say_so():
    claims = {c.claim_id: c for c in benchmark.evaluate_claims(_results(0.02, 0.03, 0.01, far_two_sided=0.015),
                                                               _gaussian(0.7, far_excess=0.03))}
    assert claims["far_control"].verdict == "refuted"            # +0.02 > 0.01 tolerance
    assert claims["vanishing_excess"].verdict == "refuted"       # excess grew from 0.01 to 0.02
    assert claims["fixed_threshold_fails"].verdict == "refuted"  # B1 only +0.03
    assert claims["power_vs_oracle"].verdict == "refuted"        # ratio 0.7 < 0.8
    assert claims["gaussian_far_control"].verdict == "refuted"   # +0.03 in the parametric suite
    assert claims["far_control_two_sided"].verdict == "refuted"  # the variant is judged on its own rows


@pytest.mark.parametrize("short, long, expected", [
    (0.04, 0.015, "holds"),          # halved (−0.005 ± 0.0015 over seeds)
    (0.03, 0.02, "refuted"),         # shrank, but not to half, and > 0.01 (the old rule called this a pass)
    (0.012, 0.005, "holds"),         # within 0.01 of α
    (0.04, 0.019, "inconclusive"),   # −0.001 ± 0.0015: the seeds cannot tell whether it halved
    (0.01, 0.015, "refuted"),        # grew
    (0.01, 0.011, "inconclusive"),   # grew, but 0.011 ± 0.0015 is not shown above 0.01
])
def test_vanishing_excess_means_halved_or_within_tolerance(short, long, expected):
    claims = {c.claim_id: c for c in benchmark.evaluate_claims(_results(long, 0.08, short), _gaussian(0.9))}
    assert claims["vanishing_excess"].verdict == expected


def test_power_claim_needs_the_interval_not_the_mean():
    # mean ratio 0.82 ≥ 0.8, but the seeds scatter ±0.2: the paired interval straddles 0
    noisy = benchmark.evaluate_claims(_results(0.005, 0.08, 0.02), _gaussian(0.82, noise=0.1))
    assert {c.claim_id: c for c in noisy}["power_vs_oracle"].verdict == "inconclusive"


@pytest.mark.parametrize("excess, expected", [(0.005, "holds"), (0.02, "refuted"), (0.0095, "inconclusive")])
def test_far_claims_judge_each_cell_by_its_interval(excess, expected):
    # seeds scatter ±0.002 around the excess: 0.0095 is neither shown below nor above 0.01
    claims = {c.claim_id: c for c in benchmark.evaluate_claims(_results(excess, 0.08, 0.04), _gaussian(0.9))}
    assert claims["far_control"].verdict == expected
    assert claims["far_control_two_sided"].verdict == expected


def test_far_claim_refuted_by_one_cell_and_fixed_threshold_by_any_cell():
    rows = _results(0.005, 0.03, 0.02)
    bad = (rows["scenario"] == "hard_p40") & (rows["alpha"] == 0.05) & (rows["metric"] == "far_selected")
    rows.loc[bad, "value"] += 0.10           # one cell of OSCS and B1 far above α
    claims = {c.claim_id: c for c in benchmark.evaluate_claims(rows, _gaussian(0.9))}
    assert claims["far_control"].verdict == "refuted" and "hard_p40" in claims["far_control"].measured_value
    assert claims["fixed_threshold_fails"].verdict == "holds"
    edge = {c.claim_id: c for c in benchmark.evaluate_claims(_results(0.005, 0.0505, 0.02), _gaussian(0.9))}
    assert edge["fixed_threshold_fails"].verdict == "inconclusive"     # +0.0505 ± 0.0015 against 0.05


def test_gaussian_far_and_power_verdicts():
    claims = {c.claim_id: c for c in benchmark.evaluate_claims(_results(0.005, 0.08, 0.02), _gaussian(0.9, 0.005))}
    assert claims["gaussian_far_control"].verdict == "holds" and claims["power_vs_oracle"].verdict == "holds"
    empty = {c.claim_id: c for c in benchmark.evaluate_claims(_results(0.005, 0.08, 0.02), _gaussian(0.9).iloc[:0])}
    for cid in ("gaussian_far_control", "power_vs_oracle"):
        assert empty[cid].verdict == "inconclusive" and "FAILED" in empty[cid].premise
