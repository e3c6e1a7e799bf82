"""logit_distill data-quality predicates: pure functions returning the problems found (empty = pass).

definitions.py turns each into a Dagster check with paper.gate; tests call them directly on
corrupted inputs. A dataset the profile does not select materializes an empty table, and its
checks pass as "not selected".
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from assets.common.findings import Finding, expectations, finding
from assets.logit_distill import data, theory
from assets.logit_distill.params import LogitDistillParams
from resources.artifacts import read_json, resolve_data_ref, sidecar_path
from resources.quality import expect

MAX_CLASS_RATIO = 1.5        # largest / smallest class count within a split
MIN_CHI2_PVALUE = 0.05       # concept ⟂ class: χ² p-value above this
RELOAD_RTOL = 1e-4           # reloaded logits vs the ones stored in the sidecar
CORE_METRICS = ["agreement", "kl_to_teacher", "d2_logit", "d_rep", "mcca", "accuracy", "d_rep_bound"]


def theory_holds(value: dict) -> Finding:
    return finding(theory.theory_problems(value),
                   ok="(a1) exact reparametrisation: d_logit = 0, d_rep ≈ 0, mCCA = 1; (a2) small KL with low "
                      "unembedding CCA; (a3) bound holds on every random pair",
                   min_bound_slack=value["bound_property"]["min_slack"])


def schema(frame: pd.DataFrame, name: str, n_labels: int, with_concept: bool, unit_range: bool = False) -> Finding:
    """GX table expectations + finite inputs (+ every input in [0, 1] for images)."""
    columns = data.input_columns(frame)
    rules = [expect("ExpectColumnValuesToNotBeNull", column=c) for c in ["label", "split", *columns[:2]]]
    rules += [expect("ExpectColumnValuesToBeBetween", column="label", min_value=0, max_value=n_labels - 1),
              expect("ExpectColumnDistinctValuesToEqualSet", column="split", value_set=list(data.SPLITS)),
              expect("ExpectColumnValuesToBeUnique", column="sample")]
    if with_concept:
        rules.append(expect("ExpectColumnDistinctValuesToEqualSet", column="concept", value_set=[0, 1, 2]))
    values = frame[columns].to_numpy(dtype=float)
    problems = []
    if not np.isfinite(values).all():
        problems.append(f"{int((~np.isfinite(values)).sum())} non-finite input values")
    elif unit_range and len(values) and (values.min() < 0 or values.max() > 1):
        problems.append(f"pixel values outside [0, 1]: min {values.min():.3g}, max {values.max():.3g}")
    return expectations(frame, rules, name=f"logit_distill_{name}", problems=problems)


def not_selected(frame: pd.DataFrame, params: LogitDistillParams, dataset: str) -> Finding | None:
    """A Finding when the profile does not select `dataset` (its table must then be empty),
    None when it is selected."""
    if dataset in params.datasets:
        return None
    if len(frame):
        return finding([f"{dataset} is not selected (datasets {list(params.datasets)}) but has {len(frame)} rows"])
    return finding([], ok=f"{dataset} not selected by the profile (empty table)")


def balanced_disjoint(frame: pd.DataFrame) -> Finding:
    problems = []
    groups_per_split = frame.groupby("group")["split"].nunique()
    if (groups_per_split > 1).any():
        problems.append(f"{int((groups_per_split > 1).sum())} source groups straddle splits (leakage)")
    if frame["sample"].duplicated().any():
        problems.append("duplicate sample ids")
    counts = frame.groupby(["split", "label"]).size().unstack(fill_value=0)
    missing = [(s, int(lbl)) for s in counts.index for lbl in counts.columns if counts.loc[s, lbl] == 0]
    if missing:
        problems.append(f"labels missing from splits: {missing[:10]}")
    ratio = float((counts.max(axis=1) / counts.min(axis=1).clip(lower=1)).max())
    if ratio > MAX_CLASS_RATIO:
        problems.append(f"class imbalance: largest/smallest class count within a split = {ratio:.2f} "
                        f"(> {MAX_CLASS_RATIO})")
    return finding(problems, ok=f"splits disjoint by group; every label in every split; class count ratio {ratio:.2f}",
                   class_count_ratio=ratio)


def concept_independent(frame: pd.DataFrame) -> Finding:
    labels, concepts = data.per_source(frame)
    pvalue = data.concept_independence_pvalue(labels, concepts)
    text = f"χ² test of concept ⟂ class over source images: p = {pvalue:.3g} "
    ok = bool(np.isfinite(pvalue) and pvalue > MIN_CHI2_PVALUE)
    return finding([] if ok else [text + "(≤ 0.05: the concept depends on the class — a probe would read "
                                  "class information)"], ok=text + "(> 0.05: independent)", chi2_pvalue=pvalue)


def spirals_schema(frame: pd.DataFrame, params: LogitDistillParams) -> Finding:
    return schema(frame, "spirals", params.spirals.n_labels, False)


def digits_schema(frame: pd.DataFrame) -> Finding:
    return schema(frame, "digits", 10, True, unit_range=True)


def shapes_schema(frame: pd.DataFrame, params: LogitDistillParams) -> Finding:
    skipped = not_selected(frame, params, "shapes")
    return skipped if skipped is not None else schema(frame, "shapes", params.shapes.n_classes, True, unit_range=True)


def shapes_balanced_disjoint(frame: pd.DataFrame, params: LogitDistillParams) -> Finding:
    skipped = not_selected(frame, params, "shapes")
    return skipped if skipped is not None else balanced_disjoint(frame)


def shapes_concept_independent(frame: pd.DataFrame, params: LogitDistillParams) -> Finding:
    skipped = not_selected(frame, params, "shapes")
    return skipped if skipped is not None else concept_independent(frame)


def reload_problems(rows: pd.DataFrame, frames: dict[str, pd.DataFrame]) -> list[str]:
    """Problems found reloading each checkpoint (weights_only) and re-running its stored
    reference inputs."""
    import torch

    from assets.logit_distill.runs import rebuild

    problems = []
    for row in rows.itertuples():
        name = Path(row.checkpoint).name
        try:
            model, sidecar = rebuild(row.checkpoint)
        except Exception as error:   # any failure to reload is the finding
            problems.append(f"{name} failed to reload: {type(error).__name__}: {error}")
            continue
        frame = frames[sidecar["dataset"]]
        x = frame.set_index("sample").loc[sidecar["reference_samples"], data.input_columns(frame)].to_numpy(np.float32)
        with torch.no_grad():
            logits = model(torch.from_numpy(x))[1].double().numpy()
        reference = np.asarray(sidecar["reference_logits"])
        scale = max(1.0, float(np.abs(reference).max()))
        if not np.isfinite(logits).all() or not np.allclose(logits, reference, rtol=RELOAD_RTOL,
                                                            atol=RELOAD_RTOL * scale):
            problems.append(f"{name}: reloaded logits differ from the stored ones (max |Δ| "
                            f"{float(np.nanmax(np.abs(logits - reference))):.3g})")
    return problems


def _load_back(frame: pd.DataFrame, what: str, spiral_dataset: pd.DataFrame, digits_concept_dataset: pd.DataFrame,
               shapes_dataset: pd.DataFrame) -> Finding:
    problems = reload_problems(frame, {"spirals": spiral_dataset, "digits": digits_concept_dataset,
                                       "shapes": shapes_dataset})
    if not len(frame):
        problems.append(f"no {what} checkpoints")
    return finding(problems, ok=f"{len(frame)} {what} checkpoints reload with weights_only, finite, "
                   "reproduce their logits")


def teachers_load_back(frame: pd.DataFrame, spiral_dataset: pd.DataFrame, digits_concept_dataset: pd.DataFrame,
                       shapes_dataset: pd.DataFrame) -> Finding:
    return _load_back(frame, "teacher", spiral_dataset, digits_concept_dataset, shapes_dataset)


def students_load_back(frame: pd.DataFrame, spiral_dataset: pd.DataFrame, digits_concept_dataset: pd.DataFrame,
                       shapes_dataset: pd.DataFrame) -> Finding:
    return _load_back(frame, "student", spiral_dataset, digits_concept_dataset, shapes_dataset)


def teacher_quality(frame: pd.DataFrame, params: LogitDistillParams) -> Finding:
    """Test accuracy and concept-probe accuracy above the profile's thresholds; rank(f) = d < classes − 1."""
    problems, notes = [], []
    for row in frame.to_dict("records"):
        p, tag = params.dataset(row["dataset"]), f"{row['dataset']}/t{row['teacher_seed']}"
        if row["rep_dim"] >= row["n_classes"] - 1:
            problems.append(f"{tag}: representation dimension {row['rep_dim']} ≥ classes − 1 = {row['n_classes'] - 1}")
        if not row["test_accuracy"] >= p.min_teacher_accuracy:
            problems.append(f"{tag}: test accuracy {row['test_accuracy']:.3f} < {p.min_teacher_accuracy}")
        if p.min_concept_probe is not None and not row.get("concept_probe_accuracy", 0) >= p.min_concept_probe:
            problems.append(f"{tag}: concept-probe accuracy {row.get('concept_probe_accuracy', float('nan')):.3f} "
                            f"< {p.min_concept_probe}")
        if row["embedding_rank"] != row["rep_dim"]:
            problems.append(f"{tag}: embedding rank {row['embedding_rank']} ≠ d = {row['rep_dim']}")
        notes.append(f"{tag}: acc {row['test_accuracy']:.3f}, τ {row['min_prob']:.2g}")
    return finding(problems, ok="teachers accurate, full-rank, concept decodable — " + "; ".join(notes),
                   teachers=len(frame))


def outputs_finite(frame: pd.DataFrame, teacher_checkpoints: pd.DataFrame) -> Finding:
    problems = []
    bad = frame[~np.isfinite(frame["value"].to_numpy())]
    if len(bad):
        where = bad.groupby(["dataset", "teacher_seed", "split", "kind"]).size().to_dict()
        problems.append(f"{len(bad)} non-finite teacher outputs: {where}")
    wanted = {(s, k) for s in data.SPLITS for k in ("logit", "embedding")} | {("head", "unembedding")}
    for row in teacher_checkpoints.itertuples():
        sub = frame[(frame["dataset"] == row.dataset) & (frame["teacher_seed"] == row.teacher_seed)]
        present = set(zip(sub["split"], sub["kind"]))
        if wanted - present:
            problems.append(f"{row.dataset}/t{row.teacher_seed}: missing {sorted(wanted - present)}")
        n_logits = sub.loc[sub["kind"] == "logit", "component"].nunique()
        if n_logits != row.n_classes:
            problems.append(f"{row.dataset}/t{row.teacher_seed}: {n_logits} logits for {row.n_classes} labels")
    return finding(problems, ok="teacher outputs finite and complete")


def student_labels_match(frame: pd.DataFrame, teacher_checkpoints: pd.DataFrame) -> Finding:
    """Each student's label set (sidecar) and head size equal its teacher's."""
    teachers = {(r.dataset, int(r.teacher_seed)): read_json(sidecar_path(resolve_data_ref(r.checkpoint)))
                for r in teacher_checkpoints.itertuples()}
    problems = []
    for row in frame.itertuples():
        name = Path(row.checkpoint).name
        student = read_json(sidecar_path(resolve_data_ref(row.checkpoint)))
        teacher = teachers.get((row.dataset, int(row.teacher_seed)))
        if teacher is None:
            problems.append(f"{name}: no teacher {row.dataset}/t{row.teacher_seed}")
            continue
        if student["labels"] != teacher["labels"] or student["config"]["n_classes"] != teacher["config"]["n_classes"]:
            problems.append(f"{name}: label set {student['labels']} (head {student['config']['n_classes']}) "
                            f"≠ teacher's {teacher['labels']} (head {teacher['config']['n_classes']})")
    return finding(problems, ok="every student shares its teacher's label set")


def metrics_finite(frame: pd.DataFrame) -> Finding:
    problems = []
    core = frame[frame["metric"].isin(CORE_METRICS)]
    bad = core[~np.isfinite(core["value"].to_numpy())]
    if len(bad):
        problems.append(f"{len(bad)} non-finite metrics: "
                        f"{bad[['dataset', 'objective', 'seed', 'metric']].head(5).to_dict('records')}")
    evaluated = frame[frame["metric"] == "subsets_evaluated"]
    if (evaluated["value"] <= 0).any():
        problems.append("every label subset was skipped (cond(M₁) > 1e8) for some run")
    skipped = frame.loc[frame["metric"] == "subsets_skipped", "value"].sum()
    total = skipped + evaluated["value"].sum()
    return finding(problems, ok=f"metrics finite; d_rep subsets skipped for conditioning: {int(skipped)}/{int(total)}",
                   subsets_skipped=int(skipped), subsets_total=int(total))


def bound_slack(frame: pd.DataFrame) -> Finding:
    """d_rep ≤ 2(d+1)·d²_logit/σ²_min on every pair (bound_slack ≥ 0), and at least one pair."""
    slack = frame[frame["metric"] == "bound_slack"]
    violations = slack[slack["value"] < 0]
    text = (f"{len(violations)} of {len(slack)} pairs violate d_rep ≤ 2(d+1)·d²_logit/σ²_min"
            + (f": {violations[['dataset', 'objective', 'seed']].to_dict('records')[:5]}" if len(violations) else ""))
    return finding([text] if len(violations) or not len(slack) else [], ok=text)
