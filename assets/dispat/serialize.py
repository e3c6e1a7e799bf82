"""Rows ↔ text ↔ tokens (the AnoLLM / GReaT serialisation) — no Dagster import.

A row becomes "col is value, col is value, ..." with the columns in a random order per example.
Values are formatted first: numbers with the column's fixed decimals, categorical levels as
text, text truncated to `max_words` words with separators (",") removed, so that
parse(serialise(row)) == the formatted row exactly.

Tokens: [BOS] COL_a IS v_a… SEP COL_b IS v_b… … [EOS], where each column name, " is " and ", "
are reserved tokens and the values are tokenised by a `tokenizers` BPE fitted on the train rows'
values (one token per digit; '.' and '-' alone). The value spans are known by construction, so
the AnoLLM score can sum NLL over value tokens only.
"""
from __future__ import annotations

import json
import string
from dataclasses import dataclass

import numpy as np
import pandas as pd

from assets.dispat.data import CATEGORICAL, NUMERIC, TEXT, Schema, TableError, format_level

PAD, UNK, BOS, EOS, SEP, IS = "[PAD]", "[UNK]", "[BOS]", "[EOS]", "[SEP]", "[IS]"
SPECIAL = (PAD, UNK, BOS, EOS, SEP, IS)
SEP_TEXT, IS_TEXT = ", ", " is "
ALPHABET = list(string.ascii_letters + string.digits + string.punctuation) + ["▁"]


# ------------------------------------------------------------------------------ values
def format_value(value, kind: str, decimals: int = 0, max_words: int = 0) -> str:
    """The value's text: numbers at fixed precision, levels as text, text truncated (no commas)."""
    if kind == NUMERIC:
        return f"{float(value):.{decimals}f}"
    if kind == CATEGORICAL:
        return format_level(value)
    words = str(value).replace(",", " ").replace(" is ", " ").split()
    return " ".join(words[:max_words])


def format_rows(frame: pd.DataFrame, schema: Schema) -> list[dict[str, str]]:
    """Every row as {column: formatted value} (schema order)."""
    cols = schema.columns
    values = [frame[c.name].tolist() for c in cols]
    return [{c.name: format_value(v[i], c.kind, c.decimals, c.max_words) for c, v in zip(cols, values)}
            for i in range(len(frame))]


def serialise(row: dict[str, str], order: list[str]) -> str:
    """'col is value, col is value' in the given column order."""
    return SEP_TEXT.join(f"{c}{IS_TEXT}{row[c]}" for c in order)


def parse(text: str, schema: Schema) -> dict[str, str]:
    """The inverse of serialise: {column: value text}. Raises ValueError when a column is
    missing, repeated or unknown, or a numeric value does not parse."""
    names = set(schema.names)
    out: dict[str, str] = {}
    for part in text.split(SEP_TEXT):
        col, sep, value = part.partition(IS_TEXT)
        if not sep or col not in names:
            raise ValueError(f"cannot parse segment {part!r}")
        if col in out:
            raise ValueError(f"column {col!r} appears twice")
        out[col] = value
    if set(out) != names:
        raise ValueError(f"missing columns {sorted(names - set(out))}")
    for c in schema.columns:
        if c.kind == NUMERIC:
            float(out[c.name])
            if len(out[c.name].partition(".")[2]) != c.decimals:
                raise ValueError(f"column {c.name!r}: {out[c.name]!r} does not have {c.decimals} decimals")
        elif c.kind != TEXT and not out[c.name]:
            raise ValueError(f"column {c.name!r} is empty")
    return out


def permutations(n_rows: int, n_cols: int, rng: np.random.Generator) -> np.ndarray:
    """(n_rows, n_cols) random column orders (int indices into schema order)."""
    return np.argsort(rng.random((n_rows, n_cols)), axis=1)


# ------------------------------------------------------------------------------ tokens
def column_token(name: str) -> str:
    return f"[COL:{name}]"


@dataclass
class Vocab:
    """A fitted BPE for values plus the reserved ids; `json` re-creates it."""

    tokenizer: object
    schema: Schema

    @property
    def size(self) -> int:
        return int(self.tokenizer.get_vocab_size())

    def id(self, token: str) -> int:
        return int(self.tokenizer.token_to_id(token))

    @property
    def pad(self) -> int:
        return self.id(PAD)

    @property
    def bos(self) -> int:
        return self.id(BOS)

    @property
    def eos(self) -> int:
        return self.id(EOS)

    @property
    def sep(self) -> int:
        return self.id(SEP)

    @property
    def is_(self) -> int:
        return self.id(IS)

    def column_ids(self) -> list[int]:
        return [self.id(column_token(n)) for n in self.schema.names]

    def special_ids(self) -> set[int]:
        return {self.id(t) for t in SPECIAL} | set(self.column_ids())

    def encode_value(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text.replace(" ", "▁"), add_special_tokens=False).ids) if text else []

    def decode_value(self, ids: list[int]) -> str:
        return "".join(self.tokenizer.id_to_token(i) for i in ids).replace("▁", " ")

    def token_text(self, i: int) -> str:
        return self.tokenizer.id_to_token(int(i))

    def to_json(self) -> str:
        return json.dumps({"tokenizer": json.loads(self.tokenizer.to_str()), "schema": self.schema.to_dict()},
                          sort_keys=True)

    @staticmethod
    def from_json(text: str) -> Vocab:
        from tokenizers import Tokenizer

        d = json.loads(text)
        return Vocab(Tokenizer.from_str(json.dumps(d["tokenizer"])), Schema.from_dict(d["schema"]))


def fit_vocab(rows: list[dict[str, str]], schema: Schema, vocab_size: int) -> Vocab:
    """BPE (vocab ≈ vocab_size, fewer when the values are few) on the train rows' values;
    digits split one per token, punctuation alone, spaces as '▁' (exact decoding)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token=UNK))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split("▁", behavior="merged_with_next"),
        pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.Punctuation()])
    specials = [*SPECIAL, *(column_token(n) for n in schema.names)]
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, initial_alphabet=ALPHABET,
                                  show_progress=False)
    corpus = [row[c].replace(" ", "▁") for row in rows for c in schema.names if row[c]]
    tok.train_from_iterator(corpus, trainer)
    return Vocab(tok, schema)


@dataclass
class Encoded:
    """tokens (N, L) long, right-padded with PAD; mask (N, L) real tokens; value_mask (N, L):
    value tokens; span (N, L) int: schema index of the column a value token belongs to (−1
    elsewhere); lengths (N,)."""

    tokens: np.ndarray
    mask: np.ndarray
    value_mask: np.ndarray
    span: np.ndarray
    lengths: np.ndarray


def pad_encoded(seqs: list[list[int]], spans: list[list[int]], pad: int) -> Encoded:
    """Right-pad token sequences and their span ids (−1 outside value spans) into an Encoded batch."""
    width = max(len(s) for s in seqs)
    tokens = np.full((len(seqs), width), pad, np.int64)
    span_arr = np.full((len(seqs), width), -1, np.int64)
    for i, (s, sp) in enumerate(zip(seqs, spans)):
        tokens[i, :len(s)] = s
        span_arr[i, :len(sp)] = sp
    lengths = np.array([len(s) for s in seqs])
    mask = np.arange(width)[None, :] < lengths[:, None]
    return Encoded(tokens, mask, span_arr >= 0, span_arr, lengths)


def encode_rows(rows: list[dict[str, str]], orders: np.ndarray, vocab: Vocab, context: int) -> Encoded:
    """Token sequences of formatted rows under the given column orders (N, C). Raises TableError
    naming the row when a sequence is longer than `context`."""
    names = vocab.schema.names
    col_ids = vocab.column_ids()
    cache: dict[tuple[int, str], list[int]] = {}
    seqs, spans = [], []
    for r, (row, order) in enumerate(zip(rows, orders)):
        seq, span = [vocab.bos], [-1]
        for k, c in enumerate(order):
            if k:
                seq.append(vocab.sep)
                span.append(-1)
            key = (int(c), row[names[c]])
            if key not in cache:
                cache[key] = vocab.encode_value(row[names[c]])
            seq += [col_ids[c], vocab.is_] + cache[key]
            span += [-1, -1] + [int(c)] * len(cache[key])
        seq.append(vocab.eos)
        span.append(-1)
        if len(seq) > context:
            longest = max(range(len(names)), key=lambda i: len(vocab.encode_value(row[names[i]])))
            raise TableError(f"row {r}: {len(seq)} tokens exceed the context of {context} "
                             f"(longest value in column {names[longest]!r})")
        seqs.append(seq)
        spans.append(span)
    return pad_encoded(seqs, spans, vocab.pad)


def decode_tokens(ids: list[int], vocab: Vocab) -> str:
    """Token ids (from BOS or after it, up to EOS) → the serialised text."""
    col_of = {i: n for i, n in zip(vocab.column_ids(), vocab.schema.names)}
    out, value = [], []

    def flush():
        if value:
            out.append(vocab.decode_value(value))
            value.clear()

    for i in ids:
        i = int(i)
        if i == vocab.bos or i == vocab.pad:
            continue
        if i == vocab.eos:
            break
        if i in col_of:
            flush()
            out.append(col_of[i])
        elif i == vocab.is_:
            out.append(IS_TEXT)
        elif i == vocab.sep:
            flush()
            out.append(SEP_TEXT)
        else:
            value.append(i)
    flush()
    return "".join(out)


def round_trip_rate(rows: list[dict[str, str]], orders: np.ndarray, vocab: Vocab, context: int) -> float:
    """Share of rows whose tokens decode and parse back to exactly the formatted row."""
    enc = encode_rows(rows, orders, vocab, context)
    ok = 0
    for row, seq in zip(rows, enc.tokens):
        try:
            ok += parse(decode_tokens(seq.tolist(), vocab), vocab.schema) == row
        except ValueError:
            pass
    return ok / max(1, len(rows))


def check_levels(rows: list[dict[str, str]], schema: Schema) -> list[str]:
    """Problems: categorical levels outside train ∪ declared novel (column and row named)."""
    problems = []
    for c in schema.columns:
        if c.kind != CATEGORICAL:
            continue
        allowed = set(c.levels) | set(schema.novel_levels.get(c.name, ()))
        for r, row in enumerate(rows):
            if row[c.name] not in allowed:
                problems.append(f"column {c.name!r} row {r}: level {row[c.name]!r} not in train levels or declared "
                                "novel")
                break
    return problems


def rows_to_frame(rows: list[dict[str, str]], schema: Schema) -> pd.DataFrame:
    """Parsed rows → a typed DataFrame (numeric columns as float)."""
    frame = pd.DataFrame(rows, columns=schema.names)
    for c in schema.columns:
        if c.kind == NUMERIC:
            frame[c.name] = frame[c.name].astype(float)
    return frame
