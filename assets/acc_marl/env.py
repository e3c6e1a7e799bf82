"""The vectorised multi-agent token gridworld with DFA tasks (TokenEnv + DFAWrapper semantics)
— numpy, no Dagster import.

E environments × n agents step at once. Per step, in order:
1. doors: pair k is open iff some agent stands on a cell of button k or of door k (the door
   cells count as button cells, so an agent in a doorway holds it open); computed from the
   positions before the move;
2. moves: (pos + Δ[a]) mod (H, W) (toroidal); a move into a wall or a closed door stays;
3. swaps: two agents moving into each other's cells are both reverted;
4. collisions: agents that end in the same cell are reverted, iteratively, until none do;
5. labels: the token under each agent (ε where none); each agent's DFA advances on its own
   label by one lookup next_id[id, σ] (the pool is closed under progression and canonical);
6. done_i ⇔ the agent's minimal DFA has ≤ 1 state; when all are done every agent gets the
   team reward min_i 1[A_i accepts], else 0; the episode ends then or at max_len;
7. shaping (PBRS): r_i' = r + γ Φ(A_i') − Φ(A_i), Φ(A) = 1[A accepts] (own acceptance).
At reset U{0..n−1} randomly chosen agents get the trivially accepting DFA (helpers).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from assets.acc_marl import dfa as dfa_mod
from assets.acc_marl.layouts import MOVES, Layout, static_channels


@dataclass
class PoolArrays:
    """The pool as arrays: next_id (N, T), n_states (N,), accepting (N,) (start state accepts),
    trivial (id of Σ*). `pool` (optional) holds the DFAs themselves for on-the-fly progression."""

    next_id: np.ndarray
    n_states: np.ndarray
    accepting: np.ndarray
    trivial: int
    pool: dfa_mod.Pool | None = None


def own_first(ids: np.ndarray) -> np.ndarray:
    """(E, n) ids → (E, n, n): row i lists agent i's DFA first, then the others by id."""
    n = ids.shape[1]
    order = np.array([[i] + [j for j in range(n) if j != i] for i in range(n)])
    return ids[:, order]


class TeamEnv:
    """E parallel episodes of one layout. Tasks: `sample_ids(rng, E, n)` → (E, n) pool ids of
    the non-trivial DFAs to assign; reset then gives U{0..n−1} agents the trivial DFA.
    progression="table" uses next_id; "minimise" advances and minimises each DFA on the fly
    (the per-env loop of the benchmark; identical trajectories)."""

    def __init__(self, layout: Layout, arrays: PoolArrays, n_envs: int, max_len: int, gamma: float,
                 rng: np.random.Generator, sample_ids=None, progression: str = "table", helpers: bool = True):
        self.layout, self.arrays, self.E, self.n = layout, arrays, n_envs, layout.n_agents
        self.max_len, self.gamma, self.rng, self.sample_ids = max_len, gamma, rng, sample_ids
        self.progression, self.helpers = progression, helpers
        h, w = layout.shape
        self.H, self.W = h, w
        self.static = static_channels(layout)                               # (S, H, W)
        self.pair_cells = np.stack([(layout.button == k) | (layout.door == k)
                                    for k in range(len(layout.pairs))]) if layout.pairs else np.zeros((0, h, w), bool)
        self.pos = np.zeros((n_envs, self.n, 2), dtype=np.int64)
        self.ids = np.zeros((n_envs, self.n), dtype=np.int64)
        self.init_ids = np.zeros_like(self.ids)
        self.t = np.zeros(n_envs, dtype=np.int64)

    # ------------------------------------------------------------------ reset
    def reset(self, envs: np.ndarray | None = None, ids: np.ndarray | None = None) -> None:
        """Reset `envs` (default all) with task ids (len(envs), n) or freshly sampled ones."""
        envs = np.arange(self.E) if envs is None else np.asarray(envs)
        if len(envs) == 0:
            return
        if ids is None:
            ids = self.sample_ids(self.rng, len(envs), self.n)
            if self.helpers:
                for row in range(len(envs)):
                    k = int(self.rng.integers(0, self.n))                   # U{0..n−1} helpers
                    ids[row, self.rng.permutation(self.n)[:k]] = self.arrays.trivial
        self.ids[envs] = ids
        self.init_ids[envs] = ids
        self.pos[envs] = self.layout.starts[None]
        self.t[envs] = 0

    # ------------------------------------------------------------------ dynamics
    def door_open(self, pos: np.ndarray) -> np.ndarray:
        """(E, P) bool from positions (E, n, 2)."""
        if not len(self.pair_cells):
            return np.zeros((len(pos), 0), dtype=bool)
        on = self.pair_cells[:, pos[..., 0], pos[..., 1]]                 # (P, E, n)
        return on.any(axis=2).T

    def blocking(self, open_: np.ndarray) -> np.ndarray:
        """(E, H, W) bool: walls plus closed doors."""
        block = np.broadcast_to(self.layout.wall, (len(open_), self.H, self.W)).copy()
        for k in range(open_.shape[1]):
            block |= (self.layout.door == k)[None] & ~open_[:, k, None, None]
        return block

    def move(self, pos: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """New positions (E, n, 2) after doors, walls, swaps and iterative collision reverts."""
        e = np.arange(len(pos))[:, None]
        block = self.blocking(self.door_open(pos))
        prop = (pos + MOVES[actions]) % np.array([self.H, self.W])
        hit = block[e, prop[..., 0], prop[..., 1]]
        prop = np.where(hit[..., None], pos, prop)
        n = self.n
        for i in range(n):
            for j in range(i + 1, n):
                swap = (prop[:, i] == pos[:, j]).all(1) & (prop[:, j] == pos[:, i]).all(1) & \
                       (prop[:, i] != pos[:, i]).any(1)
                prop[swap, i], prop[swap, j] = pos[swap, i], pos[swap, j]
        for _ in range(n):
            changed = False
            for i in range(n):
                for j in range(i + 1, n):
                    clash = (prop[:, i] == prop[:, j]).all(1)
                    if clash.any():
                        prop[clash, i], prop[clash, j] = pos[clash, i], pos[clash, j]
                        changed = True
            if not changed:
                break
        return prop

    def advance(self, ids: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """Progress each DFA on its own label (−1 = ε, no change)."""
        if self.progression == "table":
            nxt = self.arrays.next_id[ids, np.maximum(labels, 0)]
            return np.where(labels >= 0, nxt, ids)
        pool = self.arrays.pool                                             # per-env loop, minimise on the fly
        out = ids.copy()
        for e in range(ids.shape[0]):
            for i in range(ids.shape[1]):
                if labels[e, i] >= 0:
                    t, a = dfa_mod.advance(pool.trans[ids[e, i]], pool.accept[ids[e, i]], int(labels[e, i]))
                    out[e, i] = pool.index[dfa_mod.key(t, a)]
        return out

    def step(self, actions: np.ndarray, shaping: bool = True) -> dict:
        """Step all envs with actions (E, n) ∈ {0..4}; ended episodes auto-reset (when a
        sampler was given). Returns reward (E, n) (shaped if `shaping`), team (E,), done (E,),
        success (E,) (all agents accept), length (E,), labels (E, n), and pre-reset ids/pos."""
        new_pos = self.move(self.pos, actions)
        labels = self.layout.token[new_pos[..., 0], new_pos[..., 1]]
        new_ids = self.advance(self.ids, labels)
        acc_old = self.arrays.accepting[self.ids].astype(np.float64)
        acc_new = self.arrays.accepting[new_ids].astype(np.float64)
        agent_done = self.arrays.n_states[new_ids] <= 1
        all_done = agent_done.all(axis=1)
        team = np.where(all_done, acc_new.min(axis=1), 0.0)
        reward = np.repeat(team[:, None], self.n, axis=1)
        if shaping:
            reward = reward + self.gamma * acc_new - acc_old
        self.t += 1
        done = all_done | (self.t >= self.max_len)
        out = {"reward": reward, "team": team, "done": done, "success": all_done & (team > 0),
               "length": self.t.copy(), "labels": labels, "ids": new_ids.copy(), "pos": new_pos.copy(),
               "agent_done": agent_done}
        self.pos, self.ids = new_pos, new_ids
        if self.sample_ids is not None and done.any():
            self.reset(np.nonzero(done)[0])
        return out

    # ------------------------------------------------------------------ observations
    def observe(self, pos: np.ndarray | None = None, ids: np.ndarray | None = None) -> dict:
        """Egocentric observations of every agent: grid (E, n, C, H, W) float32 rolled so the
        agent sits at (0, 0); channels self, wall, blocking-now, 10 tokens, other agents, then
        3 per pair (pair, button, door); dfa (E, n, n) ids own-first; agent (E, n) ids."""
        pos = self.pos if pos is None else pos
        ids = self.ids if ids is None else ids
        E, n, H, W = len(pos), self.n, self.H, self.W
        rows = (np.arange(H)[None, None, :] + pos[..., 0, None]) % H           # (E, n, H)
        cols = (np.arange(W)[None, None, :] + pos[..., 1, None]) % W
        r_idx, c_idx = rows[..., :, None], cols[..., None, :]                 # (E, n, H, W)
        static = self.static[:, r_idx, c_idx]                                 # (S, E, n, H, W)
        block = self.blocking(self.door_open(pos))                            # (E, H, W)
        block_r = block[np.arange(E)[:, None, None, None], r_idx, c_idx]       # (E, n, H, W)
        occ = np.zeros((E, H, W), dtype=np.float32)
        np.add.at(occ, (np.repeat(np.arange(E), n), pos[..., 0].ravel(), pos[..., 1].ravel()), 1.0)
        others = occ[np.arange(E)[:, None, None, None], r_idx, c_idx].copy()
        others[:, :, 0, 0] -= 1.0                                             # not oneself
        grid = np.zeros((E, n, self.layout.n_channels, H, W), dtype=np.float32)
        grid[:, :, 0, 0, 0] = 1.0
        grid[:, :, 1] = static[0]
        grid[:, :, 2] = block_r
        grid[:, :, 3:13] = np.moveaxis(static[1:11], 0, 2)
        grid[:, :, 13] = others
        grid[:, :, 14:] = np.moveaxis(static[11:], 0, 2)
        return {"grid": grid, "dfa": own_first(ids), "agent": np.broadcast_to(np.arange(n), (E, n)).copy()}
