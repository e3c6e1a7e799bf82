"""limix run parameters (params.yaml `limix`), typed and frozen — no Dagster import.

Seeds are table columns and checkpoint-name parts (no partitions). Variants are
"<embedding>_<arch>" (linear/rabel/mlp/periodic/ple × snf/fsn) plus "linear_fsn_wide", the
larger TabPFN-v2-style stand-in (d_model × wide_factor, same depth).
"""
from __future__ import annotations

from dataclasses import dataclass

from assets.common.params import ParamsError

MAIN_VARIANTS = ("linear_fsn", "linear_snf", "rabel_fsn", "rabel_snf", "linear_fsn_wide")
EMBEDDING_VARIANTS = ("mlp_snf", "periodic_snf", "ple_snf")


@dataclass(frozen=True)
class ModelParams:
    d_model: int
    n_layers: int
    n_heads: int
    k: int                              # RBF kernels (RaBEL), bins / frequencies of PLE / Periodic
    sigma: float
    features_per_group: int
    wide_factor: int                    # linear_fsn_wide: d_model × wide_factor


@dataclass(frozen=True)
class PriorParams:
    """The tiny SCM prior (data.PriorConfig): ranges are inclusive [lo, hi]."""

    features: tuple[int, int]
    classes: tuple[int, int]
    rows: tuple[int, int]
    missing: tuple[float, float]


@dataclass(frozen=True)
class TrainParams:
    """AdamW; linear warm-up then cosine decay to lr × min_lr_ratio."""

    steps: int
    tasks_per_step: int
    lr: float
    warmup_steps: int
    min_lr_ratio: float
    grad_clip: float = 1.0


@dataclass(frozen=True)
class EvalParams:
    val_tasks: int                      # held-out prior tasks (the learning gate and the AUC claims)
    calibration_tasks: int              # held-out prior tasks for rank and attention diagnostics
    real_splits: int                    # context/query splits per real table
    real_context: int
    real_query: int
    baseline_val_tasks: int             # the first k val tasks also get the baselines
    timing_repeats: int                 # repeated forward timings (same_cost, beats_larger)


@dataclass(frozen=True)
class LimiXParams:
    seeds: tuple[int, ...]
    variants: tuple[str, ...]
    model: ModelParams
    prior: PriorParams
    train: TrainParams
    eval: EvalParams
    baselines: tuple[str, ...]
    gate_min_auc: float                 # a checkpoint counts as learned: held-out AUC ≥ this …
    gate_min_loss_drop: float           # … and the training loss fell by ≥ this fraction
    workers: int
    torch_threads: int

    def __post_init__(self):
        known = set(MAIN_VARIANTS) | set(EMBEDDING_VARIANTS)
        unknown = [v for v in self.variants if v not in known]
        if unknown:
            raise ParamsError(f"limix.variants: unknown {unknown}; known {sorted(known)}")
        if self.model.d_model % self.model.n_heads:
            raise ParamsError("limix.model.d_model must be a multiple of n_heads")
        if self.train.warmup_steps >= max(1, self.train.steps) and self.train.steps > 1:
            raise ParamsError("limix.train.warmup_steps must be below steps")
        if not 0 < self.gate_min_auc < 1 or not -1 <= self.gate_min_loss_drop < 1:
            raise ParamsError("limix gate thresholds out of range")
