"""Bring-your-own-data validation for pfn_causal's CLI — pure pandas/numpy, no Dagster.

A user gives observational rows (a CSV: covariate columns + an outcome column) and a query
do(X_S = v). Everything is checked before any model is loaded; a problem is a `BadInput`
naming it. Values outside the observed 5–95 % range of their column are flagged, not refused.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

MIN_ROWS = 16
FLAG_QUANTILES = (0.05, 0.95)


class BadInput(ValueError):
    """The user's data or query cannot be answered (the message says why)."""


@dataclass
class Query:
    """columns: the covariate columns in model order; x (n, k), y (n,) raw units; mask (k,)
    bool, values (k,) raw units (0 off the mask); flags: warnings (values outside the
    observed 5–95 % range, padded covariates)."""

    outcome: str
    columns: list[str]
    x: np.ndarray
    y: np.ndarray
    mask: np.ndarray
    values: np.ndarray
    flags: list[str] = field(default_factory=list)


def parse_do(text: str, values: str | None = None) -> tuple[list[str], list[float]]:
    """"x1=0.5,x3=-1" → (["x1", "x3"], [0.5, -1.0]); or names "x1,x3" with values "0.5,-1"."""
    items = [t.strip() for t in (text or "").split(",") if t.strip()]
    if not items:
        raise BadInput("empty intervention: give at least one column, e.g. --do \"x1=0.5\"")
    if values is not None:
        names = items
        raw = [t.strip() for t in values.split(",") if t.strip()]
        if len(raw) != len(names):
            raise BadInput(f"mask/value length mismatch: {len(names)} columns {names} but {len(raw)} values {raw}")
    else:
        names, raw = [], []
        for item in items:
            if "=" not in item:
                raise BadInput(f"mask/value length mismatch: {item!r} has no value (write {item}=<value>)")
            name, value = item.split("=", 1)
            names.append(name.strip())
            raw.append(value.strip())
    out = []
    for name, value in zip(names, raw):
        try:
            number = float(value)
        except ValueError:
            raise BadInput(f"the value of {name!r} is not a number: {value!r}") from None
        if not math.isfinite(number):
            raise BadInput(f"the value of {name!r} is not finite: {value!r}")
        out.append(number)
    return names, out


def validate(frame: pd.DataFrame, outcome: str, names: list[str], values: list[float], d_model: int,
             min_rows: int = MIN_ROWS) -> Query:
    """Check the table and the query (module docstring) and return them as arrays."""
    if len(names) != len(values):
        raise BadInput(f"mask/value length mismatch: {len(names)} columns but {len(values)} values")
    if not names:
        raise BadInput("empty intervention: give at least one column")
    if outcome not in frame.columns:
        raise BadInput(f"unknown outcome column {outcome!r}; columns: {list(frame.columns)}")
    if frame.columns.duplicated().any():
        raise BadInput(f"repeated column names in the table: {sorted(frame.columns[frame.columns.duplicated()])}")
    covariates = [c for c in frame.columns if c != outcome]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise BadInput(f"repeated column in the intervention: {repeated}")
    unknown = [n for n in names if n not in covariates]
    if unknown:
        what = "the outcome cannot be intervened on" if outcome in unknown else f"covariates: {covariates}"
        raise BadInput(f"unknown column(s) {unknown} in the intervention ({what})")
    if len(covariates) > d_model:
        raise BadInput(f"{len(covariates)} covariates, more than the model's d = {d_model}")
    if len(frame) < min_rows:
        raise BadInput(f"{len(frame)} rows: at least {min_rows} observational rows are needed")
    for column in frame.columns:
        numeric = pd.to_numeric(frame[column], errors="coerce")
        bad = numeric.isna() | ~np.isfinite(numeric.to_numpy(dtype=float, na_value=np.nan))
        if bad.any():
            rows = frame.index[bad.to_numpy()].tolist()[:5]
            raise BadInput(f"column {column!r} has non-finite or non-numeric cells (rows {rows}, e.g. "
                           f"{frame[column].iloc[int(np.flatnonzero(bad.to_numpy())[0])]!r})")
    x = frame[covariates].to_numpy(dtype=float)
    y = frame[outcome].to_numpy(dtype=float)
    mask = np.isin(covariates, names)
    vals = np.zeros(len(covariates))
    flags = []
    for name, value in zip(names, values):
        c = covariates.index(name)
        vals[c] = value
        lo, hi = np.quantile(x[:, c], FLAG_QUANTILES)
        if not lo <= value <= hi:
            flags.append(f"{name}={value:g} lies outside the observed 5–95 % range [{lo:.3g}, {hi:.3g}] "
                         "(extrapolation)")
    if len(covariates) < d_model:
        flags.append(f"{len(covariates)} covariates padded with {d_model - len(covariates)} constant columns "
                     f"to the model's d = {d_model}")
    return Query(outcome=outcome, columns=covariates, x=x, y=y, mask=mask, values=vals, flags=flags)


def padded(query: Query, d_model: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x (n, d), mask (d,), values (d,)) with zero columns appended up to the model's d."""
    k = len(query.columns)
    x = np.concatenate([query.x, np.zeros((len(query.x), d_model - k))], axis=1)
    return x, np.append(query.mask, np.zeros(d_model - k, dtype=bool)), np.append(query.values, np.zeros(d_model - k))
