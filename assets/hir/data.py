"""HiR's offline data: gensim's bundled news text, a word-level vocabulary, SFT pairs and the
constrained prompts — pure Python/numpy, no Dagster.

Corpus: gensim 4.4.0's test_data `lee_background.cor` + `lee.cor` (read with the shared
`assets.common.gensim_text` reader), sentence-split, lowercased, tokenized into words, numbers
and . ! ? , ; sentences of `min_words`–`max_words` words are kept.
Vocabulary: special tokens, the most frequent corpus tokens, template words, digits and the
numbers the constraints use (out-of-vocabulary words → <unk>, numbers → <num>).
Prompts: "write about {topic} ." + constraints (a min_words floor first) rendered by a template.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

import numpy as np
import pandas as pd

from assets.hir.constraints import (
    NEWLINE,
    NUMBER,
    PUNCT,
    TEMPLATE_WORDS,
    TEMPLATES,
    TERMINALS,
    Constraint,
    conflicts,
    count_sentences,
    render,
)

SOURCES = ("lee_background.cor", "lee.cor")
PAD, BOS, SEP, EOS, UNK = "<pad>", "<bos>", "<sep>", "<eos>", "<unk>"
SPECIALS = (PAD, BOS, SEP, EOS, UNK, NUMBER, NEWLINE)
TOKEN = re.compile(r"[a-z]+(?:'[a-z]+)?|\d+|[.!?,]")
SENTENCE = re.compile(r"(?<=[.!?])\s+")
STOPWORDS = frozenset(
    "the to of in a and is he says has for said was have are will on it be not mr at with from been that by were "
    "his they but an we as had after this there also up their about i one no more its who us say some into before "
    "all out over than against told our would could can two three four five she her them when which what new last "
    "first now today other since if so do did just most being because while only any per many these those where "
    "very you your my me him us two's it's".split())
CONSTRAINT_KINDS = ("include_word", "exclude_word", "max_words", "start_with", "end_with", "include_number",
                    "no_commas", "num_sentences", "word_twice")


def tokenize(text: str) -> list[str]:
    return TOKEN.findall(text.lower())


def words_of(tokens: Sequence[str]) -> list[str]:
    return [t for t in tokens if t not in PUNCT]


def corpus_sentences(lines: Sequence[str], min_words: int, max_words: int) -> pd.DataFrame:
    """One row per kept sentence: doc (line index), sentence (index in doc), text (tokens joined
    by spaces), n_words."""
    rows = []
    for doc, line in enumerate(lines):
        for index, raw in enumerate(SENTENCE.split(line.strip())):
            tokens = tokenize(raw)
            n = len(words_of(tokens))
            if min_words <= n <= max_words and tokens and tokens[-1] in TERMINALS:
                rows.append({"doc": doc, "sentence": index, "text": " ".join(tokens), "n_words": n})
    return pd.DataFrame(rows, columns=["doc", "sentence", "text", "n_words"])


def build_vocab(texts: Sequence[str], n_words: int, numbers: Sequence[int]) -> list[str]:
    """Specials, then the `n_words` most frequent corpus tokens (ties by first appearance), then
    template words, digits and constraint numbers not already in."""
    counts = Counter(t for text in texts for t in text.split())
    vocab = list(SPECIALS)
    for token, _ in counts.most_common(n_words):
        if token not in vocab:
            vocab.append(token)
    for token in (*TEMPLATE_WORDS, *PUNCT, *map(str, range(10)), *map(str, numbers)):
        if token not in vocab:
            vocab.append(token)
    return vocab


class Vocab:
    """token <-> id; unknown words map to <unk>, unknown numbers to <num>."""

    def __init__(self, tokens: Sequence[str]):
        self.tokens = list(tokens)
        self.index = {t: i for i, t in enumerate(self.tokens)}
        if len(self.index) != len(self.tokens):
            raise ValueError("vocabulary tokens repeat")
        missing = [s for s in SPECIALS if s not in self.index]
        if missing:
            raise ValueError(f"vocabulary lacks special tokens {missing}")
        self.pad, self.bos, self.sep, self.eos = (self.index[s] for s in (PAD, BOS, SEP, EOS))

    def __len__(self) -> int:
        return len(self.tokens)

    def normalize(self, tokens: Sequence[str]) -> list[str]:
        return [t if t in self.index else (NUMBER if t.isdigit() else UNK) for t in tokens]

    def encode(self, tokens: Sequence[str]) -> list[int]:
        return [self.index[t] for t in self.normalize(tokens)]

    def decode(self, ids: Sequence[int]) -> list[str]:
        """Tokens of ids, stopping at <eos>; raises on an id outside the vocabulary."""
        out = []
        for i in ids:
            i = int(i)
            if not 0 <= i < len(self.tokens):
                raise ValueError(f"token id {i} is outside the vocabulary of {len(self.tokens)}")
            if i == self.eos:
                break
            if i != self.pad:
                out.append(self.tokens[i])
        return out


def topic_words(texts: Sequence[str], vocab: Vocab, n: int) -> list[str]:
    """The `n` most frequent alphabetic non-stopword corpus words (the prompts' topics)."""
    counts = Counter(t for text in texts for t in text.split()
                     if t.isalpha() and t not in STOPWORDS and len(t) > 2 and t in vocab.index)
    return [w for w, _ in counts.most_common(n)]


def constraint_words(texts: Sequence[str], vocab: Vocab, n: int) -> list[str]:
    """The `n` most frequent in-vocabulary words (arguments of the word constraints)."""
    counts = Counter(t for text in texts for t in text.split() if t.isalpha() and t in vocab.index)
    return [w for w, _ in counts.most_common(n)]


def question(topic: str) -> list[str]:
    return ["write", "about", topic, "."]


def satisfied_candidates(tokens: Sequence[str], words: Sequence[str], rng: np.random.Generator,
                         max_words_choices: Sequence[int]) -> list[Constraint]:
    """Constraints from the bank that `tokens` meets (for SFT instructions)."""
    present = words_of(tokens)
    out = [Constraint("min_words", int(rng.integers(1, len(present) + 1)))]
    highs = [n for n in max_words_choices if n >= len(present)]
    if highs:
        out.append(Constraint("max_words", int(rng.choice(highs))))
    for w in sorted(set(present) & set(words)):
        out.append(Constraint("include_word", w))
    absent = [w for w in words if w not in present]
    if absent:
        out.append(Constraint("exclude_word", str(rng.choice(absent))))
    if tokens and tokens[0] in words:
        out.append(Constraint("start_with", tokens[0]))
    if tokens and tokens[-1] in TERMINALS:
        out.append(Constraint("end_with", tokens[-1]))
    if any(t.isdigit() or t == NUMBER for t in present):
        out.append(Constraint("include_number"))
    if "," not in tokens:
        out.append(Constraint("no_commas"))
    out.append(Constraint("num_sentences", count_sentences(tokens)))
    for w, c in Counter(present).items():
        if c >= 2 and w in words:
            out.append(Constraint("word_twice", w))
    return out


def sft_pairs(sentences: pd.DataFrame, vocab: Vocab, topics: Sequence[str], words: Sequence[str], n_pairs: int,
              max_constraints: int, max_tokens: int, swap_end: float, max_words_choices: Sequence[int],
              rng: np.random.Generator) -> pd.DataFrame:
    """(instruction, response) pairs: a response of 1–2 consecutive corpus sentences (≤ max_tokens
    tokens; with probability swap_end/2 each its final "." becomes "!" or "?"), an instruction
    with 0–max_constraints constraints it satisfies (labelled by the checkers), random template.
    Columns: question, criteria (spec list), q_type, response (token string)."""
    texts = [vocab.normalize(t.split()) for t in sentences["text"]]
    docs = sentences["doc"].to_numpy()
    rows = []
    while len(rows) < n_pairs:
        i = int(rng.integers(len(texts)))
        tokens = list(texts[i])
        if rng.random() < 0.3 and i + 1 < len(texts) and docs[i + 1] == docs[i]:
            tokens = tokens + list(texts[i + 1])
        if len(tokens) + 1 > max_tokens:
            continue
        if rng.random() < swap_end and tokens[-1] == ".":
            tokens[-1] = str(rng.choice(["!", "?"]))
        present = [t for t in topics if t in tokens]
        topic = str(rng.choice(present)) if present else str(rng.choice(topics))
        pool = satisfied_candidates(tokens, words, rng, max_words_choices)
        k = int(rng.integers(0, max_constraints + 1))
        chosen: list[Constraint] = []
        for j in rng.permutation(len(pool)):
            if len(chosen) >= k:
                break
            if not conflicts([*chosen, pool[j]]):
                chosen.append(pool[j])
        rows.append({"question": " ".join(question(topic)), "criteria": [c.spec for c in chosen],
                     "q_type": str(rng.choice(TEMPLATES)), "response": " ".join(tokens)})
    return pd.DataFrame(rows)


def sample_prompt(rng: np.random.Generator, topics: Sequence[str], words: Sequence[str], n_constraints: int,
                  floor_choices: Sequence[int], max_words_choices: Sequence[int],
                  kinds: Sequence[str] = CONSTRAINT_KINDS, end_marks: Sequence[str] = TERMINALS) -> dict:
    """One RL prompt: a min_words floor first, then n_constraints − 1 further non-conflicting
    constraints of distinct kinds (resampled on conflict)."""
    chosen = [Constraint("min_words", int(rng.choice(floor_choices)))]
    for kind in rng.permutation(list(kinds)):
        if len(chosen) >= n_constraints:
            break
        for _ in range(10):
            if kind in ("include_word", "exclude_word", "start_with", "word_twice"):
                c = Constraint(str(kind), str(rng.choice(words)))
            elif kind == "max_words":
                c = Constraint("max_words", int(rng.choice(max_words_choices)))
            elif kind == "end_with":
                c = Constraint("end_with", str(rng.choice(end_marks)))
            elif kind == "num_sentences":
                c = Constraint("num_sentences", int(rng.choice([1, 2])))
            else:
                c = Constraint(str(kind))
            if not conflicts([*chosen, c]):
                chosen.append(c)
                break
    if len(chosen) < n_constraints:
        raise ValueError(f"could not draw {n_constraints} compatible constraints")
    return {"question": " ".join(question(str(rng.choice(topics)))), "criteria": [c.spec for c in chosen],
            "q_type": str(rng.choice(TEMPLATES))}


def instruction_dataset(rng: np.random.Generator, topics: Sequence[str], words: Sequence[str], n_train: int,
                        n_test: int, constraint_counts: Sequence[int], floor_choices: Sequence[int],
                        max_words_choices: Sequence[int]) -> pd.DataFrame:
    """Unique prompts (by rendered text), the first n_test → test, the rest → train; columns
    split, prompt_id, question, criteria, q_type, n_constraints, text."""
    rows, seen = [], set()
    tries = 0
    while len(rows) < n_train + n_test:
        tries += 1
        if tries > 50 * (n_train + n_test):
            raise ValueError("too few distinct prompts: widen the constraint words or topics")
        prompt = sample_prompt(rng, topics, words, int(rng.choice(constraint_counts)), floor_choices,
                               max_words_choices)
        text = " ".join(prompt_tokens(prompt))
        if text in seen:
            continue
        seen.add(text)
        rows.append({**prompt, "n_constraints": len(prompt["criteria"]), "text": text})
    frame = pd.DataFrame(rows)
    frame.insert(0, "split", ["test"] * n_test + ["train"] * n_train)
    frame.insert(1, "prompt_id", np.arange(len(frame)))
    return frame


def prompt_tokens(prompt: dict) -> list[str]:
    """The rendered instruction of a prompt row (question, criteria specs, q_type)."""
    from assets.hir.constraints import parse_criteria

    return render(str(prompt["question"]).split(), parse_criteria(list(prompt["criteria"])), str(prompt["q_type"]))
