"""pfn_causal run parameters (params.yaml `pfn_causal`), typed and frozen — no Dagster import.

Seeds are table columns and checkpoint-name parts (no partitions). Units: intervention values
and outcomes in standardised node units (every SCM node has mean ≈ 0, sd ≈ 1 observationally).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from assets.common.params import ParamsError


@dataclass(frozen=True)
class SCMParams:
    """The spec's generator: a random DAG over d covariates + Y (a sink), p_edge, MLP(hidden,
    tanh) mechanisms, noise sd ~ U(lo, hi), standardised on `pilot_rows` pilot rows."""

    edge_prob: float
    hidden: int
    noise_sd: tuple[float, float]
    pilot_rows: int


@dataclass(frozen=True)
class ModelParams:
    d_model: int
    n_heads: int
    n_layers: int
    head: Literal["gaussian", "bar"]
    bins: int = 0                       # bar head only


@dataclass(frozen=True)
class Schedule:
    """AdamW; warmup then cosine decay to lr × min_lr_ratio (1.0 = constant)."""

    lr: float
    warmup_steps: int
    min_lr_ratio: float
    weight_decay: float = 0.0
    grad_clip: float = 1.0


@dataclass(frozen=True)
class PretrainParams(Schedule):
    steps: int = 0


@dataclass(frozen=True)
class PWFParams:
    """K steps per target (continued pretraining gets the same K: compute-matched); targets:
    `target_subsets` uncovered subsets × `values_per_subset` values v* ~ U(−target_range,
    target_range)^|S|; far point v* − sign(v*) · far_distance (≥ 1 sd away)."""

    steps: int
    value_sd: float
    target_subsets: int
    values_per_subset: int
    target_range: float
    far_distance: float
    ablation_multipliers: tuple[int, ...] = ()   # the K-steps ablation: PWF at K × m (first seed, first values)


@dataclass(frozen=True)
class MSFParams:
    """R rounds × steps_per_round; replay: fraction of π_pre queries; diversity: weight of the
    Hamming bonus; estimate_scms: fresh prior SCMs per loss estimate."""

    rounds: int
    steps_per_round: int
    replay: float
    diversity: float
    estimate_scms: int


@dataclass(frozen=True)
class MSFAblationParams:
    """The report-only ablation of MSF's acquisition signal (asset msf_ablation): MSF re-run
    from each listed seed's pretrained checkpoint with MSF's schedule, streams, replay and
    budget, ranking subsets by the nMSE of the predicted mean against `truth_draws`-draw
    Monte-Carlo truth on the same fresh prior SCMs instead of by mean NLL. diversity: the
    Hamming bonus on the nMSE scale (MSF's is on the NLL scale, ≈ 10 × larger). No seeds:
    not run."""

    seeds: tuple[int, ...] = ()
    diversity: float = 0.03
    truth_draws: int = 400


@dataclass(frozen=True)
class EvalParams:
    scms: int
    values: int                         # values per subset per SCM, v_i ~ U(−value_range, value_range)
    context_sizes: tuple[int, ...]      # D_obs sizes (nested: the first n rows of the largest)
    mc_draws: int                       # common-noise Monte-Carlo draws of the truth


@dataclass(frozen=True)
class ValidationParams:
    """The pretrained-checkpoint gate's held-out prior SCMs (covered queries)."""

    scms: int
    mc_draws: int


@dataclass(frozen=True)
class RuleParams:
    """The fine-tuning rule: score = mean NLL of a query on `scms` fresh prior SCMs; threshold
    = `quantile` of `calibration_queries` covered queries' scores; verdicts on the eval bank's
    queries of its first `bank_scms` SCMs (and every PWF target)."""

    scms: int
    calibration_queries: int
    quantile: float
    bank_scms: int


@dataclass(frozen=True)
class BaselineParams:
    max_iter: int
    learning_rate: float
    max_leaf_nodes: int
    min_samples_leaf: int
    g_formula_draws: int


@dataclass(frozen=True)
class PFNCausalParams:
    seeds: tuple[int, ...]
    n_covariates: int                   # d (the model's width)
    scm: SCMParams
    context: tuple[int, int]            # n ~ U{lo..hi} observational rows per training task
    queries: int                        # query tokens per task
    value_range: float                  # v_i ~ U(−r, r) in training and on the eval grid
    pi_pre: tuple[float, ...]           # π_pre(|S| = k), k = 1..d
    model: ModelParams
    batch_size: int                     # tasks per step
    pretrain: PretrainParams
    finetune: Schedule                  # continued pretraining, PWF, MSF, random-subset FT
    pwf: PWFParams
    msf: MSFParams
    msf_ablation: MSFAblationParams
    eval: EvalParams
    validation: ValidationParams
    rule: RuleParams
    baselines: BaselineParams
    coverage_steps: int                 # pretraining-stream steps per seed sampled for the coverage table
    full_coverage: bool                 # also pretrain on every subset (uniform over subsets): the control
    gate_min_validation_drop: float     # the "loss −20 %" gate on the validation nMSE (0.2; smoke: > 0 only)
    workers: int                        # spawned worker processes for independent jobs
    torch_threads: int

    def __post_init__(self):
        d = self.n_covariates
        if len(self.pi_pre) != d or abs(sum(self.pi_pre) - 1.0) > 1e-9:
            raise ParamsError(f"pfn_causal.pi_pre must hold d = {d} probabilities summing to 1, got {self.pi_pre}")
        if not 1 <= self.context[0] <= self.context[1]:
            raise ParamsError(f"pfn_causal.context {self.context} must satisfy 1 ≤ lo ≤ hi")
        if self.model.head == "bar" and self.model.bins < 2:
            raise ParamsError("pfn_causal.model.bins must be ≥ 2 for the bar head")
        if self.pwf.far_distance > self.value_range + self.pwf.target_range:
            raise ParamsError("pfn_causal.pwf.far_distance leaves the value range")
        if not set(self.msf_ablation.seeds) <= set(self.seeds):
            raise ParamsError(f"pfn_causal.msf_ablation.seeds {self.msf_ablation.seeds} must be among the run's "
                              f"seeds {self.seeds} (it starts from their pretrained checkpoints)")
