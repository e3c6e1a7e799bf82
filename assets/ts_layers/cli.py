"""Bring your own series: layer importance, keep-τ pruning and realignment of a pretrained TSFM.

    python -m assets.ts_layers.cli prune --csv series.csv --column y [--tau 0.25] [--steps N]
        [--depth 16] [--seed 0] [--profile cpu] [--data-dir DIR] [--out model.pt]

Reads the TSFM checkpoint of a materialized run (data/ts_layers/checkpoints, or $PAPERLAB_DATA_DIR;
--data-dir overrides; the deepest depth and first seed of the profile by default), checks the
input before loading any model (a bad input exits with status 2 and a JSON {"error": ...} on
stderr), splits the column chronologically 70/10/20, scores the layers on up to N_c training
windows of the series, keeps the top τ (layer 1 always), realigns the pruned model and continues
the full model for the same steps on the series' training windows, and prints JSON: the
importance per layer, the kept layers, test MSE (RevIN scale) of the full, full-continued and
pruned models, parameter fraction and median latency (batch 1) of full vs pruned.
"""
from __future__ import annotations

import argparse
import json
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from assets.common.inputs import InputError, check_range, read_frame, run_cli
from assets.ts_layers import data as D
from assets.ts_layers import method as M
from assets.ts_layers import runs as R
from assets.ts_layers.params import TSLayersParams

SLUG = "ts_layers"


class BadInput(InputError, ValueError):
    """The user's series cannot be used (the message says why)."""


def read_series(csv: str, column: str, p: TSLayersParams) -> np.ndarray:
    """The column as float64, checked: present, numeric, finite, not constant, long enough for
    ≥ 10 test windows and at least one training window."""
    frame = read_frame(csv, required=(column,))       # missing, empty, not UTF-8, header only, …
    values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)
    bad = np.flatnonzero(~np.isfinite(values))
    if len(bad):
        raise BadInput(f"{csv}: column {column!r} has {len(bad)} NaN/inf or non-numeric values (first at row "
                       f"{int(bad[0])}: {frame[column].iloc[bad[0]]!r})")
    if values.std() == 0:
        raise BadInput(f"{csv}: column {column!r} is constant")
    starts = D.window_starts(len(values), p.lookback, p.horizon, p.patch, p.split, 10 ** 9)
    if len(starts["test"]) < 10 or len(starts["train"]) < 1:
        raise BadInput(f"{csv}: {len(values)} points give {len(starts['train'])} training and "
                       f"{len(starts['test'])} test windows (need ≥ 1 and ≥ 10: look-back {p.lookback}, "
                       f"horizon {p.horizon}, 70/10/20 split)")
    return values


def _params(profile: str) -> TSLayersParams:
    from assets.common.params import parse
    from resources.profiles import load_params

    return parse(TSLayersParams, load_params(SLUG, profile), f"{SLUG}.{profile}")


def prune(values: np.ndarray, p: TSLayersParams, checkpoint: Path, depth: int, tau: float, steps: int,
          out: Path | None, seed: int = 0) -> dict:
    import torch

    from assets.ts_layers.model import compact, forecast_latency_ms

    torch.set_num_threads(max(1, p.torch_threads))
    torch.manual_seed(seed)
    state = torch.load(checkpoint, map_location="cpu", weights_only=True)
    full = R.load_model(p, "tsfm", depth, state)
    starts = D.window_starts(len(values), p.lookback, p.horizon, p.patch, p.split, p.max_test_windows)
    x = values.astype(np.float32)
    train = np.stack([x[s:s + p.lookback + p.patch] for s in starts["train"]])
    test = np.stack([x[s:s + p.lookback + p.horizon] for s in starts["test"]])
    rng = np.random.default_rng(seed)
    calib = train[np.sort(rng.choice(len(train), size=min(len(train), p.importance.calibration_windows),
                                     replace=False))]
    stats = R.layer_statistics(full, calib, p)
    s = M.shift_scores(stats["cka"], p.importance.alpha, p.importance.k_neighbours)
    scores = M.importance(s, stats["a"], p.importance.lam)
    keep = M.select_layers(scores, tau)
    local = replace(p, train=replace(p.train, real_fraction=1.0))
    bundle = {"real_train": train, "synthetic_train": np.zeros((0, p.lookback + p.patch), np.float32)}
    pruned = compact(full, keep)
    continued = R.load_model(p, "tsfm", depth, state)
    for model in (pruned, continued):
        R.train_steps(model, bundle, local, steps, p.realign.lr, seed, max(1, steps // 10))
    mse = {name: float(R.forecast_errors(m, test, p)[0].mean())
           for name, m in (("full", full), ("full_continued", continued), ("pruned", pruned))}
    look = torch.from_numpy(test[:1, :p.lookback])
    latency = {}
    for name, m in (("full", full), ("pruned", pruned)):
        latency[name] = forecast_latency_ms(m, look, p.horizon, p.latency.repeats, warmup=1)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        torch.save(pruned.state_dict(), out)
    return {"points": int(len(values)), "train_windows": int(len(train)), "test_windows": int(len(test)),
            "depth": depth, "tau": tau, "keep": [i + 1 for i in keep],
            "importance": [{"layer": i + 1, "s": float(s[i]), "a": float(stats["a"][i]), "importance": float(v)}
                           for i, v in enumerate(scores)],
            "realign_steps": steps, "test_mse": mse, "param_fraction": pruned.n_parameters() / full.n_parameters(),
            "latency_ms_batch1": latency, "speedup": latency["full"] / latency["pruned"],
            "pruned_checkpoint": str(out) if out is not None else None}


@run_cli(as_json=True)
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m assets.ts_layers.cli")
    sub = parser.add_subparsers(dest="command", required=True)
    cmd = sub.add_parser("prune", help="score, prune and realign a pretrained TSFM on your series")
    cmd.add_argument("--csv", required=True)
    cmd.add_argument("--column", required=True)
    cmd.add_argument("--tau", type=float, default=None)
    cmd.add_argument("--steps", type=int, default=None)
    cmd.add_argument("--depth", type=int, default=None)
    cmd.add_argument("--seed", type=int, default=None)
    cmd.add_argument("--profile", default=os.environ.get("PAPERLAB_PROFILE", "cpu"))
    cmd.add_argument("--data-dir", default=None)
    cmd.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    if args.tau is not None:
        check_range("--tau", args.tau, 0, 1, lo_open=True)
    if args.steps is not None:
        check_range("--steps", args.steps, 0)
    try:
        p = _params(args.profile)
    except (KeyError, ValueError) as err:
        raise InputError(f"--profile {args.profile!r}: {err}") from None
    tau = p.importance.tau if args.tau is None else args.tau
    depth = max(p.depths) if args.depth is None else args.depth
    if depth not in p.depths:
        raise BadInput(f"--depth {depth} was not trained at the {args.profile} profile (depths {list(p.depths)})")
    seed = min(p.seeds) if args.seed is None else args.seed
    values = read_series(args.csv, args.column, p)
    from resources.artifacts import data_root

    root = Path(args.data_dir) if args.data_dir else data_root()
    checkpoint = root / SLUG / "checkpoints" / f"tsfm_L{depth}_seed{seed}.pt"
    if not checkpoint.exists():
        raise BadInput(f"no pretrained checkpoint {checkpoint}: materialize ts_layers at --profile "
                       f"{args.profile} first (python -m jobs.run ts_layers --profile {args.profile})")
    out = Path(args.out) if args.out else None
    result = prune(values, p, checkpoint, depth, tau, p.realign.steps if args.steps is None else args.steps, out, seed)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
