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


def test_mahalanobis_matches_scipy_and_the_shrunk_covariance():
    from scipy.spatial.distance import mahalanobis
    from sklearn.covariance import LedoitWolf

    from assets.oscs.detectors import fit_mahalanobis, mahalanobis_score

    rng = np.random.default_rng(0)
    train = rng.normal(size=(400, 6)) @ rng.normal(size=(6, 6))
    ref = fit_mahalanobis(train)
    np.testing.assert_allclose(ref["precision"], np.linalg.inv(LedoitWolf().fit(train).covariance_))
    probe = rng.normal(size=(5, 6))
    expected = [mahalanobis(x, ref["mean"], ref["precision"]) for x in probe]
    np.testing.assert_allclose(mahalanobis_score(probe, ref["mean"], ref["precision"]), expected, rtol=1e-10)
    assert mahalanobis_score(ref["mean"][None, :], ref["mean"], ref["precision"]) == pytest.approx([0.0])
    with pytest.raises(ValueError, match="n ≥ 2"):
        fit_mahalanobis(train[:1])


def test_score_items_uses_the_embedding_reference_for_the_embedding_detector():
    import pandas as pd

    from assets.oscs import runs

    corpus = pd.DataFrame({"split": ["calib", "stream", "lm"], "doc_id": ["a", "b", "c"],
                           "text": ["one two", "three four five", "six"]})
    pool = pd.DataFrame({"attack": ["rare_word"], "doc_id": ["b"], "text": ["cf three four"]})
    vectors = {"one two": [1.0, 0.0], "three four five": [0.0, 2.0], "cf three four": [3.0, 4.0]}
    reference = {"mean": np.zeros(2), "precision": np.eye(2)}
    frame = runs.score_items(None, corpus, pool, ("minilm_maha",), log=lambda m: None,
                             embed=lambda texts: np.array([vectors[t] for t in texts]),
                             embedding_reference=reference)
    assert frame["score"].tolist() == pytest.approx([1.0, 2.0, 5.0])      # Euclidean under P = I
    with pytest.raises(ValueError, match="needs the sentence encoder"):
        runs.score_items(None, corpus, pool, ("minilm_maha",), log=lambda m: None)
