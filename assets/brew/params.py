"""BREW run parameters (params.yaml `brew`), typed and frozen — no Dagster import."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class BrewParams:
    # watermark and detector geometry
    code: str                       # a BCH code of bch.CODES, e.g. bch31_16 (T = n · block_length)
    block_length: int               # L: tokens per codeword bit
    gamma: float                    # green fraction of the vocabulary partition
    alpha: float                    # detector's target FPR (designated verification)
    max_shift: int                  # S: window shifts tried by the main detector
    vote_mode: Literal["split_half", "per_copy"]
    verify_mode: Literal["soft", "hard"]
    sync: Literal["per_block", "global"]   # window shifting per block (the method) or one global shift
    min_tokens: int                 # fewer scoreable tokens → "not watermarked"
    entropy_min: float              # positions with LM entropy (nats) below this get no bias
    # the LM and its text
    vocab_size: int                 # top-V words of the trigram LM
    train_fraction: float           # lee_background documents that train the LM
    lm_max_perplexity: float        # gate on the held-out perplexity
    # δ calibration on dev prompts
    delta_grid: tuple[float, ...]   # candidates, smallest first
    target_hit_rate: float          # the smallest δ reaching this unattacked hit rate is chosen
    dev_texts: int
    dev_length: int                 # tokens generated per dev text
    min_hit_rate: float             # gate on the unattacked BREW hit rate of the texts
    # texts, keys, attacks
    seeds: tuple[int, ...]
    texts_per_seed: int             # BREW positives per seed
    baseline_texts_per_seed: int    # KGW and MPAC positives per seed
    negative_texts_per_seed: int    # unwatermarked and wrong-key negatives per seed
    human_keys_per_seed: int        # keys each human window is screened with
    human_stride: int               # tokens between human windows (each document-disjoint half)
    min_human_windows: int
    attacks: tuple[Literal["none", "syn10", "syn20", "syn10_cos75", "ins5", "ins5_burst", "del5", "copy_paste"], ...]
    # synonyms
    simlex_min_score: float
    minilm_max_words: int           # vocabulary words embedded with MiniLM
    minilm_min_cosine: float
    min_content_coverage: float     # gate: share of human content tokens with a synonym
    realism_texts: int              # BREW texts whose syn10 sentences MiniLM compares
    # calibration and claims
    calibration_fpr: float          # per-method threshold at this empirical human FPR
    claim_min_texts: int            # a claim needs this many positives and human trials
