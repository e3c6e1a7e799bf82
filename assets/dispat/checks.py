"""dispat's blocking data-quality predicates — pure, no Dagster: f(value, **inputs[, params]) -> Finding.

Each names the cell (dataset, seed), and where it applies the column and the row.
"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from assets.common.findings import Finding, finding
from assets.dispat import data as D
from assets.dispat import serialize as S
from assets.dispat.params import DispatParams


def _cells(frame: pd.DataFrame):
    return frame.groupby(["dataset", "seed"], sort=True)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def splits_valid(value: pd.DataFrame, params: DispatParams) -> Finding:
    """Train/val contamination 0; test anomaly ratio in the gate range; labels non-null; one
    schema (the same columns, each numeric in every split or in none, no undeclared missing
    value); categorical test levels ⊆ train levels ∪ declared novel."""
    problems = []
    lo, hi = params.gates.anomaly_ratio
    for (d, s), g in _cells(value):
        where = f"{d} seed {s}"
        for split in ("train", "val", "test"):
            if not (g["split"] == split).any():
                problems.append(f"{where}: the {split} split is empty")
        if g["label"].isna().any():
            problems.append(f"{where}: label is null at row {int(np.flatnonzero(g['label'].isna())[0])}")
            continue
        contaminated = g[(g["split"] != "test") & (g["label"] != 0)]
        if len(contaminated):
            problems.append(f"{where}: {len(contaminated)} anomalies in train/val (contamination must be 0), "
                            f"first row {int(contaminated['row_id'].iloc[0])}")
        test = g[g["split"] == "test"]
        if len(test):
            ratio = float(test["label"].mean())
            if not lo <= ratio <= hi:
                problems.append(f"{where}: test anomaly ratio {ratio:.3f} outside [{lo}, {hi}]")
        rows = [json.loads(v) for v in g["values"]]
        columns = list(rows[0]) if rows else []
        numeric_col = {}
        for row, rid in zip(rows, g["row_id"]):
            if list(row) != columns:
                problems.append(f"{where}: row {int(rid)} has columns {list(row)}, not the schema's {columns}")
                break
            bad = False
            for c in columns:
                v = row[c]
                if v is None or (isinstance(v, float) and np.isnan(v)):
                    problems.append(f"{where}: undeclared missing value in column {c!r} at row {int(rid)}")
                    bad = True
                    break
                kind = _is_number(v)
                if c not in numeric_col:
                    numeric_col[c] = kind
                elif numeric_col[c] != kind:
                    problems.append(f"{where}: column {c!r} mixes numbers and text ({v!r} at row {int(rid)})")
                    bad = True
                    break
            if bad:
                break
        if problems:
            continue
        table = pd.DataFrame(rows)
        table["label"] = g["label"].to_numpy()
        table["anomaly_type"] = g["anomaly_type"].to_numpy()
        schema = D.fit_schema(table[g["split"].to_numpy() == "train"], _text_columns(d))
        formatted = S.format_rows(table[g["split"].to_numpy() == "test"], schema)
        problems += [f"{where}: {p}" for p in S.check_levels(formatted, schema)]
    return finding(problems, ok=f"{value.groupby(['dataset', 'seed']).ngroups} cells: normal-only train/val, "
                                "one schema, test levels seen in train")


def _text_columns(name: str) -> tuple[str, ...]:
    from assets.dispat.runs import TEXT_COLUMNS

    return TEXT_COLUMNS.get(name, ())


def corpus_round_trip(value: pd.DataFrame) -> Finding:
    """Every serialised row parses back to exactly its formatted values (text level)."""
    problems, n = [], 0
    for (d, s), g in _cells(value):
        schema = D.Schema.from_dict(json.loads(g["schema"].iloc[0]))
        bad = 0
        for text, formatted, rid in zip(g["text"], g["formatted"], g["row_id"]):
            n += 1
            try:
                ok = S.parse(text, schema) == json.loads(formatted)
            except ValueError:
                ok = False
            if not ok:
                if not bad:
                    problems.append(f"{d} seed {s}: row {int(rid)} does not round-trip: {text[:80]!r}")
                bad += 1
        if bad:
            problems.append(f"{d} seed {s}: round trip {1 - bad / len(g):.4f} (need 1.0)")
    return finding(problems, ok=f"{n} rows round-trip exactly")


def tokenizer_valid(value: dict) -> Finding:
    """Token round trip 100 % on every row; every row fits the context."""
    problems = []
    for c in value["cells"]:
        where = f"{c['dataset']} seed {c['seed']}"
        if c["round_trip"] < 1.0:
            problems.append(f"{where}: token round trip {c['round_trip']:.4f} (need 1.0)")
        if c["max_tokens"] > c["context"]:
            problems.append(f"{where}: a row has {c['max_tokens']} tokens, past the context of {c['context']}")
    return finding(problems, ok="token round trip 1.0 on every cell; rows fit the context")


def policies_finite(value: pd.DataFrame) -> Finding:
    """Finite losses and validation NLL for every cell."""
    problems = [f"{r.dataset} seed {r.seed}: non-finite loss or validation NLL" for r in value.itertuples()
                if not (np.isfinite(r.final_loss) and np.isfinite(r.val_nll))]
    return finding(problems, ok=f"{len(value)} policies, finite")


def policies_learned(value: pd.DataFrame) -> Finding:
    """θ0: finite, and SFT lowered the training loss (last 10 steps below the first 5)."""
    problems = list(policies_finite(value).problems)
    problems += [f"{r.dataset} seed {r.seed}: loss did not fall ({r.first_loss:.3f} → {r.final_loss:.3f})"
                 for r in value.itertuples() if r.final_loss >= r.first_loss]
    return finding(problems, ok=f"{len(value)} policies learned (loss fell)")


def generated_valid(value: pd.DataFrame, params: DispatParams) -> Finding:
    """Round-0 samples: parse rate ≥ min_parse_rate and train-duplicate rate ≤ max_train_duplicates
    (else mode collapse), per cell."""
    g = params.gates
    problems = []
    for (d, s), part in _cells(value):
        rate = float(part["parsed"].mean())
        dup = float(part.loc[part["parsed"], "duplicate"].mean()) if part["parsed"].any() else 1.0
        if rate < g.min_parse_rate:
            problems.append(f"{d} seed {s}: parse rate {rate:.3f} < {g.min_parse_rate}")
        if dup > g.max_train_duplicates:
            problems.append(f"{d} seed {s}: {dup:.3f} of the parsed samples copy a train row "
                            f"(> {g.max_train_duplicates}: mode collapse)")
    return finding(problems, ok="samples parse and do not copy the train rows")


def rounds_valid(value: pd.DataFrame, params: DispatParams) -> Finding:
    """Every self-play round's samples (rounds ≥ 1) parse ≥ min_parse_rate and copy train rows
    ≤ max_train_duplicates; finite D̂_f and validation NLL."""
    g = params.gates
    problems = []
    for r in value.itertuples():
        where = f"{r.dataset} seed {r.seed} f={r.f} round {r.round}"
        if not (np.isfinite(r.divergence) and np.isfinite(r.val_nll_after)):
            problems.append(f"{where}: non-finite D̂_f or validation NLL")
        if r.round == 0:
            continue
        if r.parse_rate < g.min_parse_rate:
            problems.append(f"{where}: parse rate {r.parse_rate:.3f} < {g.min_parse_rate}")
        if r.duplicate_rate > g.max_train_duplicates:
            problems.append(f"{where}: duplicate rate {r.duplicate_rate:.3f} > {g.max_train_duplicates}")
    return finding(problems, ok=f"{len(value)} rounds: samples parse, no collapse")


def scores_finite(value: pd.DataFrame) -> Finding:
    """No NaN / inf score."""
    bad = value[~np.isfinite(value["score"].to_numpy(float))]
    problems = [f"{r.dataset} seed {r.seed} {r.method}: non-finite score at {r.split} row {r.row_id}"
                for r in bad.head(5).itertuples()]
    return finding(problems, ok=f"{len(value)} finite scores")


def thresholds_calibrated(value: pd.DataFrame, params: DispatParams) -> Finding:
    """Validation FPR within ±fpr_tolerance of α for every cell and method; α in (0, 1)."""
    tol = params.gates.fpr_tolerance
    problems = []
    if not 0 < params.alpha < 1:
        problems.append(f"alpha {params.alpha} outside (0, 1)")
    for r in value.itertuples():
        if not np.isfinite(r.threshold) or abs(r.val_fpr - r.alpha) > tol + 1e-12:
            problems.append(f"{r.dataset} seed {r.seed} {r.method}: validation FPR {r.val_fpr:.4f} not within "
                            f"±{tol} of α = {r.alpha} (n_val {r.n_val})")
    return finding(problems, ok=f"{len(value)} thresholds: validation FPR within ±{tol} of α")
