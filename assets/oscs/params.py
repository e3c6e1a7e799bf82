"""OSCS run parameters (params.yaml `oscs`), typed and frozen — no Dagster import."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GaussianSuite:
    """The parametric suite f0 = N(0, 1), f1 = N(μ, 1)."""

    mus: tuple[float, ...]          # malicious mean shifts μ
    pi1: float                      # malicious fraction of the stream
    stream_length: int              # T
    calibration_size: int           # m benign calibration draws
    seeds: tuple[int, ...]


@dataclass(frozen=True)
class OSCSParams:
    lm_min_count: int               # rarer training words share the <unk> class (detector LM)
    sentences_per_attack: int       # malicious pool size per attack family
    calibration_size: int           # benign calibration scores per detector (m)
    stream_length: int              # T
    short_horizon: int              # T' for the vanishing-excess claim (a prefix of the same stream)
    seeds: tuple[int, ...]
    scenarios: tuple[str, ...]
    alphas: tuple[float, ...]
    burn_in: int                    # decisions before this step are excluded from FAR/TAR
    grid_size: int                  # score grid of the recursive KDE
    gaussian: GaussianSuite
    detectors: tuple[str, ...]      # the "existing defenses" scored (detectors.DETECTORS)
    embedding_fit_sentences: int    # lm-split sentences the embedding detector's reference is fitted on
    ablation_seeds: tuple[int, ...]  # seeds of the true-π0/f0/f ablation (text and Gaussian)
