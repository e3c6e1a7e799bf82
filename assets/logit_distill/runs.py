"""logit_distill experiment loops: teachers, teacher outputs, students, metrics — no Dagster import.

Each public function is what one asset computes. Dimensions are table columns and parts of
the checkpoint names (teacher_<dataset>_t<seed>.pt, student_<dataset>_t<teacher seed>_<objective>
_s<seed>.pt). Torch is imported lazily (model.py imports it), through `torch_for(seed)` —
the compute resource's `torch`, which sets threads, determinism and the seed.

Wall-clock numbers (training seconds, samples/s, checkpoint seconds, the loop-vs-bare-torch
throughput) are returned apart from the tables, as timing rows: the tables are reproducible
outputs, the timings are run records.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from assets.common.progress import Progress
from assets.logit_distill import benchmark, data
from assets.logit_distill import metrics as M
from assets.logit_distill.params import DATASETS, LogitDistillParams, Network, Training
from resources.artifacts import load_checkpoint, save_checkpoint

REFERENCE_ROWS = 8          # test inputs whose logits are stored in each sidecar (reload check)
Log = Callable[[str], None]
TorchFor = Callable[..., Any]              # compute.torch: (seed=None) -> the torch module


# ------------------------------------------------------------------------------ helpers
def dataset_frames(params: LogitDistillParams, spirals: pd.DataFrame, digits: pd.DataFrame,
                   shapes: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """{dataset name: frame} for the datasets the profile selects, in params order."""
    frames = dict(zip(DATASETS, (spirals, digits, shapes)))
    return {name: frames[name] for name in params.datasets}


def arrays(frame: pd.DataFrame, split: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(sample ids, inputs (n, D) float32, labels (n,), concepts (n,)) of one split."""
    sub = frame[frame["split"] == split].sort_values("sample")
    return (sub["sample"].to_numpy(), sub[data.input_columns(frame)].to_numpy(dtype=np.float32),
            sub["label"].to_numpy(dtype=np.int64), sub["concept"].to_numpy(dtype=np.int64))


def model_config(p: Network, n_inputs: int, n_classes: int, teacher: bool):
    """Teacher and students share the architecture (MLP, or CNN when p.encoder == "cnn");
    only the teacher has the concept head (students see class logits only)."""
    from assets.logit_distill import model as net

    return net.ModelConfig(input_dim=n_inputs, rep_dim=p.rep_dim, n_classes=n_classes,
                           n_concepts=p.n_concepts if teacher else 0, hidden=p.hidden, depth=p.depth,
                           dropout=p.dropout, encoder=p.encoder, image_size=p.image_size,
                           channels=p.channels, conv_width=p.conv_width)


def train_config(t: Training):
    from assets.logit_distill import model as net

    return net.TrainConfig(epochs=t.epochs, batch_size=t.batch_size, lr=t.lr, gamma=t.gamma,
                           warmup_epochs=t.warmup_epochs, warmup_factor=t.warmup_factor)


def rebuild(ref: str | dict):
    """(model on CPU in eval mode, sidecar) from a checkpoint, loaded with weights_only=True."""
    from assets.logit_distill import model as net

    state, sidecar = load_checkpoint(ref)
    bad = net.state_dict_is_finite(state)
    if bad:
        raise ValueError(f"checkpoint {Path(ref if isinstance(ref, str) else ref['checkpoint']).name} "
                         f"has non-finite weights in {bad}")
    model = net.EmbeddingNet(net.ModelConfig(**sidecar["config"]))
    model.load_state_dict(state)
    return model.eval(), sidecar


def save_model(path: Path, model, provenance: dict, seed: int, device: str, reference_samples: np.ndarray,
               reference_inputs: np.ndarray, **extra: Any) -> dict:
    """Checkpoint + sidecar (config, seed, device, provenance, the logits of a few test inputs
    for the reload check); returns {"checkpoint", "md5"}."""
    import torch

    from assets.logit_distill import model as net

    ref = net.forward_numpy(model, torch.from_numpy(reference_inputs).to(next(model.parameters()).device))
    return save_checkpoint(path, model.state_dict(), provenance=provenance, config=model.config, seed=seed,
                           device=device, **extra, reference_samples=[int(s) for s in reference_samples],
                           reference_logits=ref["logits"].tolist())


# ------------------------------------------------------------------------------ teachers
def train_teachers(frames: dict[str, pd.DataFrame], params: LogitDistillParams, *, seed_for: Callable[..., int],
                   torch_for: TorchFor, device: str, checkpoint_path: Callable[[str], Path], provenance: dict,
                   log: Log) -> tuple[pd.DataFrame, list[dict]]:
    """Teachers per dataset × teacher_seed: CE MLP (spirals), concept-bottleneck MLP (digits)
    / CNN (shapes) with class + concept heads. Returns (table, timing rows)."""
    from assets.logit_distill import model as net

    rows, timings = [], []
    for dataset, frame in frames.items():
        p = params.dataset(dataset)
        labels = sorted(int(v) for v in frame["label"].unique())
        _, x_train, y_train, c_train = arrays(frame, "train")
        test_ids, x_test, y_test, c_test = arrays(frame, "test")
        for teacher_seed in params.teacher_seeds:
            seed = seed_for(dataset, "teacher", teacher_seed)
            torch = torch_for(seed)
            model = net.EmbeddingNet(model_config(p, x_train.shape[1], len(labels), True)).to(device)
            X = torch.from_numpy(x_train).to(device)
            y = torch.from_numpy(y_train).to(device)
            c = torch.from_numpy(c_train).to(device) if model.concept_head is not None else None

            def batch_loss(m, index, X=X, y=y, c=c):
                _, logits, concept_logits = m(X[index])
                return net.teacher_loss(logits, concept_logits, y[index], None if c is None else c[index])

            log(f"teacher {dataset}/t{teacher_seed}: training {p.teacher.epochs} epochs on {device}")
            config = train_config(p.teacher)
            result = net.train(model, X, batch_loss, config, seed, log=log, log_every=max(1, p.teacher.epochs // 4))
            out = net.forward_numpy(model, torch.from_numpy(x_test).to(device))
            metrics = {"test_accuracy": float((out["logits"].argmax(1) == y_test).mean()),
                       "min_prob": M.min_probability(out["logits"]),
                       "embedding_rank": benchmark.representation_rank(out["F"])}
            if model.concept_head is not None:
                metrics["concept_head_accuracy"] = float((out["concept_logits"].argmax(1) == c_test).mean())
                metrics.update({f"concept_{k}": v for k, v in benchmark.concept_probe(
                    out["F"], c_test, seed_for("probe", dataset)).items()})
            saved = save_model(checkpoint_path(f"teacher_{dataset}_t{teacher_seed}"), model, provenance, seed,
                               device, test_ids[:REFERENCE_ROWS], x_test[:REFERENCE_ROWS], kind="teacher",
                               dataset=dataset, teacher_seed=int(teacher_seed), labels=labels,
                               train_config=config.as_dict(), metrics=metrics)
            log(f"teacher {dataset}/t{teacher_seed}: {result.seconds:.1f} s, "
                + ", ".join(f"{k}={v:.4g}" for k, v in metrics.items()))
            rows.append({"dataset": dataset, "teacher_seed": int(teacher_seed), "checkpoint": saved["checkpoint"],
                         "md5": saved["md5"], "rep_dim": p.rep_dim, "n_classes": len(labels),
                         "final_loss": result.final_loss, "device": device, **metrics})
            timings.append({"dataset": dataset, "teacher_seed": int(teacher_seed), "device": device,
                            "train_seconds": result.seconds, "samples_per_second": result.samples_per_second})
    return pd.DataFrame(rows), timings


def long_rows(dataset: str, teacher_seed: int, split: str, ids: np.ndarray, kind: str,
              values: np.ndarray) -> pd.DataFrame:
    """values (n, m) as long rows (dataset, teacher_seed, split, sample, kind, component, value)."""
    n, m = values.shape
    return pd.DataFrame({"dataset": dataset, "teacher_seed": np.int64(teacher_seed), "split": split,
                         "sample": np.repeat(ids.astype(np.int64), m), "kind": kind,
                         "component": np.tile(np.arange(m, dtype=np.int64), n),
                         "value": values.ravel().astype(np.float64)})


def teacher_outputs(teacher_checkpoints: pd.DataFrame, frames: dict[str, pd.DataFrame],
                    torch_for: TorchFor) -> pd.DataFrame:
    """Teacher logits and embeddings on every split and its unembeddings, from the reloaded
    checkpoints. Long table: dataset, teacher_seed, split, sample, kind, component, value."""
    from assets.logit_distill import model as net

    torch = torch_for()
    parts = []
    for row in teacher_checkpoints.itertuples():
        model, _ = rebuild(row.checkpoint)
        for split in data.SPLITS:
            ids, x, _, _ = arrays(frames[row.dataset], split)
            out = net.forward_numpy(model, torch.from_numpy(x))
            for kind, values in (("logit", out["logits"]), ("embedding", out["F"])):
                parts.append(long_rows(row.dataset, row.teacher_seed, split, ids, kind, values))
        G = out["G"]
        parts.append(long_rows(row.dataset, row.teacher_seed, "head", np.arange(len(G)), "unembedding", G))
    return pd.concat(parts, ignore_index=True)


def teacher_matrix(outputs: pd.DataFrame, dataset: str, teacher_seed: int, split: str,
                   kind: str) -> tuple[np.ndarray, np.ndarray]:
    """(sample ids (n,), values (n, m)) of one teacher's outputs, sorted by sample."""
    sub = outputs[(outputs["dataset"] == dataset) & (outputs["teacher_seed"] == teacher_seed)
                  & (outputs["split"] == split) & (outputs["kind"] == kind)]
    sub = sub.sort_values(["sample", "component"])
    m = int(sub["component"].max()) + 1 if len(sub) else 0
    ids = sub["sample"].to_numpy()[::m] if m else np.array([], dtype=np.int64)
    return ids, sub["value"].to_numpy().reshape(len(ids), m)


# ------------------------------------------------------------------------------ students
def train_students(teacher_outputs: pd.DataFrame, teacher_checkpoints: pd.DataFrame,
                   frames: dict[str, pd.DataFrame], params: LogitDistillParams, *, seed_for: Callable[..., int],
                   torch_for: TorchFor, device: str, checkpoint_path: Callable[[str], Path], provenance: dict,
                   log: Log) -> tuple[pd.DataFrame, list[dict]]:
    """Students per dataset × objective × teacher_seed × seed, trained on the teacher's
    precomputed train logits (or the labels, for ce). Returns (table, timing rows): per
    student the training seconds and samples/s, the checkpoint-save and whole-step seconds,
    and once per dataset × objective our loop's and a bare torch loop's samples/s."""
    from assets.logit_distill import model as net

    jobs = [(t.dataset, int(t.teacher_seed), objective, int(seed)) for t in teacher_checkpoints.itertuples()
            for objective in params.objectives for seed in params.student_seeds]
    rows, timings, measured = [], [], set()
    progress = Progress(log, len(jobs), "students")
    for dataset, teacher_seed, objective, student_seed in jobs:
        step_start = time.perf_counter()
        p = params.dataset(dataset)
        train_ids, x_train, y_train, _ = arrays(frames[dataset], "train")
        test_ids, x_test, _, _ = arrays(frames[dataset], "test")
        logit_ids, teacher_logits = teacher_matrix(teacher_outputs, dataset, teacher_seed, "train", "logit")
        labels = sorted(int(v) for v in frames[dataset]["label"].unique())
        if not np.array_equal(logit_ids, train_ids):
            raise ValueError(f"{dataset}/t{teacher_seed}: teacher train logits cover other samples than the "
                             "train split")
        if teacher_logits.shape[1] != len(labels):
            raise ValueError(f"{dataset}/t{teacher_seed}: label sets differ — teacher has "
                             f"{teacher_logits.shape[1]} logits, data has {len(labels)} labels {labels}")
        seed = seed_for(dataset, teacher_seed, objective, student_seed)
        torch = torch_for(seed)
        model = net.EmbeddingNet(model_config(p, x_train.shape[1], len(labels), False)).to(device)
        X = torch.from_numpy(x_train).to(device)
        y = torch.from_numpy(y_train).to(device)
        Z = torch.from_numpy(teacher_logits.astype(np.float32)).to(device)

        def batch_loss(m, i, X=X, y=y, Z=Z, objective=objective):
            return net.distillation_loss(objective, m(X[i])[1], Z[i], y[i])

        config = train_config(p.student)
        result = net.train(model, X, batch_loss, config, seed)
        save_start = time.perf_counter()
        saved = save_model(checkpoint_path(f"student_{dataset}_t{teacher_seed}_{objective}_s{student_seed}"),
                           model, provenance, seed, device, test_ids[:REFERENCE_ROWS], x_test[:REFERENCE_ROWS],
                           kind="student", dataset=dataset, objective=objective, teacher_seed=teacher_seed,
                           student_seed=student_seed, labels=labels, train_config=config.as_dict())
        save_seconds = time.perf_counter() - save_start
        step_seconds = time.perf_counter() - step_start          # data slicing + training + checkpoint
        loop: dict[str, float] = {}
        if (dataset, objective) not in measured and params.throughput_epochs > 0:
            # the same model (fresh, same seed) and batch for a few epochs: our loop vs a bare torch loop
            measured.add((dataset, objective))
            loop = net.loop_throughput(lambda arch=model.config: net.EmbeddingNet(arch).to(device), X, batch_loss,
                                       config, params.throughput_epochs, seed)
        key = {"dataset": dataset, "objective": objective, "teacher_seed": teacher_seed, "seed": student_seed}
        rows.append({**key, "checkpoint": saved["checkpoint"], "md5": saved["md5"],
                     "final_loss": result.final_loss, "device": device})
        timings.append({**key, "device": device, "train_seconds": result.seconds,
                        "samples_per_second": result.samples_per_second, "save_seconds": save_seconds,
                        "step_seconds": step_seconds, "loop_samples_per_second": loop.get("ours"),
                        "bare_samples_per_second": loop.get("bare")})
        progress.step(f"{dataset}/t{teacher_seed}/{objective}/s{student_seed}: loss {result.final_loss:.4g}, "
                      f"{result.samples_per_second:,.0f} samples/s")
    return pd.DataFrame(rows), timings


# ------------------------------------------------------------------------------ metrics
def representation_metrics(student_checkpoints: pd.DataFrame, teacher_outputs: pd.DataFrame,
                           frames: dict[str, pd.DataFrame], params: LogitDistillParams, *,
                           seed_for: Callable[..., int], rng: Callable[..., np.random.Generator],
                           torch_for: TorchFor) -> pd.DataFrame:
    """Per student (test split): accuracy, agreement, KL, τ, d²_logit, d_rep (condition-guarded,
    skips counted), mCCA, bound slack, concept probe. Tidy rows (benchmark.tidy)."""
    from assets.logit_distill import model as net

    torch = torch_for()
    pairs_by_dataset, teachers, rows = {}, {}, []
    for row in student_checkpoints.itertuples():
        p = params.dataset(row.dataset)
        ids, x_test, y_test, c_test = arrays(frames[row.dataset], "test")
        tkey = (row.dataset, int(row.teacher_seed))
        if tkey not in teachers:
            logit_ids, logits = teacher_matrix(teacher_outputs, *tkey, "test", "logit")
            _, F = teacher_matrix(teacher_outputs, *tkey, "test", "embedding")
            _, G = teacher_matrix(teacher_outputs, *tkey, "head", "unembedding")
            if not np.array_equal(logit_ids, ids):
                raise ValueError(f"{tkey}: teacher test outputs cover other samples than the test split")
            teachers[tkey] = {"F": F, "G": G, "logits": logits}
        if row.dataset not in pairs_by_dataset:
            k, d = teachers[tkey]["G"].shape
            pairs_by_dataset[row.dataset] = M.label_subsets(k, d, p.d_rep_pivots, p.d_rep_subsets,
                                                            rng("subsets", row.dataset))
        model, _ = rebuild(row.checkpoint)
        student = net.forward_numpy(model, torch.from_numpy(x_test))
        concepts = c_test if (c_test >= 0).all() else None
        values = benchmark.run_metrics(student, teachers[tkey], y_test, concepts, pairs_by_dataset[row.dataset],
                                       seed_for("probe", row.dataset))
        rows.append({"dataset": row.dataset, "objective": row.objective, "teacher_seed": int(row.teacher_seed),
                     "seed": int(row.seed), **values})
    return benchmark.tidy(rows)
