"""Experiment tables of the diffusion-W2 validation: configurations, targets, grids, error
models, coupled runs, the backend benchmark, empirical W2 and the bounds — pure numpy/pandas
(no Dagster). Each function is what one asset computes; claims are in benchmark.py.

A configuration is (target, process, sampler, grid, delta, K); a run adds a seed and runs
every error model of that configuration on the same coupled chains. The experiments of
params.yaml are cartesian products that are merged (union of error models, max of seeds).
"""
from __future__ import annotations

import itertools
import json
import time
from collections.abc import Mapping
from functools import partial
from typing import Any, Callable

import numpy as np
import pandas as pd

from assets.common.params import thaw
from assets.diffusion_w2 import empirical as EMP
from assets.diffusion_w2 import method as M
from assets.diffusion_w2.params import BenchCase, DiffusionW2Params, ErrorSpec, Experiment, ProcessParams
from assets.diffusion_w2.processes import GRIDS, Process, time_grid_frame
from assets.diffusion_w2.targets import FAMILIES, build_target, has_family, mixture_arrays, mixture_problems

CONFIG_COLS = ["target", "process", "sampler", "grid", "delta", "K"]
GRID_COLS = ["process", "grid", "delta", "K"]
BACKENDS = ("numpy", "torch")
MAX_FLOOR_RATIO = 0.10          # a W2 is resolved when the MC noise floor is < 10% of it
Log = Callable[[str], None]


# ------------------------------------------------------------------------------ inputs
def target_rows(specs: list[Mapping[str, Any]]) -> pd.DataFrame:
    """The targets table (no validation here: the blocking check reports problems).

    One row per target: name, kind, dim, weights/means/cov (JSON lists), L, D, R, problems.
    """
    rows = []
    for spec in map(thaw, specs):
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
        frame[col] = frame[col].map(json.dumps)
    return frame


def targets_from_frame(frame: pd.DataFrame) -> dict[str, Any]:
    return {row.target: build_target(json.loads(row.spec)) for row in frame.itertuples()}


def build_processes(p: ProcessParams) -> dict[str, Process]:
    return {"vp": Process("vp", T=p.T, beta_min=p.vp.beta_min, beta_max=p.vp.beta_max),
            "ve": Process("ve", T=p.T, sigma_min=p.ve.sigma_min, sigma_max=p.ve.sigma_max)}


def error_model_rows(specs: Mapping[str, ErrorSpec]) -> pd.DataFrame:
    return pd.DataFrame([{"error_model": name, "mean": float(s.mean), "sd": float(s.sd),
                          "window": str(s.window)} for name, s in specs.items()])


def error_models_from_frame(frame: pd.DataFrame) -> dict[str, M.ErrorModel]:
    return {r.error_model: M.ErrorModel(r.error_model, float(r.mean), float(r.sd), r.window)
            for r in frame.itertuples()}


def _expand(exp: Experiment, all_targets: list[str], all_errors: list[str]) -> list[dict]:
    targets = all_targets if exp.targets == "all" else list(exp.targets)
    errors = all_errors if exp.errors == "all" else list(exp.errors)
    grids = list(GRIDS) if exp.grids == "all" else list(exp.grids)
    return [{"target": t, "process": p, "sampler": s, "grid": g, "delta": float(d), "K": int(k),
             "errors": errors, "seeds": int(exp.seeds)}
            for t, p, s, g, d, k in itertools.product(targets, exp.processes, exp.samplers, grids,
                                                      exp.deltas, exp.Ks)]


def expand_configs(experiments: Mapping[str, Experiment], all_targets: list[str],
                   all_errors: list[str]) -> pd.DataFrame:
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


def configs(p: DiffusionW2Params, section: str = "experiments") -> pd.DataFrame:
    """The merged configurations of params `experiments` (or `bound_sweep`)."""
    return expand_configs(getattr(p, section), [t["name"] for t in p.targets], list(p.error_models))


def all_configs(p: DiffusionW2Params) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(run configurations, run + bound-only configurations)."""
    runs = configs(p)
    sweep = configs(p, "bound_sweep")
    if sweep.empty:
        return runs, runs
    both = pd.concat([runs, sweep], ignore_index=True).drop_duplicates(CONFIG_COLS)
    return runs, both


def time_grids(p: DiffusionW2Params) -> pd.DataFrame:
    """One row per step of every grid the run and bound-only configurations use."""
    _, both = all_configs(p)
    return time_grid_rows(build_processes(p.process), grid_keys(both))


# ------------------------------------------------------------------------------ runs
def run_configs(configs: pd.DataFrame, targets: dict, grids: dict[tuple, pd.DataFrame],
                errors: dict[str, M.ErrorModel], n_particles: dict[int, int], ot_subsample: int,
                ot_errors: list[str], seed_for: Callable[..., int], T: float,
                log: Callable[[str], None] = lambda s: None, backend: str = "numpy",
                device: str = "cpu", dtype: str = "float64", projections: int = 128) -> pd.DataFrame:
    """Simulate every configuration × seed; one row per (configuration, seed, error model).

    Columns: CONFIG_COLS, seed, error_model, n, rms, rms_se, w2, w2_method, floor (W2 between
    two independent unperturbed runs, same estimator), path_lambda_min/max (K lists), wall_s
    (wall-clock seconds of the run: `coupled_runs` moves it out of the stored table) and
    sample_steps (particles × chains × steps of the run, repeated on each row), backend.
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
                estimate = partial(EMP.w2_empirical, ot_subsample=ot_subsample, directions=directions,
                                   method=method)
                rms_of = EMP.coupling_rms
            else:
                out = TB.simulate_coupled_torch(target, grid, cfg.sampler, models, n, run_seed, device,
                                                torch_dtype, steps=cache_steps, T=T, record_curvature=seed == 0)
                dirs = None if directions is None else TB._torch().as_tensor(directions, dtype=torch_dtype,
                                                                              device=device)
                estimate = partial(TB.w2_estimate, method=method, ot_subsample=ot_subsample, directions=dirs)
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
            left = elapsed / index * (len(ordered) - index)
            log(f"[{index}/{len(ordered)}] {cfg.target}/{cfg.process}/{cfg.sampler}/{cfg.grid}/"
                f"delta={cfg.delta:g}/K={cfg.K} ({elapsed:.0f} s, ~{left:.0f} s left)")
    return pd.DataFrame(rows)


def chain_backend(p: DiffusionW2Params, compute: Any, backend: str | None = None) -> tuple[str, str, str]:
    """(backend, device, dtype) of the chains: numpy on the CPU, or torch on
    compute.resolved_device() (cuda when present) with compute's thread settings."""
    backend = backend or p.backend
    if backend not in BACKENDS:
        raise ValueError(f"diffusion_w2.backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "numpy":
        return backend, "cpu", "float64"
    compute.torch(compute.base_seed)                 # threads, determinism
    return backend, compute.resolved_device(), p.dtype


def coupled_runs(p: DiffusionW2Params, targets: dict, grids: dict[tuple, pd.DataFrame],
                 errors: dict[str, M.ErrorModel], seed_for: Callable[..., int], backend: str, device: str,
                 dtype: str, log: Log = lambda s: None) -> tuple[pd.DataFrame, dict[str, float]]:
    """(the dsb_coupled_runs table, its wall-clock timing). The table is run_configs' without
    the wall-clock column, plus the device; the timing {runs, wall_s, particle_steps_per_s,
    axpy_elements_per_s, fraction_of_axpy_floor} is a run record, never stored with it."""
    configs_frame, _ = all_configs(p)
    start = time.monotonic()
    runs = run_configs(configs_frame, targets, grids, errors, dict(p.n_particles), p.ot_subsample,
                       list(p.ot_errors), seed_for, p.process.T, log=log, backend=backend, device=device,
                       dtype=dtype, projections=p.sliced_projections)
    wall = time.monotonic() - start
    per_run = runs.drop_duplicates(CONFIG_COLS + ["seed"])
    chain_rate = float(per_run["sample_steps"].sum()) / float(per_run["wall_s"].sum())
    floor_rate = axpy_floor(int(per_run["sample_steps"].div(per_run["K"]).max()))
    timing = {"runs": float(len(per_run)), "wall_s": wall, "particle_steps_per_s": chain_rate,
              "axpy_elements_per_s": floor_rate, "fraction_of_axpy_floor": chain_rate / floor_rate}
    return runs.drop(columns="wall_s").assign(device=device), timing


def axpy_floor(n_elements: int, repeats: int = 200) -> float:
    """Elements per second of one numpy axpy (y += a·x) on n_elements float64 — the
    memory-bandwidth floor a vectorised chain step cannot beat."""
    x, y = np.ones(n_elements), np.zeros(n_elements)
    y += 0.5 * x
    t0 = time.perf_counter()
    for _ in range(repeats):
        y += 0.5 * x
    return n_elements * repeats / (time.perf_counter() - t0)


def backend_benchmark(cases: list[BenchCase], targets: dict, processes: dict[str, Process],
                      errors: dict[str, M.ErrorModel], seed: int, devices: list[str],
                      dtype: str = "float64", repeats: int = 2, log: Log = lambda s: None) -> pd.DataFrame:
    """Throughput of the coupled chains per backend on identical configurations.

    cases: [BenchCase(target, process, sampler, K, n, grid, delta)] (all error models of `errors` are
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
        target = targets[case.target]
        grid = time_grid_frame(processes[case.process], case.grid, float(case.delta), int(case.K))
        n, K, d = int(case.n), int(case.K), target.dim
        chains = 2 + len(models)
        runners = [("numpy", "cpu", partial(M.simulate_coupled, target, grid, case.sampler, models, n, seed,
                                            record_curvature=False))]
        for device in devices:
            steps = TB.TorchSteps(target, grid, device, TB.resolve_dtype(dtype))
            runners.append(("torch", device, partial(TB.simulate_coupled_torch, target, grid, case.sampler, models,
                                                     n, seed, device, TB.resolve_dtype(dtype), steps=steps,
                                                     record_curvature=False)))
        floor = axpy_floor(n * chains * d)
        for backend, device, fn in runners:
            wall = min(TB.time_chain(fn, device)[1] for _ in range(repeats))
            rate = n * chains * K / wall
            rows.append({"target": case.target, "dim": d, "process": case.process, "sampler": case.sampler,
                         "K": K, "n": n, "chains": chains, "backend": backend, "device": device,
                         "dtype": "float64" if backend == "numpy" else dtype, "wall_s": wall,
                         "particle_steps_per_s": rate, "element_steps_per_s": rate * d,
                         "axpy_elements_per_s": floor, "fraction_of_axpy": rate * d / floor})
            log(f"backend benchmark {case.target} (d={d}, n={n}, K={K}): {backend}/{device} "
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


def empirical_w2(runs: pd.DataFrame, errors: dict[str, M.ErrorModel], d1_targets: list[str],
                 seed: int) -> pd.DataFrame:
    """The dsb_empirical_w2 table: empirical_summary plus w2_claim (read by a claim, so gated)
    and w2_resolved (noise floor < MAX_FLOOR_RATIO of the W2)."""
    frame = empirical_summary(runs, errors, seed=seed)
    frame["w2_claim"] = w2_claim_scope(frame, errors, d1_targets)
    frame["w2_resolved"] = frame["floor_ratio"] < MAX_FLOOR_RATIO
    return frame


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


def bounds(p: DiffusionW2Params, targets: dict, grids: dict[tuple, pd.DataFrame], errors: dict[str, M.ErrorModel],
           runs: pd.DataFrame) -> pd.DataFrame:
    """The dsb_bounds table over the run and bound-only configurations."""
    _, both = all_configs(p)
    return bounds_table(both, targets, grids, errors, runs, p.process.T)
