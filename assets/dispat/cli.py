"""Bring your own table: fit DiSPaT on normal rows, then score new rows — no Dagster.

    python -m assets.dispat.cli fit --csv normal.csv --model out/ [--text-columns description] [--profile cpu]
    python -m assets.dispat.cli score --csv new.csv --model out/ --alpha 0.05 [--out scores.csv]

`fit` holds out 20 % of the normal rows for validation, fits the schema, the BPE and θ0 (SFT),
runs the self-play rounds of the profile's parameters (params.yaml `dispat`) and stores the
model with the validation scores. `score` checks the new table against the fitted schema (a
clear error naming the column and row), scores every row (mean over the profile's column
orders of value-span NLL), flags rows above the (1 − α) quantile of the validation scores and
writes per-column attributions (span NLL).

Bad input exits with status 2 and one stderr line naming the parameter, or the file and the
problem: missing, empty, not UTF-8, not CSV, header only, duplicated columns, a --text-columns
column that is absent, < 10 rows (fit), NaN / inf / text in a numeric column at row N, columns
that differ from the fitted schema (score). --alpha is checked before any file is read.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from assets.common.inputs import InputError, check_finite, check_range, read_frame, run_cli
from assets.dispat import data as D
from assets.dispat import serialize as S
from assets.dispat.params import DispatParams


def _params(profile: str) -> DispatParams:
    from assets.common.params import parse
    from resources.profiles import load_params

    return parse(DispatParams, load_params("dispat", profile), f"dispat.{profile}")


def fit(csv: Path, model_dir: Path, text_columns: tuple[str, ...], profile: str, seed: int = 0) -> dict:
    import torch

    from assets.dispat.lm import Optim, TokenRows, build_model, sample_rows, score_rows, self_play, train_sft
    from assets.dispat.runs import negatives

    table = read_frame(csv, required=text_columns)
    if len(table) < 10:
        raise InputError(f"{csv}: need ≥ 10 normal rows, got {len(table)}")
    check_finite(table, [c for c in table.columns if pd.api.types.is_numeric_dtype(table[c])], csv)
    p = _params(profile)
    torch.set_num_threads(p.torch_threads)
    table["label"], table["anomaly_type"] = 0, "normal"
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(table))
    n_val = max(5, len(table) // 5)
    train, val = table.iloc[order[n_val:]], table.iloc[order[:n_val]]
    s = p.serialisation
    schema = D.fit_schema(train, text_columns, s.max_words, significant=s.significant, max_decimals=s.max_decimals)
    D.validate_table(val, schema, f"{csv} (validation rows)")
    train_rows, val_rows = S.format_rows(train, schema), S.format_rows(val, schema)
    vocab = S.fit_vocab(train_rows, schema, s.vocab_size)
    S.encode_rows(train_rows + val_rows, S.permutations(len(table), len(schema.names), rng), vocab, p.model.context)
    rows, val_tr = TokenRows(train_rows, vocab), TokenRows(val_rows, vocab)
    torch.manual_seed(seed)
    model = build_model(vocab.size, p.model.d_model, p.model.n_heads, p.model.n_layers, p.model.context)
    train_sft(model, rows, p.train.sft_steps, p.train.batch_size,
              Optim(p.train.lr, p.train.warmup, p.train.grad_clip, p.train.weight_decay), rng)
    neg = negatives(train_rows, schema)
    n_gen = p.self_play.n_gen or len(train_rows)
    _, ids = sample_rows(model, vocab, rows, n_gen, rng, neg)
    from assets.dispat.lm import encode_sampled

    sp = p.self_play
    final, records, _ = self_play(model, rows, val_tr, vocab, encode_sampled(ids, vocab), f=sp.f, beta=sp.beta,
                                  gamma=sp.gamma, rounds=sp.rounds, steps=sp.steps, batch=p.train.batch_size,
                                  n_gen=n_gen, o=Optim(p.train.continue_lr, p.train.warmup, p.train.grad_clip,
                                                       p.train.weight_decay),
                                  max_val_rise=sp.max_val_rise, negatives=neg, rng=rng, val_seed=seed,
                                  renormalise=sp.renormalise)
    val_scores, _ = score_rows(final, val_tr, p.n_permutations, seed)
    model_dir.mkdir(parents=True, exist_ok=True)
    torch.save(final.state_dict(), model_dir / "model.pt")
    (model_dir / "vocab.json").write_text(vocab.to_json())
    meta = {"profile": profile, "seed": seed, "val_scores": [float(v) for v in val_scores], "rounds": records,
            "train_rows": len(train_rows), "val_rows": len(val_rows)}
    (model_dir / "meta.json").write_text(json.dumps(meta, indent=1, default=float))
    return meta


def score(csv: Path, model_dir: Path, alpha: float, out: Path | None) -> pd.DataFrame:
    import torch

    from assets.dispat.lm import TokenRows, build_model, score_rows
    from assets.dispat.method import calibrated_threshold

    check_range("--alpha", alpha, 0, 1, lo_open=True, hi_open=True)
    table = read_frame(csv)
    for name in ("meta.json", "vocab.json", "model.pt"):
        if not (model_dir / name).exists():
            raise InputError(f"{model_dir}: no fitted model ({name} is missing; run `fit` first)")
    meta = json.loads((model_dir / "meta.json").read_text())
    p = _params(meta["profile"])
    torch.set_num_threads(p.torch_threads)
    vocab = S.Vocab.from_json((model_dir / "vocab.json").read_text())
    D.validate_table(table, vocab.schema, str(csv))
    rows = S.format_rows(table, vocab.schema)
    S.encode_rows(rows, S.permutations(len(rows), len(vocab.schema.names), np.random.default_rng(0)), vocab,
                  p.model.context)
    model = build_model(vocab.size, p.model.d_model, p.model.n_heads, p.model.n_layers, p.model.context)
    model.load_state_dict(torch.load(model_dir / "model.pt", map_location="cpu", weights_only=True))
    model.eval()
    scores, attr = score_rows(model, TokenRows(rows, vocab), p.n_permutations, meta["seed"])
    threshold = calibrated_threshold(np.asarray(meta["val_scores"]), alpha)
    frame = pd.DataFrame({"row": np.arange(len(rows)), "score": scores, "flag": scores > threshold,
                          "threshold": threshold})
    for i, name in enumerate(vocab.schema.names):
        frame[f"attr_{name}"] = attr[:, i]
    if out is not None:
        frame.to_csv(out, index=False)
    return frame


@run_cli
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m assets.dispat.cli", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    f = sub.add_parser("fit", help="fit on a CSV of normal rows")
    f.add_argument("--csv", type=Path, required=True)
    f.add_argument("--model", type=Path, default=Path("dispat_model"))
    f.add_argument("--text-columns", nargs="*", default=[])
    f.add_argument("--profile", default="cpu", choices=["smoke", "cpu", "gpu"])
    f.add_argument("--seed", type=int, default=0)
    s = sub.add_parser("score", help="score a CSV of new rows")
    s.add_argument("--csv", type=Path, required=True)
    s.add_argument("--model", type=Path, default=Path("dispat_model"))
    s.add_argument("--alpha", type=float, default=0.05)
    s.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.command == "score":
        check_range("--alpha", args.alpha, 0, 1, lo_open=True, hi_open=True)
    try:
        if args.command == "fit":
            meta = fit(args.csv, args.model, tuple(args.text_columns), args.profile, args.seed)
            print(f"fitted on {meta['train_rows']} rows ({meta['val_rows']} validation); model in {args.model}")
        else:
            frame = score(args.csv, args.model, args.alpha, args.out)
            print(frame.to_csv(index=False) if args.out is None else
                  f"{int(frame['flag'].sum())}/{len(frame)} rows flagged; written to {args.out}")
    except D.TableError as error:
        raise InputError(str(error)) from None
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
