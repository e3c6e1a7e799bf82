"""diffusion_w2 wiring: the smoke group is complete (tests/platform/test_smoke_contract.py), bad
input is stopped by a blocking check (or by the asset itself, with an error naming the
parameter) before anything downstream consumes it — re-running only the gated asset and one
downstream on the stored smoke outputs — and the predicates name what is wrong."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from assets.diffusion_w2 import benchmark, checks, runs
from assets.diffusion_w2 import targets as dsb_targets
from assets.diffusion_w2.params import DiffusionW2Params
from resources.compute import ComputeResource
from resources.profiles import load_params
from tests.conftest import rerun, rerun_result, smoke_run, typed_params

SLUG = "diffusion_w2"


run = smoke_run(SLUG)


def typed(profile: str = "smoke", **overrides) -> DiffusionW2Params:
    return typed_params(DiffusionW2Params, SLUG, profile, **overrides)


def step_errors(result) -> str:
    return " ".join(str(ev.event_specific_data.error) for ev in result.all_events
                    if ev.event_type_value == "STEP_FAILURE")


# ------------------------------------------------------------------------------ the smoke run
def test_smoke_report_names_every_claim_and_keeps_timings_out_of_dvc(run):
    report = run.data_dir / "reports" / SLUG
    for name in ("bound_vs_rms", "delta_sweep", "grid_ranking", "gaussian_closed_form"):
        assert (report / "plots" / f"{name}.png").stat().st_size > 1000
    metrics = (report / "metrics.json").read_text()
    assert '"validity_fraction": 1.0' in metrics and "per_s" not in metrics
    claims = pd.read_parquet(run.data_dir / "results" / SLUG / "claims.parquet")
    assert set(claims["claim_id"]) == {*run.paper.claim_ids, *run.paper.observation_ids}
    rows = pd.read_parquet(run.data_dir / "results" / SLUG / "metrics.parquet")
    assert {"rms", "w2", "log10_gmm_sup", "exact_w2"} <= set(rows["metric"])
    assert "wall_s" not in run.value("dsb_coupled_runs")
    assert not (run.data_dir / SLUG / "dsb_backend_benchmark.parquet").exists()       # a run record
    timings = (run.data_dir / "runs" / SLUG / "TIMINGS.md").read_text()
    assert "particle-steps/s" in timings and "Backend benchmark" in timings
    bench = run.value("dsb_backend_benchmark")
    assert set(zip(bench["backend"], bench["device"])) >= {("numpy", "cpu"), ("torch", "cpu")}


# ------------------------------------------------------------------------------ gates
def test_non_pd_covariance_stops_the_chains(run, tmp_path, monkeypatch):
    real = runs.target_rows

    def corrupted(specs):
        specs = list(specs)
        specs[1] = {**specs[1], "cov": [[1.0, 2.0], [2.0, 1.0]]}
        return real(specs)

    monkeypatch.setattr(runs, "target_rows", corrupted)
    seen = rerun(run, ["dsb_targets", "dsb_coupled_runs"], tmp_path / "data")
    assert seen["checks"]["mixture_valid"] is False
    assert "diffusion_w2/dsb_targets" in seen["assets"] and "diffusion_w2/dsb_coupled_runs" not in seen["assets"]


def test_mixture_check_names_the_bad_target():
    specs = [dict(s) for s in typed().targets]
    clean = runs.target_rows(specs)
    assert checks.mixture_valid(clean).passed
    specs[1] = {**specs[1], "cov": [[1.0, 2.0], [2.0, 1.0]]}
    specs[2] = {**specs[2], "weights": [0.5, 0.6]}
    found = checks.mixture_valid(runs.target_rows(specs))
    assert not found.passed
    assert "gauss2d" in found.message() and "not positive definite" in found.message()
    assert "gmm1d_mild" in found.message() and "sum to 1.1" in found.message()


def test_non_decreasing_grid_stops_the_chains(run, tmp_path, monkeypatch):
    real = runs.time_grid_rows

    def corrupted(*args, **kwargs):
        frame = real(*args, **kwargs)
        frame.loc[[5, 6], "tau"] = frame.loc[[6, 5], "tau"].to_numpy()
        return frame

    monkeypatch.setattr(runs, "time_grid_rows", corrupted)
    seen = rerun(run, ["dsb_time_grids", "dsb_coupled_runs"], tmp_path / "data")
    assert seen["checks"]["grids_strictly_decreasing"] is False
    assert "diffusion_w2/dsb_coupled_runs" not in seen["assets"]


def test_grid_check_names_the_step(run):
    grids, params = run.value("dsb_time_grids"), typed()
    assert checks.grids_valid(grids, params).passed
    grids.loc[[5, 6], "tau"] = grids.loc[[6, 5], "tau"].to_numpy()
    found = checks.grids_valid(grids, params)
    assert not found.passed and "tau not strictly decreasing at step k=5" in found.message()


def test_delta_not_below_T_fails_naming_delta(run, tmp_path):
    result = rerun_result(run, ["dsb_time_grids", "dsb_coupled_runs"], tmp_path / "data",
                          params_overrides={SLUG: {"experiments": {"validity": {"deltas": [1.0]}}}})
    assert "delta (early stopping) = 1.0 must be < T = 1.0" in step_errors(result)
    materialized = {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}
    assert not {"diffusion_w2/dsb_time_grids", "diffusion_w2/dsb_coupled_runs"} & materialized


def test_unstable_euler_step_fails_naming_K(run, tmp_path):
    result = rerun_result(run, ["dsb_time_grids", "dsb_coupled_runs"], tmp_path / "data",
                          params_overrides={SLUG: {"experiments": {"validity": {"Ks": [2]}}}})
    errors = step_errors(result)
    assert "unstable Euler step for target gauss1d" in errors and "K=2" in errors
    materialized = {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}
    assert "diffusion_w2/dsb_coupled_runs" not in materialized


def test_wrong_hessian_bound_is_named(run, monkeypatch):
    frame = run.value("dsb_targets")
    params = replace(typed(), hessian_check_points=100, hessian_check_taus=2)
    assert checks.hessian_bounds_within(frame, params, np.random.default_rng(0)).passed
    real = dsb_targets.curvature_interval

    def too_tight(target, family, a, sigma):
        lo, hi = real(target, family, a, sigma)
        return lo, lo + 0.5 * (np.asarray(hi) - np.asarray(lo)) if family == "gmm_sup" else hi

    monkeypatch.setattr(dsb_targets, "curvature_interval", too_tight)
    found = checks.hessian_bounds_within(frame, params, np.random.default_rng(0))
    assert not found.passed and "gmm_sup: Hessian spectrum" in found.message()


def test_unresolved_w2_stops_the_report(run, tmp_path, monkeypatch):
    real = runs.empirical_summary

    def noisy(*args, **kwargs):
        frame = real(*args, **kwargs)
        frame["floor"] = 0.5 * frame["w2"]            # the MC floor at half of every W2: a run too small
        frame["floor_ratio"] = 0.5
        return frame

    monkeypatch.setattr(runs, "empirical_summary", noisy)
    seen = rerun(run, ["dsb_empirical_w2", "benchmark_report"], tmp_path / "data")
    assert seen["checks"]["noise_floor_resolved"] is False
    assert "diffusion_w2/benchmark_report" not in seen["assets"]


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
    ok = checks.noise_floor_resolved(rows)
    assert ok.passed and "2 other W2 values reported, not gated" in ok.message()
    rows.loc[0, ["floor", "floor_ratio"]] = [0.25, 0.125]
    bad = checks.noise_floor_resolved(rows)
    assert not bad.passed and "gauss1d/vp/sde/uniform/δ=0.001/K=20/b1" in bad.message()
    assert not checks.noise_floor_resolved(rows.assign(w2_claim=False)).passed
    errors = {"b1": runs.M.ErrorModel("b1", 1.0, 0.5), "z": runs.M.ErrorModel("z", 0.0, 0.5),
              "low": runs.M.ErrorModel("low", 1.0, 1.0, "low_t")}
    frame = pd.DataFrame({"target": ["gauss1d", "gauss1d", "gauss1d", "gmm1d_mild"],
                          "error_model": ["b1", "z", "low", "b1"], "biased": [True, False, True, True],
                          "w2": [1.0, 0.1, 0.5, 1.0]})
    assert runs.w2_claim_scope(frame, errors, ["gauss1d"]).tolist() == [True, False, False, False]


def test_bound_below_the_rms_is_named(run):
    bounds, coupled = run.value("dsb_bounds"), run.value("dsb_coupled_runs")
    assert checks.bounds_valid(bounds, coupled).passed
    bounds.loc[0, "log10_gmm_sup"] = -12.0
    found = checks.bounds_valid(bounds, coupled)
    assert not found.passed and "gmm_sup_recursion" in found.message() and bounds.loc[0, "target"] in found.message()


def test_runs_check_names_non_finite_rows(run):
    coupled = run.value("dsb_coupled_runs")
    assert checks.runs_finite(coupled).passed
    coupled.loc[3, "rms"] = np.nan
    found = checks.runs_finite(coupled)
    assert not found.passed and "1 runs with non-finite RMS/floor" in found.message()
    assert not checks.runs_finite(coupled.iloc[:0]).passed


# ------------------------------------------------------------------------------ parameters
@pytest.mark.parametrize("profile", ["smoke", "cpu", "gpu"])
def test_claim_scope_is_run_at_every_profile(profile):
    p = typed(profile)
    configs = runs.configs(p)
    assert set(configs["target"]) <= {t["name"] for t in p.targets}
    assert set(p.claims.ranking_targets) <= set(configs["target"])
    assert set(p.claims.d1_targets) <= set(configs["target"])
    assert p.claims.main_K in set(configs["K"])
    assert {c.target for c in p.perf_benchmark} <= {t["name"] for t in p.targets}


def test_claim_thresholds_are_the_spec_pass_criteria():
    assert (benchmark.D1_REL_TOL, benchmark.D1_FLOOR_MULT, benchmark.SHARP_RATIO) == (0.03, 2.0, 3.0)
    assert (benchmark.BLOWUP_FACTOR, benchmark.LIP_CHANGE, benchmark.SPEARMAN_MIN) == (10.0, 0.2, 0.8)
    assert not {"sharp_ratio", "d1_rel_tol", "spearman_min"} & set(load_params(SLUG, "cpu")["claims"])


# ------------------------------------------------------------------------------ the gpu code path
def _ranking_rows(cells: dict[str, list[float]]) -> pd.DataFrame:
    """sched-like rows: per cell name the coupling RMS on each grid; the bound is 1, 2, 3, 4 (log10)."""
    from assets.diffusion_w2.processes import GRIDS

    return pd.DataFrame([{"target": name, "process": "vp", "sampler": "sde", "error_model": "e", "grid": grid,
                          "rms": rms, "log10_gmm_sup": float(rank), "seeds": 3}
                         for name, values in cells.items() for rank, (grid, rms) in enumerate(zip(GRIDS, values), 1)])


def test_grid_ranking_is_judged_per_cell_and_one_adjacent_swap_is_spearman_0_8():
    agree, one_swap, two_swaps = [1, 2, 3, 4], [2, 1, 3, 4], [2, 1, 4, 3]       # ρ = 1, 0.8 (exactly), 0.6
    cells = benchmark.grid_ranking_cells(_ranking_rows({"a": agree, "b": one_swap}))
    assert cells["spearman"].tolist() == [1.0, 0.8] and cells["ok"].all()
    assert benchmark.point_reading(benchmark.grid_ranking_claim(cells, 3))
    # 15 cells agree and one does not: the mean (0.975) is above 0.8, the claim is not
    many = benchmark.grid_ranking_cells(_ranking_rows({**{f"c{i:02d}": agree for i in range(15)}, "z": two_swaps}))
    claim = benchmark.grid_ranking_claim(many, 3)
    assert many["spearman"].mean() > benchmark.SPEARMAN_MIN and not benchmark.point_reading(claim)
    assert "in 15/16 cells" in claim.measured_value and "z/vp/sde/e ρ=0.6" in claim.detail
    assert claim.seeds == "0–2 (3) (seed means of the RMS)"                     # seeds_label of the seeds
    assert benchmark.grid_ranking_claim(many, benchmark.seeds_text([3, 5])).seeds == \
        "0–4 (5); 3–5 per configuration (seed means of the RMS)"
    empty = _ranking_rows({"a": agree}).iloc[:0]
    assert not benchmark.point_reading(benchmark.grid_ranking_claim(benchmark.grid_ranking_cells(empty), 0))


def test_gpu_profile_path_runs_with_the_torch_backend_on_cpu():
    """The gpu block's code path (torch backend, 16-D/64-D targets, sliced and Gaussian-moment W2,
    backend benchmark) through every table and predicate, at tiny sizes on device "cpu"."""
    p = typed("gpu", experiments={"v": {"targets": ["gauss1d", "gauss64d", "gmm16d", "gmm64d"], "processes": ["vp"],
                                        "samplers": ["sde", "ode"], "grids": ["uniform"], "deltas": [0.001],
                                        "Ks": [20], "errors": ["b1_s05_all", "z_s05_all"], "seeds": 1}},
              n_particles={1: 2000, 2: 300, 16: 500, 64: 1500}, hessian_check_points=200, hessian_check_taus=2,
              perf_benchmark=[{"target": "gmm64d", "process": "vp", "sampler": "sde", "K": 5, "n": 200}],
              claims={"main_K": 20})
    p = replace(p, experiments={"v": p.experiments["v"]}, bound_sweep={})
    compute = ComputeResource(profile="gpu", device="cpu")
    assert p.backend == "torch"
    target_frame = runs.target_rows(p.targets)
    assert checks.mixture_valid(target_frame).passed
    assert checks.hessian_bounds_within(target_frame, p, np.random.default_rng(0)).passed
    grid_frame = runs.time_grids(p)
    assert checks.grids_valid(grid_frame, p).passed
    targets, grids = runs.targets_from_frame(target_frame), runs.grids_by_key(grid_frame)
    errors = runs.error_models_from_frame(runs.error_model_rows(p.error_models))
    backend, device, dtype = runs.chain_backend(p, compute)
    coupled, timing = runs.coupled_runs(p, targets, grids, errors, lambda *k: compute.seed_for(SLUG, "run", *k),
                                        backend, device, dtype)
    assert (backend, device) == ("torch", "cpu") and set(coupled["backend"]) == {"torch"}
    assert "wall_s" not in coupled and timing["particle_steps_per_s"] > 0
    assert checks.runs_finite(coupled).passed
    empirical = runs.empirical_w2(coupled, errors, list(p.claims.d1_targets), seed=0)
    floor = checks.noise_floor_resolved(empirical)
    assert floor.passed and floor.metadata["gated"] == 4                  # gauss1d, gauss64d × sde/ode
    bounds = runs.bounds(p, targets, grids, errors, coupled)
    assert checks.bounds_valid(bounds, coupled).passed                    # bounds ≥ RMS in 64-D
    methods = coupled.drop_duplicates("target").set_index("target")["w2_method"]
    assert methods.to_dict() == {"gauss1d": "sorted", "gauss64d": "gauss_moments", "gmm16d": "sliced_lb_p256",
                                 "gmm64d": "sliced_lb_p256"}
    # the 64-D non-diagonal Gaussian: Monte-Carlo RMS and W2 against the analytic closed form
    gauss = coupled.merge(bounds, on=runs.CONFIG_COLS + ["error_model"]).query("target == 'gauss64d'")
    assert len(gauss) == 4 and np.allclose(gauss["rms"], gauss["exact_rms"], rtol=0.05)
    biased = gauss[gauss["error_model"] == "b1_s05_all"]
    tolerance = np.maximum(0.03 * biased["exact_w2"], 2 * biased["floor"])
    assert (np.abs(biased["w2"] - biased["exact_w2"]) <= tolerance).all()
    bench = runs.backend_benchmark(list(p.perf_benchmark), targets, runs.build_processes(p.process), errors,
                                   seed=0, devices=["cpu"], dtype=dtype)
    assert set(zip(bench["backend"], bench["device"])) == {("numpy", "cpu"), ("torch", "cpu")}
