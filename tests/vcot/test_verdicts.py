"""Every counted vcot claim judged by the one rule, on constructed measurements: each claim has a
holds case and a refuted or inconclusive case; conjunctions hold only when every part holds."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from assets.common.claims import HOLDS, INCONCLUSIVE, REFUTED, SANITY, all_of, verdict
from assets.vcot import benchmark as B


def ratio_rows(completer: str, accs: dict[int, list[float]]) -> list[dict]:
    return [{"completer": completer, "dimension": "ratio", "bucket": b, "program_id": f"p{p}", "acc": a,
             "sem": a == 1.0, "n_holes": b // 10, "reason": "", "holes_equivalent": 0}
            for b, values in accs.items() for p, a in enumerate(values)]


def typed_rows(completer: str, dimension: str, column: str, sem: dict[str, list[float]],
               acc: dict[str, list[float]] | None = None) -> list[dict]:
    acc = acc or {k: [0.25 + 0.75 * s for s in v] for k, v in sem.items()}
    return [{"completer": completer, "dimension": dimension, column: k, "program_id": f"p{p}", "sem": s,
             "acc": acc[k][p]} for k, values in sem.items() for p, s in enumerate(values)]


def steep(n: int = 10) -> dict[int, list[float]]:
    """Acc falls with the bucket for every program (each one from a different bucket on)."""
    return {b: [1.0 if b < 20 + 8 * p else 0.0 for p in range(n)] for b in B.BUCKETS}


@pytest.mark.parametrize(("outcomes", "expected"), [
    ((HOLDS, HOLDS), HOLDS), ((HOLDS, REFUTED), REFUTED), ((HOLDS, INCONCLUSIVE), INCONCLUSIVE),
    ((INCONCLUSIVE, REFUTED), REFUTED), ((INCONCLUSIVE, INCONCLUSIVE), INCONCLUSIVE)])
def test_all_of_is_the_conjunction(outcomes, expected):
    interval = {HOLDS: (2.0, 1.0, 3.0), REFUTED: (-2.0, -3.0, -1.0), INCONCLUSIVE: (0.5, -1.0, 2.0)}
    parts = [(f"part{i}", verdict(*interval[o], rule="effect", margin=0.0)) for i, o in enumerate(outcomes)]
    assert [v.outcome for _, v in parts] == list(outcomes)
    assert all_of(parts, **B._ALL_OF)[0].outcome == expected


def test_fragility_holds_for_a_large_monotone_drop_and_is_refuted_for_a_flat_one():
    flat = {b: [0.25, 0.25, 1.0, 0.25] for b in B.BUCKETS}
    scores = pd.DataFrame(ratio_rows("solver", steep()) + ratio_rows("retrieval", flat))
    assert B.fragility_claim(scores, "solver", 500, 0).verdict == HOLDS
    flat_claim = B.fragility_claim(scores, "retrieval", 500, 0)
    assert flat_claim.verdict == REFUTED and flat_claim.judgement.high < B.FRAGILITY_DROP


def test_fragility_is_inconclusive_when_the_drop_holds_but_the_trend_does_not():
    # a 75-point drop between buckets 10 and 100, but Acc is flat (0.25) on buckets 20..90:
    # Spearman's CI does not lie below −0.8, so the conjunction cannot hold
    bumpy = {b: [1.0 if b == 10 else (0.0 if b == 100 else 0.25 + 0.5 * ((b // 10 + p) % 2)) for p in range(8)]
             for b in B.BUCKETS}
    claim = B.fragility_claim(pd.DataFrame(ratio_rows("solver", bumpy)), "solver", 500, 0)
    assert claim.verdict != HOLDS
    assert "drop ≥ 25 holds" in claim.judgement.reason


def test_type_claim_is_judged_on_semacc_not_on_the_syntax_credit():
    n = 6
    harder = {"invariant": [1.0, 1.0, 0.0, 1.0, 1.0, 0.0], "assertion": [0.0] * n}
    args = ("assertion_harder_than_invariant", "t", "p", "type", "type", "invariant", "assertion", 500, 0)
    both = pd.DataFrame(typed_rows("solver", "type", "type", harder) + typed_rows("retrieval", "type", "type", harder))
    assert B.difference_claim(both, *args).verdict == HOLDS
    # Acc differs by the syntax credit alone (assertion holes left empty: Acc 0 vs 0.25), SemAcc is 0 on both
    # types: not a finding about difficulty → inconclusive (interval [0, 0]), not holds
    syntax_only = typed_rows("solver", "type", "type", {"invariant": [0.0] * n, "assertion": [0.0] * n},
                             acc={"invariant": [0.25] * n, "assertion": [0.0] * n})
    claim = B.difference_claim(pd.DataFrame(syntax_only + typed_rows("retrieval", "type", "type", harder)), *args)
    assert claim.verdict == INCONCLUSIVE
    # one completer clearly the other way round refutes the conjunction
    reverse = {"invariant": [0.0] * n, "assertion": [1.0] * n}
    mixed = pd.DataFrame(typed_rows("solver", "type", "type", reverse) + typed_rows("retrieval", "type", "type",
                                                                                    harder))
    assert B.difference_claim(mixed, *args).verdict == REFUTED


def test_loc_claim_holds_and_is_inconclusive_on_noise():
    args = ("middle_harder_than_front", "t", "p", "loc", "loc", "front", "middle", 500, 0)
    clear = {"front": [1.0, 1.0, 1.0, 0.0, 1.0], "middle": [0.0, 0.0, 1.0, 0.0, 0.0]}
    noise = {"front": [1.0, 0.0, 1.0, 0.0, 1.0], "middle": [0.0, 1.0, 1.0, 1.0, 0.0]}
    good = pd.DataFrame(typed_rows("solver", "loc", "loc", clear) + typed_rows("retrieval", "loc", "loc", clear))
    assert B.difference_claim(good, *args).verdict == HOLDS
    noisy = pd.DataFrame(typed_rows("solver", "loc", "loc", clear) + typed_rows("retrieval", "loc", "loc", noise))
    assert B.difference_claim(noisy, *args).verdict == INCONCLUSIVE


def lifted(factors: list[float]) -> tuple[pd.DataFrame, pd.DataFrame]:
    cov = json.dumps({"Lemma": 1.0, "Mp": 1.0})
    programs = pd.DataFrame([{"program_id": f"p{i}", "status": "lifted", "verified": True, "min_coverage": 1.0,
                              "coverage": cov, "proof_lines_before": 10 + i, "proof_lines_after": f * (10 + i),
                              "unpruned_lines": 2 * f * (10 + i)} for i, f in enumerate(factors)])
    steps = pd.DataFrame([{"status": "kept", "provenance": "q0:n1:mp"}])
    return programs, steps


def test_proof_line_factor_is_a_bound_on_the_bootstrap_ci_and_fidelity_is_sanity():
    fidelity, line = B.lift_claims(*lifted([2.8, 3.0, 3.3, 2.9, 3.1]), 500, 0)
    assert fidelity.kind == SANITY and fidelity.judgement is None and "VIOLATED" not in fidelity.measured_value
    assert line.verdict == HOLDS and line.judgement.low >= B.LINE_FACTOR_MIN
    assert B.lift_claims(*lifted([1.5, 1.7, 1.6, 1.8]), 500, 0)[1].verdict == REFUTED
    assert B.lift_claims(*lifted([1.0, 3.0, 1.2, 3.2]), 500, 0)[1].verdict == INCONCLUSIVE
    assert B.lift_claims(*lifted([3.0]), 500, 0)[1].verdict == INCONCLUSIVE   # one program: no interval
