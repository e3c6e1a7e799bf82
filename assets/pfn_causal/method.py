"""Pretraining, compute-matched continued pretraining, PWF, MSF and random-subset fine-tuning
— torch + numpy, no Dagster. Every regime is the shared loop (assets/common/pfn/train.py) on
a different query distribution; every batch comes from stream_rng(seed, stream, step) and
holds only prior SCMs (never an eval-bank SCM, never a target's truth).

- pretrain: π_pre (|S| = 1: 0.9, |S| = 2: 0.1) from a fresh model;
- continued pretraining: K more steps of π_pre from the pretrained weights (the control that
  PWF's gain is not just "more steps");
- PWF (point-wise interventional fine-tuning) for a target (S*, v*): K steps from the
  pretrained weights on tasks whose every query is S = S*, v ~ N(v*, τ²);
- MSF (meta-sampling fine-tuning): R rounds; each round estimates every subset's loss on
  fresh prior SCMs, adds the subset with the highest loss + diversity bonus (Hamming distance
  to the earlier picks) and fine-tunes on the picks mixed with π_pre replay;
- random-subset fine-tuning: MSF's schedule with uniformly random picks (the control).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
import torch

from assets.common.pfn.heads import quantile_borders
from assets.common.pfn.train import TrainConfig, TrainResult, stream_rng, train
from assets.pfn_causal import model as M
from assets.pfn_causal import prior as P

Log = Callable[[str], None]


@dataclass
class StreamRecord:
    """What a fine-tuning run trained on: every SCM fingerprint and every query subset."""

    fingerprints: list[str] = field(default_factory=list)
    masks: Counter = field(default_factory=Counter)

    def add(self, batch: P.TaskBatch) -> None:
        self.fingerprints.extend(batch.fingerprints)
        self.masks.update(P.subset_key(m) for m in batch.q_mask.reshape(-1, batch.q_mask.shape[-1]))

    def as_dict(self) -> dict:
        return {"scm_fingerprints": list(self.fingerprints),
                "mask_counts": {str(k): int(v) for k, v in sorted(self.masks.items())}}


def task_stream(prior: P.CausalPrior, spec: P.QuerySpec, seed: int, stream: str, batch_size: int,
                record: StreamRecord | None = None) -> Callable[[int], P.TaskBatch]:
    """make_batch(step) for the shared loop: tasks from stream_rng(seed, stream, step)."""
    def make(step: int) -> P.TaskBatch:
        batch = P.build_tasks(prior, spec, stream_rng(seed, stream, step), batch_size)
        if record is not None:
            record.add(batch)
        return batch

    return make


def bar_borders(prior: P.CausalPrior, spec: P.QuerySpec, bins: int, seed: int, batches: int = 32,
                batch_size: int = 16) -> np.ndarray:
    """Bar-head borders at quantiles of standardised prior targets (stream 'borders')."""
    ys = [P.build_tasks(prior, spec, stream_rng(seed, "borders", i), batch_size).y.ravel() for i in range(batches)]
    return quantile_borders(np.concatenate(ys), bins)


def run_training(model: M.CausalPFN, prior: P.CausalPrior, spec: P.QuerySpec, config: TrainConfig, seed: int,
                 stream: str, batch_size: int, device: str = "cpu", log: Log | None = None,
                 record: StreamRecord | None = None, log_every: int = 0) -> TrainResult:
    """config.steps steps of the shared loop on `spec`'s tasks of `stream`."""
    model.to(device)
    return train(model, task_stream(prior, spec, seed, stream, batch_size, record),
                 lambda m, b: M.batch_loss(m, b, device), config, log=log, log_every=log_every)


# ------------------------------------------------------------------------------ estimation
@torch.no_grad()
def subset_losses(model: M.CausalPFN, prior: P.CausalPrior, subsets: np.ndarray, rng: np.random.Generator,
                  n_scms: int, value_range: float, device: str = "cpu") -> np.ndarray:
    """Mean NLL of the model on fresh prior SCMs for every subset (K, d): the same n_scms
    contexts serve every subset, prior.queries random values each. Returns (K,)."""
    ctx = P.draw_contexts(prior, rng, n_scms)
    K, d = subsets.shape
    Q = prior.queries
    masks = np.broadcast_to(subsets[None, :, None, :], (n_scms, K, Q, d)).reshape(n_scms, K * Q, d)
    values = np.where(masks, rng.uniform(-value_range, value_range, size=masks.shape), 0.0)
    outcomes = P.draw_outcomes(ctx, masks, values, rng)
    batch = P.make_batch(ctx.x, ctx.y, ctx.valid, masks, values, outcomes)
    nll = M.predict(model, batch, device)["nll"]                              # (n_scms, K·Q)
    return nll.reshape(n_scms, K, Q).mean(axis=(0, 2))


@torch.no_grad()
def subset_nmse(model: M.CausalPFN, prior: P.CausalPrior, subsets: np.ndarray, rng: np.random.Generator,
                n_scms: int, value_range: float, draws: int, device: str = "cpu") -> np.ndarray:
    """nMSE of the predicted mean against common-noise Monte-Carlo truth on fresh prior SCMs,
    for every subset (K, d): the same n_scms contexts serve every subset, prior.queries random
    values each. Σ (μ̂ − μ)² / Σ Var(Y) per subset — the model's error without the outcome's
    irreducible spread (which the NLL of single draws carries). Returns (K,)."""
    ctx = P.draw_contexts(prior, rng, n_scms)
    K, d = subsets.shape
    Q = prior.queries
    masks = np.broadcast_to(subsets[None, :, None, :], (n_scms, K, Q, d)).reshape(n_scms, K * Q, d)
    values = np.where(masks, rng.uniform(-value_range, value_range, size=masks.shape), 0.0)
    truth = P.interventional_truth(ctx, masks, values, draws, rng)
    pred = M.predict(model, P.make_batch(ctx.x, ctx.y, ctx.valid, masks, values), device)["mean"]
    err = ((pred - truth["mu"]) ** 2).reshape(n_scms, K, Q).mean(axis=(0, 2))
    return err / np.mean(truth["obs_sd"] ** 2)


@torch.no_grad()
def query_scores(model: M.CausalPFN, prior: P.CausalPrior, masks: np.ndarray, values: np.ndarray,
                 rng: np.random.Generator, n_scms: int, device: str = "cpu", chunk: int = 512) -> np.ndarray:
    """The fine-tuning rule's score of each query (S, v) — masks / values (Q, d) in node
    units: the model's mean NLL for exactly that query over n_scms fresh prior SCMs (one
    outcome draw each). Returns (Q,)."""
    ctx = P.draw_contexts(prior, rng, n_scms)
    Q = masks.shape[0]
    scores = np.zeros(Q)
    for start in range(0, Q, chunk):
        m = np.broadcast_to(masks[None, start:start + chunk], (n_scms, *masks[start:start + chunk].shape))
        v = np.broadcast_to(values[None, start:start + chunk], m.shape)
        outcomes = P.draw_outcomes(ctx, m, v, rng)
        batch = P.make_batch(ctx.x, ctx.y, ctx.valid, m, v, outcomes)
        scores[start:start + chunk] = M.predict(model, batch, device)["nll"].mean(axis=0)
    return scores


@torch.no_grad()
def validation_nmse(model: M.CausalPFN, prior: P.CausalPrior, spec: P.QuerySpec, rng: np.random.Generator,
                    n_scms: int, draws: int, device: str = "cpu") -> float:
    """nMSE of the predicted mean on fresh prior SCMs and queries of `spec` (truth by
    common-noise Monte Carlo): Σ (μ̂ − μ)² / Σ Var(Y)."""
    ctx = P.draw_contexts(prior, rng, n_scms)
    masks = P.draw_masks(spec, rng, (n_scms, prior.queries), prior.n_covariates)
    values = P.draw_values(spec, rng, masks)
    truth = P.interventional_truth(ctx, masks, values, draws, rng)
    pred = M.predict(model, P.make_batch(ctx.x, ctx.y, ctx.valid, masks, values), device)["mean"]
    return float(np.mean((pred - truth["mu"]) ** 2) / np.mean(truth["obs_sd"] ** 2))


# ------------------------------------------------------------------------------ MSF
def acquisition_scores(losses: np.ndarray, subsets: np.ndarray, picked: list[int], diversity: float) -> np.ndarray:
    """Estimated loss + diversity × (minimum Hamming distance to a picked subset) / d; picked
    subsets score −∞ (each subset is picked at most once). No picks yet: no bonus."""
    scores = np.asarray(losses, dtype=float).copy()
    if picked:
        hamming = (subsets[:, None, :] != subsets[picked][None, :, :]).sum(-1).min(axis=1) / subsets.shape[1]
        scores = scores + diversity * hamming
        scores[picked] = -np.inf
    return scores


@dataclass(frozen=True)
class MSFConfig:
    """rounds R, steps per round, replay fraction of π_pre queries, diversity weight λ, the
    number of fresh prior SCMs per loss estimate; acquisition "loss" (MSF: mean NLL of single
    draws), "nmse" (MSF variant: error of the predicted mean against Monte-Carlo truth with
    `truth_draws` draws — the ablation of the acquisition signal) or "random"."""

    rounds: int
    steps_per_round: int
    replay: float
    diversity: float
    estimate_scms: int
    acquisition: str = "loss"
    truth_draws: int = 400


def meta_sampling_finetune(model: M.CausalPFN, prior: P.CausalPrior, pre_spec: P.QuerySpec, config: MSFConfig,
                           train_config: TrainConfig, seed: int, stream: str, batch_size: int,
                           device: str = "cpu", log: Log | None = None) -> tuple[list[dict], StreamRecord, list[float]]:
    """MSF (acquisition "loss") or random-subset fine-tuning ("random") in place on `model`.
    Returns the acquisition trace (one row per round × subset: estimated loss, bonus, score,
    picked), the training record and the loss of every step."""
    subsets = P.all_subsets(prior.n_covariates)
    picked: list[int] = []
    trace: list[dict] = []
    record = StreamRecord()
    losses: list[float] = []
    pick_rng = stream_rng(seed, f"{stream}/picks", 0)
    for r in range(config.rounds):
        if config.acquisition == "nmse":
            estimated = subset_nmse(model, prior, subsets, stream_rng(seed, f"{stream}/estimate", r),
                                    config.estimate_scms, pre_spec.value_range, config.truth_draws, device)
        else:
            estimated = subset_losses(model, prior, subsets, stream_rng(seed, f"{stream}/estimate", r),
                                      config.estimate_scms, pre_spec.value_range, device)
        scores = acquisition_scores(estimated, subsets, picked, config.diversity)
        if config.acquisition in ("loss", "nmse"):
            choice = int(np.argmax(scores))
        elif config.acquisition == "random":
            free = [i for i in range(len(subsets)) if i not in picked]
            choice = int(free[pick_rng.integers(0, len(free))])
        else:
            raise ValueError(f"acquisition must be 'loss', 'nmse' or 'random', got {config.acquisition!r}")
        for i, m in enumerate(subsets):
            trace.append({"round": r, "subset": P.subset_name(m), "subset_key": P.subset_key(m),
                          "size": int(m.sum()), "estimated_loss": float(estimated[i]),
                          "score": float(scores[i]) if np.isfinite(scores[i]) else None,
                          "picked": i == choice, "already_picked": i in picked})
        picked.append(choice)
        spec = replace(pre_spec, picks=tuple(tuple(int(c) for c in np.flatnonzero(subsets[i])) for i in picked),
                       pick_frac=1.0 - config.replay)
        if log:
            log(f"{stream} round {r + 1}/{config.rounds}: picked {P.subset_name(subsets[choice])} "
                f"(estimated loss {estimated[choice]:.3f})")
        cfg = replace(train_config, steps=config.steps_per_round)
        result = run_training(model, prior, spec, cfg, seed, f"{stream}/round{r}", batch_size, device, record=record)
        losses.extend(result.losses)
    return trace, record, losses
