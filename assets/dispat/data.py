"""Offline tables for DiSPaT and their normal-only splits — numpy / pandas only, no Dagster.

| name | source | normal | anomalies |
|---|---|---|---|
| synthetic_transactions | generated here | the generator's rows | global / local / dependency / clustered |
| fair | statsmodels `fair` (6,366 rows) | original rows | "swap": 2–3 values replaced by other rows' |
| breast_cancer | sklearn (its 10 "mean" features) | benign (357) | malignant |
| wine | sklearn (gpu profile only) | class 1 (71) | classes 0 and 2 |

Every table is a DataFrame of feature columns plus `label` (0 normal, 1 anomaly) and
`anomaly_type` ("normal", or the kind of anomaly). A `Schema` (fitted on the train split) names
each column's kind: numeric (with a fixed number of decimals), categorical (with its levels) or
text (truncated to `max_words` words).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

DATASETS = ("synthetic_transactions", "fair", "breast_cancer", "wine")
META = ("label", "anomaly_type")
NUMERIC, CATEGORICAL, TEXT = "numeric", "categorical", "text"

CATEGORIES = ("grocery", "fuel", "dining", "travel", "electronics", "pharmacy", "clothing", "utilities")
COUNTRIES = ("us", "uk", "de", "fr", "jp")
# (log-amount mean, log-amount sd, hour mean, hour sd) per category: amount depends on category
CATEGORY_PROFILE = {"grocery": (3.6, 0.35, 17, 3), "fuel": (3.9, 0.25, 8, 3), "dining": (3.3, 0.4, 20, 2),
                    "travel": (6.2, 0.45, 11, 4), "electronics": (5.4, 0.5, 15, 3), "pharmacy": (2.9, 0.4, 12, 3),
                    "clothing": (4.4, 0.4, 14, 3), "utilities": (4.9, 0.2, 10, 2)}
DESCRIPTION_WORDS = {
    "grocery": ("weekly food shop", "fresh produce and milk", "supermarket basket", "bread fruit and eggs"),
    "fuel": ("petrol station fill up", "diesel at the pump", "fuel and car wash", "gas station stop"),
    "dining": ("dinner at a restaurant", "lunch with coffee", "pizza delivery order", "cafe breakfast"),
    "travel": ("return flight ticket", "hotel room two nights", "train fare to the city", "rental car booking"),
    "electronics": ("new laptop charger", "wireless headphones", "phone screen repair", "smart watch strap"),
    "pharmacy": ("prescription refill", "cold and flu tablets", "vitamins and plasters", "allergy medicine"),
    "clothing": ("winter coat purchase", "running shoes", "shirts and socks", "denim jacket sale"),
    "utilities": ("monthly electricity bill", "water service charge", "internet subscription", "gas heating bill"),
}
MERCHANTS_PER_CATEGORY = 4          # 8 × 4 = 32 merchants, ≈ the spec's 30
BREAST_CANCER_COLUMNS = 10          # its "mean ..." features
MIN_VAL = 20


class TableError(ValueError):
    """Bad input table: the message names the column and the row."""


# ------------------------------------------------------------------------------ raw tables
def _snake(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.strip().lower()).strip("_")


def synthetic_transactions(n_normal: int, n_anomalies: int, rng: np.random.Generator) -> pd.DataFrame:
    """Generated card transactions: amount (log-normal by category, 2 decimals), hour (0–23, by
    category), category (8), country (5), merchant (4 per category), description (a template
    phrase of the category). Anomalies (equal shares, ADBench taxonomy): global (amount × 50),
    local (amount drawn from another category's range), dependency (description of another
    category), clustered (a tight cluster: travel, 03:00, amount ≈ 2,950, one merchant)."""
    def normal_rows(n: int) -> dict[str, list]:
        cats = rng.choice(CATEGORIES, size=n)
        rows = {c: [] for c in ("amount", "hour", "category", "country", "merchant", "description")}
        for cat in cats:
            mu, sd, h_mu, h_sd = CATEGORY_PROFILE[cat]
            rows["amount"].append(round(float(np.exp(rng.normal(mu, sd))), 2))
            rows["hour"].append(int(np.clip(np.rint(rng.normal(h_mu, h_sd)), 0, 23)))
            rows["category"].append(str(cat))
            rows["country"].append(str(rng.choice(COUNTRIES, p=[0.4, 0.2, 0.15, 0.15, 0.1])))
            rows["merchant"].append(f"{cat}_m{int(rng.integers(MERCHANTS_PER_CATEGORY))}")
            rows["description"].append(str(rng.choice(DESCRIPTION_WORDS[cat])))
        return rows

    normal = pd.DataFrame(normal_rows(n_normal))
    normal["label"], normal["anomaly_type"] = 0, "normal"
    kinds = np.array(["global", "local", "dependency", "clustered"])[np.arange(n_anomalies) % 4]
    anomalies = pd.DataFrame(normal_rows(n_anomalies))
    for i, kind in enumerate(kinds):
        cat = anomalies.at[i, "category"]
        if kind == "global":
            anomalies.at[i, "amount"] = round(float(anomalies.at[i, "amount"]) * 50, 2)
        elif kind == "local":
            other = _other(cat, CATEGORIES, rng, far_from=cat)
            mu, sd, _, _ = CATEGORY_PROFILE[other]
            anomalies.at[i, "amount"] = round(float(np.exp(rng.normal(mu, sd))), 2)
        elif kind == "dependency":
            anomalies.at[i, "description"] = str(rng.choice(DESCRIPTION_WORDS[_other(cat, CATEGORIES, rng)]))
        else:
            anomalies.loc[i, ["category", "hour", "merchant", "country"]] = ["travel", 3, "travel_m1", "jp"]
            anomalies.at[i, "amount"] = round(float(rng.normal(2950.0, 15.0)), 2)
            anomalies.at[i, "description"] = "return flight ticket"
    anomalies["label"], anomalies["anomaly_type"] = 1, kinds
    return pd.concat([normal, anomalies], ignore_index=True)


def _other(value: str, levels: tuple[str, ...], rng: np.random.Generator, far_from: str | None = None) -> str:
    """Another level; with far_from, one whose log-amount mean differs by ≥ 1 (a real local anomaly)."""
    choices = [v for v in levels if v != value]
    if far_from is not None:
        mu = CATEGORY_PROFILE[far_from][0]
        choices = [v for v in choices if abs(CATEGORY_PROFILE[v][0] - mu) >= 1.0]
    return str(rng.choice(choices))


def load_fair() -> pd.DataFrame:
    """statsmodels' bundled `fair` (6,366 × 9), every row normal (anomalies are made by `swap_anomalies`)."""
    import statsmodels.api as sm

    frame = sm.datasets.fair.load_pandas().data.reset_index(drop=True).astype(float)
    frame.columns = [_snake(c) for c in frame.columns]
    frame["label"], frame["anomaly_type"] = 0, "normal"
    return frame


def load_sklearn(name: str) -> pd.DataFrame:
    """breast_cancer (the 10 "mean" features; benign normal, malignant anomalous) or wine
    (class 1 normal, classes 0 and 2 anomalous), from the scikit-learn wheel."""
    from sklearn import datasets

    bunch = getattr(datasets, f"load_{name}")(as_frame=True)
    frame = bunch.data.reset_index(drop=True).astype(float)
    y = np.asarray(bunch.target)
    if name == "breast_cancer":
        frame = frame.iloc[:, :BREAST_CANCER_COLUMNS]
        anomalous = y == 0                                       # target 0 = malignant
        kind = "malignant"
    elif name == "wine":
        anomalous = y != 1
        kind = "other_cultivar"
    else:
        raise ValueError(f"unknown sklearn table {name!r}")
    frame.columns = [_snake(c) for c in frame.columns]
    frame["label"] = anomalous.astype(int)
    frame["anomaly_type"] = np.where(anomalous, kind, "normal")
    return frame


def swap_anomalies(rows: pd.DataFrame, donors: pd.DataFrame, rng: np.random.Generator,
                   columns: list[str]) -> pd.DataFrame:
    """Dependency anomalies: each row gets 2–3 of its values replaced by the same columns of
    other (donor) rows, so every value is plausible on its own but the combination is not."""
    out = rows.copy().reset_index(drop=True)
    for i in range(len(out)):
        k = int(rng.integers(2, 4))
        for col in rng.choice(columns, size=k, replace=False):
            donor = donors.iloc[int(rng.integers(len(donors)))]
            out.at[i, col] = donor[col]
    out["label"], out["anomaly_type"] = 1, "swap"
    return out


# ------------------------------------------------------------------------------ splits
@dataclass(frozen=True)
class SplitSizes:
    """Rows per split; the test split adds round(anomaly_fraction · test_normal / (1 − fraction))
    anomalies. For sklearn tables with fewer normal rows the sizes are scaled down pro rata."""

    train: int
    val: int
    test_normal: int
    anomaly_fraction: float


def n_anomalies(test_normal: int, fraction: float) -> int:
    return int(round(fraction * test_normal / (1 - fraction)))


def raw_table(name: str, sizes: SplitSizes, rng: np.random.Generator) -> pd.DataFrame:
    """The table a dataset's splits are drawn from: synthetic_transactions generates a pool of
    twice the rows the splits need; the packaged tables are loaded whole."""
    if name == "synthetic_transactions":
        need = sizes.train + sizes.val + sizes.test_normal
        return synthetic_transactions(2 * need, 2 * max(4, n_anomalies(sizes.test_normal, sizes.anomaly_fraction)),
                                      rng)
    if name == "fair":
        return load_fair()
    if name in ("breast_cancer", "wine"):
        return load_sklearn(name)
    raise ValueError(f"unknown dataset {name!r}; known: {list(DATASETS)}")


def make_splits(name: str, table: pd.DataFrame, sizes: SplitSizes, rng: np.random.Generator) -> pd.DataFrame:
    """Train (normal only), val (normal only) and test (normal + anomalies) rows drawn from one
    raw table, with `split` and `row_id` columns. fair's anomalies are made by `swap_anomalies`
    from rows outside the normal splits, with donors from the train split."""
    normal_all, anomalies_all = table[table.label == 0], table[table.label == 1]
    total = sizes.train + sizes.val + sizes.test_normal
    if name == "fair":
        order = rng.permutation(len(table))
        normal = table.iloc[order[:total]]
        n_anom = n_anomalies(sizes.test_normal, sizes.anomaly_fraction)
        donors = normal.iloc[:sizes.train]
        anomalies = swap_anomalies(table.iloc[order[total:total + n_anom]], donors, rng,
                                   [c for c in table.columns if c not in META])
    else:
        scale = min(1.0, len(normal_all) / total)
        if scale < 1:
            # every normal row is used; ≥ 20 validation rows so that α n can be a whole row at α = 0.05
            n_val = max(int(sizes.val * scale), min(MIN_VAL, sizes.val))
            n_test = int(math.ceil(sizes.test_normal * scale))
            sizes = SplitSizes(len(normal_all) - n_val - n_test, n_val, n_test, sizes.anomaly_fraction)
        n_anom = n_anomalies(sizes.test_normal, sizes.anomaly_fraction)
        normal = normal_all.iloc[rng.permutation(len(normal_all))[:total]]
        anomalies = anomalies_all.iloc[rng.permutation(len(anomalies_all))[:n_anom]]
    normal = normal.iloc[rng.permutation(len(normal))].reset_index(drop=True)
    parts = [normal.iloc[:sizes.train].assign(split="train"),
             normal.iloc[sizes.train:sizes.train + sizes.val].assign(split="val"),
             normal.iloc[sizes.train + sizes.val:sizes.train + sizes.val + sizes.test_normal].assign(split="test"),
             anomalies.iloc[:n_anom].assign(split="test")]
    frame = pd.concat(parts, ignore_index=True)
    frame["row_id"] = np.arange(len(frame))
    return frame


# ------------------------------------------------------------------------------ schema
@dataclass(frozen=True)
class Column:
    """One column of the fitted schema. decimals: numeric only (fixed precision); levels:
    categorical only (train levels, sorted); max_words: text only (truncation)."""

    name: str
    kind: str
    decimals: int = 0
    levels: tuple[str, ...] = ()
    max_words: int = 0


@dataclass(frozen=True)
class Schema:
    columns: tuple[Column, ...]
    novel_levels: dict[str, tuple[str, ...]] = field(default_factory=dict)   # declared novel test levels

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def column(self, name: str) -> Column:
        return next(c for c in self.columns if c.name == name)

    def to_dict(self) -> dict:
        return {"columns": [{"name": c.name, "kind": c.kind, "decimals": c.decimals, "levels": list(c.levels),
                             "max_words": c.max_words} for c in self.columns],
                "novel_levels": {k: list(v) for k, v in self.novel_levels.items()}}

    @staticmethod
    def from_dict(d: dict) -> Schema:
        return Schema(tuple(Column(c["name"], c["kind"], int(c["decimals"]), tuple(c["levels"]), int(c["max_words"]))
                            for c in d["columns"]),
                      {k: tuple(v) for k, v in d.get("novel_levels", {}).items()})


def format_level(value) -> str:
    """Categorical levels as text: integer-valued floats lose their '.0'."""
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


def fit_schema(train: pd.DataFrame, text_columns: tuple[str, ...] = (), max_words: int = 6,
               max_levels: int = 12, significant: int = 3, max_decimals: int = 4) -> Schema:
    """Kinds from the train rows: declared text columns; object/bool columns and integer-valued
    numeric columns with ≤ max_levels distinct values are categorical; other numbers are numeric
    with decimals = min(max_decimals, max(0, significant − 1 − floor(log10 median |x ≠ 0|)))
    (integer-valued columns: 0)."""
    columns = []
    for name in [c for c in train.columns if c not in (*META, "split", "row_id")]:
        values = train[name]
        if name in text_columns:
            columns.append(Column(name, TEXT, max_words=max_words))
        elif not pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
            columns.append(Column(name, CATEGORICAL, levels=tuple(sorted({format_level(v) for v in values}))))
        else:
            x = values.to_numpy(float)
            integer = bool(np.all(np.isfinite(x)) and np.all(x == np.round(x)))
            if integer and len(np.unique(x)) <= max_levels:
                columns.append(Column(name, CATEGORICAL, levels=tuple(sorted({format_level(v) for v in x},
                                                                               key=float))))
            elif integer:
                columns.append(Column(name, NUMERIC, decimals=0))
            else:
                nz = np.abs(x[np.isfinite(x) & (x != 0)])
                scale = math.floor(math.log10(float(np.median(nz)))) if len(nz) else 0
                columns.append(Column(name, NUMERIC, decimals=int(min(max_decimals, max(0, significant - 1 - scale)))))
    return Schema(tuple(columns))


def validate_table(frame: pd.DataFrame, schema: Schema, where: str = "table") -> None:
    """Raise TableError naming the column and row for: an empty table, missing or extra columns,
    undeclared missing values, text in a numeric column, non-finite numbers."""
    if len(frame) == 0:
        raise TableError(f"{where}: the table is empty")
    features = [c for c in frame.columns if c not in (*META, "split", "row_id")]
    missing = [c for c in schema.names if c not in features]
    extra = [c for c in features if c not in schema.names]
    if missing or extra:
        raise TableError(f"{where}: columns differ from the fitted schema: missing {missing}, unexpected {extra}")
    for col in schema.columns:
        values = frame[col.name]
        na = np.flatnonzero(pd.isna(values).to_numpy())
        if len(na):
            raise TableError(f"{where}: undeclared missing value in column {col.name!r} at row {int(na[0])}")
        if col.kind == NUMERIC:
            numbers = pd.to_numeric(values, errors="coerce")
            bad = np.flatnonzero(pd.isna(numbers).to_numpy())
            if len(bad):
                raise TableError(f"{where}: text {values.iloc[bad[0]]!r} in numeric column {col.name!r} "
                                 f"at row {int(bad[0])}")
            inf = np.flatnonzero(~np.isfinite(numbers.to_numpy(float)))
            if len(inf):
                raise TableError(f"{where}: non-finite value in numeric column {col.name!r} at row {int(inf[0])}")
