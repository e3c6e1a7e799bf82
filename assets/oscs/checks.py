"""OSCS data-quality predicates: pure functions returning the problems found (empty = pass).

definitions.py turns each into a blocking Dagster check with assets/common/checks.gate; tests
call them directly on corrupted inputs.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from assets.common.findings import Finding, expectations, finding
from assets.common.ngram import tokenize
from assets.oscs import benchmark, data, streams
from assets.oscs import method as M
from assets.oscs.params import OSCSParams
from resources.quality import expect

MIN_CALIBRATION = 200     # benign calibration scores per detector
PI1_TOLERANCE = 0.02      # realized malicious fraction of a stream vs its scenario's target
SPLITS = ["lm", "calib", "stream"]


def oscs_config(params: OSCSParams) -> M.OSCSConfig:
    return M.OSCSConfig(burn_in=params.burn_in, grid_size=params.grid_size)


def corpus_schema(frame: pd.DataFrame) -> Finding:
    return expectations(frame, [
        expect("ExpectColumnValuesToNotBeNull", column="text"),
        expect("ExpectColumnValueLengthsToBeBetween", column="text", min_value=1),
        expect("ExpectColumnValuesToBeInSet", column="split", value_set=SPLITS),
        # every split present: an empty calibration (or stream) split stops the graph here
        expect("ExpectColumnDistinctValuesToEqualSet", column="split", value_set=SPLITS),
        expect("ExpectColumnValuesToBeInSet", column="source", value_set=["lee", "pang_lee"]),
        expect("ExpectTableRowCountToBeBetween", min_value=1000),
    ], name="oscs_benign_corpus")


def no_document_leakage(frame: pd.DataFrame) -> Finding:
    owners = frame.groupby("doc_id")["split"].nunique()
    leaked = owners[owners > 1].index.tolist()
    return finding([f"{len(leaked)} documents appear in more than one split (e.g. {leaked[:5]})"] if leaked else [],
                   ok="every document lies in exactly one split")


def lm_loads_back(value: dict) -> Finding:
    from assets.common.lm_checkpoint import load_ngram_checkpoint

    lm = load_ngram_checkpoint(value)
    ppl = float(value["heldout_perplexity"])
    probe = lm.token_logprobs(tokenize("the government said on monday that talks would continue ."))
    problems = []
    if not (np.isfinite(ppl) and 1.0 < ppl < value["vocab_size"]):
        problems.append(f"held-out perplexity {ppl:.1f} must be finite and in (1, |V| = {value['vocab_size']})")
    if not np.isfinite(probe).all():
        problems.append("reloaded LM gives non-finite log-probabilities")
    return finding(problems, ok=f"reloaded with weights_only; held-out perplexity {ppl:.1f}", heldout_perplexity=ppl)


def pool_complete(frame: pd.DataFrame) -> Finding:
    return expectations(frame, [
        expect("ExpectColumnValuesToNotBeNull", column="text"),
        expect("ExpectColumnValuesToBeInSet", column="attack", value_set=list(data.ATTACKS)),
        expect("ExpectColumnDistinctValuesToEqualSet", column="attack", value_set=list(data.ATTACKS)),
    ], name="oscs_malicious_pool")


def scores_finite_and_directed(frame: pd.DataFrame) -> Finding:
    scores = frame["score"].to_numpy(dtype=float)
    bad = frame[~np.isfinite(scores)]
    if len(bad):
        return finding([f"{len(bad)} non-finite detector scores (detectors {sorted(bad['detector'].unique())}, "
                        f"item_ids {bad['item_id'].head(10).tolist()})"])
    medians = frame.groupby(["detector", "label"])["score"].median().unstack("label")
    direction = {d: bool(r[0] < r[1]) for d, r in medians.iterrows()}
    n_calib = int((frame["role"] == "calib").sum() / max(1, frame["detector"].nunique()))
    problems = []
    if not any(direction.values()):
        problems.append(f"no detector has benign median < malicious median: {direction}")
    if n_calib < MIN_CALIBRATION:
        problems.append(f"{n_calib} calibration rows per detector (need ≥ {MIN_CALIBRATION})")
    return finding(problems, ok=f"scores finite; benign median < malicious median for {direction}; "
                   f"{n_calib} calibration rows", direction=direction, calibration_rows=n_calib)


def calibration_usable(value: dict) -> Finding:
    problems = [] if value["detectors"] else ["no detector has a calibration set"]
    for detector, d in value["detectors"].items():
        scores = np.asarray(d["scores"], dtype=float)
        if scores.size == 0:
            problems.append(f"{detector}: empty calibration set")
        elif scores.size < MIN_CALIBRATION:
            problems.append(f"{detector}: {scores.size} calibration scores < {MIN_CALIBRATION}")
        if scores.size and not np.isfinite(scores).all():
            problems.append(f"{detector}: non-finite calibration scores")
    return finding(problems, ok="calibration sets non-empty, finite, large enough")


def streams_valid(frame: pd.DataFrame, benign_density: dict) -> Finding:
    """Scores finite, realized π1 on target, calibration disjoint from the stream."""
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
    return finding(problems, ok="scores finite, π1 on target, calibration disjoint from the stream")


def decisions_causal(frame: pd.DataFrame, streams: pd.DataFrame, benign_density: dict,
                     params: OSCSParams) -> Finding:
    """Decisions are binary and online: OSCS re-run on the first half of one stream per
    detector (a prefix it could have seen) decides exactly as it did on the whole stream."""
    if not np.isin(frame[list(benchmark.METHODS)].to_numpy(), (0, 1)).all():
        return finding(["decisions outside {0, 1}"])
    config = oscs_config(params)
    checked, mismatches = 0, []
    for detector, runs in frame.groupby("detector"):
        run_key = runs[["scenario", "seed", "alpha"]].iloc[0]
        run = runs[(runs["scenario"] == run_key["scenario"]) & (runs["seed"] == run_key["seed"])
                   & (runs["alpha"] == run_key["alpha"])]
        stream = streams[(streams["detector"] == detector) & (streams["scenario"] == run_key["scenario"])
                         & (streams["seed"] == run_key["seed"])].sort_values("t")
        half = len(stream) // 2
        calib = np.asarray(benign_density["detectors"][detector]["scores"])
        for variant, estimator, pi0_estimator in benchmark.OSCS_VARIANTS:
            prefix = M.run_oscs(stream["score"].to_numpy()[:half], calib,
                                replace(config, alpha=float(run_key["alpha"]), estimator=estimator,
                                        pi0_estimator=pi0_estimator))
            checked += 1
            if not np.array_equal(prefix["decision"], run[variant].to_numpy()[:half]):
                mismatches.append(f"{variant}/{detector}/{run_key['scenario']}")
    return finding([f"prefix re-runs differ: {mismatches}"] if mismatches else [],
                   ok=f"{checked} prefix re-runs decide identically (no look-ahead)")


def embedding_reference_valid(value: dict) -> Finding:
    """The embedding detector's checkpoint reloads and its precision matrix is usable."""
    from resources.artifacts import load_checkpoint

    state, _ = load_checkpoint(value)
    mean, precision = state["mean"].numpy(), state["precision"].numpy()
    problems = []
    if not (np.isfinite(mean).all() and np.isfinite(precision).all()):
        problems.append("non-finite mean or precision")
    elif not np.allclose(precision, precision.T, atol=1e-8 * np.abs(precision).max()):
        problems.append("precision matrix is not symmetric")
    elif np.linalg.eigvalsh(precision).min() <= 0:
        problems.append("precision matrix is not positive definite")
    return finding(problems, ok=f"reference of {value.get('sentences')} sentences: finite, symmetric, "
                   "positive definite")


def ablation_complete(frame: pd.DataFrame, params: OSCSParams) -> Finding:
    """Every ablation variant ran on every ablated stream and Gaussian cell; rates in [0, 1]."""
    from assets.oscs.ablation import VARIANTS

    problems = []
    per_cell = frame.groupby(["suite", "detector", "scenario", "seed", "alpha"])["variant"].apply(set)
    incomplete = [k for k, v in per_cell.items() if v != set(VARIANTS)]
    if incomplete:
        problems.append(f"{len(incomplete)} cells lack variants (e.g. {incomplete[:2]})")
    rates = frame[["far_selected", "tar"]].to_numpy(dtype=float)
    if not (np.isfinite(rates).all() and (rates >= 0).all() and (rates <= 1).all()):
        problems.append("rates outside [0, 1] or non-finite")
    stationary = [s for s in params.scenarios if s in streams.STATIONARY_SCENARIOS]
    expected_text = len(params.detectors) * len(stationary) * len(params.ablation_seeds) * len(params.alphas)
    seeds = [s for s in params.gaussian.seeds if s in params.ablation_seeds]
    expected_gauss = len(params.gaussian.mus) * len(seeds) * len(params.alphas)
    got = per_cell.groupby(level="suite").size().to_dict()
    if got.get("text", 0) != expected_text or got.get("gaussian", 0) != expected_gauss:
        problems.append(f"cells per suite {got} ≠ expected text {expected_text}, gaussian {expected_gauss}")
    return finding(problems, ok=f"{len(per_cell)} ablated cells × {len(VARIANTS)} variants")
