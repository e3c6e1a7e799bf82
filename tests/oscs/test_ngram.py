"""Kneser–Ney trigram LM: normalisation, hand-computed probabilities, persistence."""

import numpy as np
import pytest

from assets.common.ngram import KneserNeyTrigram, tokenize


@pytest.fixture(scope="module")
def news_lm_and_heldout():
    from assets.oscs.data import load_benign_sentences, split_by_document

    sentences = split_by_document(load_benign_sentences(), seed=0)
    train = [tokenize(t) for t in sentences.loc[sentences["split"] == "lm", "text"]]
    heldout = [tokenize(t) for t in sentences.loc[sentences["split"] == "calib", "text"]]
    return KneserNeyTrigram().fit(train, min_count=2), heldout


def test_tokenize_lowercases_and_splits_punctuation():
    assert tokenize("The cat's HAT, 3d!") == ["the", "cat's", "hat", ",", "3d", "!"]


def test_tiny_corpus_matches_hand_computed_kneser_ney():
    lm = KneserNeyTrigram(discount=0.75).fit([["a", "b"], ["a", "c"]])
    # P1(a) = (1 - .75)/5 + .75 * 4/5 * 1/5 (5 continuation bigrams, 4 seen types, |V| = 5)
    p1 = 0.25 / 5 + 0.75 * 4 / 5 / 5
    p2 = (1 - 0.75) / 1 + 0.75 * 1 / 1 * p1  # P2(a | <s>)
    p3 = (2 - 0.75) / 2 + 0.75 * 1 / 2 * p2  # P3(a | <s>, <s>)
    assert np.exp(lm.token_logprobs(["a"])[0]) == pytest.approx(p3, rel=1e-12)
    assert p3 == pytest.approx(0.7665625)


@pytest.mark.parametrize("context", [("<s>", "<s>"), ("of", "the"), ("the", "government"), ("zzz", "qqq")])
def test_next_token_distribution_sums_to_one(news_lm_and_heldout, context):
    lm, _ = news_lm_and_heldout
    probs = lm.next_token_distribution(context)
    assert probs.sum() == pytest.approx(1.0, abs=1e-10)
    assert np.all(probs[np.arange(probs.size) != 2] > 0)  # every predictable id has mass


def test_arrays_round_trip_through_npz_without_pickle(news_lm_and_heldout, tmp_path):
    lm, heldout = news_lm_and_heldout
    np.savez(tmp_path / "lm.npz", **lm.to_arrays())
    with np.load(tmp_path / "lm.npz", allow_pickle=False) as arrays:
        loaded = KneserNeyTrigram.from_arrays(dict(arrays))
    for tokens in heldout[:20] + [["qqqq", "zzzz"], []]:
        for split_unk in (False, True):
            np.testing.assert_array_equal(
                loaded.token_logprobs(tokens, split_unk), lm.token_logprobs(tokens, split_unk)
            )


def test_batch_scoring_equals_per_sentence_scoring(news_lm_and_heldout):
    lm, heldout = news_lm_and_heldout
    batch = lm.batch_token_logprobs(heldout[:30], split_unk=True)
    for tokens, logprobs in zip(heldout[:30], batch):
        np.testing.assert_allclose(logprobs, lm.token_logprobs(tokens, split_unk=True))
    mean_nll = lm.batch_mean_nll(heldout[:30], split_unk=True)
    np.testing.assert_allclose(mean_nll, [-lp.mean() for lp in batch])


def test_split_unk_charges_oov_words_the_spelling_model(news_lm_and_heldout):
    lm, _ = news_lm_and_heldout
    plain = lm.token_logprobs(["the", "qqqq"])
    split = lm.token_logprobs(["the", "qqqq"], split_unk=True)
    assert lm.unk_type_count > 1
    assert split[1] == pytest.approx(plain[1] - np.log(lm.unk_type_count))
    assert split[0] == plain[0]


def test_heldout_benign_perplexity_below_random_suffix_attack(news_lm_and_heldout):
    from assets.oscs.data import make_malicious

    lm, heldout = news_lm_and_heldout
    texts = [" ".join(tokens) for tokens in heldout[:200]]
    attacked = make_malicious(texts, "random_suffix", 200, seed=0)["text"]
    benign_ppl = lm.perplexity(heldout[:200], split_unk=True)
    attack_ppl = lm.perplexity([tokenize(t) for t in attacked], split_unk=True)
    assert benign_ppl < attack_ppl
