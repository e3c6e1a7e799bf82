"""Benchmark construction (masking, Ratio / Type / Loc) and the judge (SynAcc / SemAcc / Acc)."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from assets.vcot import bench, judge
from assets.vcot import completers as C
from assets.vcot import lang as L
from tests.vcot import programs as P

RLIMIT = 10**6


def frame(text: str, pid: str = "p0", family: str = "diffy") -> pd.DataFrame:
    return pd.DataFrame([{"program_id": pid, "family": family, "text": text}])


def tasks_of(text: str) -> list[dict]:
    out = bench.build_tasks(frame(text), (0,), lambda pid, seed, k: 1000 * seed + k)
    return [{**t, "holes": json.loads(t["holes"])} for t in out.to_dict("records")]


def test_ratio_bucket_is_the_nearest_ten_percent():
    assert [bench.ratio_bucket(k, 8) for k in range(1, 9)] == [10, 30, 40, 50, 60, 80, 90, 100]
    assert [bench.ratio_bucket(k, 4) for k in range(1, 5)] == [30, 50, 80, 100]
    assert bench.ratio_bucket(1, 20) == 10           # 5 % rounds up to the lowest bucket
    assert bench.ratio_bucket(3, 7) == 40


def test_blocks_are_per_loop_per_run_and_per_lemma():
    found = bench.blocks(P.LOOP)
    assert [(b.kind, b.block_id) for b in found] == [("invariant", "inv:walk:0")]
    found = bench.blocks(P.TWO_ASSERTS)
    assert [(b.kind, b.end - b.start) for b in found] == [("assertion", 2)]


def test_gold_reinsertion_is_the_identity_and_counts_match():
    from assets.vcot import data, lift

    text = lift.lift(L.parse(data.generate_corpus(4, 0)["text"].iloc[2]),
                     lift.LiftConfig(rlimit=14_000, trivial_rlimit=400)).text
    tasks = tasks_of(text)
    for t in tasks:
        assert bench.fill(t["masked"], C.oracle(t), t["holes"]) == text
        assert len(t["holes"]) == t["n_holes"] >= 1
        assert all(bench.PLACEHOLDERS[h["kind"]] not in h["gold"] for h in t["holes"])
    n = len(bench.blocks(text))
    dims = pd.Series([t["dimension"] for t in tasks]).value_counts().to_dict()
    assert dims == bench.expected_counts(frame(text), (0,))
    assert dims["ratio"] == n and dims["type"] == 3 and dims["loc"] == 3
    assert {t["bucket"] for t in tasks if t["dimension"] == "ratio"} <= set(range(10, 101, 10))
    assert [t["n_holes"] for t in tasks if t["dimension"] == "ratio"] == list(range(1, n + 1))
    loc = [t for t in tasks if t["dimension"] == "loc"]
    assert all(h["kind"] != "lemma" for t in loc for h in t["holes"])      # Loc: exec blocks only
    assert sum(t["n_holes"] for t in loc) == sum(b.exec_block for b in bench.blocks(text))


def test_unknown_hole_ids_are_refused():
    task = tasks_of(P.TWO_ASSERTS)[0]
    with pytest.raises(bench.TaskError, match=r"unknown hole ids \['h7'\]"):
        bench.fill(task["masked"], {"h7": "assert(true);"}, task["holes"])


def test_acc_weights():
    assert [judge.acc_weight(s, m) for s, m in [(True, True), (False, True), (True, False), (False, False)]] == \
        [1.0, 0.5, 0.25, 0.0]


@pytest.fixture(scope="module")
def two():
    task = [t for t in tasks_of(P.TWO_ASSERTS) if t["dimension"] == "type"][0]
    return task, judge.Judge(judge.ProgramContext(P.TWO_ASSERTS, RLIMIT))


def test_a_conjunction_is_equivalent_to_two_asserts(two):
    task, scorer = two
    s = scorer.score(task, {"h0": "    assert(x >= 1 && y >= 1);"})
    assert s.syn and s.sem and s.acc == 1.0
    s = scorer.score(task, {"h0": "    assert(y >= 1);\n    assert(x >= 1);"})
    assert s.sem


def test_half_a_block_or_a_vacuous_block_is_not_equivalent(two):
    task, scorer = two
    for text in ("    assert(x >= 1);", "    assert(true);", "    assert(x + y >= 2);"):
        s = scorer.score(task, {"h0": text})
        assert s.syn and not s.sem and s.acc == 0.25, text


def test_syntax_failures_score_zero(two):
    task, scorer = two
    assert scorer.score(task, {"h0": "    assert(x >= ;"}).acc == 0.0          # does not parse
    assert scorer.score(task, {"h0": ""}).acc == 0.0                          # unfilled
    assert scorer.score(task, {"h0": "    assert(q >= 1);"}).acc == 0.0       # unknown name
    changed = scorer.score(task, {"h0": "    assert(x >= 1);\n    let w = 1;"})
    assert not changed.syn and "exec code or specs changed" in changed.reasons


def test_verified_is_measured_on_the_whole_program(two):
    task, scorer = two
    assert scorer.score(task, C.oracle(task)).verified
    assert scorer.score(task, {"h0": "    assert(x >= 1);"}).verified         # the steps were not needed


def test_invariant_blocks_compare_the_conjunction():
    task = [t for t in tasks_of(P.LOOP) if t["dimension"] == "type"][0]
    scorer = judge.Judge(judge.ProgramContext(P.LOOP, RLIMIT))
    gold = task["holes"][0]["gold"]
    reordered = "\n".join([gold.split("\n")[0], *reversed(gold.split("\n")[1:])])
    assert scorer.score(task, {"h0": reordered}).sem
    assert not scorer.score(task, C.trivial(task)).sem
    weaker = gold.replace("            j == i,\n", "")
    s = scorer.score(task, {"h0": weaker})
    assert s.syn and not s.sem and s.verified is False
