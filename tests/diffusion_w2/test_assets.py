"""diffusion_w2 wiring at the smoke profile: every asset and check runs, and bad input is
stopped (by a blocking check, or by the asset itself with an error naming the parameter)
before anything downstream consumes it."""
from __future__ import annotations

import copy
import json

import dagster as dg
import numpy as np
import pandas as pd
import pytest

from assets.diffusion_w2 import benchmark as dsb_benchmark
from assets.diffusion_w2 import definitions as dsb
from tests.conftest import assert_group_complete, materialize_paper, outcomes

DOWNSTREAM = {"diffusion_w2/dsb_coupled_runs", "diffusion_w2/dsb_empirical_w2", "diffusion_w2/dsb_bounds",
              "diffusion_w2/dsb_validation_report"}


def _patch_params(monkeypatch, mutate):
    """Serve a modified copy of the smoke parameters to the compute resource."""
    import resources.compute as compute_module

    real = compute_module.load_params

    def patched(slug, profile, *args, **kwargs):
        params = copy.deepcopy(real(slug, profile, *args, **kwargs))
        if slug == dsb.SLUG:
            mutate(params)
        return params

    monkeypatch.setattr(compute_module, "load_params", patched)


def _tiny(params):
    """Few runs: enough to reach every asset quickly in gating tests."""
    params["experiments"] = {"v": {"targets": ["gauss1d"], "processes": ["vp"], "samplers": ["sde"],
                                   "grids": ["uniform"], "deltas": [0.001], "Ks": [20],
                                   "errors": ["b1_s05_all"], "seeds": 1}}
    params["bound_sweep"] = {}
    params["hessian_check_points"] = 100
    params["hessian_check_taus"] = 2
    params["perf_benchmark"] = []


def _step_errors(result) -> str:
    return " ".join(str(ev.event_specific_data.error) for ev in result.all_events
                    if ev.event_type_value == "STEP_FAILURE")


def test_smoke_materializes_every_asset_and_check(smoke_resources, data_dir):
    result = materialize_paper(dsb, smoke_resources)
    seen = assert_group_complete(dsb, result)
    report = data_dir / "reports" / "diffusion_w2"
    assert (report / "REPORT.md").exists()
    for name in ("bound_vs_rms", "delta_sweep", "grid_ranking", "gaussian_closed_form"):
        pngs = list(report.rglob(f"{name}.png"))
        assert len(pngs) == 1 and pngs[0].stat().st_size > 1000
    metrics = json.loads((report / "metrics.json").read_text())
    assert metrics["claims_total"] == len(dsb.CLAIM_IDS) and metrics["validity_fraction"] == 1.0
    claims = pd.read_parquet(data_dir / "results" / "diffusion_w2" / "claims.parquet")
    assert set(claims["claim_id"]) == set(dsb.CLAIM_IDS)
    rows = pd.read_parquet(data_dir / "results" / "diffusion_w2" / "metrics.parquet")
    assert {"rms", "w2", "log10_gmm_sup", "exact_w2"} <= set(rows["metric"])


def test_non_pd_covariance_is_stopped(smoke_resources, monkeypatch):
    def mutate(params):
        _tiny(params)
        params["targets"][1] = {**params["targets"][1], "cov": [[1.0, 2.0], [2.0, 1.0]]}

    _patch_params(monkeypatch, mutate)
    result = materialize_paper(dsb, smoke_resources)
    seen = outcomes(result)
    assert seen["checks"]["mixture_valid"] is False
    evaluation = [e for e in result.get_asset_check_evaluations() if e.check_name == "mixture_valid"][0]
    assert "gauss2d" in evaluation.description and "not positive definite" in evaluation.description
    assert not (DOWNSTREAM | {"diffusion_w2/dsb_backend_benchmark"}) & seen["assets"]


def test_weights_not_summing_to_one_are_stopped(smoke_resources, monkeypatch):
    def mutate(params):
        _tiny(params)
        params["targets"][2] = {**params["targets"][2], "weights": [0.5, 0.6]}

    _patch_params(monkeypatch, mutate)
    result = materialize_paper(dsb, smoke_resources)
    evaluation = [e for e in result.get_asset_check_evaluations() if e.check_name == "mixture_valid"][0]
    assert not evaluation.passed and "gmm1d_mild" in evaluation.description and "sum to 1.1" in evaluation.description
    assert not DOWNSTREAM & outcomes(result)["assets"]


def test_non_decreasing_grid_is_stopped(smoke_resources, monkeypatch):
    _patch_params(monkeypatch, _tiny)
    real = dsb_benchmark.time_grid_rows

    def corrupted(*args, **kwargs):
        frame = real(*args, **kwargs)
        frame.loc[[5, 6], "tau"] = frame.loc[[6, 5], "tau"].to_numpy()
        return frame

    monkeypatch.setattr(dsb_benchmark, "time_grid_rows", corrupted)
    result = materialize_paper(dsb, smoke_resources)
    evaluation = [e for e in result.get_asset_check_evaluations() if e.check_name == "grids_strictly_decreasing"][0]
    assert not evaluation.passed and "tau not strictly decreasing at step k=5" in evaluation.description
    assert not DOWNSTREAM & outcomes(result)["assets"]


def test_delta_not_below_T_fails_naming_delta(smoke_resources, monkeypatch):
    def mutate(params):
        _tiny(params)
        params["experiments"]["v"]["deltas"] = [1.0]

    _patch_params(monkeypatch, mutate)
    result = materialize_paper(dsb, smoke_resources)
    assert "delta (early stopping) = 1.0 must be < T = 1.0" in _step_errors(result)
    assert "diffusion_w2/dsb_time_grids" not in outcomes(result)["assets"]
    assert not DOWNSTREAM & outcomes(result)["assets"]


def test_unstable_euler_step_fails_naming_K(smoke_resources, monkeypatch):
    def mutate(params):
        _tiny(params)
        params["experiments"]["v"]["Ks"] = [2]

    _patch_params(monkeypatch, mutate)
    result = materialize_paper(dsb, smoke_resources)
    errors = _step_errors(result)
    assert "unstable Euler step for target gauss1d" in errors and "K=2" in errors
    assert not DOWNSTREAM & outcomes(result)["assets"]


def test_wrong_hessian_bound_is_stopped(smoke_resources, monkeypatch):
    _patch_params(monkeypatch, _tiny)
    real = dsb.curvature_interval

    def too_tight(target, family, a, sigma):
        lo, hi = real(target, family, a, sigma)
        return lo, lo + 0.5 * (np.asarray(hi) - np.asarray(lo)) if family == "gmm_sup" else hi

    monkeypatch.setattr(dsb, "curvature_interval", too_tight)
    result = materialize_paper(dsb, smoke_resources)
    evaluation = [e for e in result.get_asset_check_evaluations() if e.check_name == "hessian_bounds_hold"][0]
    assert not evaluation.passed and "gmm_sup: Hessian spectrum" in evaluation.description
    assert not DOWNSTREAM & outcomes(result)["assets"]


def test_too_few_particles_are_stopped_by_the_noise_floor(smoke_resources, monkeypatch):
    def mutate(params):
        _tiny(params)
        params["n_particles"] = {1: 20, 2: 20}
        params["error_models"]["b1_s05_all"] = {"mean": 0.2, "sd": 0.1, "window": "all"}

    _patch_params(monkeypatch, mutate)
    result = materialize_paper(dsb, smoke_resources)
    seen = outcomes(result)
    evaluation = [e for e in result.get_asset_check_evaluations() if e.check_name == "noise_floor_resolved"][0]
    assert not evaluation.passed and "run too small" in evaluation.description
    assert "diffusion_w2/dsb_validation_report" not in seen["assets"]


def test_gpu_profile_group_runs_with_the_torch_backend_on_cpu(smoke_resources, data_dir, monkeypatch):
    """The gpu block's code path (torch backend, 16-D/64-D targets, sliced and Gaussian-moment W2,
    backend benchmark) through every asset and check, at tiny sizes on device "cpu"."""
    from resources.compute import ComputeResource

    def mutate(params):
        assert params["backend"] == "torch"
        params["experiments"] = {"v": {"targets": ["gauss1d", "gauss64d", "gmm16d", "gmm64d"],
                                       "processes": ["vp"], "samplers": ["sde", "ode"], "grids": ["uniform"],
                                       "deltas": [0.001], "Ks": [20], "errors": ["b1_s05_all", "z_s05_all"],
                                       "seeds": 1}}
        params["bound_sweep"] = {}
        params["n_particles"] = {1: 2000, 2: 300, 16: 500, 64: 1500}
        params["hessian_check_points"] = 200
        params["hessian_check_taus"] = 2
        params["perf_benchmark"] = [{"target": "gmm64d", "process": "vp", "sampler": "sde", "K": 5, "n": 200}]
        params["claims"]["main_K"] = 20

    _patch_params(monkeypatch, mutate)
    resources = {**smoke_resources, "compute": ComputeResource(profile="gpu", device="cpu")}
    # everything up to the report (the smoke test covers the report): assets + blocking checks
    upstream = [a for a in dsb.assets if a.key != dsb.REPORT_KEY]
    checks = [c for c in dsb.asset_checks if any(spec.blocking for spec in c.check_specs)]
    result = dg.materialize([*upstream, *checks], resources=resources, raise_on_error=False)
    seen = outcomes(result)
    assert result.success and seen["assets"] == {a.key.to_user_string() for a in upstream}
    assert seen["checks"] and all(seen["checks"].values()), seen["checks"]   # incl. validity: bounds ≥ RMS in 64-D
    assert {"bounds_valid", "noise_floor_resolved", "hessian_bounds_hold"} <= set(seen["checks"])
    evaluation = [e for e in result.get_asset_check_evaluations() if e.check_name == "noise_floor_resolved"][0]
    assert evaluation.passed and evaluation.metadata["gated"].value == 4      # gauss1d, gauss64d × sde/ode
    runs = pd.read_parquet(data_dir / "diffusion_w2" / "dsb_coupled_runs.parquet")
    bounds = pd.read_parquet(data_dir / "diffusion_w2" / "dsb_bounds.parquet")
    assert set(runs["backend"]) == {"torch"}
    methods = runs.drop_duplicates("target").set_index("target")["w2_method"]
    assert methods.to_dict() == {"gauss1d": "sorted", "gauss64d": "gauss_moments", "gmm16d": "sliced_lb_p256",
                                 "gmm64d": "sliced_lb_p256"}
    # the 64-D non-diagonal Gaussian: Monte-Carlo RMS and W2 against the analytic closed form
    gauss = runs.merge(bounds, on=dsb_benchmark.CONFIG_COLS + ["error_model"]).query("target == 'gauss64d'")
    assert len(gauss) == 4 and np.allclose(gauss["rms"], gauss["exact_rms"], rtol=0.05)
    biased = gauss[gauss["error_model"] == "b1_s05_all"]
    assert (np.abs(biased["w2"] - biased["exact_w2"]) <= np.maximum(0.03 * biased["exact_w2"], 2 * biased["floor"])).all()
    bench = pd.read_parquet(data_dir / "diffusion_w2" / "dsb_backend_benchmark.parquet")
    assert set(zip(bench["backend"], bench["device"])) == {("numpy", "cpu"), ("torch", "cpu")}


def test_noise_floor_gate_reads_only_the_w2_a_claim_uses():
    """Unresolved W2 of zero-mean / windowed errors or non-claim targets does not trip the gate;
    an unresolved D1 row does, and an empty scope fails."""
    base = {"process": "vp", "sampler": "sde", "grid": "uniform", "delta": 0.001, "K": 20, "w2_resolved": False}
    rows = pd.DataFrame([
        {**base, "target": "gauss1d", "error_model": "b1", "w2": 2.0, "floor": 0.02, "floor_ratio": 0.01,
         "w2_claim": True},
        {**base, "target": "gauss1d", "error_model": "z", "w2": 0.02, "floor": 0.02, "floor_ratio": 1.0,
         "w2_claim": False},
        {**base, "target": "gmm1d_sep", "error_model": "b1", "w2": 0.1, "floor": 0.3, "floor_ratio": 3.0,
         "w2_claim": False}])
    ok = dsb._noise_floor_resolved(rows)
    assert ok.passed and "2 other W2 values reported, not gated" in ok.description
    rows.loc[0, ["floor", "floor_ratio"]] = [0.25, 0.125]
    bad = dsb._noise_floor_resolved(rows)
    assert not bad.passed and "gauss1d/vp/sde/uniform/δ=0.001/K=20/b1" in bad.description
    assert not dsb._noise_floor_resolved(rows.assign(w2_claim=False)).passed
    errors = {"b1": dsb_benchmark.M.ErrorModel("b1", 1.0, 0.5), "z": dsb_benchmark.M.ErrorModel("z", 0.0, 0.5),
              "low": dsb_benchmark.M.ErrorModel("low", 1.0, 1.0, "low_t")}
    frame = pd.DataFrame({"target": ["gauss1d", "gauss1d", "gauss1d", "gmm1d_mild"],
                          "error_model": ["b1", "z", "low", "b1"], "biased": [True, False, True, True],
                          "w2": [1.0, 0.1, 0.5, 1.0]})
    assert dsb_benchmark.w2_claim_scope(frame, errors, ["gauss1d"]).tolist() == [True, False, False, False]


@pytest.mark.parametrize("profile", ["smoke", "cpu", "gpu"])
def test_every_profile_has_complete_parameters(profile):
    from resources.profiles import load_params

    params = load_params("diffusion_w2", profile)
    configs = dsb_benchmark.expand_configs(params["experiments"], [t["name"] for t in params["targets"]],
                                           list(params["error_models"]))
    assert set(configs["target"]) <= {t["name"] for t in params["targets"]}
    assert set(params["claims"]["ranking_targets"]) <= set(configs["target"])
    assert params["claims"]["main_K"] in set(configs["K"])
