"""PAC labeling as Dagster assets: wiring only; the method lives in method.py / benchmark.py.

    source_datasets ─> ai_models (checkpoints) ─┐
          │                                     v
          ├──────────────────────────────> ai_annotations ─> router (checkpoint) ─┐
    paper_datasets ─┴─> expert_oracle ──────────┴──────────────────────────────────┤
                                                                                   v
                         calibrated_thresholds (û and UCB curve per partition × trial seed)
                                  ├─> labeled_datasets (Ỹ + provenance, trial 0)
                                  └─> trial_outcomes (error / save / cost per trial, baselines)
    naive_split_study ────────────────────────────────┴─> benchmark_report ─> claims

Datasets are a dimension of every table (column dataset_id; a partition = dataset × model ×
CI type), so one run of the group materializes every dataset and blocking checks gate all of
them. The paper's CSVs come from params `data_dir` (or env PAPERLAB_PAC_LABELS_DIR) and are
skipped with a logged reason when absent.
"""

import time

import dagster as dg
import numpy as np
import pandas as pd

from assets.common.checks import check_result, claim_checks, gate
from assets.common.publish import publish_report
from assets.common.report import claims_payload, markdown_table
from assets.pac_labels import benchmark as B
from assets.pac_labels import data, models, plots
from assets.pac_labels import method as M
from assets.pac_labels import router as R
from resources.artifacts import (ArtifactsResource, data_ref, load_state_dict, resolve_data_ref,
                                 save_state_dict)
from resources.compute import ComputeResource
from resources.profiles import REPO_ROOT
from resources.quality import expect, gx_check_result, validate_frame
from resources.versioning import provenance

SLUG = "pac_labels"
GENERATED = ("digits", "synthetic_cls", "synthetic_reg")
ROUTER_MODEL = "router"


def key(name: str) -> dg.AssetKey:
    return dg.AssetKey([SLUG, name])


def _paper_spec(cfg: dict) -> data.TableSpec:
    return data.TableSpec(label_col=cfg["label_col"], pred_col=cfg["pred_col"], conf_col=cfg["conf_col"],
                          loss=cfg["loss"])


def _partition_specs(params: dict, annotations: pd.DataFrame) -> list[dict]:
    """Configured generated partitions + one per paper dataset that was loaded."""
    specs = [dict(p) for p in params["partitions"]]
    loaded = set(annotations["dataset_id"])
    for name, cfg in params.get("paper_datasets", {}).items():
        if name in loaded:
            specs.append({"dataset": name, "model": cfg["model"], "ci": cfg["ci"],
                          "num_draws": cfg["num_draws"], "label_range": cfg.get("label_range")})
    return specs


def _all_annotations(ai_annotations: pd.DataFrame, router: pd.DataFrame) -> pd.DataFrame:
    return pd.concat([ai_annotations, router], ignore_index=True) if len(router) else ai_annotations


def _split_seed(compute: ComputeResource, split_seed: int) -> int:
    return compute.seed_for(SLUG, "digits_split", int(split_seed))


# ------------------------------------------------------------------------------ datasets
@dg.asset(key=key("source_datasets"), group_name=SLUG, kinds={"pandas", "sklearn"},
          description="Generated / shipped datasets with a disjoint train split (for the AI model) and "
                      "a pool to label: sklearn digits, make_classification (10 classes, 10% label "
                      "noise), Friedman #1 (standardized target). Features x_* (NaN where a dataset "
                      "has fewer).")
def source_datasets(context: dg.AssetExecutionContext, compute: ComputeResource) -> pd.DataFrame:
    p = compute.params(SLUG)
    cls, reg = p["synthetic_cls"], p["synthetic_reg"]
    frames = [
        data.digits_source(float(p["digits"]["train_frac"]), _split_seed(compute, p["digits"]["split_seed"])),
        data.synthetic_classification(int(cls["n_pool"]), int(cls["n_train"]), int(cls["n_classes"]),
                                      int(cls["n_features"]), int(cls["n_informative"]), float(cls["label_noise"]),
                                      float(cls["class_sep"]), compute.seed_for(SLUG, "synthetic_cls", cls["seed"])),
        data.synthetic_regression(int(reg["n_pool"]), int(reg["n_train"]), float(reg["noise"]),
                                  compute.seed_for(SLUG, "synthetic_reg", reg["seed"])),
    ]
    frame = pd.concat(frames, ignore_index=True)
    counts = frame.groupby(["dataset_id", "split"]).size()
    context.log.info(f"rows per dataset/split: {counts.to_dict()}")
    context.add_output_metadata({"rows_per_split": dg.MetadataValue.json(
        {f"{d}/{s}": int(v) for (d, s), v in counts.items()}), **provenance(SLUG, compute.profile)})
    return frame


@dg.asset(key=key("paper_datasets"), group_name=SLUG, kinds={"pandas"},
          description="The paper's own CSVs (tijana-zrnic/pac-labels, MIT): label, AI label and "
                      "confidence columns as read (strings), one dataset_id each; read from params "
                      "data_dir or env PAPERLAB_PAC_LABELS_DIR, skipped with a logged reason when absent.")
def paper_datasets(context: dg.AssetExecutionContext, compute: ComputeResource) -> pd.DataFrame:
    p = compute.params(SLUG)
    directory = data.resolve_data_dir(str(p["data_dir"]), REPO_ROOT)
    frames, status = [], {}
    for name, cfg in p.get("paper_datasets", {}).items():
        path = directory / cfg["file"]
        if not path.exists():
            status[name] = f"skipped: {path} not found"
            context.log.warning(f"paper dataset {name} skipped: {path} not found (set data_dir or "
                                f"{data.DATA_DIR_ENV_VAR})")
            continue
        raw = data.read_paper_csv(path, _paper_spec(cfg))
        cols = [c for c in (cfg["label_col"], cfg["pred_col"], cfg["conf_col"]) if c in raw.columns]
        part = raw[cols].astype(object).where(raw[cols].notna(), None)
        part = part.apply(lambda col: col.map(lambda v: None if v is None else str(v)))
        part.insert(0, "row", np.arange(len(raw), dtype=np.int64))
        part.insert(0, "dataset_id", name)
        frames.append(part)
        status[name] = f"loaded {len(raw)} rows from {path}"
        context.log.info(f"paper dataset {name}: {len(raw)} rows")
    frame = (pd.concat(frames, ignore_index=True) if frames
             else pd.DataFrame({"dataset_id": pd.Series(dtype=str), "row": pd.Series(dtype=np.int64)}))
    context.add_output_metadata({"status": dg.MetadataValue.json(status), "data_dir": str(directory)})
    return frame


def _paper_table(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    """One paper dataset's rows with its own columns (columns absent from its CSV dropped)."""
    rows = frame[frame["dataset_id"] == name].drop(columns=["dataset_id"]).set_index("row")
    return rows.loc[:, rows.notna().any(axis=0)]


# ------------------------------------------------------------------------------ models
@dg.asset(key=key("ai_models"), group_name=SLUG, kinds={"sklearn", "torch"},
          description="Checkpoints: the 'pre-trained AI models' (logistic regression and Gaussian NB on "
                      "digits, a weak MLP on the synthetic task, a bootstrap GradientBoosting ensemble on "
                      "Friedman #1), trained on the train split; state_dict of arrays + JSON sidecar.")
def ai_models(context: dg.AssetExecutionContext, source_datasets: pd.DataFrame, compute: ComputeResource,
              artifacts: ArtifactsResource) -> dict:
    p = compute.params(SLUG)
    out = {}
    for dataset, kinds in p["models"].items():
        train = source_datasets[(source_datasets["dataset_id"] == dataset) & (source_datasets["split"] == "train")]
        X, y = data.features(train), train["y"].to_numpy()
        for kind, options in kinds.items():
            start = time.monotonic()
            seed = compute.seed_for(SLUG, "model", dataset, kind)
            state = models.train_model(kind, X, y, seed, options)
            yhat, _ = models.predict(kind, state, X)
            metric = (float(np.mean(yhat == y)) if kind in models.CLASSIFIERS
                      else float(1 - np.mean((yhat - y) ** 2) / np.var(y)))
            path = artifacts.checkpoint_path(SLUG, f"{dataset}_{kind}")
            sidecar = save_state_dict(path, state, {"dataset": dataset, "kind": kind, "seed": seed,
                                                    "options": dict(options), "n_train": int(len(y)),
                                                    "train_metric": metric, "device": "cpu",
                                                    **provenance(SLUG, compute.profile)})
            out[f"{dataset}/{kind}"] = {"dataset": dataset, "kind": kind, "checkpoint": data_ref(path),
                                        "md5": sidecar["md5"], "train_metric": metric,
                                        "metric_name": "accuracy" if kind in models.CLASSIFIERS else "r2",
                                        "n_classes": int(len(np.unique(y))) if kind in models.CLASSIFIERS else 0}
            context.log.info(f"{dataset}/{kind}: train {out[f'{dataset}/{kind}']['metric_name']} {metric:.3f} "
                             f"({time.monotonic() - start:.1f} s)")
    context.add_output_metadata({"models": dg.MetadataValue.json(
        {k: round(v["train_metric"], 4) for k, v in out.items()})})
    return out


def _load_model(entry: dict) -> dict[str, np.ndarray]:
    state, _ = load_state_dict(resolve_data_ref(entry["checkpoint"]))
    return {k: v.numpy() for k, v in state.items()}


# ------------------------------------------------------------------------------ oracle + annotations
@dg.asset(key=key("expert_oracle"), group_name=SLUG, kinds={"pandas"},
          description="Hidden expert labels of every pool (dataset_id, item_id, y; class codes for "
                      "0-1 loss). Read only through method.ExpertOracle, which keeps the purchase ledger.")
def expert_oracle(context: dg.AssetExecutionContext, source_datasets: pd.DataFrame, paper_datasets: pd.DataFrame,
                  compute: ComputeResource) -> pd.DataFrame:
    p = compute.params(SLUG)
    pool = source_datasets[source_datasets["split"] == "pool"]
    frames = [pool[["dataset_id", "item_id", "y"]].copy()]
    for name in sorted(set(paper_datasets["dataset_id"])):
        cfg = p["paper_datasets"][name]
        items, _ = data.encode_table(_paper_table(paper_datasets, name), _paper_spec(cfg))
        frames.append(items[["item_id", "y"]].assign(dataset_id=name))
    frame = pd.concat(frames, ignore_index=True)[["dataset_id", "item_id", "y"]]
    frame["item_id"] = frame["item_id"].astype(np.int64)
    context.add_output_metadata({"items": dg.MetadataValue.json(frame.groupby("dataset_id").size().to_dict())})
    return frame


@dg.asset(key=key("ai_annotations"), group_name=SLUG, kinds={"pandas"},
          description="AI annotations of every pool: Ŷ, confidence, uncertainty U = 1 − confidence + "
                      "seeded 1e-5 jitter (ties broken), loss, per-item model cost. Generated pools are "
                      "predicted from the reloaded checkpoints; paper pools come from their CSVs.")
def ai_annotations(context: dg.AssetExecutionContext, source_datasets: pd.DataFrame, paper_datasets: pd.DataFrame,
                   ai_models: dict, compute: ComputeResource) -> pd.DataFrame:
    p = compute.params(SLUG)
    tie_seed = int(p["tie_break_seed"])
    frames = []
    for name, entry in ai_models.items():
        dataset, kind = entry["dataset"], entry["kind"]
        pool = source_datasets[(source_datasets["dataset_id"] == dataset) & (source_datasets["split"] == "pool")]
        yhat, conf = models.predict(kind, _load_model(entry), data.features(pool))
        cost = float(p["models"][dataset][kind].get("cost", 0.0))
        frames.append(pd.DataFrame({"dataset_id": dataset, "model": kind, "item_id": pool["item_id"].to_numpy(np.int64),
                                    "yhat": yhat, "confidence": np.clip(conf, 0.0, 1.0),
                                    "uncertainty": M.uncertainty_from_confidence(conf, seed=tie_seed),
                                    "loss": "squared" if kind in models.REGRESSORS else "zero_one",
                                    "model_cost": cost}))
    for name in sorted(set(paper_datasets["dataset_id"])):
        cfg = p["paper_datasets"][name]
        items, space = data.encode_table(_paper_table(paper_datasets, name), _paper_spec(cfg))
        conf = items["confidence"].to_numpy()
        frames.append(pd.DataFrame({"dataset_id": name, "model": cfg["model"], "item_id": items["item_id"],
                                    "yhat": items["yhat"], "confidence": conf,
                                    "uncertainty": M.uncertainty_from_confidence(conf, seed=tie_seed),
                                    "loss": cfg["loss"], "model_cost": float(cfg.get("cost", 0.0))}))
        context.log.info(f"{name}: {len(items)} items, label space {len(space) or 'continuous'}")
    frame = pd.concat(frames, ignore_index=True)
    context.add_output_metadata({"partitions": dg.MetadataValue.json(
        frame.groupby(["dataset_id", "model"]).size().rename("items").reset_index().to_dict("records"))})
    return frame


# ------------------------------------------------------------------------------ router
@dg.asset(key=key("router"), group_name=SLUG, kinds={"torch"},
          description="PAC router: a softmax weighter over the cheap and the expensive model and a learned "
                      "uncertainty MLP, trained on a calibration split whose expert labels are bought; "
                      "checkpoint + routed annotations of the rest of the pool (prelabelled = calibration).")
def router(context: dg.AssetExecutionContext, source_datasets: pd.DataFrame, ai_annotations: pd.DataFrame,
           expert_oracle: pd.DataFrame, compute: ComputeResource, artifacts: ArtifactsResource) -> pd.DataFrame:
    p = compute.params(SLUG)
    cfg = p["router"]
    dataset, kinds = cfg["dataset"], list(cfg["models"])
    X, yhats, confs, item_ids = _router_inputs(source_datasets, ai_annotations, dataset, kinds)
    costs = [float(p["models"][dataset][k]["cost"]) for k in kinds]
    n = len(item_ids)
    rng = compute.rng(SLUG, "router_calibration")
    calib = np.sort(rng.choice(n, size=max(2, int(round(float(cfg["calibration_frac"]) * n))), replace=False))
    truth = expert_oracle[expert_oracle["dataset_id"] == dataset].set_index("item_id")["y"]
    oracle = M.ExpertOracle(truth.loc[item_ids].to_numpy(dtype=float))
    y_cal = oracle.buy(calib, M.EXPERT_CALIBRATION)
    n_classes = int(max(yhats.max(), np.nanmax(y_cal)) + 1)
    rconf = R.RouterConfig(costs=tuple(costs), epsilon=float(p["epsilon"]), epochs=int(cfg["epochs"]),
                           batch_size=int(cfg["batch_size"]), lr=float(cfg["lr"]),
                           weight_decay=float(cfg["weight_decay"]))
    seed = compute.seed_for(SLUG, "router")
    torch = compute.torch(seed)
    start = time.monotonic()
    state = R.train_router(torch, X[calib], yhats[calib].astype(np.int64), confs[calib], y_cal.astype(np.int64),
                           n_classes, rconf, seed, log=context.log.info)
    path = artifacts.checkpoint_path(SLUG, "router")
    sidecar = save_state_dict(path, state, {"dataset": dataset, "models": kinds, "costs": costs, "seed": seed,
                                            "n_classes": n_classes, "calibration_items": int(len(calib)),
                                            "device": "cpu", **provenance(SLUG, compute.profile)})
    rest = np.setdiff1d(np.arange(n), calib)
    chosen, routed, logits = R.route(torch, state, X[rest], yhats[rest].astype(np.int64), confs[rest], n_classes)
    jitter = np.random.default_rng(np.random.SeedSequence([int(p["tie_break_seed"]), 0x7AC])).normal(
        0.0, M.TIE_BREAK_JITTER, size=logits.shape)
    context.log.info(f"router trained in {time.monotonic() - start:.1f} s; routed to "
                     f"{dict(zip(kinds, np.bincount(chosen, minlength=len(kinds)).tolist()))}")
    frame = pd.DataFrame({"dataset_id": dataset, "model": ROUTER_MODEL, "item_id": item_ids[rest],
                          "yhat": routed, "confidence": 1.0 - R.sigmoid(logits),
                          # PAC orders items by the learned logit (σ saturates in float32)
                          "uncertainty": logits + jitter,
                          "loss": "zero_one", "model_cost": np.asarray(costs)[chosen],
                          "routed_model": np.asarray(kinds, dtype=object)[chosen],
                          "prelabelled": int(len(calib)),
                          # calibration items: expert label + every model's annotation (router inputs)
                          "prelabel_cost": float(len(calib) * (1.0 + sum(costs)))})
    context.add_output_metadata({"checkpoint": data_ref(path), "checkpoint_md5": sidecar["md5"],
                                 "calibration_items": int(len(calib)), "routed_items": int(len(rest)),
                                 "share_per_model": dg.MetadataValue.json(
                                     frame["routed_model"].value_counts().to_dict())})
    return frame


def _router_inputs(source: pd.DataFrame, annotations: pd.DataFrame, dataset: str, kinds: list[str]):
    """Features (n, d), per-model Ŷ and confidence (n, M), item ids (n,) of one pool."""
    pool = source[(source["dataset_id"] == dataset) & (source["split"] == "pool")].sort_values("item_id")
    item_ids = pool["item_id"].to_numpy(np.int64)
    yhats, confs = [], []
    for kind in kinds:
        rows = annotations[(annotations["dataset_id"] == dataset) & (annotations["model"] == kind)]
        rows = rows.set_index("item_id").loc[item_ids]
        yhats.append(rows["yhat"].to_numpy())
        confs.append(rows["confidence"].to_numpy())
    return data.features(pool), np.stack(yhats, 1), np.stack(confs, 1), item_ids


# ------------------------------------------------------------------------------ PAC labeling
@dg.asset(key=key("calibrated_thresholds"), group_name=SLUG, kinds={"numpy"},
          description="Per partition × trial seed: PAC's threshold û (largest u with UCB_α(u) ≤ ε, "
                      "−inf when none) and the paired plug-in threshold (L̂(u) ≤ ε) on the same K draws; "
                      "trial 0 carries the UCB curve.")
def calibrated_thresholds(context: dg.AssetExecutionContext, ai_annotations: pd.DataFrame, router: pd.DataFrame,
                          expert_oracle: pd.DataFrame, compute: ComputeResource) -> pd.DataFrame:
    p = compute.params(SLUG)
    annotations = _all_annotations(ai_annotations, router)
    eps, alpha, trials = float(p["epsilon"]), float(p["alpha"]), int(p["trials"])
    rows, start = [], time.monotonic()
    specs = _partition_specs(p, annotations)
    for index, spec in enumerate(specs, 1):
        part, hidden = B.make_partition(spec, annotations, expert_oracle)
        part_start = time.monotonic()
        for trial in range(trials):
            seed = compute.seed_for(SLUG, "trial", part.key, trial)
            for method in ("pac", "plugin"):
                row = B.run_trial(part, hidden, eps, alpha, seed, method, int(p["wsr_grid_size"]),
                                  curve_points=int(p["curve_points"]) if trial == 0 and method == "pac" else 0)
                rows.append({"dataset_id": part.dataset_id, "model": part.model, "ci": part.ci, "method": method,
                             "trial": trial, "seed": seed, "num_draws": part.num_draws, "n_items": part.n, **row})
        context.log.info(f"[{index}/{len(specs)}] {part.key}: {trials} trials in {time.monotonic() - part_start:.1f} s "
                         f"(n={part.n}, K={part.num_draws})")
    frame = pd.DataFrame(rows)
    for col in ("ucb_curve_u", "ucb_curve_value"):
        frame[col] = frame[col].map(lambda v: v if isinstance(v, list) else [])
    context.add_output_metadata({"trials_total": len(frame), "seconds": round(time.monotonic() - start, 1)})
    return frame


@dg.asset(key=key("labeled_datasets"), group_name=SLUG, kinds={"pandas"},
          description="The product: labels Ỹ with provenance (ai / expert_sampled / expert_threshold) for "
                      "every item of every partition, for trial 0, with the oracle's ledger reason.")
def labeled_datasets(context: dg.AssetExecutionContext, calibrated_thresholds: pd.DataFrame,
                     ai_annotations: pd.DataFrame, router: pd.DataFrame, expert_oracle: pd.DataFrame,
                     compute: ComputeResource) -> pd.DataFrame:
    p = compute.params(SLUG)
    annotations = _all_annotations(ai_annotations, router)
    frames = []
    first = calibrated_thresholds[(calibrated_thresholds["trial"] == 0) & (calibrated_thresholds["method"] == "pac")]
    for spec in _partition_specs(p, annotations):
        part, hidden = B.make_partition(spec, annotations, expert_oracle)
        row = first[(first["dataset_id"] == part.dataset_id) & (first["model"] == part.model) & (first["ci"] == part.ci)]
        result, oracle = B.label_trial(part, hidden, float(row["u_hat"].iloc[0]), int(row["seed"].iloc[0]))
        frames.append(pd.DataFrame({"dataset_id": part.dataset_id, "model": part.model, "ci": part.ci,
                                    "item_id": part.extra["item_id"], "yhat": part.yhat, "y_tilde": result.labels,
                                    "provenance": np.asarray(M.PROVENANCE, dtype=object)[result.provenance],
                                    "ledger_reason": np.asarray(M.PROVENANCE, dtype=object)[oracle.ledger_reason]}))
    frame = pd.concat(frames, ignore_index=True)
    counts = frame.groupby(["dataset_id", "model", "ci", "provenance"]).size().unstack(fill_value=0).reset_index()
    context.add_output_metadata({"provenance_counts": dg.MetadataValue.md(markdown_table(counts))})
    return frame


@dg.asset(key=key("trial_outcomes"), group_name=SLUG, kinds={"pandas"},
          description="Every trial re-labelled from its seed and û and scored against the full truth: "
                      "realized error, fraction saved, cost, purchases per reason, ledger = provenance; "
                      "plus AI-only, naive-threshold and all-expert baselines.")
def trial_outcomes(context: dg.AssetExecutionContext, calibrated_thresholds: pd.DataFrame,
                   ai_annotations: pd.DataFrame, router: pd.DataFrame, expert_oracle: pd.DataFrame,
                   compute: ComputeResource) -> pd.DataFrame:
    p = compute.params(SLUG)
    annotations = _all_annotations(ai_annotations, router)
    frames, start = [], time.monotonic()
    for spec in _partition_specs(p, annotations):
        part, hidden = B.make_partition(spec, annotations, expert_oracle)
        mine = calibrated_thresholds[(calibrated_thresholds["dataset_id"] == part.dataset_id)
                                     & (calibrated_thresholds["model"] == part.model)
                                     & (calibrated_thresholds["ci"] == part.ci)]
        outcomes = pd.concat([B.evaluate_trials(part, hidden, mine), B.fixed_baselines(part, hidden, float(p["epsilon"]))],
                             ignore_index=True)
        frames.append(outcomes.assign(dataset_id=part.dataset_id, model=part.model, ci=part.ci))
    frame = pd.concat(frames, ignore_index=True)
    context.log.info(f"scored {len(frame)} labelings in {time.monotonic() - start:.1f} s")
    return frame


@dg.asset(key=key("naive_split_study"), group_name=SLUG, kinds={"sklearn"},
          description="Naive confidence threshold on digits for several train/pool split seeds (it is "
                      "deterministic given the split): its error, labels saved and AI-only error.")
def naive_split_study(context: dg.AssetExecutionContext, compute: ComputeResource) -> pd.DataFrame:
    p = compute.params(SLUG)
    cache = {}

    def models_fn(kind: str, split_seed: int):
        if split_seed not in cache:
            cache[split_seed] = data.digits_source(float(p["digits"]["train_frac"]), _split_seed(compute, split_seed))
        frame = cache[split_seed]
        train, pool = frame[frame["split"] == "train"], frame[frame["split"] == "pool"]
        state = models.train_model(kind, data.features(train), train["y"].to_numpy(),
                                   compute.seed_for(SLUG, "model", "digits", kind))
        yhat, conf = models.predict(kind, state, data.features(pool))
        return yhat, conf, pool["y"].to_numpy()

    frame = B.naive_split_study([int(s) for s in p["naive_split_seeds"]], float(p["digits"]["train_frac"]),
                                float(p["epsilon"]), models_fn)
    context.log.info(frame.groupby("model")[["naive_error", "naive_save", "ai_only_error"]].median().to_string())
    return frame


# ------------------------------------------------------------------------------ report
def _paper_status(params: dict) -> dict[str, str]:
    directory = data.resolve_data_dir(str(params["data_dir"]), REPO_ROOT)
    return {name: ("loaded" if (directory / cfg["file"]).exists() else f"{directory / cfg['file']} not found")
            for name, cfg in params.get("paper_datasets", {}).items()}


@dg.asset(key=key("benchmark_report"), group_name=SLUG, kinds={"duckdb", "markdown"},
          description="PAC labels vs plug-in, naive threshold, AI only and all-expert over trials: "
                      "violation frequency, error quantile, labels saved, cost → warehouse rows, "
                      "REPORT.md with plots, metrics.json, claims.")
def benchmark_report(context: dg.AssetExecutionContext, trial_outcomes: pd.DataFrame,
                     calibrated_thresholds: pd.DataFrame, naive_split_study: pd.DataFrame,
                     compute: ComputeResource, artifacts: ArtifactsResource) -> dict:
    p = compute.params(SLUG)
    eps, alpha = float(p["epsilon"]), float(p["alpha"])
    summary = B.summarize(trial_outcomes, eps, alpha)
    status = _paper_status(p)
    claims = B.evaluate_claims(summary, naive_split_study, eps, alpha, status)
    for c in claims:
        context.log.info(f"claim {c.claim_id}: {'holds' if c.holds else 'DOES NOT HOLD'} — {c.measured_value}")

    table = summary[["dataset_id", "model", "ci", "method", "trials", "violation_freq", "error_q", "error_max",
                     "save_mean", "save_sd", "cost_mean"]]
    body = [f"ε = {eps:g}, α = {alpha:g}, {int(p['trials'])} trials per partition (profile {compute.profile}). "
            "violation_freq = fraction of trials with realized error > ε; error_q = the (1 − α) quantile of the "
            "realized error; save = fraction of the dataset not expert-labelled; cost per item with expert = 1 "
            "(model costs only on the router's dataset).", "",
            "## Per partition and method", "", markdown_table(table, digits=4), "",
            "## Naive threshold per digits split seed", "",
            markdown_table(naive_split_study, digits=4), "",
            "## Paper datasets", "", "\n".join(f"- {k}: {v}" for k, v in status.items()) or "none configured", ""]
    metric_rows = summary.melt(id_vars=["dataset_id", "model", "ci", "method"],
                               value_vars=["violation_freq", "error_mean", "error_q", "error_max", "save_mean",
                                           "save_sd", "cost_mean", "trials"], var_name="metric")
    metric_rows = metric_rows.assign(asset=f"{SLUG}/trial_outcomes",
                                     partition=lambda d: d["model"] + "/" + d["ci"], seed=int(compute.base_seed),
                                     dataset=metric_rows["dataset_id"])
    metric_rows["value"] = metric_rows["value"].astype(float)
    pac = calibrated_thresholds[calibrated_thresholds["method"] == "pac"]
    thresholds = pd.DataFrame({"name": "u_hat", "seed": pac["seed"].astype(np.int64),
                               "dataset": pac["dataset_id"] + "/" + pac["model"] + "/" + pac["ci"],
                               "method": "pac", "value": pac["u_hat"].astype(float)})
    thresholds = thresholds[np.isfinite(thresholds["value"])]
    figures = {"realized_error": plots.realized_error(trial_outcomes, eps),
               "violation_and_save": plots.violation_and_save(summary, alpha),
               "ucb_curves": plots.ucb_curves(calibrated_thresholds, eps),
               "router_costs": plots.router_costs(summary)}
    dvc_metrics = {"claims_holding": int(sum(c.holds for c in claims)), "claims_total": len(claims),
                   "pac": {f"{r.dataset_id}/{r.model}/{r.ci}": {"violation_freq": float(r.violation_freq),
                                                                 "save_mean": float(r.save_mean),
                                                                 "error_q": float(r.error_q)}
                           for r in summary[summary["method"] == "pac"].itertuples()}}
    metadata = publish_report(slug=SLUG, profile=compute.profile, run_id=context.run_id,
                              report_dir=artifacts.report_dir(SLUG),
                              metrics_rows=metric_rows[["asset", "partition", "seed", "dataset", "method", "metric", "value"]],
                              claims=claims, body_markdown="\n".join(body), figures=figures,
                              dvc_metrics=dvc_metrics, thresholds_rows=thresholds)
    context.add_output_metadata(metadata)
    return claims_payload(claims, compute.profile)


# ------------------------------------------------------------------------------ checks
def _source_schema(frame: pd.DataFrame) -> dg.AssetCheckResult:
    result = validate_frame(frame, [
        expect("ExpectColumnValuesToNotBeNull", column="y"),
        expect("ExpectColumnValuesToBeInSet", column="split", value_set=["train", "pool"]),
        expect("ExpectColumnValuesToBeInSet", column="dataset_id", value_set=list(GENERATED)),
        expect("ExpectColumnDistinctValuesToEqualSet", column="dataset_id", value_set=list(GENERATED)),
    ], name="pac_labels_source")
    problems = []
    for dataset, rows in frame.groupby("dataset_id"):
        splits = set(rows["split"])
        if splits != {"train", "pool"}:
            problems.append(f"{dataset}: splits {sorted(splits)} (need train and pool)")
        X = data.features(rows)
        if X.shape[1] == 0 or not np.isfinite(X).all():
            problems.append(f"{dataset}: features missing or non-finite")
    if not result.success or problems:
        return check_result(False, "; ".join([result.summary()] * (not result.success) + problems))
    return gx_check_result(result)


def _paper_tables_valid(frame: pd.DataFrame, compute: ComputeResource) -> dg.AssetCheckResult:
    p = compute.params(SLUG)
    problems = []
    for name in sorted(set(frame["dataset_id"])):
        cfg = p["paper_datasets"][name]
        problems += [f"{name}: {msg}" for msg in data.validate_table(_paper_table(frame, name), _paper_spec(cfg))]
    loaded = sorted(set(frame["dataset_id"]))
    return check_result(not problems, "; ".join(problems) if problems else
                        f"{len(loaded)} paper tables valid ({', '.join(loaded) or 'none present: skipped'})",
                        datasets=loaded)


def _models_load_back(value: dict) -> dg.AssetCheckResult:
    problems = []
    for name, entry in value.items():
        try:
            state = _load_model(entry)
        except Exception as err:  # noqa: BLE001 — any load failure is the finding
            problems.append(f"{name}: does not load ({err})")
            continue
        if not all(np.isfinite(v).all() for v in state.values()):
            problems.append(f"{name}: non-finite weights")
        floor = 1.5 / max(entry["n_classes"], 1) if entry["metric_name"] == "accuracy" else 0.0
        if not entry["train_metric"] > floor:
            problems.append(f"{name}: train {entry['metric_name']} {entry['train_metric']:.3f} ≤ {floor:.3f}")
    return check_result(not problems, "; ".join(problems) or f"{len(value)} checkpoints reload, finite, better than chance")


def _oracle_complete(frame: pd.DataFrame) -> dg.AssetCheckResult:
    problems = []
    bad = ~np.isfinite(frame["y"].to_numpy(dtype=float))
    if bad.any():
        problems.append(f"{int(bad.sum())} hidden labels missing/non-finite (e.g. {frame.loc[bad, ['dataset_id', 'item_id']].head(5).to_dict('records')})")
    dup = frame.duplicated(["dataset_id", "item_id"])
    if dup.any():
        problems.append(f"{int(dup.sum())} duplicated (dataset_id, item_id)")
    return check_result(not problems, "; ".join(problems) or f"{len(frame)} expert labels, one per item")


def _annotations_valid(frame: pd.DataFrame, expert_oracle: pd.DataFrame, compute: ComputeResource) -> dg.AssetCheckResult:
    """Confidence in [0, 1] and finite; U finite with no ties; Ŷ in the label space; the PAC
    parameters valid for every configured partition (ε, α in (0, 1), K ≤ pool)."""
    p = compute.params(SLUG)
    problems = []
    for (dataset, model), rows in frame.groupby(["dataset_id", "model"]):
        conf = rows["confidence"].to_numpy(dtype=float)
        bad = ~np.isfinite(conf) | (conf < 0) | (conf > 1)
        if bad.any():
            problems.append(f"{dataset}/{model}: column 'confidence' not finite or outside [0, 1] at items "
                            f"{rows.loc[bad, 'item_id'].head(10).tolist()}")
        unc = rows["uncertainty"].to_numpy(dtype=float)
        if not np.isfinite(unc).all():
            problems.append(f"{dataset}/{model}: non-finite uncertainty")
        elif np.unique(unc).size != unc.size:
            problems.append(f"{dataset}/{model}: {unc.size - np.unique(unc).size} tied uncertainties (ties not broken)")
        truth = expert_oracle[expert_oracle["dataset_id"] == dataset]
        if rows["loss"].iloc[0] == "zero_one":
            space = set(truth["y"].tolist())
            outside = ~rows["yhat"].isin(space)
            if outside.any():
                problems.append(f"{dataset}/{model}: column 'yhat' has labels outside the label space at items "
                                f"{rows.loc[outside, 'item_id'].head(10).tolist()}")
        elif not np.isfinite(rows["yhat"].to_numpy(dtype=float)).all():
            problems.append(f"{dataset}/{model}: non-finite yhat")
        if not rows["item_id"].isin(truth["item_id"]).all():
            problems.append(f"{dataset}/{model}: annotated items without an expert label")
    for spec in _partition_specs(p, frame):
        if spec["model"] == ROUTER_MODEL:      # the router labels the pool minus its calibration split
            rows = frame[frame["dataset_id"] == spec["dataset"]]
            n = int(rows.groupby("model").size().max() * (1 - float(p["router"]["calibration_frac"])))
            loss = "zero_one"
        else:
            rows = frame[(frame["dataset_id"] == spec["dataset"]) & (frame["model"] == spec["model"])]
            n, loss = len(rows), (str(rows["loss"].iloc[0]) if len(rows) else "zero_one")
        config = M.PACConfig(epsilon=p["epsilon"], alpha=p["alpha"], num_draws=int(spec["num_draws"]),
                             ci=spec["ci"], loss=loss,
                             label_range=tuple(spec["label_range"]) if spec.get("label_range") else None)
        try:
            if n == 0:
                raise M.InputError("no annotated items")
            M.validate_config(config, n)
        except M.InputError as err:
            problems.append(f"partition {spec['dataset']}/{spec['model']}/{spec['ci']}: {err}")
    return check_result(not problems, "; ".join(problems) or
                        f"{frame.groupby(['dataset_id', 'model']).ngroups} annotation sets valid; PAC parameters valid")


def _annotations_not_trivial(frame: pd.DataFrame, expert_oracle: pd.DataFrame, compute: ComputeResource) -> dg.AssetCheckResult:
    eps = float(compute.params(SLUG)["epsilon"])
    trivial = []
    for (dataset, model), rows in frame.groupby(["dataset_id", "model"]):
        truth = expert_oracle[expert_oracle["dataset_id"] == dataset].set_index("item_id")["y"]
        err = M.realized_error(truth.loc[rows["item_id"]].to_numpy(), rows["yhat"].to_numpy(), rows["loss"].iloc[0])
        if err <= eps:
            trivial.append(f"{dataset}/{model} (AI-only error {err:.4f} ≤ ε)")
    msg = ("AI-only labels already meet ε on: " + ", ".join(trivial)) if trivial else "no trivial partition"
    return dg.AssetCheckResult(passed=not trivial, severity=dg.AssetCheckSeverity.WARN, description=msg,
                               metadata={"message": msg})


def _router_loads_back(frame: pd.DataFrame, source_datasets: pd.DataFrame, ai_annotations: pd.DataFrame,
                       compute: ComputeResource, artifacts: ArtifactsResource) -> dg.AssetCheckResult:
    p = compute.params(SLUG)
    path = artifacts.checkpoint_path(SLUG, "router")
    try:
        state, sidecar = load_state_dict(path)
    except Exception as err:  # noqa: BLE001
        return check_result(False, f"router checkpoint does not load: {err}")
    arrays = {k: v.numpy() for k, v in state.items()}
    if not all(np.isfinite(v).all() for v in arrays.values()):
        return check_result(False, "router checkpoint has non-finite weights")
    X, yhats, confs, item_ids = _router_inputs(source_datasets, ai_annotations, p["router"]["dataset"],
                                               list(p["router"]["models"]))
    keep = np.isin(item_ids, frame["item_id"].to_numpy())
    _, routed, logits = R.route(compute.torch(), arrays, X[keep], yhats[keep].astype(np.int64), confs[keep],
                                int(sidecar["n_classes"]))
    stored = frame.sort_values("item_id")
    same = np.array_equal(routed, stored["yhat"].to_numpy()) and np.allclose(
        logits, stored["uncertainty"].to_numpy(), atol=1e-4)
    return check_result(same, "reloaded router reproduces the routed annotations" if same
                        else "reloaded router routes differently from the stored annotations")


def _thresholds_valid(frame: pd.DataFrame, compute: ComputeResource) -> dg.AssetCheckResult:
    p = compute.params(SLUG)
    problems = []
    for (dataset, model, ci, method), rows in frame.groupby(["dataset_id", "model", "ci", "method"]):
        if sorted(rows["trial"]) != list(range(int(p["trials"]))):
            problems.append(f"{dataset}/{model}/{ci}/{method}: trials {len(rows)} ≠ {p['trials']}")
        u = rows["u_hat"].to_numpy(dtype=float)
        bad = np.isnan(u) | (np.isinf(u) & rows["feasible"].to_numpy()) | (np.isposinf(u))
        if bad.any():
            problems.append(f"{dataset}/{model}/{ci}/{method}: invalid û in {int(bad.sum())} trials")
        if (rows["n_sampled_bought"] > rows["num_draws"]).any():
            problems.append(f"{dataset}/{model}/{ci}/{method}: more sampled purchases than draws")
    return check_result(not problems, "; ".join(problems) or f"{len(frame)} thresholds valid")


def _labeled_complete(frame: pd.DataFrame, ai_annotations: pd.DataFrame, router: pd.DataFrame) -> dg.AssetCheckResult:
    """Every annotated item labelled exactly once per partition, Ỹ finite, provenance known,
    AI-labelled items keep Ŷ, and the oracle's ledger equals the provenance item by item."""
    annotations = _all_annotations(ai_annotations, router)
    problems = []
    for (dataset, model, ci), rows in frame.groupby(["dataset_id", "model", "ci"]):
        expected = annotations[(annotations["dataset_id"] == dataset) & (annotations["model"] == model)]["item_id"]
        if len(rows) != len(expected) or set(rows["item_id"]) != set(expected):
            problems.append(f"{dataset}/{model}/{ci}: {len(rows)} labelled items vs {len(expected)} annotated")
        if not np.isfinite(rows["y_tilde"].to_numpy(dtype=float)).all():
            problems.append(f"{dataset}/{model}/{ci}: missing labels")
        if not rows["provenance"].isin(M.PROVENANCE[:3]).all():
            problems.append(f"{dataset}/{model}/{ci}: unknown provenance")
        ai = rows["provenance"] == "ai"
        if not np.array_equal(rows.loc[ai, "y_tilde"].to_numpy(), rows.loc[ai, "yhat"].to_numpy()):
            problems.append(f"{dataset}/{model}/{ci}: AI-provenance labels differ from Ŷ")
        mismatch = rows["provenance"] != rows["ledger_reason"]
        if mismatch.any():
            problems.append(f"{dataset}/{model}/{ci}: ledger ≠ provenance for {int(mismatch.sum())} items "
                            f"(e.g. items {rows.loc[mismatch, 'item_id'].head(5).tolist()})")
    return check_result(not problems, "; ".join(problems) or "labelled tables complete; ledger = provenance")


def _outcomes_ledger(frame: pd.DataFrame) -> dg.AssetCheckResult:
    bad = frame[~frame["ledger_matches"] | ~frame["ai_labels_untouched"]]
    if len(bad):
        where = bad[["dataset_id", "model", "ci", "method", "trial"]].head(5).to_dict("records")
        return check_result(False, f"ledger ≠ provenance (or AI labels changed) in {len(bad)} labelings, e.g. {where}")
    return check_result(True, f"ledger = provenance in all {len(frame)} labelings")


assets = [source_datasets, paper_datasets, ai_models, expert_oracle, ai_annotations, router, calibrated_thresholds,
          labeled_datasets, trial_outcomes, naive_split_study, benchmark_report]
REPORT_KEY = benchmark_report.key
CLAIM_IDS = ["violation_control", "paper_stance", "paper_misinfo", "paper_imagenetv2", "paper_alphafold",
             "naive_fails_overconfident", "plugin_violates", "budget_save", "router_cost"]

asset_checks = [
    gate(SLUG, source_datasets, "schema", "GX: labels present, known splits and datasets; train and pool per "
         "dataset; finite features.", _source_schema),
    gate(SLUG, paper_datasets, "tables_valid", "Each paper CSV: columns present, no NaN, confidence in [0, 1], "
         "AI labels in the label space (errors name the column and rows).", _paper_tables_valid,
         resources=("compute",)),
    gate(SLUG, ai_models, "loads_back", "Checkpoints reload (weights_only), finite, better than chance.",
         _models_load_back),
    gate(SLUG, expert_oracle, "complete", "One finite hidden label per pool item.", _oracle_complete),
    gate(SLUG, ai_annotations, "valid", "Confidence finite in [0, 1]; uncertainty ties broken; Ŷ in the label "
         "space; ε, α in (0, 1) and K ≤ pool for every partition.", _annotations_valid,
         additional={"expert_oracle": expert_oracle.key}, resources=("compute",)),
    gate(SLUG, ai_annotations, "not_trivial", "Warning when AI-only labels already meet ε.",
         _annotations_not_trivial, blocking=False, additional={"expert_oracle": expert_oracle.key},
         resources=("compute",)),
    gate(SLUG, router, "loads_back", "Router checkpoint reloads and reproduces the routed annotations.",
         _router_loads_back, additional={"source_datasets": source_datasets.key,
                                         "ai_annotations": ai_annotations.key},
         resources=("compute", "artifacts")),
    gate(SLUG, calibrated_thresholds, "valid", "All trials present; û finite or −inf only when infeasible; "
         "sampled purchases ≤ K.", _thresholds_valid, resources=("compute",)),
    gate(SLUG, labeled_datasets, "complete_and_ledger", "Ỹ complete; provenance known; AI labels untouched; "
         "oracle ledger = provenance item by item.", _labeled_complete,
         additional={"ai_annotations": ai_annotations.key, "router": router.key}),
    gate(SLUG, trial_outcomes, "ledger_matches_provenance", "In every trial the oracle's purchase ledger equals "
         "the provenance counts and AI-labelled items keep Ŷ.", _outcomes_ledger),
    *claim_checks(SLUG, benchmark_report, CLAIM_IDS),
]

from assets.common.paper import legacy_paper  # noqa: E402  (Platform 2 migration)

PAPER = legacy_paper(SLUG, assets, asset_checks, REPORT_KEY, CLAIM_IDS)
