"""The torch backend reproduces the numpy coupled chains given the same draws, its estimators
match the numpy ones, and the gpu-profile code path (torch, 16-D/64-D targets) runs on "cpu"."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from assets.common.params import parse  # noqa: E402
from assets.diffusion_w2 import empirical as EMP  # noqa: E402
from assets.diffusion_w2 import method as M  # noqa: E402
from assets.diffusion_w2 import runs  # noqa: E402
from assets.diffusion_w2 import torch_backend as TB  # noqa: E402
from assets.diffusion_w2.params import DiffusionW2Params  # noqa: E402
from assets.diffusion_w2.processes import Process, time_grid_frame  # noqa: E402
from assets.diffusion_w2.targets import build_target, eig_extremes  # noqa: E402
from resources.profiles import load_params  # noqa: E402

SQUARE = [[-1.0, -1.0], [-1.0, 1.0], [1.0, -1.0], [1.0, 1.0]]
TARGETS = {
    "gauss1d": build_target({"name": "gauss1d", "kind": "gaussian", "means": [[0.5]], "cov": [[1.0]]}),
    "gmm1d_mild": build_target({"name": "gmm1d_mild", "kind": "gmm", "means": [[-1.0], [1.0]], "std": 0.8}),
    "logistic": build_target({"name": "logistic", "kind": "logistic"}),
    "gauss2d": build_target({"name": "gauss2d", "kind": "gaussian", "means": [[0.5, -0.3]],
                             "cov": [[0.8125, 0.32476], [0.32476, 0.4375]]}),
    "gmm2d": build_target({"name": "gmm2d", "kind": "gmm", "means": SQUARE, "std": 0.8}),
    "gmm16d": build_target({"name": "gmm16d", "kind": "gmm", "dim": 16, "means": SQUARE, "std": 0.8}),
    "gmm3d_aniso": build_target({"name": "gmm3d_aniso", "kind": "gmm", "dim": 3, "means": SQUARE,
                                 "cov_eigs": {"min": 0.3, "max": 1.0, "seed": 1}}),
    "gauss16d_rot": build_target({"name": "gauss16d_rot", "kind": "gaussian", "dim": 16, "means": [[0.5]],
                                  "cov_eigs": {"min": 0.25, "max": 1.0, "seed": 3}}),
}
ERRORS = [M.ErrorModel("b", 0.3, 0.2), M.ErrorModel("low", 1.0, 1.0, "low_t"), M.ErrorModel("z", 0.0, 0.5)]


@pytest.mark.parametrize("name,process,sampler", [
    ("gauss1d", "vp", "sde"), ("gmm1d_mild", "ve", "ode"), ("logistic", "vp", "sde"),
    ("gmm2d", "vp", "ode"), ("gauss2d", "ve", "sde"), ("gmm16d", "vp", "sde"), ("gmm16d", "ve", "ode"),
    ("gmm3d_aniso", "vp", "sde"), ("gauss16d_rot", "vp", "ode")])
def test_torch_and_numpy_chains_agree_given_the_same_draws(name, process, sampler):
    target = TARGETS[name]
    grid = time_grid_frame(Process(process), "edm", 1e-3, 30)
    draws = M.ChainDraws.draw(target, grid, len(ERRORS), 64, seed=11)
    ref = M.simulate_coupled(target, grid, sampler, ERRORS, 64, seed=0, draws=draws)
    out = TB.simulate_coupled_torch(target, grid, sampler, ERRORS, 64, seed=0, device="cpu", draws=draws)
    scale = 1 + np.abs(ref["perturbed"]).max()
    for key in ("true", "replica", "perturbed"):
        assert np.abs(out[key].numpy() - ref[key]).max() <= 1e-10 * scale, key
    assert np.allclose(out["path_lambda_min"], ref["path_lambda_min"], rtol=1e-9, atol=1e-12)
    assert np.allclose(out["path_lambda_max"], ref["path_lambda_max"], rtol=1e-9, atol=1e-12)
    # the perturbed chains really moved (the comparison is not between two unperturbed copies)
    assert np.abs(ref["perturbed"][0] - ref["true"]).mean() > 1e-3


def test_fixed_draws_reproduce_the_seeded_numpy_run_statistics():
    # draws from ChainDraws and the seeded path sample the same law: the Gaussian closed form holds for both
    target, grid = TARGETS["gauss1d"], time_grid_frame(Process("vp"), "uniform", 1e-3, 20)
    draws = M.ChainDraws.draw(target, grid, 1, 20000, seed=5)
    out = TB.simulate_coupled_torch(target, grid, "sde", ERRORS[:1], 20000, 0, draws=draws)
    exact = M.gaussian_exact(target, grid, "sde", ERRORS[0])
    rms, se = TB.coupling_rms(out["perturbed"][0] - out["true"])
    assert rms == pytest.approx(exact["rms"], abs=4 * se)


@pytest.mark.parametrize("name", ["gmm16d", "gmm3d_aniso", "gauss16d_rot", "gmm2d"])
def test_spectrum_extremes_match_eigenvalues_of_the_full_hessian(name):
    target = TARGETS[name]
    rng = np.random.default_rng(0)
    for a, s in ((0.9, 0.4), (0.2, 1.0), (1.0, 0.05)):
        x = np.concatenate([target.sample_marginal(50, a, s, rng), rng.uniform(-3, 3, (20, target.dim))])
        lo, hi = target.spectrum_extremes(x, a, s)
        eig = np.linalg.eigvalsh(target.hessian(x, a, s))
        assert np.allclose(lo, eig[:, 0], atol=1e-10) and np.allclose(hi, eig[:, -1], atol=1e-10)
        t_lo, t_hi = TB.TorchTarget(target).extremes_fn(a, s)(torch.as_tensor(x))
        assert np.allclose(t_lo.numpy(), eig[:, 0], atol=1e-10) and np.allclose(t_hi.numpy(), eig[:, -1], atol=1e-10)
        assert np.allclose(TB.TorchTarget(target).score_fn(a, s)(torch.as_tensor(x)).numpy(),
                           target.score(x, a, s), atol=1e-12)
    assert np.allclose(eig_extremes(np.diag([3.0, -1.0, 2.0])[None]), ([-1.0], [3.0]))


def test_torch_estimators_match_numpy_and_known_answers():
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((500, 16)), rng.standard_normal((500, 16)) + 0.7
    dirs = EMP.sliced_directions(16, 64, seed=2)
    tx, ty, td = torch.as_tensor(x), torch.as_tensor(y), torch.as_tensor(dirs)
    assert TB.sliced_w2_lower_bound(tx, ty, td) == pytest.approx(EMP.sliced_w2_lower_bound(x, y, dirs), rel=1e-12)
    assert TB.w2_estimate(tx, ty, "gauss_moments", 0) == pytest.approx(EMP.w2_gaussian_moments(x, y), rel=1e-10)
    assert TB.w2_sorted(tx[:, :1], ty[:, :1]) == pytest.approx(EMP.w2_sorted(x[:, :1], y[:, :1]), rel=1e-12)
    assert TB.coupling_rms(ty - tx) == pytest.approx(EMP.coupling_rms(y - x), rel=1e-12)
    # whole orthonormal frames: mean θθᵀ = I/d exactly
    assert dirs.shape == (64, 16) and np.allclose(dirs.T @ dirs / len(dirs), np.eye(16) / 16)
    # a pure translation: each projection is shifted by θ·s, so √d·SW2 = (d·mean_θ (θ·s)²)^{1/2} = ‖s‖ = W2
    shift = np.linspace(-0.5, 1.0, 16)
    assert EMP.sliced_w2_lower_bound(x, x + shift, dirs) == pytest.approx(np.linalg.norm(shift), rel=1e-12)
    # certified lower bound: ≤ the cost of any coupling, e.g. the identity coupling x_i ↔ y_i
    for other in (1.3 * x + shift, y, x[::-1] ** 2):
        assert EMP.sliced_w2_lower_bound(x, other, dirs) <= np.sqrt(((other - x) ** 2).sum(1).mean())
    assert EMP.sliced_w2_lower_bound(x, y, dirs) >= 0.5 * np.sqrt(16) * 0.7   # ≈ ‖0.7·1‖ = 2.8 for a shift
    # Gaussian moment fit on exact Gaussian samples estimates the Bures distance
    cov = np.diag(np.linspace(0.5, 2.0, 16))
    big_x = rng.standard_normal((20000, 16)) @ np.sqrt(cov)
    big_y = rng.standard_normal((20000, 16)) + 1.0
    exact = M.bures_w2(np.zeros(16), cov, np.ones(16), np.eye(16))
    assert EMP.w2_gaussian_moments(big_x, big_y) == pytest.approx(exact, rel=0.02)


def test_interp_matches_numpy_including_clamping():
    xs = np.array([-2.0, -0.5, 0.0, 1.0, 4.0])
    fs = np.array([1.0, -1.0, 2.0, 0.5, 3.0])
    x = np.array([-5.0, -2.0, -1.0, 0.0, 0.3, 1.0, 3.9, 4.0, 9.0])
    got = TB.interp(torch.as_tensor(x), torch.as_tensor(xs), torch.as_tensor(fs)).numpy()
    assert np.allclose(got, np.interp(x, xs, fs), atol=1e-15)


def test_gpu_block_builds_and_has_high_dimensional_targets():
    params = parse(DiffusionW2Params, load_params("diffusion_w2", "gpu"), "diffusion_w2.gpu")
    assert params.backend == "torch" and params.dtype == "float64"
    frame = runs.target_rows(params.targets)
    assert (frame["problems"] == "").all()
    dims = dict(zip(frame["target"], frame["dim"]))
    assert {16, 64} <= set(dims.values())
    targets = runs.targets_from_frame(frame)
    rotated = [t for t in targets.values() if getattr(t, "kind", "") == "gmm" and t.dim == 64 and len(t.weights) == 1]
    assert rotated and not rotated[0].isotropic                         # non-diagonal 64-D Gaussian
    assert np.abs(rotated[0].cov - np.diag(np.diag(rotated[0].cov))).max() > 0.05
    assert any(t.dim == 64 and len(getattr(t, "weights", [])) > 1 for t in targets.values())
    assert set(params.n_particles) >= set(dims.values())
    configs = runs.configs(params)
    processes = runs.build_processes(params.process)
    grids = runs.time_grid_rows(processes, runs.grid_keys(configs))
    by_key = runs.grids_by_key(grids)
    for cfg in configs.drop_duplicates(["target", "process", "sampler", "grid", "delta", "K"]).itertuples():
        M.check_em_stability(targets[cfg.target], by_key[(cfg.process, cfg.grid, cfg.delta, cfg.K)], cfg.sampler)
    for case in params.perf_benchmark:
        assert case.target in targets


def test_torch_marginal_samplers_have_the_right_moments():
    gen = torch.Generator()
    gen.manual_seed(0)
    logistic = TB.TorchTarget(TARGETS["logistic"]).sample_marginal(100000, 0.6, 0.8, gen).numpy()
    assert logistic.mean() == pytest.approx(0.0, abs=0.02)
    assert logistic.var() == pytest.approx(0.36 * np.pi ** 2 / 3 + 0.64, rel=0.03)     # a²π²/3 + σ²
    gmm = TB.TorchTarget(TARGETS["gmm16d"]).sample_marginal(100000, 0.5, 0.3, gen).numpy()
    cov = np.cov(gmm.T)
    assert cov[0, 0] == pytest.approx(0.25 * (1 + 0.64) + 0.09, rel=0.03)            # a²(μ² + s²) + σ²
    assert cov[5, 5] == pytest.approx(0.25 * 0.64 + 0.09, rel=0.03)                  # padded coordinate
    assert abs(cov[0, 1]) < 0.01 and np.abs(gmm.mean(0)).max() < 0.02
    rotated = TB.TorchTarget(TARGETS["gauss16d_rot"]).sample_marginal(100000, 1.0, 0.0, gen).numpy()
    assert np.abs(np.cov(rotated.T) - TARGETS["gauss16d_rot"].cov).max() < 0.03
