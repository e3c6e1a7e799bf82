"""Z3 proofs (legacy rule names under Verus's options) and the deterministic lift."""
from __future__ import annotations

import json

import pytest
import z3

from assets.vcot import bench, data, lift, runs, smt, vc
from assets.vcot import lang as L
from tests.vcot import programs as P


def test_z3_version_is_the_pinned_one_and_proofs_need_the_context_first():
    assert smt.Z3_VERSION == "5.4.0"
    ctx = smt.proof_context()
    x = z3.Int("x", ctx)
    verdict, proof = smt.prove_with_proof([x > 2, z3.Not(x > 1)], ctx, 10**6)
    assert verdict.proved and proof is not None
    assert {n.rule for n in smt.proof_dag(proof)} <= set(smt.RULE_TIER) | set(smt.STRUCTURAL)


def test_the_36_rules_in_three_tiers():
    assert len(smt.RULE_TIER) == 36
    tiers = [smt.RULE_TIER[r] for r in smt.RULE_TIER]
    assert (tiers.count("high"), tiers.count("medium"), tiers.count("low")) == (8, 12, 16)
    assert {r for rules in smt.CATEGORIES.values() for r in rules} == set(smt.HIGH_RULES)


@pytest.fixture(scope="module")
def corpus():
    return data.generate_corpus(4, 0)


def test_proof_rule_names_are_legacy_names_within_the_36(corpus):
    queries = runs.vc_queries(corpus.iloc[[3]], 2 * 10**6)       # the binary-search program
    assert (queries["status"] == "unsat").all()
    seen: set[str] = set()
    for text in queries["smt2"]:
        summary = runs.proof_summary(text, 2 * 10**6)
        assert summary["has_proof"] and summary["unknown_rule"] == ""
        seen |= set(json.loads(summary["histogram"]))
    assert seen <= set(smt.RULE_TIER)
    # z3 5.4 still writes the legacy proof format (else: pin the last 4.x that does)
    assert {"mp", "th-lemma", "unit-resolution", "quant-inst", "asserted", "rewrite"} <= seen


def test_an_unknown_rule_is_refused():
    with pytest.raises(smt.SolverError, match="unknown proof rule 'frobnicate'"):
        smt.canonical_rule("frobnicate")
    assert smt.canonical_rule("sk") == "skolemize"


def test_rlimit_exhaustion_is_unknown_not_unsat():
    program = L.parse(data.generate_corpus(4, 0)["text"].iloc[3])
    results = vc.verify(program, 50)
    assert any(v.status == "unknown" for _, v in results)
    assert all(v.proved for _, v in vc.verify(program, 2 * 10**6))


@pytest.fixture(scope="module")
def lifted(corpus):
    text = corpus["text"].iloc[2]                 # a clover program: lemmas and recursive spec fns
    return text, lift.lift(L.parse(text), lift.LiftConfig(rlimit=14_000, trivial_rlimit=400))


def test_lifted_program_verifies_with_traced_steps(lifted):
    original, res = lifted
    assert not lift.failing(res.program, 14_000)
    assert res.kept and min(res.coverage.values()) >= 0.9
    for step in res.kept:
        assert step.provenance and all(smt.RULE_TIER[rule] == "high" for _, _, rule in step.provenance)
    assert res.proof_lines_after > res.proof_lines_before
    # the lift only adds proof: the exec code and specs are unchanged
    assert L.skeleton_hash(res.program) == L.skeleton_hash(L.parse(original))
    assert L.print_program(L.parse(res.text)) == res.text


def test_lifted_steps_are_not_trivial(lifted):
    _, res = lifted
    statuses = {s.status for s in res.steps}
    assert statuses <= {"kept", "dropped", "pruned_trivial", "pruned_redundant", "repair_dropped", "trivial"}
    texts = [s.text for s in res.kept]
    assert len(texts) == len(set(texts))             # redundant duplicates pruned


def test_a_program_that_does_not_verify_is_refused_naming_the_obligation():
    broken = L.parse(P.UNFOLD.replace("    assert(tri(0) == 0);\n", ""))
    with pytest.raises(lift.LiftFailure, match=r"one: postcondition `r == 1`"):
        lift.require_verifies(broken, 10**6)


def test_blocks_of_a_lifted_program(lifted):
    _, res = lifted
    found = bench.blocks(res.text)
    kinds = {b.kind for b in found}
    assert kinds == {"assertion", "invariant", "lemma"}
