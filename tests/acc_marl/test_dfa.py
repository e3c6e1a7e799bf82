"""The DFA library: minimisation is idempotent and language-preserving (product BFS on 10k
random DFAs), the hash ignores state names, known minimal sizes, samplers, pool closure."""
from __future__ import annotations

import numpy as np
import pytest

from assets.acc_marl import dfa as D


def random_dfa(rng, k_max=6, n_tokens=D.N_TOKENS):
    k = int(rng.integers(1, k_max + 1))
    return rng.integers(0, k, size=(k, n_tokens)), rng.random(k) < 0.4


def test_minimise_is_idempotent_and_language_preserving_on_10k_random_dfas():
    rng = np.random.default_rng(0)
    for _ in range(10_000):
        t, a = random_dfa(rng)
        mt, ma = D.minimize(t, a)
        assert len(mt) <= len(t)
        assert D.same_language(t, a, mt, ma)
        again = D.minimize(mt, ma)
        assert (again[0] == mt).all() and (again[1] == ma).all()
        assert D.is_canonical(mt, ma)


def test_same_language_detects_a_difference():
    t = np.array([[1, 0], [1, 1]])
    assert not D.same_language(t, np.array([False, True]), t, np.array([False, False]))


def test_minimal_dfas_of_different_languages_differ():
    """Minimality: no two states of a minimised DFA accept the same language."""
    rng = np.random.default_rng(1)
    for _ in range(300):
        t, a = D.minimize(*random_dfa(rng))
        for p in range(len(t)):
            for q in range(p + 1, len(t)):
                assert not D.same_language(t, a, t, a, p, q)


def test_hash_is_invariant_to_relabelling():
    rng = np.random.default_rng(2)
    for _ in range(500):
        t, a = random_dfa(rng)
        perm = rng.permutation(len(t))            # new name of old state s is perm[s]
        inv = np.argsort(perm)
        t2 = perm[t[inv]]
        a2 = a[inv]
        start2 = int(perm[0])
        m1, m2 = D.minimize(t, a), D.minimize(t2, a2, start2)
        assert D.key(*m1) == D.key(*m2)
        assert D.dfa_hash(t, a) == D.dfa_hash(*m2)


def test_known_minimal_sizes():
    T = D.N_TOKENS
    sigma_star = (np.zeros((3, T), dtype=int), np.array([True, True, True]))
    assert len(D.minimize(*sigma_star)[0]) == 1
    empty = (np.tile(np.arange(3)[:, None], (1, T)), np.zeros(3, dtype=bool))
    assert len(D.minimize(*empty)[0]) == 1
    # "see 3, then 5": 3 states; a duplicate accepting sink and an unreachable state vanish
    t = np.tile(np.arange(5)[:, None], (1, T))
    t[0, 3], t[1, 5] = 1, 2
    t[1, 7] = 3                                   # state 3: a second accepting sink
    t[3] = 3
    a = np.array([False, False, True, True, False])
    mt, ma = D.minimize(t, a)
    assert len(mt) == 3 and ma.tolist() == [False, False, True]
    assert D.accepting_word(mt, ma) == [3, 5]
    # reach chain of n states with no stutter-advance: minimal size n
    rng = np.random.default_rng(3)
    for n in (2, 3, 4, 6):
        assert len(D.minimize(*D._reach(rng, n, T, 1.0))[0]) == n
        if n >= 3:                                  # RA: n − 2 chain states + accepting and rejecting sinks
            assert len(D.minimize(*D._reach_avoid(rng, n, T, 1.0))[0]) == n


def test_advance_moves_the_start_and_minimises():
    T = D.N_TOKENS
    t = np.tile(np.arange(3)[:, None], (1, T))
    t[0, 3], t[1, 5] = 1, 2
    a = np.array([False, False, True])
    t1, a1 = D.advance(t, a, 3)
    assert len(t1) == 2 and t1[0, 5] == 1
    t2, a2 = D.advance(t1, a1, 5)
    assert len(t2) == 1 and a2[0]
    same, _ = D.advance(t, a, 9)                   # a stutter token
    assert (same == t).all()


@pytest.mark.parametrize("name,lo,hi", [("R", 2, 3), ("RA", 3, 3), ("RAD", 3, 3), ("RAD", 4, 6), ("R", 4, 6)])
def test_samplers_give_satisfiable_minimal_dfas_in_range(name, lo, hi):
    rng = np.random.default_rng(4)
    spec = D.SamplerSpec(name, lo, hi)
    for _ in range(200):
        t, a = D.sample(spec, rng)
        assert 2 <= len(t) <= hi and D.is_canonical(t, a) and D.accepting_word(t, a) is not None
        if name == "RAD":                           # accepting states are sinks
            acc = np.nonzero(a)[0]
            assert (t[acc] == acc[:, None]).all()


def test_reach_avoid_has_one_rejecting_sink():
    rng = np.random.default_rng(5)
    t, a = D.sample(D.SamplerSpec("RA", 3, 3, stutter=1.0), rng)
    sinks = [s for s in range(len(t)) if (t[s] == s).all()]
    assert len(t) == 3 and sorted(a[sinks].tolist()) == [False, True]


def test_pool_is_closed_and_next_id_is_progression():
    rng = np.random.default_rng(6)
    pool = D.Pool()
    for _ in range(30):
        pool.add(*D.sample(D.SamplerSpec("RAD", 3, 3), rng))
    triv = pool.add(*D.trivial())
    with pytest.raises(ValueError, match="not closed"):
        _ = pool.next_id
    pool.close()
    nxt = pool.next_id
    assert (nxt[triv] == triv).all()
    for i in range(len(pool)):
        for tok in range(D.N_TOKENS):
            assert pool.index[D.key(*D.advance(pool.trans[i], pool.accept[i], tok))] == nxt[i, tok]
