"""dispat benchmark report content: pure pandas/matplotlib, no Dagster."""
from __future__ import annotations

import pandas as pd

from assets.common.claims import seeds_label
from assets.common.report import METRIC_COLUMNS, Report, markdown_table
from assets.dispat import benchmark, plots
from assets.dispat.params import DispatParams

READING = (
    "Every detector is fitted on normal train rows only and scored on the same validation and test rows of each "
    "(dataset, seed) cell; thresholds are the (1 − α) quantile of validation-normal scores (no test labels are used "
    "for any choice). DiSPaT and both AnoLLM variants score a row by the value-span NLL summed over columns (text "
    "spans per token), averaged over the same column orders. The self-play objective is the spec's f-SPIN-style "
    "reconstruction [I] (f, β, γ configurable), not the paper's (unpublished). Comparative claims use the paired "
    "t-interval over the cells; the paired bootstrap over test rows is shown beside it.")


def _metric_rows(th: pd.DataFrame, al: pd.DataFrame, rounds: pd.DataFrame, ablation: pd.DataFrame | None = None
                 ) -> pd.DataFrame:
    rows = []
    for r in th.itertuples():
        for metric in ("auroc", "auprc", "f1", "fpr", "val_fpr", "threshold"):
            rows.append({"asset": "dispat/thresholds", "partition": f"{r.dataset}/{r.seed}", "seed": int(r.seed),
                         "dataset": r.dataset, "method": r.method, "metric": metric,
                         "value": float(getattr(r, metric))})
    for r in al.itertuples():
        for metric in ("c2st_theta0", "c2st_thetaT", "val_nll_theta0", "val_nll_thetaT"):
            rows.append({"asset": "dispat/alignment", "partition": f"{r.dataset}/{r.seed}", "seed": int(r.seed),
                         "dataset": r.dataset, "method": "dispat", "metric": metric,
                         "value": float(getattr(r, metric))})
    for r in rounds.itertuples():
        for metric in ("divergence", "val_nll_after"):
            rows.append({"asset": "dispat/policy_dispat", "partition": f"{r.dataset}/{r.seed}/round{r.round}",
                         "seed": int(r.seed), "dataset": r.dataset, "method": f"dispat_{r.f}", "metric": metric,
                         "value": float(getattr(r, metric))})
    for r in (ablation if ablation is not None else pd.DataFrame()).itertuples():
        for metric in ("val_nll_change", "val_nll_q_change", "d_log_p_allowed"):
            rows.append({"asset": "dispat/renorm_ablation", "partition": f"{r.dataset}/{r.seed}/round{r.round}",
                         "seed": int(r.seed), "dataset": r.dataset, "method": r.objective, "metric": metric,
                         "value": float(getattr(r, metric))})
    return pd.DataFrame(rows, columns=METRIC_COLUMNS)


def _timings(timings: dict[str, pd.DataFrame | None], speed: pd.DataFrame | None) -> tuple[pd.DataFrame, str]:
    rows, lines = [], ["## Wall clock (per job, one thread)", ""]
    for asset, frame in timings.items():
        if frame is None or frame.empty:
            continue
        for r in frame.to_dict("records"):
            rows.append({"asset": f"dispat/{asset}", "partition": f"{r['dataset']}/{r['seed']}",
                         "seed": int(r["seed"]), "dataset": r["dataset"],
                         "method": str(r.get("method", r.get("f", asset))), "metric": "seconds",
                         "value": float(r["seconds"])})
        keys = [c for c in ("dataset", "method", "f") if c in frame]
        lines += [f"### {asset} ({frame['seconds'].sum():.0f} s in all)", "",
                  markdown_table(frame.groupby(keys)["seconds"].mean().reset_index().round(2)), ""]
    if speed is not None and len(speed):
        lines += ["## Speed (one thread)", "", markdown_table(speed.round(3)), ""]
        for r in speed.itertuples():
            rows.append({"asset": "dispat/speed_benchmark", "partition": "", "seed": 0, "dataset": "", "method": "",
                         "metric": r.metric, "value": float(r.value)})
    return pd.DataFrame(rows, columns=METRIC_COLUMNS), "\n".join(lines)


def _critic_section(th: pd.DataFrame, rounds: pd.DataFrame) -> list[str]:
    """Option B rows (gpu profile only; report-only, no claim); nothing when it did not run."""
    table = benchmark.critic_table(th)
    if table is None:
        return []
    crit = rounds[rounds["f"].str.endswith("_critic")]
    per_round = crit.groupby(["f", "round"])[["divergence_first", "divergence", "u_data", "u_gen", "val_nll_before",
                                              "val_nll_after", "accepted"]].mean().reset_index()
    return ["## Explicit critic (option B, report-only)", "",
            "dispat_critic: per round a fresh MLP critic D_φ on the frozen θt's final hidden states, trained with the "
            "f-GAN objective (real train rows vs the round's samples); the policy takes K steps of β·(policy-gradient "
            "surrogate: importance weights e^{−v_φ} on real rows + penalty on generated rows) + γ·SFT, under the same "
            "2 % rule. Not a claim. D̂_f here is the critic's estimate (first / last fifth of its steps); u = mean v_φ.",
            "", markdown_table(table, 4), "", markdown_table(per_round, 4), ""]


def _pct(v: float) -> str:
    return f"{v:+.2%}"


def _renorm_reading(table: pd.DataFrame, ablation: pd.DataFrame, sft: pd.DataFrame, matched: pd.DataFrame
                    ) -> list[str]:
    """Sentences read off renorm_ablation's rows (numbers generated, none typed): per dataset, kept
    rounds and validation-NLL change per objective, how much of the renormalised rise is mass leaving
    the allowed set, the contrast-free control, and the compute-matched control on the same cells."""
    lines = []
    for d, g in table.groupby("dataset", sort=False):
        arm = {r.objective: r for r in g.itertuples()}
        text = [f"**{d}**: " + ", ".join(f"{r.objective} {_pct(r.val_nll_change)} (per round {_pct(r.min_change)} "
                                          f"to {_pct(r.max_change)}; {r.kept} of {r.rounds} kept)"
                                          for r in g.itertuples()) + "."]
        if "renormalised" in arm and "unconstrained" in arm:
            ren, unc = arm["renormalised"], arm["unconstrained"]
            if ren.kept == 0:
                text.append(f"With the bias removed (renormalised) every round is still rejected "
                            f"({'as' if unc.kept == 0 else 'while'} unconstrained keeps {unc.kept} of {unc.rounds}): "
                            "the unconstrained log-ratio's bias is not why rounds are rejected here.")
            else:
                text.append(f"Renormalising keeps {'more' if ren.kept > unc.kept else 'no more'} rounds "
                            f"({ren.kept} vs {unc.kept} of {ren.rounds}).")
            rows = ablation[(ablation["dataset"] == d) & (ablation["objective"] == "renormalised")]
            rise = float((rows["val_nll_after"] - rows["val_nll_before"]).mean())
            rise_q = float((rows["val_nll_q_after"] - rows["val_nll_q_before"]).mean())
            text.append(f"log P(allowed) per value token, θt → θ: renormalised {ren.log_p_allowed_before:.4f} → "
                        f"{ren.log_p_allowed_after:.4f}, unconstrained {unc.log_p_allowed_before:.4f} → "
                        f"{unc.log_p_allowed_after:.4f}; the renormalised rounds change the validation NLL by "
                        f"{rise:+.3f} nats per row, under q by {rise_q:+.3f} ({_pct(ren.val_nll_q_change)})"
                        + (": most of the rise is mass leaving the allowed set, which the keep rule counts and the "
                           "renormalised f-term does not resist." if rise > 0 and rise_q < 0.5 * rise else "."))
        if "no_contrast" in arm:
            nc = arm["no_contrast"]
            text.append("The contrast-free control (the f-term's expected gradient at θt is 0) changes the "
                        f"validation NLL {_pct(nc.val_nll_change)} ({nc.kept} of {nc.rounds} kept)"
                        + (": the f-term's noise under AdamW moves θ away from θ0 even without a contrast."
                           if nc.val_nll_change > 0 else "."))
        change = _matched_change(ablation[ablation["dataset"] == d], sft, matched)
        if len(change):
            text.append(f"The compute-matched control (θ0 + T·K SFT steps) changes θ0's validation NLL "
                        f"{_pct(change.min())} to {_pct(change.max())} on the same cells.")
        lines += [" ".join(text), ""]
    return lines


def _matched_change(ablation: pd.DataFrame, sft: pd.DataFrame, matched: pd.DataFrame) -> pd.Series:
    """Relative validation-NLL change of the compute-matched control over θ0 on the ablation's cells."""
    keys = ablation[["dataset", "seed"]].drop_duplicates()
    both = keys.merge(sft[["dataset", "seed", "val_nll"]], on=["dataset", "seed"]).merge(
        matched[["dataset", "seed", "val_nll"]], on=["dataset", "seed"], suffixes=("_sft", "_matched"))
    return both["val_nll_matched"] / both["val_nll_sft"] - 1


def _renorm_section(ablation: pd.DataFrame | None, sft: pd.DataFrame, matched: pd.DataFrame, p: DispatParams
                    ) -> list[str]:
    """Issue 48's ablation (asset renorm_ablation, report-only): its table and the sentences read
    off it; a line saying it did not run when the profile has no ablation cell."""
    head = ["## Ablation: renormalised vs unconstrained log-ratio (issue 48, report-only)", ""]
    if ablation is None or ablation.empty:
        return head + ["Not run (no renorm_ablation cell in this profile).", ""]
    a, sp = p.renorm_ablation, p.self_play
    seeds = seeds_label(sorted({int(s) for s in ablation["seed"]}))
    datasets = ", ".join(dict.fromkeys(ablation["dataset"]))
    objectives = list(dict.fromkeys(ablation["objective"]))
    rounds = "round 0" if a.rounds == 1 else f"rounds 0–{a.rounds - 1}"
    table = benchmark.renorm_summary(ablation)
    per_cell = ablation[["dataset", "seed", "objective", "round", "val_nll_before", "val_nll_after", "val_nll_change",
                         "accepted", "val_nll_q_change", "log_p_allowed_before", "log_p_allowed_after",
                         "divergence"]]
    return head + [
        f"Asset `renorm_ablation`, seeds {seeds}, datasets {datasets}: {rounds} of self-play from each cell's θ0 "
        f"(this run's checkpoints) on its round-0 pseudo-anomalies, with this run's f = {sp.f}, β = {sp.beta}, "
        f"γ = {sp.gamma}, K = {sp.steps}, keep rule (validation NLL rises ≤ {sp.max_val_rise:.0%}) and stream seeds, "
        "so every objective sees the same data batches and sample picks. "
        f"`{objectives[0]}` is this run's objective: its policy_dispat rows, not recomputed; "
        "`unconstrained`: r = p_θ/p_θt with unconstrained log-probabilities on the same constrained samples; "
        "`no_contrast`: renormalised, round 0's samples replaced by train rows under fresh column orders. "
        "change = validation NLL after / before − 1; q = under the constrained distribution.", "",
        markdown_table(table, 4), "", *_renorm_reading(table, ablation, sft, matched),
        "Per cell and round:", "", markdown_table(per_cell, 4), ""]


def build_report(th: pd.DataFrame, scores: pd.DataFrame, al: pd.DataFrame, rounds: pd.DataFrame,
                 sft: pd.DataFrame, matched: pd.DataFrame, pseudo: pd.DataFrame, speed: pd.DataFrame | None,
                 p: DispatParams, timings: dict[str, pd.DataFrame | None], ablation: pd.DataFrame | None = None
                 ) -> Report:
    claims, tables = benchmark.build_claims(th, scores, al, speed, p, rounds, ablation)
    methods = tables["methods"]
    wide = methods.pivot_table(index="method", columns="dataset", values="auroc").reset_index()
    types = [c for c in th.columns if c.startswith("auroc_")]
    by_type = th.groupby(["dataset", "method"])[types].mean().reset_index()
    round_cols = [c for c in ("divergence_first", "divergence", "val_nll_before", "val_nll_after",
                              "log_p_allowed_before", "log_p_allowed_after", "parse_rate", "duplicate_rate",
                              "n_samples") if c in rounds]
    round_table = rounds.groupby(["f", "round"])[round_cols].mean().reset_index()
    accepted = rounds.groupby(["f"])["accepted"].mean().reset_index()
    change = rounds.assign(val_nll_change=rounds["val_nll_after"] / rounds["val_nll_before"] - 1)
    per_dataset = change.groupby(["f", "dataset"]).agg(rounds=("round", "size"), kept=("accepted", "sum"),
                                                       val_nll_change=("val_nll_change", "mean"),
                                                       max_change=("val_nll_change", "max")).reset_index()
    pol = pd.concat([sft.assign(policy="theta0"), matched.assign(policy="matched")])
    pol = pol.groupby(["policy", "dataset"])[["steps", "batch", "first_loss", "final_loss", "val_nll",
                                             "n_parameters"]].mean().reset_index()
    gen = pseudo.groupby(["dataset"])[["parsed", "duplicate"]].mean().reset_index()
    body = [
        "## Reading", "", READING, "",
        "## Test AUROC by method (mean over seeds)", "", markdown_table(wide, 4), "",
        "## All metrics (mean over seeds; F1 and FPR at the calibrated threshold)", "", markdown_table(methods, 4), "",
        "## AUROC per anomaly type (each type vs all test normals; mean over seeds)", "",
        markdown_table(by_type, 3), "",
        "## DiSPaT vs AnoLLM compute-matched", "", markdown_table(tables["matched"], 4), "",
        "## DiSPaT vs the best non-LLM baseline (chosen by test AUROC: favours the baselines)", "",
        markdown_table(tables["non_llm"], 4), "",
        "## Alignment (C2ST AUC and validation NLL; mean over seeds)", "", markdown_table(tables["alignment"], 4), "",
        "## Self-play rounds (mean over cells)", "",
        "D̂_f = −L_f (the variational lower bound on D_f(data ‖ p_θt) at the implicit critic), first and last fifth "
        "of the round's steps; parse and duplicate rates of the samples the round trained on (round 0: θ0's "
        "pseudo-anomalies, gated separately); log P(allowed) = mean log-mass per value token that θt and the "
        "round's θ put on the schema-constrained decoder's allowed set, on those samples; the log-ratio is "
        "renormalised over that set" + ("" if p.self_play.renormalise else " (not in this run: unconstrained "
                                        "ablation)") + ".", "", markdown_table(round_table, 4), "",
        "Share of rounds accepted (validation NLL rose ≤ 2 %): " + ", ".join(
            f"{r.f}: {r.accepted:.2f}" for r in accepted.itertuples()), "",
        "Rounds kept and relative validation-NLL change per round (after / before − 1), per dataset:", "",
        markdown_table(per_dataset, 4), "",
        *_renorm_section(ablation, sft, matched, p),
        *_critic_section(th, rounds),
        "## Policies (mean over seeds)", "", markdown_table(pol, 4), "",
        "## Round-0 pseudo-anomalies (θ0 samples)", "", markdown_table(gen, 4), "",
    ]
    figures = {"rounds": plots.rounds_figure(rounds, p.self_play.f), "auroc": plots.auroc_figure(methods),
               "c2st": plots.c2st_figure(al)}
    timing_rows, timing_body = _timings(timings, speed)
    auc = th.pivot_table(index=["dataset", "seed"], columns="method", values="auroc")
    dvc = {"auroc_dispat": float(auc["dispat"].mean()), "auroc_anollm_matched": float(auc["anollm_matched"].mean()),
           "auroc_anollm_sft": float(auc["anollm_sft"].mean()),
           "c2st_theta0": float(al["c2st_theta0"].mean()), "c2st_thetaT": float(al["c2st_thetaT"].mean())}
    thresholds = th[["dataset", "seed", "method", "threshold"]].rename(columns={"threshold": "value"})
    thresholds.insert(0, "name", "alpha_quantile")
    return Report(claims=claims, body="\n".join(body), figures=figures, metrics=_metric_rows(th, al, rounds, ablation),
                  dvc_metrics=dvc, thresholds=thresholds, timings=timing_rows, timing_body=timing_body)
