"""RegTrace: vocabulary, gold traces, relevance labels, splits, parsers and the RL reward."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from assets.flowtracer import data as D

EXAMPLE = "A=2;B=9;C=1;A-;B-;C-;A+;B+;B-;?B"
EXAMPLE_TRACE = "A1;B8;C0;A2;B9;B8;#8"


@pytest.fixture(scope="module")
def sample() -> pd.DataFrame:
    return D.generate(np.random.default_rng(7), 1000, 4, 8)


def test_vocabulary_is_fixed():
    assert D.VOCAB == ["<pad>", "<bos>", "<eos>", *"ABC0123456789+-=;?#"]
    assert (D.PAD_ID, D.BOS_ID, D.EOS_ID) == (0, 1, 2)
    assert len(D.vocab_md5()) == 32 and D.vocab_md5() == D.vocab_md5()


def test_worked_example():
    assert D.interpret(EXAMPLE) == (EXAMPLE_TRACE, 8)
    labels, kinds = D.annotate(EXAMPLE)
    assert labels == "DDSRRSDDSDDSRRSRRSHA"        # B has no '=' op: every B step is relevant
    assert kinds == "LPSLPSLPSLPSLPSLPSHA"
    assert D.parse_trace(EXAMPLE_TRACE) == ([("A", 1), ("B", 8), ("C", 0), ("A", 2), ("B", 9), ("B", 8)], 8)
    ids = D.sequence_ids(EXAMPLE, EXAMPLE_TRACE)
    assert ids[0] == D.BOS_ID and ids[-1] == D.EOS_ID
    assert D.decode(ids) == f"<bos>{EXAMPLE}{EXAMPLE_TRACE}<eos>"
    assert D.decode(ids[D.trace_start(EXAMPLE):-1]) == EXAMPLE_TRACE


def test_ops_wrap_mod_10_and_assign_resets():
    assert D.interpret("A=9;B=0;C=5;A+;B-;?A") == ("A0;B9;#0", 0)
    assert D.interpret("A=9;B=0;C=5;A+;B-;?B") == ("A0;B9;#9", 9)
    assert D.interpret("A=0;B=0;C=0;A-;A-;A=3;A+;?A") == ("A9;A8;A3;A4;#4", 4)
    assert D.interpret("A=4;B=4;C=4;C=7;C=7;?C") == ("C7;C7;#7", 7)


def test_relevance_labels_on_hand_made_prompts():
    # queried register with an '=' op: its steps before the last '=' are distractors
    assert D.annotate("A=1;B=2;C=3;A+;B+;A=5;A-;?A") == ("DDSDDSRRSRRSHA", "LPSLPSLCSLPSHA")
    # two '=' ops: only the last one counts
    assert D.annotate("A=1;B=2;C=3;C=4;C+;C=0;B-;?C")[0] == "DDSDDSRRSDDSHA"
    # queried register without an '=' op: every one of its steps is relevant, others are distractors
    assert D.annotate("A=1;B=2;C=3;B+;C=9;B-;A=0;?B")[0] == "RRSDDSRRSDDSHA"
    # a query of an untouched register has no relevant step
    assert D.annotate("A=1;B=2;C=3;B+;C-;?A")[0] == "DDSDDSHA"


def test_generator_agrees_with_the_interpreter(sample):
    assert len(sample) == 1000
    for row in sample.itertuples(index=False):
        assert D.interpret(row.prompt) == (row.trace, row.answer)
        assert D.annotate(row.prompt) == (row.labels, row.kinds)
        assert row.prompt.endswith(f"?{row.query}")
        assert len(row.labels) == len(row.kinds) == len(row.trace)
        assert set(row.labels) <= set(D.LABELS) and set(row.kinds) <= set(D.KINDS)
        assert row.n_tokens == len(D.sequence_ids(row.prompt, row.trace))
    assert sample["n_ops"].between(4, 8).all() and set(sample["n_ops"]) == set(range(4, 9))
    assert set(sample["query"]) == set(D.REGISTERS)
    assert (sample["labels"].str.contains("R")).all()       # the query touches a register with a step


def test_columns_and_types(sample):
    assert list(sample.columns) == list(D.COLUMNS)
    for column in ("problem_id", "answer", "n_ops", "n_tokens"):
        assert sample[column].dtype == np.int64
    assert sample["answer"].between(0, 9).all()


def test_encode_decode_round_trip(sample):
    for row in sample.head(200).itertuples(index=False):
        text = D.sequence(row.prompt, row.trace)
        ids = D.encode(text)
        assert D.decode(ids) == text
        assert all(0 <= i < len(D.VOCAB) for i in ids)
    assert D.encode("<pad><bos><eos>") == [0, 1, 2]
    assert D.decode(list(range(len(D.VOCAB)))) == "".join(D.VOCAB)
    with pytest.raises(ValueError, match="unknown character"):
        D.encode("A=x")
    with pytest.raises(ValueError, match="special"):
        D.encode("<unk>")
    with pytest.raises(ValueError, match="outside the vocabulary"):
        D.decode([len(D.VOCAB)])


def test_length_within_limit_at_max_ops():
    frame = D.generate(np.random.default_rng(3), 300, 8, 8)
    assert (frame["n_ops"] == 8).all()
    assert frame["n_tokens"].max() <= D.MAX_TOKENS
    worst = "A=0;B=0;C=0;" + "A=1;" * 8 + "?A"                    # longest prompt: 8 assignments
    trace, _ = D.interpret(worst)
    assert D.n_tokens(worst, trace) == 74 <= D.MAX_TOKENS


def test_splits_disjoint_and_deterministic():
    sizes = {"train": 300, "val": 50, "test": 50, "rl": 60, "rl_eval": 40}
    frame = D.splits(np.random.default_rng(11), sizes, 4, 8)
    assert frame["split"].value_counts().to_dict() == sizes
    assert frame["prompt"].is_unique
    assert list(frame.columns) == ["split", *D.COLUMNS]
    assert (frame["problem_id"].to_numpy() == np.arange(len(frame))).all()
    again = D.splits(np.random.default_rng(11), sizes, 4, 8)
    pd.testing.assert_frame_equal(frame, again)
    other = D.splits(np.random.default_rng(12), sizes, 4, 8)
    assert not frame["prompt"].equals(other["prompt"])


def test_splits_deduplicate_a_small_space():
    # no ops: 1000 initial states × 3 queries = 3000 prompts, so 2500 draws without dedup would repeat
    frame = D.splits(np.random.default_rng(0), {"train": 2000, "test": 500}, 0, 0)
    assert frame["prompt"].is_unique and len(frame) == 2500
    assert (frame["trace"] == frame["answer"].map(lambda a: f"#{a}")).all()
    with pytest.raises(ValueError, match="distinct prompts"):
        D.splits(np.random.default_rng(0), {"train": 2900, "test": 101}, 0, 0)    # 3001 > 3000
    with pytest.raises(ValueError, match="min_ops"):
        D.generate(np.random.default_rng(0), 1, 5, 4)


@pytest.mark.parametrize("prompt", ["", "hello", "A=2;B=9;C=1", "A=2;B=9;C=1;A*;?A", "A=2;B=9;C=1;A+;?D",
                                     "B=2;A=9;C=1;A+;?A", "A=22;B=9;C=1;?A", "A=2;B=9;C=1;A=;?A",
                                     "A=2;B=9;C=1;A+;?A;", "A=2;B=9;C=1;A+?A"])
def test_interpret_raises_on_garbage(prompt):
    with pytest.raises(ValueError, match="unparsable prompt"):
        D.interpret(prompt)


@pytest.mark.parametrize("trace", ["", "A1;B8", "A1;B8;#", "A1;B8;#12", "A1;B8#8", "A1;D8;#8", "A1;BB;#8",
                                   "A1;;#8", "#8#8", "A1;#8<eos>", "a1;#8"])
def test_parse_trace_raises_on_garbage(trace):
    with pytest.raises(ValueError, match="unparsable trace"):
        D.parse_trace(trace)


def test_parse_trace_accepts_an_empty_trace_body():
    assert D.parse_trace("#3") == ([], 3)


def test_reward():
    assert D.reward(8, EXAMPLE_TRACE) == 1.0
    assert D.reward(8, EXAMPLE_TRACE + "<eos>") == 1.0
    assert D.reward(8, EXAMPLE_TRACE + "<eos><pad><pad>") == 1.0
    assert D.reward(8, "#8<eos>") == 1.0                    # only the answer is rewarded
    assert D.reward(7, EXAMPLE_TRACE) == 0.0                # wrong answer
    assert D.reward(8, "A1;B8;C0;A2;B9;B8;8") == 0.0        # no '#'
    assert D.reward(8, "A1;B8;C0;A2;B9;B8;#88") == 0.0      # text after the answer digit
    assert D.reward(8, "A1;Q8;#8") == 0.0                   # an unparsable step
    assert D.reward(8, "") == 0.0
