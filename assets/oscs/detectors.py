"""Detector scores S = d(x): the "existing defenses"; higher means more suspicious.

From a Kneser–Ney trigram LM:
- ``perplexity``: mean token negative log-likelihood (nats per token, ``</s>`` included),
  i.e. log-perplexity — the perplexity-filter defence.
- ``onion``: ONION-style outlier-word score, the largest drop in log-perplexity obtained by
  deleting one word: max_i [ NLL(x) − NLL(x without word i) ] (nats per token).

From a sentence encoder (all-MiniLM-L6-v2, offline):
- ``minilm_maha``: Mahalanobis distance of the unit-norm sentence embedding from the benign
  training sentences' mean, under their Ledoit–Wolf shrunk covariance (unitless).

Both score out-of-vocabulary words with the LM's ``split_unk`` spelling model (the ``<unk>``
mass shared among the training types it stands for); otherwise a frequent ``<unk>`` class
makes rare-word triggers and random strings look cheap to a small word-level LM.
"""

from __future__ import annotations

import numpy as np

from assets.common.ngram import KneserNeyTrigram, tokenize

LM_DETECTORS = ("perplexity", "onion")
EMBEDDING_DETECTORS = ("minilm_maha",)
DETECTORS = (*LM_DETECTORS, *EMBEDDING_DETECTORS)


def perplexity_score(lm: KneserNeyTrigram, texts: list[str]) -> np.ndarray:
    """Mean negative log-probability per token of each text; shape (len(texts),), nats."""
    return lm.batch_mean_nll([tokenize(text) for text in texts], split_unk=True)


def onion_score(lm: KneserNeyTrigram, texts: list[str]) -> np.ndarray:
    """ONION suspicion: max over words of the log-perplexity drop when that word is removed.

    A text with a single word compares against the empty sentence (``</s>`` only); an empty
    text scores 0. Shape (len(texts),), nats per token; can be negative when removing any
    word makes the text less fluent.
    """
    token_lists = [tokenize(text) for text in texts]
    full_nll = lm.batch_mean_nll(token_lists, split_unk=True)

    # every leave-one-word-out variant of every text, scored in one vectorised pass
    variants: list[list[str]] = []
    owner: list[int] = []
    for index, tokens in enumerate(token_lists):
        for position in range(len(tokens)):
            variants.append(tokens[:position] + tokens[position + 1 :])
            owner.append(index)
    scores = np.zeros(len(texts))
    if not variants:
        return scores
    variant_nll = lm.batch_mean_nll(variants, split_unk=True)
    owner_index = np.asarray(owner)
    best_drop = np.full(len(texts), -np.inf)
    np.maximum.at(best_drop, owner_index, full_nll[owner_index] - variant_nll)
    return np.where(np.isfinite(best_drop), best_drop, 0.0)


def fit_mahalanobis(embeddings: np.ndarray) -> dict[str, np.ndarray]:
    """Benign reference of the embedding detector: mean (d,) and precision (d, d), the inverse
    of the Ledoit–Wolf shrunk covariance (well conditioned even when n is near d)."""
    from sklearn.covariance import LedoitWolf

    x = np.asarray(embeddings, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 2:
        raise ValueError(f"need an (n ≥ 2, d) embedding matrix, got shape {x.shape}")
    estimate = LedoitWolf().fit(x)
    return {"mean": estimate.location_, "precision": np.linalg.inv(estimate.covariance_)}


def mahalanobis_score(embeddings: np.ndarray, mean: np.ndarray, precision: np.ndarray) -> np.ndarray:
    """sqrt((x − μ)ᵀ P (x − μ)) per row; shape (n,)."""
    centred = np.asarray(embeddings, dtype=np.float64) - np.asarray(mean, dtype=np.float64)
    squared = np.einsum("ij,jk,ik->i", centred, np.asarray(precision, dtype=np.float64), centred)
    return np.sqrt(np.maximum(squared, 0.0))


def score_texts(lm: KneserNeyTrigram, texts: list[str], detector: str) -> np.ndarray:
    """Dispatch on an LM detector name (one of ``LM_DETECTORS``)."""
    if detector == "perplexity":
        return perplexity_score(lm, texts)
    if detector == "onion":
        return onion_score(lm, texts)
    raise ValueError(f"unknown LM detector {detector!r}; expected one of {LM_DETECTORS}")
