"""Benign corpus, document split and attack generators."""

import pytest

from assets.oscs.data import (
    ADDSENT_TRIGGER,
    ATTACKS,
    FLUENT_PREAMBLES,
    RARE_WORD_TRIGGERS,
    load_benign_sentences,
    make_malicious,
    split_by_document,
)


@pytest.fixture(scope="module")
def sentences():
    return load_benign_sentences()


def test_corpus_has_both_sources_and_clean_text(sentences):
    assert set(sentences["source"]) == {"lee", "pang_lee"}
    assert (sentences["source"] == "pang_lee").sum() == 200  # one sentence per line
    assert not sentences["text"].str.contains("__label__").any()
    assert (sentences["text"].str.len() > 0).all()
    assert sentences["doc_id"].str.match(r"^(lee_bg|lee|pang_lee):\d+$").all()
    # ~300 + ~50 news documents, 20 pang_lee pseudo-documents of 10 lines
    assert sentences.loc[sentences["source"] == "pang_lee", "doc_id"].nunique() == 20
    assert sentences.loc[sentences["source"] == "lee", "doc_id"].nunique() >= 340


def test_split_by_document_is_disjoint_complete_and_deterministic(sentences):
    split = split_by_document(sentences, {"lm": 0.5, "calib": 0.2, "stream": 0.3}, seed=3)
    assert split["split"].notna().all()
    assert (split.groupby("doc_id")["split"].nunique() == 1).all()  # no document in two splits
    again = split_by_document(sentences, {"lm": 0.5, "calib": 0.2, "stream": 0.3}, seed=3)
    assert split["split"].equals(again["split"])
    other = split_by_document(sentences, {"lm": 0.5, "calib": 0.2, "stream": 0.3}, seed=4)
    assert not split["split"].equals(other["split"])
    for _, group in split.groupby("source"):
        document_share = group.groupby("doc_id")["split"].first().value_counts(normalize=True)
        assert document_share["lm"] == pytest.approx(0.5, abs=0.06)
        assert document_share["calib"] == pytest.approx(0.2, abs=0.06)


@pytest.mark.parametrize("attack", ATTACKS)
def test_make_malicious_is_deterministic_and_keeps_the_source_words(sentences, attack):
    texts = sentences["text"].tolist()[:300]
    first = make_malicious(texts, attack, 50, seed=7)
    assert first.equals(make_malicious(texts, attack, 50, seed=7))
    assert not first["text"].equals(make_malicious(texts, attack, 50, seed=8)["text"])
    assert (first["attack"] == attack).all()
    for text, trigger, index in zip(first["text"], first["trigger"], first["source_index"]):
        words, source = text.split(), texts[index].split()
        # the benign words survive, in order, as a subsequence of the attacked text
        remaining = iter(words)
        assert all(word in remaining for word in source)
        assert len(words) > len(source)
        if attack == "rare_word":
            added = trigger.split()
            assert 1 <= len(added) <= 3 and set(added) <= set(RARE_WORD_TRIGGERS)
            assert len(words) == len(source) + len(added)
        elif attack == "insert_sentence":
            assert trigger == ADDSENT_TRIGGER and ADDSENT_TRIGGER in text
        elif attack == "random_suffix":
            assert 15 <= len(trigger.split()) <= 20 and text.endswith(trigger)
        else:
            assert trigger in FLUENT_PREAMBLES and text.startswith(trigger)


def test_make_malicious_draws_without_replacement_when_possible(sentences):
    texts = sentences["text"].tolist()[:100]
    drawn = make_malicious(texts, "rare_word", 100, seed=0)["source_index"]
    assert sorted(drawn) == list(range(100))
    assert len(make_malicious(texts, "rare_word", 250, seed=0)) == 250
