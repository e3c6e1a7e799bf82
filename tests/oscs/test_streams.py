"""Scenario streams: exact malicious counts, segment structure, determinism."""

import numpy as np
import pytest

from assets.oscs.data import ATTACKS, EASY_ATTACKS
from assets.oscs.streams import SCENARIOS, build_stream, scenario_target_pi1

POOLS = {attack: np.full(7, 10.0 + i) for i, attack in enumerate(ATTACKS)}
BENIGN = np.arange(50, dtype=float) / 100.0


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
@pytest.mark.parametrize("T", [5000, 777, 401])
def test_realized_fraction_is_exact(scenario, T):
    stream = build_stream(BENIGN, POOLS, scenario, T, seed=1)
    assert len(stream) == T and stream["t"].tolist() == list(range(1, T + 1))
    assert stream["label"].sum() == pytest.approx(scenario_target_pi1(scenario, T) * T)
    if SCENARIOS[scenario]["kind"] != "burst":
        assert stream["label"].sum() == round(SCENARIOS[scenario]["pi1"] * T)


def test_scores_come_from_the_right_pools_and_are_deterministic():
    stream = build_stream(BENIGN, POOLS, "mix_p40", 2000, seed=5)
    benign = stream["attack"] == "benign"
    assert (stream.loc[benign, "label"] == 0).all()
    np.testing.assert_array_equal(stream.loc[benign, "score"], BENIGN[stream.loc[benign, "pool_index"]])
    for i, attack in enumerate(ATTACKS):
        assert (stream.loc[stream["attack"] == attack, "score"] == 10.0 + i).all()
    counts = stream.loc[~benign, "attack"].value_counts()
    assert counts.max() - counts.min() <= 1  # equal attack shares
    assert stream.equals(build_stream(BENIGN, POOLS, "mix_p40", 2000, seed=5))
    assert not stream.equals(build_stream(BENIGN, POOLS, "mix_p40", 2000, seed=6))


def test_switch_and_burst_structure():
    T = 5000
    switch = build_stream(BENIGN, POOLS, "switch", T, seed=0)
    first, second = switch.iloc[: T // 2], switch.iloc[T // 2 :]
    assert set(first.loc[first["label"] == 1, "attack"]) == set(EASY_ATTACKS)
    assert set(second.loc[second["label"] == 1, "attack"]) == {"fluent_preamble"}
    burst = build_stream(BENIGN, POOLS, "burst", T, seed=0)
    window = burst.iloc[T // 2 : T // 2 + 200]
    outside = burst.drop(window.index)
    assert window["label"].mean() == pytest.approx(0.8)
    assert outside["label"].mean() == pytest.approx(0.05, abs=1e-3)
    assert scenario_target_pi1("burst", T) == pytest.approx((160 + 240) / 5000)
