"""ts_layers run parameters (params.yaml `ts_layers`), typed and frozen — no Dagster import.

Units: look-back, horizon and patch in time steps; MSE on the RevIN-normalised scale (each
window divided by its look-back's mean and standard deviation); learning rates per AdamW step.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from assets.common.params import ParamsError

FAMILIES = ("tsfm", "llm4ts")
REAL_SERIES = ("co2", "sunspots", "elnino", "macro", "elec_equip")


@dataclass(frozen=True)
class Synthetic:
    """The generated pretraining corpus: `series` series × `length` steps; the last
    `val_fraction` of the series are the synthetic validation set (never trained on)."""

    series: int
    length: int
    val_fraction: float
    val_windows: int                    # fixed synthetic-val windows for the next-patch loss


@dataclass(frozen=True)
class Train:
    """AdamW with linear warmup then cosine decay to 10 %; batches of `batch_size` windows,
    a `real_fraction` of them from the real series' train splits, the rest synthetic."""

    steps: int
    batch_size: int
    lr: float
    warmup: int
    weight_decay: float
    real_fraction: float
    grad_clip: float


@dataclass(frozen=True)
class Realign:
    """Prune-and-realign (and the full model's continuation): same data and loss."""

    steps: int
    lr: float


@dataclass(frozen=True)
class Text:
    """The char-level LM pretrained on gensim's lee_background.cor (LLM4TS's backbone)."""

    context: int
    steps: int
    batch_size: int
    lr: float


@dataclass(frozen=True)
class LLM4TS:
    depth: int
    layernorm_only: bool                # fine-tune only LayerNorms (+ patch layers); default: everything


@dataclass(frozen=True)
class Importance:
    """The spec's [I] reconstruction: s_l with K neighbours and decay α, a_l, I = mm(s) + λ·mm(a),
    keep the top τ (≥ 1 layer), layer 1 always."""

    calibration_windows: int
    alpha: float
    k_neighbours: int
    lam: float
    tau: float


@dataclass(frozen=True)
class Ablation:
    """Alternative (α, K, λ) settings whose keep sets the report compares (no retraining)."""

    alphas: tuple[float, ...]
    k_neighbours: tuple[int, ...]
    lams: tuple[float, ...]


@dataclass(frozen=True)
class Latency:
    repeats: int
    warmup: int
    batch_sizes: tuple[int, ...]


@dataclass(frozen=True)
class TSLayersParams:
    lookback: int
    horizon: int
    patch: int
    d_model: int
    n_heads: int
    depths: tuple[int, ...]             # TSFM depths of the scaling sweep
    seeds: tuple[int, ...]
    series: tuple[str, ...]             # real evaluation series (REAL_SERIES)
    split: tuple[float, float]          # chronological train / val boundaries (fractions of the length)
    max_test_windows: int               # per channel, evenly spaced (stride ≥ 1)
    synthetic: Synthetic
    train: Train
    realign: Realign
    text: Text
    llm4ts: LLM4TS
    importance: Importance
    ablation: Ablation
    prune_models: tuple[tuple[Literal["tsfm", "llm4ts"], int], ...]   # (family, depth) pruned and realigned
    random_draws: int
    classical_windows: int              # test windows per series for seasonal-naive / ETS / ARIMA
    latency: Latency
    eval_batch: int
    workers: int
    torch_threads: int

    def __post_init__(self):
        if self.lookback % self.patch or self.horizon > 2 * self.patch or self.horizon <= self.patch:
            raise ParamsError("lookback must be a multiple of patch and patch < horizon ≤ 2·patch "
                              "(two autoregressive patches)")
        unknown = sorted(set(self.series) - set(REAL_SERIES))
        if unknown:
            raise ParamsError(f"unknown series {unknown}; known: {list(REAL_SERIES)}")
        if not 0 < self.importance.tau <= 1:
            raise ParamsError(f"importance.tau must be in (0, 1], got {self.importance.tau}")
        for family, depth in self.prune_models:
            if family == "tsfm" and depth not in self.depths:
                raise ParamsError(f"prune_models: tsfm depth {depth} is not trained (depths {list(self.depths)})")
            if family == "llm4ts" and depth != self.llm4ts.depth:
                raise ParamsError(f"prune_models: llm4ts depth {depth} ≠ llm4ts.depth {self.llm4ts.depth}")
        if not 0 < self.split[0] < self.split[1] < 1:
            raise ParamsError(f"split must be 0 < train < val < 1, got {list(self.split)}")

    @property
    def n_patches(self) -> int:
        """Look-back patches (the model's input length before the autoregressive steps)."""
        return self.lookback // self.patch

    @property
    def context(self) -> int:
        """Positions the model sees: look-back patches + one autoregressive patch."""
        return self.n_patches + 1
