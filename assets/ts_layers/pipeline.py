"""What each ts_layers asset computes, given its inputs, parameters and seeds — no Dagster import.

definitions.py calls one function per asset; checkpoints are written with
resources.artifacts.save_checkpoint (state_dict of tensors + JSON sidecar).
"""
from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from assets.ts_layers import data as D
from assets.ts_layers import method as M
from assets.ts_layers import runs as R
from assets.ts_layers.params import TSLayersParams

Log = Callable[[str], None]
SeedFor = Callable[..., int]
Saver = Callable[..., dict]          # save(name, state, **sidecar) -> {"checkpoint", "md5"}
CLASSICAL = ("naive", "seasonal_naive", "ets", "arima")


# ------------------------------------------------------------------------------ windows
def windows(corpus: pd.DataFrame, real: pd.DataFrame, p: TSLayersParams, rng: np.random.Generator) -> pd.DataFrame:
    """The real window index (data.window_index) + synthetic rows (task "synthetic", channel =
    series id): the fixed synthetic-val windows and the synthetic half of the calibration set.
    `calibration` marks the N_c calibration windows: half real train windows, half synthetic
    train windows (all training windows, never val or test)."""
    index = D.window_index(real, p.lookback, p.horizon, p.patch, p.split, p.max_test_windows)
    index["calibration"] = False
    train_len = p.lookback + p.patch
    n_c = p.importance.calibration_windows
    real_train = np.flatnonzero(index["split"].to_numpy() == "train")
    n_real = min(len(real_train), n_c // 2)
    index.loc[index.index[np.sort(rng.choice(real_train, size=n_real, replace=False))], "calibration"] = True
    length = int(corpus["values"].map(len).iloc[0])
    train_ids = corpus.loc[corpus["split"] == "train", "series_id"].to_numpy()
    val_ids = corpus.loc[corpus["split"] == "val", "series_id"].to_numpy()
    rows = []
    for split, ids, n, calibration in (("train", train_ids, n_c - n_real, True),
                                       ("val", val_ids, p.synthetic.val_windows, False)):
        series = rng.choice(ids, size=n)
        starts = rng.integers(0, length - train_len + 1, size=n)
        for sid, s in zip(series, starts):
            look = np.asarray(corpus["values"].iloc[int(sid)], np.float64)[s:s + p.lookback]
            rows.append({"task": "synthetic", "channel": str(int(sid)), "split": split, "start": int(s),
                         "target_start": int(s + p.patch), "target_end": int(s + train_len),
                         "revin_mean": float(look.mean()), "revin_std": float(look.std()),
                         "calibration": calibration})
    return pd.concat([index, pd.DataFrame(rows)], ignore_index=True)


def bundle(corpus, real, window_frame, p: TSLayersParams, path: Path) -> str:
    return R.write_bundle(path, R.build_bundle(corpus, real, window_frame, p))


# ------------------------------------------------------------------------------ text backbone
def text_backbone(p: TSLayersParams, seed_for: SeedFor, save: Saver, workers: int, threads: int,
                  log: Log, device: str = "cpu") -> tuple[pd.DataFrame, list[dict]]:
    jobs = [{"params": p, "seed": seed_for("text", s), "model_seed": s, "threads": threads, "cost": 1,
             "device": device} for s in p.seeds]
    results = R.run_jobs(R.text_job, jobs, workers, log, "text backbone")
    rows, timings = [], []
    for job, r in zip(jobs, results):
        ref = save(f"text_lm_seed{job['model_seed']}", r["state"], seed=job["seed"],
                   config={"vocab_size": len(r["vocab"]), "depth": p.llm4ts.depth, "d_model": p.d_model,
                           "n_heads": p.n_heads, "context": p.text.context},
                   vocab="".join(r["vocab"]), loss_curve=r["curve"][::max(1, len(r["curve"]) // 100)])
        rows.append({"seed": job["model_seed"], **ref, "heldout_loss": r["heldout_loss"],
                     "uniform_loss": r["uniform_loss"], "first_loss": float(np.mean(r["curve"][:5])),
                     "final_loss": float(np.mean(r["curve"][-5:])), "steps": r["steps"]})
        timings.append({"asset": "text_backbone", "seed": job["model_seed"], "seconds": r["seconds"],
                        "steps": r["steps"]})
    return pd.DataFrame(rows), timings


# ------------------------------------------------------------------------------ checkpoints
def model_grid(p: TSLayersParams) -> list[tuple[str, int]]:
    return [("tsfm", d) for d in p.depths] + [("llm4ts", p.llm4ts.depth)]


def checkpoints(p: TSLayersParams, text: pd.DataFrame, bundle_path: str, seed_for: SeedFor, save: Saver,
                resolve: Callable[[str], str], workers: int, threads: int, log: Log, device: str = "cpu"
                ) -> tuple[pd.DataFrame, list[dict]]:
    text_ref = {int(r.seed): resolve(r.checkpoint) for r in text.itertuples()}
    jobs = []
    for family, depth in model_grid(p):
        for s in p.seeds:
            jobs.append({"params": p, "family": family, "depth": depth, "seed": s, "threads": threads,
                         "init_seed": seed_for(family, depth, s, "init"),
                         "stream_seed": seed_for(family, depth, s, "pretrain"), "steps": p.train.steps,
                         "bundle": bundle_path, "text_checkpoint": text_ref.get(s), "cost": R.step_cost(depth),
                         "device": device})
    results = R.run_jobs(R.pretrain_job, jobs, workers, log, "pretraining")
    rows, timings = [], []
    for job, r in zip(jobs, results):
        ref = save(f"{job['family']}_L{job['depth']}_seed{job['seed']}", r["state"], seed=job["init_seed"],
                   config=R.patch_config(p, job["family"], job["depth"]).__dict__,
                   loss_curve=r["curve"][::max(1, len(r["curve"]) // 100)], stream_seed=job["stream_seed"])
        rows.append({"family": job["family"], "depth": job["depth"], "seed": job["seed"], **ref,
                     "val_mse": r["val_mse"], "naive_val_mse": r["naive_val_mse"],
                     "synthetic_val_loss": r["synthetic_val_loss"], "first_loss": float(np.mean(r["curve"][:5])),
                     "final_loss": float(np.mean(r["curve"][-10:])), "steps": r["steps"], "params": r["params"]})
        timings.append({"asset": "checkpoints", "family": job["family"], "depth": job["depth"],
                        "seed": job["seed"], "seconds": r["seconds"], "steps": r["steps"]})
    return pd.DataFrame(rows), timings


def _load(p: TSLayersParams, row, load_state: Callable) -> object:
    state, _ = load_state(row.checkpoint)
    return R.load_model(p, row.family, int(row.depth), state)


def prune_rows(frame: pd.DataFrame, p: TSLayersParams) -> pd.DataFrame:
    wanted = {(f, int(d)) for f, d in p.prune_models}
    return frame[[(f, int(d)) in wanted for f, d in zip(frame["family"], frame["depth"])]]


# ------------------------------------------------------------------------------ importance
def layer_importance(p: TSLayersParams, ckpts: pd.DataFrame, bundle_path: str, load_state: Callable,
                     log: Log) -> pd.DataFrame:
    """One row per (pruned model, seed, layer): s, a, I, BI, removal drop, selected, and the
    layer's CKA row against H_0…H_L (for the plot and the (α, K, λ) ablation)."""
    b = R.load_bundle(bundle_path)
    frames = []
    for row in prune_rows(ckpts, p).itertuples():
        model = _load(p, row, load_state)
        stats = R.layer_statistics(model, b["calib"], p)
        full, drops = R.removal_drop(model, b["val"], p)
        frame = R.importance_rows(stats, drops, p)
        frame["cka_row"] = [stats["cka"][layer].tolist() for layer in range(1, int(row.depth) + 1)]
        frames.append(frame.assign(family=row.family, depth=int(row.depth), seed=int(row.seed), full_val_mse=full))
        log(f"importance {row.family}-{row.depth} seed {row.seed}: keep {frame.index[frame['selected']].tolist()}")
    cols = ["family", "depth", "seed", "layer", "s", "a", "importance", "bi", "removal_drop", "selected",
            "full_val_mse", "cka_row"]
    return pd.concat(frames, ignore_index=True)[cols]


def cka_of(group: pd.DataFrame) -> np.ndarray:
    """The (L+1, L+1) CKA matrix back from a model's importance rows."""
    rows = np.array(group.sort_values("layer")["cka_row"].tolist(), dtype=float)
    top = np.concatenate([[1.0], rows[:, 0]])
    return np.vstack([top, rows])


# ------------------------------------------------------------------------------ keep rule
def keep_rule(p: TSLayersParams, importance: pd.DataFrame, n_params: Callable[[str, int, list[int]], float],
              rng: Callable[..., np.random.Generator]) -> dict:
    """Per (pruned model, seed): k, the method's keep list, every baseline's keep list (same k)
    and each list's parameter fraction."""
    models = []
    for (family, depth, seed), g in importance.groupby(["family", "depth", "seed"], sort=True):
        g = g.sort_values("layer")
        scores = g["importance"].to_numpy()
        k = M.keep_count(len(scores), p.importance.tau)
        keeps = {"keep_tau": M.select_layers(scores, p.importance.tau)}
        keeps.update(M.baseline_keeps(scores, g["bi"].to_numpy(), k, p.random_draws,
                                      rng("random_keep", family, int(depth), int(seed))))
        keeps["scratch"] = list(range(k))
        models.append({"family": family, "depth": int(depth), "seed": int(seed), "k": k,
                       "n_importance": int(len(scores)), "keeps": keeps,
                       "param_fraction": {m: n_params(family, int(depth), kl) for m, kl in keeps.items()}})
    return {"tau": p.importance.tau, "models": models}


# ------------------------------------------------------------------------------ realignment
def pruned_checkpoints(p: TSLayersParams, ckpts: pd.DataFrame, rule: dict, bundle_path: str, seed_for: SeedFor,
                       save: Saver, resolve: Callable[[str], str], workers: int, threads: int, log: Log,
                       device: str = "cpu") -> tuple[pd.DataFrame, list[dict]]:
    refs = {(r.family, int(r.depth), int(r.seed)): resolve(r.checkpoint) for r in ckpts.itertuples()}
    jobs = []
    for m in rule["models"]:
        key = (m["family"], m["depth"], m["seed"])
        stream = seed_for(*key, "realign")
        methods = {"full_continued": list(range(m["depth"])), **m["keeps"]}
        for method, keep in methods.items():
            scratch = method == "scratch"
            jobs.append({"params": p, "family": m["family"], "depth": m["depth"], "seed": m["seed"],
                         "method": method, "keep": list(keep), "threads": threads, "checkpoint": refs[key],
                         "bundle": bundle_path, "device": device,
                         "init_seed": seed_for(*key, method, "init"),
                         "stream_seed": seed_for(*key, "scratch") if scratch else stream,
                         "steps": p.train.steps + p.realign.steps if scratch else p.realign.steps,
                         "cost": R.step_cost(len(keep)) * (p.train.steps + p.realign.steps if scratch
                                                           else p.realign.steps)})
    results = R.run_jobs(R.realign_job, jobs, workers, log, "realignment")
    rows, timings = [], []
    for job, r in zip(jobs, results):
        name = f"{job['family']}_L{job['depth']}_seed{job['seed']}_{job['method']}"
        ref = save(name, r["state"], seed=job["init_seed"], keep=job["keep"], method=job["method"],
                   loss_curve=r["curve"][::max(1, len(r["curve"]) // 50)], stream_seed=job["stream_seed"])
        rows.append({"family": job["family"], "depth": job["depth"], "seed": job["seed"], "method": job["method"],
                     "keep": list(job["keep"]), "layers": r["layers"], **ref, "steps": r["steps"],
                     "val_mse": r["val_mse"], "params": r["params"], "final_loss": float(np.mean(r["curve"][-10:]))})
        timings.append({"asset": "pruned_checkpoints", "family": job["family"], "depth": job["depth"],
                        "seed": job["seed"], "method": job["method"], "seconds": r["seconds"], "steps": r["steps"]})
    return pd.DataFrame(rows), timings


def load_pruned(p: TSLayersParams, row, load_state: Callable):
    state, _ = load_state(row.checkpoint)
    family = "tsfm" if row.method == "scratch" else row.family
    return R.load_model(p, family, int(row.layers), state)


# ------------------------------------------------------------------------------ evaluation
def forecast_eval(p: TSLayersParams, window_frame: pd.DataFrame, ckpts: pd.DataFrame, pruned: pd.DataFrame,
                  bundle_path: str, load_state: Callable, log: Log) -> pd.DataFrame:
    """Per test window MSE / MAE (RevIN scale) of every pretrained model ("full"), every pruned /
    baseline model, the keep-τ layers inside the pretrained model without realignment
    ("keep_tau_unaligned", an ablation), and the classical baselines on `classical_windows`
    windows per series."""
    b = R.load_bundle(bundle_path)
    test = window_frame[(window_frame["task"] != "synthetic")
                        & (window_frame["split"] == "test")].reset_index(drop=True)
    ident = test[["task", "channel", "start"]]
    frames = []

    def add(values, mask=None, **tags):
        mse, mae = values
        part = ident if mask is None else ident[mask]
        frames.append(part.assign(mse=mse, mae=mae, **tags))

    for row in ckpts.itertuples():
        add(R.forecast_errors(_load(p, row, load_state), b["test"], p), family=row.family, depth=int(row.depth),
            seed=int(row.seed), method="full")
    for row in pruned.itertuples():
        add(R.forecast_errors(load_pruned(p, row, load_state), b["test"], p), family=row.family,
            depth=int(row.depth), seed=int(row.seed), method=row.method)
    # ablation: the keep-τ layers run inside the pretrained model with no realignment
    for row in pruned[pruned["method"] == "keep_tau"].itertuples():
        src = ckpts[(ckpts["family"] == row.family) & (ckpts["depth"] == row.depth)
                    & (ckpts["seed"] == row.seed)].iloc[0]
        keep = [int(i) for i in row.keep]
        add(R.forecast_errors(_load(p, src, load_state), b["test"], p, keep=keep), family=row.family,
            depth=int(row.depth), seed=int(row.seed), method="keep_tau_unaligned")
    log(f"neural models evaluated on {len(test)} test windows")
    start = time.perf_counter()
    for task, g in test.groupby("task", sort=True):
        pick = np.unique(np.linspace(0, len(g) - 1, min(len(g), p.classical_windows)).round().astype(int))
        idx = g.index.to_numpy()[pick]
        mask = np.zeros(len(test), bool)
        mask[idx] = True
        w = b["test"][idx]
        period = D.SEASONAL_PERIOD[task]
        add(R.naive_errors(w, p), mask, family="classical", depth=0, seed=-1, method="naive")
        add(R.naive_errors(w, p, period), mask, family="classical", depth=0, seed=-1, method="seasonal_naive")
        fits = R.classical_forecasts(w, p, period)
        for name, mse in fits.items():
            add((mse, np.full(len(mse), np.nan)), mask, family="classical", depth=0, seed=-1, method=name)
    log(f"classical baselines ({time.perf_counter() - start:.1f} s)")
    cols = ["family", "depth", "seed", "method", "task", "channel", "start", "mse", "mae"]
    return pd.concat(frames, ignore_index=True)[cols]


# ------------------------------------------------------------------------------ latency
def latency(p: TSLayersParams, ckpts: pd.DataFrame, rule: dict, load_state: Callable, threads: int) -> pd.DataFrame:
    """Median wall time (ms) of `forecast` for the full model and its compact keep-τ model, on
    `latency.batch_sizes` random look-backs, `repeats` warm repeats, every seed of each pruned model
    (the speed-up claim's interval is over seeds)."""
    import torch

    from assets.ts_layers.model import compact, flops_per_window, forecast_latency_ms

    torch.set_num_threads(max(1, threads))
    rows = []
    for m in rule["models"]:
        row = ckpts[(ckpts["family"] == m["family"]) & (ckpts["depth"] == m["depth"])
                    & (ckpts["seed"] == m["seed"])].iloc[0]
        full = _load(p, row, load_state)
        small = compact(full, m["keeps"]["keep_tau"])
        for batch in p.latency.batch_sizes:
            x = torch.randn(batch, p.lookback, generator=torch.Generator().manual_seed(batch))
            times = {}
            for name, model in (("full", full), ("pruned", small)):
                times[name] = forecast_latency_ms(model, x, p.horizon, p.latency.repeats, p.latency.warmup)
            config = full.config
            rows.append({"family": m["family"], "depth": m["depth"], "seed": m["seed"], "batch": int(batch),
                         "k": m["k"], "full_ms": times["full"], "pruned_ms": times["pruned"],
                         "ratio": times["full"] / times["pruned"],
                         "param_fraction": small.n_parameters() / full.n_parameters(),
                         "flop_fraction": flops_per_window(config, m["k"], p.context)
                         / flops_per_window(config, m["depth"], p.context)})
    return pd.DataFrame(rows)
