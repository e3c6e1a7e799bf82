"""SPGCL run parameters (params.yaml `spgcl`), typed and frozen — no Dagster import.

Method × graph × seed are table columns and parts of the checkpoint names (no partitions);
`runs` lists which methods are trained on which graph. A method's hyper-parameters are the
encoder block merged with its family's block (`method_hparams`), exactly what the checkpoint
sidecar records.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from assets.common.params import thaw


@dataclass(frozen=True)
class Encoder:
    hidden: int
    proj: int
    layers: int
    chunk: int                     # the n×n similarity in row blocks of `chunk` rows


@dataclass(frozen=True)
class SPGCLHP:
    dropout: float
    lr: float
    tau: float
    pf: float                      # masking rate of the high-energy entries (EAP)
    epochs: int
    edepoch: int                   # EPS switches on after this epoch


@dataclass(frozen=True)
class GraceHP:
    lr: float
    weight_decay: float
    tau: float
    drop_edge_1: float
    drop_edge_2: float
    drop_feature_1: float
    drop_feature_2: float
    epochs: int


@dataclass(frozen=True)
class DGIHP:
    hidden: int                    # replaces the encoder's hidden size
    lr: float
    patience: int
    epochs: int


@dataclass(frozen=True)
class BGRLHP:
    lr: float
    weight_decay: float
    drop_edge_1: float
    drop_edge_2: float
    drop_feature_1: float
    drop_feature_2: float
    predictor_hidden: int
    momentum: float
    warmup: int
    epochs: int


@dataclass(frozen=True)
class Methods:
    """Hyper-parameters per method family (training.METHODS maps a method to its family)."""

    spgcl: SPGCLHP
    grace: GraceHP
    dgi: DGIHP
    bgrl: BGRLHP


@dataclass(frozen=True)
class Scaling:
    """training_scaling asset: SPGCL cost versus n."""

    sizes: tuple[int, ...]
    epochs: int


@dataclass(frozen=True)
class SPGCLParams:
    n_nodes: int                                   # nodes per CSBM
    graphs: tuple[str, ...]                        # data.ALL_GRAPHS names
    runs: Mapping[str, tuple[str, ...]]            # graph → methods trained on it
    non_learned: tuple[Literal["raw_features", "sgc_features"], ...]
    numhops: tuple[int, ...]                       # Â^h smoothing of every embedding before the probe
    train_workers: int                             # requested worker processes for the training runs
    dim_keep: int                                  # k: size of the high-energy feature set H
    alpha: float                                   # EPS keep-probability scale
    encoder: Encoder
    methods: Methods
    seeds: tuple[int, ...]
    probe_c_exponents: tuple[int, int, int]        # C = 2^lo … 2^hi in steps of `step` exponents
    scaling: Scaling

    def planned_runs(self) -> list[tuple[str, str, int]]:
        """(method, graph, seed) of every training run, graphs in `graphs` order."""
        return [(m, graph, int(seed)) for graph in self.graphs for m in self.runs.get(graph, ())
                for seed in self.seeds]

    def method_hparams(self, family: str) -> dict[str, Any]:
        """Encoder sizes + one method family's hyper-parameters (plain dict, as the sidecar)."""
        return {**thaw(self.encoder), **thaw(getattr(self.methods, family))}

    def c_grid(self) -> tuple[float, ...]:
        lo, hi, step = self.probe_c_exponents
        return tuple(float(2.0 ** e) for e in range(lo, hi + 1, step))
