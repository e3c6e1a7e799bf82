"""VCoT-Bench run parameters (params.yaml `vcot`), typed and frozen — no Dagster import."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LiftParams:
    coverage_target: float          # per-category coverage the transform → check loop aims for
    max_rounds: int                 # transform → check rounds (VCoT-Lift: max_iter=5)
    max_repair: int                 # repair rounds (VCoT-Lift: max_iter=10)


@dataclass(frozen=True)
class LearnedParams:
    """The optional learned completer: a conditional tiny transformer (assets/common/tiny_lm)."""

    enabled: bool
    d_model: int
    n_layers: int
    n_heads: int
    context: int                    # tokens (prompt + block)
    prompt_tokens: int              # tokens of the hole's surroundings kept in the prompt
    max_new: int                    # longest generated block (tokens)
    steps: int
    batch_size: int
    lr: float


@dataclass(frozen=True)
class VcotParams:
    n_programs: int                 # corpus size (round-robin over the families)
    families: tuple[str, ...]
    rlimit_probe: int               # provisional per-query rlimit of vc_queries
    cap_factor: float               # solver_budget: cap = cap_factor × the corpus's largest rlimit
    lift: LiftParams
    mask_seeds: tuple[int, ...]     # Ratio mask seeds
    completers: tuple[str, ...]     # completers.COMPLETERS minus "learned" (added when learned.enabled)
    solver_budget: int              # Z3 checks per task of the solver-guided completer
    tasks_per_dimension: int        # 0: complete and score every task; k: k evenly spaced tasks per program and
                                    # dimension (smoke only, to fit its 30 s; the task table itself is complete)
    verified_completers: tuple[str, ...]   # completers whose completed programs are re-verified
    default_z3: bool                # also verify the null completer under Z3's default options
    workers: int                    # spawned worker processes for lift and scoring
    bootstrap: int                  # bootstrap resamples over programs (CIs)
    learned: LearnedParams
