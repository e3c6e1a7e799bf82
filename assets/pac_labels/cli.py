"""Command line: PAC-label your own CSV.

    python -m assets.pac_labels.cli --csv in.csv --out out.csv --epsilon 0.05 --alpha 0.05 \
        --label-col Y --pred-col Yhat --conf-col confidence --loss zero_one --ci wsr --num-draws 500

The CSV needs a label column (the expert labels; only the entries PAC labeling buys are read),
an AI label column and a confidence column in [0, 1]. Writes the table with pac_label,
provenance (ai / expert_sampled / expert_threshold) and uncertainty columns, and prints a JSON
summary (also written to --summary when given). Bad input exits with status 2 and one stderr
line naming the parameter, or the file and the column and rows (missing, empty, not UTF-8, not
CSV, header only, a missing or duplicated column, NaN / out-of-range confidences). Parameters
are checked before the file is read.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

from assets.common.inputs import InputError, check_range, read_frame, run_cli
from assets.pac_labels import method as M
from assets.pac_labels.data import TableSpec
from assets.pac_labels.pipeline import label_table


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m assets.pac_labels.cli", description=__doc__.split("\n\n")[0])
    p.add_argument("--csv", required=True, type=Path, help="input table")
    p.add_argument("--out", required=True, type=Path, help="output table (CSV)")
    p.add_argument("--epsilon", type=float, default=0.05, help="target error ε in (0, 1)")
    p.add_argument("--alpha", type=float, default=0.05, help="failure probability α in (0, 1)")
    p.add_argument("--label-col", default="Y")
    p.add_argument("--pred-col", default="Yhat")
    p.add_argument("--conf-col", default="confidence")
    p.add_argument("--loss", choices=M.LOSSES, default="zero_one")
    p.add_argument("--ci", choices=("wsr", "clt"), default="wsr",
                   help="wsr: non-asymptotic betting bound (default); clt: asymptotic")
    p.add_argument("--num-draws", type=int, default=500, help="K random draws (with replacement) ≤ rows")
    p.add_argument("--labels", default=None, help="comma-separated label space (default: values of --label-col)")
    p.add_argument("--label-range", type=float, nargs=2, default=None, metavar=("LO", "HI"),
                   help="range of the labels (squared loss with --ci wsr)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random draws")
    p.add_argument("--tie-break-seed", type=int, default=0)
    p.add_argument("--wsr-grid-size", type=int, default=100_000)
    p.add_argument("--summary", type=Path, default=None, help="write the JSON summary here too")
    return p


def check_params(args) -> None:
    """ε, α in (0, 1), K ≥ 1, a grid of ≥ 2 points, LO < HI: before any data is read."""
    check_range("--epsilon", args.epsilon, 0, 1, lo_open=True, hi_open=True)
    check_range("--alpha", args.alpha, 0, 1, lo_open=True, hi_open=True)
    check_range("--num-draws", args.num_draws, 1)
    check_range("--wsr-grid-size", args.wsr_grid_size, 2)
    if args.label_range:
        lo, hi = (check_range("--label-range", v) for v in args.label_range)
        if not lo < hi:
            raise InputError(f"--label-range {lo:g} {hi:g}: LO must be < HI")


@run_cli
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    check_params(args)
    frame = read_frame(args.csv, required=(args.label_col, args.pred_col, args.conf_col))
    labels = None
    if args.labels:
        raw = [v.strip() for v in args.labels.split(",")]
        labels = tuple(raw)
        # match the CSV's dtype: labels parsed as numbers when the column is numeric
        if args.label_col in frame and pd.api.types.is_numeric_dtype(frame[args.label_col]):
            labels = tuple(pd.to_numeric(pd.Series(raw)).tolist())
    spec = TableSpec(label_col=args.label_col, pred_col=args.pred_col, conf_col=args.conf_col,
                     loss=args.loss, labels=labels)
    config = M.PACConfig(epsilon=args.epsilon, alpha=args.alpha, num_draws=args.num_draws, ci=args.ci,
                         loss=args.loss, label_range=tuple(args.label_range) if args.label_range else None,
                         wsr_grid_size=args.wsr_grid_size)
    try:
        out, summary = label_table(frame, spec, config, seed=args.seed, tie_break_seed=args.tie_break_seed)
    except M.InputError as err:
        raise InputError(f"{args.csv}: {err}") from None
    args.out.parent.mkdir(parents=True, exist_ok=True)
    out.to_csv(args.out, index=False)
    text = json.dumps(summary, indent=1, sort_keys=True, ensure_ascii=False)
    if args.summary:
        args.summary.write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
