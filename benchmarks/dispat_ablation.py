"""Ablation of DiSPaT's self-play on the outputs of a finished dispat run (not a test).

From each cell's θ0 and round-0 pseudo-anomalies of the run, re-run the T self-play rounds with
one change at a time and score the same test rows with the same column orders:

- default            the profile's f, β, γ (reproduces the run's `dispat` AUROC);
- keep_all           every round kept (no 2 % validation-NLL acceptance rule): the self-play
                     policy itself;
- keep_all_gamma0    and γ = 0: the f-divergence term alone;
- keep_all_beta1     and β = 1 (the ratio's optimum is then the data distribution itself);
- data_as_samples    every round kept, the samples replaced by train rows (the contrast removed:
                     the f term is minimised at u = 0, so only γ·SFT moves the policy).

    PAPERLAB_DATA_DIR=/tmp/pnew/dispat/data .venv/bin/python -m benchmarks.dispat_ablation \
        [--datasets synthetic_transactions fair] [--seeds 0] [--workers 2]
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

VARIANTS = ("default", "keep_all", "keep_all_gamma0", "keep_all_beta1", "data_as_samples")


def ablation_job(job: dict) -> dict:
    import torch

    torch.set_num_threads(1)
    from sklearn.metrics import roc_auc_score

    from assets.dispat import serialize as S
    from assets.dispat.lm import TokenRows, encode_sampled, score_rows, self_play

    p: DispatParams = job["params"]
    sp = p.self_play
    if job["variant"] != "default":
        sp = dataclasses.replace(sp, max_val_rise=float("inf"))
    if job["variant"] == "keep_all_gamma0":
        sp = dataclasses.replace(sp, gamma=0.0)
    elif job["variant"] == "keep_all_beta1":
        sp = dataclasses.replace(sp, beta=1.0)
    vocab = S.Vocab.from_json(job["vocab"])
    rows, val = TokenRows(job["train"], vocab), TokenRows(job["val"], vocab)
    theta0 = runs._model(p, vocab, runs._load_state(job["state"]))
    if job["variant"] == "data_as_samples":
        rng = np.random.default_rng(0)
        round0 = rows.encode(np.arange(len(rows)), S.permutations(len(rows), len(vocab.schema.names), rng))
    else:
        round0 = encode_sampled(job["round0_ids"], vocab)
    started = time.perf_counter()
    model, records, _ = self_play(theta0, rows, val, vocab, round0, f=sp.f, beta=sp.beta, gamma=sp.gamma,
                                  rounds=sp.rounds if job["variant"] != "data_as_samples" else 1,
                                  steps=sp.steps * (1 if job["variant"] != "data_as_samples" else sp.rounds),
                                  batch=p.train.batch_size, n_gen=job["n_gen"], o=runs._optim(p, p.train.continue_lr),
                                  max_val_rise=sp.max_val_rise, negatives=runs.negatives(job["train"], vocab.schema),
                                  rng=np.random.default_rng(job["stream_seed"]), val_seed=job["val_seed"])
    scores, _ = score_rows(model, TokenRows(job["val"] + job["test"], vocab), p.n_permutations, job["perm_seed"])
    test = scores[len(job["val"]):]
    return {"auroc": float(roc_auc_score(job["labels"], test)), "accepted": sum(r["accepted"] for r in records),
            "val_nll": records[-1]["val_nll_after"], "seconds": time.perf_counter() - started}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--datasets", nargs="+", default=["synthetic_transactions", "fair"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--profile", default="cpu")
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
    pseudo = pd.read_parquet(root / "pseudo_anomalies.parquet")
    th = pd.read_parquet(root / "thresholds.parquet")
    jobs = []
    for d in args.datasets:
        for s in args.seeds:
            inputs = runs._cell_inputs(corpus, tok, d, s)
            ids, _ = runs._round0(pseudo, d, s)
            cell = runs.corpus_cell(corpus, d, s)
            for v in args.variants:
                jobs.append({"params": p, "variant": v, "dataset": d, "seed": s, **inputs,
                             "state": str(resolve_data_ref(runs._ref(sft, d, s))), "round0_ids": ids,
                             "n_gen": runs.n_gen(p, len(inputs["train"])), "labels": cell["labels"],
                             "stream_seed": seed_for("self_play", d, s, p.self_play.f),
                             "val_seed": seed_for("val_order", d, s), "perm_seed": seed_for("score_orders", d, s)})
    print("| dataset | seed | variant | test AUROC | run's dispat | run's matched | rounds kept | val NLL | s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for job, out in zip(jobs, spawn_imap(ablation_job, jobs, args.workers)):
        ref = th[(th.dataset == job["dataset"]) & (th.seed == job["seed"])].set_index("method")["auroc"]
        print(f"| {job['dataset']} | {job['seed']} | {job['variant']} | {out['auroc']:.4f} | {ref['dispat']:.4f} | "
              f"{ref['anollm_matched']:.4f} | {out['accepted']} | {out['val_nll']:.3f} | {out['seconds']:.0f} |",
              flush=True)


if __name__ == "__main__":
    main()
