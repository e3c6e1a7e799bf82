"""The coupled chains, the stepwise bounds and the exact Gaussian closed form."""
from __future__ import annotations

import numpy as np
import pytest

from assets.diffusion_w2 import empirical as EMP
from assets.diffusion_w2 import method as M
from assets.diffusion_w2.processes import Process, time_grid_frame
from assets.diffusion_w2.targets import build_target

GAUSS = build_target({"name": "gauss1d", "kind": "gaussian", "means": [[0.5]], "cov": [[1.0]]})
GAUSS2 = build_target({"name": "gauss2d", "kind": "gaussian", "means": [[0.5, -0.3]],
                       "cov": [[0.8125, 0.32476], [0.32476, 0.4375]]})
MILD = build_target({"name": "gmm1d_mild", "kind": "gmm", "means": [[-1.0], [1.0]], "std": 0.8})
BIASED = M.ErrorModel("b", 0.3, 0.2)


@pytest.mark.parametrize("process,sampler", [("vp", "sde"), ("vp", "ode"), ("ve", "sde"), ("ve", "ode")])
def test_gaussian_closed_form_matches_monte_carlo(process, sampler):
    grid = time_grid_frame(Process(process), "uniform", 1e-3, 30)
    exact = M.gaussian_exact(GAUSS, grid, sampler, BIASED)
    out = M.simulate_coupled(GAUSS, grid, sampler, [BIASED], 40000, seed=3)
    rms, se = EMP.coupling_rms(out["perturbed"][0] - out["true"])
    assert rms == pytest.approx(exact["rms"], abs=4 * se + 1e-9)
    assert out["true"].mean() == pytest.approx(float(exact["mean_true"][0]),
                                               abs=5 * np.sqrt(exact["cov_true"][0, 0] / 40000))
    assert out["true"].var() == pytest.approx(float(exact["cov_true"][0, 0]), rel=0.03)
    assert EMP.w2_sorted(out["true"], out["perturbed"][0]) == pytest.approx(exact["w2"], rel=0.03)


def test_gaussian_closed_form_known_cases():
    grid = time_grid_frame(Process("vp"), "uniform", 1e-3, 25)
    zero = M.gaussian_exact(GAUSS2, grid, "sde", M.ErrorModel("none", 0.0, 0.0))
    assert zero["w2"] == pytest.approx(0, abs=1e-7) and zero["rms"] == 0
    # a pure mean error on the ODE only shifts the mean: W2 = RMS = ‖mean shift‖
    shift = M.gaussian_exact(GAUSS, grid, "ode", M.ErrorModel("m", 0.4, 0.0))
    assert shift["w2"] == pytest.approx(shift["rms"], rel=1e-10)
    assert shift["w2"] == pytest.approx(abs(float(shift["mean_pert"][0] - shift["mean_true"][0])), rel=1e-10)
    assert np.allclose(shift["cov_pert"], shift["cov_true"])
    # Bures formula on a known pair: N(0, 1) vs N(1, 4) → W2² = 1 + (2 − 1)²
    assert M.bures_w2(np.zeros(1), np.eye(1), np.ones(1), 4 * np.eye(1)) == pytest.approx(np.sqrt(2))


def test_recursion_bound_is_exact_for_a_gaussian_with_zero_mean_error():
    # 1-D Gaussian: Δ_{k+1} = M_k Δ_k + b_k e_k with deterministic |M_k| = ρ_k, so with μ = 0 the
    # recursion r² ← ρ²r² + b² sd² is E‖Δ‖² itself.
    grid = time_grid_frame(Process("vp"), "edm", 1e-3, 40)
    error = M.ErrorModel("z", 0.0, 0.7)
    for sampler in ("sde", "ode"):
        bound = 10 ** M.family_bound(GAUSS, "gmm_sup", grid, sampler, error)["log10_recursion"]
        assert bound == pytest.approx(M.gaussian_exact(GAUSS, grid, sampler, error)["rms"], rel=1e-9)
    biased = 10 ** M.family_bound(GAUSS, "gmm_sup", grid, "sde", BIASED)["log10_recursion"]
    assert biased >= M.gaussian_exact(GAUSS, grid, "sde", BIASED)["rms"] * (1 - 1e-12)


def test_log_recursion_matches_plain_recursion_and_minkowski_dominates():
    rng = np.random.default_rng(0)
    K = 30
    rho, b = rng.uniform(0.5, 1.5, K), rng.uniform(0.01, 0.3, K)
    m, v = rng.uniform(0, 1, K), rng.uniform(0, 1, K)
    r = 0.0
    for k in range(K):
        r = np.sqrt((rho[k] * r + b[k] * m[k]) ** 2 + b[k] ** 2 * v[k])
    mink = sum(b[k] * np.sqrt(m[k] ** 2 + v[k]) * np.prod(rho[k + 1:]) for k in range(K))
    log_r, log_m = M.log_stepwise_bounds(rho, b, m, v)
    assert np.exp(log_r) == pytest.approx(r, rel=1e-12)
    assert np.exp(log_m) == pytest.approx(mink, rel=1e-12)
    assert r <= mink


def test_amplification_uses_both_ends_of_the_spectrum():
    # large negative curvature with a big step flips sign: |1 + h(α + cγλ_lo)| > 1
    rho = M.amplification(np.array([0.5]), np.array([0.0]), np.array([1.0]), 1.0, np.array([-6.0]), np.array([0.1]))
    assert rho[0] == pytest.approx(2.0)
    rho = M.amplification(np.array([0.1]), np.array([0.0]), np.array([1.0]), 1.0, np.array([-1.0]), np.array([3.0]))
    assert rho[0] == pytest.approx(1.3)


def test_bounds_cover_simulated_gmm_coupling():
    grid = time_grid_frame(Process("vp"), "uniform", 1e-3, 50)
    out = M.simulate_coupled(MILD, grid, "sde", [BIASED], 8000, seed=1)
    rms, se = EMP.coupling_rms(out["perturbed"][0] - out["true"])
    bounds = {f: 10 ** M.family_bound(MILD, f, grid, "sde", BIASED)["log10_recursion"]
              for f in ("gmm_sup", "lipschitz", "general")}
    assert rms <= bounds["gmm_sup"] <= bounds["lipschitz"] <= bounds["general"]
    assert bounds["gmm_sup"] / rms < 5


def test_zero_error_chain_is_the_true_chain_and_replica_is_independent():
    grid = time_grid_frame(Process("ve"), "logsnr", 1e-3, 20)
    out = M.simulate_coupled(MILD, grid, "sde", [M.ErrorModel("none", 0.0, 0.0)], 2000, seed=7)
    assert np.array_equal(out["perturbed"][0], out["true"])
    assert not np.allclose(out["replica"], out["true"])
    again = M.simulate_coupled(MILD, grid, "sde", [M.ErrorModel("none", 0.0, 0.0)], 2000, seed=7)
    assert np.array_equal(again["true"], out["true"])                          # deterministic in the seed


def test_error_windows_select_forward_times():
    taus = np.array([1.0, 0.7, 0.6, 0.5, 0.4, 0.1])
    assert M.ErrorModel("l", 1, 1, "low_t").active(taus, 1.0).tolist() == [False, False, False, False, True, True]
    assert M.ErrorModel("h", 1, 1, "high_t").active(taus, 1.0).tolist() == [True, True, True, False, False, False]
    with pytest.raises(ValueError, match="window"):
        M.ErrorModel("x", 1, 1, "middle")


def test_unstable_step_is_named():
    grid = time_grid_frame(Process("vp"), "uniform", 1e-3, 2)
    with pytest.raises(ValueError, match="unstable Euler step .* step k=0 .* amplification factor"):
        M.check_em_stability(GAUSS, grid, "sde")


def test_bounds_cover_a_sixteen_dimensional_mixture():
    means = np.zeros((4, 16))
    means[:, :2] = [[-1, -1], [-1, 1], [1, -1], [1, 1]]
    target = build_target({"name": "gmm16d", "kind": "gmm", "means": means.tolist(), "std": 0.8})
    grid = time_grid_frame(Process("ve"), "uniform", 1e-3, 30)
    out = M.simulate_coupled(target, grid, "ode", [BIASED], 1500, seed=2)
    rms, _ = EMP.coupling_rms(out["perturbed"][0] - out["true"])
    bound = 10 ** M.family_bound(target, "gmm_sup", grid, "ode", BIASED)["log10_recursion"]
    assert rms <= bound < 10 * rms
    assert np.all(out["path_lambda_min"] <= out["path_lambda_max"])
