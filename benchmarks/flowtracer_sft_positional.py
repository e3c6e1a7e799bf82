"""FlowTracer SFT: greedy accuracy against SFT steps, for one positional encoding of the shared
TinyLM (learned absolute embeddings, ALiBi, or both), on RegTrace or ArithChain.

The cpu recipe of params.yaml (4 layers, d = 64, untied, AdamW 1e-3, batch 32, 1,000 steps on
4-op problems first) with only `positional` changed; greedy validation accuracy every
`--every` steps. One thread; run two encodings side by side on two cores.

`--task arithchain` takes the gpu profile's ArithChain data settings (SFT on depth 3–4,
validation on depth 5–6) at the cpu sizes and model; it also prints the greedy accuracy on
unseen depth-3–4 problems (`shallow_accuracy`, from the rl split), i.e. in distribution.

    .venv/bin/python benchmarks/flowtracer_sft_positional.py --positional alibi --steps 3000
    .venv/bin/python benchmarks/flowtracer_sft_positional.py --positional alibi --task arithchain

`--pipeline SEED` replays the cpu pipeline's calibration for one of its SFT seeds (the seed
`sft_steps` derives, e.g. 19764830; its stored `trace_dataset`, snapshots every 50 steps,
stopping at the first one in `sft.band`), so a recipe change reads as calibrated steps that
compare one to one with the stored run's. `--lr-drop-loss X --lr-drop F` multiply the lr by F
from the first snapshot whose mean loss is under X on (an annealing probe; not in the pipeline).
`--answer-weight W` weighs the answer digit's target (the one after `#`) W times the others in
the mean loss, from the start or, with `--answer-weight-loss X`, from the first snapshot whose
mean loss is under X on (`sft.answer_weight`, `sft.answer_weight_loss`; sft_train applies it,
and the printed loss column shows where it switches on):

    .venv/bin/python benchmarks/flowtracer_sft_positional.py --positional alibi --pipeline 19764830 \
        --steps 8000 --lr-drop-loss 0.25 --lr-drop 0.3
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import time

import numpy as np
import torch

from assets.common.params import parse
from assets.flowtracer import policy as P
from assets.flowtracer import runs as R
from assets.flowtracer import tasks
from assets.flowtracer.params import FlowtracerParams
from resources.profiles import load_params


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--positional", default="learned", choices=["learned", "alibi", "learned+alibi"])
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--every", type=int, default=250)
    parser.add_argument("--val", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--d-model", type=int, default=0, help="0: the profile's")
    parser.add_argument("--lr", type=float, default=0.0, help="0: the profile's")
    parser.add_argument("--batch", type=int, default=0, help="0: the profile's")
    parser.add_argument("--weight-decay", type=float, default=0.0)
    parser.add_argument("--beta2", type=float, default=0.0, help="AdamW β2; 0: the profile's")
    parser.add_argument("--curriculum", type=int, default=-1, help="-1: the profile's")
    parser.add_argument("--task", default="regtrace", choices=["regtrace", "arithchain"])
    parser.add_argument("--train", type=int, default=0, help="training problems; 0: the profile's")
    parser.add_argument("--pipeline", type=int, default=0,
                        help="an SFT seed of the stored cpu run: its data, 50-step snapshots, stop in the band")
    parser.add_argument("--lr-drop-loss", type=float, default=0.0, help="0: no lr drop")
    parser.add_argument("--lr-drop", type=float, default=0.3)
    parser.add_argument("--answer-weight", type=float, default=1.0, help="1: the pipeline's plain mean")
    parser.add_argument("--answer-weight-loss", type=float, default=0.0, help="0: the weight from the start")
    parser.add_argument("--out", default="")
    args = parser.parse_args()

    torch.set_num_threads(1)
    p = parse(FlowtracerParams, load_params("flowtracer", "cpu"), "flowtracer.cpu")
    if args.task == "arithchain":
        gpu = parse(FlowtracerParams, load_params("flowtracer", "gpu"), "flowtracer.gpu")
        sizes = {k: getattr(p.data, k) for k in ("train", "val", "test", "rl", "rl_eval")}
        p = dataclasses.replace(p, data=dataclasses.replace(gpu.data, **sizes),
                                model=dataclasses.replace(p.model, context=gpu.model.context))
    if args.train:
        p = dataclasses.replace(p, data=dataclasses.replace(p.data, train=args.train))
    task = tasks.get(p.data.task)
    if args.pipeline:
        import pandas as pd
        frame = pd.read_parquet("data/flowtracer/trace_dataset.parquet")
        args.seed, args.every = args.pipeline, p.sft.snapshot_every
    else:
        frame = R.dataset(p, np.random.default_rng(1234))
    train, val = R.split(frame, "train"), R.split(frame, "val").head(args.val)
    rl = R.split(frame, "rl")
    shallow = rl[rl["n_ops"] <= p.data.max_ops].head(args.val)
    torch.manual_seed(args.seed)
    d_model = args.d_model or p.model.d_model
    model = P.build_model(**{**R.model_config(p), "d_model": d_model, "positional": args.positional}, task=task)
    curve = []
    start = time.perf_counter()
    lr_scale = [1.0]
    schedule = P.learning_rate      # the drop scales the profile's schedule (this process only)
    P.learning_rate = lambda step, lr, warmup, decay, floor=0.1: schedule(step, lr, warmup, decay, floor) * lr_scale[0]

    def snapshot(step: int, loss: float) -> bool:
        acc, _ = P.accuracy(model, list(val["prompt"]), list(val["answer"]), R.max_new(p), task)
        point = {"step": step, "loss": round(loss, 4), "val_accuracy": acc}
        if args.task == "arithchain":
            point["shallow_accuracy"], _ = P.accuracy(model, list(shallow["prompt"]), list(shallow["answer"]),
                                                      R.max_new(p), task)
        curve.append({**point, "seconds": round(time.perf_counter() - start, 1)})
        if args.lr_drop_loss and loss < args.lr_drop_loss and lr_scale[0] == 1.0:
            lr_scale[0] = args.lr_drop
            point["lr_drop"] = args.lr_drop
        in_band = p.sft.band[0] <= acc <= p.sft.band[1]
        if not args.pipeline or step % 250 == 0 or "lr_drop" in point or in_band:
            print(json.dumps({"positional": args.positional, "task": args.task, **curve[-1], **point}), flush=True)
        return bool(args.pipeline) and in_band

    P.sft_train(model, P.sft_examples(train, task), args.steps, args.batch or p.sft.batch_size, args.lr or p.sft.lr,
                p.sft.warmup, p.sft.curriculum if args.curriculum < 0 else args.curriculum, p.data.min_ops,
                p.data.max_ops, np.random.default_rng(args.seed), decay=p.sft.decay, on_snapshot=snapshot,
                snapshot_every=args.every, weight_decay=args.weight_decay,
                answer_weight=args.answer_weight, answer_weight_loss=args.answer_weight_loss,
                answer_after=task.TOKEN_ID["#"],
                beta2=args.beta2 or p.sft.beta2)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"args": vars(args), "curve": curve}, fh, indent=1)


if __name__ == "__main__":
    main()
