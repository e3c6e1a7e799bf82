"""PAC labeling data-quality predicates: pure functions returning the problems found (empty =
pass). definitions.py turns each into a Dagster check with `paper.gate`; tests call them
directly on corrupted inputs."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from assets.common.findings import Finding, expectations, finding
from assets.pac_labels import data, runs
from assets.pac_labels import method as M
from assets.pac_labels.params import PACLabelsParams
from resources.quality import expect

GENERATED = ("digits", "synthetic_cls", "synthetic_reg")
LOGIT_TOLERANCE = 1e-4      # reloaded router vs the router that routed: learned logits agree to this


def source_schema(frame: pd.DataFrame) -> Finding:
    """GX: labels present, known splits and datasets; every dataset has train and pool rows and
    finite features."""
    problems = []
    for dataset, rows in frame.groupby("dataset_id"):
        splits = set(rows["split"])
        if splits != {"train", "pool"}:
            problems.append(f"{dataset}: splits {sorted(splits)} (need train and pool)")
        X = data.features(rows)
        if X.shape[1] == 0 or not np.isfinite(X).all():
            problems.append(f"{dataset}: features missing or non-finite")
    return expectations(frame, [
        expect("ExpectColumnValuesToNotBeNull", column="y"),
        expect("ExpectColumnValuesToBeInSet", column="split", value_set=["train", "pool"]),
        expect("ExpectColumnValuesToBeInSet", column="dataset_id", value_set=list(GENERATED)),
        expect("ExpectColumnDistinctValuesToEqualSet", column="dataset_id", value_set=list(GENERATED)),
    ], name="pac_labels_source", problems=problems)


def paper_tables_valid(frame: pd.DataFrame, params: PACLabelsParams) -> Finding:
    """Each loaded paper CSV passes data.validate_table (errors name the column and rows)."""
    loaded = sorted(set(frame["dataset_id"]))
    problems = []
    for name in loaded:
        spec = data.paper_spec(params.paper_datasets[name])
        problems += [f"{name}: {msg}" for msg in data.validate_table(data.paper_table(frame, name), spec)]
    return finding(problems, ok=f"{len(loaded)} paper tables valid ({', '.join(loaded) or 'none present: skipped'})",
                   datasets=loaded)


def models_load_back(value: dict[str, Any]) -> Finding:
    """Every checkpoint reloads (weights_only, md5-checked), finite, better than chance."""
    problems = []
    for name, entry in value.items():
        try:
            state = runs.load_model(entry)
        except Exception as err:  # noqa: BLE001 — any load failure is the finding
            problems.append(f"{name}: does not load ({err})")
            continue
        if not all(np.isfinite(v).all() for v in state.values()):
            problems.append(f"{name}: non-finite weights")
        floor = 1.5 / max(entry["n_classes"], 1) if entry["metric_name"] == "accuracy" else 0.0
        if not entry["train_metric"] > floor:
            problems.append(f"{name}: train {entry['metric_name']} {entry['train_metric']:.3f} ≤ {floor:.3f}")
    return finding(problems, ok=f"{len(value)} checkpoints reload, finite, better than chance")


def oracle_complete(frame: pd.DataFrame) -> Finding:
    """One finite hidden label per (dataset_id, item_id)."""
    problems = []
    bad = ~np.isfinite(frame["y"].to_numpy(dtype=float))
    if bad.any():
        problems.append(f"{int(bad.sum())} hidden labels missing/non-finite (e.g. "
                        f"{frame.loc[bad, ['dataset_id', 'item_id']].head(5).to_dict('records')})")
    dup = frame.duplicated(["dataset_id", "item_id"])
    if dup.any():
        problems.append(f"{int(dup.sum())} duplicated (dataset_id, item_id)")
    return finding(problems, ok=f"{len(frame)} expert labels, one per item")


def annotations_valid(frame: pd.DataFrame, expert_oracle: pd.DataFrame, partitions: list[dict[str, Any]],
                      params: PACLabelsParams) -> Finding:
    """Confidence in [0, 1] and finite; U finite with no ties; Ŷ in the label space; every
    annotated item has an expert label; the PAC parameters valid for every partition
    (ε, α in (0, 1), K ≤ pool)."""
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
            outside = ~rows["yhat"].isin(set(truth["y"].tolist()))
            if outside.any():
                problems.append(f"{dataset}/{model}: column 'yhat' has labels outside the label space at items "
                                f"{rows.loc[outside, 'item_id'].head(10).tolist()}")
        elif not np.isfinite(rows["yhat"].to_numpy(dtype=float)).all():
            problems.append(f"{dataset}/{model}: non-finite yhat")
        if not rows["item_id"].isin(truth["item_id"]).all():
            problems.append(f"{dataset}/{model}: annotated items without an expert label")
    for spec in partitions:
        rows = frame[(frame["dataset_id"] == spec["dataset"]) & (frame["model"] == spec["model"])]
        loss = str(rows["loss"].iloc[0]) if len(rows) else "zero_one"
        config = M.PACConfig(epsilon=params.epsilon, alpha=params.alpha, num_draws=int(spec["num_draws"]),
                             ci=spec["ci"], loss=loss,
                             label_range=tuple(spec["label_range"]) if spec.get("label_range") else None)
        try:
            if len(rows) == 0:
                raise M.InputError("no annotated items")
            M.validate_config(config, len(rows))
        except M.InputError as err:
            problems.append(f"partition {runs.spec_key(spec)}: {err}")
    return finding(problems, ok=f"{frame.groupby(['dataset_id', 'model']).ngroups} annotation sets valid; "
                   f"PAC parameters valid for {len(partitions)} partitions")


def annotations_not_trivial(frame: pd.DataFrame, expert_oracle: pd.DataFrame, params: PACLabelsParams) -> Finding:
    """Warning: the AI-only labels of an annotation set already meet ε (the set is trivial)."""
    trivial = []
    for (dataset, model), rows in frame.groupby(["dataset_id", "model"]):
        truth = expert_oracle[expert_oracle["dataset_id"] == dataset].set_index("item_id")["y"]
        err = M.realized_error(truth.loc[rows["item_id"]].to_numpy(), rows["yhat"].to_numpy(), rows["loss"].iloc[0])
        if err <= params.epsilon:
            trivial.append(f"{dataset}/{model} (AI-only error {err:.4f} ≤ ε)")
    return finding(["AI-only labels already meet ε on: " + ", ".join(trivial)] if trivial else [],
                   ok="no trivial partition")


def router_loads_back(value: dict[str, Any], source_datasets: pd.DataFrame, ai_models: dict[str, Any]) -> Finding:
    """The router's checkpoint (its value's reference) reloads, is finite, and re-routes the
    routed items exactly as recorded (same model per item, learned logits within 1e-4)."""
    import torch

    try:
        state = runs.load_model(value)
    except Exception as err:  # noqa: BLE001 — any load failure is the finding
        return finding([f"router checkpoint does not load: {err}"])
    if not all(np.isfinite(v).all() for v in state.values()):
        return finding(["router checkpoint has non-finite weights"])
    chosen, logits = runs.reroute(torch, value, state, source_datasets, ai_models)
    recorded = value["routed"]
    problems = []
    if len(chosen) != len(recorded["model"]):
        problems.append(f"{len(chosen)} routable items vs {len(recorded['model'])} recorded")
    elif not np.array_equal(chosen, np.asarray(recorded["model"])):
        changed = int(np.count_nonzero(chosen != np.asarray(recorded["model"])))
        problems.append(f"reloaded router routes {changed} items to another model than recorded")
    elif not np.allclose(logits, np.asarray(recorded["logit"], dtype=float), atol=LOGIT_TOLERANCE):
        gap = float(np.max(np.abs(logits - np.asarray(recorded["logit"], dtype=float))))
        problems.append(f"reloaded router's uncertainty logits differ from the recorded ones by up to {gap:.3g}")
    return finding(problems, ok="reloaded router reproduces the routed annotations")


def thresholds_valid(frame: pd.DataFrame, params: PACLabelsParams) -> Finding:
    """All trials present; û finite, or −inf only when infeasible; sampled purchases ≤ K."""
    problems = []
    for (dataset, model, ci, method), rows in frame.groupby(["dataset_id", "model", "ci", "method"]):
        if sorted(rows["trial"]) != list(range(params.trials)):
            problems.append(f"{dataset}/{model}/{ci}/{method}: trials {len(rows)} ≠ {params.trials}")
        u = rows["u_hat"].to_numpy(dtype=float)
        bad = np.isnan(u) | (np.isinf(u) & rows["feasible"].to_numpy()) | (np.isposinf(u))
        if bad.any():
            problems.append(f"{dataset}/{model}/{ci}/{method}: invalid û in {int(bad.sum())} trials")
        if (rows["n_sampled_bought"] > rows["num_draws"]).any():
            problems.append(f"{dataset}/{model}/{ci}/{method}: more sampled purchases than draws")
    return finding(problems, ok=f"{len(frame)} thresholds valid")


def labeled_complete(frame: pd.DataFrame, ai_annotations: pd.DataFrame) -> Finding:
    """Every annotated item labelled exactly once per partition, Ỹ finite, provenance known,
    AI-labelled items keep Ŷ, and the oracle's ledger equals the provenance item by item."""
    problems = []
    for (dataset, model, ci), rows in frame.groupby(["dataset_id", "model", "ci"]):
        expected = ai_annotations[(ai_annotations["dataset_id"] == dataset)
                                  & (ai_annotations["model"] == model)]["item_id"]
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
    return finding(problems, ok="labelled tables complete; ledger = provenance")


def outcomes_ledger(frame: pd.DataFrame) -> Finding:
    """In every trial the oracle's purchase ledger equals the provenance and AI labels keep Ŷ."""
    bad = frame[~frame["ledger_matches"] | ~frame["ai_labels_untouched"]]
    if len(bad):
        where = bad[["dataset_id", "model", "ci", "method", "trial"]].head(5).to_dict("records")
        return finding([f"ledger ≠ provenance (or AI labels changed) in {len(bad)} labelings, e.g. {where}"])
    return finding([], ok=f"ledger = provenance in all {len(frame)} labelings")
