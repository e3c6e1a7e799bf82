"""Closed-form scores/Hessians of mixtures and the logistic law, and the curvature intervals."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import multivariate_normal

from assets.diffusion_w2.targets import GaussianMixture, Logistic1D, build_target, curvature_interval, mixture_problems

ANISO = GaussianMixture("gauss2d", [1.0], [[0.5, -0.3]], [[0.8125, 0.32476], [0.32476, 0.4375]])
MIX2D = GaussianMixture("mix", [0.2, 0.3, 0.5], [[-1, 0], [1, 1], [0.5, -1]], [[0.5, 0.1], [0.1, 0.3]])
MILD = build_target({"name": "gmm1d_mild", "kind": "gmm", "means": [[-1.0], [1.0]], "std": 0.8})


def _log_density(target, x, a, s):
    V = a * a * target.cov + s * s * np.eye(target.dim)
    comps = [np.log(w) + multivariate_normal(a * m, V).logpdf(x) for w, m in zip(target.weights, target.means)]
    return logsumexp(np.stack(comps), axis=0)


@pytest.mark.parametrize("target", [ANISO, MIX2D, MILD])
def test_mixture_score_and_hessian_are_derivatives_of_the_log_density(target):
    rng = np.random.default_rng(0)
    a, s = 0.8, 0.5
    x = rng.normal(size=(5, target.dim))
    eps = 1e-5
    eye = np.eye(target.dim)
    fd_score = np.stack([(_log_density(target, x + eps * e, a, s) - _log_density(target, x - eps * e, a, s)) / (2 * eps)
                         for e in eye], -1)
    assert np.allclose(target.score(x, a, s), fd_score, atol=1e-6)
    fd_hess = np.stack([(target.score(x + eps * e, a, s) - target.score(x - eps * e, a, s)) / (2 * eps)
                        for e in eye], -1)
    assert np.allclose(target.hessian(x, a, s), fd_hess, atol=1e-5)


def test_single_gaussian_score_is_linear():
    x = np.array([[0.3, 2.0]])
    V = 0.49 * ANISO.cov + 0.51 * np.eye(2)
    expected = -np.linalg.solve(V, (x - 0.7 * ANISO.means[0]).T).T
    assert np.allclose(ANISO.score(x, 0.7, np.sqrt(0.51)), expected)


def test_gmm_sup_interval_is_attained_between_symmetric_modes():
    # equal weights, x = 0: posterior weights ½/½, Cov_w(μ) = D²/4 → H = −1/v + a²D²/(4v²) exactly
    a, s = 0.9, 0.4
    lo, hi = curvature_interval(MILD, "gmm_sup", a, s)
    v = a * a * 0.64 + s * s
    assert hi == pytest.approx(-1 / v + a * a * 4 / (4 * v * v))
    assert MILD.hessian(np.zeros((1, 1)), a, s)[0, 0, 0] == pytest.approx(hi, rel=1e-12)
    assert MILD.hessian(np.array([[40.0]]), a, s)[0, 0, 0] == pytest.approx(lo, rel=1e-9)   # far away: −1/v


def test_lipschitz_constant_matches_spec_formula():
    s2, D = 0.64, 2.0
    assert MILD.lipschitz_L == pytest.approx(max(1 / s2, -1 / s2 + D ** 2 / (4 * s2 ** 2)))
    sep = build_target({"name": "sep", "kind": "gmm", "means": [[-2.0], [2.0]], "std": 0.3})
    assert sep.lipschitz_L == pytest.approx(-1 / 0.09 + 16 / (4 * 0.09 ** 2))


def test_intervals_contain_sampled_hessians_and_lipschitz_stays_bounded():
    rng = np.random.default_rng(1)
    for tau_sigma, a in ((1e-3, 1.0), (0.3, 0.95), (2.0, 0.4)):
        x = MILD.sample_marginal(4000, a, tau_sigma, rng)
        h = MILD.hessian(x, a, tau_sigma)[:, 0, 0]
        for family in ("gmm_sup", "general", "lipschitz"):
            lo, hi = curvature_interval(MILD, family, a, tau_sigma)
            assert h.min() >= lo - 1e-9 and h.max() <= hi + 1e-9, family
    # small times: general upper bound ~ R²/σ⁴ explodes, Lipschitz → L
    _, hi_gen = curvature_interval(MILD, "general", 1.0, 1e-3)
    _, hi_lip = curvature_interval(MILD, "lipschitz", 1.0, 1e-3)
    assert hi_gen > 1e12 and hi_lip == pytest.approx(MILD.lipschitz_L, rel=1e-4)


def test_mixture_problems_name_the_problem():
    assert any("sum to" in p for p in mixture_problems([0.5, 0.6], [[0.0], [1.0]], [[1.0]]))
    assert any("positive definite" in p for p in mixture_problems([1.0], [[0.0, 0.0]], [[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError, match="positive definite"):
        GaussianMixture("bad", [1.0], [[0.0, 0.0]], [[1.0, 2.0], [2.0, 1.0]])


LOGI = Logistic1D()


def _brute_logistic(x, a, s):
    y = np.linspace(-80, 80, 400001)
    out = []
    for xi in x:
        lw = LOGI.log_density0(y) - (xi - a * y) ** 2 / (2 * s * s)
        w = np.exp(lw - lw.max())
        w /= w.sum()
        m = (w * y).sum()
        v = (w * (y - m) ** 2).sum()
        out.append(((a * m - xi) / s ** 2, -1 / s ** 2 + a * a * v / s ** 4))
    return np.array(out).T


@pytest.mark.parametrize("a,s", [(1.0, 0.05), (0.8, 0.6), (0.7, 0.72), (0.3, 0.95), (1.0, 5.0)])
def test_logistic_quadrature_matches_brute_force(a, s):
    x = np.array([-4.0, -0.3, 0.0, 1.0, 6.0, 3 * s * s / a])
    score, hess = LOGI.score_hessian_1d(x, a, s)
    ref_score, ref_hess = _brute_logistic(x, a, s)
    assert np.allclose(score, ref_score, atol=1e-4) and np.allclose(hess, ref_hess, atol=1e-4)
    assert np.abs(score).max() <= 1 / a + 1e-9                 # score = E[s0(y)|x]/a, |s0| ≤ 1


def test_logistic_limits():
    x = np.linspace(-5, 5, 11)
    score, hess = LOGI.score_hessian_1d(x, 1.0, 1e-4)           # τ → 0: the data score
    assert np.allclose(score, -np.tanh(x / 2), atol=1e-6)
    assert np.allclose(hess, -0.5 / np.cosh(x / 2) ** 2, atol=1e-6)
    score, _ = LOGI.score_hessian_1d(x, 1.0, 50.0)              # huge noise: ≈ N(0, σ² + π²/3)
    assert np.allclose(score, -x / (2500 + np.pi ** 2 / 3), rtol=1e-3)


def test_logistic_table_interpolates_the_quadrature():
    xs = np.linspace(-6, 6, 37)[:, None]
    fn = LOGI.score_fn(0.6, 0.8)
    assert np.allclose(fn(xs)[:, 0], LOGI.score_hessian_1d(xs[:, 0], 0.6, 0.8)[0], atol=5e-5)
