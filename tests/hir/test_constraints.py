"""The constraint bank: golden cases per checker, the conflict filter, the six templates."""
from __future__ import annotations

import pytest

from assets.hir.constraints import (
    GOLDEN,
    TEMPLATES,
    Constraint,
    ConstraintError,
    conflicts,
    count_sentences,
    judge,
    parse_constraint,
    render,
    rewrite,
)


def check(spec: str, text: str) -> bool:
    return parse_constraint(spec).check(text.split())


@pytest.mark.parametrize("spec, text, expected", [
    ("include_word:police", "the police came .", True),
    ("include_word:police", "the policeman came .", False),      # whole words only
    ("exclude_word:the", "a man .", True),
    ("exclude_word:the", "the man .", False),
    ("min_words:3", "a b , c .", True),                          # punctuation is not a word
    ("min_words:4", "a b , c .", False),
    ("max_words:3", "a b , c .", True),
    ("max_words:2", "a b , c .", False),
    ("start_with:he", "he said .", True),
    ("start_with:he", "then he said .", False),
    ("start_with:he", "", False),
    ("end_with:!", "stop !", True),
    ("end_with:!", "stop ! now", False),
    ("include_number", "in 2001 .", True),
    ("include_number", "<num> people .", True),
    ("include_number", "many people .", False),
    ("no_commas", "a , b", False),
    ("no_commas", "a b", True),
    ("num_sentences:1", "a b .", True),
    ("num_sentences:2", "a b . c", True),                        # trailing words count as a sentence
    ("num_sentences:2", "a b . c ! ", True),
    ("num_sentences:3", "a . . b .", False),                     # an empty sentence is not counted
    ("word_twice:the", "the a the", True),
    ("word_twice:the", "the a", False),
])
def test_golden_case(spec, text, expected):
    assert check(spec, text) is expected


def test_shipped_golden_cases_hold():
    for spec, text, expected in GOLDEN:
        assert check(spec, text) is expected, spec


def test_count_sentences_known_answers():
    assert count_sentences([]) == 0
    assert count_sentences("a , b".split()) == 1
    assert count_sentences("a . b ? c !".split()) == 3


def test_judge_dense_sparse():
    criteria = [parse_constraint(s) for s in ("min_words:2", "no_commas", "include_word:x")]
    judged, dense, sparse = judge("a , b".split(), criteria)
    assert judged == [True, False, False] and dense == pytest.approx(1 / 3) and sparse == 0.0
    assert judge("x y".split(), criteria)[1:] == (1.0, 1.0)
    with pytest.raises(ConstraintError):
        judge(["a"], [])


def test_unknown_and_malformed_constraints_raise():
    for spec in ("shout", "min_words:many", "min_words:0", "end_with:;", "include_word:", "no_commas:x"):
        with pytest.raises(ConstraintError):
            parse_constraint(spec)


def test_conflict_filter():
    c = parse_constraint
    assert conflicts([c("include_word:a"), c("exclude_word:a")])
    assert conflicts([c("word_twice:a"), c("exclude_word:a")])
    assert conflicts([c("start_with:a"), c("exclude_word:a")])
    assert conflicts([c("min_words:12"), c("max_words:10")])
    assert conflicts([c("end_with:."), c("end_with:!")])
    assert conflicts([c("no_commas"), c("no_commas")])
    assert not conflicts([c("min_words:5"), c("max_words:10"), c("include_word:a"), c("exclude_word:b")])


@pytest.mark.parametrize("q_type", TEMPLATES)
def test_rendering_lists_exactly_the_given_constraints(q_type):
    question = "write about police .".split()
    bank = [parse_constraint(s) for s in ("min_words:5", "include_word:fire", "no_commas", "end_with:?")]
    for k in range(len(bank) + 1):
        tokens = render(question, bank[:k], q_type)
        text = " " + " ".join(tokens) + " "
        for j, c in enumerate(bank):
            assert (" " + " ".join(c.phrase()) + " " in text) is (j < k), (q_type, k, c.spec)
        # the question appears once, unchanged
        assert text.count(" write about police . ") == 1
    assert render(question, bank, q_type) != render(question, bank[:1], q_type)


def test_type3_numbers_its_rules():
    tokens = render(["q"], [parse_constraint("no_commas"), parse_constraint("include_number")], "type3")
    assert tokens[:2] == ["q", "<nl>"] and "rules" in tokens
    assert " ".join(tokens).endswith("<nl> 1 . no commas <nl> 2 . include a number")


def test_unknown_template_raises():
    with pytest.raises(ConstraintError):
        render(["q"], [Constraint("no_commas")], "type7")


def test_rewrite_keeps_only_the_satisfied_ones_in_order():
    criteria = [parse_constraint(s) for s in ("min_words:2", "no_commas", "include_number")]
    assert rewrite(criteria, [True, False, True]) == [criteria[0], criteria[2]]
    with pytest.raises(ConstraintError):
        rewrite(criteria, [True, True, True])            # a success is not a replay
    with pytest.raises(ConstraintError):
        rewrite(criteria, [False, False, False])
