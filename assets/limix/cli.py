"""Bring your own data: class probabilities for test rows from train rows, in context.

    python -m assets.limix.cli --train a.csv --test b.csv --target y [--out p.csv]

Uses a learned checkpoint of a materialized run (data/limix/checkpoints.parquet, or
$PAPERLAB_DATA_DIR; --data-dir overrides; --variant picks which, default rabel_snf); when none
is there, trains a tiny one on the prior (--steps, a few seconds). Prints a CSV (one row per
test row, one column p_<class> per class of the train target) to stdout or --out.

Bad input exits with status 2 and one stderr line naming the file and the problem: missing,
empty, not UTF-8, no target column, > 10 classes, one class in the train rows, more features
than the checkpoint takes, > 10 000 rows in a file, a string column that cannot be encoded
(> 32 distinct values).
Empty, NaN and ±inf cells are valid (the model's missing-value path).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from assets.common.inputs import InputError, check_range, read_csv, run_cli

SLUG = "limix"
MAX_CATEGORIES = 32
MAX_CLASSES = 10
MAX_ROWS = 10_000      # per file: every train and test row is one item of a single in-context forward pass


def _number(cell: str) -> float | None:
    text = cell.strip()
    if text == "" or text.lower() in ("nan", "na", "null", "none"):
        return float("nan")
    try:
        return float(text)
    except ValueError:
        return None


def encode(train: list[dict], test: list[dict], features: list[str], train_path, test_path
           ) -> tuple[np.ndarray, np.ndarray]:
    """Numeric columns as floats (empty/NaN/inf kept); string columns as codes of the train rows'
    sorted categories (a test category unseen in train → NaN)."""
    xs, xq = np.zeros((len(train), len(features))), np.zeros((len(test), len(features)))
    for j, col in enumerate(features):
        a = [_number(r[col]) for r in train]
        b = [_number(r[col]) for r in test]
        if all(v is not None for v in a + b):
            xs[:, j], xq[:, j] = a, b
            continue
        cats = sorted({r[col].strip() for r in train if _number(r[col]) is None or r[col].strip()})
        if len(cats) > MAX_CATEGORIES:
            raise InputError(f"{train_path}: column {col!r} holds {len(cats)} distinct strings; it cannot be encoded "
                             f"(at most {MAX_CATEGORIES} categories)")
        code = {c: float(i) for i, c in enumerate(cats)}
        xs[:, j] = [code.get(r[col].strip(), np.nan) for r in train]
        xq[:, j] = [code.get(r[col].strip(), np.nan) for r in test]
    return xs, xq


def _checkpoint(data_dir: Path, variant: str, seed: int | None):
    import pandas as pd

    table = data_dir / SLUG / "checkpoints.parquet"
    if not table.exists():
        return None
    frame = pd.read_parquet(table)
    rows = frame[(frame["variant"] == variant) & frame["learned"]]
    if seed is not None:
        rows = rows[rows["seed"] == seed]
    return rows.iloc[0]["checkpoint"] if len(rows) else None


def load_or_train(data_dir: Path, variant: str, seed: int | None, steps: int):
    """(model, where it came from)."""
    import os

    from assets.limix import runs

    ref = _checkpoint(data_dir, variant, seed)
    if ref is not None:
        before = os.environ.get("PAPERLAB_DATA_DIR")
        os.environ["PAPERLAB_DATA_DIR"] = str(data_dir)
        try:
            return runs.load_model(ref), str(ref)
        finally:
            if before is None:
                os.environ.pop("PAPERLAB_DATA_DIR", None)
            else:
                os.environ["PAPERLAB_DATA_DIR"] = before
    from assets.common.params import parse
    from assets.common.pfn.train import TrainConfig, train
    from assets.limix import data as D
    from assets.limix.model import task_loss
    from assets.limix.params import LimiXParams
    from resources.profiles import load_params

    p = parse(LimiXParams, load_params(SLUG, "smoke"), f"{SLUG}.smoke")
    model = runs.build_model(p, variant, 0)
    train(model, D.prior_stream(runs.prior(p), 0, "cli", p.train.tasks_per_step), task_loss,
          TrainConfig(steps=steps, lr=p.train.lr, warmup_steps=min(p.train.warmup_steps, max(0, steps - 1))))
    return model.eval(), f"a tiny {variant} trained for {steps} steps (no checkpoint under {data_dir / SLUG})"


@run_cli
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m assets.limix.cli", description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", required=True, help="CSV of context rows with the target column")
    parser.add_argument("--test", required=True, help="CSV of query rows (the target column, if any, is ignored)")
    parser.add_argument("--target", required=True)
    parser.add_argument("--out", default=None, help="write the probabilities CSV here (default: stdout)")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--variant", default="rabel_snf")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--steps", type=int, default=50, help="steps of the tiny model trained when no checkpoint")
    args = parser.parse_args(argv)
    check_range("--steps", args.steps, 1)
    train_rows = read_csv(args.train, required=[args.target], max_rows=MAX_ROWS)
    test_rows = read_csv(args.test, max_rows=MAX_ROWS)
    features = [c for c in train_rows[0] if c != args.target]
    missing = [c for c in features if c not in test_rows[0]]
    if missing:
        raise InputError(f"{args.test}: missing feature column(s) {', '.join(missing)}")
    if not features:
        raise InputError(f"{args.train}: no feature columns besides the target {args.target!r}")
    labels = [r[args.target].strip() for r in train_rows]
    if any(v == "" for v in labels):
        raise InputError(f"{args.train}: empty target cells in column {args.target!r}")
    classes = sorted(set(labels))
    if len(classes) > MAX_CLASSES:
        raise InputError(f"{args.train}: target {args.target!r} has {len(classes)} classes; at most {MAX_CLASSES}")
    if len(classes) < 2:
        raise InputError(f"{args.train}: target {args.target!r} has one class ({classes[0]!r}) in the context rows")
    xs, xq = encode(train_rows, test_rows, features, args.train, args.test)
    from resources.artifacts import data_root

    data_dir = Path(args.data_dir) if args.data_dir else data_root()
    from assets.limix.params import MAIN_VARIANTS

    if args.variant not in MAIN_VARIANTS:
        raise InputError(f"--variant={args.variant!r}: must be one of {', '.join(MAIN_VARIANTS)}")
    import torch

    torch.set_num_threads(1)
    model, source = load_or_train(data_dir, args.variant, args.seed, args.steps)
    if len(features) > model.config.max_features:
        raise InputError(f"{args.train}: {len(features)} feature columns; the checkpoint takes at most "
                         f"{model.config.max_features}")
    from assets.limix.model import predict_proba

    x = torch.from_numpy(np.concatenate([xs, xq])[None].astype(np.float32))
    y = torch.tensor([[classes.index(v) for v in labels]])
    proba = predict_proba(model, x, y, len(xs), len(classes))[0].numpy()
    lines = [",".join(f"p_{c}" for c in classes)] + [",".join(f"{v:.6f}" for v in row) for row in proba]
    text = "\n".join(lines) + "\n"
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    print(f"limix: {len(xq)} rows, {len(classes)} classes, model: {source}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
