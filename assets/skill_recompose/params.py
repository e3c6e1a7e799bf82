"""skill_recompose run parameters (params.yaml `skill_recompose`), typed and frozen — no Dagster import.

Seeds and methods are table columns (no partitions). Every size comes from here.
"""
from __future__ import annotations

from dataclasses import dataclass

from assets.skill_recompose.runs import METHODS


@dataclass(frozen=True)
class GridParams:
    """Leave-one-seen-task-out grid of the retrieval hyper-parameters."""
    alpha: tuple[float, ...]
    lam: tuple[float, ...]
    beta: tuple[float, ...]
    gamma: tuple[float, ...]
    k_sim: tuple[int, ...]
    k_cov: tuple[int, ...]


@dataclass(frozen=True)
class ICLParams:
    """Variant B (tiny transformer)."""
    layers: int
    d_model: int
    heads: int
    max_len: int
    steps: int
    batch: int
    lr: float
    train_per_task: int          # query demos per seen task in the meta-training episodes


@dataclass(frozen=True)
class BenchParams:
    sizes: tuple[int, ...]       # library sizes of the latency benchmark
    queries: int


@dataclass(frozen=True)
class SkillRecomposeParams:
    seeds: tuple[int, ...]
    demos_per_task: int
    episodes: int                # query episodes per unseen task and seed
    trace_noise: float           # pose noise of the low-level trace (voxels)
    thresholds: tuple[float, ...]   # candidate keyframe speed thresholds (calibrated on seen demos)
    label_noise: float
    feature_dim: int
    grid: GridParams
    xicm_alphas: tuple[float, ...]
    loso_queries: int            # held-out demos per seen task in the LOSO calibration
    p_errs: tuple[float, ...]
    methods: tuple[str, ...]
    icl: ICLParams
    bench: BenchParams
    workers: int
    bootstrap: int

    def __post_init__(self):
        unknown = [m for m in self.methods if m not in METHODS]
        if unknown:
            raise ValueError(f"unknown methods {unknown}; known: {METHODS}")
        if "dnr" not in self.methods:
            raise ValueError("methods must include dnr")
