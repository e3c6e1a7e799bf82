"""Scripted traces of the token gridworld: toroidal wrap, iterative collision revert, swap
block, a door held open from its doorway, own-label progression, all-done team reward, PBRS
telescoping, helper draws at reset, the egocentric roll."""
from __future__ import annotations

import numpy as np

from assets.acc_marl import dfa as D
from assets.acc_marl import layouts as L
from assets.acc_marl.env import PoolArrays, TeamEnv, own_first
from assets.acc_marl.runs import reach_any

DOWN, RIGHT, UP, LEFT, NOOP = range(5)


def make(text, dfas=(), n_envs=1, max_len=50, gamma=0.99, sample_ids=None, helpers=True):
    pool = D.Pool()
    ids = [pool.add(*D.minimize(*d)) for d in dfas]
    trivial = pool.add(*D.trivial())
    pool.close()
    arrays = PoolArrays(pool.next_id, np.array([len(t) for t in pool.trans]),
                        np.array([bool(a[0]) for a in pool.accept]), trivial, pool)
    env = TeamEnv(L.parse(text), arrays, n_envs, max_len, gamma, np.random.default_rng(0), sample_ids=sample_ids,
                  helpers=helpers)
    return env, ids, trivial


def step(env, *actions):
    return env.step(np.array([actions]), shaping=True)


def test_moves_wrap_on_the_torus():
    env, _, triv = make("@...|....|....")
    env.reset(ids=np.array([[triv]]))
    step(env, UP)
    assert env.pos[0, 0].tolist() == [2, 0]
    step(env, LEFT)
    assert env.pos[0, 0].tolist() == [2, 3]
    step(env, DOWN)
    assert env.pos[0, 0].tolist() == [0, 3]


def test_collisions_revert_iteratively_and_swaps_are_blocked():
    env, _, triv = make("@@@#|....")
    env.reset(ids=np.full((1, 3), triv))
    step(env, RIGHT, RIGHT, RIGHT)              # C hits the wall, B then A bounce back in turn
    assert env.pos[0].tolist() == [[0, 0], [0, 1], [0, 2]]
    step(env, NOOP, LEFT, DOWN)                 # B moves into A's (occupied) cell: reverted; C moves
    assert env.pos[0].tolist() == [[0, 0], [0, 1], [1, 2]]
    env2, _, triv = make("@.@.|....")
    env2.reset(ids=np.full((1, 2), triv))
    step(env2, RIGHT, LEFT)                     # same target cell: both reverted
    assert env2.pos[0].tolist() == [[0, 0], [0, 2]]
    env3, _, triv = make("@@..|....")
    env3.reset(ids=np.full((1, 2), triv))
    step(env3, RIGHT, LEFT)                     # swap: blocked
    assert env3.pos[0].tolist() == [[0, 0], [0, 1]]
    step(env3, RIGHT, RIGHT)                    # following into a vacated cell is fine
    assert env3.pos[0].tolist() == [[0, 1], [0, 2]]


def test_a_door_opens_from_its_button_and_stays_open_from_the_doorway():
    env, ids, _ = make("a@A1@", dfas=[reach_any([1]), reach_any([1])])
    env.reset(ids=np.array([[ids[0], env.arrays.trivial]]))
    step(env, RIGHT, NOOP)                      # door closed: blocked
    assert env.pos[0, 0].tolist() == [0, 1] and not env.door_open(env.pos)[0, 0]
    step(env, NOOP, RIGHT)                      # the helper wraps onto the button
    assert env.pos[0, 1].tolist() == [0, 0] and env.door_open(env.pos)[0, 0]
    step(env, RIGHT, NOOP)                      # partner enters the doorway
    assert env.pos[0, 0].tolist() == [0, 2]
    step(env, NOOP, LEFT)                       # the helper leaves: the doorway holds the door open
    assert env.door_open(env.pos)[0, 0]
    out = step(env, RIGHT, NOOP)                # partner reaches token 1: its DFA accepts, all done
    assert out["pos"][0, 0].tolist() == [0, 3]
    assert out["done"][0] and out["success"][0] and out["team"][0] == 1.0


def test_each_dfa_advances_on_its_own_label_only():
    two_step = np.tile(np.arange(3)[:, None], (1, 10))
    two_step[0, 1], two_step[1, 2] = 1, 2
    env, ids, _ = make("@12@.", dfas=[(two_step, np.array([False, False, True])), reach_any([2])], max_len=20)
    env.reset(ids=np.array([[ids[0], ids[1]]]))
    out = step(env, RIGHT, NOOP)                # agent 0 on token 1; agent 1 on nothing (ε)
    assert out["labels"][0].tolist() == [1, -1]
    assert env.ids[0, 0] == env.arrays.next_id[ids[0], 1] and env.ids[0, 1] == ids[1]
    assert env.arrays.n_states[env.ids[0, 0]] == 2
    out = step(env, RIGHT, LEFT)                # both aim at token 2's cell: reverted, no label
    assert env.pos[0].tolist() == [[0, 1], [0, 3]] and not out["done"][0]


def test_team_reward_is_the_minimum_once_all_are_done():
    # agent 1's DFA: token 2 leads to a rejecting sink (empty language → minimal size 1)
    bad = np.tile(np.arange(3)[:, None], (1, 10))
    bad[0, 1], bad[0, 2] = 1, 2
    env, ids, _ = make("@1.2@", dfas=[reach_any([1]), (bad, np.array([False, True, False]))], max_len=20)
    env.reset(ids=np.array([[ids[0], ids[1]]]))
    out = step(env, RIGHT, LEFT)                # agent 0 accepts (on 1), agent 1 rejects (on 2)
    assert out["agent_done"][0].tolist() == [True, True]
    assert out["done"][0] and out["team"][0] == 0.0 and not out["success"][0]


def test_pbrs_telescopes():
    """Σ_t γ^t r'_t = Σ_t γ^t r_t + γ^T Φ(A_T) − Φ(A_0) per agent (Φ = own acceptance)."""
    gamma = 0.9
    env, ids, _ = make(L.ROOMS_2, dfas=[reach_any([8]), reach_any([9]), reach_any([2])], n_envs=64, max_len=60,
                       gamma=gamma)
    rng = np.random.default_rng(1)
    start = np.array(ids)[rng.integers(0, 3, size=(64, 2))]
    env.reset(ids=start)
    phi0 = env.arrays.accepting[start].astype(float)
    shaped, team = np.zeros((64, 2)), np.zeros(64)
    ended = np.zeros(64, dtype=bool)
    last_phi, length = phi0.copy(), np.zeros(64, dtype=int)
    for t in range(60):
        out = env.step(rng.integers(0, 5, size=(64, 2)), shaping=True)
        live = ~ended
        shaped[live] += gamma ** t * out["reward"][live]
        team[live] += gamma ** t * out["team"][live]
        last_phi[live] = env.arrays.accepting[out["ids"][live]]
        length[live] = t + 1
        ended |= out["done"]
    expect = team[:, None] + gamma ** length[:, None] * last_phi - phi0
    np.testing.assert_allclose(shaped, expect, atol=1e-12)
    assert ended.any() and (last_phi != phi0).any()


def test_reset_gives_zero_to_n_minus_one_helpers():
    roots = np.array([0, 1])
    env, ids, triv = make("@.@.@|.....", dfas=[reach_any([1]), reach_any([2])], n_envs=2000,
                          sample_ids=lambda r, e, n: roots[r.integers(2, size=(e, n))])
    env.reset()
    helpers = (env.ids == triv).sum(axis=1)
    assert set(np.unique(helpers)) == {0, 1, 2}
    assert abs((helpers == 0).mean() - 1 / 3) < 0.05


def test_observation_is_egocentric_and_own_first():
    env, ids, triv = make(L.BUTTONS_2, dfas=[reach_any([8]), reach_any([9])])
    env.reset(ids=np.array([[ids[0], ids[1]]]))
    obs = env.observe()
    lay = env.layout
    for i, (r, c) in enumerate(lay.starts):
        g = obs["grid"][0, i]
        assert g[0, 0, 0] == 1 and g[0].sum() == 1
        np.testing.assert_array_equal(g[1], np.roll(lay.wall, (-r, -c), axis=(0, 1)))
        np.testing.assert_array_equal(g[3 + 8], np.roll(lay.token == 8, (-r, -c), axis=(0, 1)))
        other = lay.starts[1 - i]
        assert g[13, (other[0] - r) % 9, (other[1] - c) % 9] == 1 and g[13].sum() == 1
        # doors closed at the start: blocking-now = walls + doors
        np.testing.assert_array_equal(g[2], np.roll(lay.wall | (lay.door >= 0), (-r, -c), axis=(0, 1)))
    assert obs["dfa"][0].tolist() == [[ids[0], ids[1]], [ids[1], ids[0]]]
    assert own_first(np.array([[5, 6, 7]]))[0].tolist() == [[5, 6, 7], [6, 5, 7], [7, 5, 6]]
