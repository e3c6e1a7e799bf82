"""PAC labeling run parameters (params.yaml `pac_labels`), typed and frozen — no Dagster import."""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

Loss = Literal["zero_one", "squared"]
CI = Literal["clt", "wsr"]


@dataclass(frozen=True)
class Digits:
    """sklearn's bundled digits: fraction of the 1797 images that trains the AI models."""

    train_frac: float
    split_seed: int


@dataclass(frozen=True)
class SyntheticClassification:
    """make_classification with label noise (the ImageNet analog)."""

    n_classes: int
    n_features: int
    n_informative: int
    label_noise: float              # flip_y
    class_sep: float
    seed: int
    n_pool: int                     # items to label
    n_train: int                    # items that train the AI model


@dataclass(frozen=True)
class SyntheticRegression:
    """Friedman #1 (the AlphaFold / sentiment analog)."""

    noise: float
    seed: int
    n_pool: int
    n_train: int


@dataclass(frozen=True)
class ModelOptions:
    """One AI model's options; unset ones take models.train_model's defaults."""

    cost: float | None = None           # per-item annotation cost (expert = 1); 0 when unset
    C: float | None = None              # logreg inverse regularisation
    hidden: int | None = None           # mlp hidden units
    max_iter: int | None = None         # mlp epochs
    weight_decay: float | None = None   # mlp L2
    members: int | None = None          # gb_ensemble bootstrap members
    n_estimators: int | None = None     # gb_ensemble trees per member
    max_depth: int | None = None
    learning_rate: float | None = None

    def as_dict(self) -> dict[str, Any]:
        """The options that are set (what models.train_model and the checkpoint sidecar get)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if getattr(self, f.name) is not None}


@dataclass(frozen=True)
class PaperDataset:
    """One of the paper's CSVs (read from data_dir when present)."""

    file: str
    model: str                      # name of the AI model that labelled it
    label_col: str
    pred_col: str
    conf_col: str
    loss: Loss
    ci: CI
    num_draws: int                  # K
    cost: float = 0.0
    label_range: tuple[float, float] | None = None


@dataclass(frozen=True)
class PartitionSpec:
    """A configured generated partition: dataset × AI model × CI type, with K draws."""

    dataset: str
    model: str
    ci: CI
    num_draws: int
    label_range: tuple[float, float] | None = None


@dataclass(frozen=True)
class RouterParams:
    dataset: str                    # the dataset whose models the router chooses between
    models: tuple[str, ...]
    calibration_frac: float         # share of the pool whose expert labels train the router
    epochs: int
    batch_size: int
    lr: float
    weight_decay: float
    head: Literal["logit", "sigmoid"]   # uncertainty score: the MLP's logit (spec), σ(logit) (authors' code)
    gate_scale: float                   # a in the smoothed gate σ(a (u − û)) (0.1 in spec and code)
    ablations: tuple[Literal["authors_sigmoid", "routed_confidence"], ...]   # extra routed partitions


@dataclass(frozen=True)
class PACLabelsParams:
    data_dir: str                   # the paper's CSVs (relative to the repo; env PAPERLAB_PAC_LABELS_DIR wins)
    epsilon: float
    alpha: float
    wsr_grid_size: int
    tie_break_seed: int
    digits: Digits
    synthetic_cls: SyntheticClassification
    synthetic_reg: SyntheticRegression
    models: Mapping[str, Mapping[str, ModelOptions]]   # dataset → model kind → options
    paper_datasets: Mapping[str, PaperDataset]
    router: RouterParams
    trials: int                     # PAC labelings per partition
    curve_points: int               # UCB curve points stored for trial 0
    naive_split_seeds: tuple[int, ...]
    partitions: tuple[PartitionSpec, ...]
