"""The mathematics of layer importance and selection: closed forms, invariants, known answers."""
from __future__ import annotations

import numpy as np
import pytest

from assets.ts_layers import method as M


def _rotation(d: int, seed: int) -> np.ndarray:
    q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(d, d)))
    return q


def test_cka_of_a_representation_with_itself_is_one():
    x = np.random.default_rng(0).normal(size=(200, 16))
    assert M.linear_cka(x, x) == pytest.approx(1.0, abs=1e-12)


def test_cka_is_invariant_to_rotation_isotropic_scale_and_translation():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(300, 12))
    y = np.tanh(x @ rng.normal(size=(12, 8))) + 0.3 * rng.normal(size=(300, 8))
    base = M.linear_cka(x, y)
    assert 0.05 < base < 0.95
    assert M.linear_cka(x @ _rotation(12, 2), y) == pytest.approx(base, rel=1e-10)
    assert M.linear_cka(x, 7.5 * y @ _rotation(8, 3) + 4.0) == pytest.approx(base, rel=1e-10)
    # but not to an anisotropic rescaling of the coordinates
    assert M.linear_cka(x * np.linspace(0.1, 10, 12), y) != pytest.approx(base, rel=1e-3)


def test_cka_closed_form_for_one_dimensional_inputs_is_squared_correlation():
    rng = np.random.default_rng(4)
    a = rng.normal(size=500)
    b = 0.6 * a + rng.normal(size=500)
    r = np.corrcoef(a, b)[0, 1]
    assert M.linear_cka(a[:, None], b[:, None]) == pytest.approx(r ** 2, rel=1e-10)


def test_shift_score_is_zero_for_an_identity_layer_and_follows_the_decay():
    rng = np.random.default_rng(5)
    h0 = rng.normal(size=(100, 6))
    h1 = np.tanh(h0 @ rng.normal(size=(6, 6)))
    hidden = [h0, h1, h1.copy(), h1.copy()]                      # layers 2 and 3 are identities
    cka = M.cka_matrix(hidden)
    s1 = M.shift_scores(cka, alpha=0.5, k_neighbours=1)
    assert s1[1] == pytest.approx(0.0, abs=1e-12) and s1[2] == pytest.approx(0.0, abs=1e-12)
    assert s1[0] == pytest.approx(1 - M.linear_cka(h1, h0))
    s2 = M.shift_scores(cka, alpha=0.5, k_neighbours=2)
    # layer 2 with K = 2: (1·(1 − CKA(H2, H1)) + 0.5·(1 − CKA(H2, H0))) / 1.5 = 0.5·s1[0] / 1.5
    assert s2[1] == pytest.approx(0.5 * s1[0] / 1.5, rel=1e-12)
    assert s2[2] == pytest.approx(0.0, abs=1e-12)               # two identities in a row
    assert s2[0] == pytest.approx(s1[0])                          # layer 1 has one neighbour only


def test_block_influence_is_zero_for_identity_and_one_for_orthogonal_tokens():
    h = np.random.default_rng(6).normal(size=(50, 8))
    assert M.block_influence(h, h) == pytest.approx(0.0, abs=1e-12)
    e = np.eye(8)
    assert M.block_influence(e[:4], e[4:]) == pytest.approx(1.0)


def test_attention_diversity_identical_heads_zero_disjoint_one_hot_one():
    rng = np.random.default_rng(7)
    probs = rng.dirichlet(np.ones(5), size=(3, 1, 5))             # (N, 1, T, S)
    same = np.repeat(probs, 4, axis=1)
    assert M.attention_diversity(same) == pytest.approx(0.0, abs=1e-12)
    one_hot = np.zeros((2, 3, 4, 4))
    for h in range(3):                                            # head h attends to key (t + h) mod 4: disjoint
        for t in range(4):
            one_hot[:, h, t, (t + h) % 4] = 1.0
    assert M.attention_diversity(one_hot) == pytest.approx(1.0)
    assert M.attention_diversity(probs) == 0.0                    # one head: no pairs


def test_importance_is_minmax_sum():
    s, a = np.array([0.1, 0.5, 0.3]), np.array([2.0, 2.0, 4.0])
    assert M.importance(s, a, 0.5) == pytest.approx([0.0, 1.0, 0.5 + 0.5])
    assert M.minmax(np.ones(4)).tolist() == [0, 0, 0, 0]
    with pytest.raises(ValueError, match="one score per layer"):
        M.importance(s, a[:2], 0.5)


def test_selection_keeps_top_tau_layer_one_and_the_order():
    scores = np.array([0.0, 0.2, 0.9, 0.1, 0.8, 0.3, 0.7, 0.4])
    assert M.keep_count(8, 0.25) == 2 and M.keep_count(16, 0.25) == 4 and M.keep_count(2, 0.25) == 1
    assert M.keep_count(4, 0.25) == 1 and M.keep_count(3, 1.0) == 3
    assert M.select_layers(scores, 0.25) == [0, 2]                # layer 1 exempt + best of the rest
    assert M.select_layers(scores, 0.5) == [0, 2, 4, 6]           # increasing order, not by score
    assert M.top_k(scores, 2) == [2, 4]
    assert M.select_layers(np.array([5.0, 1.0, 1.0, 0.0]), 0.5) == [0, 1]      # ties → lower index
    for tau in (0.0, -0.1, 1.5):
        with pytest.raises(ValueError, match="τ must be in"):
            M.select_layers(scores, tau)
    with pytest.raises(ValueError, match="finite"):
        M.select_layers(np.array([0.1, np.nan]), 0.5)


def test_baselines_use_the_same_k():
    scores = np.array([0.9, 0.1, 0.5, 0.0, 0.7, 0.2, 0.3, 0.4])
    bi = np.array([0.1, 0.9, 0.2, 0.8, 0.3, 0.0, 0.5, 0.6])
    keeps = M.baseline_keeps(scores, bi, 2, 3, np.random.default_rng(0))
    assert keeps["bottom_k"] == [1, 3] and keeps["bi_top_k"] == [1, 3] and keeps["drop_last"] == [0, 1]
    assert all(len(v) == 2 and v == sorted(set(v)) for v in keeps.values())
    assert {"random_0", "random_1", "random_2"} <= set(keeps)


def test_keep_list_validation():
    assert M.validate_keep([0, 3], 4) == []
    assert "empty" in M.validate_keep([], 4)[0]
    assert "not strictly increasing" in M.validate_keep([2, 1], 4)[0]
    assert "not strictly increasing" in M.validate_keep([1, 1], 4)[0]
    assert "outside" in M.validate_keep([0, 4], 4)[0]


def test_top_share_closed_form():
    assert M.top_share(np.array([4.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 2.0]), 0.25) == pytest.approx(6 / 12)
    assert M.top_share(np.ones(8), 0.25) == pytest.approx(0.25)


def test_hierarchical_bootstrap_known_answers():
    const = {s: {"a": np.full(20, 0.3), "b": np.full(5, 0.3)} for s in range(3)}
    assert M.hierarchical_bootstrap(const, n_boot=200) == pytest.approx((0.3, 0.3, 0.3))
    rng = np.random.default_rng(0)
    noisy = {s: {"a": rng.normal(1.0, 1.0, 400), "b": rng.normal(1.0, 1.0, 400)} for s in range(5)}
    mean, low, high = M.hierarchical_bootstrap(noisy, n_boot=500)
    assert low < mean < high and low < 1.0 < high and high - low < 0.3
    # series weigh equally regardless of their window counts
    uneven = {0: {"a": np.zeros(100), "b": np.ones(2)}}
    assert M.hierarchical_bootstrap(uneven, n_boot=50)[0] == pytest.approx(0.5)
