"""BREW benchmark report content: pure pandas/matplotlib, no Dagster.

`build_report` turns the detections, calibrated thresholds and text tables into a Report
(claims, tables, figures, tidy rows); definitions.py publishes it.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from assets.brew import benchmark, plots
from assets.brew.bch import make_code
from assets.brew.params import BrewParams
from assets.common.report import Report, markdown_table

RECONSTRUCTION = (
    "**The BREW detector rule is a reconstruction** (the paper's method section was not "
    "available): split-half block votes, errors-and-erasures BCH decoding, soft/hard verification "
    "on unused (prev, token) pairs with an exact binomial null and Bonferroni over 2S+1 shifts. "
    "vote_mode and verify_mode are configurable. The word-level LM hides the implicit "
    "insertions/deletions that synonym substitution causes under BPE tokenization.")


def build_report(detections: pd.DataFrame, calibrated_thresholds: pd.DataFrame, codebook: dict[str, Any],
                 attacked_texts: pd.DataFrame, attack_realism: dict[str, Any], synonym_table: pd.DataFrame,
                 params: BrewParams, base_seed: int) -> Report:
    code = make_code(codebook["code"])
    scored = benchmark.add_calibrated(detections, calibrated_thresholds)
    summary_long = benchmark.summary_rows(scored, code.k)
    claims = benchmark.evaluate_claims(scored, code, params.claim_min_texts)
    summary = summary_long.pivot_table(index=["seed", "role", "scheme", "attack", "method"], columns="metric",
                                       values="value").reset_index()
    pos = scored[scored["role"] == "positive"]
    tpr_table = (pos.groupby(["attack", "method"])[["exact", "accepted", "exact_cal"]].mean()
                 .rename(columns={"exact": "TPR exact (analytic rule)", "accepted": "accept rate",
                                  "exact_cal": "TPR exact @ cal. FPR 0.02"}).reset_index())
    fpr_table = (scored[scored["role"] != "positive"].groupby(["role", "method"])
                 .agg(fpr=("accepted", "mean"), fpr_cal=("accepted_cal", "mean"), n=("accepted", "size"))
                 .reset_index())
    realized = attacked_texts.groupby("attack")["realized_rate"].agg(["mean", "min", "max"]).reset_index()
    human = detections[detections["role"] == "human"]
    brew_texts = int((pos["method"] == benchmark.MAIN_METHOD).sum() // max(1, len(params.attacks)))
    body = [
        "## Setup", "",
        f"{code.name}, L = {codebook['block_length']}, T = {codebook['text_length']} tokens, γ = {codebook['gamma']}, "
        f"δ = {codebook['delta']} (dev hit rates {codebook['dev_hit_rates']}), α = {codebook['alpha']}, "
        f"vote_mode = {codebook['vote_mode']}, verify_mode (main) = {codebook['verify_mode']}. "
        f"Seeds {list(params.seeds)}; {brew_texts} BREW texts; human negatives: {human['text_id'].nunique()} "
        f"distinct windows × keys = {int((human['method'] == benchmark.MAIN_METHOD).sum())} trials.", "",
        RECONSTRUCTION, "",
        "## TPR per attack (pooled over seeds)", "", markdown_table(tpr_table), "",
        "## FPR on negatives (analytic rule and calibrated threshold)", "", markdown_table(fpr_table), "",
        "## Calibrated thresholds (human text, FPR 0.02)", "", markdown_table(calibrated_thresholds), "",
        "## Realized attack rates", "", markdown_table(realized), "",
        "## Synonym realism", "",
        f"{len(synonym_table)} synonym pairs ({synonym_table['source'].value_counts().to_dict()}). "
        f"MiniLM cosine between original and syn10-attacked sentences: mean "
        f"{attack_realism['mean_sentence_cosine']:.3f}, min {attack_realism['min_sentence_cosine']:.3f} over "
        f"{attack_realism['changed_sentences']} changed sentences.", "",
        markdown_table(pd.DataFrame(attack_realism["examples"])) if attack_realism["examples"] else "(no examples)", "",
    ]
    metric_rows = summary_long.assign(asset="brew/detections", partition=lambda d: "attack=" + d["attack"],
                                      dataset=lambda d: d["role"] + "/" + d["scheme"])
    thresholds = calibrated_thresholds.assign(name="score_threshold_fpr0.02", seed=base_seed,
                                              dataset="human", value=calibrated_thresholds["threshold"])
    thresholds = thresholds[np.isfinite(thresholds["value"].to_numpy(dtype=float))]
    figures = {"roc_syn10": plots.roc_curves(scored, "syn10"), "tpr_by_attack": plots.tpr_by_attack(summary),
               "shift_ablation": plots.shift_ablation(summary), "fpr_by_negative": plots.fpr_by_negative(summary)}
    main = tpr_table[tpr_table["method"] == benchmark.MAIN_METHOD].set_index("attack")
    dvc_metrics = {"brew_tpr_exact": {a: float(v) for a, v in main["TPR exact (analytic rule)"].items()},
                   "human_fpr": {m: float(v) for m, v in fpr_table[fpr_table["role"] == "human"]
                                 .set_index("method")["fpr"].items()}}
    return Report(claims=claims, body="\n".join(body), figures=figures, metrics=metric_rows, dvc_metrics=dvc_metrics,
                  thresholds=thresholds[["name", "seed", "dataset", "method", "value"]])
