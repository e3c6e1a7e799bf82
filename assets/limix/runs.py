"""limix experiment loops: what each asset computes — no Dagster import.

Seeds: `seed_for(*keys)` (the compute resource's derivation) gives the integer seed of every
training stream. Every variant of one model seed trains on the same task stream and starts
from the same torch seed (SNF and FSN: identical initial weights). Independent training runs
are module-level jobs for spawned workers (`assets/common/parallel.longest_first`).
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from assets.limix import data as D
from assets.limix.params import LimiXParams

SLUG = "limix"
Log = Callable[[str], None]
SeedFor = Callable[..., int]
LOSS_WINDOW_FRACTION = 0.1           # the loss-drop gate compares the first and last 10 % of steps
RANK_ENERGIES = (0.95, 0.99)


def _quiet(_: str) -> None:
    return None


# ------------------------------------------------------------------------------ configuration
def prior(p: LimiXParams) -> D.PriorConfig:
    q = p.prior
    return D.PriorConfig(features=tuple(q.features), classes=tuple(q.classes), rows=tuple(q.rows),
                         missing=tuple(q.missing))


def variant_config(p: LimiXParams, variant: str):
    """The LimiXConfig of a variant name ("rabel_snf", "linear_fsn_wide", …)."""
    from assets.limix.model import LimiXConfig

    m = p.model
    parts = variant.split("_")
    embedding, arch, wide = parts[0], parts[1], len(parts) > 2 and parts[2] == "wide"
    return LimiXConfig(embedding=embedding, arch=arch, d_model=m.d_model * (m.wide_factor if wide else 1),
                       n_layers=m.n_layers, n_heads=m.n_heads, k=m.k, sigma=m.sigma,
                       features_per_group=m.features_per_group)


def stream_seed(seed_for: SeedFor, seed: int) -> int:
    return int(seed_for("model", int(seed)))


def variant_cost(variant: str, p: LimiXParams) -> float:
    """Relative cost of a training run (the wide model: ~wide_factor × a step)."""
    return float(p.train.steps) * (p.model.wide_factor if variant.endswith("_wide") else 1.0)


# ------------------------------------------------------------------------------ task banks
def _pack(batches: list[dict], extra: tuple[str, ...] = ()) -> tuple[dict, list[dict]]:
    """Batches → (tensor dict for save_checkpoint, per-batch meta)."""
    arrays, meta = {}, []
    for i, b in enumerate(batches):
        arrays[f"{i}.x"] = np.asarray(b["x"], dtype=np.float32)
        arrays[f"{i}.y"] = np.asarray(b["y"], dtype=np.int64)
        for key in ("missing", "parents", "log10_spread"):
            if key in b:
                arrays[f"{i}.{key}"] = np.asarray(b[key])
        meta.append({"n_context": int(b["n_context"]), "n_classes": int(b["n_classes"]),
                     **{k: (np.asarray(b[k]).tolist() if k == "index" else b[k]) for k in extra}})
    return arrays, meta


def task_bank(p: LimiXParams, seed: int, stream: str, n_tasks: int) -> tuple[dict, list[dict]]:
    """`n_tasks` frozen prior tasks (batches of 8 sharing a shape) on `stream` (disjoint from
    the "pretrain" stream of every model seed)."""
    batches = D.held_out(prior(p), seed, stream, n_tasks, per_batch=min(8, n_tasks))
    out = []
    for b in batches:
        out.append({k: (v.numpy() if hasattr(v, "numpy") else v) for k, v in b.items()})
    return _pack(out)


def real_bank(p: LimiXParams, seed: int) -> tuple[dict, list[dict]]:
    tasks = D.real_suite(seed, p.eval.real_splits, p.eval.real_context, p.eval.real_query)
    return _pack([{k: (v.numpy() if hasattr(v, "numpy") else v) for k, v in t.items()} for t in tasks],
                 extra=("name", "split", "rows", "index"))


def unpack(arrays: dict, meta: list[dict]) -> list[dict]:
    """The inverse of _pack: a list of numpy batches with their meta."""
    out = []
    for i, m in enumerate(meta):
        b = {**m, "x": np.asarray(arrays[f"{i}.x"]), "y": np.asarray(arrays[f"{i}.y"])}
        for key in ("missing", "parents", "log10_spread"):
            if f"{i}.{key}" in arrays:
                b[key] = np.asarray(arrays[f"{i}.{key}"])
        out.append(b)
    return out


# ------------------------------------------------------------------------------ scoring
def auc(y: np.ndarray, proba: np.ndarray, n_classes: int) -> float:
    """ROC-AUC of one task's query rows (binary: class 1's probability; else one-vs-rest macro)."""
    from sklearn.metrics import roc_auc_score

    if n_classes == 2:
        return float(roc_auc_score(y, proba[:, 1]))
    return float(roc_auc_score(y, proba, multi_class="ovr", labels=list(range(n_classes))))


def task_probabilities(model, batches: list[dict]) -> list[np.ndarray]:
    """Per batch: query probabilities (B, n_query, n_classes)."""
    import torch

    from assets.limix.model import predict_proba

    device = next(model.parameters()).device
    out = []
    for b in batches:
        n = b["n_context"]
        x, y = torch.as_tensor(b["x"]).to(device), torch.as_tensor(b["y"]).to(device)
        out.append(predict_proba(model, x, y[:, :n], n, b["n_classes"]).cpu().numpy())
    return out


def mean_auc(model, batches: list[dict]) -> tuple[float, list[float]]:
    scores = []
    for b, pr in zip(batches, task_probabilities(model, batches)):
        y = b["y"][:, b["n_context"]:]
        scores += [auc(y[i], pr[i], b["n_classes"]) for i in range(len(y))]
    return float(np.mean(scores)), scores


def learned(val_auc: float, loss_drop: float, min_auc: float, min_drop: float) -> bool:
    """The learning gate: held-out AUC ≥ min_auc and the training loss fell ≥ min_drop."""
    return bool(np.isfinite(val_auc) and np.isfinite(loss_drop) and val_auc >= min_auc and loss_drop >= min_drop)


# ------------------------------------------------------------------------------ training
def _torch_setup(job: dict):
    from assets.common.worker import torch_worker

    return torch_worker(job["threads"], job["stream_seed"], job["deterministic"], cap_blas=True)


def build_model(p: LimiXParams, variant: str, torch_seed: int):
    import torch

    from assets.limix.model import LimiX

    torch.manual_seed(int(torch_seed))
    return LimiX(variant_config(p, variant))


def train_job(job: dict) -> dict:
    """One pretraining run of one variant × seed on job["device"] and its held-out AUC (val tasks).
    The returned state is on the CPU."""
    from assets.common.pfn.train import TrainConfig, train
    from assets.common.worker import to_device
    from assets.limix.model import task_loss

    _torch_setup(job)
    p: LimiXParams = job["params"]
    s, device = int(job["stream_seed"]), job["device"]
    model = build_model(p, job["variant"], s).to(device)
    t = p.train
    config = TrainConfig(steps=t.steps, lr=t.lr, warmup_steps=t.warmup_steps, min_lr_ratio=t.min_lr_ratio,
                         grad_clip=t.grad_clip)
    stream = D.prior_stream(prior(p), s, "pretrain", t.tasks_per_step)
    result = train(model, lambda step: to_device(stream(step), device), task_loss, config)
    val_auc, _ = mean_auc(model.eval(), job["val"])
    model.cpu()
    return {"state": {k: v.detach().clone() for k, v in model.state_dict().items()}, "losses": result.losses,
            "seconds": result.seconds, "val_auc": val_auc}


def _common(p: LimiXParams, compute: Any) -> dict:
    return {"params": p, "threads": compute.torch_threads(p.torch_threads),
            "deterministic": bool(compute.deterministic), "device": compute.resolved_device()}


def train_all(p: LimiXParams, val: list[dict], compute: Any, artifacts: Any, seed_for: SeedFor,
              log: Log = _quiet) -> tuple[pd.DataFrame, list[dict]]:
    """Every variant × seed (longest first on compute.workers(…, p.workers) processes).
    Returns (one row per checkpoint, timing rows)."""
    from assets.common.parallel import longest_first
    from assets.common.progress import Progress
    from resources.artifacts import save_checkpoint

    jobs = [{**_common(p, compute), "variant": v, "seed": int(s), "stream_seed": stream_seed(seed_for, s),
             "val": val, "name": f"{v}/seed {s}"} for s in p.seeds for v in p.variants]
    workers = compute.workers(len(jobs), p.workers)
    log(f"pretraining: {len(jobs)} run(s) × {p.train.steps} steps on {workers} worker process(es)")
    progress = Progress(log, len(jobs), "pretraining")
    outs: dict[int, dict] = {}
    for i, out in longest_first(train_job, jobs, workers, [variant_cost(j["variant"], p) for j in jobs]):
        outs[i] = out
        progress.step(jobs[i]["name"])
    rows, timings = [], []
    window = max(1, int(LOSS_WINDOW_FRACTION * p.train.steps))
    for i, job in enumerate(jobs):
        out = outs[i]
        from assets.common.pfn.train import relative_loss_drop
        from assets.limix.model import count_parameters

        drop = relative_loss_drop(out["losses"], window)
        name = f"{job['variant']}_s{job['seed']}"
        ref = save_checkpoint(artifacts.checkpoint_path(SLUG, name), out["state"],
                              provenance=compute.provenance(SLUG), config=variant_config(p, job["variant"]),
                              seed=job["seed"], device=job["device"], stream_seed=job["stream_seed"],
                              variant=job["variant"], loss_curve=[round(x, 6) for x in out["losses"]])
        model = build_model(p, job["variant"], 0)
        ok = learned(out["val_auc"], drop, p.gate_min_auc, p.gate_min_loss_drop)
        rows.append({"variant": job["variant"], "seed": job["seed"], **ref, "steps": len(out["losses"]),
                     "params": int(count_parameters(model)), "first_loss": float(np.mean(out["losses"][:window])),
                     "final_loss": float(np.mean(out["losses"][-window:])), "loss_drop": float(drop),
                     "val_auc": float(out["val_auc"]), "learned": ok, "stream_seed": job["stream_seed"]})
        timings.append({"variant": job["variant"], "seed": job["seed"], "train_seconds": out["seconds"],
                        "seconds_per_step": out["seconds"] / max(1, len(out["losses"]))})
        log(f"{name}: AUC {out['val_auc']:.3f}, loss drop {drop:.1%} → {'learned' if ok else 'NOT learned'}; "
            f"{out['seconds']:.0f} s")
    return pd.DataFrame(rows), timings


def load_model(ref: Any):
    """A checkpoint reference (or path) as an eval-mode LimiX."""
    from assets.limix.model import LimiX, LimiXConfig
    from resources.artifacts import load_checkpoint

    state, sidecar = load_checkpoint(ref)
    model = LimiX(LimiXConfig(**sidecar["config"]))
    model.load_state_dict(state)
    return model.eval()


# ------------------------------------------------------------------------------ diagnostics
def rank_at(matrix: np.ndarray, energy: float) -> int:
    """The number of singular values holding `energy` of Σσ² (centred rows)."""
    m = matrix - matrix.mean(0, keepdims=True)
    s2 = np.linalg.svd(m, compute_uv=False) ** 2
    if s2.sum() <= 0:
        return 0
    return int(np.searchsorted(np.cumsum(s2) / s2.sum(), energy - 1e-12) + 1)


def numerical_rank(matrix: np.ndarray, tol: float = 1e-6) -> int:
    s = np.linalg.svd(np.asarray(matrix, dtype=np.float64), compute_uv=False)
    return int((s > tol * s[0]).sum()) if s.size and s[0] > 0 else 0


def embedding_rank(table: pd.DataFrame, tasks: list[dict], log: Log = _quiet) -> pd.DataFrame:
    """Per checkpoint × calibration task: Rank@95/99 of the layer-1 hidden states of the feature
    tokens (all rows; the y token excluded) and of the input tokens (layer 0)."""
    import torch

    rows = []
    for r in table.itertuples():
        model = load_model(r.checkpoint)
        task = 0
        for b in tasks:
            n = b["n_context"]
            with torch.no_grad():
                _, out = model(torch.as_tensor(b["x"]), torch.as_tensor(b["y"])[:, :n], n, return_hidden=True)
            for layer in (0, 1):
                h = out.hidden_states[layer][:, :, :-1].numpy()          # (B, R, G, d): feature tokens
                for i in range(h.shape[0]):
                    flat = h[i].reshape(-1, h.shape[-1]).astype(np.float64)
                    rows.append({"variant": r.variant, "seed": int(r.seed), "task": task + i, "layer": layer,
                                 **{f"rank{int(e * 100)}": rank_at(flat, e) for e in RANK_ENERGIES}})
            task += len(b["y"])
        log(f"rank: {r.variant} seed {r.seed}")
    return pd.DataFrame(rows)


def prop31_ranks(table: pd.DataFrame, n: int = 200) -> pd.DataFrame:
    """Prop. 3.1 on the trained embeddings: numerical rank of n distinct scalars of one column
    embedded by the checkpoint's cell embedding + its column-group vector."""
    import torch

    values = torch.linspace(-3, 3, n)
    rows = []
    for r in table.itertuples():
        model = load_model(r.checkpoint)
        with torch.no_grad():
            e = model.encoder.cell(values) + model.encoder.group_ids(1, "cpu")[0]
        rows.append({"variant": r.variant, "seed": int(r.seed), "embedding": r.variant.split("_")[0],
                     "rank": numerical_rank(e.numpy())})
    return pd.DataFrame(rows)


def parent_groups(parents: np.ndarray, group: int) -> np.ndarray:
    """(B, D) parent columns → (B, G) token holds a parent column (D padded to a multiple of group)."""
    b, d = parents.shape
    pad = (-d) % group
    padded = np.concatenate([parents, np.zeros((b, pad), dtype=bool)], 1)
    return padded.reshape(b, -1, group).any(-1)


def feature_attention(table: pd.DataFrame, tasks: list[dict], log: Log = _quiet) -> pd.DataFrame:
    """Per checkpoint × calibration task: the query rows' y-token feature-attention mass on
    parent tokens, other feature tokens and its own token (mean over layers, heads and query
    rows). Tasks without a parent token, or with only parent tokens, are skipped."""
    import torch

    rows = []
    for r in table.itertuples():
        model = load_model(r.checkpoint)
        group = model.config.features_per_group
        task = 0
        for b in tasks:
            n = b["n_context"]
            with torch.no_grad():
                _, out = model(torch.as_tensor(b["x"]), torch.as_tensor(b["y"])[:, :n], n, return_attention=True)
            # f weights (B, R, H, C, C); the y token is the row's last token
            mass = torch.stack([a["f"][:, n:, :, -1, :] for a in out.attentions]).mean(dim=(0, 2, 3)).numpy()
            par = parent_groups(b["parents"], group)
            for i in range(mass.shape[0]):
                tok = par[i]
                if tok.any() and not tok.all():
                    m = mass[i]
                    rows.append({"variant": r.variant, "seed": int(r.seed), "task": task + i,
                                 "parent": float(m[:-1][tok].sum()), "other": float(m[:-1][~tok].sum()),
                                 "own": float(m[-1]), "parent_tokens": int(tok.sum()),
                                 "feature_tokens": int(len(tok))})
            task += len(b["y"])
        log(f"attention: {r.variant} seed {r.seed}")
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------ predictions
def predictions(table: pd.DataFrame, suites: dict[str, list[dict]], log: Log = _quiet) -> pd.DataFrame:
    """Query-row probabilities of every checkpoint in `table` on every suite's tasks: one row per
    variant × seed × suite × task × query row (y, proba list)."""
    frames = []
    for r in table.itertuples():
        model = load_model(r.checkpoint)
        for suite, batches in suites.items():
            task = 0
            for b, pr in zip(batches, task_probabilities(model, batches)):
                y = b["y"][:, b["n_context"]:]
                for i in range(len(y)):
                    frames.append(pd.DataFrame({"variant": r.variant, "seed": int(r.seed), "suite": suite,
                                                "task": task + i, "dataset": b.get("name", f"prior_{task + i}"),
                                                "row": np.arange(len(y[i])), "y": y[i].astype(int),
                                                "n_classes": int(b["n_classes"]),
                                                "proba": [list(map(float, q)) for q in pr[i]]}))
                task += len(y)
        log(f"predictions: {r.variant} seed {r.seed}")
    if not frames:
        return pd.DataFrame(columns=["variant", "seed", "suite", "task", "dataset", "row", "y", "n_classes", "proba"])
    return pd.concat(frames, ignore_index=True)


def inference_timings(table: pd.DataFrame, tasks: list[dict], repeats: int) -> pd.DataFrame:
    """Wall clock of one forward pass over the calibration tasks, per checkpoint and repeat;
    the variants of a seed are timed interleaved (same batch, same process) so that load
    drifts hit all of them alike."""
    import torch

    models = {(r.variant, int(r.seed)): load_model(r.checkpoint) for r in table.itertuples()}
    rows = []
    with torch.no_grad():
        for rep in range(int(repeats)):
            for (variant, seed), model in models.items():
                start = time.perf_counter()
                for b in tasks:
                    n = b["n_context"]
                    model(torch.as_tensor(b["x"]), torch.as_tensor(b["y"])[:, :n], n)
                rows.append({"variant": variant, "seed": seed, "repeat": rep,
                             "seconds": time.perf_counter() - start})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------ baselines
def baseline_job(job: dict) -> list[dict]:
    from threadpoolctl import threadpool_limits

    from assets.limix import baselines as BL

    out = []
    with threadpool_limits(limits=int(job["threads"])):
        x, y, n, c = job["x"], job["y"], job["n_context"], job["n_classes"]
        for method in job["methods"]:
            start = time.perf_counter()
            proba = BL.fit_predict(method, x[:n], y[:n], x[n:], c, seed=int(job["seed"]))
            out.append({"method": method, "proba": proba, "seconds": time.perf_counter() - start})
    return out


def baseline_predictions(suites: dict[str, list[dict]], p: LimiXParams, compute: Any,
                         log: Log = _quiet) -> tuple[pd.DataFrame, list[dict]]:
    """The sklearn baselines on every task of every suite (the val suite: its first
    baseline_val_tasks tasks), tuned on the context rows only."""
    from assets.common.parallel import longest_first

    jobs = []
    for suite, batches in suites.items():
        task = 0
        for b in batches:
            for i in range(len(b["y"])):
                if suite != "val" or task + i < p.eval.baseline_val_tasks:
                    jobs.append({"suite": suite, "task": task + i, "dataset": b.get("name", f"prior_{task + i}"),
                                 "x": b["x"][i], "y": b["y"][i], "n_context": b["n_context"],
                                 "n_classes": b["n_classes"], "methods": list(p.baselines), "seed": 0,
                                 "threads": 1})
            task += len(b["y"])
    workers = compute.workers(len(jobs), p.workers)
    log(f"baselines: {len(jobs)} task(s) × {len(p.baselines)} method(s) on {workers} worker process(es)")
    frames, timings = [], []
    for i, outs in longest_first(baseline_job, jobs, workers, [len(j["y"]) for j in jobs]):
        job = jobs[i]
        yq = job["y"][job["n_context"]:]
        for o in outs:
            frames.append(pd.DataFrame({"method": o["method"], "suite": job["suite"], "task": job["task"],
                                        "dataset": job["dataset"], "row": np.arange(len(yq)), "y": yq.astype(int),
                                        "n_classes": int(job["n_classes"]),
                                        "proba": [list(map(float, q)) for q in o["proba"]]}))
            timings.append({"method": o["method"], "suite": job["suite"], "task": job["task"],
                            "seconds": o["seconds"]})
    frame = pd.concat(frames, ignore_index=True).sort_values(["method", "suite", "task", "row"],
                                                             ignore_index=True)
    return frame, timings


def task_scores(frame: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Per task (grouped by `by` + suite, task): ROC-AUC, accuracy, log-loss of the query rows."""
    rows = []
    for key, g in frame.groupby([*by, "suite", "task"], sort=True):
        c = int(g["n_classes"].iloc[0])
        proba = np.clip(np.array(g["proba"].tolist(), dtype=float)[:, :c], 1e-12, 1)
        y = g["y"].to_numpy()
        rows.append({**dict(zip([*by, "suite", "task"], key)), "dataset": g["dataset"].iloc[0],
                     "auc": auc(y, proba / proba.sum(1, keepdims=True), c),
                     "accuracy": float(np.mean(proba.argmax(1) == y)),
                     "logloss": float(-np.mean(np.log(proba[np.arange(len(y)), y])))})
    return pd.DataFrame(rows)
