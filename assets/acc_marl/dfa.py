"""Numpy DFAs over a fixed token alphabet: advance, prune, Moore minimisation, BFS canonical
form, hashing, the dfax-style R / RA / RAD samplers and a pool closed under progression —
no Dagster import.

A DFA is a pair (trans, accept): `trans` (k, T) int64, trans[s, σ] = successor of state s on
token σ ∈ {0..T−1}; `accept` (k,) bool. The start state is 0 unless a function takes `start`.
Canonical form: states renumbered in BFS order from the start (tokens visited in increasing
order), after pruning unreachable states and merging equivalent ones, so two DFAs have the
same canonical form iff they accept the same language (minimal DFAs are unique up to
renaming, and BFS fixes the renaming).
"""
from __future__ import annotations

import hashlib
from collections import deque
from dataclasses import dataclass

import numpy as np

N_TOKENS = 10


def trivial(n_tokens: int = N_TOKENS) -> tuple[np.ndarray, np.ndarray]:
    """The trivially accepting DFA (Σ*): one accepting state with self-loops."""
    return np.zeros((1, n_tokens), dtype=np.int64), np.array([True])


def bfs_order(trans, start: int = 0) -> list[int]:
    """States reachable from `start` in BFS order (tokens in increasing order)."""
    rows = trans.tolist() if isinstance(trans, np.ndarray) else trans
    seen = {start}
    order = [start]
    head = 0
    while head < len(order):
        for nxt in rows[order[head]]:
            if nxt not in seen:
                seen.add(nxt)
                order.append(nxt)
        head += 1
    return order


def prune(trans: np.ndarray, accept: np.ndarray, start: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Drop states unreachable from `start`; renumber in BFS order (start → 0)."""
    trans = np.asarray(trans, dtype=np.int64)
    order = bfs_order(trans, int(start))
    index = np.full(len(trans), -1, dtype=np.int64)
    index[order] = np.arange(len(order))
    return index[trans[order]], np.asarray(accept, dtype=bool)[order].copy()


def moore_classes(trans: np.ndarray, accept: np.ndarray) -> np.ndarray:
    """Moore partition refinement: (k,) class id per state; states share a class iff they
    accept the same language. Starts from {accepting, rejecting} and refines by the classes
    of the successors until the number of classes is stable (refinement only splits)."""
    rows = np.asarray(trans).tolist()
    cls = [int(a) for a in np.asarray(accept, dtype=bool)]
    n_cls = len(set(cls))
    while True:
        signatures: dict[tuple, int] = {}
        new = [signatures.setdefault((cls[s], *[cls[x] for x in row]), len(signatures))
               for s, row in enumerate(rows)]
        if len(signatures) == n_cls:
            return np.array(new, dtype=np.int64)
        cls, n_cls = new, len(signatures)


def minimize(trans: np.ndarray, accept: np.ndarray, start: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The canonical minimal DFA of the language of (trans, accept, start): prune, merge
    Moore-equivalent states, renumber in BFS order. Output start state is 0."""
    t, a = prune(np.asarray(trans, dtype=np.int64), accept, start)
    cls = moore_classes(t, a)
    k = int(cls.max()) + 1
    q_trans = np.zeros((k, t.shape[1]), dtype=np.int64)
    q_accept = np.zeros(k, dtype=bool)
    q_trans[cls] = cls[t]
    q_accept[cls] = a
    return prune(q_trans, q_accept, int(cls[0]))


def advance(trans: np.ndarray, accept: np.ndarray, token: int) -> tuple[np.ndarray, np.ndarray]:
    """Progression A' = minimize(A.advance(σ)): the start moves to trans[0, σ]."""
    return minimize(trans, accept, int(trans[0, token]))


def key(trans: np.ndarray, accept: np.ndarray) -> bytes:
    """Byte key of a canonical DFA (shape, table, labels)."""
    t = np.ascontiguousarray(trans, dtype=np.int64)
    return np.array(t.shape, dtype=np.int64).tobytes() + t.tobytes() + np.asarray(accept, dtype=np.uint8).tobytes()


def dfa_hash(trans: np.ndarray, accept: np.ndarray) -> str:
    """16-hex sha1 of the canonical minimal form: invariant to state relabelling."""
    t, a = minimize(trans, accept)
    return hashlib.sha1(key(t, a)).hexdigest()[:16]


def is_canonical(trans: np.ndarray, accept: np.ndarray) -> bool:
    """True iff (trans, accept) equals its own canonical minimal form."""
    t, a = minimize(trans, accept)
    return t.shape == np.shape(trans) and bool((t == trans).all()) and bool((a == np.asarray(accept)).all())


def accepting_word(trans: np.ndarray, accept: np.ndarray, allowed=None, start: int = 0) -> list[int] | None:
    """A shortest word over `allowed` tokens (default all) reaching an accepting state, or None."""
    tokens = range(trans.shape[1]) if allowed is None else sorted(int(x) for x in allowed)
    parent = {start: None}
    queue = deque([start])
    while queue:
        s = queue.popleft()
        if accept[s]:
            word = []
            while parent[s] is not None:
                s, tok = parent[s]
                word.append(tok)
            return word[::-1]
        for tok in tokens:
            nxt = int(trans[s, tok])
            if nxt not in parent:
                parent[nxt] = (s, tok)
                queue.append(nxt)
    return None


def same_language(t1, a1, t2, a2, s1: int = 0, s2: int = 0) -> bool:
    """Product BFS: no reachable state pair disagrees on acceptance (an independent check
    of minimisation, not using it)."""
    seen = {(s1, s2)}
    queue = deque([(s1, s2)])
    while queue:
        p, q = queue.popleft()
        if bool(a1[p]) != bool(a2[q]):
            return False
        for tok in range(t1.shape[1]):
            nxt = (int(t1[p, tok]), int(t2[q, tok]))
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return True


# ---------------------------------------------------------------- samplers (dfax semantics)
def _reach(rng: np.random.Generator, n: int, n_tokens: int, stutter: float) -> tuple[np.ndarray, np.ndarray]:
    """Sequential reach chain of n states: state i → i+1 on one drawn token, every other
    token stays with probability `stutter` and else also advances; state n−1 accepts (sink)."""
    trans = np.tile(np.arange(n)[:, None], (1, n_tokens))
    for s in range(n - 1):
        tokens = rng.permutation(n_tokens)
        trans[s, tokens[0]] = s + 1
        for tok in tokens[1:]:
            if rng.random() > stutter:
                trans[s, tok] = s + 1
    accept = np.zeros(n, dtype=bool)
    accept[n - 1] = True
    return trans, accept


def _reach_avoid(rng: np.random.Generator, n: int, n_tokens: int, stutter: float) -> tuple[np.ndarray, np.ndarray]:
    """Reach-avoid chain: states 0..n−3 in sequence, n−2 the accepting sink, n−1 the
    rejecting sink. Per chain state one token advances, one token goes to the rejecting sink,
    every other token stays with probability `stutter`, else joins the advance or the avoid
    set with probability ½ each."""
    success, fail = n - 2, n - 1
    trans = np.tile(np.arange(n)[:, None], (1, n_tokens))
    for s in range(n - 2):
        tokens = rng.permutation(n_tokens)
        trans[s, tokens[0]] = s + 1
        trans[s, tokens[1]] = fail
        for tok in tokens[2:]:
            if rng.random() > stutter:
                trans[s, tok] = s + 1 if rng.random() < 0.5 else fail
    accept = np.zeros(n, dtype=bool)
    accept[success] = True
    return trans, accept


def sink_accepts(trans: np.ndarray, accept: np.ndarray) -> np.ndarray:
    """Every accepting state becomes an absorbing sink (the team reward is reach-style)."""
    out = trans.copy()
    out[np.asarray(accept, dtype=bool)] = np.nonzero(accept)[0][:, None]
    return out


@dataclass(frozen=True)
class SamplerSpec:
    """Which sampler and the size range (states before minimisation)."""

    name: str                       # R | RA | RAD
    min_size: int
    max_size: int
    n_tokens: int = N_TOKENS
    stutter: float = 0.9            # prob_stutter (R, RA)
    rad_stutter: float = 0.5        # RAD's underlying RA: avoid/advance edges at ½
    max_mutations: int = 5


def sample_once(spec: SamplerSpec, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """One draw (canonical minimal form), before the satisfiability rejection."""
    n = int(rng.integers(spec.min_size, spec.max_size + 1))
    if spec.name == "R":
        return minimize(*_reach(rng, n, spec.n_tokens, spec.stutter))
    if spec.name == "RA":
        return minimize(*_reach_avoid(rng, n, spec.n_tokens, spec.stutter))
    if spec.name == "RAD":
        trans, accept = _reach_avoid(rng, n, spec.n_tokens, spec.rad_stutter)
        for _ in range(int(rng.integers(0, spec.max_mutations + 1))):
            trans[int(rng.integers(n)), int(rng.integers(spec.n_tokens))] = int(rng.integers(n))
        return minimize(sink_accepts(trans, accept), accept)
    raise ValueError(f"unknown sampler {spec.name!r}; known: R, RA, RAD")


def sample(spec: SamplerSpec, rng: np.random.Generator, allowed=None, max_tries: int = 1000):
    """A satisfiable non-trivial DFA (some accepting word over `allowed` tokens, ≥ 2 states)."""
    for _ in range(max_tries):
        trans, accept = sample_once(spec, rng)
        if len(trans) >= 2 and accepting_word(trans, accept, allowed) is not None:
            return trans, accept
    raise RuntimeError(f"sampler {spec} drew no satisfiable DFA in {max_tries} tries")


# ---------------------------------------------------------------- pool closed under progression
class Pool:
    """Canonical minimal DFAs indexed by id, closed under progression: next_id[i, σ] is the
    id of minimize(advance(dfa_i, σ)). A step of the environment is then one table lookup."""

    def __init__(self, n_tokens: int = N_TOKENS):
        self.n_tokens = n_tokens
        self.trans: list[np.ndarray] = []
        self.accept: list[np.ndarray] = []
        self.index: dict[bytes, int] = {}
        self.next: list[np.ndarray | None] = []

    def add(self, trans: np.ndarray, accept: np.ndarray) -> int:
        """Id of a canonical DFA (added when new)."""
        k = key(trans, accept)
        if k not in self.index:
            self.index[k] = len(self.trans)
            self.trans.append(np.asarray(trans, dtype=np.int64))
            self.accept.append(np.asarray(accept, dtype=bool))
            self.next.append(None)
        return self.index[k]

    def close(self) -> None:
        """Add every progression of every member until closed; fills next_id."""
        i = 0
        while i < len(self.trans):
            if self.next[i] is None:
                row = np.zeros(self.n_tokens, dtype=np.int64)
                for tok in range(self.n_tokens):
                    row[tok] = self.add(*advance(self.trans[i], self.accept[i], tok))
                self.next[i] = row
            i += 1

    @property
    def next_id(self) -> np.ndarray:
        """(N, T) int64 progression table (the pool must be closed)."""
        if any(r is None for r in self.next):
            raise ValueError("the pool is not closed under progression: call close()")
        return np.stack(self.next)

    def __len__(self) -> int:
        return len(self.trans)
