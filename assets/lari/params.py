"""lari run parameters (params.yaml `lari`), typed and frozen — no Dagster import."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SceneSet:
    """Meshes of one scene kind (split by mesh id) and their views."""

    train: int                          # meshes in the training split
    val: int                            # meshes for choosing the stop threshold τ
    test: int                           # held-out meshes (claims)
    views: int                          # views rendered per mesh (training meshes use all of them)
    eval_views: int                     # views of a val / test mesh that are evaluated (the first ones)


@dataclass(frozen=True)
class ModelParams:
    layers: int                         # L of LaRI (4 at cpu, 5 at gpu); the visible-only baseline is L = 1
    ablation_layers: tuple[int, ...]    # further L of the layer ablation (seed 0, objects)
    width: int                          # UNet base channels
    levels: int                         # UNet resolution levels


@dataclass(frozen=True)
class TrainParams:
    steps: int
    batch: int
    lr: float                           # AdamW peak lr, cosine-decayed to lr_min
    lr_min: float
    weight_decay: float
    betas: tuple[float, float]


@dataclass(frozen=True)
class EvalParams:
    thresholds: tuple[float, ...]       # F-score radii (unit-bbox units)
    tau_grid: tuple[float, ...]         # candidate τ on P(S ≥ l), chosen on validation
    z_rule_tau: float                   # "z grows by > τ" rule (aligned units)
    examples: int                       # test views per kind rendered in the report


@dataclass(frozen=True)
class PerfParams:
    meshes: int                         # test meshes timed against trimesh's intersector
    images: int                         # images timed for inference


@dataclass(frozen=True)
class LariParams:
    seeds: tuple[int, ...]
    image: int                          # H = W (pixels)
    lmax: int                           # layers stored by the annotation
    min_layer_area: float               # a layer under this fraction of layer 1's area is dropped (paper 3 %)
    reject_mismatch: float              # views whose layer-1 / RGB-foreground mismatch exceeds this are rejected
    near: float                         # near plane: every valid z must exceed it
    radius: tuple[float, float]         # object camera distance range
    furniture: tuple[int, int]          # furniture pieces per room
    surface_points: int                 # uniform surface samples per object (evaluation GT)
    objects: SceneSet
    rooms: SceneSet
    model: ModelParams
    train: TrainParams
    eval: EvalParams
    perf: PerfParams
    loss_fall_ratio: float              # training gate: mean loss of the last 10 % ≤ ratio × the first 10 %
    workers: int                        # spawned worker processes
