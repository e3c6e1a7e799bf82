"""Perplexity and ONION detector scores."""

import numpy as np
import pytest

from assets.common.ngram import KneserNeyTrigram, tokenize
from assets.oscs.detectors import onion_score, perplexity_score, score_texts


@pytest.fixture(scope="module")
def toy_lm():
    corpus = ["the man said the fire was out", "the fire was near the town", "the man was in the town"] * 20
    return KneserNeyTrigram().fit([tokenize(t) for t in corpus], min_count=1)


def test_perplexity_score_is_mean_token_nll(toy_lm):
    texts = ["the man was near the fire", "the town"]
    expected = [-toy_lm.token_logprobs(tokenize(t), split_unk=True).mean() for t in texts]
    np.testing.assert_allclose(perplexity_score(toy_lm, texts), expected)


def test_onion_equals_brute_force_leave_one_out(toy_lm):
    text = "the man said cf the fire was out"
    tokens = tokenize(text)
    full = -toy_lm.token_logprobs(tokens, split_unk=True).mean()
    drops = [full - (-toy_lm.token_logprobs(tokens[:i] + tokens[i + 1 :], split_unk=True).mean())
             for i in range(len(tokens))]
    assert onion_score(toy_lm, [text])[0] == pytest.approx(max(drops))
    assert int(np.argmax(drops)) == tokens.index("cf")  # the trigger is the outlier word


def test_scores_are_finite_for_short_and_odd_inputs(toy_lm):
    texts = ["fire", "", "!!!", "qqq zzz", "the man said the fire was out"]
    for detector in ("perplexity", "onion"):
        scores = score_texts(toy_lm, texts, detector)
        assert scores.shape == (5,) and np.all(np.isfinite(scores))


def test_trigger_raises_both_scores(toy_lm):
    clean = ["the man said the fire was out"]
    triggered = ["the man said tq the fire was out"]
    assert perplexity_score(toy_lm, triggered)[0] > perplexity_score(toy_lm, clean)[0]
    assert onion_score(toy_lm, triggered)[0] > onion_score(toy_lm, clean)[0]
