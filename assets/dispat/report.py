"""dispat benchmark report content: pure pandas/matplotlib, no Dagster."""
from __future__ import annotations

import pandas as pd

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


def _metric_rows(th: pd.DataFrame, al: pd.DataFrame, rounds: pd.DataFrame) -> pd.DataFrame:
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


def build_report(th: pd.DataFrame, scores: pd.DataFrame, al: pd.DataFrame, rounds: pd.DataFrame,
                 sft: pd.DataFrame, matched: pd.DataFrame, pseudo: pd.DataFrame, speed: pd.DataFrame | None,
                 p: DispatParams, timings: dict[str, pd.DataFrame | None]) -> Report:
    claims, tables = benchmark.build_claims(th, scores, al, speed, p, rounds)
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
    return Report(claims=claims, body="\n".join(body), figures=figures, metrics=_metric_rows(th, al, rounds),
                  dvc_metrics=dvc, thresholds=thresholds, timings=timing_rows, timing_body=timing_body)
