"""Issue 48: is the unconstrained log-ratio on constrained samples why every self-play round was rejected?

On the outputs of a finished dispat run (its θ0 checkpoints and round-0 pseudo-anomalies), re-run the
T self-play rounds of each cell twice, with the run's seeds, f, β, γ, K and keep rule:

- renormalised     the log-ratio over the constrained decoder's allowed set (the default objective; on
                   the CPU it reproduces the run's policy_dispat rows);
- unconstrained    the objective before issue 48: r = p_θ/p_θt with unconstrained log-probabilities while
                   the samples come from the masked decoder;
- no_contrast      (optional control, with --rounds 1) renormalised, round 0's samples replaced by train rows
                   under fresh column orders: the f-term's expected gradient at θt is then 0.

Per round: validation NLL before → after (relative change), kept or not (≤ max_val_rise), and the mean
log P(allowed) per value token of the round's samples under θt and under the round's θ.

    DAGSTER_HOME=$PWD/.dagster PYTHONPATH=. python -m benchmarks.dispat_renorm_ablation \
        [--datasets synthetic_transactions fair] [--seeds 0 1 2] [--workers 2] [--profile cpu]
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import time

import numpy as np
import pandas as pd

from assets.common.parallel import spawn_imap
from assets.common.params import parse
from assets.dispat import runs
from assets.dispat.params import DispatParams
from resources.artifacts import data_root, resolve_data_ref
from resources.profiles import load_params

ARMS = {"renormalised": True, "unconstrained": False}
# optional control: renormalised, with the round's samples replaced by train rows under fresh column orders
# (no contrast: the f-term's expected gradient at θt is 0, so what moves θ is γ·SFT and the estimator's noise)
CONTROLS = {"no_contrast": True}


def arm_job(job: dict) -> dict:
    import torch

    torch.set_num_threads(1)
    from assets.dispat import serialize as S
    from assets.dispat.lm import TokenRows, encode_sampled, self_play

    p: DispatParams = job["params"]
    sp = dataclasses.replace(p.self_play, renormalise={**ARMS, **CONTROLS}[job["arm"]])
    vocab = S.Vocab.from_json(job["vocab"])
    rows, val = TokenRows(job["train"], vocab), TokenRows(job["val"], vocab)
    theta0 = runs._model(p, vocab, runs._load_state(job["state"]))
    ids = job["round0_ids"]
    if ids is None:                 # the run's pseudo_anomalies, drawn as that asset draws them
        from assets.dispat.lm import sample_rows

        parsed, all_ids = sample_rows(theta0, vocab, rows, job["n_gen"], np.random.default_rng(job["round0_seed"]),
                                      runs.negatives(job["train"], vocab.schema))
        ids = [t for t, x in zip(all_ids, parsed) if x is not None]
    round0 = encode_sampled(ids, vocab)
    if job["arm"] == "no_contrast":
        rng = np.random.default_rng(job["round0_seed"])
        pick = rng.integers(0, len(rows), size=len(ids))
        round0 = rows.encode(pick, S.permutations(len(pick), len(vocab.schema.names), rng))
    started = time.perf_counter()
    _, records, _ = self_play(theta0, rows, val, vocab, round0, f=sp.f,
                              beta=sp.beta, gamma=sp.gamma, rounds=job["rounds"] or sp.rounds, steps=sp.steps,
                              batch=p.train.batch_size, n_gen=job["n_gen"], o=runs._optim(p, p.train.continue_lr),
                              max_val_rise=sp.max_val_rise, negatives=runs.negatives(job["train"], vocab.schema),
                              rng=np.random.default_rng(job["stream_seed"]), val_seed=job["val_seed"],
                              renormalise=sp.renormalise)
    return {"records": records, "seconds": time.perf_counter() - started}


def _line(dataset: str, seed: int, arm: str, rec: dict) -> str:
    change = rec["val_nll_after"] / rec["val_nll_before"] - 1
    q_change = rec.get("val_nll_q_after", np.nan) / rec.get("val_nll_q_before", np.nan) - 1
    seconds = f"{rec['seconds']:.0f}" if "seconds" in rec else ""
    return (f"| {dataset} | {seed} | {arm} | {rec['round']} | "
            f"{rec['val_nll_before']:.3f} → {rec['val_nll_after']:.3f} | {change:+.2%} | "
            f"{'yes' if rec['accepted'] else 'no'} | {q_change:+.2%} | "
            f"{rec['log_p_allowed_before']:.4f} → {rec['log_p_allowed_after']:.4f} | {rec['divergence']:.4f} | "
            f"{seconds} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--datasets", nargs="+", default=["synthetic_transactions", "fair"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=[*ARMS, *CONTROLS])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--out", default="", help="also write the per-round rows here (CSV)")
    parser.add_argument("--rounds", type=int, default=0, help="T (0: the profile's); 1 = round 0 from θ0 only")
    args = parser.parse_args()
    from resources.compute import ComputeResource

    p = parse(DispatParams, load_params("dispat", args.profile), f"dispat.{args.profile}")
    compute = ComputeResource(profile=args.profile)

    def seed_for(*keys):
        return compute.seed_for("dispat", *keys)

    root = data_root() / "dispat"
    corpus = pd.read_parquet(root / "serialized_corpus.parquet")
    tok = json.loads((root / "tokenizer.json").read_text())
    sft = pd.read_parquet(root / "policy_sft.parquet")
    pseudo_path = root / "pseudo_anomalies.parquet"
    pseudo = pd.read_parquet(pseudo_path) if pseudo_path.exists() else None
    jobs = []
    for d in args.datasets:
        for s in args.seeds:
            inputs = runs._cell_inputs(corpus, tok, d, s)
            ids = runs._round0(pseudo, d, s)[0] if pseudo is not None else None
            for arm in args.arms:
                jobs.append({"params": p, "arm": arm, "dataset": d, "seed": s, **inputs, "rounds": args.rounds,
                             "state": str(resolve_data_ref(runs._ref(sft, d, s))), "round0_ids": ids,
                             "round0_seed": seed_for("round0", d, s),
                             "n_gen": runs.n_gen(p, len(inputs["train"])),
                             "stream_seed": seed_for("self_play", d, s, p.self_play.f),
                             "val_seed": seed_for("val_order", d, s)})
    print(f"profile {args.profile}: f {p.self_play.f}, β {p.self_play.beta}, γ {p.self_play.gamma}, "
          f"T {p.self_play.rounds}, K {p.self_play.steps}, keep if val NLL rises ≤ {p.self_play.max_val_rise:.0%}")
    print("| dataset | seed | objective | round | val NLL before → after | change | kept | "
          "constrained val NLL change | log P(allowed) θt → θ | D̂_f | s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    for job, out in zip(jobs, spawn_imap(arm_job, jobs, args.workers)):
        for rec in out["records"]:
            change = rec["val_nll_after"] / rec["val_nll_before"] - 1
            rows.append({"dataset": job["dataset"], "seed": job["seed"], "objective": job["arm"], **rec,
                         "change": change})
            print(_line(job["dataset"], job["seed"], job["arm"], rec), flush=True)
    run_path = root / "policy_dispat.parquet"
    run_rounds = pd.read_parquet(run_path) if run_path.exists() else None   # the run's rounds (default objective)
    for row in rows if run_rounds is not None else []:
        ref = run_rounds[(run_rounds.dataset == row["dataset"]) & (run_rounds.seed == row["seed"])
                         & (run_rounds.f == p.self_play.f) & (run_rounds["round"] == row["round"])]
        if row["objective"] == "renormalised" and len(ref):
            row["same_as_run"] = bool(np.isclose(ref["val_nll_after"].iloc[0], row["val_nll_after"]))
    if "renormalised" not in args.arms and run_rounds is not None:   # the default objective's rows: the run's
        for d in args.datasets:
            for s in args.seeds:
                ref = run_rounds[(run_rounds.dataset == d) & (run_rounds.seed == s)
                                 & (run_rounds.f == p.self_play.f)].sort_values("round")
                for rec in ref.to_dict("records"):
                    change = rec["val_nll_after"] / rec["val_nll_before"] - 1
                    rows.append({**rec, "objective": "renormalised (run)", "change": change})
                    print(_line(d, s, "renormalised (run)", rec), flush=True)
    frame = pd.DataFrame(rows)
    print("\n| dataset | objective | rounds | kept | mean val NLL change | mean constrained change | "
          "mean Δ log P(allowed) |")
    print("|---|---|---|---|---|---|---|")
    frame["d_mass"] = frame["log_p_allowed_after"] - frame["log_p_allowed_before"]
    frame["q_change"] = frame.get("val_nll_q_after", np.nan) / frame.get("val_nll_q_before", np.nan) - 1
    for (d, arm), g in frame.groupby(["dataset", "objective"]):
        print(f"| {d} | {arm} | {len(g)} | {int(g['accepted'].sum())} | {g['change'].mean():+.2%} | "
              f"{g['q_change'].mean():+.2%} | {g['d_mass'].mean():+.4f} |")
    if "same_as_run" in frame:
        print(f"\nrenormalised arm reproduces the run's val NLL: {frame['same_as_run'].dropna().all()}")
    if args.out:
        frame.to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
