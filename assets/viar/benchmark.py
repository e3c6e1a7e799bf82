"""VIAR benchmark layer: summaries over seeds and the paper's claims V1–V6. Pure pandas/numpy.

Inputs are the tidy frames of the Dagster assets:
    quality     one row per (dataset, model, kind, depth, schedule, seed) with fcd, sfcd, kid,
                class_consistency, precision, recall, flops_per_image
    throughput  one row per (dataset, model, schedule) with images_per_second (median of reps)
    memory      one row per (dataset, model, sweep, value) with saved_bytes
    convergence one row per (dataset, seed, source, scale, t) with rel_residual, cosine
    params      {"viar": int, "var": {depth: int}}
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from assets.common.claims import (
    HOLDS,
    INCONCLUSIVE,
    REFUTED,
    Claim,
    all_of,
    judged,
    mean_ci,
    observation,
    sanity,
    seeds_label,
    verdict_of,
)

PENDING = ("report-only: a point comparison of seed means (V5 is wall-clock throughput, a run record; V6's "
           "depth ladder trains one seed), shown, not counted")


def point_reading(claim: Claim) -> bool:
    """What a pending row's point criterion read (its detail starts 'point reading: holds')."""
    return claim.detail.startswith("point reading: holds")


def _pending(claim_id: str, claim: str, paper_value: str, measured_value: str, point_holds: bool, *,
             detail: str = "", volatile: bool = False) -> Claim:
    text = f"point reading: {'holds' if point_holds else 'fails'}. {PENDING}. {detail}".strip()
    return observation(claim_id, claim, paper_value, measured_value, detail=text, volatile=volatile)

METRICS = ("fcd", "sfcd", "kid", "class_consistency", "precision", "recall")
CLAIM_IDS = ("v1_params", "v2_quality_parity", "v3_knob_works", "v4_constant_memory", "v5_compute_control",
             "v6_pareto")

# pass criteria of the spec (V1–V6); never per profile
V1_MAX_PARAM_RATIO = 0.5        # VIAR ≤ 50% of VAR-d<claim_depth>'s parameters
V2_FCD_FACTOR = 1.25            # FCD(VIAR full) ≤ 1.25 · FCD(VAR) + noise floor ...
V2_CONSISTENCY_MARGIN = 0.03    # ... and class consistency within 3 points
V3_PROBE_T = 5                  # finest-scale fixed-point residual at t = 5 ...
V3_MAX_RESIDUAL = 0.05          # ... below 0.05 ...
V3_MIN_COSINE = 0.98            # ... or cosine of successive iterates above 0.98
V4_MAX_SPREAD = 0.02            # saved bytes flat in no-grad iterations (±2%) ...
V4_MIN_R2 = 0.99                # ... and linear (R² > 0.99) in grad iterations and VAR depth
V5_MIN_SPEEDUP = 1.3            # the decreasing schedule ≥ 1.3× throughput ...
V5_MAX_FCD_INCREASE = 0.15      # ... with ≤ 15% FCD increase
V6_MIN_BUDGETS = 3              # VIAR at or below VAR at ≥ 3 ...
V6_LADDER = 4                   # ... of 4 FLOP budgets


def linear_r2(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(slope, R²) of the least-squares line y ≈ a + b x."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 2 or np.ptp(x) == 0:
        return 0.0, float("nan")
    b, a = np.polyfit(x, y, 1)
    resid = y - (a + b * x)
    total = np.sum((y - y.mean()) ** 2)
    r2 = 1.0 - np.sum(resid ** 2) / total if total > 0 else 1.0
    return float(b), float(r2)


def summarize(quality: pd.DataFrame) -> pd.DataFrame:
    """Mean and std over seeds per (dataset, model, schedule)."""
    keys = ["dataset", "model", "kind", "depth", "schedule"]
    agg = quality.groupby(keys, dropna=False).agg(
        seeds=("seed", "nunique"), flops_per_image=("flops_per_image", "mean"),
        **{f"{m}_mean": (m, "mean") for m in METRICS}, **{f"{m}_std": (m, "std") for m in METRICS})
    return agg.reset_index()


def _mean(quality: pd.DataFrame, model: str, schedule: str, metric: str) -> float:
    rows = quality[(quality["model"] == model) & (quality["schedule"] == schedule)]
    return float(rows[metric].mean()) if len(rows) else float("nan")


def pareto_domination(quality: pd.DataFrame, viar_model: str, var_models: list[str]) -> pd.DataFrame:
    """For each VAR point (FLOPs/image, mean FCD): the best mean FCD among VIAR operating points
    (every schedule of the one VIAR training run) that cost at most as many FLOPs, and whether
    it is ≤ VAR's. A budget below VIAR's cheapest point counts as not dominated."""
    viar = (quality[quality["model"] == viar_model].groupby("schedule")
            .agg(flops=("flops_per_image", "mean"), fcd=("fcd", "mean")).reset_index())
    rows = []
    for model in var_models:
        var = quality[quality["model"] == model]
        if var.empty:
            continue
        budget, var_fcd = float(var["flops_per_image"].mean()), float(var["fcd"].mean())
        affordable = viar[viar["flops"] <= budget * (1 + 1e-9)]
        best = affordable.loc[affordable["fcd"].idxmin()] if len(affordable) else None
        rows.append({"var_model": model, "var_flops": budget, "var_fcd": var_fcd,
                     "viar_schedule": best["schedule"] if best is not None else "none affordable",
                     "viar_flops": float(best["flops"]) if best is not None else float("nan"),
                     "viar_fcd": float(best["fcd"]) if best is not None else float("nan"),
                     "dominated": bool(best is not None and best["fcd"] <= var_fcd)})
    return pd.DataFrame(rows)


def evaluate_claims(dataset: str, quality: pd.DataFrame, throughput: pd.DataFrame, memory: pd.DataFrame,
                    convergence: pd.DataFrame, params: dict[str, Any], floor: float,
                    claim_depth: int, viar_name: str, ladder: list[int],
                    schedules: dict[str, str]) -> list[Claim]:
    """Claims V1–V6 on one dataset (see the spec's pass criteria).

    schedules: {"full": "con8", "one": "con1", "mid": "con4", "dec": "dec8-2"} names used by V2/V3/V5.
    floor: the FCD noise floor (train-real vs test-real at the generated-set size)."""
    q = quality[quality["dataset"] == dataset]
    var_name = f"VAR-d{claim_depth}"
    claims = []

    # V1 parameters
    p_viar, p_var = params["viar"], params["var"][claim_depth]
    ratio = p_viar / p_var
    claims.append(sanity("v1_params", f"VIAR has ≤ {V1_MAX_PARAM_RATIO:.0%} of {var_name}'s parameters (tokenizer "
                        "excluded)", "770.9M vs 2010M (38.4%)", f"{p_viar:,} vs {p_var:,} ({ratio:.1%})",
                        ok=bool(ratio <= V1_MAX_PARAM_RATIO),
                        detail="a count of the architectures' parameters: true by construction"))

    # V2 quality parity
    full = schedules["full"]
    fcd_viar, fcd_var = _mean(q, viar_name, full, "fcd"), _mean(q, var_name, "explicit", "fcd")
    acc_viar = _mean(q, viar_name, full, "class_consistency")
    acc_var = _mean(q, var_name, "explicit", "class_consistency")
    bound = V2_FCD_FACTOR * fcd_var + floor
    # per seed (VIAR and VAR-d8 share the training seeds): FCD margin to the bound, consistency gap
    def per_seed(model: str, schedule: str, metric: str) -> pd.Series:
        rows = q[(q["model"] == model) & (q["schedule"] == schedule)]
        return rows.groupby("seed")[metric].mean()

    fv, fa = per_seed(viar_name, full, "fcd"), per_seed(var_name, "explicit", "fcd")
    av, aa = per_seed(viar_name, full, "class_consistency"), per_seed(var_name, "explicit", "class_consistency")
    seeds = sorted(set(fv.index) & set(fa.index) & set(av.index) & set(aa.index))
    fcd_ci = mean_ci((V2_FCD_FACTOR * fa[seeds] + floor - fv[seeds]).to_numpy(), label="bound − FCD")
    acc_ci = mean_ci((av[seeds] - aa[seeds]).to_numpy(), label="Δconsistency")
    parts = {"FCD within the bound": verdict_of(fcd_ci, rule="bound", margin=0.0),
             "consistency no worse": verdict_of(acc_ci, rule="no_worse", margin=V2_CONSISTENCY_MARGIN)}
    v2, v2_text = all_of(list(parts.items()))
    claims.append(judged(
        "v2_quality_parity", f"FCD(VIAR {full}) ≤ {V2_FCD_FACTOR:g}·FCD({var_name}) + floor; class consistency "
        f"within {V2_CONSISTENCY_MARGIN * 100:.0f} points (per-seed CIs; both parts must hold)",
        "FID 2.16 (VIAR) vs 2.08 (VAR-d30), cfg 1.5",
        f"FCD {fcd_viar:.2f} vs bound {bound:.2f} (VAR {fcd_var:.2f}, floor {floor:.2f}), {fcd_ci.text()}; "
        f"class consistency {acc_viar:.3f} vs {acc_var:.3f}, {acc_ci.text()}", v2,
        detail=v2_text, seeds=seeds_label(seeds)))

    # V3 knob works + convergence: three parts over seeds, decided by the weakest
    one, mid = schedules["one"], schedules["mid"]
    f1, f4, f8 = (_mean(q, viar_name, s, "fcd") for s in (one, mid, full))
    c1, c4, c8 = (per_seed(viar_name, s, "fcd") for s in (one, mid, full))
    conv = convergence[(convergence["dataset"] == dataset) & (convergence["source"] == "sampling")]
    finest = conv[(conv["scale"] == conv["scale"].max()) & (conv["t"] == V3_PROBE_T)]
    res5, cos5 = float(finest["rel_residual"].mean()), float(finest["cosine"].mean())
    res_seed, cos_seed = finest.groupby("seed")["rel_residual"].mean(), finest.groupby("seed")["cosine"].mean()
    seeds3 = sorted(set(c1.index) & set(c4.index) & set(c8.index) & set(res_seed.index))
    knob_ci = mean_ci((c1[seeds3] - c4[seeds3]).to_numpy(), label=f"FCD({one}) − FCD({mid})")
    tail_ci = mean_ci((c4[seeds3] - c8[seeds3]).to_numpy(), label=f"FCD({mid}) − FCD({full})")
    res_ci = mean_ci(res_seed[seeds3].to_numpy(), label=f"residual(t={V3_PROBE_T})")
    cos_ci = mean_ci(cos_seed[seeds3].to_numpy(), label=f"cos(t={V3_PROBE_T})")
    # the spec's convergence criterion is "residual < 0.05 or cosine > 0.98": the better of the two
    by_residual = verdict_of(res_ci, rule="bound", margin=V3_MAX_RESIDUAL, direction="less")
    by_cosine = verdict_of(cos_ci, rule="bound", margin=V3_MIN_COSINE)
    rank = {HOLDS: 0, INCONCLUSIVE: 1, REFUTED: 2}
    v3_parts = {f"{one} worse than {mid}": verdict_of(knob_ci, rule="effect", margin=0.0),
                f"{mid} within the floor of {full}": verdict_of(tail_ci, rule="no_worse", margin=floor),
                "converged": min((by_residual, by_cosine), key=lambda v: rank[v.outcome])}
    v3, v3_text = all_of(list(v3_parts.items()))
    claims.append(judged(
        "v3_knob_works", f"FCD({one}) > FCD({mid}) ≥ FCD({full}) − floor; finest-scale residual at t={V3_PROBE_T} "
        f"< {V3_MAX_RESIDUAL:g} (or cos > {V3_MIN_COSINE:g}) (per-seed CIs; all three parts must hold)",
        "cos-sim > 0.98 after 5 iterations, ≈0.999 after 10; fewer steps suffice",
        f"FCD {f1:.2f} / {f4:.2f} / {f8:.2f} (floor {floor:.2f}), {knob_ci.text()}, {tail_ci.text()}; "
        f"finest-scale residual(t={V3_PROBE_T}) {res5:.4f}, cos {cos5:.4f}", v3,
        detail=v3_text, seeds=seeds_label(seeds3)))

    # V4 constant training memory
    mem = memory[memory["dataset"] == dataset]
    by_n = mem[mem["sweep"] == "viar_nograd_iters"]
    by_m = mem[mem["sweep"] == "viar_grad_iters"]
    by_d = mem[mem["sweep"] == "var_depth"]
    spread_n = float(by_n["saved_bytes"].max() / by_n["saved_bytes"].min() - 1) if len(by_n) else float("nan")
    slope_m, r2_m = linear_r2(by_m["value"], by_m["saved_bytes"])
    slope_d, r2_d = linear_r2(by_d["value"], by_d["saved_bytes"])
    v4 = bool(spread_n <= V4_MAX_SPREAD and slope_m > 0 and r2_m > V4_MIN_R2 and slope_d > 0 and r2_d > V4_MIN_R2)
    claims.append(sanity(
        "v4_constant_memory", "VIAR saved-activation bytes independent of no-grad iterations n "
                              f"(±{V4_MAX_SPREAD:.0%}), linear in m; VAR's linear in depth (R² > {V4_MIN_R2:g})",
        "activation memory flat in equivalent depth (VIAR) vs linear (VAR); params+grads 2.87 vs 7.49 GB",
        f"spread over n {spread_n:.2%}; m: slope {slope_m / 1e6:.2f} MB/iter R² {r2_m:.4f}; "
        f"depth: slope {slope_d / 1e6:.2f} MB/block R² {r2_d:.4f}", ok=v4,
        detail="autograd's saved-tensor bytes of the two constructions: deterministic, true by construction"))

    # V5 compute control: judged on measured throughput, so a wall-clock (volatile) claim
    dec = schedules["dec"]
    tp = throughput[throughput["dataset"] == dataset]
    tp_dec = float(tp[(tp["model"] == viar_name) & (tp["schedule"] == dec)]["images_per_second"].mean())
    tp_full = float(tp[(tp["model"] == viar_name) & (tp["schedule"] == full)]["images_per_second"].mean())
    speedup = tp_dec / tp_full
    f_dec = _mean(q, viar_name, dec, "fcd")
    increase = f_dec / f8 - 1
    claims.append(_pending(
        "v5_compute_control", f"{dec} gives ≥ {V5_MIN_SPEEDUP:g}× throughput over {full} with ≤ "
        f"{V5_MAX_FCD_INCREASE:.0%} FCD increase, no retraining",
        "throughput 15.16 → 32.08 img/s, FID 2.16 → 2.43 (s4); Dec.(20,5) FID 2.18",
        f"{speedup:.2f}× ({tp_dec:.1f} vs {tp_full:.1f} img/s); FCD {f_dec:.2f} vs {f8:.2f} ({increase:+.1%})",
        bool(speedup >= V5_MIN_SPEEDUP and increase <= V5_MAX_FCD_INCREASE), volatile=True))

    # V6 Pareto (FLOPs, not wall clock: reproducible)
    v6_claim = ("VIAR's FCD-vs-FLOPs curve (one training run, all schedules) at or below the VAR depth ladder "
                f"for ≥ {V6_MIN_BUDGETS} of {V6_LADDER} FLOP budgets")
    v6_paper = "VIAR consistently dominates VAR across quality–efficiency operating points"
    if len(ladder) < 2:
        claims.append(observation(
            "v6_pareto", v6_claim, v6_paper,
            f"not evaluated: no VAR depth ladder at this profile (only VAR-d{claim_depth}; "
            "the ladder runs at the gpu profile)", detail="stretch claim (reported)"))
        return claims
    pareto = pareto_domination(q, viar_name, [f"VAR-d{d}" for d in ladder])
    wins = int(pareto["dominated"].sum()) if len(pareto) else 0
    needed = min(V6_MIN_BUDGETS, len(pareto)) if len(pareto) else V6_MIN_BUDGETS
    claims.append(_pending(
        "v6_pareto", v6_claim, v6_paper,
        f"dominates {wins}/{len(pareto)} budgets: " + ", ".join(
            f"{r.var_model} {'✓' if r.dominated else '✗'}" for r in pareto.itertuples()),
        bool(len(pareto) >= V6_LADDER and wins >= needed) if len(ladder) >= V6_LADDER else bool(wins >= needed),
        detail="stretch claim (reported)"))
    return claims
