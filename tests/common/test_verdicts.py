"""The one verdict rule (assets.common.claims.verdict): every outcome of every rule, in both
directions, premises, and the rows the scorecard counts."""
from __future__ import annotations

import math

import pytest

from assets.common.claims import (
    HOLDS,
    INCONCLUSIVE,
    REFUTED,
    Claim,
    Premise,
    all_of,
    bound_claim,
    judged,
    mean_ci,
    not_evaluated,
    observation,
    proportion_ci,
    sanity,
    slack,
    verdict,
)

# (estimate, low, high, rule, margin, direction) -> outcome; "greater" rows, then their mirror images
CASES = [
    # effect: Δ ≥ m — holds needs lo > 0 AND the estimate reaching m
    (0.20, 0.05, 0.35, "effect", 0.10, "greater", HOLDS),
    (0.08, 0.02, 0.14, "effect", 0.10, "greater", INCONCLUSIVE),   # an effect, smaller than claimed, CI reaches m
    (0.04, 0.01, 0.07, "effect", 0.10, "greater", REFUTED),        # confidently smaller than claimed
    (0.20, -0.05, 0.45, "effect", 0.10, "greater", INCONCLUSIVE),  # CI includes no effect
    (-0.2, -0.30, -0.10, "effect", 0.0, "greater", REFUTED),       # the other sign
    (0.01, 0.001, 0.02, "effect", 0.0, "greater", HOLDS),          # margin 0: any confident effect
    (0.0, -0.01, 0.01, "effect", 0.0, "greater", INCONCLUSIVE),
    # no_worse: Δ ≥ −m
    (-0.01, -0.03, 0.01, "no_worse", 0.05, "greater", HOLDS),
    (-0.04, -0.09, 0.01, "no_worse", 0.05, "greater", INCONCLUSIVE),
    (-0.10, -0.14, -0.06, "no_worse", 0.05, "greater", REFUTED),
    # bound: quantity ≥ b (b any sign)
    (0.90, 0.85, 0.95, "bound", 0.80, "greater", HOLDS),
    (0.82, 0.75, 0.89, "bound", 0.80, "greater", INCONCLUSIVE),
    (0.70, 0.65, 0.75, "bound", 0.80, "greater", REFUTED),
    (0.80, 0.80, 0.85, "bound", 0.80, "greater", HOLDS),           # the bound itself is on the paper's side
]


def mirrored(case):
    est, lo, hi, rule, m, _, outcome = case
    if rule == "bound":   # quantity ≤ −b  ⇔  −quantity ≥ b
        return (-est, -hi, -lo, rule, -m, "less", outcome)
    return (-est, -hi, -lo, rule, m, "less", outcome)


@pytest.mark.parametrize("case", CASES + [mirrored(c) for c in CASES])
def test_each_outcome_in_both_directions(case):
    est, lo, hi, rule, margin, direction, outcome = case
    v = verdict(est, lo, hi, rule=rule, margin=margin, direction=direction)
    assert v.outcome == outcome, (case, v.reason)


def test_less_direction_reads_as_written():
    # FAR ≤ α + 0.01 = 0.06: a CI [0.04, 0.055] holds, [0.07, 0.09] is refuted, [0.05, 0.07] cannot tell
    assert verdict(0.05, 0.04, 0.055, rule="bound", margin=0.06, direction="less").outcome == HOLDS
    assert verdict(0.08, 0.07, 0.09, rule="bound", margin=0.06, direction="less").outcome == REFUTED
    assert verdict(0.06, 0.05, 0.07, rule="bound", margin=0.06, direction="less").outcome == INCONCLUSIVE
    # error lower by at least 0.1: Δ ≤ −0.1
    assert verdict(-0.2, -0.3, -0.15, rule="effect", margin=0.1, direction="less").outcome == HOLDS
    assert verdict(-0.05, -0.07, -0.02, rule="effect", margin=0.1, direction="less").outcome == REFUTED


def test_a_failed_premise_is_inconclusive_whatever_the_interval():
    ok = Premise("policy beats random: paired CI lower bound > 0", "Δ +0.30 [+0.20, +0.40]", True)
    bad = Premise("policy beats random: paired CI lower bound > 0", "Δ +0.01 [−0.02, +0.04]", False)
    assert verdict(0.2, 0.1, 0.3, margin=0.1, premises=ok).outcome == HOLDS
    for lo, hi in ((0.1, 0.3), (-0.5, -0.3)):
        v = verdict((lo + hi) / 2, lo, hi, margin=0.1, premises=[ok, bad])
        assert v.outcome == INCONCLUSIVE and v.reason.startswith("premise: policy beats random")
        assert "FAILED" in v.premise and "+0.01" in v.premise


def test_one_seed_and_no_measurement_are_inconclusive():
    ci = mean_ci([0.9])
    assert math.isinf(ci.low) and verdict(ci.mean, ci.low, ci.high, rule="bound", margin=0.5).outcome == INCONCLUSIVE
    assert verdict(float("nan"), float("nan"), float("nan")).outcome == INCONCLUSIVE


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="margin ≥ 0"):
        verdict(0.1, 0.0, 0.2, rule="effect", margin=-0.1)
    with pytest.raises(ValueError, match="rule"):
        verdict(0.1, 0.0, 0.2, rule="point")
    with pytest.raises(ValueError, match="empty"):
        verdict(0.1, 0.3, 0.2)


def test_proportion_interval_is_exact():
    from scipy import stats

    ci = proportion_ci(7, 10, level=0.90)
    assert ci.low == pytest.approx(stats.beta.ppf(0.05, 7, 4)) and ci.high == pytest.approx(stats.beta.ppf(0.95, 8, 3))
    assert proportion_ci(0, 20).low == 0.0 and proportion_ci(20, 20).high == 1.0
    # 20/20 successes: the 90 % CI's lower bound is 0.05 ** (1/20) = 0.861
    assert proportion_ci(20, 20).low == pytest.approx(0.05 ** (1 / 20))


def test_bound_claim_uses_the_ci_of_the_mean():
    c = bound_claim("far", "FAR ≤ 0.06", "≤ α + 0.01", [0.050, 0.052, 0.049, 0.051], 0.06, seeds=range(4))
    assert c.verdict == HOLDS and c.ci.startswith("[+0.04") and c.seeds == "0–3 (4)"
    assert bound_claim("far", "FAR ≤ 0.06", "≤ α + 0.01", [0.08, 0.09, 0.085], 0.06).verdict == REFUTED


def test_rows_carry_verdict_premise_and_ci():
    j = verdict(0.2, 0.1, 0.3, margin=0.1, premises=Premise("gate", "0.9 ≥ 0.8", True))
    row = judged("beats", "A beats B", "+0.1", "Δ +0.2", j).row()
    assert row["verdict"] == HOLDS and row["ci"] == "[+0.1, +0.3]" and row["premise"].startswith("gate")
    assert (row["estimate"], row["ci_low"], row["ci_high"], row["margin"]) == (0.2, 0.1, 0.3, 0.1)
    assert sanity("ident", "Δ = a + b", "identity", "residual 1e-16", ok=True).row()["verdict"] == "sanity"
    assert sanity("ident", "c", "p", "residual 0.3", ok=False).measured_value.startswith("VIOLATED")
    assert observation("trend", "c", "p", "m").row()["verdict"] == "report-only"
    missing = not_evaluated("paper_x", "c", "p", "x.csv not found")
    assert missing.verdict == INCONCLUSIVE and "input present" in missing.premise
    with pytest.raises(ValueError, match="carries no verdict"):
        Claim("x", "c", "p", "m", j, kind="observation")


# ---------------------------------------------------------------- all_of: the one conjunction
H = verdict(0.30, 0.10, 0.50, rule="effect", margin=0.2)          # holds: lo 0.10 > 0 and 0.30 ≥ 0.2
H2 = verdict(0.90, 0.85, 0.95, rule="bound", margin=0.80)         # holds, 0.05 above its bound
H3 = verdict(-0.30, -0.50, -0.20, rule="effect", direction="less")  # holds: hi −0.20 < 0
R = verdict(0.05, 0.01, 0.09, rule="effect", margin=0.2)          # refuted: hi 0.09 < 0.2
I = verdict(0.30, -0.10, 0.70, rule="effect", margin=0.2)         # inconclusive: the CI includes 0
GATE_OK, GATE_FAILED = Premise("gate ≥ 0.8", "0.9", True), Premise("gate ≥ 0.8", "0.4", False)


@pytest.mark.parametrize(("outcomes", "expected", "decisive"), [
    ((H,), HOLDS, 0), ((R,), REFUTED, 0), ((I,), INCONCLUSIVE, 0),
    ((H, H2), HOLDS, 1),                      # all hold: the part nearest its threshold (0.05 < 0.10)
    ((H, R), REFUTED, 1), ((R, H), REFUTED, 0),
    ((H, I), INCONCLUSIVE, 1), ((I, H), INCONCLUSIVE, 0),
    ((I, R), REFUTED, 1),                     # a refuted part refutes even next to an open one
    ((I, R, I, R), REFUTED, 1),               # the first refuted part decides
    ((H, I, H, I), INCONCLUSIVE, 1),          # the first part that does not hold decides
])
def test_all_of_refutes_on_any_holds_on_every_part(outcomes, expected, decisive):
    names = [f"p{i}" for i in range(len(outcomes))]
    j, text = all_of(list(zip(names, outcomes)))
    assert j.outcome == expected
    assert (j.estimate, j.low, j.high) == (outcomes[decisive].estimate, outcomes[decisive].low,
                                           outcomes[decisive].high)
    assert text.endswith(f"(decided by p{decisive})") and text.startswith("parts: p0 ")


def test_all_of_a_failed_premise_makes_it_inconclusive():
    j, _ = all_of([("a", H), ("b", H2)], [GATE_FAILED])
    assert j.outcome == INCONCLUSIVE and j.reason.startswith("premise: gate ≥ 0.8, measured 0.4")
    assert j.premises[-1] == GATE_FAILED
    j, _ = all_of([("a", H), ("b", H2)], GATE_OK)            # a met premise changes nothing but the record
    assert j.outcome == HOLDS and j.premises == (GATE_OK,)
    j, _ = all_of([("a", H), ("b", R)], [GATE_FAILED])        # even a refuted part cannot decide then
    assert j.outcome == INCONCLUSIVE
    j, _ = all_of([("a", H), ("b", R)], [GATE_FAILED], reason="every")
    assert j.outcome == INCONCLUSIVE and j.reason.startswith("premise: gate") and GATE_FAILED in j.premises


def test_all_of_reason_every_lists_each_part_and_merges_premises():
    with_gate = verdict(0.30, 0.10, 0.50, rule="effect", margin=0.2, premises=GATE_OK)
    j, _ = all_of([("a", with_gate), ("b", R), ("c", with_gate)], reason="every")
    assert j.outcome == REFUTED and (j.low, j.high) == (R.low, R.high)
    assert j.reason.startswith("all parts must hold (any refuted part refutes): a holds (")
    assert "; b refuted (" in j.reason and j.premises == (GATE_OK,)          # merged without repeats


def test_all_of_decisive_part_when_all_hold():
    parts = [("a", H), ("b", H2), ("c", H3)]                 # slack: 0.10, 0.05, 0.20
    assert [slack(v) for _, v in parts] == pytest.approx([0.10, 0.05, 0.20])
    assert all_of(parts)[0] is H2                             # nearest its threshold
    assert all_of(parts, holding="first")[0] is H
    assert all_of(parts, holding="lowest")[0] is H3           # lowest lower bound (−0.50), whatever its rule
    assert all_of(parts, holding=lambda v: -v.high)[0] is H2  # a key function
    no_worse = verdict(-0.01, -0.03, 0.01, rule="no_worse", margin=0.05)
    assert slack(no_worse) == pytest.approx(0.02)             # lo −0.03 clears −0.05 by 0.02
    assert slack(verdict(0.5, 0.40, 0.45, rule="bound", margin=0.5, direction="less")) == pytest.approx(0.05)
    with pytest.raises(ValueError, match="holding"):
        all_of(parts, holding="best")


def test_all_of_text_forms():
    parts = [("a", H, "Δ +0.3"), ("b", I, "Δ +0.3 wide")]
    assert all_of(parts)[1] == "parts: a holds [+0.1, +0.5]; b inconclusive [-0.1, +0.7] (decided by b)"
    assert all_of(parts, part="{name}: {text} → {outcome}", prefix="")[1] == \
        "a: Δ +0.3 → holds; b: Δ +0.3 wide → inconclusive (decided by b)"
    assert all_of(parts, part=None, prefix="", suffix="{holds} hold, {refuted} refuted, {inconclusive} "
                  "inconclusive of {n}; decided by {name} {ci}")[1] == \
        "1 hold, 0 refuted, 1 inconclusive of 2; decided by b [-0.1, +0.7]"
    assert all_of([("x", H)], digits=4)[1] == "parts: x holds [+0.1, +0.5] (decided by x)"
    with pytest.raises(ValueError, match="at least one part"):
        all_of([])


def test_all_of_keeps_the_decisive_verdict_without_premises():
    custom = verdict(0.05, 0.01, 0.09, rule="effect", margin=0.2)
    assert all_of([("a", H), ("b", custom)])[0] is custom     # unchanged, not re-judged
    j, _ = all_of([("a", H), ("b", custom)], [GATE_OK])        # with premises: re-judged on its interval
    assert j.outcome == REFUTED and j.reason == custom.reason and j.premises == (GATE_OK,)
