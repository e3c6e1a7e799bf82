"""diffusion_w2 data-quality predicates: pure functions returning the problems found (empty =
pass). definitions.py turns each into a blocking Dagster check (paper.gate); tests call them
directly on corrupted inputs.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.common.findings import Finding, expectations, finding
from assets.diffusion_w2 import benchmark, runs
from assets.diffusion_w2 import targets as TG
from assets.diffusion_w2.method import WINDOWS
from assets.diffusion_w2.params import DiffusionW2Params
from assets.diffusion_w2.processes import validate_grid
from resources.quality import expect

MAX_FLOOR_RATIO = runs.MAX_FLOOR_RATIO    # MC noise floor must be < 10 % of every W2 a claim reads
HESSIAN_TOL_ABS = 1e-6                    # round-off allowance of the Hessian check (absolute ...
HESSIAN_TOL_REL = 1e-9                    # ... plus relative to the interval end)
SHOWN = 8                                 # violations named in a message


def mixture_valid(frame: pd.DataFrame) -> Finding:
    """Weights sum to 1 and covariances are positive definite (rows' `problems`), names unique,
    kinds known (GX)."""
    bad = frame[frame["problems"].astype(str) != ""]
    problems = [f"{r.target}: {r.problems}" for r in bad.itertuples()]
    gx = expectations(frame, [expect("ExpectColumnValuesToBeUnique", column="target"),
                              expect("ExpectColumnValuesToBeInSet", column="kind",
                                     value_set=["gaussian", "gmm", "logistic"])], name="dsb_targets")
    return finding([*problems, *gx.problems],
                   ok=f"{len(frame)} targets: weights sum to 1, covariances positive definite",
                   targets=len(frame))


def hessian_bounds_within(frame: pd.DataFrame, params: DiffusionW2Params, rng: np.random.Generator) -> Finding:
    """Exact ∇² log p_τ on random points (samples of p_τ plus a wide uniform band) lies inside
    every curvature interval the bounds use, for each target, process and a log-grid of τ."""
    if (frame["problems"].astype(str) != "").any():
        return finding(["targets table has invalid rows; Hessian bounds not checked"])
    targets = runs.targets_from_frame(frame)
    processes = runs.build_processes(params.process)
    n_points = int(params.hessian_check_points)
    taus = np.geomspace(1e-4, processes["vp"].T, int(params.hessian_check_taus))
    violations, worst, checked = [], {}, 0
    for name, target in targets.items():
        for pname, process in processes.items():
            for tau in taus:
                a, s = (float(v) for v in process.alpha_sigma(tau))
                bulk = target.sample_marginal(n_points - n_points // 10, a, s, rng)
                spread = (a * target.radius_R + 4 * s)
                wide = rng.uniform(-spread, spread, size=(n_points // 10, target.dim))
                x = np.concatenate([bulk, wide])
                lam_min, lam_max = TG.hessian_extremes(target, x, a, s)
                checked += len(x)
                for family in TG.FAMILIES:
                    if not TG.has_family(target, family):
                        continue
                    lo, hi = (float(v) for v in TG.curvature_interval(target, family, a, s))
                    tol_lo = HESSIAN_TOL_ABS + HESSIAN_TOL_REL * abs(lo)
                    tol_hi = HESSIAN_TOL_ABS + HESSIAN_TOL_REL * abs(hi)
                    margin = min(float(lam_min.min() - lo), float(hi - lam_max.max()))
                    worst[f"{name}/{family}"] = min(worst.get(f"{name}/{family}", np.inf), margin)
                    if lam_min.min() < lo - tol_lo or lam_max.max() > hi + tol_hi:
                        violations.append(f"{name}/{pname}/τ={tau:.3g}/{family}: Hessian spectrum "
                                          f"[{lam_min.min():.5g}, {lam_max.max():.5g}] outside claimed "
                                          f"[{lo:.5g}, {hi:.5g}]")
    problems = ["; ".join(violations[:SHOWN])] if violations else []
    return finding(problems, ok=f"{checked} points: every sampled Hessian lies inside its claimed curvature interval",
                   points_checked=checked, violations=len(violations),
                   worst_margin={k: float(v) for k, v in worst.items()})


def hessian_bounds_hold(frame: pd.DataFrame, params: DiffusionW2Params, compute) -> Finding:
    """hessian_bounds_within on points drawn from compute.rng("diffusion_w2", "hessian_check")."""
    return hessian_bounds_within(frame, params, compute.rng("diffusion_w2", "hessian_check"))


def grids_valid(frame: pd.DataFrame, params: DiffusionW2Params) -> Finding:
    """Every grid runs from T down to δ < T, strictly decreasing, h_k > 0, finite coefficients."""
    problems = []
    for _, g in frame.groupby(["process", "grid", "delta", "K"], sort=False):
        problems += validate_grid(g.sort_values("k").reset_index(drop=True), params.process.T)
    shown = ["; ".join(problems[:SHOWN])] if problems else []
    return finding(shown, ok=f"{frame.groupby(['process', 'grid', 'delta', 'K']).ngroups} grids strictly "
                   "decreasing from T to δ with h_k > 0", grid_problems=len(problems))


def error_models_valid(frame: pd.DataFrame) -> Finding:
    return expectations(frame, [
        expect("ExpectColumnValuesToBeUnique", column="error_model"),
        expect("ExpectColumnValuesToNotBeNull", column="mean"),
        expect("ExpectColumnValuesToBeBetween", column="sd", min_value=0),
        expect("ExpectColumnValuesToBeInSet", column="window", value_set=list(WINDOWS)),
    ], name="dsb_error_models")


def runs_finite(frame: pd.DataFrame) -> Finding:
    if frame.empty:
        return finding(["no run rows"], rows=0)
    values = frame[["rms", "rms_se", "floor"]].to_numpy(dtype=float)
    bad = frame[~np.isfinite(values).all(1)]
    return finding([f"{len(bad)} runs with non-finite RMS/floor (e.g. "
                    f"{bad[runs.CONFIG_COLS + ['seed', 'error_model']].head(3).to_dict('records')})"]
                   if len(bad) else [], ok=f"{len(frame)} run rows, all finite", rows=len(frame))


def noise_floor_resolved(frame: pd.DataFrame) -> Finding:
    """The MC noise floor is < MAX_FLOOR_RATIO of every W2 a claim reads (`w2_claim`); fails
    when no such W2 was measured."""
    scope = frame["w2_claim"].astype(bool)
    gated = frame[scope]
    if gated.empty:
        return finding(["no W2 value used by a claim was measured (Gaussian targets, biased "
                        "errors over the whole path)"])
    bad = gated[~(gated["floor_ratio"] < MAX_FLOOR_RATIO)]
    names = [f"{r.target}/{r.process}/{r.sampler}/{r.grid}/δ={r.delta:g}/K={r.K}/{r.error_model} "
             f"(floor {r.floor:.3g} = {r.floor_ratio:.0%} of W2 {r.w2:.3g})" for r in bad.itertuples()]
    diag = frame[~scope & np.isfinite(frame["w2"])]
    return finding(["MC noise floor ≥ 10% of the measured W2 — run too small, increase n_particles / "
                    "ot_subsample: " + "; ".join(names[:6])] if len(bad) else [],
                   ok=f"{len(gated)} W2 values used by claims: noise floor < {MAX_FLOOR_RATIO:.0%} of W2 "
                   f"(max {gated['floor_ratio'].max():.1%}); {len(diag)} other W2 values reported, not gated "
                   f"({int((~diag['w2_resolved']).sum())} of them unresolved)",
                   gated=len(gated), unresolved=len(bad), max_floor_ratio=float(gated["floor_ratio"].max()))


def bounds_valid(frame: pd.DataFrame, dsb_coupled_runs: pd.DataFrame) -> Finding:
    """D2 as a gate: every certified bound ≥ the measured coupling RMS (− 3 s.e.) and
    RMS ≥ W2 − floor, for every run."""
    validity = benchmark.validity_rows(dsb_coupled_runs, frame)
    if validity.empty:
        return finding(["no (bound, run) pairs to validate"], pairs=0, failures=0)
    bad = validity[~validity["covers"]]
    names = [f"{r.bound_name} {r.bound:.4g} < RMS {r.rms:.4g} at {r.target}/{r.process}/{r.sampler}/{r.grid}/"
             f"δ={r.delta:g}/K={r.K}/{r.error_model}/seed {r.seed}" for r in bad.head(6).itertuples()]
    return finding(["bound below the measured coupling RMS (or W2 above RMS + floor): " + "; ".join(names)]
                   if len(bad) else [],
                   ok=f"{len(validity)} (bound, run) pairs: every certified bound ≥ RMS and RMS ≥ W2 − floor",
                   pairs=len(validity), failures=len(bad))
