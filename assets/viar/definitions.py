"""VIAR as Dagster assets: wiring only; the method lives in data.py, tokenizer.py, model.py,
metrics.py, benchmark.py and plots.py.

    images ─┬─> eval_classifier ─> reference_stats ──────────────────────────────┐
            └─> msvq_tokenizer ─> token_pyramids ─┬─> var_models ─┐              │
                                                  ├─> viar_models ┼─> iteration_schedule
                                                  └─> memory_profile             │
              samples (model × schedule × seed) <─┘               │              │
              ├─> sample_quality ─┐    throughput, convergence_profile           │
              └───────────────────┴──────────────> benchmark_report ─> claims V1–V6

Dagster partitions are not used: dataset × model × depth × schedule × seed are columns of
the tables and parts of the checkpoint names, so one run of the group lets every blocking
check gate everything downstream of it.
"""

import json
import time

import dagster as dg
import numpy as np
import pandas as pd

from assets.common.checks import check_result, claim_checks, gate
from assets.common.publish import publish_report
from assets.common.report import claims_payload, markdown_table
from assets.common.tags import gpu_asset_kwargs
from assets.viar import data
from resources.artifacts import ArtifactsResource, data_ref, load_state_dict, resolve_data_ref, save_state_dict
from resources.compute import ComputeResource
from resources.quality import expect, gx_check_result, validate_frame
from resources.versioning import provenance

SLUG = "viar"


def key(name: str) -> dg.AssetKey:
    return dg.AssetKey([SLUG, name])


def _torch(compute: ComputeResource, params: dict, seed: int | None = None):
    """compute.torch(seed), then at most params['torch_threads'] threads: on the shared 2-core
    machine two OpenMP threads per process spin against the other processes and ran these
    small kernels 5–10× slower than one (measured); the resource's limit still applies."""
    torch = compute.torch(seed)
    torch.set_num_threads(max(1, min(int(params.get("torch_threads", compute.threads)), compute.threads)))
    return torch


def _dataset_cfg(params: dict, dataset: str) -> dict:
    return params[dataset]


def _tokenizer_config(params: dict, dataset: str):
    from assets.viar.tokenizer import TokenizerConfig

    d, t = params[dataset], params["tokenizer"]
    return TokenizerConfig(image_channels=int(d["channels"]), image_size=int(d["image_size"]),
                           scales=tuple(int(s) for s in d["scales"]), hidden=int(t["hidden"]),
                           cvae=int(t["cvae"]), vocab=int(t["vocab"]), downsample=int(d["downsample"]),
                           phi_count=int(t["phi_count"]), beta=float(t["beta"]))


def _ar_config(params: dict, tok_cfg: dict, dataset: str, kind: str, depth: int = 0):
    from assets.viar.model import ARConfig

    a, v = params["ar"], params["viar"]
    return ARConfig(kind=kind, vocab=int(tok_cfg["vocab"]), cvae=int(tok_cfg["cvae"]),
                    scales=tuple(tok_cfg["scales"]), num_classes=data.N_CLASSES[dataset],
                    width=int(a["width"]), heads=int(a["heads"]), depth=int(depth or 1),
                    pre=int(v["pre"]), post=int(v["post"]), mlp_ratio=float(a["mlp_ratio"]),
                    damping=float(v.get("damping", 1.0)))


def _load_tokenizer(entry: dict):
    from assets.viar.tokenizer import MultiScaleVQVAE, TokenizerConfig

    state, sidecar = load_state_dict(resolve_data_ref(entry["checkpoint"]))
    model = MultiScaleVQVAE(TokenizerConfig.from_dict(sidecar["config"]))
    model.load_state_dict(state)
    return model.eval()


def _load_classifier(entry: dict):
    from assets.viar.metrics import EvalCNN

    state, sidecar = load_state_dict(resolve_data_ref(entry["checkpoint"]))
    model = EvalCNN(int(sidecar["channels"]), int(sidecar["num_classes"]))
    model.load_state_dict(state)
    return model.eval()


def _load_ar(checkpoint: str):
    from assets.viar.model import ARConfig, NextScaleAR

    state, sidecar = load_state_dict(resolve_data_ref(checkpoint))
    model = NextScaleAR(ARConfig.from_dict(sidecar["config"]))
    model.load_state_dict(state)
    return model.eval()


def _pyramid_arrays(frame: pd.DataFrame, dataset: str, split: str, cvae: int):
    part = frame[(frame["dataset"] == dataset) & (frame["split"] == split)]
    tokens = np.stack(part["tokens"].to_numpy()).astype(np.int64)
    tf = np.stack(part["teacher_forcing"].to_numpy()).astype(np.float32).reshape(len(part), -1, cvae)
    return tf, tokens, part["label"].to_numpy(dtype=np.int64)


def _gen_labels(dataset: str, per_class: int) -> np.ndarray:
    return np.repeat(np.arange(data.N_CLASSES[dataset]), per_class).astype(np.int64)


# ------------------------------------------------------------------------------ data
@dg.asset(key=key("images"), group_name=SLUG, kinds={"pandas"},
          description="Dataset: sklearn's bundled 8×8 digits (stratified train/val/test) and seeded "
                      "procedural coloured shapes (8 classes), pixels in [-1, 1], one row per image.")
def images(context: dg.AssetExecutionContext, compute: ComputeResource) -> pd.DataFrame:
    params = compute.params(SLUG)
    frames = []
    for dataset in params["datasets"]:
        seed = compute.seed_for(SLUG, "data", dataset)
        frame = data.build_dataset(dataset, _dataset_cfg(params, dataset), seed)
        counts = frame["split"].value_counts().to_dict()
        context.log.info(f"{dataset}: {len(frame)} images {counts}, shape "
                         f"{tuple(int(frame[c].iat[0]) for c in ('channels', 'height', 'width'))}")
        frames.append(frame)
    frame = pd.concat(frames, ignore_index=True)
    context.add_output_metadata({
        "rows_per_dataset_split": dg.MetadataValue.json(
            {f"{d}/{s}": int(n) for (d, s), n in frame.groupby(["dataset", "split"]).size().items()}),
        "generator_version": data.GENERATOR_VERSION, **provenance(SLUG, compute.profile)})
    return frame


def _images_schema(frame: pd.DataFrame) -> dg.AssetCheckResult:
    result = validate_frame(frame.drop(columns="pixels"), [
        expect("ExpectColumnValuesToNotBeNull", column="label"),
        expect("ExpectColumnValuesToNotBeNull", column="split"),
        expect("ExpectColumnValuesToBeInSet", column="split", value_set=list(data.SPLITS)),
        expect("ExpectColumnValuesToBeInSet", column="dataset", value_set=list(data.N_CLASSES)),
        expect("ExpectColumnValuesToBeBetween", column="label", min_value=0,
               max_value=max(data.N_CLASSES.values()) - 1),
        expect("ExpectTableRowCountToBeBetween", min_value=100),
    ], name="viar_images")
    return gx_check_result(result)


def _images_valid(frame: pd.DataFrame, compute: ComputeResource) -> dg.AssetCheckResult:
    params = compute.params(SLUG)
    problems = []
    for dataset in params["datasets"]:
        part = frame[frame["dataset"] == dataset]
        if part.empty:
            problems.append(f"{dataset}: no images")
            continue
        d = params[dataset]
        shape = (int(d["channels"]), int(d["image_size"]), int(d["image_size"]))
        problems += [f"{dataset}: {p}" for p in data.validate_images(part, shape, data.N_CLASSES[dataset])]
    return check_result(not problems, "; ".join(problems) or
                        "image shapes as configured, pixels finite in [-1, 1], labels within the conditioning "
                        "set, every split holds every class", problems=len(problems))


# ------------------------------------------------------------------------------ evaluation network
@dg.asset(key=key("eval_classifier"), group_name=SLUG, **gpu_asset_kwargs(),
          description="Checkpoint: small CNN trained on the train split only, used solely for metrics "
                      "(FCD/sFCD/KID/class consistency/precision-recall); test accuracy in the value.")
def eval_classifier(context: dg.AssetExecutionContext, images: pd.DataFrame, compute: ComputeResource,
                    artifacts: ArtifactsResource) -> dict:
    from assets.viar import metrics

    params = compute.params(SLUG)
    c = params["classifier"]
    device = compute.resolved_device()
    out = {}
    for dataset, frame in images.groupby("dataset"):
        seed = compute.seed_for(SLUG, "classifier", dataset)
        _torch(compute, params, seed)
        xtr, ytr = data.to_arrays(frame, "train")
        xte, yte = data.to_arrays(frame, "test")
        start = time.monotonic()
        model = metrics.train_classifier(xtr, ytr, data.N_CLASSES[dataset], int(c["epochs"]), int(c["batch"]),
                                         float(c["lr"]), seed, log=context.log.info, device=device)
        accuracy = float(np.mean(metrics.extract(model, xte)["pred"] == yte))
        path = artifacts.checkpoint_path(SLUG, f"{dataset}_eval_classifier")
        sidecar = save_state_dict(path, model.state_dict(), {
            "dataset": dataset, "channels": int(xtr.shape[1]), "num_classes": data.N_CLASSES[dataset],
            "seed": seed, "test_accuracy": accuracy, "device": device, "options": dict(c),
            **provenance(SLUG, compute.profile)})
        out[dataset] = {"checkpoint": data_ref(path), "md5": sidecar["md5"], "test_accuracy": accuracy,
                        "num_classes": data.N_CLASSES[dataset]}
        context.log.info(f"{dataset}: eval classifier test accuracy {accuracy:.4f} "
                         f"({time.monotonic() - start:.1f} s)")
    context.add_output_metadata({"test_accuracy": dg.MetadataValue.json(
        {d: round(v["test_accuracy"], 4) for d, v in out.items()})})
    return out


def _classifier_accurate(value: dict, images: pd.DataFrame, compute: ComputeResource) -> dg.AssetCheckResult:
    from assets.viar import metrics

    floor = float(compute.params(SLUG)["checks"]["min_classifier_accuracy"])
    problems, accs = [], {}
    for dataset, entry in value.items():
        xte, yte = data.to_arrays(images[images["dataset"] == dataset], "test")
        acc = float(np.mean(metrics.extract(_load_classifier(entry), xte)["pred"] == yte))
        accs[dataset] = acc
        if abs(acc - entry["test_accuracy"]) > 1e-6:
            problems.append(f"{dataset}: reloaded accuracy {acc:.4f} != recorded {entry['test_accuracy']:.4f}")
        if acc < floor:
            problems.append(f"{dataset}: evaluation classifier test accuracy {acc:.4f} < {floor}")
    return check_result(not problems and bool(value), "; ".join(problems) or
                        f"reloaded (weights_only); test accuracy {accs} ≥ {floor}", accuracy=accs)


@dg.asset(key=key("reference_stats"), group_name=SLUG, kinds={"numpy", "torch"},
          description="Calibrated reference: classifier features of the real test (and val) split and the "
                      "real-vs-real noise floors (FCD/sFCD/KID of a train subset of the generated-set size "
                      "vs test; FCD between two disjoint test halves).")
def reference_stats(context: dg.AssetExecutionContext, images: pd.DataFrame, eval_classifier: dict,
                    compute: ComputeResource, artifacts: ArtifactsResource) -> dict:
    from assets.viar import metrics

    params = compute.params(SLUG)
    _torch(compute, params, 0)
    per_class = int(params["sampling"]["per_class"])
    out = {}
    for dataset, frame in images.groupby("dataset"):
        clf = _load_classifier(eval_classifier[dataset])
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
                                                **provenance(SLUG, compute.profile)})
        out[dataset] = {"features": data_ref(path), "md5": sidecar["md5"], **floors,
                        "n_floor_subset": int(len(sub)), "n_test": int(len(yte)), "n_val": int(len(feats["val"][1])),
                        "train_subset_ids": frame[frame["split"] == "train"]["image_id"].to_numpy()[sub].tolist()}
        context.log.info(f"{dataset}: noise floors " + ", ".join(f"{k} {v:.3f}" for k, v in floors.items()))
    return out


def _load_reference(entry: dict, split: str = "test") -> dict:
    state, _ = load_state_dict(resolve_data_ref(entry["features"]))
    return {name: state[f"{split}_{name}"].numpy() for name in ("penultimate", "spatial", "pred", "label")}


def _floors_valid(value: dict) -> dg.AssetCheckResult:
    problems = []
    for dataset, entry in value.items():
        for k in ("fcd_floor_train_vs_test", "sfcd_floor_train_vs_test", "fcd_floor_test_halves"):
            if not (np.isfinite(entry[k]) and entry[k] >= 0):
                problems.append(f"{dataset}: {k} = {entry[k]}")
        ref = _load_reference(entry)
        if not np.isfinite(ref["penultimate"]).all():
            problems.append(f"{dataset}: non-finite reference features")
    return check_result(not problems and bool(value), "; ".join(problems) or
                        "noise floors finite and non-negative; reference features finite")


# ------------------------------------------------------------------------------ tokenizer
@dg.asset(key=key("msvq_tokenizer"), group_name=SLUG, **gpu_asset_kwargs(),
          description="Checkpoint: VAR-style multi-scale residual VQ-VAE (shared codebook, φ residual "
                      "convs, straight-through, β = 0.25 commitment, dead-code restart), trained on the "
                      "train split, then frozen. Validation reconstruction MSE and codebook usage.")
def msvq_tokenizer(context: dg.AssetExecutionContext, images: pd.DataFrame, compute: ComputeResource,
                   artifacts: ArtifactsResource) -> dict:
    from assets.viar import tokenizer as T

    params = compute.params(SLUG)
    t = params["tokenizer"]
    device = compute.resolved_device()
    out = {}
    for dataset, frame in images.groupby("dataset"):
        cfg = _tokenizer_config(params, dataset)
        seed = compute.seed_for(SLUG, "tokenizer", dataset)
        _torch(compute, params, seed)
        xtr, _ = data.to_arrays(frame, "train")
        xva, _ = data.to_arrays(frame, "val")
        start = time.monotonic()
        model, losses = T.train_tokenizer(xtr, cfg, int(t["steps"]), int(t["batch"]), float(t["lr"]), seed,
                                          int(t["restart_every"]), float(t["restart_fraction"]),
                                          log=context.log.info, device=device)
        ev = T.evaluate_tokenizer(model, xva)
        path = artifacts.checkpoint_path(SLUG, f"{dataset}_msvq_tokenizer")
        sidecar = save_state_dict(path, model.state_dict(), {
            "dataset": dataset, "config": cfg.to_dict(), "seed": seed, "val": ev, "device": device,
            "train_seconds": time.monotonic() - start, **provenance(SLUG, compute.profile)})
        out[dataset] = {"checkpoint": data_ref(path), "md5": sidecar["md5"], "config": cfg.to_dict(),
                        "tokens_per_image": cfg.tokens_per_image, "final_train_loss": float(np.mean(losses[-20:])),
                        "parameters": int(sum(p.numel() for p in model.parameters())), **ev}
        context.log.info(f"{dataset}: tokenizer val recon MSE {ev['recon_mse']:.4f}, codebook usage "
                         f"{ev['codebook_usage']:.0%} ({time.monotonic() - start:.1f} s)")
    context.add_output_metadata({"val": dg.MetadataValue.json(
        {d: {k: v[k] for k in ("recon_mse", "codebook_usage", "codes_used_per_scale")} for d, v in out.items()})})
    return out


def _tokenizer_usable(value: dict, images: pd.DataFrame, compute: ComputeResource) -> dg.AssetCheckResult:
    from assets.viar import tokenizer as T

    checks = compute.params(SLUG)["checks"]
    max_mse, min_usage = float(checks["max_recon_mse"]), float(checks["min_codebook_usage"])
    problems, seen = [], {}
    for dataset, entry in value.items():
        xva, _ = data.to_arrays(images[images["dataset"] == dataset], "val")
        ev = T.evaluate_tokenizer(_load_tokenizer(entry), xva)
        seen[dataset] = {"recon_mse": round(ev["recon_mse"], 5), "usage": round(ev["codebook_usage"], 3)}
        if not np.isfinite(ev["recon_mse"]) or ev["recon_mse"] > max_mse:
            problems.append(f"{dataset}: validation reconstruction MSE {ev['recon_mse']:.4f} > {max_mse}")
        if ev["codebook_usage"] < min_usage:
            problems.append(f"{dataset}: codebook usage {ev['codebook_usage']:.0%} < {min_usage:.0%} "
                            f"(codebook collapse)")
        if ev["token_min"] < 0 or ev["token_max"] >= entry["config"]["vocab"]:
            problems.append(f"{dataset}: token ids [{ev['token_min']}, {ev['token_max']}] outside "
                            f"[0, {entry['config']['vocab']})")
    return check_result(not problems and bool(value), "; ".join(problems) or
                        f"reloaded; val recon MSE ≤ {max_mse}, codebook usage ≥ {min_usage:.0%}: {seen}", seen=seen)


@dg.asset(key=key("token_pyramids"), group_name=SLUG, kinds={"pandas", "torch"},
          description="Dataset: every image's token ids scale by scale (L = Σ p_k²) and its VAR "
                      "teacher-forcing inputs (area-downsampled cumulative f̂), from the frozen tokenizer.")
def token_pyramids(context: dg.AssetExecutionContext, images: pd.DataFrame, msvq_tokenizer: dict,
                   compute: ComputeResource) -> pd.DataFrame:
    from assets.viar import tokenizer as T

    params = compute.params(SLUG)
    torch = _torch(compute, params, 0)
    frames = []
    for dataset, frame in images.groupby("dataset"):
        tok = _load_tokenizer(msvq_tokenizer[dataset])
        x, y = data.to_arrays(frame)
        tokens, tf = T.token_pyramid(tok, torch.from_numpy(x))
        frames.append(pd.DataFrame({
            "dataset": dataset, "image_id": frame["image_id"].to_numpy(), "split": frame["split"].to_numpy(),
            "label": y, "tokens": list(tokens.numpy().astype(np.int64)),
            "teacher_forcing": list(tf.reshape(len(y), -1).numpy().astype(np.float32))}))
        context.log.info(f"{dataset}: {len(y)} pyramids of {tokens.shape[1]} tokens")
    return pd.concat(frames, ignore_index=True)


def _pyramids_valid(frame: pd.DataFrame, msvq_tokenizer: dict, images: pd.DataFrame) -> dg.AssetCheckResult:
    import torch

    problems, worst = [], {}
    for dataset, part in frame.groupby("dataset"):
        entry = msvq_tokenizer[dataset]
        vocab, L = int(entry["config"]["vocab"]), int(entry["tokens_per_image"])
        lengths = part["tokens"].map(len).unique()
        if len(lengths) != 1 or int(lengths[0]) != L:
            problems.append(f"{dataset}: token rows of lengths {sorted(map(int, lengths))}, expected L = {L}")
            continue
        tokens = np.stack(part["tokens"].to_numpy()).astype(np.int64)
        bad = (tokens < 0) | (tokens >= vocab)
        if bad.any():
            problems.append(f"{dataset}: {int(bad.sum())} token ids outside the codebook [0, {vocab}) "
                            f"(range [{tokens.min()}, {tokens.max()}])")
            continue
        from assets.viar.tokenizer import reconstruct

        tok = _load_tokenizer(entry)
        rows = images[images["dataset"] == dataset].set_index("image_id").loc[part["image_id"]]
        x, _ = data.to_arrays(rows.reset_index())
        recon = reconstruct(tok, torch.from_numpy(x))
        ids = torch.from_numpy(tokens)
        decoded = torch.cat([tok.decode_tokens(ids[i:i + 1024]) for i in range(0, len(ids), 1024)])
        diff = float((decoded - recon).abs().max())
        tf = torch.cat([tok.teacher_forcing_inputs(ids[i:i + 1024]) for i in range(0, len(ids), 1024)])
        tf = tf.reshape(len(tokens), -1).numpy()
        tf_diff = float(np.abs(tf - np.stack(part["teacher_forcing"].to_numpy())).max())
        worst[dataset] = {"decode_vs_reconstruction": diff, "teacher_forcing": tf_diff}
        if diff > 1e-4:
            problems.append(f"{dataset}: decode(tokens) differs from the encode–decode reconstruction by {diff:.2e}")
        if tf_diff > 1e-5:
            problems.append(f"{dataset}: stored teacher-forcing inputs differ from the tokens' by {tf_diff:.2e}")
    return check_result(not problems, "; ".join(problems) or
                        f"token ids in range; decode(tokens) ≈ reconstruction; teacher forcing consistent: {worst}",
                        max_abs_diff=worst)


# ------------------------------------------------------------------------------ AR models
def _train_models(context, runs: list[tuple[str, str, int, int]], token_pyramids: pd.DataFrame,
                  msvq_tokenizer: dict, compute: ComputeResource, artifacts: ArtifactsResource) -> pd.DataFrame:
    """runs: (dataset, kind, depth, seed). One checkpoint per run; one row per run."""
    from assets.viar import model as Mo

    params = compute.params(SLUG)
    a, v = params["ar"], params["viar"]
    device = compute.resolved_device()
    rows, start = [], time.monotonic()
    for index, (dataset, kind, depth, seed) in enumerate(runs, 1):
        tok_cfg = msvq_tokenizer[dataset]["config"]
        cfg = _ar_config(params, tok_cfg, dataset, kind, depth)
        tf, tokens, labels = _pyramid_arrays(token_pyramids, dataset, "train", int(tok_cfg["cvae"]))
        counts = np.bincount(tokens.ravel(), minlength=cfg.vocab) / tokens.size
        unigram = float(-(counts[counts > 0] * np.log(counts[counts > 0])).sum())
        run_seed = compute.seed_for(SLUG, "ar", dataset, cfg.name, seed)
        torch = _torch(compute, params, run_seed)
        model = Mo.NextScaleAR(cfg)
        jfb = (int(v["jfb_n"]), int(v["jfb_m"])) if kind == "viar" else None
        out = Mo.train_ar(model, tf, tokens, labels, int(a["steps"]), int(a["batch"]), float(a["lr"]),
                          float(a["weight_decay"]), int(a["warmup"]), float(a["clip"]), float(a["label_drop"]),
                          run_seed, jfb=jfb, log=context.log.info, device=device)
        model.cpu()
        name = f"{dataset}_{kind}_d{depth}_s{seed}" if kind == "var" else f"{dataset}_viar_p{cfg.pre}_s{seed}"
        path = artifacts.checkpoint_path(SLUG, name)
        final_ce = float(np.mean(out["losses"][-max(1, len(out["losses"]) // 10):]))
        sidecar = save_state_dict(path, model.state_dict(), {
            "config": cfg.to_dict(), "dataset": dataset, "seed": seed, "run_seed": run_seed, "device": device,
            "hparams": {**a, **(v if kind == "viar" else {})}, "final_ce": final_ce,
            **provenance(SLUG, compute.profile)})
        rows.append({"dataset": dataset, "model": cfg.name, "kind": kind, "depth": int(depth) if kind == "var" else 0,
                     "seed": int(seed), "checkpoint": data_ref(path), "md5": sidecar["md5"],
                     "parameters": Mo.count_parameters(model), "steps": int(a["steps"]),
                     "train_seconds": out["seconds"], "steps_per_second": out["steps_per_second"],
                     "final_ce": final_ce, "unigram_entropy": unigram, "loss_curve": out["losses"],
                     "mean_nograd_iters": float(np.mean(out["n_iters"])) if jfb else 0.0,
                     "mean_grad_iters": float(np.mean(out["m_iters"])) if jfb else 0.0,
                     "config_json": json.dumps(cfg.to_dict(), sort_keys=True)})
        elapsed = time.monotonic() - start
        context.log.info(f"[{index}/{len(runs)}] {dataset}/{cfg.name}/seed {seed}: CE {final_ce:.3f} "
                         f"(unigram {unigram:.3f}), {out['steps_per_second']:.2f} steps/s, "
                         f"~{elapsed / index * (len(runs) - index):.0f} s left")
        del torch
    return pd.DataFrame(rows)


@dg.asset(key=key("var_models"), group_name=SLUG, **gpu_asset_kwargs(),
          description="Checkpoints: VAR baselines (explicit AdaLN stacks) at every ladder depth × seed, "
                      "same width, tokenizer, steps, batch and optimiser as VIAR.")
def var_models(context: dg.AssetExecutionContext, token_pyramids: pd.DataFrame, msvq_tokenizer: dict,
               compute: ComputeResource, artifacts: ArtifactsResource) -> pd.DataFrame:
    params = compute.params(SLUG)
    claim_depth = int(params["claim_depth"])
    runs = [(dataset, "var", depth, seed) for dataset in params["datasets"]
            for depth in sorted(set(params["ladder_depths"]) | {claim_depth})
            for seed in (params["seeds"] if depth == claim_depth else params["ladder_seeds"])]
    frame = _train_models(context, runs, token_pyramids, msvq_tokenizer, compute, artifacts)
    context.add_output_metadata({"runs": len(frame), "train_seconds_total": float(frame["train_seconds"].sum())})
    return frame


@dg.asset(key=key("viar_models"), group_name=SLUG, **gpu_asset_kwargs(),
          description="Checkpoints: VIAR (pre-blocks + one implicit block with Proj([z, x]) + post-blocks) "
                      "trained with stochastic Jacobian-free backprop (n ~ U{0..N} detached, m ~ U{1..M} "
                      "with gradient), one per seed.")
def viar_models(context: dg.AssetExecutionContext, token_pyramids: pd.DataFrame, msvq_tokenizer: dict,
                compute: ComputeResource, artifacts: ArtifactsResource) -> pd.DataFrame:
    params = compute.params(SLUG)
    runs = [(dataset, "viar", 0, seed) for dataset in params["datasets"] for seed in params["seeds"]]
    frame = _train_models(context, runs, token_pyramids, msvq_tokenizer, compute, artifacts)
    context.add_output_metadata({"runs": len(frame), "train_seconds_total": float(frame["train_seconds"].sum())})
    return frame


def _models_trained(frame: pd.DataFrame, compute: ComputeResource) -> dg.AssetCheckResult:
    ratio = float(compute.params(SLUG)["checks"]["max_ce_over_unigram"])
    problems = []
    for row in frame.itertuples():
        if not np.isfinite(row.final_ce) or row.final_ce > ratio * row.unigram_entropy:
            problems.append(f"{row.dataset}/{row.model}/seed {row.seed}: train CE {row.final_ce:.3f} not below "
                            f"{ratio:g} × unigram entropy {row.unigram_entropy:.3f}")
        model = _load_ar(row.checkpoint)
        if not all(bool(np.isfinite(p.detach().numpy()).all()) for p in model.parameters()):
            problems.append(f"{row.dataset}/{row.model}/seed {row.seed}: non-finite weights")
    return check_result(not problems and len(frame) > 0, "; ".join(problems) or
                        f"{len(frame)} checkpoints reload with finite weights; train CE below "
                        f"{ratio:g} × the unigram entropy", runs=len(frame))


def _viar_not_diverging(frame: pd.DataFrame, token_pyramids: pd.DataFrame, msvq_tokenizer: dict,
                        compute: ComputeResource) -> dg.AssetCheckResult:
    import torch

    problems, seen = [], {}
    for row in frame.itertuples():
        model = _load_ar(row.checkpoint)
        tf, _, labels = _pyramid_arrays(token_pyramids, row.dataset, "val",
                                        int(msvq_tokenizer[row.dataset]["config"]["cvae"]))
        trace = model.fixed_point_trace(torch.from_numpy(tf[:200]), torch.from_numpy(labels[:200]), 9)
        r1, r8 = float(trace["relative_residual"][1].mean()), float(trace["relative_residual"][8].mean())
        seen[f"{row.dataset}/seed {row.seed}"] = [round(r1, 5), round(r8, 6)]
        if not (np.isfinite(r8) and r8 < r1):
            problems.append(f"{row.dataset}/{row.model}/seed {row.seed}: fixed-point residual diverges "
                            f"(t=8: {r8:.4g} ≥ t=1: {r1:.4g})")
    return check_result(not problems, "; ".join(problems) or
                        f"relative residual at t=8 < t=1 on validation pyramids: {seen}", residuals=seen)


# ------------------------------------------------------------------------------ calibrated schedule
@dg.asset(key=key("iteration_schedule"), group_name=SLUG, **gpu_asset_kwargs(),
          description="Calibrated threshold: per VIAR run, the fewest per-scale implicit iterations whose "
                      "held-out (val) per-scale token NLL is within the tolerance of the converged schedule; "
                      "val FCD of calibrated vs converged reported alongside.")
def iteration_schedule(context: dg.AssetExecutionContext, viar_models: pd.DataFrame, token_pyramids: pd.DataFrame,
                       msvq_tokenizer: dict, eval_classifier: dict, reference_stats: dict,
                       compute: ComputeResource) -> pd.DataFrame:
    from assets.viar import metrics
    from assets.viar import model as Mo

    params = compute.params(SLUG)
    cal, s = params["calibration"], params["sampling"]
    device = compute.resolved_device()
    torch = _torch(compute, params, 0)
    rows = []
    for row in viar_models.itertuples():
        model = _load_ar(row.checkpoint).to(device)
        tok = _load_tokenizer(msvq_tokenizer[row.dataset]).to(device)
        cvae = int(msvq_tokenizer[row.dataset]["config"]["cvae"])
        _, tokens, labels = _pyramid_arrays(token_pyramids, row.dataset, "val", cvae)
        pick = metrics.stratified_subset(labels, int(cal["per_class"]), compute.seed_for(SLUG, "cal", row.dataset))
        start = time.monotonic()
        result = Mo.calibrate_schedule(model, tok, torch.from_numpy(tokens[pick]).to(device),
                                       torch.from_numpy(labels[pick]).to(device), list(cal["candidates"]),
                                       int(cal["converged"]), float(cal["tolerance"]))
        K = len(model.cfg.scales)
        converged = [int(cal["converged"])] * K
        clf = _load_classifier(eval_classifier[row.dataset])
        val_ref = _load_reference(reference_stats[row.dataset], "val")
        gen_labels = _gen_labels(row.dataset, int(cal["per_class"]))
        val_fcd = {}
        for name, sched in (("calibrated", result["schedule"]), ("converged", converged)):
            gen = torch.Generator(device=device).manual_seed(compute.seed_for(SLUG, "cal-sample", row.seed))
            out = Mo.generate(model, tok, torch.from_numpy(gen_labels).to(device), sched, float(s["cfg"]),
                              float(s["top_p"]), int(s["top_k"]), gen)
            feats = metrics.extract(clf, out["images"].cpu().numpy())
            val_fcd[name] = metrics.fcd(feats["penultimate"], val_ref["penultimate"])
        rows.append({"dataset": row.dataset, "model": row.model, "seed": int(row.seed),
                     "schedule": [int(c) for c in result["schedule"]],
                     "schedule_name": "cal:" + ",".join(str(c) for c in result["schedule"]),
                     "converged_iterations": int(cal["converged"]), "tolerance": float(cal["tolerance"]),
                     "nll_converged": result["nll_converged"].tolist(),
                     "nll_calibrated": result["nll_calibrated"].tolist(),
                     "nll_total_ratio": float(result["nll_calibrated"].mean() / result["nll_converged"].mean()),
                     "val_fcd_calibrated": val_fcd["calibrated"], "val_fcd_converged": val_fcd["converged"],
                     "flops_calibrated": Mo.sampling_flops(model.cfg, result["schedule"]),
                     "flops_converged": Mo.sampling_flops(model.cfg, converged),
                     "probes": json.dumps(result["probes"])})
        context.log.info(f"{row.dataset}/seed {row.seed}: calibrated schedule {result['schedule']} "
                         f"(val FCD {val_fcd['calibrated']:.2f} vs converged {val_fcd['converged']:.2f}, "
                         f"{time.monotonic() - start:.1f} s)")
    return pd.DataFrame(rows)


def _schedule_valid(frame: pd.DataFrame, msvq_tokenizer: dict) -> dg.AssetCheckResult:
    problems = []
    for row in frame.itertuples():
        K = len(msvq_tokenizer[row.dataset]["config"]["scales"])
        sched = list(row.schedule)
        if len(sched) != K:
            problems.append(f"{row.dataset}/seed {row.seed}: iteration schedule {sched} has length {len(sched)}, "
                            f"the model has {K} scales")
            continue
        if any(int(c) != c or c < 1 or c > row.converged_iterations for c in sched):
            problems.append(f"{row.dataset}/seed {row.seed}: schedule {sched} outside 1..{row.converged_iterations}")
        if not row.nll_total_ratio <= 1 + row.tolerance + 1e-9:
            problems.append(f"{row.dataset}/seed {row.seed}: calibrated NLL / converged = {row.nll_total_ratio:.4f} "
                            f"> 1 + {row.tolerance}")
    return check_result(not problems and len(frame) > 0, "; ".join(problems) or
                        "every schedule has one count per scale in 1..converged and meets the NLL target "
                        "on the calibration (val) split")


# ------------------------------------------------------------------------------ samples
def _sampling_runs(params: dict, var_models: pd.DataFrame, viar_models: pd.DataFrame,
                   iteration_schedule: pd.DataFrame) -> list[dict]:
    from assets.viar import model as Mo

    runs = [{"dataset": r.dataset, "model": r.model, "kind": "var", "depth": int(r.depth), "seed": int(r.seed),
             "checkpoint": r.checkpoint, "schedule": "explicit", "iterations": None}
            for r in var_models.itertuples()]
    for r in viar_models.itertuples():
        K = len(json.loads(r.config_json)["scales"])
        named = [(name, Mo.parse_schedule(name, K)) for name in params["schedules"]]
        cal = iteration_schedule[(iteration_schedule["dataset"] == r.dataset) & (iteration_schedule["seed"] == r.seed)]
        named += [("calibrated", [int(c) for c in row.schedule]) for row in cal.itertuples()]
        runs += [{"dataset": r.dataset, "model": r.model, "kind": "viar", "depth": 0, "seed": int(r.seed),
                  "checkpoint": r.checkpoint, "schedule": name, "iterations": sched} for name, sched in named]
    return runs


@dg.asset(key=key("samples"), group_name=SLUG, **gpu_asset_kwargs(),
          description="Dataset: generated images for every model × schedule × seed (per_class per class, "
                      "same CFG ramp, top-p and sampling seed for every model), stored as tensor files; one "
                      "row per run with FLOPs/image and wall time.")
def samples(context: dg.AssetExecutionContext, var_models: pd.DataFrame, viar_models: pd.DataFrame,
            iteration_schedule: pd.DataFrame, msvq_tokenizer: dict, compute: ComputeResource,
            artifacts: ArtifactsResource) -> pd.DataFrame:
    from assets.viar import model as Mo

    params = compute.params(SLUG)
    s = params["sampling"]
    device = compute.resolved_device()
    torch = _torch(compute, params, 0)
    runs = _sampling_runs(params, var_models, viar_models, iteration_schedule)
    rows, start = [], time.monotonic()
    for index, run in enumerate(runs, 1):
        model = _load_ar(run["checkpoint"]).to(device)
        tok = _load_tokenizer(msvq_tokenizer[run["dataset"]]).to(device)
        labels = _gen_labels(run["dataset"], int(s["per_class"]))
        # common random numbers: every model and schedule of one seed draws from the same stream
        gen = torch.Generator(device=device).manual_seed(compute.seed_for(SLUG, "sample", run["dataset"], run["seed"]))
        t0 = time.perf_counter()
        out = Mo.generate(model, tok, torch.from_numpy(labels).to(device), run["iterations"], float(s["cfg"]),
                          float(s["top_p"]), int(s["top_k"]), gen)
        seconds = time.perf_counter() - t0
        name = f"{run['dataset']}_samples_{run['model']}_{run['schedule']}_s{run['seed']}"
        path = artifacts.checkpoint_path(SLUG, name)
        save_state_dict(path, {"images": out["images"].cpu().float(), "labels": torch.from_numpy(labels),
                               "tokens": out["tokens"].cpu()},
                        {**{k: v for k, v in run.items() if k != "checkpoint"}, "cfg": float(s["cfg"]),
                         "top_p": float(s["top_p"])})
        rows.append({**{k: v for k, v in run.items() if k not in ("checkpoint", "iterations")},
                     "iterations": list(run["iterations"] or []), "samples_ref": data_ref(path),
                     "n_samples": int(len(labels)), "seconds": seconds,
                     "flops_per_image": Mo.sampling_flops(model.cfg, run["iterations"])})
        if index % 5 == 0 or index == len(runs):
            context.log.info(f"[{index}/{len(runs)}] sampled {run['model']} {run['schedule']} seed {run['seed']} "
                             f"({seconds:.2f} s; {time.monotonic() - start:.0f} s total)")
    return pd.DataFrame(rows)


def _load_samples(ref: str) -> tuple[np.ndarray, np.ndarray]:
    state, _ = load_state_dict(resolve_data_ref(ref))
    return state["images"].numpy(), state["labels"].numpy()


def _samples_valid(frame: pd.DataFrame, compute: ComputeResource) -> dg.AssetCheckResult:
    per_class = int(compute.params(SLUG)["sampling"]["per_class"])
    problems = []
    for row in frame.itertuples():
        imgs, labels = _load_samples(row.samples_ref)
        tag = f"{row.dataset}/{row.model}/{row.schedule}/seed {row.seed}"
        if not np.isfinite(imgs).all():
            problems.append(f"{tag}: {int((~np.isfinite(imgs)).sum())} non-finite pixels")
        elif imgs.min() < -1 - 1e-5 or imgs.max() > 1 + 1e-5:
            problems.append(f"{tag}: pixel range [{imgs.min():.3f}, {imgs.max():.3f}] outside [-1, 1]")
        hist = np.bincount(labels, minlength=data.N_CLASSES[row.dataset])
        if not (hist == per_class).all():
            problems.append(f"{tag}: class histogram {hist.tolist()} is not {per_class} per class")
    return check_result(not problems and len(frame) > 0, "; ".join(problems[:10]) or
                        f"{len(frame)} sample sets finite, in [-1, 1], {per_class} per class", problems=len(problems))


@dg.asset(key=key("sample_quality"), group_name=SLUG, kinds={"pandas"},
          description="Benchmark rows: FCD, sFCD, KID, class consistency, precision/recall of every sample "
                      "set against the held-out test split (fixed N and classifier), plus the real-train and "
                      "tokenizer-reconstruction reference rows.")
def sample_quality(context: dg.AssetExecutionContext, samples: pd.DataFrame, eval_classifier: dict,
                   reference_stats: dict, images: pd.DataFrame, msvq_tokenizer: dict,
                   compute: ComputeResource) -> pd.DataFrame:
    from assets.viar import metrics
    from assets.viar import tokenizer as T

    params = compute.params(SLUG)
    torch = _torch(compute, params, 0)
    rows = []
    for dataset, group in samples.groupby("dataset"):
        clf = _load_classifier(eval_classifier[dataset])
        ref = _load_reference(reference_stats[dataset])
        for row in group.itertuples():
            imgs, labels = _load_samples(row.samples_ref)
            q = metrics.quality_metrics(metrics.extract(clf, imgs), labels, ref)
            rows.append({"dataset": dataset, "model": row.model, "kind": row.kind, "depth": int(row.depth),
                         "schedule": row.schedule, "seed": int(row.seed), "flops_per_image": float(row.flops_per_image),
                         "n_samples": int(row.n_samples), **q})
        # references at the same N: real train images (the floor) and their tokenizer reconstructions
        train = images[(images["dataset"] == dataset)].set_index("image_id").loc[
            reference_stats[dataset]["train_subset_ids"]].reset_index()
        x, y = data.to_arrays(train)
        tok = _load_tokenizer(msvq_tokenizer[dataset])
        recon = tok.decode_tokens(T.token_pyramid(tok, torch.from_numpy(x))[0]).numpy()
        for name, imgs in (("real-train", x), ("vq-recon", recon)):
            q = metrics.quality_metrics(metrics.extract(clf, imgs), y, ref)
            rows.append({"dataset": dataset, "model": name, "kind": "reference", "depth": 0, "schedule": "-",
                         "seed": 0, "flops_per_image": 0.0, "n_samples": int(len(y)), **q})
    frame = pd.DataFrame(rows)
    context.log.info("mean FCD per model/schedule: " + ", ".join(
        f"{m}/{s} {v:.2f}" for (m, s), v in frame.groupby(["model", "schedule"])["fcd"].mean().items()))
    return frame


# ------------------------------------------------------------------------------ efficiency
@dg.asset(key=key("throughput"), group_name=SLUG, **gpu_asset_kwargs(),
          description="Benchmark rows: sampling images/s of every VAR depth and every VIAR schedule (first "
                      "seed), interleaved round-robin with warm-up, median of repetitions, one run; peak GPU "
                      "memory when on CUDA.")
def throughput(context: dg.AssetExecutionContext, var_models: pd.DataFrame, viar_models: pd.DataFrame,
               iteration_schedule: pd.DataFrame, msvq_tokenizer: dict, compute: ComputeResource) -> pd.DataFrame:
    from assets.viar import model as Mo

    params = compute.params(SLUG)
    s, tp = params["sampling"], params["throughput"]
    device = compute.resolved_device()
    torch = _torch(compute, params, 0)
    first = int(params["seeds"][0])
    runs = [r for r in _sampling_runs(params, var_models, viar_models, iteration_schedule) if r["seed"] == first]
    cache = {}
    for run in runs:
        if run["checkpoint"] not in cache:
            cache[run["checkpoint"]] = _load_ar(run["checkpoint"]).to(device)
    toks = {d: _load_tokenizer(e).to(device) for d, e in msvq_tokenizer.items()}
    batch = int(tp["batch"])
    timings = {i: [] for i in range(len(runs))}
    peaks = {}

    def once(i, run):
        labels = torch.arange(batch, device=device) % data.N_CLASSES[run["dataset"]]
        gen = torch.Generator(device=device).manual_seed(i)
        with Mo.DevicePeak(device) as peak:     # CUDA: max_memory_allocated; CPU: NaN (no allocator peak)
            t0 = time.perf_counter()
            Mo.generate(cache[run["checkpoint"]], toks[run["dataset"]], labels, run["iterations"], float(s["cfg"]),
                        float(s["top_p"]), int(s["top_k"]), gen)
        peaks[i] = max(peaks.get(i, float("-inf")), peak.bytes) if peak.on_cuda else float("nan")
        return time.perf_counter() - t0

    for i, run in enumerate(runs):            # warm-up
        once(i, run)
    for rep in range(int(tp["reps"])):         # interleaved: contention hits every setting alike
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
    frame = pd.DataFrame(rows)
    context.log.info("images/s: " + ", ".join(f"{r.model}/{r.schedule} {r.images_per_second:.1f}"
                                               for r in frame.itertuples()))
    return frame


@dg.asset(key=key("convergence_profile"), group_name=SLUG, kinds={"pandas", "torch"},
          description="Benchmark rows: per VIAR seed, scale and iteration t, the relative residual "
                      "‖z^{t+1} − z^t‖/‖z^t‖ and cosine of successive iterates, at sampling time (KV cache) "
                      "and teacher-forced on validation pyramids (training semantics).")
def convergence_profile(context: dg.AssetExecutionContext, viar_models: pd.DataFrame, token_pyramids: pd.DataFrame,
                        msvq_tokenizer: dict, compute: ComputeResource) -> pd.DataFrame:
    from assets.viar import model as Mo

    params = compute.params(SLUG)
    c, s = params["convergence"], params["sampling"]
    torch = _torch(compute, params, 0)
    iters = int(c["iterations"])
    rows = []
    for row in viar_models.itertuples():
        model = _load_ar(row.checkpoint)
        tok = _load_tokenizer(msvq_tokenizer[row.dataset])
        K = len(model.cfg.scales)
        labels = torch.from_numpy(_gen_labels(row.dataset, int(c["per_class"])))
        gen = torch.Generator().manual_seed(compute.seed_for(SLUG, "convergence", row.seed))
        out = Mo.generate(model, tok, labels, [iters] * K, float(s["cfg"]), float(s["top_p"]), int(s["top_k"]),
                          gen, record=True)
        rows += [{"dataset": row.dataset, "seed": int(row.seed), "source": "sampling", "scale": int(k),
                  "t": int(t), "rel_residual": r, "cosine": cs} for k, t, r, cs in out["trace"]]
        tf, _, vlabels = _pyramid_arrays(token_pyramids, row.dataset, "val", int(msvq_tokenizer[row.dataset]["config"]["cvae"]))
        n = min(len(vlabels), int(c["per_class"]) * data.N_CLASSES[row.dataset])
        trace = model.fixed_point_trace(torch.from_numpy(tf[:n]), torch.from_numpy(vlabels[:n]), iters)
        for t in range(iters):
            for k in range(K):
                rows.append({"dataset": row.dataset, "seed": int(row.seed), "source": "teacher_forced", "scale": k,
                             "t": t, "rel_residual": float(trace["relative_residual"][t, k]),
                             "cosine": float(trace["cosine"][t, k])})
    frame = pd.DataFrame(rows)
    fin = frame[(frame["source"] == "sampling") & (frame["scale"] == frame["scale"].max())]
    context.log.info("finest-scale residual by t: " + ", ".join(
        f"{t}: {v:.4f}" for t, v in fin.groupby("t")["rel_residual"].mean().items()))
    return frame


@dg.asset(key=key("memory_profile"), group_name=SLUG, kinds={"pandas", "torch"},
          description="Benchmark rows: bytes of activations saved for backward in one training step "
                      "(saved-tensor hooks; deterministic, not RSS) for VAR vs depth and VIAR vs no-grad "
                      "iterations n and grad iterations m; parameter, gradient and AdamW-state bytes.")
def memory_profile(context: dg.AssetExecutionContext, token_pyramids: pd.DataFrame, msvq_tokenizer: dict,
                   compute: ComputeResource) -> pd.DataFrame:
    from assets.viar import model as Mo

    params = compute.params(SLUG)
    mem = params["memory"]
    device = compute.resolved_device()
    torch = _torch(compute, params, 0)
    rows = []
    for dataset in params["datasets"]:
        tok_cfg = msvq_tokenizer[dataset]["config"]
        tf, tokens, labels = _pyramid_arrays(token_pyramids, dataset, "train", int(tok_cfg["cvae"]))
        b = int(mem["batch"])
        batch = [torch.from_numpy(a[:b]).to(device) for a in (tf, tokens, labels)]
        settings = [("var_depth", "var", d, 0, 1) for d in mem["depths"]]
        settings += [("viar_nograd_iters", "viar", 0, n, 1) for n in mem["n_values"]]
        settings += [("viar_grad_iters", "viar", 0, 0, m) for m in mem["m_values"]]
        for sweep, kind, depth, n, m in settings:
            torch.manual_seed(compute.seed_for(SLUG, "memory", kind, depth))
            model = Mo.NextScaleAR(_ar_config(params, tok_cfg, dataset, kind, depth)).to(device)
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
    frame = pd.DataFrame(rows)
    context.log.info("saved activation MB: " + ", ".join(f"{r.sweep}={r.value}: {r.saved_bytes / 1e6:.2f}"
                                                          for r in frame.itertuples()))
    return frame


# ------------------------------------------------------------------------------ report
@dg.asset(key=key("benchmark_report"), group_name=SLUG, kinds={"duckdb", "markdown"},
          description="VIAR vs the VAR ladder over seeds: FCD/sFCD/KID/consistency/P/R, FLOPs, throughput, "
                      "memory, convergence, calibrated schedules → warehouse rows, REPORT.md with plots, "
                      "metrics.json, claims V1–V6.")
def benchmark_report(context: dg.AssetExecutionContext, sample_quality: pd.DataFrame, throughput: pd.DataFrame,
                     memory_profile: pd.DataFrame, convergence_profile: pd.DataFrame, var_models: pd.DataFrame,
                     viar_models: pd.DataFrame, iteration_schedule: pd.DataFrame, reference_stats: dict,
                     samples: pd.DataFrame, msvq_tokenizer: dict, eval_classifier: dict,
                     compute: ComputeResource, artifacts: ArtifactsResource) -> dict:
    from assets.viar import benchmark, plots

    params = compute.params(SLUG)
    claim_depth = int(params["claim_depth"])
    ladder = sorted(set(params["ladder_depths"]) | {claim_depth})
    models = pd.concat([var_models, viar_models], ignore_index=True)
    generated = sample_quality[sample_quality["kind"] != "reference"]
    summary = benchmark.summarize(generated)
    claims_by_dataset, figures, body = {}, {}, []
    for dataset in params["datasets"]:
        viar_name = viar_models[viar_models["dataset"] == dataset]["model"].iat[0]
        param_counts = {"viar": int(viar_models[viar_models["dataset"] == dataset]["parameters"].iat[0]),
                        "var": {int(r.depth): int(r.parameters) for r in var_models[var_models["dataset"] == dataset].itertuples()}}
        floor = float(reference_stats[dataset]["fcd_floor_train_vs_test"])
        claims_by_dataset[dataset] = benchmark.evaluate_claims(
            dataset, generated, throughput, memory_profile, convergence_profile, param_counts, floor,
            claim_depth, viar_name, ladder, dict(params["claim_schedules"]))
        body += _dataset_section(dataset, summary, sample_quality, throughput, memory_profile, convergence_profile,
                                 models, iteration_schedule, reference_stats[dataset], msvq_tokenizer[dataset],
                                 eval_classifier[dataset], claims_by_dataset[dataset], viar_name, ladder, params)
        figures[f"{dataset}_pareto"] = plots.pareto(summary, dataset, viar_name)
        figures[f"{dataset}_samples"] = _sample_grid(samples, dataset, viar_name, claim_depth, params)
        figures[f"{dataset}_convergence"] = plots.convergence(convergence_profile, dataset)
        figures[f"{dataset}_memory"] = plots.memory(memory_profile, dataset)
        figures[f"{dataset}_throughput"] = plots.throughput(throughput, dataset)
        figures[f"{dataset}_training"] = plots.training_curves(models, dataset)
    body = NOTES + body
    primary = params["datasets"][0]
    claims = claims_by_dataset[primary]
    for c in claims:
        context.log.info(f"claim {c.claim_id} ({primary}): {'holds' if c.holds else 'DOES NOT HOLD'} — {c.measured_value}")
    for dataset, extra in claims_by_dataset.items():
        if dataset != primary:
            body += [f"## Claims on {dataset} (reported; the claim checks read {primary})", "",
                     markdown_table(pd.DataFrame([{"claim": c.claim_id, "ours": c.measured_value, "holds": bool(c.holds)}
                                                  for c in extra])), ""]

    metric_cols = list(benchmark.METRICS)
    metric_rows = pd.concat([
        sample_quality.melt(id_vars=["dataset", "model", "schedule", "seed"], value_vars=metric_cols + ["flops_per_image"],
                            var_name="metric").assign(asset="viar/sample_quality",
                                                      partition=lambda d: "schedule=" + d["schedule"]),
        throughput.melt(id_vars=["dataset", "model", "schedule", "seed"], value_vars=["images_per_second"],
                        var_name="metric").assign(asset="viar/throughput", partition=lambda d: "schedule=" + d["schedule"]),
        memory_profile.rename(columns={"value": "setting"}).assign(
            seed=0, metric="saved_bytes", value=lambda d: d["saved_bytes"].astype(float),
            asset="viar/memory_profile", partition=lambda d: d["sweep"] + "=" + d["setting"].astype(str)),
        models.melt(id_vars=["dataset", "model", "seed"], value_vars=["steps_per_second", "final_ce", "parameters"],
                    var_name="metric").assign(asset=lambda d: "viar/" + np.where(d["model"].str.startswith("VAR"),
                                                                                  "var_models", "viar_models"),
                                              partition="train"),
    ], ignore_index=True).rename(columns={"model": "method"})
    metric_rows["value"] = metric_rows["value"].astype(float)
    metric_rows["seed"] = metric_rows["seed"].astype(int)
    metric_rows = metric_rows[["asset", "partition", "seed", "dataset", "method", "metric", "value"]]
    thresholds = pd.DataFrame(
        [{"name": "calibrated_total_iterations", "seed": int(r.seed), "dataset": r.dataset, "method": r.model,
          "value": float(sum(r.schedule))} for r in iteration_schedule.itertuples()]
        + [{"name": k, "seed": 0, "dataset": d, "method": "real", "value": float(v[k])}
           for d, v in reference_stats.items() for k in ("fcd_floor_train_vs_test", "fcd_floor_test_halves",
                                                         "sfcd_floor_train_vs_test", "kid_floor_train_vs_test")])
    prim = summary[summary["dataset"] == primary]
    dvc_metrics = {
        "claims_holding": int(sum(c.holds for c in claims)), "claims_total": len(claims),
        "fcd_mean": {f"{r.model}/{r.schedule}": float(r.fcd_mean) for r in prim.itertuples()},
        "class_consistency_mean": {f"{r.model}/{r.schedule}": float(r.class_consistency_mean) for r in prim.itertuples()},
        "fcd_floor": float(reference_stats[primary]["fcd_floor_train_vs_test"]),
    }
    metadata = publish_report(slug=SLUG, profile=compute.profile, run_id=context.run_id,
                              report_dir=artifacts.report_dir(SLUG), metrics_rows=metric_rows, claims=claims,
                              body_markdown="\n".join(body), figures=figures, dvc_metrics=dvc_metrics,
                              thresholds_rows=thresholds)
    context.add_output_metadata(metadata)
    return claims_payload(claims, compute.profile, dataset=primary)


NOTES = [
    "## How this reproduction differs from the paper (read before the numbers)", "",
    "- Scale: ImageNet 256² with a 2B-parameter VAR-d30 becomes 8×8 digits (cpu profile) tokenised, as the spec "
    "says, on an 8×8 latent with scales (1, 2, 3, 4, 6, 8) (L = 130 tokens), and AR models of 0.3–0.6M "
    "parameters. The spec's width 128 and 3k steps at batch 128 do not fit the issue's 30-minute budget for the "
    "whole group on 2 shared cores: one batch-32 training step at L = 130 costs VAR-d8 0.26 s and VIAR 0.20 s "
    "at width 64 vs 0.65 s and 0.57 s at width 128 (one thread, load ≈ 1; about twice as long at load 5–7), "
    "and 9 runs (VAR-d8 and VIAR × 3 seeds, VAR-d2/4/6) share the budget with ~7–9 min of sampling and "
    "evaluation run alone. So the cpu profile uses width 64 and batch 32 with the step count the budget "
    "allows, the same for every model (see the scale section below). Where models are far from convergence "
    "(FCD far above the real-vs-real floor), the quality claims are judged early in training. The procedural shapes set runs at the smoke and gpu profiles only: its 32×32 "
    "tokenizer costs ≈ 0.6 s/step (load ≈ 7) and its AR runs would double the training time. Claims are "
    "judged at this scale and may honestly fail.",
    "- Quality: Inception weights are unavailable offline, so FID/sFID/IS become FCD/sFCD/class consistency "
    "on a small CNN trained on the train split; the reference set is the held-out test split. FD is biased "
    "at small N: compare against the `real-train` row and the noise floors, not against zero.",
    "- VIAR follows the spec: pre-block(s), one AdaLN implicit block fed Proj([z, x]) with z⁰ = x, post-block(s); "
    "S-JFB training (n ~ U{0..N} detached iterations, m ~ U{1..M} with gradient, the injection not detached, "
    "one count for all scales); inference with per-scale schedules (np.linspace(a, b, K, dtype=int)) and a KV "
    "cache of the implicit block grouped by iteration (unit-tested to reproduce the teacher-forced forward). "
    "No damping was needed (damping = 1.0): the residual contracts by itself.",
    "- Calibrated schedule: the spec's criterion is val FCD within 2% of the converged value; at N of a few "
    "hundred the FCD's seed-to-seed noise is far above 2%, so the per-scale search uses the deterministic "
    "teacher-forced val token NLL of each scale (same 2% tolerance, greedy from the coarsest scale) and reports "
    "val FCD of the calibrated and converged schedules alongside.",
    "- Memory is measured by summing the storages autograd saves for backward (saved-tensor hooks, parameters "
    "excluded), not RSS; throughput is images/s of CFG sampling with a KV cache on the profile's threads, "
    "interleaved round-robin across settings with a warm-up and the median of repetitions.",
    "- Threads: torch runs single-threaded on the cpu profile (params `torch_threads: 1`): on the shared 2-core "
    "machine two OpenMP threads per process ran these small kernels 5–10× slower (measured).", "",
]


def _sample_grid(samples: pd.DataFrame, dataset: str, viar_name: str, claim_depth: int, params: dict):
    from assets.viar import plots

    cs = params["claim_schedules"]
    wanted = [(f"VAR-d{claim_depth}", "explicit"), (viar_name, cs["one"]), (viar_name, cs["mid"]),
              (viar_name, cs["full"]), (viar_name, cs["dec"]), (viar_name, "calibrated")]
    first = int(params["seeds"][0])
    images, labels = {}, None
    for model, schedule in wanted:
        row = samples[(samples["dataset"] == dataset) & (samples["model"] == model) & (samples["schedule"] == schedule)
                      & (samples["seed"] == first)]
        if len(row):
            imgs, labels = _load_samples(row["samples_ref"].iat[0])
            images[f"{model} {schedule}" if schedule != "explicit" else model] = imgs
    return plots.sample_grid(images, labels, per_class=min(2, int(params["sampling"]["per_class"])))


def _dataset_section(dataset, summary, quality, throughput, memory, convergence, models, schedules, floors, tok,
                     clf, claims, viar_name, ladder, params) -> list[str]:
    from assets.viar import benchmark

    s = summary[summary["dataset"] == dataset].copy()
    table = s[["model", "schedule", "seeds", "flops_per_image", "fcd_mean", "fcd_std", "sfcd_mean", "kid_mean",
               "class_consistency_mean", "class_consistency_std", "precision_mean", "recall_mean"]].copy()
    table["flops_per_image"] = (table["flops_per_image"] / 1e6).round(2)
    table = table.rename(columns={"flops_per_image": "MFLOPs/img"}).sort_values(["model", "MFLOPs/img"])
    refs = quality[(quality["dataset"] == dataset) & (quality["kind"] == "reference")][
        ["model", "fcd", "sfcd", "kid", "class_consistency", "precision", "recall"]]
    tp = throughput[throughput["dataset"] == dataset][["model", "schedule", "images_per_second", "median_seconds",
                                                       "flops_per_image"]].copy()
    tp["flops_per_image"] = (tp["flops_per_image"] / 1e6).round(2)
    if "peak_memory_bytes" in throughput and throughput["peak_memory_bytes"].notna().any():   # measured on CUDA
        tp["peak_memory_MB"] = (throughput.loc[tp.index, "peak_memory_bytes"] / 1e6).round(1)
    train = (models[models["dataset"] == dataset].groupby("model")
             .agg(seeds=("seed", "nunique"), parameters=("parameters", "first"), steps=("steps", "first"),
                  steps_per_second=("steps_per_second", "mean"), final_ce=("final_ce", "mean"),
                  unigram_entropy=("unigram_entropy", "first")).reset_index())
    mem = memory[memory["dataset"] == dataset][["model", "sweep", "value", "batch", "saved_bytes", "parameters",
                                                "adamw_state_bytes"]].copy()
    mem["saved_MB"] = (mem.pop("saved_bytes") / 1e6).round(3)
    if "peak_cuda_bytes" in memory and memory["peak_cuda_bytes"].notna().any():              # measured on CUDA
        mem["peak_cuda_MB"] = (memory.loc[mem.index, "peak_cuda_bytes"] / 1e6).round(1)
    conv = convergence[(convergence["dataset"] == dataset)]
    conv_table = (conv[conv["t"].isin([0, 1, 2, 4, 5, 8, 10, 15])].groupby(["source", "scale", "t"])
                  [["rel_residual", "cosine"]].mean().reset_index())
    conv_table = conv_table.pivot_table(index=["source", "scale"], columns="t", values="rel_residual").reset_index()
    conv_table.columns = [f"t={c}" if isinstance(c, (int, np.integer)) else c for c in conv_table.columns]
    cal = schedules[schedules["dataset"] == dataset][["seed", "schedule_name", "nll_total_ratio", "val_fcd_calibrated",
                                                      "val_fcd_converged", "flops_calibrated", "flops_converged"]]
    pareto = benchmark.pareto_domination(quality[quality["dataset"] == dataset], viar_name,
                                         [f"VAR-d{d}" for d in ladder])
    a, v, t = params["ar"], params["viar"], params["tokenizer"]
    d = params[dataset]
    return [
        f"## {dataset}", "",
        "### Scale of this run (honest scale-down of the paper)", "",
        f"- images: {d.get('image_size')}×{d.get('image_size')}×{d.get('channels')}, splits {d.get('split_sizes')}; "
        f"latent {tok['config']['image_size'] // 2 ** tok['config']['downsample']}² "
        f"(downsample ×{2 ** tok['config']['downsample']}), scales {tok['config']['scales']} → "
        f"L = {tok['tokens_per_image']} tokens; codebook V = {tok['config']['vocab']}, Cvae = {tok['config']['cvae']}.",
        f"- tokenizer: {tok['parameters']:,} params, {t['steps']} steps; val recon MSE {tok['recon_mse']:.4f}, "
        f"codebook usage {tok['codebook_usage']:.0%} (per scale {tok['codes_used_per_scale']}).",
        f"- AR models: width {a['width']}, {a['heads']} heads, {a['steps']} steps × batch {a['batch']}, "
        f"AdamW lr {a['lr']} (warm-up {a['warmup']}, cosine), wd {a['weight_decay']}, clip {a['clip']}, "
        f"label drop {a['label_drop']}; VIAR-p{v['pre']} with S-JFB N = {v['jfb_n']}, M = {v['jfb_m']}, "
        f"damping {v.get('damping', 1.0)} (1.0 = none). Seeds {params['seeds']} for VAR-d{params['claim_depth']} and "
        f"VIAR; ladder depths {params['ladder_depths']} at seeds {params['ladder_seeds']}.",
        f"- sampling: {params['sampling']['per_class']} per class, CFG {params['sampling']['cfg']} with the linear "
        f"ramp, top-p {params['sampling']['top_p']}; same sampling seed for every model/schedule of a seed.",
        f"- evaluation classifier test accuracy {clf['test_accuracy']:.4f}; reference = the test split "
        f"({floors['n_test']} images).", "",
        "### Quality vs compute (mean over seeds)", "",
        "FCD/sFCD/KID against the held-out test split with the evaluation classifier's features; "
        "class_consistency = classifier(sample) == conditioning label.", "",
        markdown_table(table), "",
        "Reference rows at the same N (a perfect generator would score about like `real-train`; "
        "`vq-recon` is the tokenizer's ceiling):", "", markdown_table(refs), "",
        f"Noise floors: FCD train-vs-test {floors['fcd_floor_train_vs_test']:.3f}, FCD test-half-vs-half "
        f"{floors['fcd_floor_test_halves']:.3f}, sFCD {floors['sfcd_floor_train_vs_test']:.3f}, "
        f"KID {floors['kid_floor_train_vs_test']:.4f}.", "",
        "### Pareto: best VIAR operating point within each VAR budget", "", markdown_table(pareto), "",
        "### Sampling throughput (first seed, interleaved, median)", "", markdown_table(tp), "",
        "### Training", "", markdown_table(train), "",
        "### Calibrated per-scale schedules (val token NLL within tolerance of converged)", "", markdown_table(cal), "",
        "### Training activation memory (saved-tensor bytes, one step)", "", markdown_table(mem), "",
        "### Fixed-point convergence (relative residual ‖z^{t+1} − z^t‖/‖z^t‖, mean over seeds)", "",
        markdown_table(conv_table, digits=5), "",
    ]


# ------------------------------------------------------------------------------ checks
assets = [images, eval_classifier, reference_stats, msvq_tokenizer, token_pyramids, var_models, viar_models,
          iteration_schedule, samples, sample_quality, throughput, convergence_profile, memory_profile,
          benchmark_report]
REPORT_KEY = benchmark_report.key
CLAIM_IDS = ["V1_params", "V2_quality_parity", "V3_knob_works", "V4_constant_memory", "V5_compute_control",
             "V6_pareto"]

asset_checks = [
    gate(SLUG, images, "schema", "GX: labels/splits non-null, known split and dataset names, labels in range.",
         _images_schema),
    gate(SLUG, images, "shape_range_labels",
         "Image shape as configured, pixels finite in [-1, 1], labels in the conditioning set, every split "
         "holds every class.", _images_valid, resources=("compute",)),
    gate(SLUG, eval_classifier, "test_accuracy",
         "Reloads (weights_only); test accuracy ≥ min_classifier_accuracy (gates every FCD asset).",
         _classifier_accurate, additional={"images": images.key}, resources=("compute",)),
    gate(SLUG, reference_stats, "floors_finite", "Noise floors finite, reference features finite.", _floors_valid),
    gate(SLUG, msvq_tokenizer, "reconstruction_and_usage",
         "Reloads; val reconstruction MSE ≤ max_recon_mse; codebook usage ≥ min_codebook_usage; ids in range.",
         _tokenizer_usable, additional={"images": images.key}, resources=("compute",)),
    gate(SLUG, token_pyramids, "ids_in_range_and_round_trip",
         "Token ids within [0, V); decode(tokens) ≈ encode–decode reconstruction; teacher forcing consistent.",
         _pyramids_valid, additional={"msvq_tokenizer": msvq_tokenizer.key, "images": images.key}),
    gate(SLUG, var_models, "trained", "Checkpoints reload finite; train CE below the unigram entropy.",
         _models_trained, resources=("compute",)),
    gate(SLUG, viar_models, "trained", "Checkpoints reload finite; train CE below the unigram entropy.",
         _models_trained, resources=("compute",)),
    gate(SLUG, viar_models, "fixed_point_not_diverging",
         "Relative fixed-point residual at t = 8 below t = 1 on validation pyramids.", _viar_not_diverging,
         additional={"token_pyramids": token_pyramids.key, "msvq_tokenizer": msvq_tokenizer.key},
         resources=("compute",)),
    gate(SLUG, iteration_schedule, "schedule_valid",
         "One integer count per scale in 1..converged; NLL target met on the calibration split.",
         _schedule_valid, additional={"msvq_tokenizer": msvq_tokenizer.key}),
    gate(SLUG, samples, "finite_in_range_balanced", "Samples finite, in [-1, 1], per_class per class.",
         _samples_valid, resources=("compute",)),
    *claim_checks(SLUG, benchmark_report, CLAIM_IDS),
]

from assets.common.paper import legacy_paper  # noqa: E402  (Platform 2 migration)

PAPER = legacy_paper(SLUG, assets, asset_checks, REPORT_KEY, CLAIM_IDS)
