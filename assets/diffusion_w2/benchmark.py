"""Experiment tables for the diffusion-W2 validation: configurations, coupled runs,
empirical W2, bounds and the claims — pure numpy/pandas (no Dagster).

A configuration is (target, process, sampler, grid, delta, K); a run adds a seed and runs
every error model of that configuration on the same coupled chains. The experiments of
params.yaml are cartesian products that are merged (union of error models, max of seeds).
"""
from __future__ import annotations

import itertools
import time
from typing import Any, Callable

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from assets.common.claims import Claim
from assets.diffusion_w2 import empirical as EMP
from assets.diffusion_w2 import method as M
from assets.diffusion_w2.processes import GRIDS, Process, time_grid_frame
from assets.diffusion_w2.targets import FAMILIES, build_target, has_family, mixture_arrays, mixture_problems

CONFIG_COLS = ["target", "process", "sampler", "grid", "delta", "K"]
GRID_COLS = ["process", "grid", "delta", "K"]
CERTIFIED = ("gmm_sup", "lipschitz", "general")     # the pathwise surrogate is never a bound
BACKENDS = ("numpy", "torch")


# ------------------------------------------------------------------------------ inputs
def target_rows(specs: list[dict]) -> pd.DataFrame:
    """The targets table (no validation here: the blocking check reports problems).

    One row per target: name, kind, dim, weights/means/cov (JSON lists), L, D, R, problems.
    """
    rows = []
    for spec in specs:
        problems: list[str] = []
        if spec["kind"] in ("gmm", "gaussian"):
            weights, means, cov = mixture_arrays(spec)
            problems = mixture_problems(weights, means, cov)
        row = {"target": spec["name"], "kind": spec["kind"], "problems": "; ".join(problems)}
        if not problems:
            row.update(build_target(spec).describe())
        else:
            row.update({"dim": int(means.shape[1]),
                        "weights": np.asarray(weights).tolist(), "means": means.tolist(),
                        "cov": np.atleast_2d(cov).tolist(), "n_components": len(means),
                        "lipschitz_L": float("nan"), "diameter_D": float("nan"), "radius_R": float("nan")})
        row["spec"] = spec
        rows.append(row)
    frame = pd.DataFrame(rows)
    for col in ("weights", "means", "cov", "spec"):
        frame[col] = frame[col].map(lambda v: __import__("json").dumps(v))
    return frame


def targets_from_frame(frame: pd.DataFrame) -> dict[str, Any]:
    import json

    return {row.target: build_target(json.loads(row.spec)) for row in frame.itertuples()}


def build_processes(params: dict) -> dict[str, Process]:
    p = params["process"]
    T = float(p.get("T", 1.0))
    return {"vp": Process("vp", T=T, beta_min=float(p["vp"]["beta_min"]), beta_max=float(p["vp"]["beta_max"])),
            "ve": Process("ve", T=T, sigma_min=float(p["ve"]["sigma_min"]), sigma_max=float(p["ve"]["sigma_max"]))}


def error_model_rows(specs: dict[str, dict]) -> pd.DataFrame:
    return pd.DataFrame([{"error_model": name, "mean": float(s["mean"]), "sd": float(s["sd"]),
                          "window": str(s["window"])} for name, s in specs.items()])


def error_models_from_frame(frame: pd.DataFrame) -> dict[str, M.ErrorModel]:
    return {r.error_model: M.ErrorModel(r.error_model, float(r.mean), float(r.sd), r.window)
            for r in frame.itertuples()}


def _expand(exp: dict, all_targets: list[str], all_errors: list[str]) -> list[dict]:
    targets = all_targets if exp.get("targets", "all") == "all" else list(exp["targets"])
    errors = all_errors if exp.get("errors", "all") == "all" else list(exp["errors"])
    grids = list(GRIDS) if exp.get("grids", "all") == "all" else list(exp["grids"])
    return [{"target": t, "process": p, "sampler": s, "grid": g, "delta": float(d), "K": int(k),
             "errors": errors, "seeds": int(exp.get("seeds", 1))}
            for t, p, s, g, d, k in itertools.product(targets, exp["processes"], exp["samplers"], grids,
                                                      exp["deltas"], exp["Ks"])]


def expand_configs(experiments: dict[str, dict], all_targets: list[str], all_errors: list[str]) -> pd.DataFrame:
    """Merge experiments into one row per configuration: errors = union (params order),
    seeds = max, experiments = the names that asked for it."""
    merged: dict[tuple, dict] = {}
    for name, exp in experiments.items():
        for row in _expand(exp, all_targets, all_errors):
            key = tuple(row[c] for c in CONFIG_COLS)
            if key not in merged:
                merged[key] = {**row, "errors": list(row["errors"]), "experiments": [name]}
            else:
                m = merged[key]
                m["errors"] = [e for e in all_errors if e in set(m["errors"]) | set(row["errors"])]
                m["seeds"] = max(m["seeds"], row["seeds"])
                m["experiments"].append(name)
    return pd.DataFrame(list(merged.values()))


def grid_keys(*config_frames: pd.DataFrame) -> list[tuple]:
    keys = set()
    for frame in config_frames:
        keys |= set(map(tuple, frame[GRID_COLS].drop_duplicates().itertuples(index=False)))
    return sorted(keys, key=lambda k: (k[0], k[1], -k[2], k[3]))


def time_grid_rows(processes: dict[str, Process], keys: list[tuple]) -> pd.DataFrame:
    return pd.concat([time_grid_frame(processes[p], g, d, k) for p, g, d, k in keys], ignore_index=True)


def grids_by_key(frame: pd.DataFrame) -> dict[tuple, pd.DataFrame]:
    return {key: g.sort_values("k").reset_index(drop=True) for key, g in frame.groupby(GRID_COLS, sort=False)}


# ------------------------------------------------------------------------------ runs
def run_configs(configs: pd.DataFrame, targets: dict, grids: dict[tuple, pd.DataFrame],
                errors: dict[str, M.ErrorModel], n_particles: dict[int, int], ot_subsample: int,
                ot_errors: list[str], seed_for: Callable[..., int], T: float,
                log: Callable[[str], None] = lambda s: None, backend: str = "numpy",
                device: str = "cpu", dtype: str = "float64", projections: int = 128) -> pd.DataFrame:
    """Simulate every configuration × seed; one row per (configuration, seed, error model).

    Columns: CONFIG_COLS, seed, error_model, n, rms, rms_se, w2, w2_method, floor (W2 between
    two independent unperturbed runs, same estimator), path_lambda_min/max (K lists), wall_s
    and sample_steps (particles × chains × steps of the run, repeated on each row), backend.
    W2 (empirical.w2_method): sorting in 1-D; OT on `ot_subsample` particles in 2-D for the
    error models in `ot_errors` only; in d > 2 the Gaussian moment-fit Bures distance (Gaussian
    targets) or √d·sliced W2 over `projections` directions (a lower bound on W2), for all.
    backend "numpy" (method.simulate_coupled) or "torch" (torch_backend, on `device`, `dtype`).
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "torch":
        from assets.diffusion_w2 import torch_backend as TB

        torch_dtype = TB.resolve_dtype(dtype)
    rows, start = [], time.monotonic()
    cache_key, cache_steps = None, None
    ordered = configs.sort_values(["target", "process", "grid", "delta", "K", "sampler"]).reset_index(drop=True)
    for index, cfg in enumerate(ordered.itertuples(index=False), 1):
        target = targets[cfg.target]
        grid = grids[(cfg.process, cfg.grid, cfg.delta, cfg.K)]
        key = (cfg.target, cfg.process, cfg.grid, cfg.delta, cfg.K)
        if key != cache_key:                       # score tables shared by samplers and seeds
            cache_key = key
            cache_steps = (M.step_functions(target, grid) if backend == "numpy"
                           else TB.TorchSteps(target, grid, device, torch_dtype))
        models = [errors[e] for e in cfg.errors]
        n = int(n_particles[target.dim])
        method = EMP.w2_method(target, ot_subsample, projections)
        directions = (EMP.sliced_directions(target.dim, projections, seed_for(cfg.target, "sliced"))
                      if method.startswith("sliced") else None)
        for seed in range(int(cfg.seeds)):
            run_seed = seed_for(*[getattr(cfg, c) for c in CONFIG_COLS], seed)
            t0 = time.monotonic()
            if backend == "numpy":
                out = M.simulate_coupled(target, grid, cfg.sampler, models, n, run_seed,
                                         steps=cache_steps, T=T, record_curvature=seed == 0)
                estimate = lambda x, y: EMP.w2_empirical(x, y, ot_subsample, directions, method)  # noqa: E731
                rms_of = EMP.coupling_rms
            else:
                out = TB.simulate_coupled_torch(target, grid, cfg.sampler, models, n, run_seed, device,
                                                torch_dtype, steps=cache_steps, T=T, record_curvature=seed == 0)
                dirs = None if directions is None else TB._torch().as_tensor(directions, dtype=torch_dtype,
                                                                              device=device)
                estimate = lambda x, y: TB.w2_estimate(x, y, method, ot_subsample, dirs)  # noqa: E731
                rms_of = TB.coupling_rms
            measure_w2 = target.dim != 2
            floor = estimate(out["true"], out["replica"])
            for e_index, model in enumerate(models):
                rms, se = rms_of(out["perturbed"][e_index] - out["true"])
                w2 = (estimate(out["true"], out["perturbed"][e_index])
                      if measure_w2 or model.name in ot_errors else float("nan"))
                rows.append({**{c: getattr(cfg, c) for c in CONFIG_COLS}, "seed": seed,
                             "error_model": model.name, "n": n, "rms": rms, "rms_se": se, "w2": w2,
                             "w2_method": method, "floor": floor,
                             "path_lambda_min": out["path_lambda_min"].tolist(),
                             "path_lambda_max": out["path_lambda_max"].tolist(),
                             "wall_s": time.monotonic() - t0,
                             "sample_steps": float(n * (2 + len(models)) * cfg.K), "backend": backend})
        elapsed = time.monotonic() - start
        if index % 10 == 0 or index == len(ordered):
            log(f"[{index}/{len(ordered)}] {cfg.target}/{cfg.process}/{cfg.sampler}/{cfg.grid}/"
                f"delta={cfg.delta:g}/K={cfg.K} ({elapsed:.0f} s, ~{elapsed / index * (len(ordered) - index):.0f} s left)")
    return pd.DataFrame(rows)


def axpy_floor(n_elements: int, repeats: int = 200) -> float:
    """Elements per second of one numpy axpy (y += a·x) on n_elements float64 — the
    memory-bandwidth floor a vectorised chain step cannot beat."""
    x, y = np.ones(n_elements), np.zeros(n_elements)
    y += 0.5 * x
    t0 = time.perf_counter()
    for _ in range(repeats):
        y += 0.5 * x
    return n_elements * repeats / (time.perf_counter() - t0)


def backend_benchmark(cases: list[dict], targets: dict, processes: dict[str, Process],
                      errors: dict[str, M.ErrorModel], seed: int, devices: list[str],
                      dtype: str = "float64", repeats: int = 2,
                      log: Callable[[str], None] = lambda s: None) -> pd.DataFrame:
    """Throughput of the coupled chains per backend on identical configurations.

    cases: [{target, process, sampler, grid, delta, K, n}] (all error models of `errors` are
    run, no curvature recording). For each case: numpy on the CPU, then torch on every device
    in `devices` (e.g. ["cpu"] or ["cpu", "cuda"]); the best of `repeats` timings (the first
    torch call pays one-off start-up costs). One row per (case, backend, device) with
    particle_steps_per_s = n·chains·K / wall, element_steps_per_s (× d) and the numpy axpy
    floor on an array of n·chains·d float64 (the memory-bandwidth bound of one step's update).
    """
    from assets.diffusion_w2 import torch_backend as TB

    rows = []
    models = list(errors.values())
    for case in cases:
        target = targets[case["target"]]
        grid = time_grid_frame(processes[case["process"]], case.get("grid", "uniform"),
                               float(case.get("delta", 1e-3)), int(case["K"]))
        n, K, d = int(case["n"]), int(case["K"]), target.dim
        chains = 2 + len(models)
        runners = [("numpy", "cpu", lambda: M.simulate_coupled(target, grid, case["sampler"], models, n, seed,
                                                                 record_curvature=False))]
        for device in devices:
            steps = TB.TorchSteps(target, grid, device, TB.resolve_dtype(dtype))
            runners.append(("torch", device, lambda device=device, steps=steps: TB.simulate_coupled_torch(
                target, grid, case["sampler"], models, n, seed, device, TB.resolve_dtype(dtype), steps=steps,
                record_curvature=False)))
        floor = axpy_floor(n * chains * d)
        for backend, device, fn in runners:
            wall = min(TB.time_chain(fn, device)[1] for _ in range(repeats))
            rate = n * chains * K / wall
            rows.append({"target": case["target"], "dim": d, "process": case["process"], "sampler": case["sampler"],
                         "K": K, "n": n, "chains": chains, "backend": backend, "device": device,
                         "dtype": "float64" if backend == "numpy" else dtype, "wall_s": wall,
                         "particle_steps_per_s": rate, "element_steps_per_s": rate * d,
                         "axpy_elements_per_s": floor, "fraction_of_axpy": rate * d / floor})
            log(f"backend benchmark {case['target']} (d={d}, n={n}, K={K}): {backend}/{device} "
                f"{rate:.3g} particle-steps/s ({wall:.2f} s)")
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------ empirical
def empirical_summary(runs: pd.DataFrame, errors: dict[str, M.ErrorModel], seed: int = 0) -> pd.DataFrame:
    """Per (configuration, error model): seed means of RMS / W2 / floor, a bootstrap CI (over
    seeds) of the mean W2, and the floor/W2 ratio the noise-floor check reads."""
    rng = np.random.default_rng(seed)
    rows = []
    for key, g in runs.groupby(CONFIG_COLS + ["error_model"], sort=False):
        w2 = g["w2"].to_numpy(dtype=float)
        lo, hi = EMP.bootstrap_mean_ci(w2, rng)
        mean_w2 = float(np.nanmean(w2)) if np.isfinite(w2).any() else float("nan")
        rows.append({**dict(zip(CONFIG_COLS + ["error_model"], key)), "seeds": len(g),
                     "rms": float(g["rms"].mean()), "rms_sd": float(g["rms"].std(ddof=0)),
                     "w2": mean_w2, "w2_ci_lo": lo, "w2_ci_hi": hi, "floor": float(g["floor"].mean()),
                     "floor_ratio": float(g["floor"].mean() / mean_w2) if mean_w2 > 0 else float("nan"),
                     "w2_method": g["w2_method"].iat[0], "biased": errors[key[-1]].biased})
    return pd.DataFrame(rows)


def w2_claim_scope(empirical: pd.DataFrame, errors: dict[str, M.ErrorModel], targets: list[str]) -> pd.Series:
    """The W2 measurements a claim consumes (D1): Gaussian targets, biased errors injected over
    the whole path (window "all"), W2 measured. These must be resolved (the blocking
    noise-floor check). Other W2 values — zero-mean errors (W2 ≪ RMS), errors confined to a
    window (VE with τ ≤ 0.4T moves the law by only ~0.05), well-separated mixtures (mode-mass
    fluctuation makes the floor ~n^{-1/4}) — are reported with their floor ratio, not gated."""
    window_all = empirical["error_model"].map(lambda e: errors[e].window == "all")
    return empirical["target"].isin(targets) & empirical["biased"] & window_all & np.isfinite(empirical["w2"])


# ------------------------------------------------------------------------------ bounds
def bounds_table(configs: pd.DataFrame, targets: dict, grids: dict[tuple, pd.DataFrame],
                 errors: dict[str, M.ErrorModel], runs: pd.DataFrame | None, T: float) -> pd.DataFrame:
    """Per (configuration, error model): log10 of every bound on the coupling RMS.

    Columns log10_<family> (stepwise recursion, certified), log10_gmm_sup_minkowski (spec's
    Minkowski form), log10_pathwise (surrogate from the seed-0 path curvature; NaN for
    bound-only configurations), exact_rms / exact_w2 (Gaussian closed form, NaN otherwise),
    small_t_log10_rho_<family>: Σ log10 ρ_k over the small-time steps τ_k ≤ 0.05T (how much the
    curvature near the data amplifies errors).
    """
    paths = {}
    if runs is not None and len(runs):
        first = runs[runs["seed"] == 0].drop_duplicates(CONFIG_COLS)      # curvature recorded on seed 0
        for key, g in first.groupby(CONFIG_COLS, sort=False):
            paths[key] = (np.mean(np.stack(g["path_lambda_min"].map(np.asarray).to_list()), 0),
                          np.mean(np.stack(g["path_lambda_max"].map(np.asarray).to_list()), 0))
    rows = []
    for cfg in configs.itertuples(index=False):
        target = targets[cfg.target]
        grid = grids[(cfg.process, cfg.grid, cfg.delta, cfg.K)]
        key = tuple(getattr(cfg, c) for c in CONFIG_COLS)
        for name in cfg.errors:
            model = errors[name]
            row = {**dict(zip(CONFIG_COLS, key)), "error_model": name, "has_runs": key in paths}
            for family in FAMILIES:
                if has_family(target, family):
                    b = M.family_bound(target, family, grid, cfg.sampler, model, T)
                    row[f"log10_{family}"] = b["log10_recursion"]
                    row[f"log10_{family}_minkowski"] = b["log10_minkowski"]
                    row[f"small_t_log10_rho_{family}"] = b["sum_log10_rho_small_t"]
                else:
                    row[f"log10_{family}"] = row[f"log10_{family}_minkowski"] = float("nan")
                    row[f"small_t_log10_rho_{family}"] = float("nan")
            if key in paths:
                row["log10_pathwise"] = M.pathwise_surrogate(grid, cfg.sampler, model, target.dim,
                                                             *paths[key], T)["log10_recursion"]
            else:
                row["log10_pathwise"] = float("nan")
            if getattr(target, "kind", "") == "gmm" and len(target.weights) == 1:
                exact = M.gaussian_exact(target, grid, cfg.sampler, model, T)
                row["exact_rms"], row["exact_w2"] = exact["rms"], exact["w2"]
            else:
                row["exact_rms"] = row["exact_w2"] = float("nan")
            rows.append(row)
    return pd.DataFrame(rows)


def validity_rows(runs: pd.DataFrame, bounds: pd.DataFrame, z: float = 3.0) -> pd.DataFrame:
    """Per run row and certified bound (recursion and Minkowski forms): does the bound cover
    the measured coupling RMS (up to z Monte-Carlo standard errors), and does the RMS cover the
    measured W2 up to the noise floor (W2 ≤ RMS + floor)?"""
    merged = runs.merge(bounds, on=CONFIG_COLS + ["error_model"], how="left")
    out = []
    for family in CERTIFIED:
        for form in ("", "_minkowski"):
            col = f"log10_{family}{form}"
            sub = merged[np.isfinite(merged[col]) | np.isinf(merged[col])]
            sub = sub[sub[col].notna()]
            bound = np.power(10.0, sub[col].clip(upper=300))
            out.append(sub[CONFIG_COLS + ["seed", "error_model", "rms", "rms_se"]].assign(
                bound_name=f"{family}{form or '_recursion'}", bound=bound.to_numpy(),
                covers=(bound.to_numpy() >= sub["rms"].to_numpy() - z * sub["rms_se"].to_numpy())))
    frame = pd.concat(out, ignore_index=True)
    w2_ok = merged[np.isfinite(merged["w2"])]
    w2_rows = w2_ok[CONFIG_COLS + ["seed", "error_model", "rms", "rms_se"]].assign(
        bound_name="rms_vs_w2", bound=w2_ok["w2"].to_numpy(),
        covers=w2_ok["rms"].to_numpy() + w2_ok["floor"].to_numpy() >= w2_ok["w2"].to_numpy())
    return pd.concat([frame, w2_rows], ignore_index=True)


# ------------------------------------------------------------------------------ claims
def _cfg_name(row) -> str:
    return f"{row['target']}/{row['process']}/{row['sampler']}/{row['grid']}/δ={row['delta']:g}/K={row['K']}/{row['error_model']}"


def evaluate_claims(empirical: pd.DataFrame, bounds: pd.DataFrame, validity: pd.DataFrame,
                    errors: dict[str, M.ErrorModel], settings: dict) -> tuple[list[Claim], dict[str, pd.DataFrame]]:
    """The six claims (D1–D5 of the spec, D5 split in two) and the tables behind them.

    settings: main_grid, main_delta, main_K, sharp_target, sharp_ratio, d1_targets, d1_rel_tol,
    d1_floor_mult, delta_targets, lip_change, blowup_factor, ranking_targets, spearman_min.
    """
    s = settings
    claims: list[Claim] = []
    tables: dict[str, pd.DataFrame] = {}
    main = (empirical["grid"] == s["main_grid"]) & (empirical["delta"] == s["main_delta"]) & (empirical["K"] == s["main_K"])
    emp_b = empirical.merge(bounds, on=CONFIG_COLS + ["error_model"], how="left")

    # D1 — Gaussian closed form vs Monte Carlo
    d1 = emp_b[w2_claim_scope(emp_b, errors, s["d1_targets"]).to_numpy() & np.isfinite(emp_b["exact_w2"])].copy()
    d1["abs_err"] = (d1["w2"] - d1["exact_w2"]).abs()
    d1["rel_err"] = d1["abs_err"] / d1["exact_w2"]
    d1["tolerance"] = np.maximum(s["d1_rel_tol"] * d1["exact_w2"], s["d1_floor_mult"] * d1["floor"])
    d1["ok"] = d1["abs_err"] <= d1["tolerance"]
    tables["gaussian_closed_form"] = d1
    combos = d1.groupby(["process", "sampler"]).size()
    worst = d1.loc[(d1["abs_err"] / d1["tolerance"]).idxmax()] if len(d1) else None
    claims.append(Claim(
        "gaussian_closed_form",
        "Gaussian data: the closed-form W2 (mean/covariance recursions + Bures) matches the Monte-Carlo "
        "W2 within 3% relative or 2× the noise floor, for VP/VE × SDE/ODE (biased errors over the whole path)",
        "match within 3% (or 2× noise floor)",
        "no rows" if worst is None else
        f"{int(d1['ok'].sum())}/{len(d1)} configs match; median rel. error {d1['rel_err'].median():.2%}; worst "
        f"{worst['rel_err']:.2%} ({_cfg_name(worst)}, tol {worst['tolerance']:.3g})",
        bool(len(d1) and d1["ok"].all() and len(combos) == 4),
        detail=f"{len(combos)} process×sampler combinations covered"))

    # D2 — validity of every certified bound
    bounds_ok = validity[validity["bound_name"] != "rms_vs_w2"]
    w2_ok = validity[validity["bound_name"] == "rms_vs_w2"]
    failures = validity[~validity["covers"]]
    tables["validity_failures"] = failures
    by_bound = validity.groupby("bound_name")["covers"].agg(["mean", "size"]).reset_index()
    tables["validity_by_bound"] = by_bound
    n_cfg = validity.drop_duplicates(CONFIG_COLS + ["error_model"]).shape[0]
    claims.append(Claim(
        "bounds_valid",
        "Validity: every certified bound (GMM-sup, Lipschitz, general; recursion and Minkowski forms) "
        "≥ coupling RMS (− 3 MC s.e.) and RMS ≥ W2 − noise floor, in every configuration × seed",
        "100% of configs × 5 seeds",
        f"bounds cover RMS in {bounds_ok['covers'].mean():.2%} of {len(bounds_ok)} (bound, run) pairs; "
        f"RMS ≥ W2 − floor in {w2_ok['covers'].mean():.2%} of {len(w2_ok)} runs; {n_cfg} configs × error models",
        bool(len(bounds_ok) and bounds_ok["covers"].all() and w2_ok["covers"].all()),
        detail="; ".join(f"{r.bound_name}: {r.mean:.1%} of {r.size}" for r in by_bound.itertuples())
        + (f"; first failure {_cfg_name(failures.iloc[0])} seed {failures.iloc[0]['seed']}" if len(failures) else "")))

    # D3 — sharpness of the GMM-sup bound on gmm1d_mild with biased errors
    emp_b["gmm_ratio"] = np.power(10.0, emp_b["log10_gmm_sup"]) / emp_b["rms"]
    window_all = emp_b["error_model"].map(lambda e: errors[e].window == "all")
    sharp_all = emp_b[np.isfinite(emp_b["gmm_ratio"]) & emp_b["biased"] & (emp_b["target"] != "gauss1d")
                      & (emp_b["target"] != "gauss2d")].copy()
    tables["sharpness"] = sharp_all
    d3 = emp_b[main.to_numpy() & (emp_b["target"] == s["sharp_target"]) & emp_b["biased"] & window_all]
    worst3 = d3.loc[d3["gmm_ratio"].idxmax()] if len(d3) else None
    other = sharp_all[sharp_all["target"] != s["sharp_target"]].groupby("target")["gmm_ratio"].median()
    claims.append(Claim(
        "gmm_bound_sharp",
        f"Sharpness: GMM-sup bound / coupling RMS ≤ {s['sharp_ratio']:g} on {s['sharp_target']} with biased "
        f"errors (window all; {s['main_grid']} grid, δ={s['main_delta']:g}, K={s['main_K']})",
        f"ratio ≤ {s['sharp_ratio']:g} (spec calibration 1.9–2.4)",
        "no rows" if worst3 is None else
        f"ratio {d3['gmm_ratio'].min():.2f}–{d3['gmm_ratio'].max():.2f} over {len(d3)} configs "
        f"(worst {_cfg_name(worst3)})",
        bool(len(d3) and (d3["gmm_ratio"] <= s["sharp_ratio"]).all()),
        detail="not gated — median ratio on other mixtures: " + ", ".join(f"{t} {v:.3g}" for t, v in other.items())))

    # D4 — general bound blows up as δ → 0, the Lipschitz bound does not
    sweep = bounds[(bounds["grid"] == s["main_grid"]) & (bounds["K"] == s["main_K"])
                   & bounds["target"].isin(s["delta_targets"]) & (bounds["error_model"] == s["delta_error"])]
    rows4 = []
    for (t, p, smp), g in sweep.groupby(["target", "process", "sampler"]):
        g = g.set_index("delta").sort_index()
        if len(g) < 2:
            continue
        d_small, d_large = g.index.min(), g.index.max()
        general_growth = float(g.loc[d_small, "log10_general"] - g.loc[d_large, "log10_general"])
        lip = np.power(10.0, g["log10_lipschitz"] - g.loc[d_large, "log10_lipschitz"])
        lip_change = float(np.abs(lip - 1).max())
        order = True
        if np.isfinite(g["log10_gmm_sup"]).all():
            order = bool((g["log10_gmm_sup"] <= g["log10_lipschitz"] + 1e-12).all())
        order = order and bool((g["log10_lipschitz"] <= g["log10_general"] + 1e-12).all())
        rows4.append({"target": t, "process": p, "sampler": smp, "delta_small": f"{d_small:g}",
                      "delta_large": f"{d_large:g}",
                      "log10_general_growth": general_growth, "lipschitz_max_rel_change": lip_change,
                      # where the change comes from: Σ log10 ρ over τ ≤ 0.05T, at δ_large → δ_small
                      "small_t_log10_rho_general": f"{g.loc[d_large, 'small_t_log10_rho_general']:.3g} → "
                                                   f"{g.loc[d_small, 'small_t_log10_rho_general']:.3g}",
                      "small_t_log10_rho_lipschitz": f"{g.loc[d_large, 'small_t_log10_rho_lipschitz']:.3g} → "
                                                     f"{g.loc[d_small, 'small_t_log10_rho_lipschitz']:.3g}",
                      "ordering_ok": order,
                      "ok": general_growth >= np.log10(s["blowup_factor"]) and lip_change <= s["lip_change"] and order})
    d4 = pd.DataFrame(rows4)
    tables["delta_sweep_claim"] = d4
    claims.append(Claim(
        "general_blowup_lipschitz_flat",
        f"δ-sweep ({s['main_grid']} grid, K={s['main_K']}): the general bound grows ≥ {s['blowup_factor']:g}× from "
        f"δ=1e-2 to 1e-4 while the Lipschitz bound changes ≤ {s['lip_change']:.0%}; GMM ≤ Lipschitz ≤ general",
        f"general ×≥{s['blowup_factor']:g}, Lipschitz ±≤{s['lip_change']:.0%}, ordered",
        "no rows" if d4.empty else
        f"general grows 10^{d4['log10_general_growth'].min():.1f}–10^{d4['log10_general_growth'].max():.1f}×; "
        f"Lipschitz changes ≤ {d4['lipschitz_max_rel_change'].max():.1%}; ordering holds in "
        f"{int(d4['ordering_ok'].sum())}/{len(d4)}",
        bool(len(d4) and d4["ok"].all()),
        detail=f"{int(d4['ok'].sum()) if len(d4) else 0}/{len(d4)} target×process×sampler combinations pass"))

    # D5a — SDE accumulates less than ODE at K ≥ 200 with biased errors
    base = empirical[(empirical["grid"] == s["main_grid"]) & (empirical["delta"] == s["main_delta"])
                     & (empirical["K"] >= s["main_K"]) & empirical["target"].isin(s["ranking_targets"])
                     & empirical["biased"]]
    pivot = base.pivot_table(index=["target", "process", "K", "error_model"], columns="sampler",
                             values="rms").dropna().reset_index()
    pivot["sde_below_ode"] = pivot["sde"] < pivot["ode"]
    tables["sde_vs_ode"] = pivot
    claims.append(Claim(
        "sde_below_ode",
        "With biased errors on gauss1d and gmm1d_mild, the reverse SDE accumulates less coupling error "
        "than the probability-flow ODE at K ≥ 200 (earlier version's claim)",
        "RMS_SDE < RMS_ODE",
        f"SDE < ODE in {int(pivot['sde_below_ode'].sum())}/{len(pivot)} (target, process, K, error) cells; "
        f"median RMS ratio SDE/ODE {float((pivot['sde'] / pivot['ode']).median()) if len(pivot) else float('nan'):.2f}",
        bool(len(pivot) and pivot["sde_below_ode"].all())))

    # D5b — the bound ranks the four grids like the simulation
    rank_rows = []
    sched = emp_b[(emp_b["delta"] == s["main_delta"]) & (emp_b["K"] == s["main_K"])
                  & emp_b["target"].isin(s["ranking_targets"])]
    for key, g in sched.groupby(["target", "process", "sampler", "error_model"]):
        if g["grid"].nunique() < len(GRIDS):
            continue
        g = g.set_index("grid").loc[list(GRIDS)]
        rho = float(spearmanr(g["log10_gmm_sup"], g["rms"]).statistic)
        rank_rows.append({**dict(zip(["target", "process", "sampler", "error_model"], key)), "spearman": rho,
                          "rms_by_grid": ", ".join(f"{k} {v:.3g}" for k, v in g["rms"].items()),
                          "bound_by_grid": ", ".join(f"{k} {10 ** v:.3g}" for k, v in g["log10_gmm_sup"].items())})
    d5b = pd.DataFrame(rank_rows)
    tables["grid_ranking"] = d5b
    mean_rho = float(d5b["spearman"].mean()) if len(d5b) else float("nan")
    claims.append(Claim(
        "grid_ranking",
        "The GMM-sup bound ranks the four time grids (uniform, quadratic, EDM, log-SNR) like the simulated "
        "coupling RMS (mean Spearman over target × process × sampler × error cells)",
        f"Spearman ≥ {s['spearman_min']:g}",
        "no rows" if d5b.empty else
        f"mean Spearman {mean_rho:.2f} over {len(d5b)} cells; ≥ {s['spearman_min']:g} in "
        f"{int((d5b['spearman'] >= s['spearman_min']).sum())}/{len(d5b)}",
        bool(len(d5b) and mean_rho >= s["spearman_min"])))
    return claims, tables
