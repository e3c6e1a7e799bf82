"""dispat device check (issue 18, gpu profile): cpu/device parity of the LM work, then its speed on the device.

One script, a few minutes on a GPU machine (nothing here is claimed):
1. parity — one LM (seeded on the CPU, copied to `--device`) on a small synthetic_transactions table: the
   AnoLLM scores (8 orders), the validation NLL, and 3 SFT steps (same numpy batch stream) on the CPU and on
   the device; TF32 off so CUDA matmuls are float32. Sampling cannot match bit for bit (the device has its own
   random stream): its rows must all parse. Fails (exit 1) past the tolerances below.
2. speed — on the device: SFT steps/s at the profile's batch, constrained sampling rows/s (KV cache), AnoLLM
   scoring rows/s, and the seconds of one explicit-critic round (critic fit + K policy steps).

    .venv/bin/python benchmarks/dispat_device_check.py --device cuda --out /tmp/dispat_device.json
    .venv/bin/python benchmarks/dispat_device_check.py --device cpu --tiny      # exercises the code (tests)

The default model is the gpu profile's (8 layers, d = 384); --tiny uses the smoke profile's and small counts.
"""
from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

SCORE_TOL = 1e-3        # max |Δ| of AnoLLM scores (nats, sums over ~30 tokens), relative to max |score|
LOSS_TOL = 1e-3         # relative |Δ| of the SFT losses and the validation NLL


def _table(n_train: int):
    from assets.dispat import data as D
    from assets.dispat import serialize as S
    from assets.dispat.runs import TEXT_COLUMNS

    sizes = D.SplitSizes(n_train, max(8, n_train // 5), max(8, n_train // 5), 0.15)
    rng = np.random.default_rng(0)
    name = "synthetic_transactions"
    fr = D.make_splits(name, D.raw_table(name, sizes, rng), sizes, rng)
    schema = D.fit_schema(fr[fr.split == "train"], TEXT_COLUMNS[name])
    rows = S.format_rows(fr, schema)
    split = list(fr.split)
    pick = lambda s: [r for r, x in zip(rows, split) if x == s]          # noqa: E731
    return pick("train"), pick("val"), pick("test"), S.fit_vocab(pick("train"), schema, 512)


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))      # the repo root, from any directory
    from assets.common import device_check

    args = device_check.arguments(argv)
    torch = device_check.prepare(args.device)
    if torch is None:
        return device_check.NO_DEVICE

    from assets.common.params import parse
    from assets.dispat import lm as L
    from assets.dispat import runs
    from assets.dispat.params import DispatParams
    from resources.profiles import load_params

    p = parse(DispatParams, load_params("dispat", "smoke" if args.tiny else "gpu"), "dispat")
    p = dataclasses.replace(p, critic=dataclasses.replace(p.critic, enabled=True))
    train, val, test, vocab = _table(40 if args.tiny else 600)
    tr, vr, te = L.TokenRows(train, vocab), L.TokenRows(val, vocab), L.TokenRows(test, vocab)
    out: dict = {"device": args.device, "model": dataclasses.asdict(p.model), "rows": len(train)}
    # 1. parity
    cpu = runs._model(p, vocab, init_seed=0)
    dev = runs._model(p, vocab, state=runs._cpu_state(cpu), device=args.device)
    s_cpu, _ = L.score_rows(cpu, te, 8, 0)
    s_dev, _ = L.score_rows(dev, te, 8, 0)
    out["score_max_rel_diff"] = float(np.abs(s_cpu - s_dev).max() / np.abs(s_cpu).max())
    nll = [L.validation_nll(m, vr, 0) for m in (cpu, dev)]
    out["val_nll_rel_diff"] = abs(nll[0] - nll[1]) / abs(nll[0])
    o = L.Optim(p.train.lr, 1, p.train.grad_clip, p.train.weight_decay)
    batch = 4 if args.tiny else p.train.batch_size
    c_cpu = L.train_sft(cpu, tr, 3, batch, o, np.random.default_rng(1))
    c_dev = L.train_sft(dev, tr, 3, batch, o, np.random.default_rng(1))
    out["sft_loss_rel_diff"] = float(np.max(np.abs(np.subtract(c_cpu, c_dev)) / np.abs(c_cpu)))
    neg = runs.negatives(train, vocab.schema)
    parsed, ids = L.sample_rows(dev, vocab, tr, 16 if args.tiny else 256, np.random.default_rng(2), neg)
    out["device_parse_rate"] = float(np.mean([x is not None for x in parsed]))
    ok = (out["score_max_rel_diff"] <= SCORE_TOL and out["val_nll_rel_diff"] <= LOSS_TOL
          and out["sft_loss_rel_diff"] <= LOSS_TOL and out["device_parse_rate"] == 1.0)
    # 2. speed on the device
    sync = device_check.synchronizer(args.device)
    steps = 3 if args.tiny else 50
    started = time.perf_counter()
    L.train_sft(dev, tr, steps, batch, o, np.random.default_rng(3))
    sync()
    out["sft_steps_per_s"] = steps / (time.perf_counter() - started)
    n = 16 if args.tiny else 1024
    started = time.perf_counter()
    L.sample_rows(dev, vocab, tr, n, np.random.default_rng(4), neg)
    out["sampling_rows_per_s"] = n / (time.perf_counter() - started)
    started = time.perf_counter()
    L.score_rows(dev, te, p.n_permutations, 0)
    out["scoring_rows_per_s"] = len(te) / (time.perf_counter() - started)
    crit = p.critic if not args.tiny else dataclasses.replace(p.critic, steps=4, batch=8)
    K = 2 if args.tiny else p.self_play.steps
    ref = runs._model(p, vocab, state=runs._cpu_state(dev), device=args.device)
    started = time.perf_counter()
    curves, _ = L.train_critic_round(dev, ref, tr, L.encode_sampled(ids, vocab), p.self_play.f, p.self_play.beta,
                                     p.self_play.gamma, K, batch, o, np.random.default_rng(5), crit)
    sync()
    out["critic_round_seconds"] = time.perf_counter() - started
    out["critic_round_steps"] = K
    out["critic_divergence"] = float(np.mean(curves["critic"][-max(1, crit.steps // 5):]))
    out["critic_round_finite"] = bool(np.isfinite(curves["loss"]).all())
    ok = ok and out["critic_round_finite"]
    gpu = parse(DispatParams, load_params("dispat", "gpu"), "dispat.gpu")
    runs_n = len(gpu.datasets) * len(gpu.seeds)
    variant_runs = len(gpu.variants.fs) * len(gpu.variants.datasets) * len(gpu.variants.seeds)
    out["projection"] = device_check.projection(
        [(f"SFT step (batch {batch})", 1 / out["sft_steps_per_s"],
          runs_n * (gpu.train.sft_steps + gpu.continuation_steps)),
         (f"self-play round with the critic (critic fit + {K} policy steps)",
          out["critic_round_seconds"] * gpu.self_play.steps / K,
          (runs_n + variant_runs) * gpu.self_play.rounds),
         ("scoring one test row (n_permutations orders)", 1 / out["scoring_rows_per_s"] * gpu.n_permutations
          / p.n_permutations, runs_n * 3 * len(te))],
        note="measured at --tiny sizes; " * args.tiny
        + "SFT + the compute-matched continuation (T·K steps) per dataset × seed; self-play rounds of the main "
          "run and the f-variants; scoring of 3 models per run on a test set the size of this script's; "
          "leaves out sampling rows for the rounds, tabular baselines, C2ST, bootstrap CIs, checkpoint writes")
    out["parity_ok"] = bool(ok)
    return device_check.finish(out, ok, args.out)


if __name__ == "__main__":
    sys.exit(main())
