"""Interpolated Kneser–Ney trigram word language model (pure numpy).

Shared by papers that need a cheap, offline scoring LM (OSCS detectors, BREW).

Model (Chen & Goodman's interpolated KN, one absolute discount ``D`` at every order):

    P3(w | u, v) = max(c(uvw) - D, 0) / c(uv.)  +  D * N1+(uv.) / c(uv.) * P2(w | v)
    P2(w | v)    = max(N1+(.vw) - D, 0) / N1+(.v.)  +  D * N1+(v.) / N1+(.v.) * P1(w)
    P1(w)        = max(N1+(.w) - D, 0) / N1+(..)   +  D * |{w: N1+(.w) > 0}| / N1+(..) * 1/|V|

where ``c`` are raw trigram counts, ``N1+(.vw)`` the number of distinct left words ``u``
seen before the bigram ``vw`` (continuation counts), and ``V`` the predictable vocabulary
(every word, ``<unk>`` and ``</s>``; ``<s>`` is context only). A level whose context was
never seen backs off fully to the level below. Every distribution sums to exactly 1 over V.

n-grams are stored as sorted int64 keys (``u*V^2 + v*V + w``) and looked up with
``np.searchsorted``, so scoring is vectorised over all tokens of many sentences at once.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np

UNK = "<unk>"
EOS = "</s>"
BOS = "<s>"
SPECIAL_TOKENS = (UNK, EOS, BOS)  # ids 0, 1, 2

_TOKEN_PATTERN = re.compile(r"[a-z0-9]+(?:['’][a-z]+)?|[^\sa-z0-9]")


def tokenize(text: str) -> list[str]:
    """Lowercase ``text`` and split it into word tokens and single punctuation marks.

    Words are runs of ``[a-z0-9]`` with an optional apostrophe suffix ("it's"); every
    other non-space character is its own token.
    """
    return _TOKEN_PATTERN.findall(text.lower())


def _lookup(sorted_keys: np.ndarray, values: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Value stored for each query key in a sorted key array, 0 where the key is absent."""
    if sorted_keys.size == 0:
        return np.zeros(queries.shape, dtype=values.dtype)
    position = np.searchsorted(sorted_keys, queries)
    position = np.minimum(position, sorted_keys.size - 1)
    found = sorted_keys[position] == queries
    return np.where(found, values[position], 0).astype(values.dtype)


class KneserNeyTrigram:
    """Interpolated Kneser–Ney trigram LM over word tokens.

    Parameters
    ----------
    discount : absolute discount D in (0, 1), the same at every order.
    """

    def __init__(self, discount: float = 0.75):
        if not 0.0 < discount < 1.0:
            raise ValueError("discount must be in (0, 1)")
        self.discount = float(discount)
        self.vocab: list[str] = list(SPECIAL_TOKENS)
        self.word_to_id: dict[str, int] = {w: i for i, w in enumerate(self.vocab)}
        self.unk_type_count = 1
        self._fitted = False

    # ------------------------------------------------------------------ fitting
    @property
    def vocab_size(self) -> int:
        """Number of ids including ``<s>`` (which is never predicted)."""
        return len(self.vocab)

    def fit(
        self,
        sentences: list[list[str]],
        min_count: int = 1,
        max_vocab: int | None = None,
    ) -> "KneserNeyTrigram":
        """Count n-grams of tokenised ``sentences`` and build the KN tables.

        Words seen fewer than ``min_count`` times, or outside the ``max_vocab`` most
        frequent words, are mapped to ``<unk>`` (so ``<unk>`` gets real counts).
        """
        word_counts = Counter(token for sentence in sentences for token in sentence)
        kept = [w for w, c in word_counts.items() if c >= min_count and w not in SPECIAL_TOKENS]
        # frequency first, then alphabetical: deterministic regardless of dict order
        kept.sort(key=lambda w: (-word_counts[w], w))
        if max_vocab is not None:
            kept = kept[:max_vocab]
        self.vocab = list(SPECIAL_TOKENS) + kept
        self.word_to_id = {w: i for i, w in enumerate(self.vocab)}
        # how many distinct training words the <unk> class stands for (spelling model size)
        self.unk_type_count = max(1, len(word_counts) - len(kept) - sum(w in word_counts for w in SPECIAL_TOKENS))

        trigram_ids = [self._padded_trigrams(sentence) for sentence in sentences]
        if trigram_ids:
            u, v, w = (np.concatenate(parts) for parts in zip(*trigram_ids))
        else:
            u = v = w = np.zeros(0, dtype=np.int64)
        self._build_tables(u, v, w)
        return self

    def _ids(self, tokens: list[str]) -> np.ndarray:
        get = self.word_to_id.get
        return np.fromiter((get(t, 0) for t in tokens), dtype=np.int64, count=len(tokens))

    def _padded_trigrams(self, tokens: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(u, v, w) id arrays of length len(tokens)+1 for ``<s> <s> tokens </s>``."""
        ids = np.concatenate(([2, 2], self._ids(tokens), [1]))
        return ids[:-2], ids[1:-1], ids[2:]

    def _build_tables(self, u: np.ndarray, v: np.ndarray, w: np.ndarray) -> None:
        size = np.int64(self.vocab_size)
        discount = self.discount

        # trigram level: raw counts c(uvw), context totals c(uv.) and types N1+(uv.)
        trigram_keys, trigram_counts = np.unique((u * size + v) * size + w, return_counts=True)
        context_of_trigram = trigram_keys // size
        context_keys, context_first, context_types = np.unique(
            context_of_trigram, return_index=True, return_counts=True
        )
        context_counts = np.add.reduceat(trigram_counts, context_first) if trigram_keys.size else trigram_counts

        # bigram level: continuation counts N1+(.vw) = number of distinct u per (v, w)
        bigram_of_trigram = trigram_keys % (size * size)
        bigram_keys, bigram_continuation = np.unique(bigram_of_trigram, return_counts=True)
        bigram_context = bigram_keys // size
        bigram_context_total = np.bincount(bigram_context, weights=bigram_continuation, minlength=size)
        bigram_context_types = np.bincount(bigram_context, minlength=size)

        # unigram level: N1+(.w) = number of distinct v preceding w
        unigram_continuation = np.bincount(bigram_keys % size, minlength=size).astype(np.float64)

        self._tables = {
            "discount": np.array(discount),
            "trigram_keys": trigram_keys.astype(np.int64),
            "trigram_counts": trigram_counts.astype(np.float64),
            "context_keys": context_keys.astype(np.int64),
            "context_counts": np.asarray(context_counts, dtype=np.float64),
            "context_types": context_types.astype(np.float64),
            "bigram_keys": bigram_keys.astype(np.int64),
            "bigram_continuation": bigram_continuation.astype(np.float64),
            "bigram_context_total": bigram_context_total.astype(np.float64),
            "bigram_context_types": bigram_context_types.astype(np.float64),
            "unigram_continuation": unigram_continuation,
        }
        self._unigram_probs = self._compute_unigram_probs()
        self._fitted = True

    def _compute_unigram_probs(self) -> np.ndarray:
        """P1 over all ids (``<s>`` gets 0), interpolated with a uniform over V."""
        continuation = self._tables["unigram_continuation"]
        discount = self.discount
        predictable = np.ones(self.vocab_size, dtype=bool)
        predictable[2] = False  # <s>
        uniform = predictable / predictable.sum()
        total = continuation.sum()
        if total == 0:
            return uniform
        seen_types = float((continuation > 0).sum())
        return np.maximum(continuation - discount, 0.0) / total + discount * seen_types / total * uniform

    # ------------------------------------------------------------------ scoring
    def _probabilities(self, u: np.ndarray, v: np.ndarray, w: np.ndarray) -> np.ndarray:
        """P3(w | u, v) for aligned id arrays (vectorised)."""
        t = self._tables
        size = np.int64(self.vocab_size)
        discount = self.discount
        unigram = self._unigram_probs[w]

        bigram_cont = _lookup(t["bigram_keys"], t["bigram_continuation"], v * size + w)
        bigram_total = t["bigram_context_total"][v]
        bigram_types = t["bigram_context_types"][v]
        safe_total = np.where(bigram_total > 0, bigram_total, 1.0)
        bigram = np.where(
            bigram_total > 0,
            (np.maximum(bigram_cont - discount, 0.0) + discount * bigram_types * unigram) / safe_total,
            unigram,
        )

        context_key = u * size + v
        context_count = _lookup(t["context_keys"], t["context_counts"], context_key)
        context_types = _lookup(t["context_keys"], t["context_types"], context_key)
        trigram_count = _lookup(t["trigram_keys"], t["trigram_counts"], context_key * size + w)
        safe_count = np.where(context_count > 0, context_count, 1.0)
        return np.where(
            context_count > 0,
            (np.maximum(trigram_count - discount, 0.0) + discount * context_types * bigram) / safe_count,
            bigram,
        )

    def _require_fitted(self) -> None:
        if not self._fitted:
            raise RuntimeError("KneserNeyTrigram is not fitted")

    def next_token_distribution(self, context: tuple[str, str]) -> np.ndarray:
        """P(w | context) for every id w (shape (vocab_size,), ``<s>`` entry is 0)."""
        self._require_fitted()
        ids = self._ids(list(context))
        all_ids = np.arange(self.vocab_size, dtype=np.int64)
        probs = self._probabilities(np.full_like(all_ids, ids[0]), np.full_like(all_ids, ids[1]), all_ids)
        probs[2] = 0.0
        return probs

    def _logprobs(self, u: np.ndarray, v: np.ndarray, w: np.ndarray, split_unk: bool) -> np.ndarray:
        logprobs = np.log(self._probabilities(u, v, w))
        if split_unk:
            # an out-of-vocabulary word is one of unk_type_count words sharing the <unk> mass
            logprobs = logprobs - np.where(w == 0, np.log(self.unk_type_count), 0.0)
        return logprobs

    def token_logprobs(self, tokens: list[str], split_unk: bool = False) -> np.ndarray:
        """Natural-log probability of each token and of the final ``</s>``.

        Returns shape (len(tokens) + 1,). Context is padded with ``<s> <s>``; tokens not
        in the vocabulary are scored as ``<unk>``. With ``split_unk`` an OOV word gets the
        ``<unk>`` probability divided by ``unk_type_count`` (the number of training word
        types mapped to ``<unk>``: a uniform spelling model), so OOV words are not cheap.
        """
        self._require_fitted()
        return self._logprobs(*self._padded_trigrams(tokens), split_unk=split_unk)

    def batch_token_logprobs(self, token_lists: list[list[str]], split_unk: bool = False) -> list[np.ndarray]:
        """``token_logprobs`` for many sentences in one vectorised lookup."""
        self._require_fitted()
        if not token_lists:
            return []
        parts = [self._padded_trigrams(tokens) for tokens in token_lists]
        u, v, w = (np.concatenate(p) for p in zip(*parts))
        logprobs = self._logprobs(u, v, w, split_unk)
        boundaries = np.cumsum([len(tokens) + 1 for tokens in token_lists])[:-1]
        return np.split(logprobs, boundaries)

    def batch_mean_nll(self, token_lists: list[list[str]], split_unk: bool = False) -> np.ndarray:
        """Mean negative log-probability per token (incl. ``</s>``), shape (n,), in nats."""
        self._require_fitted()
        if not token_lists:
            return np.zeros(0)
        parts = [self._padded_trigrams(tokens) for tokens in token_lists]
        u, v, w = (np.concatenate(p) for p in zip(*parts))
        logprobs = self._logprobs(u, v, w, split_unk)
        lengths = np.array([len(tokens) + 1 for tokens in token_lists])
        sentence_index = np.repeat(np.arange(len(token_lists)), lengths)
        return -np.bincount(sentence_index, weights=logprobs, minlength=len(token_lists)) / lengths

    def perplexity(self, token_lists: list[list[str]], split_unk: bool = False) -> float:
        """exp of the mean negative log-probability over all tokens (incl. ``</s>``)."""
        logprobs = self.batch_token_logprobs(token_lists, split_unk)
        total = np.concatenate(logprobs) if logprobs else np.zeros(0)
        if total.size == 0:
            raise ValueError("perplexity needs at least one sentence")
        return float(np.exp(-total.mean()))

    # ------------------------------------------------------------------ persistence
    def to_arrays(self) -> dict[str, np.ndarray]:
        """All state as plain numpy arrays (no objects), for ``np.savez``."""
        self._require_fitted()
        arrays = {name: np.asarray(value) for name, value in self._tables.items()}
        arrays["vocab"] = np.array(self.vocab, dtype=np.str_)
        arrays["unk_type_count"] = np.array(self.unk_type_count, dtype=np.int64)
        return arrays

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> "KneserNeyTrigram":
        """Inverse of ``to_arrays``; accepts an ``np.load`` result with allow_pickle=False."""
        model = cls(discount=float(np.asarray(arrays["discount"])))
        model.vocab = [str(w) for w in np.asarray(arrays["vocab"])]
        model.word_to_id = {w: i for i, w in enumerate(model.vocab)}
        model.unk_type_count = int(np.asarray(arrays["unk_type_count"]))
        model._tables = {
            name: np.asarray(arrays[name])
            for name in (
                "discount",
                "trigram_keys",
                "trigram_counts",
                "context_keys",
                "context_counts",
                "context_types",
                "bigram_keys",
                "bigram_continuation",
                "bigram_context_total",
                "bigram_context_types",
                "unigram_continuation",
            )
        }
        model._unigram_probs = model._compute_unigram_probs()
        model._fitted = True
        return model
