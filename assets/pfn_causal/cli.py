"""Bring your own data: E[Y | do(X_S = v)] from observational rows with the pretrained PFN.

    python -m assets.pfn_causal.cli --csv obs.csv --outcome y --do "x1=0.5,x3=-1" [--pwf]

Reads the pretrained checkpoint and the fine-tuning rule of a materialized run (data/
pfn_causal/, or $PAPERLAB_DATA_DIR; --data-dir overrides), checks the input before loading
anything (userdata.py; parameters before the file; a bad input exits with status 2 and one
stderr line {"error": ...} naming the parameter, or the file and the problem: missing, empty,
not UTF-8, not CSV, header only, duplicated or missing columns, NaN / inf / text cells, more
than 10 000 rows), and prints JSON:
the zero-shot estimate (mean, sd), the rule's verdict (score vs threshold: "pwf" when the
query lies outside what pretraining covered), the PWF estimate when --pwf is given (K steps
of point-wise fine-tuning on prior SCMs at this query — never on the user's data), flags.
Values and estimates are in the CSV's units.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from assets.common.inputs import InputError, check_range, read_frame, run_cli
from assets.pfn_causal.userdata import BadInput, padded, parse_do, validate

SLUG = "pfn_causal"
MAX_ROWS = 10_000       # observational rows: every one is a context item of one PFN forward pass


def _params(profile: str):
    from assets.common.params import parse
    from assets.pfn_causal.params import PFNCausalParams
    from resources.profiles import load_params

    return parse(PFNCausalParams, load_params(SLUG, profile), f"{SLUG}.{profile}")


def answer(frame: pd.DataFrame, outcome: str, do: str, values: str | None = None, *, pwf: bool = False,
           profile: str = "cpu", seed: int | None = None, data_dir: str | Path | None = None,
           pwf_steps: int | None = None) -> dict:
    """The CLI's JSON as a dict (raises BadInput before loading any model)."""
    p = _params(profile)
    names, vals = parse_do(do, values)
    query = validate(frame, outcome, names, vals, p.n_covariates)
    return _estimate(query, p, pwf=pwf, seed=seed, data_dir=data_dir, pwf_steps=pwf_steps)


def _estimate(query, p, *, pwf: bool, seed: int | None, data_dir, pwf_steps: int | None) -> dict:
    import torch

    from assets.common.pfn.train import stream_rng
    from assets.pfn_causal import method as ME
    from assets.pfn_causal import model as M
    from assets.pfn_causal import prior as P
    from assets.pfn_causal import runs
    from resources.artifacts import data_root, read_json

    root = Path(data_dir) if data_dir else data_root()
    table_path = root / SLUG / "pretrained.parquet"
    if not table_path.exists():
        raise FileNotFoundError(f"no pretrained checkpoints under {root / SLUG}: materialize the pfn_causal group "
                                "first (python -m jobs.run pfn_causal)")
    table = pd.read_parquet(table_path)
    table = table[table["regime"] == "pretrain"]
    seed = int(table["seed"].min()) if seed is None else int(seed)
    row = table[table["seed"] == seed].iloc[0]
    import os

    before = os.environ.get("PAPERLAB_DATA_DIR")
    os.environ["PAPERLAB_DATA_DIR"] = str(root)
    try:
        model = runs.load_model(row["checkpoint"], p)
        state = {k: v.clone() for k, v in model.state_dict().items()}
    finally:
        if before is None:
            os.environ.pop("PAPERLAB_DATA_DIR", None)
        else:
            os.environ["PAPERLAB_DATA_DIR"] = before
    torch.set_num_threads(1)
    d = p.n_covariates
    x, mask, values = padded(query, d)
    valid = np.ones((1, len(x)), dtype=bool)
    batch = P.make_batch(x[None], query.y[None], valid, mask[None, None], values[None, None])

    def estimate(m) -> dict:
        out = M.predict(m, batch)
        return {"mean": float(out["mean"][0, 0]), "sd": float(np.sqrt(out["var"][0, 0]))}

    result = {"outcome": query.outcome, "do": {c: float(v) for c, v, on in zip(query.columns, query.values,
                                                                                  query.mask) if on},
              "rows": int(len(x)), "seed": seed, "checkpoint": str(row["checkpoint"]),
              "zero_shot": estimate(model), "flags": list(query.flags)}
    # the query in standardised node units (what prior tasks use): v' = (v − x̄) / s on D_obs
    v_std = np.where(mask, batch.q_val[0, 0], 0.0)
    prior = runs.causal_prior(p)
    rule_path = root / SLUG / "finetune_rule.json"
    if rule_path.exists():
        rule = read_json(rule_path)["seeds"].get(str(seed))
        score = float(ME.query_scores(model, prior, mask[None], v_std[None], stream_rng(seed, "cli/rule", 0),
                                      p.rule.scms)[0])
        result["rule"] = {"score": score, "threshold": rule["threshold"],
                          "verdict": "pwf" if score > rule["threshold"] else "zero_shot"}
    else:
        result["rule"] = None
        result["flags"].append("no finetune_rule.json: the rule's verdict is unavailable")
    result["pwf"] = None
    if pwf:
        cols = tuple(int(c) for c in np.flatnonzero(mask))
        spec = P.QuerySpec(size_probs=tuple(p.pi_pre), picks=(cols,), pick_frac=1.0,
                           value_center=tuple(float(v) for v in v_std[list(cols)]), value_sd=p.pwf.value_sd,
                           value_range=p.value_range)
        steps = int(pwf_steps or p.pwf.steps)
        tuned = M.CausalPFN(model.config, state["borders"].numpy() if "borders" in state else None)
        tuned.load_state_dict(state)
        ME.run_training(tuned, prior, spec, runs.finetune_config(p, steps), seed, "cli/pwf", p.batch_size)
        result["pwf"] = {**estimate(tuned), "steps": steps}
    return result


@run_cli(as_json=True)
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m assets.pfn_causal.cli", description=__doc__.split("\n\n")[0])
    parser.add_argument("--csv", required=True, help="observational rows: covariate columns and the outcome")
    parser.add_argument("--outcome", required=True)
    parser.add_argument("--do", required=True, help='"x1=0.5,x3=-1", or column names with --values')
    parser.add_argument("--values", default=None, help='values for --do given as names: "0.5,-1"')
    parser.add_argument("--pwf", action="store_true", help="also fine-tune point-wise (PWF) for this query")
    parser.add_argument("--pwf-steps", type=int, default=None)
    parser.add_argument("--profile", default="cpu", help="parameters of the run whose checkpoints are read")
    parser.add_argument("--seed", type=int, default=None, help="which pretrained seed (default: the first)")
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args(argv)
    if args.pwf_steps is not None:
        check_range("--pwf-steps", args.pwf_steps, 1)
    try:
        parse_do(args.do, args.values)
    except BadInput as err:
        raise InputError(f"--do {args.do!r}: {err}") from None
    frame = read_frame(args.csv, required=(args.outcome,), max_rows=MAX_ROWS)
    try:
        out = answer(frame, args.outcome, args.do, args.values, pwf=args.pwf, profile=args.profile,
                     seed=args.seed, data_dir=args.data_dir, pwf_steps=args.pwf_steps)
    except BadInput as err:
        raise InputError(f"{args.csv}: {err}") from None
    except FileNotFoundError as err:
        raise InputError(str(err)) from None
    print(json.dumps(out, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
