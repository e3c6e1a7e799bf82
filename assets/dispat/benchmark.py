"""dispat claims: measured tables → Claims (assets.common.claims) — no Dagster import.

Thresholds are module constants (the issue's), the same at every profile. Every counted claim is
judged by the one rule (assets.common.claims.verdict): comparative claims on the paired t CI over
the (dataset, seed) cells (`comparative_claim`; the paired bootstrap over test rows is reported
beside it), the FPR band on a Clopper–Pearson CI per cell. A claim with several parts holds when
every part holds, is refuted when any part is refuted, and is otherwise inconclusive.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from assets.common.claims import (
    HOLDS,
    INCONCLUSIVE,
    REFUTED,
    Claim,
    Premise,
    Verdict,
    comparative_claim,
    judged,
    observation,
    paired_ci,
    proportion_ci,
    seeds_label,
    verdict,
    verdict_of,
)
from assets.dispat.baselines import BASELINES
from assets.dispat.method import F_NAMES, paired_bootstrap_auc
from assets.dispat.params import DispatParams

MIN_GAIN = 0.01                 # mean AUROC gain over AnoLLM compute-matched → rule "effect", margin 0.01
MIN_DATASETS_WON = 2            # of 3 (the count; reported, not the verdict rule)
FPR_RANGE = (0.03, 0.08)        # test-normal FPR at α = 0.05: every cell's Clopper–Pearson CI inside the band
MAX_NLL_RISE = 0.02             # premise of alignment: θ_T validation NLL ≤ θ0's + 2 % on every counted cell
# premise of alignment (and the cells f_variants uses): a cell counts only when at least one self-play
# round was kept there (otherwise θ_T = θ0 and the comparison is θ0 with itself); the claim needs at
# least MIN_KEPT_CELLS such cells for a CI over cells (fixed before the run: a third of the 9 cpu cells)
MIN_KEPT_CELLS = 3
SYNTHETIC = "synthetic_transactions"
DEPENDENCY = "auroc_dependency"


def _pivot(th: pd.DataFrame, metric: str = "auroc") -> pd.DataFrame:
    return th.pivot_table(index=["dataset", "seed"], columns="method", values=metric).sort_index()


def _test_scores(scores: pd.DataFrame, method: str, d: str, s: int) -> tuple[np.ndarray, np.ndarray]:
    g = scores[(scores["dataset"] == d) & (scores["seed"] == s) & (scores["method"] == method)
               & (scores["split"] == "test")].sort_values("row_id")
    return g["score"].to_numpy(), g["label"].to_numpy()


def row_bootstrap(scores: pd.DataFrame, a: str, b: str, cells: list[tuple[str, int]], n_boot: int, seed: int
                  ) -> tuple[float, float, float]:
    sa, sb, ys = [], [], []
    for d, s in cells:
        x, y = _test_scores(scores, a, d, s)
        z, _ = _test_scores(scores, b, d, s)
        sa.append(x)
        sb.append(z)
        ys.append(y)
    return paired_bootstrap_auc(sa, sb, ys, n_boot, seed)


def _fmt(ci: tuple[float, float, float]) -> str:
    return f"{ci[0]:+.4f} [90% CI {ci[1]:+.4f}, {ci[2]:+.4f}]"


def kept_premise(al: pd.DataFrame) -> Premise:
    """The premise of every counted claim (issue 48): at least one self-play round kept on each
    (dataset, seed) cell it pools — else θ_T = θ0 there and the claim compares θ0, not self-play."""
    kept = al[al["rounds_accepted"] >= 1]
    missing = [f"{r.dataset}/{r.seed}" for r in al.itertuples() if r.rounds_accepted < 1]
    measured = f"{len(kept)} of {len(al)} cells" + (f"; none kept on {', '.join(missing)}" if missing else "")
    return Premise("≥ 1 self-play round kept on every (dataset, seed) cell (else θ_T = θ0 there)", measured,
                   not missing and len(al) > 0)


def _kept(al: pd.DataFrame) -> set[tuple[str, int]]:
    return {(r.dataset, int(r.seed)) for r in al.itertuples() if r.rounds_accepted >= 1}


def all_parts(parts: list[tuple[str, Verdict]]) -> Verdict:
    """Holds when every part holds, refuted when any part is refuted, else inconclusive; the interval
    shown is the deciding part's (the first refuted, else the first not holding, else the first)."""
    outcomes = [v.outcome for _, v in parts]
    outcome = REFUTED if REFUTED in outcomes else HOLDS if all(o == HOLDS for o in outcomes) else INCONCLUSIVE
    first = next((v for _, v in parts if v.outcome == outcome), parts[0][1]) if outcome != HOLDS else parts[0][1]
    reason = "; ".join(f"{n}: {v.outcome} ({v.reason})" for n, v in parts)
    premises = tuple(dict.fromkeys(p for _, v in parts for p in v.premises))     # each premise once
    return Verdict(outcome, first.estimate, first.low, first.high, first.margin, first.rule, first.direction,
                   reason, premises)


def beats_matched(th: pd.DataFrame, scores: pd.DataFrame, p: DispatParams, premise: Premise | None = None
                  ) -> tuple[Claim, pd.DataFrame]:
    auc = _pivot(th)
    per = auc.groupby(level="dataset")[["dispat", "anollm_matched"]].mean()
    per["gain"] = per["dispat"] - per["anollm_matched"]
    cells = list(auc.index)
    boots = {}
    for d in per.index:
        boots[d] = row_bootstrap(scores, "dispat", "anollm_matched", [c for c in cells if c[0] == d], p.bootstrap, 0)
    pooled = row_bootstrap(scores, "dispat", "anollm_matched", cells, p.bootstrap, 0)
    won = int((per["gain"] > 0).sum())
    mean_gain = float(per["gain"].mean())
    base = comparative_claim(
        "beats_matched", f"DiSPaT AUROC − AnoLLM compute-matched (θ0 + T·K SFT steps) ≥ +{MIN_GAIN} (paired CI "
        "over cells above 0, mean ≥ the margin)",
        "'consistently outperforms' prior LLM-based detectors (no numbers)", auc["dispat"].to_numpy(),
        auc["anollm_matched"].to_numpy(), rule="effect", margin=MIN_GAIN, seeds=p.seeds,
        names=("dispat", "anollm_matched"), premises=premise)
    per_text = ", ".join(f"{d}: {r.gain:+.4f} (rows {_fmt(boots[d])})" for d, r in per.iterrows())
    measured = (f"mean gain {mean_gain:+.4f}; higher on {won}/{len(per)} (report-only); {per_text}; pooled over "
                f"cells: {base.measured_value}; paired bootstrap over test rows {_fmt(pooled)}")
    claim = Claim(base.claim_id, base.claim, base.paper_value, measured, base.judgement, base.detail,
                  seeds=base.seeds)
    table = per.reset_index().assign(row_ci_low=[boots[d][1] for d in per.index],
                                     row_ci_high=[boots[d][2] for d in per.index])
    return claim, table


def beats_non_llm(th: pd.DataFrame, p: DispatParams, premise: Premise | None = None) -> tuple[Claim, pd.DataFrame]:
    """DiSPaT ≥ the best classical/deep baseline (best by mean test AUROC over seeds, an oracle
    choice that favours the baselines) on ≥ 2 of 3 datasets, and on the synthetic dependency
    anomalies; the pooled CI over cells of DiSPaT − best must lie above 0."""
    auc = _pivot(th)
    present = [m for m in BASELINES if m in auc.columns]
    means = auc.groupby(level="dataset").mean()
    rows, treat, ctrl = [], [], []
    for d in means.index:
        best = max(present, key=lambda m: means.loc[d, m])
        rows.append({"dataset": d, "dispat": means.loc[d, "dispat"], "best_baseline": best,
                     "best_auroc": means.loc[d, best], "won": bool(means.loc[d, "dispat"] >= means.loc[d, best])})
        cell = auc.loc[d]
        treat += list(cell["dispat"])
        ctrl += list(cell[best])
    table = pd.DataFrame(rows)
    base = comparative_claim("beats_non_llm", "", "", treat, ctrl, seeds=p.seeds, names=("dispat", "best baseline"),
                             premises=premise)
    parts = [("pooled AUROC − best baseline > 0", base.judgement)]
    dep_text = "no synthetic dependency anomalies in this run"
    if SYNTHETIC in means.index and DEPENDENCY in th.columns:
        dep_cells = _pivot(th[th["dataset"] == SYNTHETIC], DEPENDENCY)
        dep = dep_cells.mean()
        best_dep = max(present, key=lambda m: dep[m])
        ci = paired_ci(dep_cells["dispat"].to_numpy(), dep_cells[best_dep].to_numpy())
        parts.append(("dependency AUROC − best baseline > 0", verdict_of(ci, rule="effect", margin=0.0,
                                                                         premises=premise)))
        dep_text = (f"dependency anomalies: dispat {dep['dispat']:.3f} vs best {best_dep} {dep[best_dep]:.3f}; "
                    f"{ci.text()}")
    else:
        parts.append(("dependency anomalies", verdict(float("nan"), float("nan"), float("nan"), premises=Premise(
            "synthetic dependency anomalies scored", "absent in this run", False))))
    won = int(table["won"].sum())
    per = ", ".join(f"{r.dataset}: {r.dispat:.3f} vs {r.best_baseline} {r.best_auroc:.3f}" for r in table.itertuples())
    claim = judged("beats_non_llm", "DiSPaT AUROC above the best classical or deep baseline (pooled paired CI over "
                   "cells above 0) and on synthetic dependency anomalies (paired CI over seeds above 0)",
                   "'consistently outperforms' deep and classical detectors (no numbers)",
                   f"won {won}/{len(table)} (report-only); {per}; {dep_text}; pooled: {base.measured_value}",
                   all_parts(parts), seeds=seeds_label(p.seeds))
    return claim, table


def alignment_claim(al: pd.DataFrame, p: DispatParams) -> tuple[Claim, pd.DataFrame]:
    """C2ST AUC of θ_T's samples below θ0's (rule "effect", expect "less", margin 0; paired CI over
    the cells where at least one self-play round was kept). Premises: ≥ MIN_KEPT_CELLS such cells,
    and θ_T's validation NLL ≤ θ0's + 2 % on each of them (no collapse)."""
    per = al.groupby("dataset")[["c2st_theta0", "c2st_thetaT", "val_nll_theta0", "val_nll_thetaT",
                                 "rounds_accepted"]].mean()
    kept = al[al["rounds_accepted"] >= 1]
    excluded = al[al["rounds_accepted"] < 1]
    rise = kept["val_nll_thetaT"] / kept["val_nll_theta0"] - 1
    cells_text = (f"{len(kept)} of {len(al)} cells; excluded (every round rejected, θ_T = θ0): "
                  + (", ".join(f"{r.dataset}/{r.seed}" for r in excluded.itertuples()) or "none"))
    premises = [Premise(f"≥ {MIN_KEPT_CELLS} (dataset, seed) cells with at least one self-play round kept",
                        cells_text, len(kept) >= MIN_KEPT_CELLS),
                Premise(f"θ_T validation NLL ≤ θ0's + {MAX_NLL_RISE:.0%} on every kept cell (no collapse)",
                        f"max rise {rise.max():+.2%}" if len(kept) else "no kept cell",
                        bool(len(kept) and (rise <= MAX_NLL_RISE + 1e-12).all()))]
    what = ("C2ST AUC (fresh gradient-boosted classifier, validation rows vs samples) lower for θ_T's samples than "
            "θ0's (paired CI over the cells with a kept self-play round below 0)")
    paper = "self-play 'progressively aligns the model distribution with the true normal-data distribution'"
    per_text = ", ".join(f"{d}: {r.c2st_theta0:.3f} → {r.c2st_thetaT:.3f} ({r.rounds_accepted:.1f} rounds kept)"
                         for d, r in per.iterrows())
    if len(kept) >= 1:
        base = comparative_claim("alignment", "", "", kept["c2st_thetaT"].to_numpy(), kept["c2st_theta0"].to_numpy(),
                                 rule="effect", expect="less", margin=0.0, premises=premises, names=("θ_T", "θ0"))
        claim = judged("alignment", what, paper, f"C2ST θ0 → θ_T: {per_text}; kept cells: {base.measured_value}",
                       base.judgement, detail=cells_text, seeds=seeds_label(p.seeds))
    else:
        j = verdict(float("nan"), float("nan"), float("nan"), premises=premises)
        claim = judged("alignment", what, paper, f"C2ST θ0 → θ_T: {per_text}; no cell kept a round", j,
                       detail=cells_text, seeds=seeds_label(p.seeds))
    return claim, per.reset_index()


def fpr_cells(th: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, seed): DiSPaT's test-normal FPR, the number of test normals and the
    Clopper–Pearson 90 % CI of the rate."""
    d = th[th["method"] == "dispat"]
    test = scores[(scores["method"] == "dispat") & (scores["split"] == "test") & (scores["label"] == 0)]
    n = test.groupby(["dataset", "seed"]).size()
    rows = []
    for r in d.itertuples():
        m = int(n.get((r.dataset, r.seed), 0))
        if m == 0:
            rows.append({"dataset": r.dataset, "seed": r.seed, "fpr": r.fpr, "n": 0, "low": np.nan, "high": np.nan})
            continue
        ci = proportion_ci(int(round(r.fpr * m)), m)
        rows.append({"dataset": r.dataset, "seed": r.seed, "fpr": r.fpr, "n": m, "low": ci.low, "high": ci.high})
    return pd.DataFrame(rows)


def calibrated_fpr(th: pd.DataFrame, scores: pd.DataFrame, p: DispatParams, al: pd.DataFrame | None = None) -> Claim:
    """Judged per cell: holds when every cell's FPR CI lies inside [0.03, 0.08], refuted when any
    cell's CI lies wholly outside, otherwise inconclusive. With the alignment table `al`, a cell
    where no self-play round was kept is inconclusive by premise (θ_T = θ0 there); the claim shows
    the premise over all cells."""
    lo, hi = FPR_RANGE
    cells = fpr_cells(th, scores)
    kept = _kept(al) if al is not None else None
    parts = []
    for r in cells.itertuples():
        name = f"{r.dataset}/{r.seed}"
        cell_premise = (None if kept is None or (r.dataset, int(r.seed)) in kept
                        else Premise(f"{name}: ≥ 1 self-play round kept", "0 kept", False))
        parts.append((f"{name} ≥ {lo}", verdict(r.fpr, r.low, r.high, rule="bound", margin=lo, premises=cell_premise)))
        parts.append((f"{name} ≤ {hi}", verdict(r.fpr, r.low, r.high, rule="bound", margin=hi, direction="less",
                                                premises=cell_premise)))
    per = cells.groupby("dataset")["fpr"].mean()
    text = ", ".join(f"{k}: {v:.3f}" for k, v in per.items())
    cell_text = "; ".join(f"{r.dataset}/{r.seed} {r.fpr:.3f} [{r.low:.3f}, {r.high:.3f}] (n {r.n})"
                          for r in cells.itertuples())
    j = all_parts(parts) if parts else verdict(float("nan"), float("nan"), float("nan"))
    if al is not None:
        j = dataclasses.replace(j, premises=(kept_premise(al),))
    return judged("calibrated_fpr", f"DiSPaT test-normal FPR in [{lo}, {hi}] at α = {p.alpha} on every (dataset, "
                  "seed) cell (Clopper–Pearson 90 % CI per cell)",
                  "calibrated threshold = (1 − α) quantile of validation-normal scores",
                  f"mean over seeds {text}; per cell {cell_text}", j, seeds=seeds_label(p.seeds))


def kept_cells(rounds: pd.DataFrame, labels: list[str]) -> set[tuple[str, int]]:
    """(dataset, seed) cells where every run label in `labels` kept at least one self-play round."""
    keep = rounds[rounds["f"].isin(labels)].groupby(["dataset", "seed", "f"])["accepted"].any().unstack("f")
    keep = keep.reindex(columns=labels).fillna(False).astype(bool)
    return {(d, int(s)) for (d, s), ok in keep.all(axis=1).items() if ok}


def f_variants(th: pd.DataFrame, p: DispatParams, rounds: pd.DataFrame | None = None) -> Claim:
    """Report-only: test AUROC per f on the same cells — with `rounds`, only the cells where every
    variant kept at least one self-play round (else θ_T = θ0 and the variants compare θ0 with itself)."""
    auc = _pivot(th)
    cols = [c for c in auc.columns if c == "dispat" or c in {f"dispat_{f}" for f in F_NAMES}]
    have = auc[cols].dropna()
    if have.empty or len(cols) < 2:
        return observation("f_variants", "AUROC by f (JS default, KL, χ²)", "JS / KL / χ² reported", "no variants run")
    if rounds is not None:
        labels = [p.self_play.f if c == "dispat" else c.removeprefix("dispat_") for c in cols]
        ok = kept_cells(rounds, labels)
        dropped = [f"{d}/{s}" for d, s in have.index if (d, int(s)) not in ok]
        have = have[[(d, int(s)) in ok for d, s in have.index]]
        if have.empty:
            return observation("f_variants", "test AUROC of self-play with each f on the same cells",
                               "JS / KL / χ² reported", "no cell where every f kept a self-play round "
                               f"(excluded: {', '.join(dropped)}; there θ_T = θ0 for some f)")
    means = have.mean()
    parts = [f"{c.replace('dispat_', '') if c != 'dispat' else p.self_play.f}: {v:.4f}" for c, v in means.items()]
    matched = auc.loc[have.index, "anollm_matched"].mean()
    cells = ", ".join(f"{d}/{s}" for d, s in have.index)
    return observation("f_variants", "test AUROC of self-play with each f on the same cells", "JS / KL / χ² reported",
                       "; ".join(parts) + f"; AnoLLM matched {matched:.4f} (cells {cells})",
                       seeds=seeds_label(sorted({s for _, s in have.index})))


def critic_table(th: pd.DataFrame) -> pd.DataFrame | None:
    """Option B (explicit critic, gpu only, report-only): mean test AUROC / AUPRC / FPR of
    dispat_critic beside dispat and the matched control per dataset; None when it did not run."""
    if "dispat_critic" not in set(th["method"]):
        return None
    keep = th[th["method"].isin(["dispat_critic", "dispat", "anollm_matched"])]
    table = keep.pivot_table(index="dataset", columns="method", values="auroc").add_prefix("auroc_")
    gain = _pivot(keep).eval("dispat_critic - dispat").groupby(level="dataset")
    table["critic_minus_dispat"] = gain.mean()
    table["critic_won_cells"] = (_pivot(keep)["dispat_critic"] > _pivot(keep)["dispat"]).groupby(level="dataset").sum()
    table["auprc_dispat_critic"] = keep[keep["method"] == "dispat_critic"].groupby("dataset")["auprc"].mean()
    table["fpr_dispat_critic"] = keep[keep["method"] == "dispat_critic"].groupby("dataset")["fpr"].mean()
    return table.reset_index()


def renorm_summary(ablation: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, objective) of renorm_ablation, objectives in the asset's order: rounds, rounds
    kept, mean / min / max relative validation-NLL change per round, the mean change under the
    constrained distribution (q), mean log P(allowed) per value token under θt → under the round's θ."""
    datasets = {d: i for i, d in enumerate(dict.fromkeys(ablation["dataset"]))}
    objectives = {o: i for i, o in enumerate(dict.fromkeys(ablation["objective"]))}
    g = ablation.groupby(["dataset", "objective"], sort=False)
    table = g.agg(rounds=("round", "size"), kept=("accepted", "sum"), val_nll_change=("val_nll_change", "mean"),
                  min_change=("val_nll_change", "min"), max_change=("val_nll_change", "max"),
                  val_nll_q_change=("val_nll_q_change", "mean"), log_p_allowed_before=("log_p_allowed_before", "mean"),
                  log_p_allowed_after=("log_p_allowed_after", "mean")).reset_index()
    table["kept"] = table["kept"].astype(int)
    table["_d"], table["_o"] = table["dataset"].map(datasets), table["objective"].map(objectives)
    return table.sort_values(["_d", "_o"]).drop(columns=["_d", "_o"]).reset_index(drop=True)


def renorm_observation(ablation: pd.DataFrame | None) -> Claim:
    """Report-only: issue 48's ablation (asset renorm_ablation) — mean relative validation-NLL change
    per round and rounds kept, per dataset and objective, on the asset's cells."""
    what = ("validation-NLL change per self-play round (round 0 from θ0 on the run's pseudo-anomalies) with the "
            "log-ratio renormalised over the constrained decoder's allowed set (the run's objective) vs "
            "unconstrained vs a contrast-free control (samples = train rows)")
    paper = "ablation (ours, issue 48): is the unconstrained log-ratio's bias why self-play rounds are rejected?"
    if ablation is None or ablation.empty:
        return observation("renorm_ablation", what, paper, "not run (no ablation cell in this profile)")
    table = renorm_summary(ablation)
    parts = []
    for d, g in table.groupby("dataset", sort=False):
        arms = ", ".join(f"{r.objective} {r.val_nll_change:+.2%} ({r.kept} of {r.rounds} kept)"
                         for r in g.itertuples())
        parts.append(f"{d}: {arms}")
    seeds = sorted({int(s) for s in ablation["seed"]})
    return observation("renorm_ablation", what, paper, "mean change per round: " + "; ".join(parts),
                       seeds=seeds_label(seeds))


def vs_sft(th: pd.DataFrame, p: DispatParams) -> Claim:
    auc = _pivot(th)
    base = comparative_claim("dispat_vs_sft", "", "", auc["dispat"].to_numpy(), auc["anollm_sft"].to_numpy(),
                             seeds=p.seeds, names=("dispat", "anollm_sft"))
    matched = comparative_claim("x", "", "", auc["anollm_matched"].to_numpy(), auc["anollm_sft"].to_numpy(),
                                seeds=p.seeds, names=("anollm_matched", "anollm_sft"))
    return observation("dispat_vs_sft", "DiSPaT and the matched control vs AnoLLM-SFT θ0 (the confound: more steps)",
                       "—", f"{base.measured_value}; matched: {matched.measured_value}", seeds=seeds_label(p.seeds))


def all_methods(th: pd.DataFrame, p: DispatParams) -> tuple[Claim, pd.DataFrame]:
    table = th.groupby(["dataset", "method"])[["auroc", "auprc", "f1", "fpr"]].mean().reset_index()
    best = table.loc[table.groupby("dataset")["auroc"].idxmax()]
    text = ", ".join(f"{r.dataset}: {r.method} {r.auroc:.3f}" for r in best.itertuples())
    return observation("best_method", "the best method by mean test AUROC per dataset", "—", text,
                       seeds=seeds_label(p.seeds)), table


def speed_claims(speed: pd.DataFrame | None) -> list[Claim]:
    if speed is None or speed.empty:
        return []
    v = dict(zip(speed["metric"], speed["value"]))
    return [Claim("speed", "scoring rows/s (AnoLLM, all orders) vs IForest; sampling rows/s with vs without the KV "
                  "cache (greedy, same rows)", "performance ratios (issue)",
                  f"IForest fit+score / LM scoring rows/s = {v['scoring_ratio_iforest_over_lm']:.1f}×; KV cache "
                  f"speed-up {v['kv_cache_speedup']:.2f}× (same rows: {bool(v['kv_cache_same_rows'])})", None,
                  kind="observation", seeds="0 (1)", volatile=True)]


def build_claims(th: pd.DataFrame, scores: pd.DataFrame, al: pd.DataFrame, speed: pd.DataFrame | None,
                 p: DispatParams, rounds: pd.DataFrame | None = None, ablation: pd.DataFrame | None = None
                 ) -> tuple[list[Claim], dict[str, pd.DataFrame]]:
    premise = kept_premise(al)
    matched, matched_table = beats_matched(th, scores, p, premise)
    non_llm, non_llm_table = beats_non_llm(th, p, premise)
    align, align_table = alignment_claim(al, p)
    best, methods = all_methods(th, p)
    claims = [matched, non_llm, align, calibrated_fpr(th, scores, p, al), f_variants(th, p, rounds), vs_sft(th, p),
              best, *speed_claims(speed), renorm_observation(ablation)]
    return claims, {"matched": matched_table, "non_llm": non_llm_table, "alignment": align_table,
                    "methods": methods}
