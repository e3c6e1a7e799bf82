"""FlowTracer data-quality predicates on valid and corrupted RegTrace frames."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from assets.flowtracer import checks as C
from assets.flowtracer import data as D

SIZES = {"train": 200, "val": 40, "test": 40, "rl": 40, "rl_eval": 40}


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return D.splits(np.random.default_rng(5), SIZES, 4, 8)


def problems(result) -> str:
    return " | ".join(result.problems)


def test_valid_dataset_passes(frame):
    result = C.dataset_valid(frame)
    assert result.passed, result.message()
    assert set(result.metadata["both_labels"]) == set(SIZES)
    assert all(v >= C.MIN_BOTH_LABELS for v in result.metadata["both_labels"].values())
    assert result.metadata["max_tokens"] <= D.MAX_TOKENS


def test_wrong_answer(frame):
    bad = frame.copy()
    bad.loc[3, "answer"] = (bad.loc[3, "answer"] + 1) % 10
    text = problems(C.dataset_valid(bad))
    assert "1 rows whose answer the interpreter does not reproduce" in text
    assert bad.loc[3, "prompt"] in text


def test_wrong_trace_and_labels(frame):
    bad = frame.copy()
    trace = bad.loc[4, "trace"]
    bad.loc[4, "trace"] = trace[:1] + str((int(trace[1]) + 1) % 10) + trace[2:]
    bad.loc[6, "labels"] = bad.loc[6, "labels"].replace("R", "D")
    text = problems(C.dataset_valid(bad))
    assert "whose trace the interpreter does not reproduce" in text
    assert "whose labels the interpreter does not reproduce" in text and bad.loc[6, "prompt"] in text


def test_prompt_duplicated_across_splits(frame):
    bad = frame.copy()
    test_row = bad.index[bad["split"] == "test"][0]
    bad.loc[test_row, bad.columns != "split"] = bad.loc[0, bad.columns != "split"]
    text = problems(C.dataset_valid(bad))
    assert "1 prompts in more than one split" in text and "not disjoint" in text
    assert "['test', 'train']" in text


def test_prompt_duplicated_within_a_split(frame):
    bad = pd.concat([frame, frame.iloc[[1]]], ignore_index=True)
    assert "1 prompts repeated within a split" in problems(C.dataset_valid(bad))


def test_over_long_sequence(frame):
    bad = frame.copy()
    prompt = "A=1;B=2;C=3;" + "A=4;" * 12 + "?A"                    # 12 ops, valid but too long
    trace, answer = D.interpret(prompt)
    labels, kinds = D.annotate(prompt)
    bad.loc[2, ["prompt", "trace", "answer", "query", "n_ops", "labels", "kinds"]] = \
        [prompt, trace, answer, "A", 12, labels, kinds]
    text = problems(C.dataset_valid(bad))
    assert f"1 rows with sequences over {D.MAX_TOKENS} tokens (longest 102)" in text
    assert "outside [4, 8]" in text


def test_unknown_character(frame):
    bad = frame.copy()
    bad.loc[5, "trace"] = bad.loc[5, "trace"].replace(";", "|", 1)
    text = problems(C.dataset_valid(bad))
    assert "characters outside the vocabulary ['|']" in text and bad.loc[5, "prompt"] in text


def test_unparsable_prompt(frame):
    bad = frame.copy()
    bad.loc[7, "prompt"] = "A=1;B=2;C=3;A*;?A"
    assert "1 prompts do not parse" in problems(C.dataset_valid(bad))


def test_labels_missing(frame):
    bad = frame.copy()
    bad["labels"] = bad["labels"].str.replace("R", "D")
    text = problems(C.dataset_valid(bad))
    assert "split train: 0.0% of traces hold both labels R and D (need ≥ 90%)" in text
    no_column = frame.drop(columns=["labels"])
    assert "required columns missing: ['labels']" in problems(C.dataset_valid(no_column))


def test_label_fraction_too_low_on_a_valid_but_unbalanced_dataset():
    # two ops and a uniform query: the queried register is untouched in ~4/9 of the traces
    frame = D.splits(np.random.default_rng(1), {"train": 200}, 2, 2, query="uniform")
    params = SimpleNamespace(data=SimpleNamespace(min_ops=2, max_ops=2))
    result = C.dataset_valid(frame, params)
    assert len(result.problems) == 1, result.message()
    assert "split train:" in result.problems[0] and "hold both labels R and D" in result.problems[0]
    assert result.metadata["both_labels"]["train"] < 0.7


def test_n_ops_bounds_follow_params(frame):
    assert "outside [5, 8]" in problems(C.dataset_valid(frame, {"min_ops": 5, "max_ops": 8}))
    assert C.dataset_valid(frame, SimpleNamespace(data=SimpleNamespace(min_ops=4, max_ops=8))).passed


def test_vocab_matches(frame):
    assert C.vocab_matches(D.vocab_md5(), frame).passed
    assert C.vocab_matches({"vocab_md5": D.vocab_md5()}).passed
    other = "0" * 32
    text = problems(C.vocab_matches(other, frame))
    assert "trained on another vocabulary" in text and other in text and D.vocab_md5() in text
    assert "carries no vocabulary md5" in problems(C.vocab_matches({"final_loss": 1.0}))
    bad = frame.copy()
    bad.loc[0, "prompt"] = "A=1;B=2;C=3;a+;?A"
    assert "outside the vocabulary: ['a']" in problems(C.vocab_matches(D.vocab_md5(), bad))
