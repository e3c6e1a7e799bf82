"""The batched TeamEnv against a scalar reference: one episode, one agent at a time, plain
Python, written from the env's docstring (doors from the pre-move positions, walls / closed
doors, swap block, iterative collision revert, own-label progression minimised on the fly,
team reward once all are done, PBRS). Same seeds and actions → the same positions, DFA ids,
rewards, ends and observations, step by step, on both layouts."""
from __future__ import annotations

import numpy as np
import pytest

from assets.acc_marl import dfa as D
from assets.acc_marl import layouts as L
from assets.acc_marl import runs
from assets.acc_marl.env import TeamEnv
from assets.acc_marl.params import AccMarlParams
from assets.common.params import parse
from resources.profiles import load_params


class ReferenceEnv:
    """One episode of the token gridworld, stepped agent by agent."""

    def __init__(self, layout, arrays, max_len, gamma):
        self.lay, self.arrays, self.max_len, self.gamma = layout, arrays, max_len, gamma
        self.H, self.W = layout.shape

    def reset(self, ids):
        self.ids = [int(i) for i in ids]
        self.pos = [(int(r), int(c)) for r, c in self.lay.starts]
        self.t = 0

    def open_doors(self, pos):
        lay = self.lay
        return [any(lay.button[r, c] == k or lay.door[r, c] == k for r, c in pos) for k in range(len(lay.pairs))]

    def blocked(self, cell, open_):
        r, c = cell
        k = self.lay.door[r, c]
        return bool(self.lay.wall[r, c]) or (k >= 0 and not open_[k])

    def step(self, actions):
        n, pos, open_ = len(self.pos), self.pos, self.open_doors(self.pos)
        prop = []
        for (r, c), a in zip(pos, actions):
            dr, dc = L.MOVES[a]
            cell = ((r + dr) % self.H, (c + dc) % self.W)
            prop.append((r, c) if self.blocked(cell, open_) else cell)
        for i in range(n):
            for j in range(i + 1, n):
                if prop[i] == pos[j] and prop[j] == pos[i] and prop[i] != pos[i]:
                    prop[i], prop[j] = pos[i], pos[j]
        for _ in range(n):
            changed = False
            for i in range(n):
                for j in range(i + 1, n):
                    if prop[i] == prop[j]:
                        prop[i], prop[j] = pos[i], pos[j]
                        changed = True
            if not changed:
                break
        pool = self.arrays.pool
        new_ids = []
        for i, (r, c) in enumerate(prop):
            tok = int(self.lay.token[r, c])
            if tok < 0:
                new_ids.append(self.ids[i])
            else:
                t, acc = D.advance(pool.trans[self.ids[i]], pool.accept[self.ids[i]], tok)
                new_ids.append(pool.index[D.key(t, acc)])
        accept = [bool(pool.accept[k][0]) for k in new_ids]
        accept_old = [bool(pool.accept[k][0]) for k in self.ids]
        all_done = all(len(pool.trans[k]) <= 1 for k in new_ids)
        team = float(min(accept)) if all_done else 0.0
        reward = [team + self.gamma * accept[i] - accept_old[i] for i in range(n)]
        self.t += 1
        self.pos, self.ids = prop, new_ids
        return {"reward": reward, "team": team, "done": all_done or self.t >= self.max_len,
                "success": all_done and team > 0}

    def observe(self):
        lay, H, W = self.lay, self.H, self.W
        open_ = self.open_doors(self.pos)
        out = []
        for i, (r0, c0) in enumerate(self.pos):
            grid = np.zeros((lay.n_channels, H, W), dtype=np.float32)
            for y in range(H):
                for x in range(W):
                    r, c = (y + r0) % H, (x + c0) % W
                    grid[0, y, x] = float((y, x) == (0, 0))
                    grid[1, y, x] = lay.wall[r, c]
                    grid[2, y, x] = self.blocked((r, c), open_)
                    if lay.token[r, c] >= 0:
                        grid[3 + lay.token[r, c], y, x] = 1.0
                    grid[13, y, x] = sum((r, c) == p for j, p in enumerate(self.pos) if j != i)
                    for k in range(len(lay.pairs)):
                        b, d = lay.button[r, c] == k, lay.door[r, c] == k
                        grid[14 + 3 * k: 17 + 3 * k, y, x] = [b or d, b, d]
            out.append(grid)
        return np.stack(out)


@pytest.fixture(scope="module")
def pool():
    p = parse(AccMarlParams, load_params("acc_marl", "smoke"), "acc_marl.smoke")
    layouts = runs.layouts_table(p)
    table = runs.build_pool(p, layouts, lambda *k: np.random.default_rng([3, len(k), *map(len, map(str, k))]))
    arrays, _ = runs.pool_from_table(table)
    return arrays, runs.roots(table, "train", "RAD")


@pytest.mark.parametrize("name", ["buttons2", "rooms2"])
def test_batched_env_matches_the_scalar_reference(pool, name):
    arrays, roots = pool
    lay = L.parse(L.LAYOUTS[name], name)
    E, n, steps, max_len, gamma = 12, lay.n_agents, 160, 40, 0.99
    rng = np.random.default_rng([11, len(name)])
    env = TeamEnv(lay, arrays, E, max_len, gamma, np.random.default_rng(0))     # no sampler: resets from here
    refs = [ReferenceEnv(lay, arrays, max_len, gamma) for _ in range(E)]

    def draw(rows):
        ids = roots[rng.integers(len(roots), size=(rows, n))]
        ids[rng.random((rows, n)) < 0.3] = arrays.trivial
        return ids

    ids = draw(E)
    env.reset(ids=ids)
    for e in range(E):
        refs[e].reset(ids[e])
    ends = wins = 0
    for t in range(steps):
        obs = env.observe()
        if t % 20 == 0:
            for e in range(E):
                np.testing.assert_array_equal(obs["grid"][e], refs[e].observe())
        actions = rng.integers(0, 5, size=(E, n))
        # stress the door / collision rules: agents often move towards each other
        actions[rng.random(E) < 0.3] = [[1, 3]] if n == 2 else actions[0]
        out = env.step(actions, shaping=True)
        for e in range(E):
            ref = refs[e].step([int(a) for a in actions[e]])
            assert out["pos"][e].tolist() == [list(p) for p in refs[e].pos], (t, e)
            assert out["ids"][e].tolist() == refs[e].ids, (t, e)
            np.testing.assert_allclose(out["reward"][e], ref["reward"], rtol=0, atol=1e-12)
            assert (out["team"][e], bool(out["done"][e]), bool(out["success"][e])) == \
                   (ref["team"], ref["done"], ref["success"]), (t, e)
        done = np.nonzero(out["done"])[0]
        ends += len(done)
        wins += int(out["success"].sum())
        if len(done):
            fresh = draw(len(done))
            env.reset(done, ids=fresh)
            for k, e in enumerate(done):
                refs[e].reset(fresh[k])
    assert ends > E and wins > 0         # episodes ended (some accepted) and were restarted
