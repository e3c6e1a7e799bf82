"""Offline text, synonym filtering and attacks: realized rates, invariants, no leakage."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from assets.brew import data


@pytest.fixture(scope="module")
def corpus():
    return data.load_corpus(0.8, seed=0)


def test_corpus_split_by_document(corpus):
    lee = corpus[corpus["source"] == "lee_bg"]
    assert len(lee) == 300 and (lee["split"] == "lm").sum() == 240
    assert (corpus[corpus["source"] != "lee_bg"]["split"] == "heldout").all()
    assert corpus["doc_id"].is_unique


def test_human_windows_come_from_heldout_text_only(corpus):
    windows = data.human_windows(corpus, 241, 240)
    assert (windows["n_tokens"] == 241).all() and len(windows) > 50
    lm_text = " ".join(corpus[corpus["split"] == "lm"]["text"]).lower()
    # a 12-token human snippet never appears verbatim in the LM's training documents
    snippets = [" ".join(t.split(" ")[100:112]) for t in windows["tokens"].head(20)]
    assert sum(s in " ".join(data.tokenize(lm_text)) for s in snippets) == 0


def test_human_windows_halves_share_no_document(corpus):
    windows = data.human_windows(corpus, 241, 240, seed=3)
    assert set(windows["split"]) == set(data.HUMAN_SPLITS) and windows["text_id"].is_unique
    docs = {split: {d for ds in g["documents"] for d in ds.split(" ")} for split, g in windows.groupby("split")}
    assert docs["calibration"] and docs["evaluation"] and not docs["calibration"] & docs["evaluation"]
    heldout = set(corpus.loc[corpus["split"] == "heldout", "doc_id"])
    assert docs["calibration"] | docs["evaluation"] <= heldout
    sizes = windows["split"].value_counts()
    assert abs(sizes["calibration"] - sizes["evaluation"]) <= 0.25 * len(windows)     # two halves
    assert windows.equals(data.human_windows(corpus, 241, 240, seed=3))
    assert not windows.equals(data.human_windows(corpus, 241, 240, seed=4))


def test_strict_synonym_subtable_keeps_simlex_and_high_cosine_pairs():
    table = pd.DataFrame({"word": ["a", "b", "c"], "synonym": ["x", "y", "z"],
                          "source": ["simlex", "minilm", "minilm"], "similarity": [0.71, 0.70, 0.80]})
    assert data.synonym_subtable(table, 0.75)["word"].tolist() == ["a", "c"]
    assert data.synonym_subtable(table, None).equals(table)


def test_inflections_and_filters():
    stop = data.stopwords()
    assert data.is_inflection("year", "years") and data.is_inflection("attack", "attacked")
    assert data.is_inflection("australia", "australian")
    assert not data.is_inflection("big", "large")
    pairs = pd.DataFrame({"word": ["big", "year", "the", "big", "big"],
                          "synonym": ["large", "years", "a", "huge", "zzz"], "source": "minilm", "similarity": 0.8})
    kept = data.filter_pairs(pairs, {"big", "large", "year", "years", "the", "a", "huge"}, stop)
    assert set(zip(kept["word"], kept["synonym"])) == {("big", "large"), ("big", "huge")}


def test_simlex_pairs_are_symmetric_and_above_the_score():
    pairs = data.simlex_pairs(7.0)
    assert len(pairs) > 300 and (pairs["similarity"] >= 0.7).all()
    assert set(zip(pairs["word"], pairs["synonym"])) == set(zip(pairs["synonym"], pairs["word"]))
    assert ("hard", "difficult") in set(zip(pairs["word"], pairs["synonym"]))


def test_synonym_attack_hits_its_rate_and_only_swaps_synonyms():
    rng = np.random.default_rng(0)
    synonyms = {"big": ["large", "huge"], "fast": ["rapid"], "said": ["stated"]}
    tokens = ["ctx"] + ["big", "dog", "fast", "said", "the"] * 40      # 200 scored tokens, 120 replaceable
    out, replaced, edits = data.synonym_attack(tokens, 0.10, synonyms, rng)
    assert replaced == 20 and len(out) == len(tokens) and out[0] == "ctx"
    assert sum(a != b for a, b in zip(tokens, out)) == 20
    assert all(new in synonyms[old] for _, old, new in edits)
    # not enough replaceable tokens: the realized rate is what was reachable
    _, replaced, _ = data.synonym_attack(["ctx"] + ["big"] + ["dog"] * 99, 0.10, synonyms, rng)
    assert replaced == 1


def test_insertion_deletion_copy_paste_rates():
    rng = np.random.default_rng(1)
    tokens = ["ctx"] + [f"w{i}" for i in range(200)]
    inserted, n = data.insertion_attack(tokens, 0.05, ["a", "b"], np.array([0.5, 0.5]), rng)
    assert n == 10 and len(inserted) == 211 and inserted[0] == "ctx"
    burst, n = data.burst_insertion_attack(tokens, 0.05, ["a", "b"], np.array([0.5, 0.5]), rng)
    assert n == 10 and len(burst) == 211 and burst[0] == "ctx"
    inserted_at = [i for i, t in enumerate(burst) if t in ("a", "b")]
    runs = 1 + sum(1 for x, y in zip(inserted_at, inserted_at[1:]) if y != x + 1)
    assert runs <= data.BURSTS and [t for t in burst if t not in ("a", "b")] == tokens   # order kept
    deleted, n = data.deletion_attack(tokens, 0.05, rng)
    assert n == 10 and len(deleted) == 191 and deleted[0] == "ctx"
    human = [["h"] + [f"h{i}" for i in range(300)]]
    pasted, n = data.copy_paste_attack(tokens, 0.25, human, rng)
    assert n == 50 and len(pasted) == len(tokens) and sum(t.startswith("h") for t in pasted) == 50


def test_coverage_counts_content_and_all_tokens():
    table = pd.DataFrame({"word": ["big"], "synonym": ["large"], "source": "simlex", "similarity": 0.9})
    cov = data.synonym_coverage([["ctx", "big", "dog", "the", "big"]], table, data.stopwords())
    assert cov["content_coverage"] == pytest.approx(2 / 3) and cov["reachable_rate"] == pytest.approx(0.5)
