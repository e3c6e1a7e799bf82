"""The mathematics of the distances: closed forms, invariances, metric axioms, bounds."""
from __future__ import annotations

import numpy as np
import pytest

from assets.logit_distill import metrics as M


def _model(rng, n=300, k=7, d=2, scale=1.0):
    return scale * rng.standard_normal((n, d)), rng.standard_normal((k, d))


def test_clr_is_invariant_to_per_input_shifts_and_equals_centred_log_probabilities():
    rng = np.random.default_rng(0)
    z = rng.standard_normal((50, 6)) * 4
    shifted = z + rng.standard_normal((50, 1)) * 100
    np.testing.assert_allclose(M.clr(z), M.clr(shifted), atol=1e-10)
    log_p = M.log_softmax(z)
    np.testing.assert_allclose(M.clr(z), log_p - log_p.mean(axis=1, keepdims=True), atol=1e-10)
    assert M.d2_logit(z, shifted) < 1e-20


def test_d_logit_is_a_metric_on_random_triples():
    rng = np.random.default_rng(1)
    for _ in range(50):
        a, b, c = (rng.standard_normal((20, 5)) * rng.uniform(0.1, 10) for _ in range(3))
        dab, dbc, dac = (np.sqrt(M.d2_logit(x, y)) for x, y in ((a, b), (b, c), (a, c)))
        assert dac <= dab + dbc + 1e-9
        assert np.isclose(M.d2_logit(a, b), M.d2_logit(b, a))


def test_d2_logit_known_answer_two_classes():
    # two classes: clr = ±(z1 − z0)/2, so Σ_y (clr diff)² = (Δ₁ − Δ₂)²/2 with Δ = z1 − z0
    z1 = np.array([[0.0, 2.0], [1.0, 1.0]])
    z2 = np.array([[0.0, 0.0], [0.0, 3.0]])
    expected = np.mean([(2.0 - 0.0) ** 2 / 2, (0.0 - 3.0) ** 2 / 2])
    assert np.isclose(M.d2_logit(z1, z2), expected)


def test_kl_known_answer_and_zero_at_equality():
    p = np.log(np.array([[0.5, 0.5]]))
    q = np.log(np.array([[0.9, 0.1]]))
    expected = 0.5 * np.log(0.5 / 0.9) + 0.5 * np.log(0.5 / 0.1)
    assert np.isclose(M.kl_divergence(p, q), expected)
    assert abs(M.kl_divergence(q, q)) < 1e-12


def test_kl_bounds_logit_distance_only_through_tau():
    rng = np.random.default_rng(2)
    for _ in range(100):
        z1 = rng.standard_normal((30, 5)) * rng.uniform(0.1, 3)
        z2 = z1 + rng.standard_normal((30, 5)) * rng.uniform(0.01, 1)
        kl = M.kl_divergence(z1, z2)
        tau = min(M.min_probability(z1), M.min_probability(z2))
        assert M.d2_logit(z1, z2) <= M.kl_bound_on_d2_logit(kl, tau) + 1e-9
    # a confident model makes the bound vacuous: τ tiny → bound astronomically larger than d²
    z = np.array([[30.0, 0.0, -30.0]])
    assert M.kl_bound_on_d2_logit(1e-3, M.min_probability(z)) > 1e20
    # τ² underflows for τ < 1e-154 (a confident CNN teacher): +inf, not a ZeroDivisionError
    assert M.kl_bound_on_d2_logit(1e-3, 1e-160) == np.inf
    assert M.kl_bound_on_d2_logit(0.0, 1e-160) == 0.0
    assert M.kl_bound_on_d2_logit(0.5, 0.5) == pytest.approx(4.0)


def test_d_rep_vanishes_exactly_under_reparametrisation_and_not_under_a_label_swap():
    rng = np.random.default_rng(3)
    F, G = _model(rng, d=3, k=8)
    A = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    pairs = M.label_subsets(8, 3, 8, 10, rng)
    exact = M.d_rep(F, G, F @ A.T, G @ np.linalg.inv(A), pairs)
    assert exact.value < 1e-20 and exact.evaluated == len(pairs) and exact.skipped == 0
    swapped = M.d_rep(F, G, F, G[[1, 0, 2, 3, 4, 5, 6, 7]], pairs)
    assert swapped.value > 1e-2


def test_d_rep_skips_near_singular_label_subsets():
    rng = np.random.default_rng(4)
    F, G = _model(rng, d=2, k=5)
    G[2] = G[0] + 1e-12 * rng.standard_normal(2)      # labels 0 and 2 almost coincide
    pairs = [(0, np.array([1, 2])), (1, np.array([0, 2])), (3, np.array([1, 4]))]
    result = M.d_rep(F, G, F, G, pairs)
    assert result.skipped == 2 and result.evaluated == 1     # both subsets holding labels 0 and 2
    assert result.max_condition < M.CONDITION_LIMIT


def test_derived_bound_holds_and_is_attained_within_a_constant():
    rng = np.random.default_rng(5)
    ratios = []
    for _ in range(60):
        d = int(rng.integers(1, 4))
        k = int(rng.integers(d + 2, 9))
        F1, G1 = _model(rng, n=100, k=k, d=d)
        F2, G2 = F1 + 0.1 * rng.standard_normal(F1.shape), G1 + 0.1 * rng.standard_normal(G1.shape)
        out = M.pair_metrics({"F": F1, "G": G1, "logits": F1 @ G1.T}, {"F": F2, "G": G2, "logits": F2 @ G2.T},
                             M.label_subsets(k, d, 3, 3, rng))
        assert out["bound_slack"] >= 0
        ratios.append(out["d_rep"] / out["d_rep_bound"])
    assert max(ratios) > 1e-3           # not vacuous by orders of magnitude on every pair


def test_label_subsets_respect_the_diversity_condition():
    rng = np.random.default_rng(6)
    with pytest.raises(ValueError, match="needs at least"):
        M.label_subsets(4, 4, 2, 2, rng)
    pairs = M.label_subsets(7, 2, 7, 5, rng)
    assert len(pairs) == 35 and all(p not in L and len(set(L)) == 2 for p, L in pairs)


def test_canonical_correlations_known_answer_and_sklearn_agreement():
    from sklearn.cross_decomposition import CCA

    rng = np.random.default_rng(7)
    n, rho = 20000, np.array([0.9, 0.5, 0.2])
    X = rng.standard_normal((n, 3))
    Y = rho * X + np.sqrt(1 - rho ** 2) * rng.standard_normal((n, 3))
    mixing = rng.standard_normal((3, 3))
    got = M.canonical_correlations(X @ mixing, Y @ rng.standard_normal((3, 3)))   # invariant to mixing
    np.testing.assert_allclose(got, rho, atol=0.02)
    small_x, small_y = X[:500] @ mixing, Y[:500]
    cca = CCA(n_components=3, max_iter=1000).fit(small_x, small_y)
    u, v = cca.transform(small_x, small_y)
    sk = np.mean([np.corrcoef(u[:, i], v[:, i])[0, 1] for i in range(3)])
    assert abs(M.mean_cca(small_x, small_y) - sk) < 5e-3


def test_mismatched_label_sets_are_refused():
    with pytest.raises(ValueError, match="label sets differ"):
        M.d2_logit(np.zeros((4, 7)), np.zeros((4, 6)))
