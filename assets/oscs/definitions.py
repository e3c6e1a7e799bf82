"""OSCS as Dagster assets: wiring only; the method lives in method.py / benchmark.py.

    benign_corpus ─┬─> detector_lm ─┐
                   ├─> malicious_pool ─┤
                   │                   v
                   └────────────> detector_scores ─┬─> benign_density ─┐
                                                    └─> streams <───────┘ (leakage gate)
                                                          v
                         gaussian_suite ──────────> decisions ─> benchmark_report ─> claims
"""

import time
from dataclasses import replace

import dagster as dg
import numpy as np
import pandas as pd

from assets.common.checks import check_result, claim_checks, gate
from assets.common.gensim_text import gensim_text_bytes
from assets.common.lm_checkpoint import load_ngram_checkpoint, save_ngram_checkpoint
from assets.common.ngram import KneserNeyTrigram, tokenize
from assets.common.report import claims_payload, markdown_table, publish_report
from assets.oscs import benchmark, data, detectors, streams
from assets.oscs import method as M
from assets.oscs import plots
from resources.artifacts import ArtifactsResource
from resources.compute import ComputeResource
from resources.quality import expect, gx_check_result, validate_frame
from resources.versioning import bytes_md5, provenance

SLUG = "oscs"
MIN_CALIBRATION = 200
PI1_TOLERANCE = 0.02


def key(name: str) -> dg.AssetKey:
    return dg.AssetKey([SLUG, name])


def _oscs_config(params: dict) -> M.OSCSConfig:
    return M.OSCSConfig(burn_in=int(params["burn_in"]), grid_size=int(params["grid_size"]))


# ------------------------------------------------------------------------------ datasets
@dg.asset(key=key("benign_corpus"), group_name=SLUG, kinds={"pandas"},
          description="Benign sentences from gensim's bundled corpora (lee_background, lee, "
                      "pang_lee_polarity), split by document into lm / calib / stream.")
def benign_corpus(context: dg.AssetExecutionContext, compute: ComputeResource) -> pd.DataFrame:
    frame = data.load_benign_sentences()
    frame = data.split_by_document(frame, seed=compute.seed_for(SLUG, "split"))
    source_md5 = {name: bytes_md5(gensim_text_bytes(name))
                  for name in ("lee_background.cor", "lee.cor", "pang_lee_polarity.cor")}
    counts = frame["split"].value_counts().to_dict()
    context.log.info(f"benign sentences per split: {counts}")
    context.add_output_metadata({**{f"rows_{k}": int(v) for k, v in counts.items()},
                                 "source_md5": dg.MetadataValue.json(source_md5),
                                 **provenance(SLUG, compute.profile)})
    return frame


@dg.asset(key=key("detector_lm"), group_name=SLUG, kinds={"numpy", "torch"},
          description="Checkpoint: Kneser–Ney trigram LM fitted on the lm split (detector "
                      "backbone); state_dict of count tables + JSON sidecar with vocabulary.")
def detector_lm(context: dg.AssetExecutionContext, benign_corpus: pd.DataFrame,
                compute: ComputeResource, artifacts: ArtifactsResource) -> dict:
    params = compute.params(SLUG)
    train = benign_corpus[benign_corpus["split"] == "lm"]["text"].map(tokenize).tolist()
    heldout = benign_corpus[benign_corpus["split"] == "calib"]["text"].map(tokenize).tolist()
    lm = KneserNeyTrigram().fit(train, min_count=int(params["lm_min_count"]))
    perplexity = float(lm.perplexity(heldout))
    saved = save_ngram_checkpoint(artifacts.checkpoint_path(SLUG, "detector_lm"), lm,
                                  {"train_sentences": len(train), "heldout_perplexity": perplexity,
                                   **provenance(SLUG, compute.profile)})
    context.log.info(f"KN trigram: |V|={saved['vocab_size']}, held-out perplexity {perplexity:.1f}")
    context.add_output_metadata({"vocab_size": saved["vocab_size"], "heldout_perplexity": perplexity,
                                 "checkpoint_md5": saved["md5"]})
    return {"checkpoint": saved["checkpoint"], "vocab_size": saved["vocab_size"],
            "heldout_perplexity": perplexity}


load_detector_lm = load_ngram_checkpoint


@dg.asset(key=key("malicious_pool"), group_name=SLUG, kinds={"pandas"},
          description="Malicious inputs: four attack families (rare-word triggers, inserted "
                      "sentence, random suffix, fluent preamble) built on stream-split sentences.")
def malicious_pool(context: dg.AssetExecutionContext, benign_corpus: pd.DataFrame,
                   compute: ComputeResource) -> pd.DataFrame:
    params = compute.params(SLUG)
    carriers = benign_corpus[benign_corpus["split"] == "stream"].reset_index(drop=True)
    parts = []
    for attack in data.ATTACKS:
        pool = data.make_malicious(carriers["text"].tolist(), attack, int(params["sentences_per_attack"]),
                                   seed=compute.seed_for(SLUG, "attack", attack))
        pool["doc_id"] = carriers["doc_id"].to_numpy()[pool["source_index"].to_numpy()]
        parts.append(pool)
    frame = pd.concat(parts, ignore_index=True)
    context.add_output_metadata({"rows_per_attack": dg.MetadataValue.json(
        frame["attack"].value_counts().sort_index().to_dict())})
    return frame


# ------------------------------------------------------------------------------ annotations
@dg.asset(key=key("detector_scores"), group_name=SLUG, kinds={"pandas"},
          description="Annotation: each detector's score (higher = more suspicious) for every "
                      "calibration, stream and malicious sentence, with the hidden label.")
def detector_scores(context: dg.AssetExecutionContext, benign_corpus: pd.DataFrame,
                    malicious_pool: pd.DataFrame, detector_lm: dict) -> pd.DataFrame:
    lm = load_detector_lm(detector_lm)
    benign = benign_corpus[benign_corpus["split"].isin(["calib", "stream"])]
    items = pd.concat([
        pd.DataFrame({"role": benign["split"].to_numpy(), "attack": "benign", "label": 0,
                      "doc_id": benign["doc_id"].to_numpy(), "text": benign["text"].to_numpy()}),
        pd.DataFrame({"role": "attack", "attack": malicious_pool["attack"].to_numpy(), "label": 1,
                      "doc_id": malicious_pool["doc_id"].to_numpy(),
                      "text": malicious_pool["text"].to_numpy()}),
    ], ignore_index=True)
    items.insert(0, "item_id", np.arange(len(items), dtype=np.int64))
    frames = []
    for detector in detectors.DETECTORS:
        start = time.monotonic()
        scores = detectors.score_texts(lm, items["text"].tolist(), detector)
        context.log.info(f"{detector}: scored {len(items)} sentences in {time.monotonic() - start:.1f} s")
        frames.append(items.drop(columns="text").assign(detector=detector, score=scores))
    frame = pd.concat(frames, ignore_index=True)
    frame["label"] = frame["label"].astype(np.int8)
    medians = frame.groupby(["detector", "attack"])["score"].median().unstack("attack").round(3)
    context.add_output_metadata({"median_scores": dg.MetadataValue.md(
        markdown_table(medians.reset_index()))})
    return frame


@dg.asset(key=key("benign_density"), group_name=SLUG, kinds={"numpy"},
          description="Calibrated reference: m benign calibration scores per detector (the only "
                      "data OSCS may use besides the stream), Silverman bandwidth, B1 threshold.")
def benign_density(context: dg.AssetExecutionContext, detector_scores: pd.DataFrame,
                   compute: ComputeResource) -> dict:
    params = compute.params(SLUG)
    out = {}
    for detector, group in detector_scores[detector_scores["role"] == "calib"].groupby("detector"):
        rng = compute.rng(SLUG, "calibration", detector)
        size = min(int(params["calibration_size"]), len(group))
        chosen = group.iloc[np.sort(rng.choice(len(group), size=size, replace=False))]
        scores = chosen["score"].to_numpy(dtype=float)
        out[detector] = {"scores": scores.tolist(), "item_ids": chosen["item_id"].tolist(),
                         "doc_ids": sorted(set(chosen["doc_id"])),
                         "bandwidth": M.silverman_bandwidth(scores) if size > 1 else float("nan"),
                         "fixed_threshold_q95": float(np.quantile(scores, 0.95)) if size else float("nan")}
        context.log.info(f"{detector}: {size} calibration scores, q95 {out[detector]['fixed_threshold_q95']:.3f}")
    return {"detectors": out, "logit": False}


@dg.asset(key=key("streams"), group_name=SLUG, kinds={"pandas"},
          description="Dataset: ordered test streams (t, score, hidden label, attack) for every "
                      "detector × scenario × seed, sampled from the stream split and the attack pool.")
def streams_asset(context: dg.AssetExecutionContext, detector_scores: pd.DataFrame,
                  compute: ComputeResource) -> pd.DataFrame:
    params = compute.params(SLUG)
    T = int(params["stream_length"])
    frames = []
    for detector, scored in detector_scores.groupby("detector"):
        benign = scored[scored["role"] == "stream"].reset_index(drop=True)
        attacks = {a: g.reset_index(drop=True) for a, g in scored[scored["role"] == "attack"].groupby("attack")}
        for scenario in params["scenarios"]:
            for seed in params["seeds"]:
                # same seed for every detector: the same sentences arrive in the same order
                stream = streams.build_stream(benign["score"].to_numpy(),
                                              {a: g["score"].to_numpy() for a, g in attacks.items()},
                                              scenario, T, seed=compute.seed_for(SLUG, "stream", scenario, seed))
                pools = {"benign": benign, **attacks}
                stream["item_id"] = [int(pools[a]["item_id"].iat[i]) for a, i in zip(stream["attack"], stream["pool_index"])]
                stream["doc_id"] = [pools[a]["doc_id"].iat[i] for a, i in zip(stream["attack"], stream["pool_index"])]
                frames.append(stream.drop(columns="pool_index").assign(detector=detector, scenario=scenario,
                                                                       seed=int(seed)))
    frame = pd.concat(frames, ignore_index=True)
    context.log.info(f"{len(frames)} streams of length {T}")
    return frame


# ------------------------------------------------------------------------------ decisions
@dg.asset(key=key("decisions"), group_name=SLUG, kinds={"numpy"},
          description="Online decisions of OSCS (KDE and Newton variants) and the baselines "
                      "B1–B5 on every stream and α, with OSCS's m̂_t and π̂0_t traces (wide: one "
                      "row per step).")
def decisions(context: dg.AssetExecutionContext, streams: pd.DataFrame, benign_density: dict,
              detector_scores: pd.DataFrame, compute: ComputeResource) -> pd.DataFrame:
    params = compute.params(SLUG)
    config = _oscs_config(params)
    groups = list(streams.groupby(["detector", "scenario", "seed"], sort=True))
    frames, start = [], time.monotonic()
    for index, ((detector, scenario, seed), stream) in enumerate(groups, 1):
        calib = np.asarray(benign_density["detectors"][detector]["scores"])
        m_true = benchmark.text_oracle_posterior(detector_scores, detector, scenario, stream["score"].to_numpy(),
                                   int(params["stream_length"]))
        for alpha in params["alphas"]:
            out = benchmark.decide_all(stream["score"].to_numpy(), calib, float(alpha), m_true, config)
            wide = stream[["detector", "scenario", "seed", "t", "label", "attack"]].copy()
            wide["alpha"] = float(alpha)
            for method, trace in out.items():
                wide[method] = trace["decision"]
            for method in ("oscs", "oscs_newton"):
                wide[f"{method}_m_hat"] = out[method]["m_hat"].astype(np.float32)
                wide[f"{method}_pi0_hat"] = out[method]["pi0_hat"].astype(np.float32)
            frames.append(wide)
        elapsed = time.monotonic() - start
        context.log.info(f"[{index}/{len(groups)}] {detector}/{scenario}/seed {seed} done "
                         f"({elapsed:.0f} s, ~{elapsed / index * (len(groups) - index):.0f} s left)")
    return pd.concat(frames, ignore_index=True)


@dg.asset(key=key("gaussian_suite"), group_name=SLUG, kinds={"numpy"},
          description="Parametric suite f0=N(0,1), f1=N(μ,1): every method's FAR/TAR where the "
                      "oracle rule has a closed form.")
def gaussian_suite(context: dg.AssetExecutionContext, compute: ComputeResource) -> pd.DataFrame:
    params = compute.params(SLUG)
    g = params["gaussian"]
    start = time.monotonic()
    rows = benchmark.gaussian_suite(list(g["mus"]), float(g["pi1"]), int(g["stream_length"]),
                                    int(g["calibration_size"]), list(g["seeds"]),
                                    list(params["alphas"]), _oscs_config(params))
    context.log.info(f"Gaussian suite: {len(rows)} rows in {time.monotonic() - start:.0f} s")
    return rows


# ------------------------------------------------------------------------------ report
@dg.asset(key=key("benchmark_report"), group_name=SLUG, kinds={"duckdb", "markdown"},
          description="OSCS vs B1–B5 over seeds: realized FAR (both readings) and TAR per "
                      "scenario → warehouse rows, REPORT.md with plots, metrics.json, claims.")
def benchmark_report(context: dg.AssetExecutionContext, decisions: pd.DataFrame,
                     gaussian_suite: pd.DataFrame, benign_density: dict, detector_scores: pd.DataFrame,
                     compute: ComputeResource, artifacts: ArtifactsResource) -> dict:
    params = compute.params(SLUG)
    results = benchmark.stream_metrics(decisions, int(params["burn_in"]), int(params["short_horizon"]))
    claims = benchmark.evaluate_claims(results, gaussian_suite)
    for c in claims:
        context.log.info(f"claim {c.claim_id}: {'holds' if c.holds else 'DOES NOT HOLD'} — {c.measured_value}")

    summary = (results[results["metric"].isin(["far_selected", "far_malicious", "tar"])]
               .groupby(["detector", "scenario", "alpha", "method", "metric"])["value"].mean()
               .unstack("metric").reset_index())
    separation = benchmark.separation_table(detector_scores)
    pi0 = (results[results["metric"].isin(["pi0_hat_final", "pi0_true"])
                   & results["scenario"].isin(streams.STATIONARY_SCENARIOS)]
           .groupby(["detector", "scenario", "method", "metric"])["value"].mean().unstack("metric")
           .reset_index())
    body = ["## Reading the results", "",
            "OSCS only sees the benign calibration scores and the unlabeled stream. It can control "
            "the FAR of the accepted set only if the stream's score distribution reveals how many "
            "malicious inputs there are (π0) and where they sit. The two tables below measure that: "
            "an attack whose AUC is near 0.5 (or below) is invisible to the detector, the Storey "
            "estimate π̂0 then drifts toward 1, the estimated posterior m̂ is too small and "
            "accepted malicious inputs exceed α. Any FAR claim red on the text streams is therefore "
            "read against the detector separation, not hidden; the Gaussian suite isolates the "
            "statistical layer where the two-group model is identifiable.", "",
            "### Detector separation (AUC of malicious vs benign stream sentences)", "",
            markdown_table(separation), "",
            "### π̂0 at the end of the stream vs the truth (stationary scenarios, mean over seeds)", "",
            markdown_table(pi0), "",
            "## Mean over seeds (text streams)", "",
            "far_selected = malicious among accepted (the paper's FAR); far_malicious = accepted "
            "among malicious; tar = benign accepted.", "", markdown_table(summary), "",
            "## Gaussian suite (mean over seeds)", "",
            markdown_table(gaussian_suite[gaussian_suite["metric"].isin(["far_selected", "tar"])]
                           .groupby(["mu", "alpha", "method", "metric"])["value"].mean()
                           .unstack("metric").reset_index()), ""]
    metric_rows = pd.concat([
        results.assign(asset="oscs/decisions", dataset=lambda d: d["detector"] + "/" + d["scenario"],
                       partition=lambda d: "alpha=" + d["alpha"].astype(str)),
        gaussian_suite.assign(asset="oscs/gaussian_suite", dataset=lambda d: "gaussian/mu=" + d["mu"].astype(str),
                              partition=lambda d: "alpha=" + d["alpha"].astype(str)),
    ], ignore_index=True)[["asset", "partition", "seed", "dataset", "method", "metric", "value"]]
    thresholds = pd.DataFrame([{"name": "fixed_threshold_q95", "seed": compute.base_seed, "dataset": det,
                                "method": "fixed_threshold", "value": v["fixed_threshold_q95"]}
                               for det, v in benign_density["detectors"].items()])
    figures = {"far_by_scenario": plots.far_by_scenario(summary),
               "far_over_time": plots.far_over_time(decisions),
               "pi0_trace": plots.pi0_trace(decisions),
               "gaussian_power": plots.gaussian_power(gaussian_suite)}
    stationary = summary[summary["scenario"].isin(streams.STATIONARY_SCENARIOS)]
    dvc_metrics = {
        "claims_holding": int(sum(c.holds for c in claims)), "claims_total": len(claims),
        "stationary_mean": {f"{m}@alpha={a:g}": {"far_selected": float(g["far_selected"].mean()),
                                                  "tar": float(g["tar"].mean())}
                            for (m, a), g in stationary.groupby(["method", "alpha"])},
    }
    metadata = publish_report(slug=SLUG, profile=compute.profile, run_id=context.run_id,
                              report_dir=artifacts.report_dir(SLUG), metrics_rows=metric_rows,
                              claims=claims, body_markdown="\n".join(body), figures=figures,
                              dvc_metrics=dvc_metrics, thresholds_rows=thresholds)
    context.add_output_metadata(metadata)
    return claims_payload(claims, compute.profile)


# ------------------------------------------------------------------------------ checks
def _split_leakage(frame: pd.DataFrame) -> dg.AssetCheckResult:
    owners = frame.groupby("doc_id")["split"].nunique()
    leaked = owners[owners > 1].index.tolist()
    return check_result(not leaked, f"{len(leaked)} documents appear in more than one split"
                        if leaked else "every document lies in exactly one split", leaked_docs=leaked[:20])


def _corpus_schema(frame: pd.DataFrame) -> dg.AssetCheckResult:
    result = validate_frame(frame, [
        expect("ExpectColumnValuesToNotBeNull", column="text"),
        expect("ExpectColumnValueLengthsToBeBetween", column="text", min_value=1),
        expect("ExpectColumnValuesToBeInSet", column="split", value_set=["lm", "calib", "stream"]),
        # every split present: an empty calibration (or stream) split stops the graph here
        expect("ExpectColumnDistinctValuesToEqualSet", column="split", value_set=["lm", "calib", "stream"]),
        expect("ExpectColumnValuesToBeInSet", column="source", value_set=["lee", "pang_lee"]),
        expect("ExpectTableRowCountToBeBetween", min_value=1000),
    ], name="oscs_benign_corpus")
    return gx_check_result(result)


def _lm_loads_back(value: dict) -> dg.AssetCheckResult:
    lm = load_detector_lm(value)
    ppl = float(value["heldout_perplexity"])
    probe = lm.token_logprobs(tokenize("the government said on monday that talks would continue ."))
    ok = np.isfinite(ppl) and 1.0 < ppl < value["vocab_size"] and bool(np.isfinite(probe).all())
    return check_result(ok, f"reloaded with weights_only; held-out perplexity {ppl:.1f} "
                        f"(must be finite and < |V| = {value['vocab_size']})", heldout_perplexity=ppl)


def _pool_complete(frame: pd.DataFrame) -> dg.AssetCheckResult:
    result = validate_frame(frame, [
        expect("ExpectColumnValuesToNotBeNull", column="text"),
        expect("ExpectColumnValuesToBeInSet", column="attack", value_set=list(data.ATTACKS)),
        expect("ExpectColumnDistinctValuesToEqualSet", column="attack", value_set=list(data.ATTACKS)),
    ], name="oscs_malicious_pool")
    return gx_check_result(result)


def _scores_valid(frame: pd.DataFrame) -> dg.AssetCheckResult:
    bad = frame[~np.isfinite(frame["score"].to_numpy(dtype=float))]
    if len(bad):
        return check_result(False, f"{len(bad)} non-finite detector scores (detectors "
                            f"{sorted(bad['detector'].unique())}, item_ids {bad['item_id'].head(10).tolist()})")
    medians = frame.groupby(["detector", "label"])["score"].median().unstack("label")
    direction = {d: bool(r[0] < r[1]) for d, r in medians.iterrows()}
    n_calib = int((frame["role"] == "calib").sum() / max(1, frame["detector"].nunique()))
    ok = any(direction.values()) and n_calib >= MIN_CALIBRATION
    return check_result(ok, f"scores finite; benign median < malicious median for {direction}; "
                        f"{n_calib} calibration rows (need ≥ {MIN_CALIBRATION})",
                        direction=direction, calibration_rows=n_calib)


def _calibration_usable(value: dict) -> dg.AssetCheckResult:
    problems = []
    for detector, d in value["detectors"].items():
        scores = np.asarray(d["scores"], dtype=float)
        if scores.size == 0:
            problems.append(f"{detector}: empty calibration set")
        elif scores.size < MIN_CALIBRATION:
            problems.append(f"{detector}: {scores.size} calibration scores < {MIN_CALIBRATION}")
        if scores.size and not np.isfinite(scores).all():
            problems.append(f"{detector}: non-finite calibration scores")
    if not value["detectors"]:
        problems.append("no detector has a calibration set")
    return check_result(not problems, "; ".join(problems) or "calibration sets non-empty, finite, large enough")


def _streams_valid(frame: pd.DataFrame, benign_density: dict) -> dg.AssetCheckResult:
    problems = []
    scores = frame["score"].to_numpy(dtype=float)
    if not np.isfinite(scores).all():
        bad = frame[~np.isfinite(scores)]
        problems.append(f"{len(bad)} non-finite stream scores (first at "
                        f"{bad[['detector', 'scenario', 'seed', 't']].head(3).to_dict('records')})")
    for (scenario, seed, detector), g in frame.groupby(["scenario", "seed", "detector"]):
        target = streams.scenario_target_pi1(scenario, len(g))
        if abs(g["label"].mean() - target) > PI1_TOLERANCE:
            problems.append(f"{detector}/{scenario}/seed {seed}: realized π1 {g['label'].mean():.3f} "
                            f"vs target {target:.3f}")
    for detector, d in benign_density["detectors"].items():
        stream = frame[frame["detector"] == detector]
        overlap_docs = set(d["doc_ids"]) & set(stream["doc_id"])
        overlap_items = set(d["item_ids"]) & set(stream["item_id"])
        if overlap_docs or overlap_items:
            problems.append(f"{detector}: calibration overlaps the stream ({len(overlap_items)} items, "
                            f"{len(overlap_docs)} documents, e.g. {sorted(overlap_docs)[:3]})")
    return check_result(not problems, "; ".join(problems[:10]) or
                        "scores finite, π1 on target, calibration disjoint from the stream",
                        problems=len(problems))


def _decisions_causal(frame: pd.DataFrame, streams: pd.DataFrame, benign_density: dict,
                      compute: ComputeResource) -> dg.AssetCheckResult:
    """Decisions are binary and online: OSCS re-run on the first half of one stream per
    detector (a prefix it could have seen) decides exactly as it did on the whole stream."""
    if not np.isin(frame[list(benchmark.METHODS)].to_numpy(), (0, 1)).all():
        return check_result(False, "decisions outside {0, 1}")
    config = _oscs_config(compute.params(SLUG))
    checked, mismatches = 0, []
    for detector, runs in frame.groupby("detector"):
        run_key = runs[["scenario", "seed", "alpha"]].iloc[0]
        run = runs[(runs["scenario"] == run_key["scenario"]) & (runs["seed"] == run_key["seed"])
                   & (runs["alpha"] == run_key["alpha"])]
        stream = streams[(streams["detector"] == detector) & (streams["scenario"] == run_key["scenario"])
                         & (streams["seed"] == run_key["seed"])].sort_values("t")
        half = len(stream) // 2
        calib = np.asarray(benign_density["detectors"][detector]["scores"])
        for variant, estimator in (("oscs", "kde"), ("oscs_newton", "newton")):
            prefix = M.run_oscs(stream["score"].to_numpy()[:half], calib,
                                replace(config, alpha=float(run_key["alpha"]), estimator=estimator))
            checked += 1
            if not np.array_equal(prefix["decision"], run[variant].to_numpy()[:half]):
                mismatches.append(f"{variant}/{detector}/{run_key['scenario']}")
    return check_result(not mismatches, f"prefix re-runs differ: {mismatches}" if mismatches else
                        f"{checked} prefix re-runs decide identically (no look-ahead)")


assets = [benign_corpus, detector_lm, malicious_pool, detector_scores, benign_density, streams_asset,
          decisions, gaussian_suite, benchmark_report]
REPORT_KEY = benchmark_report.key
CLAIM_IDS = ["far_control", "vanishing_excess", "fixed_threshold_fails", "power_vs_oracle"]

asset_checks = [
    gate(SLUG, benign_corpus, "schema", "GX: non-empty text, all three splits present, known source labels, ≥ 1000 rows.",
         _corpus_schema),
    gate(SLUG, benign_corpus, "no_document_leakage", "No document lies in two splits.", _split_leakage),
    gate(SLUG, detector_lm, "loads_back", "Checkpoint reloads (weights_only), finite, sane perplexity.",
         _lm_loads_back),
    gate(SLUG, malicious_pool, "four_attack_families", "GX: every attack family present, text non-null.",
         _pool_complete),
    gate(SLUG, detector_scores, "finite_and_directed",
         "Scores finite; benign median < malicious median for ≥ 1 detector; ≥ 200 calibration rows.",
         _scores_valid),
    gate(SLUG, benign_density, "calibration_usable", "Calibration sets non-empty, finite, ≥ 200.",
         _calibration_usable),
    gate(SLUG, streams_asset, "finite_on_target_no_leakage",
         "Scores finite; realized π1 within ±0.02 of target; calibration disjoint from the stream.",
         _streams_valid, additional={"benign_density": benign_density.key}),
    gate(SLUG, decisions, "causal", "Binary decisions; OSCS prefix re-runs decide identically.",
         _decisions_causal, additional={"streams": streams_asset.key, "benign_density": benign_density.key},
         resources=("compute",)),
    *claim_checks(SLUG, benchmark_report, CLAIM_IDS),
]
assets = [benign_corpus, detector_lm, malicious_pool, detector_scores, benign_density, streams_asset,
          decisions, gaussian_suite, benchmark_report]
REPORT_KEY = benchmark_report.key
CLAIM_IDS = ["far_control", "vanishing_excess", "fixed_threshold_fails", "power_vs_oracle"]
