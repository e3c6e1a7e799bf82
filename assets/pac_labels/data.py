"""Offline data for PAC labeling (pure: numpy / pandas / scikit-learn, no Dagster).

Two kinds of partitions (a partition = one dataset × one AI model):

- generated / shipped: sklearn's bundled `load_digits` and the generators `make_classification`
  and `make_friedman1`; an AI model is trained on a disjoint `train` split, the `pool` is what
  gets labelled, and its labels are hidden behind the expert oracle;
- the paper's own CSVs (tijana-zrnic/pac-labels, MIT): columns Y, Ŷ and confidence, read from
  a configurable directory (params `data_dir`, or env PAPERLAB_PAC_LABELS_DIR) and skipped with
  a logged reason when absent. They are never copied into the repository.

`validate_table` is the one validator for labelled tables: the Dagster checks and the
bring-your-own-CSV command line both use it.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from assets.pac_labels.method import InputError

DATA_DIR_ENV_VAR = "PAPERLAB_PAC_LABELS_DIR"
MAX_ROWS_IN_MESSAGE = 10


# ============================================================================ paper CSVs
@dataclass(frozen=True)
class TableSpec:
    """Column names and loss of one labelled table (a paper CSV or a user's CSV)."""

    label_col: str = "Y"
    pred_col: str = "Yhat"
    conf_col: str = "confidence"
    loss: str = "zero_one"
    labels: tuple | None = None      # the label space (0-1 loss); default: the values of label_col


def resolve_data_dir(configured: str, repo_root: Path) -> Path:
    """PAPERLAB_PAC_LABELS_DIR if set, else `configured` (relative to the repository root)."""
    raw = os.environ.get(DATA_DIR_ENV_VAR) or configured
    path = Path(raw)
    return path if path.is_absolute() else (repo_root / path).resolve()


def _rows(mask: np.ndarray, index: pd.Index) -> str:
    rows = [str(r) for r in index[np.asarray(mask)][:MAX_ROWS_IN_MESSAGE]]
    more = int(np.count_nonzero(mask)) - len(rows)
    return ", ".join(rows) + (f" (+{more} more)" if more > 0 else "")


def validate_table(frame: pd.DataFrame, spec: TableSpec) -> list[str]:
    """Every problem of a labelled table, each naming the column and the rows; [] when valid.

    Checks: the three columns exist; no missing values; confidence numeric, finite, in [0, 1];
    for 0-1 loss every AI label lies in the label space; for squared loss labels are numeric.
    """
    problems: list[str] = []
    missing = [c for c in (spec.label_col, spec.pred_col, spec.conf_col) if c not in frame.columns]
    if missing:
        return [f"missing column(s) {missing}; the table has {list(frame.columns)}"]
    if len(frame) == 0:
        return ["the table has no rows"]
    for col in (spec.label_col, spec.pred_col, spec.conf_col):
        null = frame[col].isna().to_numpy()
        if null.any():
            problems.append(f"column {col!r} has {int(null.sum())} missing value(s) (NaN) at rows "
                            f"{_rows(null, frame.index)}")
    conf = pd.to_numeric(frame[spec.conf_col], errors="coerce").to_numpy(dtype=float)
    not_numeric = np.isnan(conf) & frame[spec.conf_col].notna().to_numpy()
    if not_numeric.any():
        problems.append(f"column {spec.conf_col!r} is not numeric at rows {_rows(not_numeric, frame.index)}")
    with np.errstate(invalid="ignore"):
        out_of_range = np.isfinite(conf) & ((conf < 0) | (conf > 1))
    infinite = np.isinf(conf)
    if out_of_range.any():
        problems.append(f"column {spec.conf_col!r} has confidences outside [0, 1] at rows "
                        f"{_rows(out_of_range, frame.index)}")
    if infinite.any():
        problems.append(f"column {spec.conf_col!r} has non-finite confidences at rows {_rows(infinite, frame.index)}")
    if spec.loss == "zero_one":
        space = set(spec.labels) if spec.labels is not None else set(frame[spec.label_col].dropna())
        unknown = (~frame[spec.pred_col].isin(space) & frame[spec.pred_col].notna()).to_numpy()
        if unknown.any():
            values = sorted(map(str, frame.loc[unknown, spec.pred_col].unique()))[:MAX_ROWS_IN_MESSAGE]
            problems.append(f"column {spec.pred_col!r} has labels outside the label space "
                            f"({values}) at rows {_rows(unknown, frame.index)}")
        if spec.labels is not None:
            unknown_y = (~frame[spec.label_col].isin(space) & frame[spec.label_col].notna()).to_numpy()
            if unknown_y.any():
                problems.append(f"column {spec.label_col!r} has labels outside the label space at rows "
                                f"{_rows(unknown_y, frame.index)}")
    elif spec.loss == "squared":
        for col in (spec.label_col, spec.pred_col):
            values = pd.to_numeric(frame[col], errors="coerce")
            bad = (values.isna() & frame[col].notna()).to_numpy() | ~np.isfinite(values.fillna(0).to_numpy())
            if bad.any():
                problems.append(f"column {col!r} must be finite numbers for squared loss; rows "
                                f"{_rows(bad, frame.index)}")
    else:
        problems.append(f"loss must be 'zero_one' or 'squared', got {spec.loss!r}")
    return problems


def encode_table(frame: pd.DataFrame, spec: TableSpec) -> tuple[pd.DataFrame, list]:
    """A validated table → (items: item_id, y, yhat, confidence as floats, label space).

    For 0-1 loss labels become integer codes (as floats) into the sorted label space, which is
    returned so codes can be mapped back; for squared loss the space is [].
    Raises InputError listing every problem.
    """
    problems = validate_table(frame, spec)
    if problems:
        raise InputError("; ".join(problems))
    if spec.loss == "zero_one":
        space = sorted(set(spec.labels) if spec.labels is not None else set(frame[spec.label_col]),
                       key=lambda v: (str(type(v)), v))
        codes = {v: i for i, v in enumerate(space)}
        y = frame[spec.label_col].map(codes).to_numpy(dtype=float)
        yhat = frame[spec.pred_col].map(codes).to_numpy(dtype=float)
    else:
        space = []
        y = pd.to_numeric(frame[spec.label_col]).to_numpy(dtype=float)
        yhat = pd.to_numeric(frame[spec.pred_col]).to_numpy(dtype=float)
    items = pd.DataFrame({"item_id": np.arange(len(frame), dtype=np.int64), "y": y, "yhat": yhat,
                          "confidence": pd.to_numeric(frame[spec.conf_col]).to_numpy(dtype=float)})
    return items, space


def read_paper_csv(path: Path, spec: TableSpec) -> pd.DataFrame:
    """Raw columns of one paper CSV (its unnamed index column dropped)."""
    frame = pd.read_csv(path)
    return frame.drop(columns=[c for c in frame.columns if c.startswith("Unnamed")])


def paper_spec(cfg) -> TableSpec:
    """The TableSpec of a configured paper dataset (params.PaperDataset)."""
    return TableSpec(label_col=cfg.label_col, pred_col=cfg.pred_col, conf_col=cfg.conf_col, loss=cfg.loss)


def paper_tables(directory: Path, configured: dict, log=print) -> tuple[pd.DataFrame, dict[str, str]]:
    """The configured paper CSVs found in `directory`, as read (strings, None where missing).

    configured: name → params.PaperDataset. Returns (rows: dataset_id, row, the table's label,
    AI-label and confidence columns; status: name → "loaded …" or "skipped: … not found");
    `log` is told about every table loaded.
    """
    frames, status = [], {}
    for name, cfg in configured.items():
        path = directory / cfg.file
        if not path.exists():
            status[name] = f"skipped: {path} not found"
            continue
        raw = read_paper_csv(path, paper_spec(cfg))
        cols = [c for c in (cfg.label_col, cfg.pred_col, cfg.conf_col) if c in raw.columns]
        part = raw[cols].astype(object).where(raw[cols].notna(), None)
        part = part.apply(lambda col: col.map(lambda v: None if v is None else str(v)))
        part.insert(0, "row", np.arange(len(raw), dtype=np.int64))
        part.insert(0, "dataset_id", name)
        frames.append(part)
        status[name] = f"loaded {len(raw)} rows from {path}"
        log(f"paper dataset {name}: {len(raw)} rows")
    frame = (pd.concat(frames, ignore_index=True) if frames
             else pd.DataFrame({"dataset_id": pd.Series(dtype=str), "row": pd.Series(dtype=np.int64)}))
    return frame, status


def paper_table(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    """One paper dataset's rows of the paper_datasets table with its own columns (columns
    absent from its CSV dropped), indexed by CSV row."""
    rows = frame[frame["dataset_id"] == name].drop(columns=["dataset_id"]).set_index("row")
    return rows.loc[:, rows.notna().any(axis=0)]


def paper_status(directory: Path, configured: dict) -> dict[str, str]:
    """name → "loaded" or "<path> not found", for the report."""
    return {name: ("loaded" if (directory / cfg.file).exists() else f"{directory / cfg.file} not found")
            for name, cfg in configured.items()}


# ============================================================================ generated data
def digits_source(train_frac: float, seed: int) -> pd.DataFrame:
    """sklearn's bundled digits (1797 × 64 pixels in 0..16), split train / pool at random.

    Returns columns dataset_id, item_id (within its split), split, y (class 0..9), x_00..x_63
    (pixels / 16, in [0, 1]).
    """
    from sklearn.datasets import load_digits

    bunch = load_digits()
    return _split_frame("digits", bunch.data / 16.0, bunch.target.astype(float), train_frac, seed)


def synthetic_classification(n_pool: int, n_train: int, n_classes: int, n_features: int,
                             n_informative: int, label_noise: float, class_sep: float, seed: int) -> pd.DataFrame:
    """`make_classification` with label noise `flip_y` (the ImageNet analog): train / pool."""
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=n_pool + n_train, n_features=n_features,
                               n_informative=n_informative, n_redundant=0, n_classes=n_classes,
                               n_clusters_per_class=1, flip_y=label_noise, class_sep=class_sep,
                               random_state=seed)
    return _split_frame("synthetic_cls", X, y.astype(float), n_train / (n_pool + n_train), seed)


def synthetic_regression(n_pool: int, n_train: int, noise: float, seed: int) -> pd.DataFrame:
    """Friedman #1 (10 features in [0, 1], 5 informative), target standardized with the train
    split's mean and sd so the squared loss is in units of the target variance."""
    from sklearn.datasets import make_friedman1

    X, y = make_friedman1(n_samples=n_pool + n_train, noise=noise, random_state=seed)
    frame = _split_frame("synthetic_reg", X, y, n_train / (n_pool + n_train), seed)
    train = frame["split"] == "train"
    mean, sd = frame.loc[train, "y"].mean(), frame.loc[train, "y"].std()
    frame["y"] = (frame["y"] - mean) / sd
    return frame


def _split_frame(dataset_id: str, X: np.ndarray, y: np.ndarray, train_frac: float, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(y))
    n_train = int(round(train_frac * len(y)))
    split = np.empty(len(y), dtype=object)
    split[order[:n_train]] = "train"
    split[order[n_train:]] = "pool"
    frame = pd.DataFrame(X.astype(np.float32), columns=[f"x_{j:02d}" for j in range(X.shape[1])])
    frame.insert(0, "y", y.astype(float))
    frame.insert(0, "split", split)
    frame.insert(0, "item_id", 0)
    for name in ("train", "pool"):
        mask = frame["split"] == name
        frame.loc[mask, "item_id"] = np.arange(int(mask.sum()))
    frame.insert(0, "dataset_id", dataset_id)
    return frame


def features(frame: pd.DataFrame) -> np.ndarray:
    """The non-missing feature columns x_* of one dataset's rows → (rows, d) float64."""
    cols = [c for c in frame.columns if c.startswith("x_") and frame[c].notna().all()]
    return frame[cols].to_numpy(dtype=float)
