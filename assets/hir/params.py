"""HiR run parameters (params.yaml `hir`), typed and frozen — no Dagster import.

Methods × seeds are table columns and checkpoint-name parts (no partitions). Every size of the
RL step (B, n, g, response length) comes from here; nothing in the method is hard-coded.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

METHODS = ("hir", "grpo_binary", "grpo_dense", "hir_random", "hir_onpolicy")


@dataclass(frozen=True)
class CorpusParams:
    min_words: int                  # kept sentences have min_words–max_words words
    max_words: int
    vocab_words: int                # most frequent corpus tokens in the vocabulary
    max_unk_fraction: float         # drop sentences with more <unk> than this


@dataclass(frozen=True)
class DataParams:
    train_prompts: int
    test_prompts: int
    constraint_counts: tuple[int, ...]   # constraints per RL prompt (min_words floor included)
    floor_choices: tuple[int, ...]       # min_words floor values
    max_words_choices: tuple[int, ...]
    topics: int                          # topic words
    constraint_words: int                # words the word constraints draw from
    sft_pairs: int
    sft_max_constraints: int             # SFT instructions list 0..this many satisfied constraints
    swap_end: float                      # P(an SFT response's final "." becomes "!" or "?")


@dataclass(frozen=True)
class ModelParams:
    n_layers: int
    d_model: int
    n_heads: int
    context: int


@dataclass(frozen=True)
class TrainParams:
    steps: int
    batch_size: int
    lr: float


@dataclass(frozen=True)
class RLParams:
    prompts_per_step: int           # B
    group_size: int                 # n (rollout.n)
    generated: int                  # g: HiR's generated responses per prompt (n − g replay slots)
    budget_steps: int               # budget = budget_steps · B · n generated responses per run
    max_new: int                    # response tokens (incl. <eos>)
    temperature: float
    clip: float                     # PPO ε
    lr: float
    kl_coef: float                  # β of the KL-in-reward term
    lambda0: float                  # λ_t = lambda0 · lambda_growth^t
    lambda_growth: float
    minibatches: int                # PPO mini-batches per step (one epoch)
    grad_clip: float
    estimator: Literal["grpo", "reinforce_pp"]
    eval_points: int                # evaluations at budget · k / eval_points, k = 1..eval_points
    log_every: int                  # every log_every-th step's generated rollouts go to the rollout log
    keep_floor: bool = False        # replay only responses meeting the prompt's min_words floor (variant)


@dataclass(frozen=True)
class HirParams:
    corpus: CorpusParams
    data: DataParams
    model: ModelParams
    pretrain: TrainParams
    sft: TrainParams
    rl: RLParams
    methods: tuple[str, ...]
    seeds: tuple[int, ...]
    workers: int
    bootstrap: int                  # bootstrap resamples of the claims' CIs
    threads: int = 1                # torch threads per run

    def __post_init__(self):
        unknown = [m for m in self.methods if m not in METHODS]
        if unknown:
            raise ValueError(f"unknown methods {unknown}; known: {METHODS}")
