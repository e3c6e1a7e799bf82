"""MiniVerus parsing / printing and the verification conditions (Verus semantics)."""
from __future__ import annotations

import pytest

from assets.vcot import data, vc
from assets.vcot import lang as L
from tests.vcot import programs as P

RLIMIT = 10**6


def verdicts(text: str, mode: str = "verus") -> dict[str, str]:
    """{obligation label (without the line): status}."""
    return {ob.label.split(" (line")[0]: v.status for ob, v in vc.verify(L.parse(text), RLIMIT, mode)}


@pytest.mark.parametrize("text", [P.LOOP, P.UNFOLD, P.BY, P.TWO_ASSERTS])
def test_printer_round_trips_exactly(text):
    program = L.parse(text)
    assert L.print_program(program) == text
    assert L.parse(L.print_program(program)) == program


def test_every_generated_family_round_trips():
    corpus = data.generate_corpus(8, 3)
    assert set(corpus["family"]) == {"diffy", "mbpp", "clover", "bsearch"}
    for text in corpus["text"]:
        assert L.print_program(L.parse(text)) == text


def test_chained_comparison_and_precedence_survive_printing():
    e = L.parse_expr("0 <= k < n && (a || b) ==> x - (y - z) == x - y + z")
    assert L.parse_expr(L.pexpr(e)) == e
    assert isinstance(e, L.Binary) and e.op == "==>"


def test_missing_invariant_fails_only_its_dependent_preservation():
    assert set(verdicts(P.LOOP).values()) == {"unsat"}
    broken = verdicts(P.LOOP.replace("            j == i,\n", ""))
    failing = {k for k, v in broken.items() if v != "unsat"}
    assert failing == {"invariant `j <= n` preserved"}


def test_two_step_unfolding_needs_the_middle_assert():
    assert set(verdicts(P.UNFOLD).values()) == {"unsat"}
    without = P.UNFOLD.replace("    assert(tri(0) == 0);\n", "")
    assert verdicts(without)["postcondition `r == 1`"] != "unsat"       # fuel 1: no chained unfolding
    assert verdicts(without, "default")["postcondition `r == 1`"] == "unsat"   # Z3 defaults are stronger


def test_assert_by_leaks_only_its_goal():
    inside = verdicts(P.BY)
    assert inside["assert `tri(1) >= 0` by {…}"] == "unsat"
    assert inside["postcondition `r == 1`"] != "unsat"       # tri(0) == 0 stayed inside the by block
    flat = P.BY.replace("    assert(tri(1) >= 0) by {\n        assert(tri(0) == 0);\n    }\n",
                        "    assert(tri(0) == 0);\n    assert(tri(1) >= 0);\n")
    assert set(verdicts(flat).values()) == {"unsat"}


def test_checked_goal_becomes_an_assumption():
    vcs = vc.generate(L.parse(P.TWO_ASSERTS))
    post = [ob for ob in vcs.obligations if ob.kind == "post"][0]
    assert post.tags.count("fact") == 2


def test_bad_input_is_named_with_line_and_column():
    with pytest.raises(L.MiniVerusError, match=r"line 2:11"):
        L.parse("fn f() {\n  let x = ;\n}\n")
    assert L.check_names(L.parse("fn f() {\n    let x = y;\n}\n")) == ["line 2:13: unknown name 'y' in f"]
    assert "assume is not allowed" in L.check_names(L.parse("fn f() {\n    assume(true);\n}\n"))[0]
    assert "admit is not allowed" in L.check_names(L.parse("fn f() {\n    admit();\n}\n"))[0]
