"""diffusion_w2 run parameters (params.yaml `diffusion_w2`), typed and frozen — no Dagster import.

Configurations are table dimensions (target × process × sampler × grid × δ × K × seed × error
model): each experiment is a cartesian product, and experiments are merged (union of error
models, max of seeds per configuration). Claim thresholds are constants of benchmark.py.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

Window = Literal["all", "low_t", "high_t"]


@dataclass(frozen=True)
class VPSchedule:
    beta_min: float
    beta_max: float


@dataclass(frozen=True)
class VESchedule:
    sigma_min: float
    sigma_max: float


@dataclass(frozen=True)
class ProcessParams:
    T: float                      # horizon of the forward process
    vp: VPSchedule                # linear β(t) from beta_min to beta_max
    ve: VESchedule                # geometric σ(t) from sigma_min to sigma_max


@dataclass(frozen=True)
class ErrorSpec:
    """Assumption-1 score error: per-step N(mean·1, sd² I) injected in `window`."""

    mean: float
    sd: float
    window: Window


@dataclass(frozen=True)
class Experiment:
    """One cartesian product of configurations ("all" = every target / grid / error model)."""

    processes: tuple[str, ...]
    samplers: tuple[str, ...]
    deltas: tuple[float, ...]
    Ks: tuple[int, ...]
    targets: str | tuple[str, ...] = "all"
    grids: str | tuple[str, ...] = "all"
    errors: str | tuple[str, ...] = "all"
    seeds: int = 1


@dataclass(frozen=True)
class BenchCase:
    """One configuration of the backend throughput benchmark (all error models are run)."""

    target: str
    process: str
    sampler: str
    K: int
    n: int
    grid: str = "uniform"
    delta: float = 1e-3


@dataclass(frozen=True)
class ClaimScope:
    """Which measured configurations the claims read (the profile must run them); the
    thresholds that judge them are constants of benchmark.py."""

    main_grid: str                # the grid, δ and K of the "main configurations"
    main_delta: float
    main_K: int
    sharp_target: str             # D3 sharpness target
    d1_targets: tuple[str, ...]   # D1: Gaussian targets compared with the closed form
    delta_targets: tuple[str, ...]  # D4: targets of the δ-sweep
    delta_error: str              # D4: error model of the δ-sweep
    ranking_targets: tuple[str, ...]  # D5: SDE vs ODE and grid ranking


@dataclass(frozen=True)
class DiffusionW2Params:
    process: ProcessParams
    # target specs as in params.yaml (kind gaussian / gmm / logistic; means, cov or std,
    # optional dim and cov_eigs): targets.build_target reads them, dsb_targets stores them
    targets: tuple[Mapping[str, Any], ...]
    error_models: Mapping[str, ErrorSpec]
    backend: Literal["numpy", "torch"]      # chains on numpy (CPU) or torch (compute's device)
    ot_errors: tuple[str, ...]    # 2-D W2 (POT) is measured for these error models only
    hessian_check_points: int     # random points per (target, process, τ) of the Hessian check
    hessian_check_taus: int       # log-spaced τ of the Hessian check
    experiments: Mapping[str, Experiment]   # run configurations
    bound_sweep: Mapping[str, Experiment]   # bound-only configurations (no chains)
    claims: ClaimScope
    n_particles: Mapping[int, int]          # particles per chain, by target dimension
    ot_subsample: int             # particles of the 2-D OT W2 estimate
    sliced_projections: int       # directions of the sliced W2 lower bound (d > 2)
    perf_benchmark: tuple[BenchCase, ...]
    dtype: str = "float64"        # torch backend dtype
