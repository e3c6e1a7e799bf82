"""Ablation of MSF's acquisition signal (not a test, not part of the asset group).

MSF as built (the issue's reading) ranks the 15 subsets by the pretrained model's mean NLL of
single draws y ~ M_do on fresh prior SCMs. That NLL carries the outcome's irreducible spread,
which is largest when few covariates are clamped, so the ranking can favour |S| = 1 subsets
whatever the model's error. This script re-runs MSF from a materialized run's pretrained
checkpoint with the same schedule, streams, replay and budget but acquisition "nmse": the
error of the predicted mean against Monte-Carlo truth on the same fresh prior SCMs (never the
eval bank). It then scores, on the run's eval bank (grid queries, largest n), zero-shot, the
run's MSF and random-subset checkpoints and the variant: worst-subset nMSE, mean over the
subsets, covered subsets — the three parts of the msf_uniform claim.

Usage: PAPERLAB_DATA_DIR=/path/to/data python benchmarks/pfn_causal_msf_ablation.py --seeds 0
       [--profile cpu] [--diversity 0.03] [--out <data>/runs/pfn_causal/msf_ablation.json]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from assets.common.params import parse  # noqa: E402
from assets.pfn_causal import benchmark as B  # noqa: E402
from assets.pfn_causal import method as ME  # noqa: E402
from assets.pfn_causal import runs  # noqa: E402
from assets.pfn_causal.params import PFNCausalParams  # noqa: E402
from resources.artifacts import data_root, load_checkpoint, read_json  # noqa: E402
from resources.profiles import load_params  # noqa: E402

SLUG = "pfn_causal"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--diversity", type=float, default=0.03,
                        help="Hamming bonus on the nMSE scale (MSF's 0.25 is on the NLL scale, ≈ 10 × larger)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)

    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(1)
    threadpool_limits(1)
    p = parse(PFNCausalParams, load_params(SLUG, args.profile), f"{SLUG}.{args.profile}")
    root = data_root() / SLUG
    pretrained = pd.read_parquet(root / "pretrained.parquet")
    bank_value = read_json(root / "eval_bank.json")
    state, _ = load_checkpoint(bank_value["bank"])
    arrays = {k: v.numpy() for k, v in state.items()}
    bank = runs.bank_frame(arrays, bank_value["targets"]).rename(columns={"target": "target_y"})
    n = max(p.eval.context_sizes)
    grid = np.flatnonzero(np.asarray(arrays["q_kind"]) == runs.GRID)
    prior = runs.causal_prior(p)
    stream_seeds = read_json(root / "prior_config.json")["stream_seeds"]
    out = {"profile": args.profile, "diversity": args.diversity, "seeds": {}}
    for seed in (int(s) for s in args.seeds.split(",")):
        s = int(stream_seeds[str(seed)])
        ref = pretrained[(pretrained["seed"] == seed) & (pretrained["regime"] == "pretrain")].iloc[0]["checkpoint"]
        model = runs.load_model(ref, p)
        config = ME.MSFConfig(rounds=p.msf.rounds, steps_per_round=p.msf.steps_per_round, replay=p.msf.replay,
                              diversity=args.diversity, estimate_scms=p.msf.estimate_scms, acquisition="nmse")
        start = time.perf_counter()
        trace, _, _ = ME.meta_sampling_finetune(model, prior, runs.pre_spec(p), config,
                                                runs.finetune_config(p, p.msf.steps_per_round), s, "msf",
                                                p.batch_size)
        seconds = time.perf_counter() - start
        models = {"zero_shot": runs.load_model(ref, p), "msf_nmse": model.eval()}
        for name in ("msf", "random_ft"):
            path = root / "checkpoints" / f"{name}_s{seed}.pt"
            if path.exists():
                models[name] = runs.load_model(str(path.relative_to(data_root())), p)
        summary = {}
        for name, m in models.items():
            pred = runs.predict_bank(m, arrays, n, grid)
            frame = pd.DataFrame({"seed": seed, "method": name, "target": "", "n": n,
                                  "scm": np.repeat(np.arange(pred["mean"].shape[0]), len(grid)),
                                  "query": np.tile(grid, pred["mean"].shape[0]), "mu_hat": pred["mean"].ravel()})
            per = B.errors(frame, bank).groupby(["subset", "size"])["se2"].mean().reset_index()
            summary[name] = {"worst": float(per["se2"].max()), "worst_subset": str(per.loc[per["se2"].idxmax(),
                                                                                         "subset"]),
                             "mean": float(per["se2"].mean()),
                             "covered": float(per[per["size"] <= 2]["se2"].mean()),
                             "uncovered": float(per[per["size"] >= 3]["se2"].mean())}
        out["seeds"][str(seed)] = {"picks": [r["subset"] for r in trace if r["picked"]], "train_seconds": seconds,
                                   "bank": summary}
        print(json.dumps({seed: out["seeds"][str(seed)]}, indent=1), flush=True)
    path = Path(args.out) if args.out else data_root() / "runs" / SLUG / "msf_ablation.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
