"""LimiX learning-speed probe (a benchmark, not a test): held-out AUC every `--every` steps.

    .venv/bin/python benchmarks/limix_learning_curve.py --variant rabel_snf --schedule cosine --steps 2000

At the cpu size of issue 22 (d = 32, 3 layers, 4 heads, K = 16, 8 tasks a step), one torch
thread. Prints one line per evaluation (step, mean held-out ROC-AUC over --eval-tasks prior
tasks, the loss drop (first vs last 100 steps), seconds per step) and the first steps at which
AUC ≥ 0.65 and at which both AUC ≥ 0.65 and the loss drop ≥ 20 % hold. --schedule cosine:
linear warm-up over --warmup steps then cosine to 0.1 · lr over --steps (the shared
TrainConfig.lr_at); constant: lr throughout.
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch
from sklearn.metrics import roc_auc_score

from assets.common.pfn.train import TrainConfig, relative_loss_drop
from assets.limix import data, model

GATE_AUC, GATE_DROP = 0.65, 0.20


def auc(m: model.LimiX, tasks: list[dict]) -> float:
    scores = []
    for b in tasks:
        n, c = b["n_context"], b["n_classes"]
        p = model.predict_proba(m, b["x"], b["y"][:, :n], n, c).numpy()
        y = b["y"][:, n:].numpy()
        for i in range(len(y)):
            if c == 2:
                scores.append(roc_auc_score(y[i], p[i, :, 1]))
            else:
                scores.append(roc_auc_score(y[i], p[i], multi_class="ovr", labels=list(range(c))))
    return float(np.mean(scores))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--variant", default="rabel_snf")
    ap.add_argument("--schedule", choices=("constant", "cosine"), default="constant")
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--every", type=int, default=100)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--tasks", type=int, default=8)
    ap.add_argument("--eval-tasks", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    torch.set_num_threads(1)
    embedding, arch = args.variant.split("_")
    cfg = data.PriorConfig()
    torch.manual_seed(args.seed)
    m = model.LimiX(model.LimiXConfig(embedding=embedding, arch=arch))
    tc = TrainConfig(steps=args.steps, lr=args.lr, warmup_steps=args.warmup if args.schedule == "cosine" else 0,
                     min_lr_ratio=0.1 if args.schedule == "cosine" else 1.0)
    batches = data.prior_stream(cfg, args.seed, "pretrain", args.tasks)
    val = data.held_out(cfg, 10_000 + args.seed, "val", args.eval_tasks)
    opt = torch.optim.AdamW(m.parameters(), lr=args.lr)
    losses, curve, train_s = [], [], 0.0
    first_auc = first_gate = None
    for t in range(args.steps):
        start = time.perf_counter()
        m.train()
        for g in opt.param_groups:
            g["lr"] = tc.lr_at(t)
        loss = model.task_loss(m, batches(t))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
        train_s += time.perf_counter() - start
        losses.append(float(loss.detach()))
        if (t + 1) % args.every == 0:
            a = auc(m, val)
            drop = relative_loss_drop(losses, 100) if t + 1 >= 200 else float("nan")
            curve.append({"step": t + 1, "auc": round(a, 4), "loss_drop": round(drop, 4)})
            if first_auc is None and a >= GATE_AUC:
                first_auc = t + 1
            if first_gate is None and a >= GATE_AUC and drop >= GATE_DROP:
                first_gate = t + 1
            print(f"{args.variant} {args.schedule} step {t + 1}: auc {a:.3f} loss-drop {drop:.3f} "
                  f"s/step {train_s / (t + 1):.4f}", flush=True)
    result = {"variant": args.variant, "schedule": args.schedule, "seed": args.seed, "steps": args.steps,
              "s_per_step": round(train_s / args.steps, 4), "params": model.count_parameters(m),
              "first_auc_065": first_auc, "first_gate": first_gate, "curve": curve}
    print(json.dumps({k: v for k, v in result.items() if k != "curve"}))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=1)


if __name__ == "__main__":
    main()
