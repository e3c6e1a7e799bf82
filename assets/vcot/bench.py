"""VCoT-Bench construction: semantic blocks, masking, hole filling, Ratio / Type / Loc tasks.

Blocks (the masking units, spec §Method): a *lemma* block is a whole proof fn minus its
signature (requires, ensures, decreases and body); an *invariant* block is all invariants of
one loop (the `invariant` keyword line and its clauses); an *assertion* block is a maximal
run of assert / `proof {}` statements between two executable lines. A masked block becomes
one placeholder comment line (the paper's texts); hole ids h0, h1, … number the
placeholders top to bottom. Filling a placeholder with its gold text gives back the
original program byte for byte.

Dimensions: Ratio — for k = 1..N one seeded random k-subset of a program's N blocks, bucket
= nearest 10 % of k/N (our rule: 10·⌊10k/N + ½⌋, clipped to 10..100); Type — all blocks of
one type, one task per type present; Loc — the exec-function blocks in chain (source) order
split into thirds (front / middle / end), emitted only for programs with ≥ 3 such blocks.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from assets.vcot import lang as L

PLACEHOLDERS = {
    "lemma": "// Complete the lemma function below",
    "invariant": "// Fill in loop invariants here",
    "assertion": "// Fill in a block of assertions here to complete the proof",
}
BLOCK_TYPES = ("assertion", "invariant", "lemma")
DIMENSIONS = ("ratio", "type", "loc")
THIRDS = ("front", "middle", "end")


class TaskError(ValueError):
    """A completion refers to an unknown task or hole, or a task is malformed."""


@dataclass(frozen=True)
class Block:
    block_id: str
    kind: str
    start: int        # first line (0-based) of the block in the canonical text
    end: int          # one past the last line
    fn: str

    @property
    def exec_block(self) -> bool:
        return self.kind != "lemma"


def blocks(text: str) -> list[Block]:
    """The semantic blocks of a canonical program text, in source order."""
    printed = L.render(L.parse(text))
    if printed.text != text:
        raise TaskError("blocks() needs canonical text (print_program(parse(text)) == text)")
    out = [Block(bid, kind, start, end, bid.split(":")[1]) for bid, (kind, start, end) in printed.blocks.items()
           if end > start]
    return sorted(out, key=lambda b: b.start)


def block_counts(text: str) -> dict[str, int]:
    found = blocks(text)
    return {k: sum(b.kind == k for b in found) for k in BLOCK_TYPES}


def mask(text: str, chosen: list[Block]) -> tuple[str, list[dict]]:
    """The text with `chosen` blocks replaced by placeholders, and the holes in order:
    [{hole_id, block_id, kind, gold}] (gold = the removed lines, verbatim)."""
    lines = text.split("\n")
    chosen = sorted(chosen, key=lambda b: b.start)
    out, holes, cursor = [], [], 0
    for b in chosen:
        out.extend(lines[cursor:b.start])
        indent = lines[b.start][: len(lines[b.start]) - len(lines[b.start].lstrip())]
        out.append(indent + PLACEHOLDERS[b.kind])
        holes.append({"hole_id": f"h{len(holes)}", "block_id": b.block_id, "kind": b.kind,
                      "gold": "\n".join(lines[b.start:b.end])})
        cursor = b.end
    out.extend(lines[cursor:])
    return "\n".join(out), holes


def placeholder_lines(masked: str) -> list[int]:
    texts = set(PLACEHOLDERS.values())
    return [i for i, line in enumerate(masked.split("\n")) if line.strip() in texts]


def fill(masked: str, completion: dict[str, str], holes: list[dict] | None = None) -> str:
    """Replace placeholder h_i by completion["h_i"] (absent = left empty). An id that names
    no placeholder raises TaskError."""
    lines = masked.split("\n")
    where = placeholder_lines(masked)
    ids = [f"h{i}" for i in range(len(where))]
    unknown = sorted(set(completion) - set(ids))
    if unknown:
        raise TaskError(f"unknown hole ids {unknown}; this task has {ids}")
    if holes is not None and len(holes) != len(where):
        raise TaskError(f"the task lists {len(holes)} holes but its text has {len(where)} placeholders")
    out, cursor = [], 0
    for hid, line_no in zip(ids, where):
        out.extend(lines[cursor:line_no])
        text = completion.get(hid, "")
        if text:
            out.extend(text.split("\n"))
        cursor = line_no + 1
    out.extend(lines[cursor:])
    return "\n".join(out)


def ratio_bucket(k: int, n: int) -> int:
    """Nearest 10 % of k/n (our rule; the paper's exact binning is unverified)."""
    return int(min(100, max(10, 10 * np.floor(10 * k / n + 0.5))))


def thirds(exec_blocks: list[Block]) -> dict[str, list[Block]]:
    parts = np.array_split(np.arange(len(exec_blocks)), 3)
    return {name: [exec_blocks[i] for i in idx] for name, idx in zip(THIRDS, parts)}


def build_tasks(programs: pd.DataFrame, mask_seeds: tuple[int, ...], seed_of: Any) -> pd.DataFrame:
    """All tasks of all lifted programs. programs: rows (program_id, family, text);
    seed_of(program_id, mask_seed, k) -> int seeds the Ratio subsets. Returns rows (task_id,
    program_id, family, dimension, bucket, type, loc, mask_seed, n_blocks, n_holes, masked,
    holes (JSON))."""
    rows = []
    for prog in programs.itertuples():
        found = blocks(prog.text)
        n = len(found)
        for mask_seed in mask_seeds:
            for k in range(1, n + 1):
                rng = np.random.default_rng(seed_of(prog.program_id, mask_seed, k))
                chosen = [found[i] for i in sorted(rng.choice(n, size=k, replace=False))]
                rows.append(_task(prog, "ratio", f"k{k}", mask_seed, chosen, n, bucket=ratio_bucket(k, n)))
        for kind in BLOCK_TYPES:
            chosen = [b for b in found if b.kind == kind]
            if chosen:
                rows.append(_task(prog, "type", kind, 0, chosen, n, type=kind))
        exec_blocks = [b for b in found if b.exec_block]
        if len(exec_blocks) >= 3:
            for name, chosen in thirds(exec_blocks).items():
                rows.append(_task(prog, "loc", name, 0, chosen, n, loc=name))
    return pd.DataFrame(rows)


def _task(prog: Any, dimension: str, label: str, mask_seed: int, chosen: list[Block], n: int,
          bucket: int = 0, type: str = "", loc: str = "") -> dict:
    masked, holes = mask(prog.text, chosen)
    return {"task_id": f"{prog.program_id}/{dimension}/{label}/m{mask_seed}", "program_id": prog.program_id,
            "family": prog.family, "dimension": dimension, "bucket": int(bucket), "type": type, "loc": loc,
            "mask_seed": int(mask_seed), "n_blocks": int(n), "n_holes": len(holes), "masked": masked,
            "holes": json.dumps(holes)}


def expected_counts(programs: pd.DataFrame, mask_seeds: tuple[int, ...]) -> dict[str, int]:
    """Σ_p N_p × seeds (Ratio), #types present (Type), 3 × #programs with ≥ 3 exec blocks (Loc)."""
    ratio = type_ = loc = 0
    for text in programs["text"]:
        found = blocks(text)
        ratio += len(found) * len(mask_seeds)
        type_ += len({b.kind for b in found})
        loc += 3 * (sum(b.exec_block for b in found) >= 3)
    return {"ratio": ratio, "type": type_, "loc": loc}


# ----------------------------------------------------------------------------- block slots

def block_slots(program: L.Program) -> dict[str, tuple]:
    """Where each block sits in the AST, numbered exactly as the printer numbers blocks:
    assertion → (list id, index of its first statement); invariant → the while statement's
    slot; lemma → (item index, None)."""
    out: dict[str, tuple] = {}
    for k, it in enumerate(program.items):
        if isinstance(it, L.ProofFn):
            out[f"lemma:{it.name}"] = (k, None)
        elif isinstance(it, L.ExecFn):
            counters = {"assert": 0, "inv": 0}
            _walk_blocks(it.body, (k, "body"), it.name, counters, out)
    return out


def _walk_blocks(body: tuple, list_id: tuple, fn: str, counters: dict, out: dict) -> None:
    i = 0
    while i < len(body):
        s = body[i]
        if L.is_ghost(s):
            out[f"assert:{fn}:{counters['assert']}"] = (list_id, i)
            counters["assert"] += 1
            while i < len(body) and L.is_ghost(body[i]):
                i += 1
            continue
        if isinstance(s, L.While):
            out[f"inv:{fn}:{counters['inv']}"] = (list_id, i)
            counters["inv"] += 1
            _walk_blocks(s.body, list_id + (i, "body"), fn, counters, out)
        elif isinstance(s, L.If):
            _walk_blocks(s.then, list_id + (i, "then"), fn, counters, out)
            if s.els is not None:
                _walk_blocks(s.els, list_id + (i, "els"), fn, counters, out)
        i += 1
