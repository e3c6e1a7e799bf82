"""FlowTracer's generated tasks by name — pure Python, no Dagster: RegTrace (the smoke and cpu
profiles') and ArithChain (the spec's, the gpu profile's). Each is a module with one interface:
VOCAB, TOKEN_ID, PAD_ID / BOS_ID / EOS_ID (0 / 1 / 2 in both), CHARACTERS, MAX_TOKENS, NAME,
STRUCTURAL_KINDS, STEP_CHARS, encode, decode, sequence_ids, trace_start, facts, parse_trace,
reward, vocab_md5.
"""
from __future__ import annotations

from types import ModuleType

import numpy as np
import pandas as pd

from assets.flowtracer import arithchain, data
from assets.flowtracer.params import DataParams

TASKS: dict[str, ModuleType] = {"regtrace": data, "arithchain": arithchain}


def get(name: str) -> ModuleType:
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; known: {sorted(TASKS)}")
    return TASKS[name]


def split_ranges(d: DataParams) -> dict[str, tuple[int, int]]:
    """Each split's op (RegTrace) or depth (ArithChain) range: train min–max; val, test and
    rl_eval held_out_ops (min–max when None); rl both (RL sees the held-out depths)."""
    train = (d.min_ops, d.max_ops)
    held = tuple(d.held_out_ops) if d.held_out_ops is not None else train
    return {"train": train, "val": held, "test": held, "rl": (min(train[0], held[0]), max(train[1], held[1])),
            "rl_eval": held}


def generate(d: DataParams, rng: np.random.Generator) -> pd.DataFrame:
    """The task's disjoint splits of the sizes in `d` (columns: split, then data.COLUMNS)."""
    sizes = {"train": d.train, "val": d.val, "test": d.test, "rl": d.rl, "rl_eval": d.rl_eval}
    if d.task == "regtrace":
        return data.splits(rng, sizes, d.min_ops, d.max_ops)
    return arithchain.splits(rng, sizes, split_ranges(d), tuple(d.distractors))


def max_new(d: DataParams) -> int:
    """Response budget in tokens: the longest gold trace any split can hold, plus `<eos>`."""
    longest = max(high for _, high in split_ranges(d).values())
    if d.task == "regtrace":
        return data.max_new(longest)
    return arithchain.max_new(longest + d.distractors[1])


def describe(d: DataParams) -> str:
    """One phrase naming the task and its problem sizes (the report's setup line)."""
    if d.task == "regtrace":
        return f"RegTrace (registers A–C, {d.min_ops}–{d.max_ops} ops mod 10, a query)"
    ranges = split_ranges(d)
    return (f"ArithChain (assignment chains mod 10: depth {'–'.join(map(str, ranges['train']))} for SFT, "
            f"{'–'.join(map(str, ranges['test']))} held out, {'–'.join(map(str, d.distractors))} distractor steps)")
