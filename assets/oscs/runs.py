"""OSCS experiment loops: scoring, calibration sets, streams, decisions — no Dagster import.

Each function is what one asset computes; `seed_for(*keys)` / `rng(*keys)` come from the
compute resource so seeds are derived in one place; `log` receives progress lines.
"""
from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import pandas as pd

from assets.common.ngram import KneserNeyTrigram
from assets.common.progress import Progress
from assets.oscs import ablation, benchmark, data, detectors, streams
from assets.oscs import method as M
from assets.oscs.checks import oscs_config
from assets.oscs.params import OSCSParams

Log = Callable[[str], None]


def malicious_pool(benign_corpus: pd.DataFrame, per_attack: int, seed_for: Callable[..., int]) -> pd.DataFrame:
    """Every attack family applied to stream-split sentences, with the carrier's document."""
    carriers = benign_corpus[benign_corpus["split"] == "stream"].reset_index(drop=True)
    parts = []
    for attack in data.ATTACKS:
        pool = data.make_malicious(carriers["text"].tolist(), attack, per_attack, seed=seed_for("attack", attack))
        pool["doc_id"] = carriers["doc_id"].to_numpy()[pool["source_index"].to_numpy()]
        parts.append(pool)
    return pd.concat(parts, ignore_index=True)


def fit_embedding_detector(benign_corpus: pd.DataFrame, max_sentences: int, rng: np.random.Generator,
                           embed: Callable[[list[str]], np.ndarray]) -> tuple[dict[str, np.ndarray], int]:
    """The embedding detector's benign reference (mean, precision) from at most
    `max_sentences` sentences of the lm split — the detector's own training data, so the
    calibration and stream scores stay out of sample. Returns (state, sentences used)."""
    texts = benign_corpus.loc[benign_corpus["split"] == "lm", "text"].tolist()
    if len(texts) > max_sentences:
        texts = [texts[i] for i in np.sort(rng.choice(len(texts), size=max_sentences, replace=False))]
    return detectors.fit_mahalanobis(embed(texts)), len(texts)


def score_items(lm: KneserNeyTrigram, benign_corpus: pd.DataFrame, malicious_pool: pd.DataFrame,
                detector_names: tuple[str, ...], log: Log, embed: Callable[[list[str]], np.ndarray] | None = None,
                embedding_reference: dict[str, np.ndarray] | None = None) -> pd.DataFrame:
    """Each detector's score (higher = more suspicious) for every calibration, stream and
    malicious sentence: rows (item_id, role, attack, label, doc_id, detector, score)."""
    benign = benign_corpus[benign_corpus["split"].isin(["calib", "stream"])]
    items = pd.concat([
        pd.DataFrame({"role": benign["split"].to_numpy(), "attack": "benign", "label": 0,
                      "doc_id": benign["doc_id"].to_numpy(), "text": benign["text"].to_numpy()}),
        pd.DataFrame({"role": "attack", "attack": malicious_pool["attack"].to_numpy(), "label": 1,
                      "doc_id": malicious_pool["doc_id"].to_numpy(), "text": malicious_pool["text"].to_numpy()}),
    ], ignore_index=True)
    items.insert(0, "item_id", np.arange(len(items), dtype=np.int64))
    frames = []
    for detector in detector_names:
        start = time.monotonic()
        if detector in detectors.EMBEDDING_DETECTORS:
            if embed is None or embedding_reference is None:
                raise ValueError(f"detector {detector} needs the sentence encoder and its benign reference")
            scores = detectors.mahalanobis_score(embed(items["text"].tolist()), embedding_reference["mean"],
                                                 embedding_reference["precision"])
        else:
            scores = detectors.score_texts(lm, items["text"].tolist(), detector)
        log(f"{detector}: scored {len(items)} sentences in {time.monotonic() - start:.1f} s")
        frames.append(items.drop(columns="text").assign(detector=detector, score=scores))
    frame = pd.concat(frames, ignore_index=True)
    frame["label"] = frame["label"].astype(np.int8)
    return frame


def calibration_sets(detector_scores: pd.DataFrame, size: int,
                     rng: Callable[..., np.random.Generator]) -> dict:
    """m benign calibration scores per detector (the only data OSCS may use besides the
    stream), their Silverman bandwidth and the B1 threshold (benign 95 % quantile)."""
    out = {}
    for detector, group in detector_scores[detector_scores["role"] == "calib"].groupby("detector"):
        n = min(size, len(group))
        chosen = group.iloc[np.sort(rng("calibration", detector).choice(len(group), size=n, replace=False))]
        scores = chosen["score"].to_numpy(dtype=float)
        out[detector] = {"scores": scores.tolist(), "item_ids": chosen["item_id"].tolist(),
                         "doc_ids": sorted(set(chosen["doc_id"])),
                         "bandwidth": M.silverman_bandwidth(scores) if n > 1 else float("nan"),
                         "fixed_threshold_q95": float(np.quantile(scores, 0.95)) if n else float("nan")}
    return {"detectors": out, "logit": False}


def build_streams(detector_scores: pd.DataFrame, params: OSCSParams, seed_for: Callable[..., int]) -> pd.DataFrame:
    """Ordered test streams (t, score, label, attack, item_id, doc_id) for every detector ×
    scenario × seed. The same seed serves every detector: the same sentences arrive in the
    same order, scored by each detector."""
    frames = []
    for detector, scored in detector_scores.groupby("detector"):
        benign = scored[scored["role"] == "stream"].reset_index(drop=True)
        attacks = {a: g.reset_index(drop=True) for a, g in scored[scored["role"] == "attack"].groupby("attack")}
        pools = {"benign": benign, **attacks}
        for scenario in params.scenarios:
            for seed in params.seeds:
                stream = streams.build_stream(benign["score"].to_numpy(),
                                              {a: g["score"].to_numpy() for a, g in attacks.items()},
                                              scenario, params.stream_length,
                                              seed=seed_for("stream", scenario, seed))
                rows = list(zip(stream["attack"], stream["pool_index"]))
                stream["item_id"] = [int(pools[a]["item_id"].iat[i]) for a, i in rows]
                stream["doc_id"] = [pools[a]["doc_id"].iat[i] for a, i in rows]
                frames.append(stream.drop(columns="pool_index").assign(detector=detector, scenario=scenario,
                                                                       seed=int(seed)))
    return pd.concat(frames, ignore_index=True)


def run_decisions(streams_frame: pd.DataFrame, benign_density: dict, detector_scores: pd.DataFrame,
                  params: OSCSParams, log: Log) -> pd.DataFrame:
    """Every method's online decisions on every stream and α, wide (one row per step), with
    OSCS's m̂_t and π̂0_t traces."""
    config = oscs_config(params)
    groups = list(streams_frame.groupby(["detector", "scenario", "seed"], sort=True))
    progress = Progress(log, len(groups), "streams")
    frames = []
    for (detector, scenario, seed), stream in groups:
        calib = np.asarray(benign_density["detectors"][detector]["scores"])
        scores = stream["score"].to_numpy()
        m_true = benchmark.text_oracle_posterior(detector_scores, detector, scenario, scores, params.stream_length)
        posterior = M.batch_lfdr_posterior(scores, calib, lam=config.lam)
        for alpha in params.alphas:
            out = benchmark.decide_all(scores, calib, float(alpha), m_true, config, posterior)
            wide = stream[["detector", "scenario", "seed", "t", "label", "attack"]].copy()
            wide["alpha"] = float(alpha)
            for method, trace in out.items():
                wide[method] = trace["decision"]
            for method, _, _ in benchmark.OSCS_VARIANTS:
                wide[f"{method}_m_hat"] = out[method]["m_hat"].astype(np.float32)
                wide[f"{method}_pi0_hat"] = out[method]["pi0_hat"].astype(np.float32)
            frames.append(wide)
        progress.step(f"{detector}/{scenario}/seed {seed}")
    return pd.concat(frames, ignore_index=True)


def gaussian_suite(params: OSCSParams) -> pd.DataFrame:
    g = params.gaussian
    return benchmark.gaussian_suite(list(g.mus), g.pi1, g.stream_length, g.calibration_size, list(g.seeds),
                                    list(params.alphas), oscs_config(params))


def oracle_ablation(streams_frame: pd.DataFrame, benign_density: dict, detector_scores: pd.DataFrame,
                    params: OSCSParams, log: Log) -> pd.DataFrame:
    """Ablation rows (suite, detector, scenario, mu, seed, alpha, variant, far_selected, tar,
    pi0_used, n_accepted): OSCS with true π0 / f0 / f swapped in (ablation.VARIANTS), on the
    stationary text streams of `params.ablation_seeds` and on the Gaussian suite."""
    config = oscs_config(params)
    seeds = set(params.ablation_seeds)
    text = streams_frame[streams_frame["scenario"].isin(streams.STATIONARY_SCENARIOS)
                         & streams_frame["seed"].isin(seeds)]
    groups = list(text.groupby(["detector", "scenario", "seed"], sort=True))
    g = params.gaussian
    gaussian_cells = [(mu, seed) for mu in g.mus for seed in g.seeds if seed in seeds]
    progress = Progress(log, len(groups) + len(gaussian_cells), "ablation")
    rows = []
    for (detector, scenario, seed), stream in groups:
        scores = stream["score"].to_numpy(dtype=float)
        truth = ablation.text_truth(detector_scores, detector, scenario, scores)
        calib = np.asarray(benign_density["detectors"][detector]["scores"])
        for alpha in params.alphas:
            for row in ablation.ablate(scores, stream["label"].to_numpy(), calib, truth, float(alpha), config):
                rows.append({"suite": "text", "detector": detector, "scenario": scenario, "mu": float("nan"),
                             "seed": int(seed), "alpha": float(alpha), **row})
        progress.step(f"{detector}/{scenario}/seed {seed}")
    for mu, seed in gaussian_cells:
        scores, labels, calib = M.gaussian_stream(mu, g.pi1, g.stream_length, g.calibration_size, seed)
        truth = ablation.gaussian_truth(mu, g.pi1)
        for alpha in params.alphas:
            for row in ablation.ablate(scores, labels, calib, truth, float(alpha), config):
                rows.append({"suite": "gaussian", "detector": "gaussian", "scenario": f"mu={mu:g}",
                             "mu": float(mu), "seed": int(seed), "alpha": float(alpha), **row})
        progress.step(f"gaussian μ={mu:g}/seed {seed}")
    return pd.DataFrame(rows)
