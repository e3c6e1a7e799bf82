"""logit_distill run parameters (params.yaml `logit_distill`), typed and frozen — no Dagster import.

Dataset × objective × seed are table columns and checkpoint-name parts (no partitions). Each
selected dataset has a block: its generator's parameters, the shared architecture of teacher
and students (MLP, or CNN when encoder = "cnn"), the two training schedules and the teacher
gate's thresholds.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from assets.common.params import ParamsError

DATASETS = ("spirals", "digits", "shapes")


@dataclass(frozen=True)
class Training:
    """Adam; lr × warmup_factor for warmup_epochs epochs, then lr·gamma^(epoch − warmup)."""

    epochs: int
    batch_size: int
    lr: float
    gamma: float
    warmup_epochs: int
    warmup_factor: float = 1e-3


@dataclass(frozen=True, kw_only=True)
class Network:
    """What every dataset block shares: architecture, training, gates, d_rep label subsets."""

    rep_dim: int                         # d; must be < classes − 1 (diversity condition)
    hidden: int
    depth: int                           # mlp: hidden layers; cnn: conv blocks
    dropout: float
    teacher: Training
    student: Training
    min_teacher_accuracy: float          # teacher_quality gate
    d_rep_pivots: int
    d_rep_subsets: int
    n_concepts: int = 0                  # > 0: the teacher has a concept head (concept bottleneck)
    min_concept_probe: float | None = None   # teacher_quality gate on concept datasets
    encoder: Literal["mlp", "cnn"] = "mlp"
    image_size: int = 0                  # cnn only: side of the square input image [pixels]
    channels: int = 1                    # cnn only
    conv_width: int = 16                 # cnn only: channels of the first conv block


@dataclass(frozen=True, kw_only=True)
class Spirals(Network):
    n_labels: int
    arms_per_label: int
    points_per_arm: int

    @property
    def n_classes(self) -> int:
        return self.n_labels


@dataclass(frozen=True, kw_only=True)
class Digits(Network):
    shifts: int                          # identity + the first shifts − 1 ±1-pixel shifts
    max_images: int | None = None        # stratified subsample of the 1,797 images (None: all)

    @property
    def n_classes(self) -> int:
        return 10


@dataclass(frozen=True, kw_only=True)
class Shapes(Network):
    per_class: int
    n_classes: int


@dataclass(frozen=True)
class LogitDistillParams:
    datasets: tuple[Literal["spirals", "digits", "shapes"], ...]   # which datasets are trained
    objectives: tuple[Literal["kl", "l1", "l2", "ce"], ...]
    teacher_seeds: tuple[int, ...]
    student_seeds: tuple[int, ...]
    throughput_epochs: int               # epochs of the loop-vs-bare-torch timing (per dataset × objective)
    spirals: Spirals
    digits: Digits
    shapes: Shapes | None = None         # only profiles that train shapes define it

    def __post_init__(self) -> None:
        missing = [name for name in self.datasets if getattr(self, name) is None]
        if missing:
            raise ParamsError(f"logit_distill: datasets {missing} are selected but have no parameter block")

    def dataset(self, name: str) -> Spirals | Digits | Shapes:
        """The parameter block of one dataset."""
        if name not in DATASETS:
            raise ValueError(f"unknown dataset {name!r}; choose from {DATASETS}")
        return getattr(self, name)
