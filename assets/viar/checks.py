"""VIAR data-quality predicates: pure functions returning the problems found (empty = pass).

definitions.py turns each into a blocking Dagster check (paper.gate); tests call them directly
on corrupted inputs. Floors that differ per profile come from params `checks`.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.common.findings import Finding, expectations, finding
from assets.viar import data, runs
from assets.viar.params import VIARRunParams
from resources.quality import expect

DECODE_TOLERANCE = 1e-4          # decode(tokens) vs the encode–decode reconstruction (max abs)
TEACHER_FORCING_TOLERANCE = 1e-5  # stored teacher-forcing inputs vs recomputed from the tokens
PIXEL_TOLERANCE = 1e-5           # samples may exceed [-1, 1] by round-off only
RESIDUAL_PROBE = (1, 8)          # the fixed-point residual at t = 8 must be below t = 1
RESIDUAL_ROWS = 200              # validation pyramids of the residual probe
SHOWN = 10                       # problems named in a message


def images_schema(frame: pd.DataFrame) -> Finding:
    return expectations(frame.drop(columns="pixels"), [
        expect("ExpectColumnValuesToNotBeNull", column="label"),
        expect("ExpectColumnValuesToNotBeNull", column="split"),
        expect("ExpectColumnValuesToBeInSet", column="split", value_set=list(data.SPLITS)),
        expect("ExpectColumnValuesToBeInSet", column="dataset", value_set=list(data.N_CLASSES)),
        expect("ExpectColumnValuesToBeBetween", column="label", min_value=0,
               max_value=max(data.N_CLASSES.values()) - 1),
        expect("ExpectTableRowCountToBeBetween", min_value=100),
    ], name="viar_images")


def images_valid(frame: pd.DataFrame, params: VIARRunParams) -> Finding:
    """Image shapes as configured, pixels finite in [-1, 1], labels within the conditioning set,
    every split holds every class."""
    problems = []
    for dataset in params.datasets:
        part = frame[frame["dataset"] == dataset]
        if part.empty:
            problems.append(f"{dataset}: no images")
            continue
        d = params.dataset(dataset)
        shape = (int(d.channels), int(d.image_size), int(d.image_size))
        problems += [f"{dataset}: {p}" for p in data.validate_images(part, shape, data.N_CLASSES[dataset])]
    return finding(["; ".join(problems)] if problems else [],
                   ok="image shapes as configured, pixels finite in [-1, 1], labels within the conditioning set, "
                   "every split holds every class", image_problems=len(problems))


def classifier_accurate(value: dict, images: pd.DataFrame, params: VIARRunParams) -> Finding:
    """The evaluation network reloads (weights_only) with its recorded test accuracy, which is
    at least checks.min_classifier_accuracy (it gates every FCD asset)."""
    from assets.viar import metrics

    floor = float(params.checks.min_classifier_accuracy)
    problems, accs = [] if value else ["no evaluation classifier"], {}
    for dataset, entry in value.items():
        xte, yte = data.to_arrays(images[images["dataset"] == dataset], "test")
        acc = float(np.mean(metrics.extract(runs.load_classifier(entry), xte)["pred"] == yte))
        accs[dataset] = acc
        if abs(acc - entry["test_accuracy"]) > 1e-6:
            problems.append(f"{dataset}: reloaded accuracy {acc:.4f} != recorded {entry['test_accuracy']:.4f}")
        if acc < floor:
            problems.append(f"{dataset}: evaluation classifier test accuracy {acc:.4f} < {floor}")
    return finding(problems, ok=f"reloaded (weights_only); test accuracy {accs} ≥ {floor}", accuracy=accs)


def floors_valid(value: dict) -> Finding:
    problems = [] if value else ["no reference statistics"]
    for dataset, entry in value.items():
        for k in ("fcd_floor_train_vs_test", "sfcd_floor_train_vs_test", "fcd_floor_test_halves"):
            if not (np.isfinite(entry[k]) and entry[k] >= 0):
                problems.append(f"{dataset}: {k} = {entry[k]}")
        ref = runs.load_reference(entry)
        if not np.isfinite(ref["penultimate"]).all():
            problems.append(f"{dataset}: non-finite reference features")
    return finding(problems, ok="noise floors finite and non-negative; reference features finite")


def tokenizer_usable(value: dict, images: pd.DataFrame, params: VIARRunParams) -> Finding:
    """Reloads; val reconstruction MSE ≤ checks.max_recon_mse; codebook usage ≥
    checks.min_codebook_usage; token ids within the codebook."""
    from assets.viar import tokenizer as T

    max_mse, min_usage = float(params.checks.max_recon_mse), float(params.checks.min_codebook_usage)
    problems, seen = [] if value else ["no tokenizer"], {}
    for dataset, entry in value.items():
        xva, _ = data.to_arrays(images[images["dataset"] == dataset], "val")
        ev = T.evaluate_tokenizer(runs.load_tokenizer(entry), xva)
        seen[dataset] = {"recon_mse": round(ev["recon_mse"], 5), "usage": round(ev["codebook_usage"], 3)}
        if not np.isfinite(ev["recon_mse"]) or ev["recon_mse"] > max_mse:
            problems.append(f"{dataset}: validation reconstruction MSE {ev['recon_mse']:.4f} > {max_mse}")
        if ev["codebook_usage"] < min_usage:
            problems.append(f"{dataset}: codebook usage {ev['codebook_usage']:.0%} < {min_usage:.0%} "
                            f"(codebook collapse)")
        if ev["token_min"] < 0 or ev["token_max"] >= entry["config"]["vocab"]:
            problems.append(f"{dataset}: token ids [{ev['token_min']}, {ev['token_max']}] outside "
                            f"[0, {entry['config']['vocab']})")
    return finding(problems, ok=f"reloaded; val recon MSE ≤ {max_mse}, codebook usage ≥ {min_usage:.0%}: {seen}",
                   seen=seen)


def pyramids_valid(frame: pd.DataFrame, msvq_tokenizer: dict, images: pd.DataFrame) -> Finding:
    """Token ids within [0, V); decode(tokens) ≈ the encode–decode reconstruction; the stored
    teacher-forcing inputs are the tokens'."""
    import torch

    from assets.viar.tokenizer import reconstruct

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
        tok = runs.load_tokenizer(entry)
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
        if diff > DECODE_TOLERANCE:
            problems.append(f"{dataset}: decode(tokens) differs from the encode–decode reconstruction by {diff:.2e}")
        if tf_diff > TEACHER_FORCING_TOLERANCE:
            problems.append(f"{dataset}: stored teacher-forcing inputs differ from the tokens' by {tf_diff:.2e}")
    return finding(problems, ok=f"token ids in range; decode(tokens) ≈ reconstruction; teacher forcing "
                   f"consistent: {worst}", max_abs_diff=worst)


def models_trained(frame: pd.DataFrame, params: VIARRunParams) -> Finding:
    """Every checkpoint reloads with finite weights and its train CE is below
    checks.max_ce_over_unigram × the unigram entropy of the training tokens."""
    ratio = float(params.checks.max_ce_over_unigram)
    problems = [] if len(frame) else ["no trained models"]
    for row in frame.itertuples():
        if not np.isfinite(row.final_ce) or row.final_ce > ratio * row.unigram_entropy:
            problems.append(f"{row.dataset}/{row.model}/seed {row.seed}: train CE {row.final_ce:.3f} not below "
                            f"{ratio:g} × unigram entropy {row.unigram_entropy:.3f}")
        model = runs.load_ar(row.checkpoint)
        if not all(bool(np.isfinite(q.detach().numpy()).all()) for q in model.parameters()):
            problems.append(f"{row.dataset}/{row.model}/seed {row.seed}: non-finite weights")
    return finding(problems, ok=f"{len(frame)} checkpoints reload with finite weights; train CE below "
                   f"{ratio:g} × the unigram entropy", runs=len(frame))


def viar_not_diverging(frame: pd.DataFrame, token_pyramids: pd.DataFrame, msvq_tokenizer: dict) -> Finding:
    """The relative fixed-point residual at t = 8 is below t = 1 on validation pyramids."""
    import torch

    early, late = RESIDUAL_PROBE
    problems, seen = [], {}
    for row in frame.itertuples():
        model = runs.load_ar(row.checkpoint)
        tf, _, labels = runs.pyramid_arrays(token_pyramids, row.dataset, "val",
                                            int(msvq_tokenizer[row.dataset]["config"]["cvae"]))
        trace = model.fixed_point_trace(torch.from_numpy(tf[:RESIDUAL_ROWS]),
                                        torch.from_numpy(labels[:RESIDUAL_ROWS]), late + 1)
        r1, r8 = float(trace["relative_residual"][early].mean()), float(trace["relative_residual"][late].mean())
        seen[f"{row.dataset}/seed {row.seed}"] = [round(r1, 5), round(r8, 6)]
        if not (np.isfinite(r8) and r8 < r1):
            problems.append(f"{row.dataset}/{row.model}/seed {row.seed}: fixed-point residual diverges "
                            f"(t={late}: {r8:.4g} ≥ t={early}: {r1:.4g})")
    return finding(problems, ok=f"relative residual at t={late} < t={early} on validation pyramids: {seen}",
                   residuals=seen)


def schedule_valid(frame: pd.DataFrame, msvq_tokenizer: dict) -> Finding:
    """One integer count per scale in 1..converged; the NLL target met on the calibration split."""
    problems = [] if len(frame) else ["no calibrated schedules"]
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
    return finding(problems, ok="every schedule has one count per scale in 1..converged and meets the NLL target "
                   "on the calibration (val) split")


def samples_valid(frame: pd.DataFrame, params: VIARRunParams) -> Finding:
    """Samples finite, in [-1, 1], sampling.per_class images per class."""
    per_class = int(params.sampling.per_class)
    problems = [] if len(frame) else ["no sample sets"]
    for row in frame.itertuples():
        imgs, labels = runs.load_samples(row.samples_ref)
        tag = f"{row.dataset}/{row.model}/{row.schedule}/seed {row.seed}"
        if not np.isfinite(imgs).all():
            problems.append(f"{tag}: {int((~np.isfinite(imgs)).sum())} non-finite pixels")
        elif imgs.min() < -1 - PIXEL_TOLERANCE or imgs.max() > 1 + PIXEL_TOLERANCE:
            problems.append(f"{tag}: pixel range [{imgs.min():.3f}, {imgs.max():.3f}] outside [-1, 1]")
        hist = np.bincount(labels, minlength=data.N_CLASSES[row.dataset])
        if not (hist == per_class).all():
            problems.append(f"{tag}: class histogram {hist.tolist()} is not {per_class} per class")
    return finding(problems, ok=f"{len(frame)} sample sets finite, in [-1, 1], {per_class} per class",
                   sample_problems=len(problems))
