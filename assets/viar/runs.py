"""VIAR experiment loops: what each asset computes — no Dagster import.

Every function takes the typed parameters, the compute resource (seeds, device, torch
threads) and, where it writes checkpoints, the artifacts resource; `log` receives progress
lines. torch and the model modules are imported inside the functions (definitions.py imports
this module for wiring only). Wall-clock seconds never enter a returned table: functions that
time something return the timing separately (a run record for the asset's metadata), except
`measure_throughput`, whose table is itself a wall-clock measurement (a volatile asset).
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from assets.common.params import thaw
from assets.common.worker import torch_worker
from assets.viar import data
from assets.viar.params import VIARRunParams
from resources.artifacts import data_ref, load_checkpoint, save_state_dict

SLUG = "viar"
Log = Callable[[str], None]


def _quiet(_: str) -> None:
    return None


def torch_for(compute: Any, p: VIARRunParams, seed: int | None = None):
    """compute.torch(seed) with at most p.torch_threads threads: on the shared 2-core machine two
    OpenMP threads per process spin against the other processes and ran these small kernels
    5–10× slower than one (measured); the resource's limit still applies."""
    return compute.torch(seed, threads=p.torch_threads)


# ------------------------------------------------------------------------------ configs
def tokenizer_config(p: VIARRunParams, dataset: str):
    from assets.viar.tokenizer import TokenizerConfig

    d, t = p.dataset(dataset), p.tokenizer
    return TokenizerConfig(image_channels=int(d.channels), image_size=int(d.image_size),
                           scales=tuple(int(s) for s in d.scales), hidden=int(t.hidden), cvae=int(t.cvae),
                           vocab=int(t.vocab), downsample=int(d.downsample), phi_count=int(t.phi_count),
                           beta=float(t.beta))


def ar_config(p: VIARRunParams, tok_cfg: dict, dataset: str, kind: str, depth: int = 0):
    from assets.viar.model import ARConfig

    a, v = p.ar, p.viar
    return ARConfig(kind=kind, vocab=int(tok_cfg["vocab"]), cvae=int(tok_cfg["cvae"]),
                    scales=tuple(tok_cfg["scales"]), num_classes=data.N_CLASSES[dataset],
                    width=int(a.width), heads=int(a.heads), depth=int(depth or 1), pre=int(v.pre),
                    post=int(v.post), mlp_ratio=float(a.mlp_ratio), damping=float(v.damping))


def ladder(p: VIARRunParams) -> list[int]:
    """Every VAR depth trained: the ladder plus the claims' depth."""
    return sorted(set(p.ladder_depths) | {int(p.claim_depth)})


# ------------------------------------------------------------------------------ loaders
def load_tokenizer(entry: dict):
    from assets.viar.tokenizer import MultiScaleVQVAE, TokenizerConfig

    state, sidecar = load_checkpoint(entry)
    model = MultiScaleVQVAE(TokenizerConfig.from_dict(sidecar["config"]))
    model.load_state_dict(state)
    return model.eval()


def load_classifier(entry: dict):
    from assets.viar.metrics import EvalCNN

    state, sidecar = load_checkpoint(entry)
    model = EvalCNN(int(sidecar["channels"]), int(sidecar["num_classes"]))
    model.load_state_dict(state)
    return model.eval()


def load_ar(checkpoint: str):
    from assets.viar.model import ARConfig, NextScaleAR

    state, sidecar = load_checkpoint(checkpoint)
    model = NextScaleAR(ARConfig.from_dict(sidecar["config"]))
    model.load_state_dict(state)
    return model.eval()


def load_reference(entry: dict, split: str = "test") -> dict:
    state, _ = load_checkpoint(entry["features"])
    return {name: state[f"{split}_{name}"].numpy() for name in ("penultimate", "spatial", "pred", "label")}


def load_samples(ref: str) -> tuple[np.ndarray, np.ndarray]:
    state, _ = load_checkpoint(ref)
    return state["images"].numpy(), state["labels"].numpy()


def pyramid_arrays(frame: pd.DataFrame, dataset: str, split: str, cvae: int):
    """(teacher-forcing inputs (n, L − 1, cvae) float32, tokens (n, L) int64, labels (n,))."""
    part = frame[(frame["dataset"] == dataset) & (frame["split"] == split)]
    tokens = np.stack(part["tokens"].to_numpy()).astype(np.int64)
    tf = np.stack(part["teacher_forcing"].to_numpy()).astype(np.float32).reshape(len(part), -1, cvae)
    return tf, tokens, part["label"].to_numpy(dtype=np.int64)


def gen_labels(dataset: str, per_class: int) -> np.ndarray:
    return np.repeat(np.arange(data.N_CLASSES[dataset]), per_class).astype(np.int64)


# ------------------------------------------------------------------------------ data and evaluation network
def build_images(p: VIARRunParams, seed_for: Callable[..., int], log: Log = _quiet) -> pd.DataFrame:
    frames = []
    for dataset in p.datasets:
        frame = data.build_dataset(dataset, thaw(p.dataset(dataset)), seed_for("data", dataset))
        counts = frame["split"].value_counts().to_dict()
        log(f"{dataset}: {len(frame)} images {counts}, shape "
            f"{tuple(int(frame[c].iat[0]) for c in ('channels', 'height', 'width'))}")
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def train_classifiers(images: pd.DataFrame, p: VIARRunParams, compute: Any, artifacts: Any,
                      log: Log = _quiet) -> dict:
    """The evaluation CNN per dataset, trained on the train split; test accuracy in the value."""
    from assets.viar import metrics

    c = p.classifier
    device = compute.resolved_device()
    out = {}
    for dataset, frame in images.groupby("dataset"):
        seed = compute.seed_for(SLUG, "classifier", dataset)
        torch_for(compute, p, seed)
        xtr, ytr = data.to_arrays(frame, "train")
        xte, yte = data.to_arrays(frame, "test")
        start = time.monotonic()
        model = metrics.train_classifier(xtr, ytr, data.N_CLASSES[dataset], int(c.epochs), int(c.batch),
                                         float(c.lr), seed, log=log, device=device)
        accuracy = float(np.mean(metrics.extract(model, xte)["pred"] == yte))
        path = artifacts.checkpoint_path(SLUG, f"{dataset}_eval_classifier")
        sidecar = save_state_dict(path, model.state_dict(), {
            "dataset": dataset, "channels": int(xtr.shape[1]), "num_classes": data.N_CLASSES[dataset],
            "seed": seed, "test_accuracy": accuracy, "device": device, "options": thaw(c),
            **compute.provenance(SLUG)})
        out[dataset] = {"checkpoint": data_ref(path), "md5": sidecar["md5"], "test_accuracy": accuracy,
                        "num_classes": data.N_CLASSES[dataset]}
        log(f"{dataset}: eval classifier test accuracy {accuracy:.4f} ({time.monotonic() - start:.1f} s)")
    return out


def reference_stats(images: pd.DataFrame, eval_classifier: dict, p: VIARRunParams, compute: Any, artifacts: Any,
                    log: Log = _quiet) -> dict:
    """Classifier features of the real test and val splits, and the real-vs-real noise floors:
    FCD/sFCD/KID of a train subset of the generated-set size vs test, FCD of two test halves."""
    from assets.viar import metrics

    torch_for(compute, p, 0)
    per_class = int(p.sampling.per_class)
    out = {}
    for dataset, frame in images.groupby("dataset"):
        clf = load_classifier(eval_classifier[dataset])
        feats = {split: (metrics.extract(clf, x), y) for split in data.SPLITS
                 for x, y in [data.to_arrays(frame, split)]}
        (ftr, ytr), (fte, yte) = feats["train"], feats["test"]
        sub = metrics.stratified_subset(ytr, per_class, compute.seed_for(SLUG, "floor", dataset))
        halves = metrics.stratified_subset(yte, int(np.ceil(np.bincount(yte).min() / 2)),
                                           compute.seed_for(SLUG, "halves", dataset))
        other = np.setdiff1d(np.arange(len(yte)), halves)
        floors = {
            "fcd_floor_train_vs_test": metrics.fcd(ftr["penultimate"][sub], fte["penultimate"]),
            "sfcd_floor_train_vs_test": metrics.fcd(ftr["spatial"][sub], fte["spatial"]),
            "kid_floor_train_vs_test": metrics.kid(ftr["penultimate"][sub], fte["penultimate"]),
            "fcd_floor_test_halves": metrics.fcd(fte["penultimate"][halves], fte["penultimate"][other]),
        }
        state = {f"{split}_{name}": np.asarray(arr) for split, (f, y) in feats.items() if split != "train"
                 for name, arr in [("penultimate", f["penultimate"]), ("spatial", f["spatial"]),
                                   ("pred", f["pred"]), ("label", y)]}
        path = artifacts.checkpoint_path(SLUG, f"{dataset}_reference_features")
        sidecar = save_state_dict(path, state, {"dataset": dataset, **floors, "train_subset": int(len(sub)),
                                                **compute.provenance(SLUG)})
        out[dataset] = {"features": data_ref(path), "md5": sidecar["md5"], **floors,
                        "n_floor_subset": int(len(sub)), "n_test": int(len(yte)),
                        "n_val": int(len(feats["val"][1])),
                        "train_subset_ids": frame[frame["split"] == "train"]["image_id"].to_numpy()[sub].tolist()}
        log(f"{dataset}: noise floors " + ", ".join(f"{k} {v:.3f}" for k, v in floors.items()))
    return out


# ------------------------------------------------------------------------------ tokenizer
def train_tokenizers(images: pd.DataFrame, p: VIARRunParams, compute: Any, artifacts: Any,
                     log: Log = _quiet) -> tuple[dict, dict[str, float]]:
    """(the tokenizer per dataset, trained on the train split then frozen; training seconds
    per dataset — a run record)."""
    from assets.viar import tokenizer as T

    t = p.tokenizer
    device = compute.resolved_device()
    out, seconds = {}, {}
    for dataset, frame in images.groupby("dataset"):
        cfg = tokenizer_config(p, dataset)
        seed = compute.seed_for(SLUG, "tokenizer", dataset)
        torch_for(compute, p, seed)
        xtr, _ = data.to_arrays(frame, "train")
        xva, _ = data.to_arrays(frame, "val")
        start = time.monotonic()
        model, losses = T.train_tokenizer(xtr, cfg, int(t.steps), int(t.batch), float(t.lr), seed,
                                          int(t.restart_every), float(t.restart_fraction), log=log, device=device)
        ev = T.evaluate_tokenizer(model, xva)
        seconds[dataset] = time.monotonic() - start
        path = artifacts.checkpoint_path(SLUG, f"{dataset}_msvq_tokenizer")
        sidecar = save_state_dict(path, model.state_dict(), {
            "dataset": dataset, "config": cfg.to_dict(), "seed": seed, "val": ev, "device": device,
            **compute.provenance(SLUG)})
        out[dataset] = {"checkpoint": data_ref(path), "md5": sidecar["md5"], "config": cfg.to_dict(),
                        "tokens_per_image": cfg.tokens_per_image, "final_train_loss": float(np.mean(losses[-20:])),
                        "parameters": int(sum(q.numel() for q in model.parameters())), **ev}
        log(f"{dataset}: tokenizer val recon MSE {ev['recon_mse']:.4f}, codebook usage "
            f"{ev['codebook_usage']:.0%} ({seconds[dataset]:.1f} s)")
    return out, seconds


def token_pyramids(images: pd.DataFrame, msvq_tokenizer: dict, p: VIARRunParams, compute: Any,
                   log: Log = _quiet) -> pd.DataFrame:
    """Every image's token ids scale by scale and its teacher-forcing inputs."""
    from assets.viar import tokenizer as T

    torch = torch_for(compute, p, 0)
    frames = []
    for dataset, frame in images.groupby("dataset"):
        tok = load_tokenizer(msvq_tokenizer[dataset])
        x, y = data.to_arrays(frame)
        tokens, tf = T.token_pyramid(tok, torch.from_numpy(x))
        frames.append(pd.DataFrame({
            "dataset": dataset, "image_id": frame["image_id"].to_numpy(), "split": frame["split"].to_numpy(),
            "label": y, "tokens": list(tokens.numpy().astype(np.int64)),
            "teacher_forcing": list(tf.reshape(len(y), -1).numpy().astype(np.float32))}))
        log(f"{dataset}: {len(y)} pyramids of {tokens.shape[1]} tokens")
    return pd.concat(frames, ignore_index=True)


# ------------------------------------------------------------------------------ AR models
TRAINING_TIMING = ["dataset", "model", "seed", "train_seconds", "steps_per_second"]


def var_runs(p: VIARRunParams) -> list[tuple[str, str, int, int]]:
    """(dataset, "var", depth, seed): the claims' depth at every seed, the ladder at ladder_seeds."""
    return [(dataset, "var", depth, seed) for dataset in p.datasets for depth in ladder(p)
            for seed in (p.seeds if depth == p.claim_depth else p.ladder_seeds)]


def viar_runs(p: VIARRunParams) -> list[tuple[str, str, int, int]]:
    return [(dataset, "viar", 0, seed) for dataset in p.datasets for seed in p.seeds]


def run_cost(kind: str, depth: int, p: VIARRunParams) -> float:
    """Relative cost of one training run in block passes per step (for ordering worker jobs
    longest first): VAR depth; VIAR pre + post blocks plus the mean S-JFB iterations (a no-grad
    iteration ≈ 1/3 of one with gradient: forward only)."""
    if kind == "var":
        return float(depth)
    v = p.viar
    return float(v.pre + v.post) + (v.jfb_n / 2) / 3 + (1 + v.jfb_m) / 2


def train_job(job: dict) -> dict:
    """One AR training run, in a spawned worker process or in this one (the same code either
    way, so the checkpoint does not depend on where it ran). `job`: config (ARConfig dict),
    run_seed, threads, deterministic, device, arrays tf/tokens/labels, hparams (train_ar's
    positional optimisation arguments), jfb. Returns the CPU state_dict and train_ar's record."""
    from assets.viar import model as Mo

    torch_worker(job["threads"], int(job["run_seed"]), job["deterministic"])
    model = Mo.NextScaleAR(Mo.ARConfig.from_dict(job["config"]))
    out = Mo.train_ar(model, job["tf"], job["tokens"], job["labels"], *job["hparams"], int(job["run_seed"]),
                      jfb=job["jfb"], device=job["device"])
    model.cpu()
    return {"state": model.state_dict(), **{k: out[k] for k in ("losses", "n_iters", "m_iters", "seconds",
                                                                  "steps_per_second")}}


def train_models(runs: list[tuple[str, str, int, int]], token_pyramids: pd.DataFrame, msvq_tokenizer: dict,
                 p: VIARRunParams, compute: Any, artifacts: Any,
                 log: Log = _quiet) -> tuple[pd.DataFrame, pd.DataFrame]:
    """runs: (dataset, kind, depth, seed). One checkpoint and one row per run; and the
    training wall clock per run (dataset, model, seed, train_seconds, steps_per_second), a run
    record kept out of the table.

    The runs are independent (each seeds its own generators, one torch thread each), so they
    go to `compute.workers(len(runs), p.workers)` spawned processes, longest first; the
    checkpoints and rows are the same bytes whichever process trained them (tested)."""
    from assets.common.parallel import longest_first
    from assets.viar import model as Mo

    a, v = p.ar, p.viar
    device = compute.resolved_device()
    hparams = (int(a.steps), int(a.batch), float(a.lr), float(a.weight_decay), int(a.warmup), float(a.clip),
               float(a.label_drop))
    jobs, meta = [], []
    for dataset, kind, depth, seed in runs:
        tok_cfg = msvq_tokenizer[dataset]["config"]
        cfg = ar_config(p, tok_cfg, dataset, kind, depth)
        tf, tokens, labels = pyramid_arrays(token_pyramids, dataset, "train", int(tok_cfg["cvae"]))
        counts = np.bincount(tokens.ravel(), minlength=cfg.vocab) / tokens.size
        unigram = float(-(counts[counts > 0] * np.log(counts[counts > 0])).sum())
        run_seed = compute.seed_for(SLUG, "ar", dataset, cfg.name, seed)
        jfb = (int(v.jfb_n), int(v.jfb_m)) if kind == "viar" else None
        jobs.append({"config": cfg.to_dict(), "run_seed": run_seed, "threads": compute.torch_threads(p.torch_threads),
                     "deterministic": bool(compute.deterministic), "device": device, "tf": tf, "tokens": tokens,
                     "labels": labels, "hparams": hparams, "jfb": jfb})
        meta.append((dataset, kind, depth, seed, cfg, run_seed, unigram, jfb))
    costs = [run_cost(kind, depth, p) for _, kind, depth, _ in runs]
    workers = compute.workers(len(jobs), int(p.workers))
    log(f"training {len(jobs)} runs on {workers} worker process(es), {compute.torch_threads(p.torch_threads)} "
        f"torch thread(s) each")
    results: dict[int, dict] = {}
    start = time.monotonic()
    for done, (i, out) in enumerate(longest_first(train_job, jobs, workers, costs), 1):
        results[i] = out
        dataset, kind, depth, seed, cfg, run_seed, unigram, _ = meta[i]
        log(f"[{done}/{len(jobs)}] {dataset}/{cfg.name}/seed {seed}: CE "
            f"{float(np.mean(out['losses'][-max(1, len(out['losses']) // 10):])):.3f} (unigram {unigram:.3f}), "
            f"{out['steps_per_second']:.2f} steps/s, {time.monotonic() - start:.0f} s elapsed")
    rows, timing = [], []
    for i, (dataset, kind, depth, seed, cfg, run_seed, unigram, jfb) in enumerate(meta):
        out = results[i]
        model = Mo.NextScaleAR(cfg)
        model.load_state_dict(out["state"])
        name = f"{dataset}_{kind}_d{depth}_s{seed}" if kind == "var" else f"{dataset}_viar_p{cfg.pre}_s{seed}"
        path = artifacts.checkpoint_path(SLUG, name)
        final_ce = float(np.mean(out["losses"][-max(1, len(out["losses"]) // 10):]))
        sidecar = save_state_dict(path, out["state"], {
            "config": cfg.to_dict(), "dataset": dataset, "seed": seed, "run_seed": run_seed, "device": device,
            "hparams": {**thaw(a), **(thaw(v) if kind == "viar" else {})}, "final_ce": final_ce,
            **compute.provenance(SLUG)})
        rows.append({"dataset": dataset, "model": cfg.name, "kind": kind, "depth": int(depth) if kind == "var" else 0,
                     "seed": int(seed), "checkpoint": data_ref(path), "md5": sidecar["md5"],
                     "parameters": Mo.count_parameters(model), "steps": int(a.steps),
                     "final_ce": final_ce, "unigram_entropy": unigram, "loss_curve": out["losses"],
                     "mean_nograd_iters": float(np.mean(out["n_iters"])) if jfb else 0.0,
                     "mean_grad_iters": float(np.mean(out["m_iters"])) if jfb else 0.0,
                     "config_json": json.dumps(cfg.to_dict(), sort_keys=True)})
        timing.append({"dataset": dataset, "model": cfg.name, "seed": int(seed), "train_seconds": out["seconds"],
                       "steps_per_second": out["steps_per_second"]})
    return pd.DataFrame(rows), pd.DataFrame(timing, columns=TRAINING_TIMING)


# ------------------------------------------------------------------------------ calibrated schedule
def _val_fcd(job: dict, model, tok, schedule) -> float:
    """Val FCD of `schedule`'s samples (labels_gen, the job's generator seed) against the val reference."""
    import torch

    from assets.viar import metrics
    from assets.viar import model as Mo

    device = job["device"]
    gen = torch.Generator(device=device).manual_seed(int(job["gen_seed"]))
    out = Mo.generate(model, tok, torch.from_numpy(job["labels_gen"]).to(device), schedule, float(job["cfg"]),
                      float(job["top_p"]), int(job["top_k"]), gen)
    feats = metrics.extract(load_classifier(job["classifier"]), out["images"].cpu().numpy())
    return metrics.fcd(feats["penultimate"], load_reference(job["reference"], "val")["penultimate"])


def calibrate_job(job: dict) -> dict:
    """One VIAR run's schedule calibration, in a spawned worker or in this process (same code,
    same result). job["part"] "search": the greedy per-scale search on the val pyramids
    (model.calibrate_schedule), then the calibrated schedule's val FCD; "converged": the val
    FCD of the converged schedule, which does not depend on the search (its own job, so the
    worker pool stays full). job: checkpoint, tokenizer and classifier entries, reference (the
    reference_stats entry), tokens/labels (the val subset), labels_gen, candidates, converged,
    tolerance, cfg, top_p, top_k, gen_seed (both FCDs draw from it), device, threads,
    deterministic. Returns {"part", "seconds", and "result" + "val_fcd" (search) or "val_fcd"}."""
    import torch

    from assets.viar import model as Mo

    torch_worker(job["threads"], deterministic=job["deterministic"])
    device = job["device"]
    model = load_ar(job["checkpoint"]).to(device)
    tok = load_tokenizer(job["tokenizer"]).to(device)
    start = time.monotonic()
    if job["part"] == "converged":
        fcd = _val_fcd(job, model, tok, [int(job["converged"])] * len(model.cfg.scales))
        return {"part": "converged", "val_fcd": fcd, "seconds": time.monotonic() - start}
    result = Mo.calibrate_schedule(model, tok, torch.from_numpy(job["tokens"]).to(device),
                                   torch.from_numpy(job["labels"]).to(device), list(job["candidates"]),
                                   int(job["converged"]), float(job["tolerance"]))
    fcd = _val_fcd(job, model, tok, result["schedule"])
    return {"part": "search", "result": result, "val_fcd": fcd, "cfg": model.cfg,
            "seconds": time.monotonic() - start}


def calibration_row(job: dict, search: dict, converged_fcd: float) -> dict:
    """The iteration_schedule row of one VIAR run from its two calibration jobs."""
    from assets.viar import model as Mo

    result, cfg = search["result"], search["cfg"]
    converged = [int(job["converged"])] * len(cfg.scales)
    return {"dataset": job["dataset"], "model": job["model"], "seed": int(job["seed"]),
            "schedule": [int(c) for c in result["schedule"]],
            "schedule_name": "cal:" + ",".join(str(c) for c in result["schedule"]),
            "converged_iterations": int(job["converged"]), "tolerance": float(job["tolerance"]),
            "nll_converged": result["nll_converged"].tolist(),
            "nll_calibrated": result["nll_calibrated"].tolist(),
            "nll_total_ratio": float(result["nll_calibrated"].mean() / result["nll_converged"].mean()),
            "val_fcd_calibrated": search["val_fcd"], "val_fcd_converged": converged_fcd,
            "flops_calibrated": Mo.sampling_flops(cfg, result["schedule"]),
            "flops_converged": Mo.sampling_flops(cfg, converged),
            "probes": json.dumps(result["probes"])}


def calibrate_schedules(viar_models: pd.DataFrame, token_pyramids: pd.DataFrame, msvq_tokenizer: dict,
                        eval_classifier: dict, reference_stats: dict, p: VIARRunParams, compute: Any,
                        log: Log = _quiet) -> pd.DataFrame:
    """Per VIAR run: the fewest per-scale iterations whose val token NLL is within the tolerance
    of the converged schedule, with val FCD of calibrated vs converged. The runs are
    independent, so they go to `compute.workers(len(runs), p.workers)` spawned processes."""
    from assets.common.parallel import spawn_imap
    from assets.viar import metrics

    cal, s = p.calibration, p.sampling
    device = compute.resolved_device()
    torch_for(compute, p, 0)
    jobs = []
    for row in viar_models.itertuples():
        cvae = int(msvq_tokenizer[row.dataset]["config"]["cvae"])
        _, tokens, labels = pyramid_arrays(token_pyramids, row.dataset, "val", cvae)
        pick = metrics.stratified_subset(labels, int(cal.per_class), compute.seed_for(SLUG, "cal", row.dataset))
        jobs.append({"dataset": row.dataset, "model": row.model, "seed": int(row.seed), "checkpoint": row.checkpoint,
                     "tokenizer": msvq_tokenizer[row.dataset], "classifier": eval_classifier[row.dataset],
                     "reference": reference_stats[row.dataset], "tokens": tokens[pick], "labels": labels[pick],
                     "labels_gen": gen_labels(row.dataset, int(cal.per_class)), "candidates": list(cal.candidates),
                     "converged": int(cal.converged), "tolerance": float(cal.tolerance), "cfg": float(s.cfg),
                     "top_p": float(s.top_p), "top_k": int(s.top_k),
                     "gen_seed": compute.seed_for(SLUG, "cal-sample", row.seed), "device": device,
                     "threads": compute.torch_threads(p.torch_threads), "deterministic": bool(compute.deterministic)})
    # every run's search first (the long jobs), then its converged-schedule FCD
    parts = [{**job, "part": part} for part in ("search", "converged") for job in jobs]
    outs = list(spawn_imap(calibrate_job, parts, compute.workers(len(parts), int(p.workers))))
    rows = []
    for i, job in enumerate(jobs):
        search, conv = outs[i], outs[len(jobs) + i]
        r = calibration_row(job, search, conv["val_fcd"])
        rows.append(r)
        log(f"{r['dataset']}/seed {r['seed']}: calibrated schedule {r['schedule']} "
            f"(val FCD {r['val_fcd_calibrated']:.2f} vs converged {r['val_fcd_converged']:.2f}, "
            f"{search['seconds'] + conv['seconds']:.1f} s)")
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------ samples
def sampling_runs(p: VIARRunParams, var_models: pd.DataFrame, viar_models: pd.DataFrame,
                  iteration_schedule: pd.DataFrame) -> list[dict]:
    """Every VAR model (explicit) and every VIAR model × schedule (named and calibrated)."""
    from assets.viar import model as Mo

    runs = [{"dataset": r.dataset, "model": r.model, "kind": "var", "depth": int(r.depth), "seed": int(r.seed),
             "checkpoint": r.checkpoint, "schedule": "explicit", "iterations": None}
            for r in var_models.itertuples()]
    for r in viar_models.itertuples():
        K = len(json.loads(r.config_json)["scales"])
        named = [(name, Mo.parse_schedule(name, K)) for name in p.schedules]
        cal = iteration_schedule[(iteration_schedule["dataset"] == r.dataset) & (iteration_schedule["seed"] == r.seed)]
        named += [("calibrated", [int(c) for c in row.schedule]) for row in cal.itertuples()]
        runs += [{"dataset": r.dataset, "model": r.model, "kind": "viar", "depth": 0, "seed": int(r.seed),
                  "checkpoint": r.checkpoint, "schedule": name, "iterations": sched} for name, sched in named]
    return runs


def sample_job(job: dict) -> dict:
    """One sampling run, in a spawned worker or in this process (same code, same bytes): job
    holds checkpoint, tokenizer (its asset entry), labels, iterations, cfg, top_p, top_k,
    gen_seed, device, threads, deterministic. Returns images and tokens (CPU) and the seconds
    generate took (a run record)."""
    import torch

    from assets.viar import model as Mo

    torch_worker(job["threads"], deterministic=job["deterministic"])
    device = job["device"]
    model = load_ar(job["checkpoint"]).to(device)
    tok = load_tokenizer(job["tokenizer"]).to(device)
    gen = torch.Generator(device=device).manual_seed(int(job["gen_seed"]))
    t0 = time.perf_counter()
    out = Mo.generate(model, tok, torch.from_numpy(job["labels"]).to(device), job["iterations"], float(job["cfg"]),
                      float(job["top_p"]), int(job["top_k"]), gen)
    seconds = time.perf_counter() - t0
    return {"images": out["images"].cpu().float(), "tokens": out["tokens"].cpu(), "seconds": seconds,
            "flops_per_image": Mo.sampling_flops(model.cfg, job["iterations"])}


def sampling_cost(run: dict, p: VIARRunParams) -> float:
    """Relative cost of one sampling run in block passes per token (to order worker jobs
    longest first): VAR depth; VIAR pre + post plus the mean per-scale iterations (an implicit
    iteration also runs Proj, ≈ 1.5 blocks)."""
    if run["kind"] == "var":
        return float(run["depth"])
    return float(p.viar.pre + p.viar.post) + 1.5 * float(np.mean(run["iterations"]))


def draw_samples(runs: list[dict], msvq_tokenizer: dict, p: VIARRunParams, compute: Any, artifacts: Any,
                 log: Log = _quiet) -> tuple[pd.DataFrame, float]:
    """(one row per sampling run with its tensor file and FLOPs/image; total sampling seconds).

    Every run draws from its own seeded generator (common random numbers: every model and
    schedule of one seed draws from the same stream), so the runs go to
    `compute.workers(len(runs), p.workers)` spawned processes, longest first; the files
    are the same bytes whichever process drew them."""
    from assets.common.parallel import longest_first

    s = p.sampling
    device = compute.resolved_device()
    torch = torch_for(compute, p, 0)
    jobs = [{"checkpoint": run["checkpoint"], "tokenizer": msvq_tokenizer[run["dataset"]],
             "labels": gen_labels(run["dataset"], int(s.per_class)), "iterations": run["iterations"],
             "cfg": float(s.cfg), "top_p": float(s.top_p), "top_k": int(s.top_k),
             "gen_seed": compute.seed_for(SLUG, "sample", run["dataset"], run["seed"]), "device": device,
             "threads": compute.torch_threads(p.torch_threads), "deterministic": bool(compute.deterministic)}
            for run in runs]
    costs = [sampling_cost(run, p) for run in runs]
    workers = compute.workers(len(jobs), int(p.workers))
    results: dict[int, dict] = {}
    start = time.monotonic()
    for done, (i, out) in enumerate(longest_first(sample_job, jobs, workers, costs), 1):
        results[i] = out
        if done % 5 == 0 or done == len(runs):
            log(f"[{done}/{len(runs)}] sampled {runs[i]['model']} {runs[i]['schedule']} seed {runs[i]['seed']} "
                f"({out['seconds']:.2f} s; {time.monotonic() - start:.0f} s total, {workers} worker(s))")
    rows, total = [], 0.0
    for i, run in enumerate(runs):
        out, labels = results[i], jobs[i]["labels"]
        total += out["seconds"]
        name = f"{run['dataset']}_samples_{run['model']}_{run['schedule']}_s{run['seed']}"
        path = artifacts.checkpoint_path(SLUG, name)
        save_state_dict(path, {"images": out["images"], "labels": torch.from_numpy(labels), "tokens": out["tokens"]},
                        {**{k: v for k, v in run.items() if k != "checkpoint"}, "cfg": float(s.cfg),
                         "top_p": float(s.top_p)})
        rows.append({**{k: v for k, v in run.items() if k not in ("checkpoint", "iterations")},
                     "iterations": list(run["iterations"] or []), "samples_ref": data_ref(path),
                     "n_samples": int(len(labels)), "flops_per_image": out["flops_per_image"]})
    return pd.DataFrame(rows), total


def score_samples(samples: pd.DataFrame, eval_classifier: dict, reference_stats: dict, images: pd.DataFrame,
                  msvq_tokenizer: dict, p: VIARRunParams, compute: Any) -> pd.DataFrame:
    """FCD, sFCD, KID, class consistency, precision/recall of every sample set against the test
    split, plus the real-train and tokenizer-reconstruction reference rows at the same N."""
    from assets.viar import metrics
    from assets.viar import tokenizer as T

    torch = torch_for(compute, p, 0)
    rows = []
    for dataset, group in samples.groupby("dataset"):
        clf = load_classifier(eval_classifier[dataset])
        ref = load_reference(reference_stats[dataset])
        for row in group.itertuples():
            imgs, labels = load_samples(row.samples_ref)
            q = metrics.quality_metrics(metrics.extract(clf, imgs), labels, ref)
            rows.append({"dataset": dataset, "model": row.model, "kind": row.kind, "depth": int(row.depth),
                         "schedule": row.schedule, "seed": int(row.seed), "flops_per_image": float(row.flops_per_image),
                         "n_samples": int(row.n_samples), **q})
        train = images[(images["dataset"] == dataset)].set_index("image_id").loc[
            reference_stats[dataset]["train_subset_ids"]].reset_index()
        x, y = data.to_arrays(train)
        tok = load_tokenizer(msvq_tokenizer[dataset])
        recon = tok.decode_tokens(T.token_pyramid(tok, torch.from_numpy(x))[0]).numpy()
        for name, imgs in (("real-train", x), ("vq-recon", recon)):
            q = metrics.quality_metrics(metrics.extract(clf, imgs), y, ref)
            rows.append({"dataset": dataset, "model": name, "kind": "reference", "depth": 0, "schedule": "-",
                         "seed": 0, "flops_per_image": 0.0, "n_samples": int(len(y)), **q})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------ efficiency
def measure_throughput(runs: list[dict], msvq_tokenizer: dict, p: VIARRunParams, compute: Any) -> pd.DataFrame:
    """Sampling images/s of every run given (the first seed's), interleaved round-robin after one
    warm-up pass, the median of `throughput.reps` repetitions; peak GPU memory on CUDA. A
    wall-clock measurement: one row per run with images_per_second, median_seconds,
    seconds_all, peak_memory_bytes, flops_per_image."""
    from assets.viar import model as Mo

    s, tp = p.sampling, p.throughput
    device = compute.resolved_device()
    torch = torch_for(compute, p, 0)
    first = int(p.seeds[0])
    cache = {}
    for run in runs:
        if run["checkpoint"] not in cache:
            cache[run["checkpoint"]] = load_ar(run["checkpoint"]).to(device)
    toks = {d: load_tokenizer(e).to(device) for d, e in msvq_tokenizer.items()}
    batch = int(tp.batch)
    timings: dict[int, list[float]] = {i: [] for i in range(len(runs))}
    peaks: dict[int, float] = {}

    def once(i: int, run: dict) -> float:
        labels = torch.arange(batch, device=device) % data.N_CLASSES[run["dataset"]]
        gen = torch.Generator(device=device).manual_seed(i)
        with Mo.DevicePeak(device) as peak:     # CUDA: max_memory_allocated; CPU: NaN (no allocator peak)
            t0 = time.perf_counter()
            Mo.generate(cache[run["checkpoint"]], toks[run["dataset"]], labels, run["iterations"], float(s.cfg),
                        float(s.top_p), int(s.top_k), gen)
        peaks[i] = max(peaks.get(i, float("-inf")), peak.bytes) if peak.on_cuda else float("nan")
        return time.perf_counter() - t0

    for i, run in enumerate(runs):            # warm-up
        once(i, run)
    for _ in range(int(tp.reps)):              # interleaved: contention hits every setting alike
        for i, run in enumerate(runs):
            timings[i].append(once(i, run))
    rows = []
    for i, run in enumerate(runs):
        med = float(np.median(timings[i]))
        rows.append({"dataset": run["dataset"], "model": run["model"], "kind": run["kind"], "schedule": run["schedule"],
                     "seed": first, "batch": batch, "images_per_second": batch / med, "median_seconds": med,
                     "seconds_all": timings[i], "device": device,
                     "peak_memory_bytes": float(peaks.get(i, np.nan)),
                     "peak_source": Mo.DevicePeak(device).source if device.startswith("cuda") else "none (CPU)",
                     "flops_per_image": Mo.sampling_flops(cache[run["checkpoint"]].cfg, run["iterations"])})
    return pd.DataFrame(rows)


def convergence_profile(viar_models: pd.DataFrame, token_pyramids: pd.DataFrame, msvq_tokenizer: dict,
                        p: VIARRunParams, compute: Any) -> pd.DataFrame:
    """Per VIAR seed, scale and iteration t: relative residual and cosine of successive iterates,
    at sampling time (KV cache) and teacher-forced on validation pyramids."""
    from assets.viar import model as Mo

    c, s = p.convergence, p.sampling
    torch = torch_for(compute, p, 0)
    iters = int(c.iterations)
    rows = []
    for row in viar_models.itertuples():
        model = load_ar(row.checkpoint)
        tok = load_tokenizer(msvq_tokenizer[row.dataset])
        K = len(model.cfg.scales)
        labels = torch.from_numpy(gen_labels(row.dataset, int(c.per_class)))
        gen = torch.Generator().manual_seed(compute.seed_for(SLUG, "convergence", row.seed))
        out = Mo.generate(model, tok, labels, [iters] * K, float(s.cfg), float(s.top_p), int(s.top_k),
                          gen, record=True)
        rows += [{"dataset": row.dataset, "seed": int(row.seed), "source": "sampling", "scale": int(k),
                  "t": int(t), "rel_residual": r, "cosine": cs} for k, t, r, cs in out["trace"]]
        tf, _, vlabels = pyramid_arrays(token_pyramids, row.dataset, "val",
                                        int(msvq_tokenizer[row.dataset]["config"]["cvae"]))
        n = min(len(vlabels), int(c.per_class) * data.N_CLASSES[row.dataset])
        trace = model.fixed_point_trace(torch.from_numpy(tf[:n]), torch.from_numpy(vlabels[:n]), iters)
        for t in range(iters):
            for k in range(K):
                rows.append({"dataset": row.dataset, "seed": int(row.seed), "source": "teacher_forced", "scale": k,
                             "t": t, "rel_residual": float(trace["relative_residual"][t, k]),
                             "cosine": float(trace["cosine"][t, k])})
    return pd.DataFrame(rows)


def memory_profile(token_pyramids: pd.DataFrame, msvq_tokenizer: dict, p: VIARRunParams, compute: Any) -> pd.DataFrame:
    """Bytes of activations saved for backward in one training step (saved-tensor hooks) for VAR
    vs depth and VIAR vs no-grad iterations n and grad iterations m; parameter, gradient and
    AdamW-state bytes; the CUDA allocator's peak on a GPU."""
    from assets.viar import model as Mo

    mem = p.memory
    device = compute.resolved_device()
    torch = torch_for(compute, p, 0)
    rows = []
    for dataset in p.datasets:
        tok_cfg = msvq_tokenizer[dataset]["config"]
        tf, tokens, labels = pyramid_arrays(token_pyramids, dataset, "train", int(tok_cfg["cvae"]))
        b = int(mem.batch)
        batch = [torch.from_numpy(a[:b]).to(device) for a in (tf, tokens, labels)]
        settings = [("var_depth", "var", d, 0, 1) for d in mem.depths]
        settings += [("viar_nograd_iters", "viar", 0, n, 1) for n in mem.n_values]
        settings += [("viar_grad_iters", "viar", 0, 0, m) for m in mem.m_values]
        for sweep, kind, depth, n, m in settings:
            torch.manual_seed(compute.seed_for(SLUG, "memory", kind, depth))
            model = Mo.NextScaleAR(ar_config(p, tok_cfg, dataset, kind, depth)).to(device)
            with Mo.DevicePeak(device) as peak:
                saved = Mo.saved_activation_bytes(model, *batch, n_nograd=n, m_grad=m)
            n_params = Mo.count_parameters(model)
            rows.append({"dataset": dataset, "model": model.cfg.name, "kind": kind, "sweep": sweep,
                         "value": {"var_depth": depth, "viar_nograd_iters": n, "viar_grad_iters": m}[sweep],
                         "batch": b, "saved_bytes": saved, "parameters": n_params, "param_bytes": 4 * n_params,
                         "grad_bytes": 4 * n_params, "adamw_state_bytes": 8 * n_params, "device": device,
                         # peak of one training step: the CUDA allocator's on a GPU, else the saved-tensor bytes
                         "peak_bytes": peak.bytes if peak.on_cuda else float(saved), "peak_source": peak.source,
                         "peak_cuda_bytes": peak.bytes})
    return pd.DataFrame(rows)
