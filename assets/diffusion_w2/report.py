"""diffusion_w2 benchmark report content: pure pandas/matplotlib, no Dagster.

`build_report` turns the empirical W2, the bounds and the coupled runs into a Report (claims,
tables, figures, tidy rows); the wall-clock measurements (coupled-chain throughput, the
numpy-vs-torch backend benchmark) go to its timing channel (data/runs/diffusion_w2/TIMINGS.md).
definitions.py publishes it.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from assets.common.report import METRIC_COLUMNS, Report, markdown_table
from assets.diffusion_w2 import benchmark, plots, runs
from assets.diffusion_w2.params import DiffusionW2Params
from assets.diffusion_w2.targets import FAMILIES

SLUG = "diffusion_w2"

SETTING = (
    "W2 is between the terminal laws of the *same* discretised chain run with the true score and "
    "with the perturbed score (Assumption 1: independent Gaussian errors per step). Bounds are on the "
    "synchronous-coupling RMS (E‖Δ_K‖²)^{1/2} ≥ W2. The ICML paper's exact statements are not "
    "available: the GMM Hessian control, the stepwise recursion, the general bound and the Lipschitz "
    "sharpening are reconstructions from the spec ([inferred]); the recursion form "
    "r_{k+1}² ≤ (ρ_k r_k + b_k‖μ_k‖)² + b_k² tr D_kD_kᵀ is our (provably valid, slightly tighter) "
    "variant of the spec's Minkowski form, which is reported too. The general bound's radius R is an "
    "effective radius (targets have unbounded support); the pathwise-Hessian surrogate is never used "
    "as a bound.")
RESOLUTION = (
    "MC noise floor = W2 between two independent unperturbed runs. W2 values used by a claim (Gaussian "
    "targets, biased errors over the whole path) are gated at floor < 10% of W2; the others are below:")
DELTA_SWEEP = (
    "small_t_log10_rho_*: Σ log10 ρ_k over the steps with τ_k ≤ 0.05T at δ=1e-2 → δ=1e-4, i.e. how much "
    "the curvature near the data amplifies errors. The general bound's small-time amplification grows "
    "without bound as δ → 0; the Lipschitz one stays O(h·L). A change of the Lipschitz bound that is not "
    "visible in this column comes from the steps at larger τ (the uniform grid's step h = (T − δ)/K "
    "changes with δ, and the bound multiplies hundreds of factors ρ_k).")
STEP_WORK = ("each step evaluates a score, draws Gaussian noise and errors, and records the Hessian along the "
             "true path on the first seed")
BENCH_INTRO = (
    "Backends on the same configuration (best of 2 timings, no curvature recording; torch with "
    "the compute resource's thread count; fraction_of_axpy = element-steps/s ÷ axpy elements/s for an "
    "array of n·chains·d float64):")


def metric_rows(empirical: pd.DataFrame, bounds: pd.DataFrame) -> pd.DataFrame:
    """Tidy warehouse rows: one per (configuration, error model, metric)."""
    merged = empirical.merge(bounds, on=runs.CONFIG_COLS + ["error_model"], how="left")
    merged["dataset"] = merged["target"]
    merged["partition"] = (merged["process"] + "/" + merged["sampler"] + "/" + merged["grid"] + "/delta="
                           + merged["delta"].astype(str) + "/K=" + merged["K"].astype(str))
    merged["method"] = merged["error_model"]
    values = ["rms", "w2", "floor", "floor_ratio", "log10_gmm_sup", "log10_lipschitz", "log10_general",
              "log10_gmm_sup_minkowski", "log10_pathwise", "exact_rms", "exact_w2"]
    rows = merged.melt(id_vars=["dataset", "partition", "method"], value_vars=values, var_name="metric",
                       value_name="value")
    rows = rows[np.isfinite(rows["value"].astype(float))]
    return rows.assign(asset=f"{SLUG}/dsb_empirical_w2", seed=-1)[METRIC_COLUMNS]


def threshold_rows(bounds: pd.DataFrame, base_seed: int) -> pd.DataFrame:
    """The calibrated theory curves as threshold rows (name, seed, dataset, method, value)."""
    frame = bounds.melt(id_vars=runs.CONFIG_COLS + ["error_model"], value_vars=[f"log10_{f}" for f in FAMILIES],
                        var_name="name", value_name="value")
    frame = frame[np.isfinite(frame["value"])].assign(
        seed=base_seed, method=lambda d: d["name"].str.replace("log10_", ""),
        dataset=lambda d: d["target"] + "/" + d["process"] + "/" + d["sampler"] + "/" + d["grid"]
        + "/delta=" + d["delta"].astype(str) + "/K=" + d["K"].astype(str) + "/" + d["error_model"])
    return frame[["name", "seed", "dataset", "method", "value"]]


def resolution_table(empirical: pd.DataFrame) -> pd.DataFrame:
    measured = empirical[np.isfinite(empirical["w2"])].copy()
    measured["kind"] = np.where(measured["w2_claim"], "used by a claim",
                                np.where(measured["biased"], "biased, not used", "zero-mean error"))
    return (measured.groupby(["kind", "target"]).agg(configs=("w2", "size"),
                                                     resolved=("w2_resolved", "sum"),
                                                     median_floor_ratio=("floor_ratio", "median"),
                                                     max_floor_ratio=("floor_ratio", "max"))
            .reset_index())


def _fmt_log(v: float) -> str:
    return "—" if not np.isfinite(v) else (f"{10 ** v:.3g}" if v < 6 else f"1e{v:.1f}")


def _backend_label(per_run: pd.DataFrame) -> str:
    return (f"{per_run['backend'].iat[0]} backend on {per_run['device'].iat[0]}"
            if "backend" in per_run and "device" in per_run and len(per_run) else "numpy backend")


def report_body(empirical: pd.DataFrame, bounds: pd.DataFrame, coupled: pd.DataFrame, tables: dict,
                params: DiffusionW2Params) -> str:
    scope = params.claims
    merged = empirical.merge(bounds, on=runs.CONFIG_COLS + ["error_model"], how="left")
    main = merged[(merged["grid"] == scope.main_grid) & (merged["delta"] == scope.main_delta)
                  & (merged["K"] == scope.main_K)].copy()
    for col in ("log10_gmm_sup", "log10_lipschitz", "log10_general", "log10_pathwise"):
        main[col.replace("log10_", "")] = main[col].map(_fmt_log)
    main_table = main[["target", "process", "sampler", "error_model", "rms", "w2", "floor", "exact_w2",
                       "gmm_sup", "pathwise", "lipschitz", "general"]]
    per_run = coupled.drop_duplicates(runs.CONFIG_COLS + ["seed"])
    sweep = bounds[bounds["target"].isin(scope.delta_targets) & (bounds["error_model"] == scope.delta_error)
                   & (bounds["K"] == scope.main_K)].copy()
    for col in ("log10_gmm_sup", "log10_lipschitz", "log10_general"):
        sweep[col.replace("log10_", "")] = sweep[col].map(_fmt_log)
    sweep_table = sweep[["target", "process", "sampler", "grid", "delta", "gmm_sup", "lipschitz", "general"]]
    sharp = (tables["sharpness"].groupby(["target", "error_model"])["gmm_ratio"].agg(["min", "median", "max"])
             .reset_index())
    d1_cols = runs.CONFIG_COLS + ["error_model", "exact_w2", "w2", "floor", "rel_err", "ok"]
    lines = [
        "## Setting and status of the statements", "", SETTING, "",
        f"## Main configurations ({scope.main_grid} grid, δ={scope.main_delta:g}, K={scope.main_K}; "
        "seed means)", "", markdown_table(main_table.reset_index(drop=True)), "",
        "## Gaussian closed form vs Monte Carlo (D1)", "",
        markdown_table(tables["gaussian_closed_form"][d1_cols].reset_index(drop=True), 4), "",
        "## W2 resolution", "", RESOLUTION, "", markdown_table(resolution_table(empirical)), "",
        "## Validity (D2): fraction of runs covered, per bound", "", markdown_table(tables["validity_by_bound"]), "",
        "## Sharpness: GMM-sup bound / coupling RMS (biased errors, all configurations)", "",
        markdown_table(sharp), "",
        "## δ-sweep of the bounds (D4)", "", DELTA_SWEEP, "",
        markdown_table(tables["delta_sweep_claim"]), "",
        markdown_table(sweep_table.sort_values(["target", "process", "sampler", "grid", "delta"])
                       .reset_index(drop=True)), "",
        "## SDE vs ODE (D5)", "", markdown_table(tables["sde_vs_ode"]), "",
        "## Time-grid ranking (D5)", "", markdown_table(tables["grid_ranking"]), "",
        "## Performance", "",
        f"{len(per_run)} coupled runs ({_backend_label(per_run)}), {per_run['sample_steps'].sum():.3g} "
        f"particle-steps ({STEP_WORK}). Their wall-clock throughput against the numpy axpy memory-bandwidth "
        f"floor, and the numpy-vs-torch backend benchmark, are run records: `data/runs/{SLUG}/TIMINGS.md`."]
    return "\n".join(lines)


def timing_body(coupled: pd.DataFrame, chain_timing: Mapping[str, float] | None, bench: pd.DataFrame) -> str:
    """TIMINGS.md: coupled-chain throughput vs the axpy floor, and the backend benchmark table."""
    per_run = coupled.drop_duplicates(runs.CONFIG_COLS + ["seed"])
    lines = ["## Coupled chains (dsb_coupled_runs)", ""]
    if chain_timing:
        rate, axpy = chain_timing["particle_steps_per_s"], chain_timing["axpy_elements_per_s"]
        lines += [f"{len(per_run)} coupled runs ({_backend_label(per_run)}), {per_run['sample_steps'].sum():.3g} "
                  f"particle-steps in {chain_timing['wall_s']:.0f} s: {rate:.3g} particle-steps/s; one numpy "
                  f"axpy over an array of the largest run's size moves {axpy:.3g} elements/s (memory-bandwidth "
                  f"floor), so the chains run at {rate / axpy:.1%} of that floor ({STEP_WORK}).", ""]
    else:
        lines += ["dsb_coupled_runs was not materialized with this report: its throughput is in that "
                  "materialization's metadata.", ""]
    if bench is not None and len(bench):
        table = bench[["target", "dim", "n", "K", "chains", "backend", "device", "wall_s", "particle_steps_per_s",
                       "axpy_elements_per_s", "fraction_of_axpy"]].copy()
        for col in ("particle_steps_per_s", "axpy_elements_per_s"):
            table[col] = table[col].map(lambda v: f"{v:.3g}")
        table["fraction_of_axpy"] = table["fraction_of_axpy"].map(lambda v: f"{v:.2%}")
        table["wall_s"] = table["wall_s"].map(lambda v: f"{v:.2f}")
        lines += ["## Backend benchmark (dsb_backend_benchmark)", "", BENCH_INTRO, "",
                  markdown_table(table.reset_index(drop=True), 3), ""]
    return "\n".join(lines)


def timing_rows(chain_timing: Mapping[str, float] | None, bench: pd.DataFrame, coupled: pd.DataFrame) -> pd.DataFrame:
    """Wall-clock metric rows (METRIC_COLUMNS): the coupled runs' throughput and the benchmark's."""
    rows = []
    if chain_timing:
        method = _backend_label(coupled.drop_duplicates(runs.CONFIG_COLS + ["seed"])).replace(" backend on ", "/")
        rows += [{"asset": f"{SLUG}/dsb_coupled_runs", "partition": "all", "seed": -1, "dataset": "all",
                  "method": method, "metric": k, "value": float(v)} for k, v in chain_timing.items()]
    if bench is not None and len(bench):
        for r in bench.itertuples():
            rows += [{"asset": f"{SLUG}/dsb_backend_benchmark", "partition": f"{r.process}/{r.sampler}/n={r.n}/K={r.K}",
                      "seed": -1, "dataset": r.target, "method": f"{r.backend}/{r.device}", "metric": metric,
                      "value": float(getattr(r, metric))}
                     for metric in ("wall_s", "particle_steps_per_s", "element_steps_per_s", "axpy_elements_per_s",
                                    "fraction_of_axpy")]
    return pd.DataFrame(rows, columns=METRIC_COLUMNS)


def build_report(empirical: pd.DataFrame, bounds: pd.DataFrame, coupled: pd.DataFrame,
                 error_models: pd.DataFrame, bench: pd.DataFrame, params: DiffusionW2Params, base_seed: int,
                 chain_timing: Mapping[str, float] | None = None) -> Report:
    """The report: claims D1–D5, tables and figures (DVC-tracked); throughput (run records).

    chain_timing: dsb_coupled_runs' wall-clock record (runs.coupled_runs), when known."""
    scope = params.claims
    errors = runs.error_models_from_frame(error_models)
    validity = benchmark.validity_rows(coupled, bounds)
    claims, tables = benchmark.evaluate_claims(empirical, bounds, validity, errors, scope, runs=coupled)
    figures = {"bound_vs_rms": plots.bound_vs_rms(empirical, bounds),
               "delta_sweep": plots.delta_sweep(bounds, list(scope.delta_targets), scope.delta_error,
                                                int(scope.main_K)),
               "grid_ranking": plots.grid_ranking(empirical, bounds, list(scope.ranking_targets),
                                                  float(scope.main_delta), int(scope.main_K)),
               "gaussian_closed_form": plots.gaussian_closed_form(tables["gaussian_closed_form"])}
    per_run = coupled.drop_duplicates(runs.CONFIG_COLS + ["seed"])
    dvc_metrics = {"validity_fraction": float(validity["covers"].mean()) if len(validity) else float("nan"),
                   "runs": int(len(per_run))}
    return Report(claims=claims, body=report_body(empirical, bounds, coupled, tables, params), figures=figures,
                  metrics=metric_rows(empirical, bounds), dvc_metrics=dvc_metrics,
                  thresholds=threshold_rows(bounds, base_seed),
                  timings=timing_rows(chain_timing, bench, coupled),
                  timing_body=timing_body(coupled, chain_timing, bench))
