"""HiR's select-then-rewrite replay, as in the reference trainer (read, reimplemented) — numpy
and the constraint module only, no torch, no Dagster.

One step with B prompts, target group size n and g < n generated responses per prompt:

    valid candidates   responses with 0 < dense < 1 (partial successes); with `keep_floor` (a
                       variant, off by default) only those meeting the prompt's min_words floor
    resample_n         ⌈((n − g)·B − #valid) / B⌉ extra generations per prompt when #valid < (n − g)·B, else 0
    num_replay         (n − g − resample_n)·B          (so the batch holds n·B responses)
    score_i            λ_t · dense_i + H̄_i,  λ_t = λ0 · growth^t   (F_prox + F_div)
    selection          the top num_replay scores over the whole batch (not per prompt)
    rewrite            q' = the same template with only the satisfied constraints (0 < kept < all)
    replay             (q', y) with reward 1, the original's group id and — in the reference —
                       the original's old and reference log-probs ("π_old(y|q)")

Generated-response budget: the generations (g·B, plus resample_n·B) count; replays do not.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from assets.hir.constraints import Constraint, judge, rewrite


class ReplayError(RuntimeError):
    """A replay that does not re-verify as a success under its rewritten instruction."""


def check_group_sizes(n: int, g: int, batch: int) -> None:
    if batch < 1:
        raise ValueError(f"an RL step needs a non-empty batch of prompts, got B = {batch}")
    if not 0 < g < n:
        raise ValueError(f"HiR needs 0 < generated g < group size n (n − g replay slots), got n = {n}, g = {g}")


def resample_count(n_valid: int, batch: int, n: int, g: int) -> int:
    """Extra generations per prompt: ⌈((n − g)·B − #valid)/B⌉ when candidates run short, else 0."""
    check_group_sizes(n, g, batch)
    need = (n - g) * batch
    return 0 if n_valid >= need else math.ceil((need - n_valid) / batch)


def replay_budget(batch: int, n: int, g: int, resample_n: int) -> int:
    """(n − g − resample_n)·B replays, so that generated + replayed = n·B."""
    check_group_sizes(n, g, batch)
    if not 0 <= resample_n <= n - g:
        raise ValueError(f"resample_n must be in [0, n − g = {n - g}], got {resample_n}")
    return (n - g - resample_n) * batch


def generated_count(batch: int, g: int, resample_n: int) -> int:
    """Responses generated in one HiR step (the budget unit): (g + resample_n)·B."""
    return (g + resample_n) * batch


def valid_candidates(dense: np.ndarray) -> np.ndarray:
    """Boolean mask of partial successes, 0 < dense < 1."""
    dense = np.asarray(dense, dtype=float)
    return (dense > 0) & (dense < 1)


def floor_met(criteria: Sequence[Constraint], judge_list: Sequence[bool]) -> bool:
    """Every min_words constraint (the prompt's length floor) is satisfied."""
    return all(ok for c, ok in zip(criteria, judge_list) if c.kind == "min_words")


def candidates(dense: np.ndarray, criteria: Sequence[Sequence[Constraint]], judge_lists: Sequence[Sequence[bool]],
               keep_floor: bool = True) -> np.ndarray:
    """Replay candidates: partial successes (0 < dense < 1) and, with keep_floor, only those
    meeting the prompt's min_words floor — otherwise the rewrite drops the floor and an empty or
    near-empty response becomes a "success" under q' (the degenerate-reward pitfall)."""
    valid = valid_candidates(dense)
    if keep_floor:
        valid &= np.array([floor_met(c, j) for c, j in zip(criteria, judge_lists)], dtype=bool)
    return valid


def selection_scores(dense: np.ndarray, entropy: np.ndarray, step: int, lambda0: float = 2.0,
                     growth: float = 1.05) -> np.ndarray:
    """λ_t·dense + mean token entropy (nats), λ_t = λ0·growth^step."""
    return lambda0 * growth ** step * np.asarray(dense, dtype=float) + np.asarray(entropy, dtype=float)


def select_top(scores: np.ndarray, valid: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k highest scores among valid entries, over the whole batch; ties go to
    the lower index. Returns fewer when fewer are valid (sorted ascending)."""
    scores = np.asarray(scores, dtype=float)
    index = np.flatnonzero(np.asarray(valid, dtype=bool))
    if k <= 0 or index.size == 0:
        return np.zeros(0, dtype=int)
    order = index[np.lexsort((index, -scores[index]))]
    return np.sort(order[:k])


def select_random(valid: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """k valid indices uniformly at random (the HiR-random ablation)."""
    index = np.flatnonzero(np.asarray(valid, dtype=bool))
    if k <= 0 or index.size == 0:
        return np.zeros(0, dtype=int)
    return np.sort(rng.choice(index, size=min(k, index.size), replace=False))


@dataclass(frozen=True)
class Replay:
    """One hindsight replay: candidate index i (into the step's responses), its rewritten
    constraints, reward 1."""

    source: int
    kept: tuple[Constraint, ...]
    reward: float = 1.0


def make_replays(chosen: Sequence[int], criteria: Sequence[Sequence[Constraint]],
                 judge_lists: Sequence[Sequence[bool]], responses: Sequence[Sequence[str]]) -> list[Replay]:
    """Rewrite each chosen response's instruction to its satisfied constraints and re-verify it
    (raises ReplayError if the response does not satisfy them all: a replay must be a true success)."""
    out = []
    for i in chosen:
        kept = rewrite(criteria[i], judge_lists[i])
        _, _, sparse = judge(responses[i], kept)
        if sparse != 1.0:
            raise ReplayError(f"replay of response {i} fails re-verification under {[c.spec for c in kept]}")
        out.append(Replay(int(i), tuple(kept)))
    return out
