"""diffusion_w2 claims: D1–D5 of the spec (D5 split in two) from the measured tables, and the
validity rows behind D2 — pure numpy/pandas (no Dagster).

The thresholds are the spec's pass criteria, fixed here (never per profile); which
configurations a claim reads (the main grid, δ, K and the targets) is params `claims`
(ClaimScope), because each profile runs a different sweep.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from assets.common.claims import (
    HOLDS,
    INCONCLUSIVE,
    REFUTED,
    Claim,
    Premise,
    comparative_claim,
    judged,
    observation,
    sanity,
    seeds_label,
    verdict,
)
from assets.diffusion_w2 import method as M
from assets.diffusion_w2.params import ClaimScope
from assets.diffusion_w2.processes import GRIDS
from assets.diffusion_w2.runs import CONFIG_COLS, w2_claim_scope

CERTIFIED = ("gmm_sup", "lipschitz", "general")     # the pathwise surrogate is never a bound

# pass criteria of the spec ("Pass criteria", D1–D5)
D1_REL_TOL = 0.03          # D1: closed-form W2 vs Monte-Carlo W2 within 3 % relative ...
D1_FLOOR_MULT = 2.0        # ... or within 2 × the MC noise floor
VALIDITY_Z = 3.0           # D2: a bound covers the RMS up to this many MC standard errors
SHARP_RATIO = 3.0          # D3: GMM-sup bound / coupling RMS ≤ 3 on the sharpness target
BLOWUP_FACTOR = 10.0       # D4: general bound grows ≥ 10× from δ = 1e-2 to 1e-4 ...
LIP_CHANGE = 0.2           # ... while the Lipschitz bound changes ≤ 20 %
SPEARMAN_MIN = 0.8         # D5: bound ranks the four grids like the simulation (Spearman, every cell)
CLAIM_LEVEL = 0.90         # D5a: paired CI level of SDE − ODE over seeds, per cell



PENDING = ("not yet judged by the one verdict rule (issue 45): its criterion is a point or every-cell count, so "
           "it is shown, not counted, until it is a CI")


def _sanity(claim_id: str, claim: str, paper_value: str, measured_value: str, ok: bool, *, detail: str = "",
            seeds: str = "") -> Claim:
    """A check of the implementation against a closed form or a proven bound: true by construction
    when the code is right, so shown as a sanity row, never counted."""
    return sanity(claim_id, claim, paper_value, measured_value, ok=bool(ok), detail=detail, seeds=seeds)


def point_reading(claim: Claim) -> bool:
    """What a pending row's point criterion read (its detail starts 'point reading: holds')."""
    return claim.detail.startswith("point reading: holds")


def _pending(claim_id: str, claim: str, paper_value: str, measured_value: str, point_holds: bool, *,
             detail: str = "", seeds: str = "") -> Claim:
    text = f"point reading: {'holds' if point_holds else 'fails'}. {PENDING}. {detail}".strip()
    return observation(claim_id, claim, paper_value, measured_value, detail=text, seeds=seeds)

def validity_rows(runs: pd.DataFrame, bounds: pd.DataFrame, z: float = VALIDITY_Z) -> pd.DataFrame:
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
    return (f"{row['target']}/{row['process']}/{row['sampler']}/{row['grid']}/δ={row['delta']:g}/K={row['K']}/"
            f"{row['error_model']}")


def seeds_text(counts) -> str:
    """Seeds behind rows that each summarise seeds 0..n−1 of their configuration (`seeds`
    counts): '0–4 (5)' when every configuration ran the same seeds, else the union and the
    per-configuration range."""
    counts = sorted({int(c) for c in counts})
    if not counts:
        return seeds_label([])
    if len(counts) == 1:
        return seeds_label(range(counts[0]))
    return f"{seeds_label(range(counts[-1]))}; {counts[0]}–{counts[-1]} per configuration"


def evaluate_claims(empirical: pd.DataFrame, bounds: pd.DataFrame, validity: pd.DataFrame,
                    errors: dict[str, M.ErrorModel], scope: ClaimScope,
                    runs: pd.DataFrame | None = None) -> tuple[list[Claim], dict[str, pd.DataFrame]]:
    """The six claims (D1–D5 of the spec, D5 split in two) and the tables behind them.

    scope: which configurations each claim reads (params `claims`); the thresholds are the
    module constants above. runs: the per-seed coupled runs (dsb_coupled_runs: CONFIG_COLS,
    seed, error_model, rms), which the comparative D5a pairs over seeds; None → the per-seed
    RMS carried by `validity`.
    """
    if runs is None:
        runs = validity
    per_seed = runs.drop_duplicates(CONFIG_COLS + ["seed", "error_model"])[CONFIG_COLS + ["seed", "error_model", "rms"]]
    claims: list[Claim] = []
    tables: dict[str, pd.DataFrame] = {}
    main = ((empirical["grid"] == scope.main_grid) & (empirical["delta"] == scope.main_delta)
            & (empirical["K"] == scope.main_K))
    emp_b = empirical.merge(bounds, on=CONFIG_COLS + ["error_model"], how="left")

    # D1 — Gaussian closed form vs Monte Carlo
    d1 = emp_b[w2_claim_scope(emp_b, errors, scope.d1_targets).to_numpy() & np.isfinite(emp_b["exact_w2"])].copy()
    d1["abs_err"] = (d1["w2"] - d1["exact_w2"]).abs()
    d1["rel_err"] = d1["abs_err"] / d1["exact_w2"]
    d1["tolerance"] = np.maximum(D1_REL_TOL * d1["exact_w2"], D1_FLOOR_MULT * d1["floor"])
    d1["ok"] = d1["abs_err"] <= d1["tolerance"]
    tables["gaussian_closed_form"] = d1
    combos = d1.groupby(["process", "sampler"]).size()
    worst = d1.loc[(d1["abs_err"] / d1["tolerance"]).idxmax()] if len(d1) else None
    claims.append(_sanity(
        "gaussian_closed_form",
        "Gaussian data: the closed-form W2 (mean/covariance recursions + Bures) matches the Monte-Carlo "
        "W2 within 3% relative or 2× the noise floor, for VP/VE × SDE/ODE (biased errors over the whole path)",
        "match within 3% (or 2× noise floor)",
        "no rows" if worst is None else
        f"{int(d1['ok'].sum())}/{len(d1)} configs match; median rel. error {d1['rel_err'].median():.2%}; worst "
        f"{worst['rel_err']:.2%} ({_cfg_name(worst)}, tol {worst['tolerance']:.3g})",
        bool(len(d1) and d1["ok"].all() and len(combos) == 4),
        detail=f"{len(combos)} process×sampler combinations covered; a threshold per configuration on the "
               "seed-mean Monte-Carlo W2 (not a comparison between methods)",
        seeds=seeds_text(d1["seeds"])))

    # D2 — validity of every certified bound
    bounds_ok = validity[validity["bound_name"] != "rms_vs_w2"]
    w2_ok = validity[validity["bound_name"] == "rms_vs_w2"]
    failures = validity[~validity["covers"]]
    tables["validity_failures"] = failures
    by_bound = validity.groupby("bound_name")["covers"].agg(["mean", "size"]).reset_index()
    tables["validity_by_bound"] = by_bound
    n_cfg = validity.drop_duplicates(CONFIG_COLS + ["error_model"]).shape[0]
    claims.append(_sanity(
        "bounds_valid",
        "Validity: every certified bound (GMM-sup, Lipschitz, general; recursion and Minkowski forms) "
        "≥ coupling RMS (− 3 MC s.e.) and RMS ≥ W2 − noise floor, in every configuration × seed",
        "100% of configs × 5 seeds",
        f"bounds cover RMS in {bounds_ok['covers'].mean():.2%} of {len(bounds_ok)} (bound, run) pairs; "
        f"RMS ≥ W2 − floor in {w2_ok['covers'].mean():.2%} of {len(w2_ok)} runs; {n_cfg} configs × error models",
        bool(len(bounds_ok) and bounds_ok["covers"].all() and w2_ok["covers"].all()),
        detail="; ".join(f"{r.bound_name}: {r.mean:.1%} of {r.size}" for r in by_bound.itertuples())
        + (f"; first failure {_cfg_name(failures.iloc[0])} seed {failures.iloc[0]['seed']}" if len(failures) else ""),
        seeds=(seeds_label(validity["seed"].unique()) + " (every run)") if len(validity) else seeds_label([])))

    # D3 — sharpness of the GMM-sup bound on gmm1d_mild with biased errors
    emp_b["gmm_ratio"] = np.power(10.0, emp_b["log10_gmm_sup"]) / emp_b["rms"]
    window_all = emp_b["error_model"].map(lambda e: errors[e].window == "all")
    sharp_all = emp_b[np.isfinite(emp_b["gmm_ratio"]) & emp_b["biased"] & (emp_b["target"] != "gauss1d")
                      & (emp_b["target"] != "gauss2d")].copy()
    tables["sharpness"] = sharp_all
    d3 = emp_b[main.to_numpy() & (emp_b["target"] == scope.sharp_target) & emp_b["biased"] & window_all]
    worst3 = d3.loc[d3["gmm_ratio"].idxmax()] if len(d3) else None
    other = sharp_all[sharp_all["target"] != scope.sharp_target].groupby("target")["gmm_ratio"].median()
    claims.append(_pending(
        "gmm_bound_sharp",
        f"Sharpness: GMM-sup bound / coupling RMS ≤ {SHARP_RATIO:g} on {scope.sharp_target} with biased "
        f"errors (window all; {scope.main_grid} grid, δ={scope.main_delta:g}, K={scope.main_K})",
        f"ratio ≤ {SHARP_RATIO:g} (spec calibration 1.9–2.4)",
        "no rows" if worst3 is None else
        f"ratio {d3['gmm_ratio'].min():.2f}–{d3['gmm_ratio'].max():.2f} over {len(d3)} configs "
        f"(worst {_cfg_name(worst3)})",
        bool(len(d3) and (d3["gmm_ratio"] <= SHARP_RATIO).all()),
        detail="a threshold per configuration on bound / seed-mean RMS; not gated — median ratio on other "
               "mixtures: " + ", ".join(f"{t} {v:.3g}" for t, v in other.items()),
        seeds=seeds_text(d3["seeds"])))

    # D4 — general bound blows up as δ → 0, the Lipschitz bound does not
    sweep = bounds[(bounds["grid"] == scope.main_grid) & (bounds["K"] == scope.main_K)
                   & bounds["target"].isin(scope.delta_targets) & (bounds["error_model"] == scope.delta_error)]
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
                      "ok": general_growth >= np.log10(BLOWUP_FACTOR) and lip_change <= LIP_CHANGE and order})
    d4 = pd.DataFrame(rows4)
    tables["delta_sweep_claim"] = d4
    claims.append(_pending(
        "general_blowup_lipschitz_flat",
        f"δ-sweep ({scope.main_grid} grid, K={scope.main_K}): the general bound grows ≥ {BLOWUP_FACTOR:g}× from "
        f"δ=1e-2 to 1e-4 while the Lipschitz bound changes ≤ {LIP_CHANGE:.0%}; GMM ≤ Lipschitz ≤ general",
        f"general ×≥{BLOWUP_FACTOR:g}, Lipschitz ±≤{LIP_CHANGE:.0%}, ordered",
        "no rows" if d4.empty else
        f"general grows 10^{d4['log10_general_growth'].min():.1f}–10^{d4['log10_general_growth'].max():.1f}×; "
        f"Lipschitz changes ≤ {d4['lipschitz_max_rel_change'].max():.1%}; ordering holds in "
        f"{int(d4['ordering_ok'].sum())}/{len(d4)}",
        bool(len(d4) and d4["ok"].all()),
        detail=f"{int(d4['ok'].sum()) if len(d4) else 0}/{len(d4)} target×process×sampler combinations pass; "
               "thresholds on the analytic bounds, which no seed enters",
        seeds="none (analytic bounds)"))

    # D5a — SDE accumulates less than ODE at K ≥ 200 with biased errors: per cell a paired CI over seeds
    cells = empirical[(empirical["grid"] == scope.main_grid) & (empirical["delta"] == scope.main_delta)
                      & (empirical["K"] >= scope.main_K) & empirical["target"].isin(scope.ranking_targets)
                      & empirical["biased"]]
    pivot = sde_vs_ode_cells(per_seed.merge(cells[CONFIG_COLS + ["error_model"]], on=CONFIG_COLS + ["error_model"]))
    tables["sde_vs_ode"] = pivot
    claims.append(sde_below_ode_claim(pivot))

    # D5b — the bound ranks the four grids like the simulation
    sched = emp_b[(emp_b["delta"] == scope.main_delta) & (emp_b["K"] == scope.main_K)
                  & emp_b["target"].isin(scope.ranking_targets)]
    d5b = grid_ranking_cells(sched)
    tables["grid_ranking"] = d5b
    claims.append(grid_ranking_claim(d5b, seeds_text(sched["seeds"]) if len(sched) else 0))
    return claims, tables


SDE_ODE_CELL = ["target", "process", "grid", "delta", "K", "error_model"]


def sde_vs_ode_cells(per_seed: pd.DataFrame, level: float = CLAIM_LEVEL) -> pd.DataFrame:
    """D5a per (target, process, K, error) cell: seed-mean RMS of SDE and ODE and the paired CI
    over the seeds both samplers ran of RMS_SDE − RMS_ODE. The seed index pairs independent
    replicas (each sampler's run seed is its own), so the differences are i.i.d. over seeds and
    the paired t interval is valid; `established` is the CI's upper bound < 0."""
    rows = []
    for key, g in per_seed.groupby(SDE_ODE_CELL):
        sde = g[g["sampler"] == "sde"].set_index("seed")["rms"]
        ode = g[g["sampler"] == "ode"].set_index("seed")["rms"]
        common = sorted(int(x) for x in sde.index.intersection(ode.index))
        if not common:
            continue
        c = comparative_claim("sde_below_ode_cell", "", "", sde[common].to_numpy(float), ode[common].to_numpy(float),
                              expect="less", margin=0.0, level=level, seeds=common, names=("SDE", "ODE"))
        rows.append({**dict(zip(SDE_ODE_CELL, key)), "sde": float(sde[common].mean()), "ode": float(ode[common].mean()),
                     "seeds": len(common), "paired_ci": c.measured_value.split("; ", 1)[1],
                     "sde_below_ode": float(sde[common].mean()) < float(ode[common].mean()),
                     "established": bool(c.holds), "outcome": c.verdict, "estimate": c.judgement.estimate,
                     "ci_low": c.judgement.low, "ci_high": c.judgement.high})
    return pd.DataFrame(rows, columns=[*SDE_ODE_CELL, "sde", "ode", "seeds", "paired_ci", "sde_below_ode",
                                       "established", "outcome", "estimate", "ci_low", "ci_high"])


def sde_below_ode_claim(pivot: pd.DataFrame) -> Claim:
    """D5a: RMS_SDE < RMS_ODE in every cell, each cell judged by its paired CI over seeds (the
    unit of the "every cell" count stays the cell; the spec states no fraction)."""
    n = len(pivot)
    ratio = float((pivot["sde"] / pivot["ode"]).median()) if n else float("nan")
    not_est = pivot[~pivot["established"]] if n else pivot
    listed = ", ".join(f"{r.target}/{r.process}/K={r.K}/{r.error_model}" for r in not_est.head(6).itertuples())
    more = f" (+{len(not_est) - 6} more)" if len(not_est) > 6 else ""
    # every cell must hold: refuted when one cell is refuted, else inconclusive unless all hold
    if n:
        order = {REFUTED: 0, INCONCLUSIVE: 1, HOLDS: 2}
        worst = pivot.iloc[int(np.argmin([order[o] for o in pivot["outcome"]]))]
        j = verdict(worst["estimate"], worst["ci_low"], worst["ci_high"], rule="effect", margin=0.0, direction="less")
    else:
        j = verdict(float("nan"), float("nan"), float("nan"), premises=Premise("cells measured", "none", False))
    counts = pivot["outcome"].value_counts().to_dict() if n else {}
    return judged(
        "sde_below_ode",
        "With biased errors on gauss1d and gmm1d_mild, the reverse SDE accumulates less coupling error "
        "than the probability-flow ODE at K ≥ 200 (earlier version's claim)",
        "RMS_SDE < RMS_ODE",
        "no rows" if not n else
        f"per cell (paired {CLAIM_LEVEL:.0%} t CI over seeds of RMS_SDE − RMS_ODE): "
        f"{counts.get(HOLDS, 0)} hold, {counts.get(REFUTED, 0)} refuted, "
        f"{counts.get(INCONCLUSIVE, 0)} inconclusive of {n}; "
        f"seed means SDE < ODE in {int(pivot['sde_below_ode'].sum())}/{n}; median RMS ratio SDE/ODE {ratio:.2f}",
        j,
        detail="every cell must hold (decided by the weakest cell; seed index pairs independent replicas)"
               + (f"; not established: {listed}{more}" if listed else ""),
        seeds=seeds_text(pivot["seeds"]) if n else seeds_label([]))


RANKING_CELL = ["target", "process", "sampler", "error_model"]


def grid_ranking_cells(sched: pd.DataFrame) -> pd.DataFrame:
    """D5b per cell (target × process × sampler × error model) with all four grids: Spearman ρ
    between the GMM-sup bound and the seed-mean coupling RMS over the grids, and whether it
    reaches SPEARMAN_MIN. sched: empirical rows merged with the bounds (one per grid)."""
    rows = []
    for key, g in sched.groupby(RANKING_CELL):
        if g["grid"].nunique() < len(GRIDS):
            continue
        g = g.set_index("grid").loc[list(GRIDS)]
        # rounded: over 4 grids ρ = 1 − 6Σd²/60 is a multiple of 0.2 (without ties), and scipy returns
        # one adjacent swap as 0.7999999999999999, which a plain ≥ 0.8 would count as a miss
        rho = round(float(spearmanr(g["log10_gmm_sup"], g["rms"]).statistic), 12)
        rows.append({**dict(zip(RANKING_CELL, key)), "spearman": rho,
                     "rms_by_grid": ", ".join(f"{k} {v:.3g}" for k, v in g["rms"].items()),
                     "bound_by_grid": ", ".join(f"{k} {10 ** v:.3g}" for k, v in g["log10_gmm_sup"].items())})
    frame = pd.DataFrame(rows, columns=[*RANKING_CELL, "spearman", "rms_by_grid", "bound_by_grid"])
    frame["ok"] = frame["spearman"] >= SPEARMAN_MIN
    return frame


def grid_ranking_claim(d5b: pd.DataFrame, seeds: int | str) -> Claim:
    """D5b judged per cell: the spec's "Spearman ≥ 0.8" states no fraction of cells, so the
    claim holds only when every cell reaches it (the mean over cells is shown, never judged).
    A threshold on one quantity per cell (a rank correlation of the bound with the seed-mean
    RMS), not a comparison of two methods. seeds: seeds per configuration (a count, or the
    seeds_text label)."""
    failing = ", ".join(f"{r.target}/{r.process}/{r.sampler}/{r.error_model} ρ={r.spearman:.1f}"
                        for r in d5b[~d5b["ok"]].itertuples())
    return _pending(
        "grid_ranking",
        "The GMM-sup bound ranks the four time grids (uniform, quadratic, EDM, log-SNR) like the simulated "
        f"coupling RMS: Spearman ≥ {SPEARMAN_MIN:g} in every target × process × sampler × error cell",
        f"Spearman ≥ {SPEARMAN_MIN:g}",
        "no rows" if d5b.empty else
        f"Spearman ≥ {SPEARMAN_MIN:g} in {int(d5b['ok'].sum())}/{len(d5b)} cells (min {d5b['spearman'].min():.2f}, "
        f"mean {d5b['spearman'].mean():.2f})",
        bool(len(d5b) and d5b["ok"].all()),
        detail="judged per cell (the spec states no fraction of cells); " +
               (f"below: {failing}" if failing else "every cell agrees"),
        seeds=(f"{seeds if isinstance(seeds, str) else seeds_label(range(seeds))} (seed means of the RMS)"
               if seeds else seeds_label([])))
