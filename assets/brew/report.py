"""BREW benchmark report content: pure pandas/matplotlib, no Dagster.

`build_report` turns the detections, calibrated thresholds and text tables into a Report
(claims, tables, figures, tidy rows); definitions.py publishes it.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from assets.brew import benchmark, data, plots
from assets.brew.bch import make_code
from assets.brew.params import BrewParams
from assets.common.report import Report, markdown_table

RECONSTRUCTION = (
    "**The BREW detector rule is a reconstruction** (the paper's method section was not "
    "available): estimation on the even received positions (E), verification on the odd ones (W); "
    "block j of L tokens carries codeword bit j mod n at any length; windows anchored at j·L·T'/T0 "
    "for an original length T0 (the received length itself, or a whole number of cycles within "
    "±25 % net edits, whichever reading agrees best with E), block votes on E, "
    "errors-and-erasures BCH decoding; per-block window shifting (every block boundary moves by "
    "at most S tokens to agree with the first estimate on E), votes again on the shifted windows, "
    "then soft/hard designated verification on unused (prev, token) pairs of W with an exact "
    "binomial null (one test: the windows are chosen on E), accepted only when the W block votes "
    "also lie within the code's correction radius of the designated codeword (so a watermarked "
    "text read with a wrong codeword is rejected). The global-shift reading (one shift "
    "for the whole text, Bonferroni over 2S+1 shifts) is kept as brew_global_S*. vote_mode, "
    "verify_mode and sync are configurable. The word-level LM hides the implicit "
    "insertions/deletions that synonym substitution causes under BPE tokenization.")


def shift_table(scored: pd.DataFrame, attacks: list[str]) -> pd.DataFrame:
    """Exact-message TPR per attack (rows) and detector × shift range (columns), pooled."""
    pos = scored[(scored["role"] == "positive") & scored["method"].str.startswith("brew_")
                 & scored["attack"].isin(attacks)]
    table = pos.pivot_table(index="attack", columns="method", values="exact", aggfunc="mean")
    order = [m for m in benchmark.BREW_METHODS if m in table.columns and m != "brew_hard_S4"]
    return table[order].rename(columns=lambda m: m.replace("brew_soft_", "per-block ").replace(
        "brew_global_", "global ")).reset_index()


def shift_effect(scored: pd.DataFrame, attacks: list[str], shift: int = 4) -> pd.DataFrame:
    """What per-block window shifting changes, per attack: mean verification score
    (-log10 p) at S = 0 and S = shift, and the texts whose message or decision differs."""
    pos = scored[scored["role"] == "positive"]
    rows = []
    for attack in attacks:
        keys = ["seed", "text_id"]
        a = pos[(pos["attack"] == attack) & (pos["method"] == "brew_soft_S0")].set_index(keys)
        b = pos[(pos["attack"] == attack) & (pos["method"] == f"brew_soft_S{shift}")].set_index(keys)
        common = a.index.intersection(b.index)
        if not len(common):
            continue
        a, b = a.loc[common], b.loc[common]
        rows.append({"attack": attack, "texts": len(common), "exact S=0": a["exact"].mean(),
                     f"exact S={shift}": b["exact"].mean(),
                     "mean -log10 p, S=0": np.mean(np.minimum(a["score"].to_numpy(float), 300)),
                     f"mean -log10 p, S={shift}": np.mean(np.minimum(b["score"].to_numpy(float), 300)),
                     "message differs": int((a["message"] != b["message"]).sum()),
                     "decision differs": int((a["accepted"] != b["accepted"]).sum())})
    return pd.DataFrame(rows)


def synonym_cut_section(scored: pd.DataFrame, synonym_table: pd.DataFrame, human_texts: pd.DataFrame,
                        attack_realism: dict[str, Any], params: BrewParams) -> list[str]:
    """syn10 with the configured MiniLM cut next to the spec's 0.75: coverage, realism, TPRs."""
    strict = benchmark.STRICT_SYNONYM_ATTACK
    if strict not in set(scored["attack"]):
        return ["## Synonym cut", "", f"{strict} is not configured at this profile.", ""]
    stop = data.stopwords()
    tokens = [t.split(" ") for t in human_texts["tokens"]]
    strict_cut = data.ATTACK_MIN_COSINE[strict]
    cuts = {benchmark.MAIN_ATTACK: (params.minilm_min_cosine, synonym_table),
            strict: (strict_cut, data.synonym_subtable(synonym_table, strict_cut))}
    methods = (benchmark.MAIN_METHOD, "brew_hard_S4", "ecc_decode", "ecc_thr_errors", "ecc_thr_margin")
    rows = []
    for attack, (cut, table) in cuts.items():
        cov = data.synonym_coverage(tokens, table, stop)
        real = attack_realism.get("by_attack", {}).get(attack, {})
        row = {"attack": attack, "MiniLM cosine >=": cut, "pairs": len(table),
               "content coverage": round(cov["content_coverage"], 3), "reachable rate": round(cov["reachable_rate"], 3),
               "sentence cosine (MiniLM)": round(real.get("mean_sentence_cosine", float("nan")), 3)}
        for m in methods:
            column = "exact" if m.startswith("brew") or m == "ecc_decode" else "exact_cal"
            row[f"{m} TPR"] = round(benchmark.pooled(scored, "positive", m, column, attack)[0], 3)
        rows.append(row)
    bound = params.min_content_coverage
    strict_cov = rows[1]["content coverage"]
    return [
        "## Synonym cut: the configured cosine and the spec's 0.75", "",
        markdown_table(pd.DataFrame(rows)), "",
        f"The claims use the configured cut (cosine ≥ {params.minilm_min_cosine:g}, attack {benchmark.MAIN_ATTACK}). "
        f"At the spec's 0.75 the table covers {strict_cov:.1%} of human content tokens, "
        + ("below" if strict_cov < bound else "above")
        + f" the spec's {bound:.0%} coverage gate (its guard against an attack concentrated on a few words), "
        f"which is why the cut was lowered; {strict} runs the same 10% attack from the 0.75 table through "
        "the same realized-rate gate (and reachability check), so both results are shown. A substitution "
        "re-draws the partition bit of the substituted token and of the next one whatever the synonym's "
        "quality, so the watermark sees the same damage at both cuts; the cut changes only which positions "
        "can be hit. The ECC thresholded columns use the thresholds calibrated at FPR 0.02.", ""]


def build_report(detections: pd.DataFrame, calibrated_thresholds: pd.DataFrame, codebook: dict[str, Any],
                 attacked_texts: pd.DataFrame, attack_realism: dict[str, Any], synonym_table: pd.DataFrame,
                 params: BrewParams, base_seed: int, human_texts: pd.DataFrame | None = None) -> Report:
    from assets.common.claims import seeds_label

    code = make_code(codebook["code"])
    scored = benchmark.add_calibrated(detections, calibrated_thresholds)
    summary_long = benchmark.summary_rows(scored, code.k)
    claims = benchmark.evaluate_claims(scored, code, params.claim_min_texts, seeds=seeds_label(params.seeds))
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
    fit = detections[detections["role"] == "human_calibration"]
    brew_texts = int((pos["method"] == benchmark.MAIN_METHOD).sum() // max(1, len(params.attacks)))
    shift_attacks = [a for a in ("none", "syn10", "ins5", "ins5_burst", "del5") if a in set(pos["attack"])]
    body = [
        "## Setup", "",
        f"{code.name}, L = {codebook['block_length']}, T = {codebook['text_length']} tokens, γ = {codebook['gamma']}, "
        f"δ = {codebook['delta']} (dev hit rates {codebook['dev_hit_rates']}), α = {codebook['alpha']}, "
        f"vote_mode = {codebook['vote_mode']}, verify_mode (main) = {codebook['verify_mode']}. "
        f"Seeds {list(params.seeds)}; {brew_texts} BREW texts; human negatives in two document-disjoint "
        f"halves: thresholds fitted on {fit['text_id'].nunique()} calibration windows × keys = "
        f"{int((fit['method'] == benchmark.MAIN_METHOD).sum())} trials, every FPR scored on "
        f"{human['text_id'].nunique()} other windows × keys = {int((human['method'] == benchmark.MAIN_METHOD).sum())} "
        "trials (check calibration_disjoint).", "",
        RECONSTRUCTION, "",
        "## Window shifting: per-block re-synchronisation vs one global shift", "",
        "Exact-message TPR (analytic rule) per shift range S. Per-block S = 0 is the anchored grid "
        "without window shifting; global S = 0 is the fixed grid jL (no re-synchronisation at all); "
        "the two coincide when the text length is unchanged.", "",
        markdown_table(shift_table(scored, shift_attacks)), "",
        "What the per-block shift changes (S = 0 vs S = 4, same texts): the message is fixed by stage (i)'s "
        "decoding on the anchored windows (the shifts follow that estimate), so the shift can only sharpen a "
        "verification whose p-value is usually far below α.", "",
        markdown_table(shift_effect(scored, shift_attacks)), "",
        "## TPR per attack (pooled over seeds)", "", markdown_table(tpr_table), "",
        "## FPR on negatives (analytic rule and calibrated threshold)", "",
        "Role human = the scored half of the human windows; human_calibration = the half the thresholds "
        "were fitted on (its fpr_cal is in-sample).", "", markdown_table(fpr_table), "",
        "## Calibrated thresholds (calibration half of the human windows, FPR 0.02)", "",
        markdown_table(calibrated_thresholds.drop(columns=["calibration_ids_md5"], errors="ignore")), "",
        "## Realized attack rates", "", markdown_table(realized), "",
        "## Synonym realism", "",
        f"{len(synonym_table)} synonym pairs ({synonym_table['source'].value_counts().to_dict()}). "
        f"MiniLM cosine between original and syn10-attacked sentences: mean "
        f"{attack_realism['mean_sentence_cosine']:.3f}, min {attack_realism['min_sentence_cosine']:.3f} over "
        f"{attack_realism['changed_sentences']} changed sentences.", "",
        markdown_table(pd.DataFrame(attack_realism["examples"])) if attack_realism["examples"] else "(no examples)", "",
    ]
    if human_texts is not None:
        body += synonym_cut_section(scored, synonym_table, human_texts, attack_realism, params)
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
