"""What each PAC-labeling asset computes, given parameters, seeds and a log function (pure:
numpy / pandas / scikit-learn, torch passed in; no Dagster).

`seed_for(*keys)` is `compute.seed_for("pac_labels", *keys)`; `log` is a logging function.
Tables keep datasets as a column (dataset_id); a partition = dataset × model × CI type, the
list of which is `partition_specs` (stored once as the `partitions` asset).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from typing import Any

import numpy as np
import pandas as pd

from assets.pac_labels import benchmark as B
from assets.pac_labels import data, models
from assets.pac_labels import method as M
from assets.pac_labels import router as R
from assets.pac_labels.params import PACLabelsParams

ROUTER_MODEL = "router"
ROUTER_JITTER_KEY = 0x7AC        # tie-break jitter stream of the routed uncertainties
# router ablations (each its own partition "router_<name>", same calibration split and PAC settings):
# authors_sigmoid: the authors' parameterisation, σ on the uncertainty head then σ(0.1 (s − û));
# routed_confidence: the main router's routing with the routed model's own 1 − confidence as U
AUTHORS_HEAD, AUTHORS_GATE_SCALE = "sigmoid", 0.1

SeedFn = Callable[..., int]
Log = Callable[[str], Any]


def _quiet(message: str) -> None:
    return None


# ============================================================================ datasets
def source_datasets(p: PACLabelsParams, seed_for: SeedFn) -> pd.DataFrame:
    """digits, make_classification and Friedman #1, each split train / pool (data.py)."""
    cls, reg = p.synthetic_cls, p.synthetic_reg
    frames = [
        data.digits_source(p.digits.train_frac, seed_for("digits_split", p.digits.split_seed)),
        data.synthetic_classification(cls.n_pool, cls.n_train, cls.n_classes, cls.n_features, cls.n_informative,
                                      cls.label_noise, cls.class_sep, seed_for("synthetic_cls", cls.seed)),
        data.synthetic_regression(reg.n_pool, reg.n_train, reg.noise, seed_for("synthetic_reg", reg.seed)),
    ]
    return pd.concat(frames, ignore_index=True)


def expert_labels(p: PACLabelsParams, source: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    """Hidden expert labels (dataset_id, item_id, y) of every pool; class codes for 0-1 loss."""
    pool = source[source["split"] == "pool"]
    frames = [pool[["dataset_id", "item_id", "y"]].copy()]
    for name in sorted(set(paper["dataset_id"])):
        items, _ = data.encode_table(data.paper_table(paper, name), data.paper_spec(p.paper_datasets[name]))
        frames.append(items[["item_id", "y"]].assign(dataset_id=name))
    frame = pd.concat(frames, ignore_index=True)[["dataset_id", "item_id", "y"]]
    frame["item_id"] = frame["item_id"].astype(np.int64)
    return frame


# ============================================================================ AI models
def train_models(p: PACLabelsParams, source: pd.DataFrame, seed_for: SeedFn,
                 save: Callable[..., dict[str, Any]], log: Log = _quiet) -> dict[str, dict[str, Any]]:
    """Train every configured model on its dataset's train split and save it.

    save(name, state, config=, seed=, **sidecar) writes the checkpoint and returns its
    reference {"checkpoint", "md5"} (resources.artifacts.save_checkpoint). Returns
    "dataset/kind" → {dataset, kind, checkpoint, md5, train_metric, metric_name, n_classes}.
    """
    out = {}
    for dataset, kinds in p.models.items():
        train = source[(source["dataset_id"] == dataset) & (source["split"] == "train")]
        X, y = data.features(train), train["y"].to_numpy()
        for kind, options in kinds.items():
            start = time.monotonic()
            seed = seed_for("model", dataset, kind)
            state = models.train_model(kind, X, y, seed, options.as_dict())
            yhat, _ = models.predict(kind, state, X)
            metric = (float(np.mean(yhat == y)) if kind in models.CLASSIFIERS
                      else float(1 - np.mean((yhat - y) ** 2) / np.var(y)))
            ref = save(f"{dataset}_{kind}", state, config=options.as_dict(), seed=seed, dataset=dataset, kind=kind,
                       n_train=int(len(y)), train_metric=metric)
            metric_name = "accuracy" if kind in models.CLASSIFIERS else "r2"
            out[f"{dataset}/{kind}"] = {"dataset": dataset, "kind": kind, **ref, "train_metric": metric,
                                        "metric_name": metric_name,
                                        "n_classes": int(len(np.unique(y))) if kind in models.CLASSIFIERS else 0}
            log(f"{dataset}/{kind}: train {metric_name} {metric:.3f} ({time.monotonic() - start:.1f} s)")
    return out


def load_model(entry: dict[str, Any]) -> dict[str, np.ndarray]:
    """A model's state (name → array) from its checkpoint reference (md5-checked)."""
    from resources.artifacts import load_checkpoint

    state, _ = load_checkpoint(entry)
    return {k: v.numpy() for k, v in state.items()}


def pool_predictions(source: pd.DataFrame, entry: dict[str, Any]) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """(pool rows ordered by item_id, Ŷ (n,), confidence (n,) clipped to [0, 1]) of one
    model, predicted from its reloaded checkpoint."""
    dataset = entry["dataset"]
    pool = source[(source["dataset_id"] == dataset) & (source["split"] == "pool")].sort_values("item_id")
    yhat, conf = models.predict(entry["kind"], load_model(entry), data.features(pool))
    return pool, yhat, np.clip(conf, 0.0, 1.0)


# ============================================================================ router
def router_inputs(source: pd.DataFrame, ai_models: dict[str, Any], dataset: str, kinds: Sequence[str]):
    """Features (n, d), per-model Ŷ and confidence (n, M), item ids (n,) of one pool."""
    yhats, confs = [], []
    for kind in kinds:
        pool, yhat, conf = pool_predictions(source, ai_models[f"{dataset}/{kind}"])
        yhats.append(yhat)
        confs.append(conf)
    return data.features(pool), np.stack(yhats, 1), np.stack(confs, 1), pool["item_id"].to_numpy(np.int64)


def router_costs(p: PACLabelsParams) -> list[float]:
    options = p.models[p.router.dataset]
    missing = [k for k in p.router.models if options[k].cost is None]
    if missing:
        raise ValueError(f"pac_labels.models.{p.router.dataset}: the router needs a cost for {missing}")
    return [float(options[k].cost) for k in p.router.models]


def train_router(torch, p: PACLabelsParams, source: pd.DataFrame, ai_models: dict[str, Any],
                 expert_oracle: pd.DataFrame, rng: np.random.Generator, seed: int,
                 log: Log = _quiet) -> tuple[dict[str, np.ndarray], R.RouterConfig, dict[str, Any]]:
    """Buy the expert labels of a calibration split, train the router on it, route the rest.

    Returns (state_dict of arrays, its config, the router's record: dataset, models, costs,
    n_classes, calibration item ids, prelabel cost, the routing of the rest of the pool
    {item_id, model (index into models), logit (the learned uncertainty, pre-sigmoid)}, the
    per-epoch training history (cost, û, gate spread), and the configured ablations' routings
    {name: {model, uncertainty, history}} on the same calibration split).
    """
    cfg = p.router
    kinds = list(cfg.models)
    X, yhats, confs, item_ids = router_inputs(source, ai_models, cfg.dataset, kinds)
    if not (np.isfinite(confs).all() and np.isfinite(yhats).all()):
        raise M.InputError(f"router inputs on {cfg.dataset}: non-finite AI labels or confidences")
    costs = router_costs(p)
    n = len(item_ids)
    calib = np.sort(rng.choice(n, size=max(2, int(round(cfg.calibration_frac * n))), replace=False))
    truth = expert_oracle[expert_oracle["dataset_id"] == cfg.dataset].set_index("item_id")["y"]
    oracle = M.ExpertOracle(truth.loc[item_ids].to_numpy(dtype=float))
    y_cal = oracle.buy(calib, M.EXPERT_CALIBRATION)
    n_classes = int(max(yhats.max(), np.nanmax(y_cal)) + 1)
    config = R.RouterConfig(costs=tuple(costs), epsilon=p.epsilon, epochs=cfg.epochs, batch_size=cfg.batch_size,
                            lr=cfg.lr, weight_decay=cfg.weight_decay, head=cfg.head, gate_scale=cfg.gate_scale)
    start = time.monotonic()
    history: list[dict[str, float]] = []
    train = (X[calib], yhats[calib].astype(np.int64), confs[calib], y_cal.astype(np.int64))
    state = R.train_router(torch, *train, n_classes, config, seed, log=log, history=history)
    rest = np.setdiff1d(np.arange(n), calib)
    chosen, _, logits = R.route(torch, state, X[rest], yhats[rest].astype(np.int64), confs[rest], n_classes)
    share = dict(zip(kinds, np.bincount(chosen, minlength=len(kinds)).tolist()))
    log(f"router ({cfg.head} head, gate σ({cfg.gate_scale:g}(u − û))) trained in {time.monotonic() - start:.1f} s; "
        f"routed to {share}; gate spread per epoch {[h['gate_spread'] for h in history][-3:]}")
    # in-sample fit: how well the head ranks the routed errors on the labels it was trained on
    _, fit_label, fit_logit = R.route(torch, state, *train[:3], n_classes)
    fit_auc = B.ranking_auc(fit_logit, fit_label != train[3])        # NaN (no errors) is stored as None
    calibration_fit = {"auc": fit_auc if np.isfinite(fit_auc) else None,
                       "ai_error": float(np.mean(fit_label != train[3]))}
    ablations: dict[str, dict[str, Any]] = {}
    for name in cfg.ablations:
        if name == "authors_sigmoid":
            authors = replace(config, head=AUTHORS_HEAD, gate_scale=AUTHORS_GATE_SCALE)
            steps: list[dict[str, float]] = []
            other = R.train_router(torch, *train, n_classes, authors, seed, history=steps)
            picked, _, scores = R.route(torch, other, X[rest], yhats[rest].astype(np.int64), confs[rest], n_classes)
            log(f"ablation {name}: routed to {np.bincount(picked, minlength=len(kinds)).tolist()}; "
                f"gate spread per epoch {[h['gate_spread'] for h in steps][-3:]}")
        elif name == "routed_confidence":
            picked, steps = chosen, []
            scores = 1.0 - confs[rest][np.arange(len(rest)), chosen]
        else:
            raise ValueError(f"pac_labels.router.ablations: unknown ablation {name!r}")
        ablations[name] = {"model": picked.astype(np.int64).tolist(), "uncertainty": scores.astype(np.float64).tolist(),
                           "history": steps}
    record = {"dataset": cfg.dataset, "models": kinds, "costs": costs, "n_classes": n_classes,
              "calibration_item_ids": item_ids[calib].tolist(),
              # calibration items: expert label + every model's annotation (the router's inputs)
              "prelabel_cost": float(len(calib) * (1.0 + sum(costs))),
              "share_per_model": share, "head": cfg.head, "gate_scale": cfg.gate_scale, "history": history,
              "calibration_fit": calibration_fit,
              "routed": {"item_id": item_ids[rest].tolist(), "model": chosen.astype(np.int64).tolist(),
                         "logit": logits.astype(np.float64).tolist()},
              "ablations": ablations}
    return state, config, record


def reroute(torch, router: dict[str, Any], state: dict[str, np.ndarray], source: pd.DataFrame,
            ai_models: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """(model index, logit) of the routed items, recomputed from a router state."""
    X, yhats, confs, item_ids = router_inputs(source, ai_models, router["dataset"], router["models"])
    keep = np.isin(item_ids, np.asarray(router["routed"]["item_id"], dtype=np.int64))
    chosen, _, logits = R.route(torch, state, X[keep], yhats[keep].astype(np.int64), confs[keep],
                                int(router["n_classes"]))
    return chosen, logits


# ============================================================================ annotations
def annotations(p: PACLabelsParams, source: pd.DataFrame, paper: pd.DataFrame, ai_models: dict[str, Any],
                router: dict[str, Any], log: Log = _quiet) -> pd.DataFrame:
    """Every AI annotation of every pool: the generated models (from their checkpoints), the
    paper CSVs' AI labels, and the router's routed labels (the pool minus its calibration split).

    Columns: dataset_id, model, item_id, yhat, confidence, uncertainty (U = 1 − confidence +
    seeded jitter; the router's learned logit + jitter), loss, model_cost; routed rows add
    routed_model, prelabelled (calibration items) and prelabel_cost.
    """
    tie_seed = p.tie_break_seed
    frames = []
    for entry in ai_models.values():
        dataset, kind = entry["dataset"], entry["kind"]
        pool, yhat, conf = pool_predictions(source, entry)
        cost = p.models[dataset][kind].cost
        frames.append(pd.DataFrame({"dataset_id": dataset, "model": kind, "item_id": pool["item_id"].to_numpy(np.int64),
                                    "yhat": yhat, "confidence": conf,
                                    "uncertainty": M.uncertainty_from_confidence(conf, seed=tie_seed),
                                    "loss": "squared" if kind in models.REGRESSORS else "zero_one",
                                    "model_cost": float(cost or 0.0)}))
    for name in sorted(set(paper["dataset_id"])):
        cfg = p.paper_datasets[name]
        items, space = data.encode_table(data.paper_table(paper, name), data.paper_spec(cfg))
        conf = items["confidence"].to_numpy()
        frames.append(pd.DataFrame({"dataset_id": name, "model": cfg.model, "item_id": items["item_id"],
                                    "yhat": items["yhat"], "confidence": conf,
                                    "uncertainty": M.uncertainty_from_confidence(conf, seed=tie_seed),
                                    "loss": cfg.loss, "model_cost": float(cfg.cost)}))
        log(f"{name}: {len(items)} items, label space {len(space) or 'continuous'}")
    frame = pd.concat(frames, ignore_index=True)
    return pd.concat([frame, routed_annotations(router, frame, tie_seed)], ignore_index=True)


def routed_annotations(router: dict[str, Any], model_rows: pd.DataFrame, tie_seed: int) -> pd.DataFrame:
    """The router's annotation rows: the chosen model's Ŷ, confidence 1 − σ(logit), and the
    logit (+ 1e-5 jitter) as uncertainty — PAC orders items by it (σ saturates in float32).
    Each ablation adds rows of model "router_<name>": its routing and uncertainty (the authors'
    head: its logit; routed_confidence: 1 − the routed model's confidence), same jitter stream."""
    item_ids = np.asarray(router["routed"]["item_id"], dtype=np.int64)
    kinds, costs = list(router["models"]), np.asarray(router["costs"], dtype=float)
    mine = model_rows[model_rows["dataset_id"] == router["dataset"]]
    yhats = np.stack([mine[mine["model"] == k].set_index("item_id").loc[item_ids, "yhat"].to_numpy() for k in kinds], 1)
    variants = {ROUTER_MODEL: (router["routed"]["model"], router["routed"]["logit"], "logit")}
    for name, entry in router.get("ablations", {}).items():
        variants[f"{ROUTER_MODEL}_{name}"] = (entry["model"], entry["uncertainty"],
                                              "confidence" if name == "routed_confidence" else "logit")
    frames = []
    for model, (picked, scores, kind) in variants.items():
        chosen = np.asarray(picked, dtype=np.int64)
        scores = np.asarray(scores, dtype=np.float64)
        routed = yhats.astype(np.int64)[np.arange(len(item_ids)), chosen].astype(float)
        jitter = np.random.default_rng(np.random.SeedSequence([int(tie_seed), ROUTER_JITTER_KEY])).normal(
            0.0, M.TIE_BREAK_JITTER, size=scores.shape)
        confidence = 1.0 - scores if kind == "confidence" else 1.0 - R.sigmoid(scores)
        frames.append(pd.DataFrame({"dataset_id": router["dataset"], "model": model, "item_id": item_ids,
                                    "yhat": routed, "confidence": confidence, "uncertainty": scores + jitter,
                                    "loss": "zero_one", "model_cost": costs[chosen],
                                    "routed_model": np.asarray(kinds, dtype=object)[chosen],
                                    "prelabelled": len(router["calibration_item_ids"]),
                                    "prelabel_cost": float(router["prelabel_cost"])}))
    return pd.concat(frames, ignore_index=True)


# ============================================================================ partitions
def partition_specs(p: PACLabelsParams, loaded: Sequence[str]) -> list[dict[str, Any]]:
    """The partitions to label, once: the configured generated ones, then one per paper
    dataset that was loaded (in params order). Records {dataset, model, ci, num_draws,
    label_range} (label_range [lo, hi] or None)."""
    specs, loaded = [], set(loaded)
    for spec in (asdict(s) for s in p.partitions):
        specs.append(spec)
        if spec["model"] == ROUTER_MODEL:          # the router's ablations, labelled the same way
            specs += [dict(spec, model=f"{ROUTER_MODEL}_{name}") for name in p.router.ablations]
    for name, cfg in p.paper_datasets.items():
        if name in loaded:
            specs.append({"dataset": name, "model": cfg.model, "ci": cfg.ci, "num_draws": cfg.num_draws,
                          "label_range": cfg.label_range})
    return [dict(s, label_range=list(s["label_range"]) if s["label_range"] is not None else None) for s in specs]


def spec_key(spec: dict[str, Any]) -> str:
    return f"{spec['dataset']}/{spec['model']}/{spec['ci']}"


def _own_rows(frame: pd.DataFrame, part: B.Partition) -> pd.DataFrame:
    return frame[(frame["dataset_id"] == part.dataset_id) & (frame["model"] == part.model) & (frame["ci"] == part.ci)]


# ============================================================================ PAC labeling trials
def calibrate(p: PACLabelsParams, partitions: list[dict[str, Any]], annotations: pd.DataFrame,
              expert_oracle: pd.DataFrame, seed_for: SeedFn, log: Log = _quiet) -> pd.DataFrame:
    """Per partition × trial: PAC's û and the paired plug-in threshold on the same K draws
    (trial seed = seed_for("trial", partition key, trial)); trial 0's PAC row carries the UCB curve."""
    rows = []
    for index, spec in enumerate(partitions, 1):
        part, hidden = B.make_partition(spec, annotations, expert_oracle)
        start = time.monotonic()
        for trial in range(p.trials):
            seed = seed_for("trial", part.key, trial)
            for method in ("pac", "plugin"):
                row = B.run_trial(part, hidden, p.epsilon, p.alpha, seed, method, p.wsr_grid_size,
                                  curve_points=p.curve_points if trial == 0 and method == "pac" else 0)
                rows.append({"dataset_id": part.dataset_id, "model": part.model, "ci": part.ci, "method": method,
                             "trial": trial, "seed": seed, "num_draws": part.num_draws, "n_items": part.n, **row})
        log(f"[{index}/{len(partitions)}] {part.key}: {p.trials} trials in {time.monotonic() - start:.1f} s "
            f"(n={part.n}, K={part.num_draws})")
    frame = pd.DataFrame(rows)
    for col in ("ucb_curve_u", "ucb_curve_value"):
        frame[col] = frame[col].map(lambda v: v if isinstance(v, list) else [])
    return frame


def label_first_trials(partitions: list[dict[str, Any]], annotations: pd.DataFrame, expert_oracle: pd.DataFrame,
                       thresholds: pd.DataFrame) -> pd.DataFrame:
    """Ỹ with provenance and the oracle's ledger reason for every item of every partition, trial 0."""
    frames = []
    first = thresholds[(thresholds["trial"] == 0) & (thresholds["method"] == "pac")]
    for spec in partitions:
        part, hidden = B.make_partition(spec, annotations, expert_oracle)
        row = _own_rows(first, part)
        result, oracle = B.label_trial(part, hidden, float(row["u_hat"].iloc[0]), int(row["seed"].iloc[0]))
        frames.append(pd.DataFrame({"dataset_id": part.dataset_id, "model": part.model, "ci": part.ci,
                                    "item_id": part.extra["item_id"], "yhat": part.yhat, "y_tilde": result.labels,
                                    "provenance": np.asarray(M.PROVENANCE, dtype=object)[result.provenance],
                                    "ledger_reason": np.asarray(M.PROVENANCE, dtype=object)[oracle.ledger_reason]}))
    return pd.concat(frames, ignore_index=True)


def score_trials(p: PACLabelsParams, partitions: list[dict[str, Any]], annotations: pd.DataFrame,
                 expert_oracle: pd.DataFrame, thresholds: pd.DataFrame, log: Log = _quiet) -> pd.DataFrame:
    """Every stored trial re-labelled from its seed and û and scored against the truth, plus
    the AI-only, naive-threshold and all-expert baselines."""
    frames, start = [], time.monotonic()
    for spec in partitions:
        part, hidden = B.make_partition(spec, annotations, expert_oracle)
        outcomes = pd.concat([B.evaluate_trials(part, hidden, _own_rows(thresholds, part)),
                              B.fixed_baselines(part, hidden, p.epsilon)], ignore_index=True)
        frames.append(outcomes.assign(dataset_id=part.dataset_id, model=part.model, ci=part.ci))
    frame = pd.concat(frames, ignore_index=True)
    log(f"scored {len(frame)} labelings in {time.monotonic() - start:.1f} s")
    return frame


def naive_split_study(p: PACLabelsParams, seed_for: SeedFn) -> pd.DataFrame:
    """The naive confidence threshold on digits for several train/pool split seeds."""
    cache: dict[int, pd.DataFrame] = {}

    def models_fn(kind: str, split_seed: int):
        if split_seed not in cache:
            cache[split_seed] = data.digits_source(p.digits.train_frac, seed_for("digits_split", int(split_seed)))
        frame = cache[split_seed]
        train, pool = frame[frame["split"] == "train"], frame[frame["split"] == "pool"]
        state = models.train_model(kind, data.features(train), train["y"].to_numpy(),
                                   seed_for("model", "digits", kind))
        yhat, conf = models.predict(kind, state, data.features(pool))
        return yhat, conf, pool["y"].to_numpy()

    return B.naive_split_study([int(s) for s in p.naive_split_seeds], p.digits.train_frac, p.epsilon, models_fn)
