"""VIAR run parameters (params.yaml `viar`), typed and frozen — no Dagster import.

Claim thresholds are constants of benchmark.py; `checks` holds the data-quality gates'
floors (relaxed at the smoke profile, where a few training steps cannot reach them).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Dataset = Literal["digits", "shapes"]


@dataclass(frozen=True)
class DatasetParams:
    split_sizes: tuple[int, int, int]   # train / val / test images
    image_size: int
    channels: int
    downsample: int                     # stride-2 stages of the tokenizer: latent = image_size / 2^downsample
    scales: tuple[int, ...]             # token-map sides p_k, ending at the latent size
    max_images: int | None = None       # digits: subsample of the bundled set (None = all 1,797)


@dataclass(frozen=True)
class ClassifierParams:
    """The evaluation CNN (metrics only)."""

    epochs: int
    batch: int
    lr: float


@dataclass(frozen=True)
class TokenizerParams:
    """Multi-scale residual VQ-VAE."""

    hidden: int
    cvae: int                           # code dimension
    vocab: int                          # codebook size V
    phi_count: int                      # shared φ residual convs
    beta: float                         # commitment weight
    steps: int
    batch: int
    lr: float
    restart_every: int                  # dead-code restart period (steps) ...
    restart_fraction: float             # ... and usage below which a code is dead


@dataclass(frozen=True)
class ARParams:
    """Optimisation and width shared by VAR and VIAR."""

    width: int
    heads: int
    mlp_ratio: float
    steps: int
    batch: int
    lr: float
    weight_decay: float
    warmup: int
    clip: float
    label_drop: float                   # class-label dropout (CFG)


@dataclass(frozen=True)
class VIARParams:
    pre: int                            # explicit blocks before the implicit block
    post: int                           # ... and after it
    damping: float                      # z ← (1−α) z + α f(z); 1.0 = none
    jfb_n: int                          # S-JFB: n ~ U{0..N} detached iterations
    jfb_m: int                          # S-JFB: m ~ U{1..M} iterations with gradient


@dataclass(frozen=True)
class SamplingParams:
    per_class: int
    cfg: float                          # classifier-free guidance (linear ramp)
    top_p: float
    top_k: int


@dataclass(frozen=True)
class ClaimSchedules:
    """The VIAR schedules the claims compare (names parsed by model.parse_schedule)."""

    one: str
    mid: str
    full: str
    dec: str


@dataclass(frozen=True)
class CalibrationParams:
    per_class: int                      # val images per class of the schedule search
    candidates: tuple[int, ...]         # per-scale iteration counts tried
    converged: int                      # iterations of the reference schedule
    tolerance: float                    # per-scale NLL within this fraction of converged


@dataclass(frozen=True)
class ThroughputParams:
    batch: int
    reps: int


@dataclass(frozen=True)
class MemoryParams:
    batch: int
    depths: tuple[int, ...]             # VAR depths
    n_values: tuple[int, ...]           # VIAR no-grad iterations
    m_values: tuple[int, ...]           # VIAR grad iterations


@dataclass(frozen=True)
class ConvergenceParams:
    per_class: int
    iterations: int


@dataclass(frozen=True)
class CheckParams:
    """Floors of the blocking data-quality gates."""

    min_classifier_accuracy: float
    max_recon_mse: float
    min_codebook_usage: float
    max_ce_over_unigram: float


@dataclass(frozen=True)
class VIARRunParams:
    datasets: tuple[Dataset, ...]       # the first one is the claims' dataset
    seeds: tuple[int, ...]              # seeds of VAR-d<claim_depth> and VIAR
    ladder_seeds: tuple[int, ...]       # seeds of the other ladder depths
    torch_threads: int                  # cap on torch intra-op threads
    workers: int                        # processes for independent training/calibration/sampling jobs (1 = in-process)
    claim_depth: int                    # the VAR depth the claims compare against
    ladder_depths: tuple[int, ...]      # further VAR depths (V6 Pareto ladder)
    digits: DatasetParams
    classifier: ClassifierParams
    tokenizer: TokenizerParams
    ar: ARParams
    viar: VIARParams
    sampling: SamplingParams
    schedules: tuple[str, ...]          # VIAR inference schedules sampled (plus "calibrated")
    claim_schedules: ClaimSchedules
    calibration: CalibrationParams
    throughput: ThroughputParams
    memory: MemoryParams
    convergence: ConvergenceParams
    checks: CheckParams
    shapes: DatasetParams | None = None  # procedural shapes (smoke and gpu profiles)

    def dataset(self, name: str) -> DatasetParams:
        block = getattr(self, name, None) if name in ("digits", "shapes") else None
        if block is None:
            raise KeyError(f"viar: no parameters for dataset {name!r}")
        return block
