"""pfn_causal experiment loops: what each asset computes — no Dagster import.

Seeds: `seed_for(*keys)` (the compute resource's derivation) gives the integer seed of every
training stream, `rng(*keys)` the Generators of the eval bank and the targets. Independent
training runs are module-level jobs (`*_job`) for spawned worker processes: each sets its own
torch threads and seeds, so a checkpoint does not depend on the process that trained it.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from math import comb
from typing import Any

import numpy as np
import pandas as pd

from assets.common.pfn import scm as S
from assets.common.pfn.train import TrainConfig, relative_loss_drop, stream_rng
from assets.pfn_causal import prior as P
from assets.pfn_causal.params import PFNCausalParams

SLUG = "pfn_causal"
Log = Callable[[str], None]
SeedFor = Callable[..., int]
LOSS_WINDOW_FRACTION = 0.1           # the loss-drop gate compares the first and last 10 % of steps
GRID, TARGET, FAR = 0, 1, 2          # eval-bank query kinds
MSF_NMSE = "msf_nmse"                # the acquisition ablation's regime / method name


def _quiet(_: str) -> None:
    return None


# ------------------------------------------------------------------------------ configuration
def causal_prior(p: PFNCausalParams, context: tuple[int, int] | None = None) -> P.CausalPrior:
    d = p.n_covariates
    scm = S.SCMPriorConfig(nodes=(d + 1, d + 1), edge_prob=(p.scm.edge_prob, p.scm.edge_prob), mechanisms=("mlp",),
                           mechanism_probs=(1.0,), hidden=p.scm.hidden, activations=("tanh",),
                           noise_sd=tuple(p.scm.noise_sd), noise_kinds=("normal",), pilot_rows=p.scm.pilot_rows)
    return P.CausalPrior(scm=scm, n_covariates=d, context=tuple(context or p.context), queries=p.queries)


def pre_spec(p: PFNCausalParams) -> P.QuerySpec:
    return P.QuerySpec(size_probs=tuple(p.pi_pre), value_range=p.value_range)


def full_spec(p: PFNCausalParams) -> P.QuerySpec:
    """Every subset equally likely: π(|S| = k) ∝ C(d, k) (the gpu profile's full-coverage control)."""
    d = p.n_covariates
    weights = np.array([comb(d, k) for k in range(1, d + 1)], dtype=float)
    return P.QuerySpec(size_probs=tuple((weights / weights.sum()).tolist()), value_range=p.value_range)


def pwf_spec(p: PFNCausalParams, target: dict) -> P.QuerySpec:
    return P.QuerySpec(size_probs=tuple(p.pi_pre), picks=(tuple(target["subset"]),), pick_frac=1.0,
                       value_center=tuple(target["value"]), value_sd=p.pwf.value_sd, value_range=p.value_range)


def model_config(p: PFNCausalParams):
    from assets.pfn_causal.model import CausalPFNConfig

    m = p.model
    return CausalPFNConfig(n_covariates=p.n_covariates, d_model=m.d_model, n_heads=m.n_heads, n_layers=m.n_layers,
                           head=m.head, bins=m.bins)


def pretrain_config(p: PFNCausalParams) -> TrainConfig:
    s = p.pretrain
    return TrainConfig(steps=s.steps, lr=s.lr, weight_decay=s.weight_decay, warmup_steps=s.warmup_steps,
                       min_lr_ratio=s.min_lr_ratio, grad_clip=s.grad_clip)


def finetune_config(p: PFNCausalParams, steps: int) -> TrainConfig:
    s = p.finetune
    return TrainConfig(steps=steps, lr=s.lr, weight_decay=s.weight_decay, warmup_steps=s.warmup_steps,
                       min_lr_ratio=s.min_lr_ratio, grad_clip=s.grad_clip)


def stream_seed(seed_for: SeedFor, seed: int) -> int:
    """The integer seed of every training stream of model seed `seed`."""
    return int(seed_for("model", int(seed)))


def training_streams(p: PFNCausalParams, targets: list[dict], seed_for: SeedFor) -> list[dict]:
    """Every stream a run trains or estimates on: (seed, stream, steps, batch) — what the
    eval-bank leakage gate regenerates."""
    out = []
    for seed in p.seeds:
        s = stream_seed(seed_for, seed)

        def add(stream: str, steps: int, batch: int, s=s, seed=seed) -> None:
            out.append({"seed": int(seed), "stream_seed": s, "stream": stream, "steps": int(steps),
                        "batch": int(batch)})

        add("pretrain", p.pretrain.steps, p.batch_size)
        add("continued", p.pwf.steps, p.batch_size)
        for t in targets:
            longest = max([1, *p.pwf.ablation_multipliers]) if seed == p.seeds[0] and t["value_index"] == 0 else 1
            add(f"pwf/{t['target']}", p.pwf.steps * longest, p.batch_size)
        for name in ("msf", "random_ft"):
            for r in range(p.msf.rounds):
                add(f"{name}/round{r}", p.msf.steps_per_round, p.batch_size)
            add(f"{name}/estimate", p.msf.rounds, p.msf.estimate_scms)
        add("validation", 1, p.validation.scms)
        add("rule/calibration", 1, p.rule.scms)
        add("rule/bank", 1, p.rule.scms)
        add("rule/targets", 1, p.rule.scms)
        if p.model.head == "bar":
            add("borders", 32, p.batch_size)
        if p.full_coverage:
            add("full_coverage", p.pretrain.steps, p.batch_size)
    return out


# ------------------------------------------------------------------------------ prior config
def choose_targets(p: PFNCausalParams, rng: np.random.Generator) -> list[dict]:
    """PWF targets: `target_subsets` uncovered subsets (all when fewer) × `values_per_subset`
    values v* ~ U(−target_range, target_range)^|S|, and each target's far point
    v* − sign(v*) · far_distance (every coordinate that far from v*)."""
    d = p.n_covariates
    uncovered = [m for m in P.all_subsets(d) if P.subset_probability(m, p.pi_pre) == 0]
    if not uncovered:
        raise ValueError("π_pre covers every subset: there is no uncovered target for PWF")
    chosen = sorted(rng.choice(len(uncovered), size=min(p.pwf.target_subsets, len(uncovered)), replace=False))
    targets = []
    for i in chosen:
        cols = [int(c) for c in np.flatnonzero(uncovered[i])]
        for j in range(p.pwf.values_per_subset):
            v = rng.uniform(-p.pwf.target_range, p.pwf.target_range, size=len(cols))
            far = v - np.where(v >= 0, 1.0, -1.0) * p.pwf.far_distance
            targets.append({"target": f"t{len(targets)}", "subset": cols, "name": P.subset_name(uncovered[i]),
                            "key": P.subset_key(uncovered[i]), "value_index": j,
                            "value": [round(float(x), 6) for x in v], "far": [round(float(x), 6) for x in far]})
    return targets


def coverage_table(p: PFNCausalParams, seed_for: SeedFor) -> tuple[list[dict], list[dict], int]:
    """Empirical subset frequencies in the first `coverage_steps` steps of every seed's
    pretraining stream (regenerated exactly as training draws them) vs π_pre. Returns (rows
    per subset, rows per size, queries sampled)."""
    prior, spec, d = causal_prior(p), pre_spec(p), p.n_covariates
    counts: dict[int, int] = {}
    total = 0
    for seed in p.seeds:
        s = stream_seed(seed_for, seed)
        for step in range(min(p.coverage_steps, p.pretrain.steps)):
            masks = P.stream_masks(prior, spec, stream_rng(s, "pretrain", step), p.batch_size).reshape(-1, d)
            for key in (masks * (1 << np.arange(d))).sum(axis=1):
                counts[int(key)] = counts.get(int(key), 0) + 1
            total += len(masks)
    subsets = []
    for m in P.all_subsets(d):
        key = P.subset_key(m)
        subsets.append({"subset": P.subset_name(m), "key": key, "size": int(m.sum()),
                        "expected": P.subset_probability(m, p.pi_pre), "count": counts.get(key, 0),
                        "empirical": counts.get(key, 0) / max(1, total)})
    sizes = []
    for k in range(1, d + 1):
        count = sum(r["count"] for r in subsets if r["size"] == k)
        sizes.append({"size": k, "subsets": comb(d, k), "expected": float(p.pi_pre[k - 1]), "count": count,
                      "empirical": count / max(1, total)})
    return subsets, sizes, total


def distinct_interventional_means(d: int, rng: np.random.Generator, tol: float = 1e-9) -> dict:
    """On a complete linear DAG over d covariates + Y (every j < i edge, generic weights),
    E[Y | do(X_S = v)] for one generic v and every non-empty subset S: how many of the
    2^d − 1 means are distinct (closed form)."""
    V = d + 1
    W = np.triu(rng.uniform(0.5, 1.5, size=(V, V)) * rng.choice([-1.0, 1.0], size=(V, V)), k=1)
    bias = rng.normal(size=V)
    v = np.append(rng.uniform(-1.5, 1.5, size=d), 0.0)
    means = np.array([S.linear_interventional_mean(W, bias, np.append(m, False), v)[-1] for m in P.all_subsets(d)])
    ordered = np.sort(means)
    distinct = 1 + int(np.sum(np.diff(ordered) > tol * max(1.0, np.abs(ordered).max())))
    return {"d": d, "subsets": 2 ** d - 1, "distinct_means": distinct, "covered_by_pi_pre": d + comb(d, 2),
            "min_gap": float(np.diff(ordered).min()) if len(ordered) > 1 else float("nan")}


def prior_config(p: PFNCausalParams, seed_for: SeedFor, rng: Callable[..., np.random.Generator]) -> dict:
    """The prior + π_pre spec, the PWF targets, the coverage table of the pretraining stream,
    and the exponential-space count (closed form, d = the profile's d and 8)."""
    d = p.n_covariates
    targets = choose_targets(p, rng("targets"))
    subsets, sizes, total = coverage_table(p, seed_for)
    space = [distinct_interventional_means(k, rng("space", k)) for k in sorted({d, 8})]
    return {"n_covariates": d, "pi_pre": list(p.pi_pre), "value_range": p.value_range,
            "prior": {"edge_prob": p.scm.edge_prob, "hidden": p.scm.hidden, "activation": "tanh",
                      "noise_sd": list(p.scm.noise_sd), "pilot_rows": p.scm.pilot_rows, "context": list(p.context),
                      "queries": p.queries},
            "targets": targets, "coverage_subsets": subsets, "coverage_sizes": sizes, "coverage_queries": total,
            "coverage_steps": min(p.coverage_steps, p.pretrain.steps), "space": space}


# ------------------------------------------------------------------------------ eval bank
def bank_queries(p: PFNCausalParams, targets: list[dict], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Query layout of every bank SCM: the grid (every subset × `values` values ~
    U(−r, r), drawn per SCM), then each target's v*, then each target's far point."""
    d, B, V = p.n_covariates, p.eval.scms, p.eval.values
    subsets = P.all_subsets(d)
    grid_masks = np.repeat(subsets, V, axis=0)                                         # (K·V, d)
    grid_vals = rng.uniform(-p.value_range, p.value_range, size=(B, len(grid_masks), d))
    t_masks = np.array([np.isin(np.arange(d), t["subset"]) for t in targets], dtype=bool).reshape(-1, d)

    def place(key: str) -> np.ndarray:
        out = np.zeros((len(targets), d))
        for i, t in enumerate(targets):
            out[i, t["subset"]] = t[key]
        return out

    masks = np.concatenate([grid_masks, t_masks, t_masks])
    values = np.concatenate([grid_vals, np.broadcast_to(place("value"), (B, len(targets), d)),
                             np.broadcast_to(place("far"), (B, len(targets), d))], axis=1)
    masks_b = np.broadcast_to(masks, (B, *masks.shape)).copy()
    kind = np.concatenate([np.full(len(grid_masks), GRID), np.full(len(targets), TARGET), np.full(len(targets), FAR)])
    target = np.concatenate([np.full(len(grid_masks), -1), np.arange(len(targets)), np.arange(len(targets))])
    subset = np.array([P.subset_key(m) for m in masks])
    return {"q_mask": masks_b, "q_val": np.where(masks_b, values, 0.0), "q_kind": kind, "q_target": target,
            "q_subset": subset}


def eval_bank(p: PFNCausalParams, targets: list[dict], rng: np.random.Generator, log: Log = _quiet) -> dict:
    """The held-out bank: SCMs (arrays), D_obs at the largest context size (smaller sizes are
    its first rows), every query and its Monte-Carlo truth. Returns arrays + fingerprints."""
    prior = causal_prior(p)
    n_max = max(p.eval.context_sizes)
    ctx_rng, query_rng, truth_rng = rng.spawn(3)
    ctx = P.draw_contexts(prior, ctx_rng, p.eval.scms, n=n_max)
    queries = bank_queries(p, targets, query_rng)
    start = time.monotonic()
    truth = P.interventional_truth(ctx, queries["q_mask"], queries["q_val"], p.eval.mc_draws, truth_rng)
    log(f"eval bank: {p.eval.scms} SCMs × {queries['q_mask'].shape[1]} queries, truth from {p.eval.mc_draws} "
        f"common-noise draws in {time.monotonic() - start:.1f} s")
    arrays = {f"scm.{k}": v for k, v in ctx.scms.arrays().items()}
    arrays.update({"perm": ctx.perm, "x": ctx.x, "y": ctx.y, **queries, **truth})
    return {"arrays": arrays, "fingerprints": ctx.fingerprints}


def bank_scms(arrays: dict[str, Any]) -> S.SCMBatch:
    return S.SCMBatch.from_arrays({k[4:]: np.asarray(v) for k, v in arrays.items() if k.startswith("scm.")})


def bank_frame(arrays: dict[str, Any], targets: list[dict]) -> pd.DataFrame:
    """The bank's queries with their truth, one row per SCM × query."""
    mu = np.asarray(arrays["mu"])
    B, Q = mu.shape
    masks = np.asarray(arrays["q_mask"])
    names = [P.subset_name(m) for m in masks[0]]
    kinds = np.asarray(arrays["q_kind"])
    t_index = np.asarray(arrays["q_target"])
    obs_sd = np.asarray(arrays["obs_sd"])
    return pd.DataFrame({
        "scm": np.repeat(np.arange(B), Q), "query": np.tile(np.arange(Q), B),
        "kind": np.tile(np.array(["grid", "target", "far"])[kinds], B),
        "target": np.tile([targets[i]["target"] if i >= 0 else "" for i in t_index], B),
        "subset": np.tile(names, B), "size": np.tile(masks[0].sum(axis=1), B),
        "mu": mu.ravel(), "se": np.asarray(arrays["se"]).ravel(), "var_y": np.repeat(obs_sd ** 2, Q)})


# ------------------------------------------------------------------------------ training jobs
def _torch_setup(job: dict):
    from assets.common.worker import torch_worker

    return torch_worker(job["threads"], job["stream_seed"], job["deterministic"], cap_blas=True)


def pretrain_job(job: dict) -> dict:
    """One pretraining run (π_pre, or every subset for the full-coverage control) and its
    validation nMSE on covered queries. Returns the CPU state_dict and the record."""
    from assets.pfn_causal import method as ME
    from assets.pfn_causal import model as M

    _torch_setup(job)
    p: PFNCausalParams = job["params"]
    prior, spec = causal_prior(p), (full_spec(p) if job["regime"] == "full_coverage" else pre_spec(p))
    s, device = int(job["stream_seed"]), job["device"]
    borders = ME.bar_borders(prior, spec, p.model.bins, s) if p.model.head == "bar" else None
    model = M.build_model(model_config(p), s, borders)

    def validate() -> float:        # the same held-out SCMs and covered queries before and after
        return ME.validation_nmse(model, prior, pre_spec(p), stream_rng(s, "validation", 0), p.validation.scms,
                                  p.validation.mc_draws, device)

    initial = validate()
    result = ME.run_training(model, prior, spec, pretrain_config(p), s, job["stream"], p.batch_size, device)
    nmse = validate()
    model.cpu()
    return {"state": model.state_dict(), "losses": result.losses, "seconds": result.seconds,
            "validation_nmse": nmse, "initial_nmse": initial}


def msf_config(p: PFNCausalParams, regime: str):
    """MSF's schedule for `regime`: "msf" (acquisition by mean NLL), "random_ft" (uniformly
    random picks) or MSF_NMSE (the ablation: acquisition by the nMSE of the predicted mean
    against Monte-Carlo truth, with its own Hamming weight on the nMSE scale)."""
    from assets.pfn_causal import method as ME

    acquisition = {"msf": "loss", "random_ft": "random", MSF_NMSE: "nmse"}[regime]
    diversity = p.msf_ablation.diversity if regime == MSF_NMSE else p.msf.diversity
    return ME.MSFConfig(rounds=p.msf.rounds, steps_per_round=p.msf.steps_per_round, replay=p.msf.replay,
                        diversity=diversity, estimate_scms=p.msf.estimate_scms, acquisition=acquisition,
                        truth_draws=p.msf_ablation.truth_draws)


def finetune_job(job: dict) -> dict:
    """One fine-tuning run from the pretrained weights: continued pretraining, PWF for one
    target, MSF or random-subset fine-tuning. Returns state_dict, losses, record, trace."""
    import torch

    from assets.pfn_causal import method as ME
    from assets.pfn_causal import model as M

    _torch_setup(job)
    p: PFNCausalParams = job["params"]
    prior, s, device = causal_prior(p), int(job["stream_seed"]), job["device"]
    model = M.CausalPFN(model_config(p), np.asarray(job["borders"]) if job["borders"] is not None else None)
    model.load_state_dict({k: torch.as_tensor(v) for k, v in job["state"].items()})
    record, trace = ME.StreamRecord(), []
    start = time.perf_counter()
    regime = job["regime"]
    if regime == "continued":
        losses = ME.run_training(model, prior, pre_spec(p), finetune_config(p, p.pwf.steps), s, "continued",
                                 p.batch_size, device, record=record).losses
    elif regime == "pwf":
        target = job["target"]
        losses = ME.run_training(model, prior, pwf_spec(p, target), finetune_config(p, p.pwf.steps), s,
                                 f"pwf/{target['target']}", p.batch_size, device, record=record).losses
    elif regime in ("msf", "random_ft", MSF_NMSE):
        config = msf_config(p, regime)
        stream = "msf" if regime == MSF_NMSE else regime        # the variant: MSF's own streams
        trace, record, losses = ME.meta_sampling_finetune(model, prior, pre_spec(p), config,
                                                          finetune_config(p, p.msf.steps_per_round), s, stream,
                                                          p.batch_size, device)
    else:
        raise ValueError(f"unknown fine-tuning regime {regime!r}")
    model.cpu()
    return {"state": model.state_dict(), "losses": losses, "seconds": time.perf_counter() - start,
            "record": record.as_dict(), "trace": trace}


def _jobs_common(p: PFNCausalParams, compute: Any) -> dict:
    return {"params": p, "threads": compute.torch_threads(p.torch_threads),
            "deterministic": bool(compute.deterministic), "device": compute.resolved_device()}


def _run(jobs: list[dict], fn: Callable[[dict], dict], p: PFNCausalParams, compute: Any, label: str,
         log: Log) -> list[dict]:
    """Run jobs on compute.workers(...) spawned processes (longest first), results in job order."""
    from assets.common.parallel import spawn_imap
    from assets.common.progress import Progress

    cost = [j.get("cost", 1.0) for j in jobs]
    order = sorted(range(len(jobs)), key=lambda i: -cost[i])
    workers = compute.workers(len(jobs), p.workers)
    log(f"{label}: {len(jobs)} run(s) on {workers} worker process(es)")
    progress = Progress(log, len(jobs), label)
    results: dict[int, dict] = {}
    for i, out in zip(order, spawn_imap(fn, [jobs[i] for i in order], workers)):
        results[i] = out
        progress.step(jobs[i]["name"])
    return [results[i] for i in range(len(jobs))]


def _save(artifacts: Any, compute: Any, name: str, state: dict, p: PFNCausalParams, seed: int, stream_seed: int,
          **extra: Any) -> dict:
    from resources.artifacts import save_checkpoint

    return save_checkpoint(artifacts.checkpoint_path(SLUG, name), state, provenance=compute.provenance(SLUG),
                           config=model_config(p), seed=int(seed), device=compute.resolved_device(),
                           stream_seed=int(stream_seed), **extra)


def pretrain(p: PFNCausalParams, compute: Any, artifacts: Any, seed_for: SeedFor,
             log: Log = _quiet) -> tuple[pd.DataFrame, list[dict]]:
    """One pretrained checkpoint per seed (and a full-coverage control per seed when the
    profile asks). Returns (table, timing rows)."""
    regimes = ["pretrain"] + (["full_coverage"] if p.full_coverage else [])
    jobs = [{**_jobs_common(p, compute), "stream_seed": stream_seed(seed_for, s), "seed": int(s), "regime": r,
             "stream": r, "name": f"{r}/seed {s}", "cost": float(p.pretrain.steps)}
            for r in regimes for s in p.seeds]
    outs = _run(jobs, pretrain_job, p, compute, "pretraining", log)
    rows, timings = [], []
    window = max(1, int(LOSS_WINDOW_FRACTION * p.pretrain.steps))
    for job, out in zip(jobs, outs):
        name = f"{job['regime']}_s{job['seed']}"
        drop = relative_loss_drop(out["losses"], window)
        ref = _save(artifacts, compute, name, out["state"], p, job["seed"], job["stream_seed"],
                    regime=job["regime"], loss_curve=[round(x, 6) for x in out["losses"]])
        rows.append({"seed": job["seed"], "regime": job["regime"], **ref, "steps": len(out["losses"]),
                     "final_loss": float(np.mean(out["losses"][-window:])), "loss_drop": drop,
                     "initial_nmse": out["initial_nmse"], "validation_nmse": out["validation_nmse"],
                     "stream_seed": job["stream_seed"]})
        timings.append({"seed": job["seed"], "regime": job["regime"], "train_seconds": out["seconds"],
                        "seconds_per_step": out["seconds"] / max(1, len(out["losses"]))})
        log(f"{name}: loss {rows[-1]['final_loss']:.4f} (drop {drop:.1%}), validation nMSE "
            f"{out['validation_nmse']:.3f}, {out['seconds']:.0f} s")
    return pd.DataFrame(rows), timings


def _pretrained_state(pretrained: pd.DataFrame, seed: int) -> tuple[dict, Any]:
    from resources.artifacts import load_checkpoint

    row = pretrained[(pretrained["seed"] == seed) & (pretrained["regime"] == "pretrain")].iloc[0]
    state, _ = load_checkpoint(row["checkpoint"])
    borders = state["borders"].numpy() if "borders" in state else None
    return {k: v.numpy() for k, v in state.items()}, borders


def finetune(regime: str, pretrained: pd.DataFrame, p: PFNCausalParams, compute: Any, artifacts: Any,
             seed_for: SeedFor, targets: list[dict] | None = None,
             log: Log = _quiet) -> tuple[pd.DataFrame, list[dict], list[dict]]:
    """Fine-tuned checkpoints of one regime for every seed (× target for PWF). Returns (table
    with one row per checkpoint, MSF/random acquisition trace rows (dicts), timing rows); the SCM
    fingerprints and mask counts each run trained on go to its checkpoint sidecar."""
    jobs = []
    for s in p.seeds:
        state, borders = _pretrained_state(pretrained, int(s))
        base = {**_jobs_common(p, compute), "stream_seed": stream_seed(seed_for, s), "seed": int(s), "regime": regime,
                "state": state, "borders": borders}
        if regime == "pwf":
            jobs += [{**base, "target": t, "name": f"pwf {t['target']} ({t['name']})/seed {s}",
                      "cost": float(p.pwf.steps)} for t in (targets or [])]
        else:
            steps = p.pwf.steps if regime == "continued" else p.msf.rounds * p.msf.steps_per_round
            jobs.append({**base, "target": None, "name": f"{regime}/seed {s}", "cost": float(steps)})
    outs = _run(jobs, finetune_job, p, compute, regime, log)
    rows, traces, timings = [], [], []
    for job, out in zip(jobs, outs):
        target = job["target"]
        name = f"{regime}_s{job['seed']}" + (f"_{target['target']}" if target else "")
        declared = sorted(_declared_masks(regime, p, target))
        ref = _save(artifacts, compute, name, out["state"], p, job["seed"], job["stream_seed"], regime=regime,
                    target=target, declared_masks=declared, loss_curve=[round(x, 6) for x in out["losses"]],
                    **out["record"])
        rows.append({"seed": job["seed"], "regime": regime, "target": target["target"] if target else "",
                     "subset": target["name"] if target else "", **ref, "steps": len(out["losses"]),
                     "first_loss": float(np.mean(out["losses"][:10])),
                     "final_loss": float(np.mean(out["losses"][-10:])),
                     "training_scms": len(out["record"]["scm_fingerprints"]), "stream_seed": job["stream_seed"]})
        traces += [{"seed": job["seed"], "regime": regime, **t} for t in out["trace"]]
        timings.append({"seed": job["seed"], "regime": regime, "target": rows[-1]["target"],
                        "train_seconds": out["seconds"],
                        "seconds_per_step": out["seconds"] / max(1, len(out["losses"]))})
    return pd.DataFrame(rows), traces, timings


def _declared_masks(regime: str, p: PFNCausalParams, target: dict | None) -> set[int]:
    """The subset keys a regime may train on: π_pre's support (continued), the target's subset
    (PWF), π_pre's support and any subset (MSF / random picks are recorded in the trace)."""
    d = p.n_covariates
    if regime == "pwf":
        return {int(target["key"])}
    if regime == "continued":
        return pre_spec(p).support(d)
    return {P.subset_key(m) for m in P.all_subsets(d)}


def declared_masks(regime: str, p: PFNCausalParams, target: dict | None, picks: list[int] | None = None) -> set[int]:
    """What a checkpoint may have trained on; MSF / random: π_pre's support ∪ their picks."""
    if regime in ("msf", "random_ft"):
        return pre_spec(p).support(p.n_covariates) | set(int(k) for k in (picks or []))
    return _declared_masks(regime, p, target)


# ------------------------------------------------------------------------------ rule
def finetune_rule(pretrained: pd.DataFrame, bank: dict, targets: list[dict], p: PFNCausalParams, compute: Any,
                  seed_for: SeedFor, log: Log = _quiet) -> dict:
    """Per seed: threshold = `quantile` of the scores of covered calibration queries (π_pre),
    then the verdict (score > threshold → PWF) on the bank's queries of its first bank_scms
    SCMs and on every PWF target. Score = the pretrained model's mean NLL for the query over
    fresh prior SCMs (method.query_scores)."""
    from assets.pfn_causal import method as ME

    prior = causal_prior(p)
    arrays = bank["arrays"]
    n_bank = min(p.rule.bank_scms, p.eval.scms)
    kinds = np.asarray(arrays["q_kind"])
    grid = np.flatnonzero(kinds == GRID)
    masks_b = np.asarray(arrays["q_mask"])[:n_bank][:, grid].reshape(-1, p.n_covariates)
    values_b = np.asarray(arrays["q_val"])[:n_bank][:, grid].reshape(-1, p.n_covariates)
    t_masks = np.array([np.isin(np.arange(p.n_covariates), t["subset"]) for t in targets]).reshape(-1, p.n_covariates)
    t_values = np.zeros(t_masks.shape)
    for i, t in enumerate(targets):
        t_values[i, t["subset"]] = t["value"]
    out = {"quantile": p.rule.quantile, "scms": p.rule.scms, "seeds": {}}
    for seed in p.seeds:
        s = stream_seed(seed_for, seed)
        model = load_model(pretrained[(pretrained["seed"] == seed) & (pretrained["regime"] == "pretrain")].iloc[0]
                           ["checkpoint"], p)
        cal_rng = stream_rng(s, "rule/calibration", 0)
        cal_masks = P.draw_masks(pre_spec(p), cal_rng, (p.rule.calibration_queries,), p.n_covariates)
        cal_values = P.draw_values(pre_spec(p), cal_rng, cal_masks)
        cal = ME.query_scores(model, prior, cal_masks, cal_values, stream_rng(s, "rule/calibration", 1), p.rule.scms)
        threshold = float(np.quantile(cal, p.rule.quantile))
        bank_scores = ME.query_scores(model, prior, masks_b, values_b, stream_rng(s, "rule/bank", 0), p.rule.scms)
        target_scores = ME.query_scores(model, prior, t_masks, t_values, stream_rng(s, "rule/targets", 0),
                                        p.rule.scms)
        sizes = masks_b.sum(axis=1)
        rates = {str(k): float(np.mean(bank_scores[sizes == k] > threshold)) for k in range(1, p.n_covariates + 1)}
        out["seeds"][str(seed)] = {
            "threshold": threshold, "calibration_scores": [round(float(x), 6) for x in cal],
            "calibration_exceed": float(np.mean(cal > threshold)), "bank_sent_by_size": rates,
            "bank_queries": int(len(bank_scores)),
            "targets": [{"target": t["target"], "score": float(sc), "pwf": bool(sc > threshold)}
                        for t, sc in zip(targets, target_scores)]}
        log(f"rule seed {seed}: threshold {threshold:.3f}; sent to PWF by |S|: "
            + ", ".join(f"{k}: {v:.0%}" for k, v in rates.items()))
    return out


def load_model(ref: Any, p: PFNCausalParams):
    """A checkpoint (reference or data-root-relative path) as an eval-mode CausalPFN."""
    from assets.pfn_causal import model as M
    from resources.artifacts import load_checkpoint

    state, sidecar = load_checkpoint(ref)
    config = M.CausalPFNConfig(**sidecar["config"]) if sidecar.get("config") else model_config(p)
    model = M.CausalPFN(config, state["borders"].numpy() if "borders" in state else None)
    model.load_state_dict(state)
    return model.eval()


# ------------------------------------------------------------------------------ predictions
def bank_batch(arrays: dict, n: int, query_index: np.ndarray | None = None) -> P.TaskBatch:
    """The bank as a model batch at context size n (the first n rows), all queries or a subset."""
    x, y = np.asarray(arrays["x"])[:, :n], np.asarray(arrays["y"])[:, :n]
    masks, values = np.asarray(arrays["q_mask"]), np.asarray(arrays["q_val"])
    if query_index is not None:
        masks, values = masks[:, query_index], values[:, query_index]
    return P.make_batch(x, y, np.ones(x.shape[:2], dtype=bool), masks, values)


def predictions(pretrained: pd.DataFrame, finetuned: dict[str, pd.DataFrame], bank: dict, p: PFNCausalParams,
                log: Log = _quiet) -> pd.DataFrame:
    """Predicted μ and variance on the bank for every PFN (seed × method × context size):
    zero-shot, continued, MSF, random-subset FT (and full coverage) on every query; each PWF
    checkpoint on the queries of its target subset."""
    arrays = bank["arrays"]
    subsets = np.asarray(arrays["q_subset"])
    models = [(r.seed, "zero_shot" if r.regime == "pretrain" else r.regime, "", r.checkpoint)
              for r in pretrained.itertuples()]
    for regime, table in finetuned.items():
        models += [(r.seed, regime, r.target, r.checkpoint) for r in table.itertuples()]
    targets = {t["target"]: t for t in bank["targets"]}
    frames = []
    for seed, method, target, ref in models:
        model = load_model(ref, p)
        index = np.arange(len(subsets)) if not target else np.flatnonzero(subsets == targets[target]["key"])
        for n in p.eval.context_sizes:
            pred = predict_bank(model, arrays, n, index)
            frames.append(pd.DataFrame({"seed": int(seed), "method": method, "target": target, "n": int(n),
                                        "scm": np.repeat(np.arange(pred["mean"].shape[0]), len(index)),
                                        "query": np.tile(index, pred["mean"].shape[0]),
                                        "mu_hat": pred["mean"].ravel(), "var_hat": pred["var"].ravel()}))
        log(f"predictions: {method}{'/' + target if target else ''} seed {seed}")
    return pd.concat(frames, ignore_index=True)


def predict_bank(model, arrays: dict, n: int, index: np.ndarray) -> dict[str, np.ndarray]:
    from assets.pfn_causal import model as M

    return M.predict(model, bank_batch(arrays, n, index))


# ------------------------------------------------------------------------------ baselines
def baseline_job(job: dict) -> dict:
    """g-formula, S-learner and naive estimates of one bank SCM at one context size."""
    from threadpoolctl import threadpool_limits

    from assets.pfn_causal import baselines as BL

    with threadpool_limits(limits=int(job["threads"])):
        x, y, masks, values = job["x"], job["y"], job["masks"], job["values"]
        parents, y_parents, order = BL.column_graph(job["adjacency"], job["perm"])
        config, rng = job["hgb"], np.random.default_rng(job["seed"])
        start = time.perf_counter()
        out = {"g_formula": BL.g_formula(x, y, parents, y_parents, order, masks, values, job["draws"], rng, config),
               "s_learner": BL.s_learner(x, y, masks, values, config),
               "naive": BL.naive(x, y, masks, values, config)}
    return {**out, "seconds": time.perf_counter() - start}


def baseline_estimates(bank: dict, p: PFNCausalParams, compute: Any, seed_for: SeedFor,
                       log: Log = _quiet) -> tuple[pd.DataFrame, list[dict]]:
    """The classical estimators on every bank SCM × context size × query. Returns (rows
    (method, n, scm, query, mu_hat), timing rows)."""
    from assets.pfn_causal.baselines import HGBConfig

    arrays = bank["arrays"]
    b = p.baselines
    hgb = HGBConfig(max_iter=b.max_iter, learning_rate=b.learning_rate, max_leaf_nodes=b.max_leaf_nodes,
                    min_samples_leaf=b.min_samples_leaf)
    adjacency = np.asarray(arrays["scm.adjacency"]).astype(bool)
    jobs = []
    for n in p.eval.context_sizes:
        for i in range(p.eval.scms):
            jobs.append({"name": f"scm {i}/n={n}", "n": int(n), "scm": i, "x": np.asarray(arrays["x"])[i, :n],
                         "y": np.asarray(arrays["y"])[i, :n], "masks": np.asarray(arrays["q_mask"])[i],
                         "values": np.asarray(arrays["q_val"])[i], "adjacency": adjacency[i],
                         "perm": np.asarray(arrays["perm"])[i], "hgb": hgb, "draws": b.g_formula_draws,
                         "seed": seed_for("baselines", i, n), "threads": compute.torch_threads(p.torch_threads)})
    outs = _run(jobs, baseline_job, p, compute, "baselines", log)
    frames, timings = [], []
    for job, out in zip(jobs, outs):
        for method in ("g_formula", "s_learner", "naive"):
            frames.append(pd.DataFrame({"method": method, "n": job["n"], "scm": job["scm"],
                                        "query": np.arange(len(out[method])), "mu_hat": out[method]}))
        timings.append({"scm": job["scm"], "n": job["n"], "seconds": out["seconds"]})
    return pd.concat(frames, ignore_index=True), timings


def with_params(p: PFNCausalParams, **changes: Any) -> PFNCausalParams:
    return replace(p, **changes)


def pwf_ablation(pretrained: pd.DataFrame, bank: dict, p: PFNCausalParams, compute: Any, seed_for: SeedFor,
                 log: Log = _quiet) -> tuple[pd.DataFrame, list[dict]]:
    """PWF at K × m steps (m in pwf.ablation_multipliers) for the first seed and the first
    value of every target subset, scored on the bank's target queries at the largest n.
    Rows (seed, target, steps, pwf, zero_shot) of nMSE; no checkpoint is kept."""
    import torch

    from assets.pfn_causal import model as M

    targets = [t for t in bank["targets"] if t["value_index"] == 0]
    if not p.pwf.ablation_multipliers or not targets:
        return pd.DataFrame(columns=["seed", "target", "steps", "pwf", "zero_shot"]), []
    seed = int(p.seeds[0])
    state, borders = _pretrained_state(pretrained, seed)
    jobs = []
    for m in p.pwf.ablation_multipliers:
        q = with_params(p, pwf=replace(p.pwf, steps=p.pwf.steps * int(m)))
        jobs += [{**_jobs_common(q, compute), "stream_seed": stream_seed(seed_for, seed), "seed": seed,
                  "regime": "pwf", "state": state, "borders": borders, "target": t,
                  "name": f"pwf {t['target']} K={q.pwf.steps}", "cost": float(q.pwf.steps)} for t in targets]
    outs = _run(jobs, finetune_job, p, compute, "pwf ablation", log)
    arrays, n = bank["arrays"], max(p.eval.context_sizes)
    kinds, t_index = np.asarray(arrays["q_kind"]), np.asarray(arrays["q_target"])
    ids = {t["target"]: i for i, t in enumerate(bank["targets"])}
    base = load_model(pretrained[(pretrained["seed"] == seed) & (pretrained["regime"] == "pretrain")].iloc[0]
                      ["checkpoint"], p)
    var_y = np.asarray(arrays["obs_sd"]) ** 2
    rows, timings = [], []
    for job, out in zip(jobs, outs):
        index = np.flatnonzero((kinds == TARGET) & (t_index == ids[job["target"]["target"]]))
        mu = np.asarray(arrays["mu"])[:, index]
        model = M.CausalPFN(model_config(p), borders)
        model.load_state_dict({k: torch.as_tensor(v) for k, v in out["state"].items()})

        def nmse(mdl, index=index, mu=mu) -> float:
            return float(np.mean((predict_bank(mdl, arrays, n, index)["mean"] - mu) ** 2 / var_y[:, None]))

        rows.append({"seed": seed, "target": job["target"]["target"], "subset": job["target"]["name"],
                     "steps": len(out["losses"]), "pwf": nmse(model.eval()), "zero_shot": nmse(base)})
        timings.append({"seed": seed, "regime": "pwf_ablation", "target": job["target"]["target"],
                        "train_seconds": out["seconds"],
                        "seconds_per_step": out["seconds"] / max(1, len(out["losses"]))})
    return pd.DataFrame(rows), timings


def msf_ablation(pretrained: pd.DataFrame, predictions: pd.DataFrame, run_traces: list[dict], bank: dict,
                 p: PFNCausalParams, compute: Any, seed_for: SeedFor,
                 log: Log = _quiet) -> tuple[pd.DataFrame, list[dict]]:
    """The ablation of MSF's acquisition signal, for each seed of msf_ablation.seeds: MSF
    re-run from that seed's pretrained checkpoint with MSF's schedule, streams ("msf/round r",
    "msf/estimate"), replay and budget but acquisition "nmse" (the predicted mean's error
    against Monte-Carlo truth on the same fresh prior SCMs, never the bank), scored on the
    bank grid at the largest n next to the run's zero-shot, MSF and random-subset predictions
    (read from `predictions`, not recomputed; their picks from `run_traces`, the MSF and
    random-subset acquisition traces). Returns (one row per seed × method: worst,
    worst_subset, mean, covered, uncovered nMSE and the picks — benchmark.acquisition_summary),
    timing rows); no checkpoint is kept."""
    import torch

    from assets.pfn_causal import benchmark as B
    from assets.pfn_causal import model as M

    seeds = [int(s) for s in p.msf_ablation.seeds]
    if not seeds:
        return pd.DataFrame(columns=B.ACQUISITION_COLUMNS), []
    jobs = []
    for seed in seeds:
        state, borders = _pretrained_state(pretrained, seed)
        jobs.append({**_jobs_common(p, compute), "stream_seed": stream_seed(seed_for, seed), "seed": seed,
                     "regime": MSF_NMSE, "state": state, "borders": borders, "target": None,
                     "name": f"{MSF_NMSE}/seed {seed}", "cost": float(p.msf.rounds * p.msf.steps_per_round)})
    outs = _run(jobs, finetune_job, p, compute, "msf acquisition ablation", log)
    arrays, n = bank["arrays"], max(p.eval.context_sizes)
    grid = np.flatnonzero(np.asarray(arrays["q_kind"]) == GRID)
    run = predictions[predictions["seed"].isin(seeds) & predictions["method"].isin(["zero_shot", "msf", "random_ft"])
                      & (predictions["target"] == "") & (predictions["n"] == n) & predictions["query"].isin(grid)]
    frames = [run[["seed", "method", "n", "scm", "query", "mu_hat"]]]
    traces = [{"seed": int(t["seed"]), "regime": t["regime"], "round": t["round"], "subset": t["subset"],
               "size": t["size"], "picked": t["picked"]} for t in run_traces if int(t["seed"]) in seeds]
    timings = []
    for job, out in zip(jobs, outs):
        model = M.CausalPFN(model_config(p), job["borders"])
        model.load_state_dict({k: torch.as_tensor(v) for k, v in out["state"].items()})
        pred = predict_bank(model.eval(), arrays, n, grid)["mean"]
        frames.append(pd.DataFrame({"seed": job["seed"], "method": MSF_NMSE, "n": n,
                                    "scm": np.repeat(np.arange(pred.shape[0]), len(grid)),
                                    "query": np.tile(grid, pred.shape[0]), "mu_hat": pred.ravel()}))
        traces += [{"seed": job["seed"], "regime": MSF_NMSE, "round": t["round"], "subset": t["subset"],
                    "size": t["size"], "picked": t["picked"]} for t in out["trace"]]
        timings.append({"seed": job["seed"], "regime": MSF_NMSE, "train_seconds": out["seconds"],
                        "seconds_per_step": out["seconds"] / max(1, len(out["losses"]))})
        log(f"{MSF_NMSE} seed {job['seed']}: picked "
            + " → ".join(t["subset"] for t in out["trace"] if t["picked"]) + f", {out['seconds']:.0f} s")
    table = B.acquisition_summary(pd.concat(frames, ignore_index=True), bank_frame(arrays, bank["targets"]), traces)
    return table, timings
