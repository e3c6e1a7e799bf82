"""Seconds per answered query, next to its nMSE, for the four ways pfn_causal answers
E[Y | do(X_S = v)]: zero-shot PFN, PWF (K fine-tuning steps + a forward pass), MSF (its
fine-tuning amortised over every query it answers) and the oracle-graph g-formula — as
ratios to zero-shot, measured in one process on one thread (not a test).

It reads a materialized run (the pretrained checkpoint of the first seed, the eval bank, the
predictions and baseline estimates of that run) and re-times each method:

- zero-shot: one forward pass over every bank query at the largest context size / #queries;
- PWF: K steps (the profile's pwf.steps) for the first target, then its forward pass on
  every bank SCM; per answered query = (fine-tuning + forward) / #SCMs (one query (S*, v*) per
  SCM); the cost of a single target query, K steps + 1 forward, is reported too;
- MSF: the whole MSF schedule (R rounds of loss estimation + fine-tuning) once, then one
  forward pass over the bank; per answered query = (MSF + forward) / #queries;
- g-formula: fit + simulation on the first `--gformula-scms` bank SCMs over all their queries.

nMSE: the run's own predictions (mean over seeds) — zero-shot and MSF on every grid query,
PWF at its targets, the g-formula on every grid query — at the largest context size.
Zero-shot, MSF and PWF seconds per answered query against the g-formula's (the classical
baseline) are rows of results/bench.csv (benchmarks/_bench.py).

Usage: PAPERLAB_DATA_DIR=/path/to/data python benchmarks/pfn_causal_cost.py --profile cpu
       [--out <data>/runs/pfn_causal/cost.json] [--gformula-scms 5]
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from assets.common.params import parse  # noqa: E402
from assets.common.pfn.train import stream_rng  # noqa: E402
from assets.pfn_causal import baselines as BL  # noqa: E402
from assets.pfn_causal import benchmark as B  # noqa: E402
from assets.pfn_causal import method as ME  # noqa: E402
from assets.pfn_causal import runs  # noqa: E402
from assets.pfn_causal.params import PFNCausalParams  # noqa: E402
from benchmarks._bench import record  # noqa: E402
from resources.artifacts import data_root, load_checkpoint, read_json  # noqa: E402
from resources.profiles import load_params  # noqa: E402

SLUG = "pfn_causal"


def _timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--out", default=None)
    parser.add_argument("--gformula-scms", type=int, default=5)
    args = parser.parse_args(argv)

    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(1)
    threadpool_limits(1)
    p = parse(PFNCausalParams, load_params(SLUG, args.profile), f"{SLUG}.{args.profile}")
    root = data_root() / SLUG
    if not (root / "pretrained.parquet").exists():
        raise SystemExit(f"no materialized {SLUG} run under {root}")
    pretrained = pd.read_parquet(root / "pretrained.parquet")
    bank_value = read_json(root / "eval_bank.json")
    state, _ = load_checkpoint(bank_value["bank"])
    arrays = {k: v.numpy() for k, v in state.items()}
    targets = bank_value["targets"]
    seed = int(p.seeds[0])
    row = pretrained[(pretrained["seed"] == seed) & (pretrained["regime"] == "pretrain")].iloc[0]
    model = runs.load_model(row["checkpoint"], p)
    n = max(p.eval.context_sizes)
    n_scms, n_queries = np.asarray(arrays["mu"]).shape
    everything = np.arange(n_queries)
    prior, s = runs.causal_prior(p), runs.stream_seed(lambda *k: 0, seed)

    # zero-shot: a forward pass over the whole bank
    runs.predict_bank(model, arrays, n, everything)                             # warm-up
    _, zs_seconds = _timed(lambda: runs.predict_bank(model, arrays, n, everything))
    zero_shot = zs_seconds / (n_scms * n_queries)

    # PWF for the first target: K steps, then the target query on every bank SCM
    target = targets[0]
    kinds, t_index = np.asarray(arrays["q_kind"]), np.asarray(arrays["q_target"])
    target_queries = np.flatnonzero((kinds == runs.TARGET) & (t_index == 0))
    tuned = runs.load_model(row["checkpoint"], p)
    result, pwf_train = _timed(lambda: ME.run_training(tuned, prior, runs.pwf_spec(p, target),
                                                       runs.finetune_config(p, p.pwf.steps), s, "bench/pwf",
                                                       p.batch_size))
    _, pwf_forward = _timed(lambda: runs.predict_bank(tuned.eval(), arrays, n, target_queries))
    pwf_per_target = pwf_train + pwf_forward / n_scms
    pwf = (pwf_train + pwf_forward) / (n_scms * len(target_queries))

    # MSF: the whole schedule once, amortised over every bank query
    msf_model = runs.load_model(row["checkpoint"], p)
    config = ME.MSFConfig(rounds=p.msf.rounds, steps_per_round=p.msf.steps_per_round, replay=p.msf.replay,
                          diversity=p.msf.diversity, estimate_scms=p.msf.estimate_scms)
    _, msf_train = _timed(lambda: ME.meta_sampling_finetune(msf_model, prior, runs.pre_spec(p), config,
                                                            runs.finetune_config(p, p.msf.steps_per_round), s,
                                                            "bench/msf", p.batch_size))
    _, msf_forward = _timed(lambda: runs.predict_bank(msf_model.eval(), arrays, n, everything))
    msf = (msf_train + msf_forward) / (n_scms * n_queries)

    # g-formula on the first SCMs
    b = p.baselines
    hgb = BL.HGBConfig(max_iter=b.max_iter, learning_rate=b.learning_rate, max_leaf_nodes=b.max_leaf_nodes,
                       min_samples_leaf=b.min_samples_leaf)
    g_seconds, k = 0.0, min(args.gformula_scms, n_scms)
    for i in range(k):
        parents, y_parents, order = BL.column_graph(np.asarray(arrays["scm.adjacency"])[i].astype(bool),
                                                    np.asarray(arrays["perm"])[i])
        _, sec = _timed(lambda i=i, parents=parents, y_parents=y_parents, order=order: BL.g_formula(
            np.asarray(arrays["x"])[i, :n], np.asarray(arrays["y"])[i, :n], parents, y_parents, order,
            np.asarray(arrays["q_mask"])[i], np.asarray(arrays["q_val"])[i], b.g_formula_draws,
            stream_rng(0, "bench/g", i), hgb))
        g_seconds += sec
    g_formula = g_seconds / (k * n_queries)

    # nMSE of the run's own estimates
    bank = runs.bank_frame(arrays, targets).rename(columns={"target": "target_y"})
    seconds = {"zero_shot": zero_shot, "pwf": pwf, "msf": msf, "g_formula": g_formula}
    nmse = _nmse(root, bank, n) if (root / "predictions.parquet").exists() else None
    out = {"profile": args.profile, "platform": platform.platform(), "threads": 1, "context_size": n,
           "bank": {"scms": int(n_scms), "queries_per_scm": int(n_queries)},
           "pwf_steps": p.pwf.steps, "msf_steps": p.msf.rounds * p.msf.steps_per_round,
           "seconds_per_query": seconds, "ratio_to_zero_shot": {k: v / zero_shot for k, v in seconds.items()},
           "pwf_seconds_per_target_query": pwf_per_target, "pwf_train_seconds": pwf_train,
           "pwf_ms_per_step": 1e3 * pwf_train / max(1, result.steps), "msf_train_seconds": msf_train,
           "nmse": nmse}
    text = json.dumps(out, indent=1, sort_keys=True)
    print(text)
    path = Path(args.out) if args.out else data_root() / "runs" / SLUG / "cost.json"     # a run record, not DVC
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")
    for method in ("zero_shot", "msf", "pwf"):
        record("pfn_causal_cost", f"s_per_query@{method}_vs_g_formula", seconds[method], seconds["g_formula"], "s",
               "lower")
    return 0


def _nmse(root: Path, bank: pd.DataFrame, n: int) -> dict:
    """nMSE of the run's own estimates at context size n (needs the run's predictions)."""
    err = B.errors(pd.read_parquet(root / "predictions.parquet"), bank)
    base = B.errors(pd.read_parquet(root / "baseline_estimates.parquet"), bank)
    grid = err[(err["kind"] == "grid") & (err["n"] == n)]
    nmse = {"zero_shot": float(grid[grid["method"] == "zero_shot"]["se2"].mean()),
            "msf": float(grid[grid["method"] == "msf"]["se2"].mean()),
            "pwf_at_targets": float(err[(err["method"] == "pwf") & (err["kind"] == "target") & (err["n"] == n)
                                        & (err["target"] == err["target_y"])]["se2"].mean()),
            "zero_shot_at_targets": float(err[(err["method"] == "zero_shot") & (err["kind"] == "target")
                                              & (err["n"] == n)]["se2"].mean()),
            "g_formula": float(base[(base["method"] == "g_formula") & (base["kind"] == "grid")
                                    & (base["n"] == n)]["se2"].mean())}
    return nmse


if __name__ == "__main__":
    sys.exit(main())

