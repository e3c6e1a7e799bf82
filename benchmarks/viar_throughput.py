"""Training steps/s and sampling images/s of VAR-d8 and VIAR at every schedule, side by side.

Speed does not depend on the weights, so the models are freshly initialised with the cpu
profile's architecture (params.yaml viar.cpu: width, heads, scales, vocabulary) on random
token pyramids; no data or training is needed. Every setting is measured in one process,
interleaved round-robin (contention from other processes hits all settings alike), with a
warm-up and the median over repetitions. On CUDA the peak allocated memory is recorded too.
VIAR vs VAR training steps/s, and sampling images/s at the claims' full schedule
(claim_schedules.full) vs VAR, are rows of results/bench.csv (benchmarks/_bench.py).

Usage: python benchmarks/viar_throughput.py [--profile cpu] [--threads 1] [--repeats 5]
       [--out data/reports/viar/throughput_bench.json]
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from assets.viar import model as M  # noqa: E402
from assets.viar import tokenizer as T  # noqa: E402
from benchmarks._bench import record  # noqa: E402
from resources.profiles import load_params  # noqa: E402


def build(params: dict, device: str):
    d = params["digits"]
    t, a, v = params["tokenizer"], params["ar"], params["viar"]
    tok_cfg = T.TokenizerConfig(image_channels=int(d["channels"]), image_size=int(d["image_size"]),
                                scales=tuple(d["scales"]), hidden=int(t["hidden"]), cvae=int(t["cvae"]),
                                vocab=int(t["vocab"]), downsample=int(d["downsample"]))
    torch.manual_seed(0)
    tok = T.MultiScaleVQVAE(tok_cfg).eval().to(device)

    def ar(kind, depth=1):
        cfg = M.ARConfig(kind=kind, vocab=tok_cfg.vocab, cvae=tok_cfg.cvae, scales=tok_cfg.scales, num_classes=10,
                         width=int(a["width"]), heads=int(a["heads"]), depth=depth, pre=int(v["pre"]),
                         post=int(v["post"]))
        return M.NextScaleAR(cfg).to(device)

    return tok, tok_cfg, ar


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--train-steps", type=int, default=10)
    parser.add_argument("--out", default="data/reports/viar/throughput_bench.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    params = load_params("viar", args.profile)
    tok, tok_cfg, ar = build(params, device)
    a, v, s = params["ar"], params["viar"], params["sampling"]
    K = len(tok_cfg.scales)
    var = ar("var", int(params["claim_depth"])).eval()
    viar = ar("viar").eval()
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, tok_cfg.vocab, (512, tok_cfg.tokens_per_image), generator=g)
    tf = tok.teacher_forcing_inputs(tokens.to(device)).cpu()
    labels = torch.randint(0, 10, (512,), generator=g)

    def train_rate(model, jfb):
        out = M.train_ar(model, tf.numpy(), tokens.numpy(), labels.numpy(), args.train_steps, int(a["batch"]),
                         float(a["lr"]), 0.05, 1, 2.0, 0.1, seed=0, jfb=jfb, device=device)
        return out["steps_per_second"]

    batch = int(params["throughput"]["batch"])
    sample_settings = [(var.cfg.name, "explicit", var, None)]
    sample_settings += [(viar.cfg.name, name, viar, M.parse_schedule(name, K)) for name in params["schedules"]]

    def sample_rate(model, schedule):
        lab = (torch.arange(batch) % 10).to(device)
        if device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        start = time.perf_counter()
        M.generate(model, tok, lab, schedule, float(s["cfg"]), float(s["top_p"]), int(s["top_k"]),
                   torch.Generator(device=device).manual_seed(0))
        if device == "cuda":
            torch.cuda.synchronize()
        return batch / (time.perf_counter() - start)

    train_runs = {"var": [], "viar": []}
    sample_runs = {i: [] for i in range(len(sample_settings))}
    train_rate(var, None), train_rate(viar, (int(v["jfb_n"]), int(v["jfb_m"])))          # warm-up
    for _, _, model, sched in sample_settings:
        sample_rate(model, sched)
    for _ in range(args.repeats):
        train_runs["var"].append(train_rate(var, None))
        train_runs["viar"].append(train_rate(viar, (int(v["jfb_n"]), int(v["jfb_m"]))))
        for i, (_, _, model, sched) in enumerate(sample_settings):
            sample_runs[i].append(sample_rate(model, sched))
    result = {
        "device": device, "threads": args.threads, "platform": platform.platform(), "profile": args.profile,
        "train_batch": int(a["batch"]), "sample_batch": batch, "tokens_per_image": tok_cfg.tokens_per_image,
        "training_steps_per_second": {var.cfg.name: float(np.median(train_runs["var"])),
                                      viar.cfg.name: float(np.median(train_runs["viar"]))},
        "sampling": [{"model": name, "schedule": label, "images_per_second": float(np.median(sample_runs[i])),
                      "flops_per_image": M.sampling_flops(model.cfg, sched)}
                     for i, (name, label, model, sched) in enumerate(sample_settings)],
    }
    print(json.dumps(result, indent=1))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    steps = result["training_steps_per_second"]
    record("viar_throughput", "train_steps_per_s", steps[viar.cfg.name], steps[var.cfg.name], "steps/s", "higher")
    speed = {row["schedule"]: row["images_per_second"] for row in result["sampling"]}
    full = params["claim_schedules"]["full"]
    if full in speed:
        record("viar_throughput", f"sample_images_per_s@{full}", speed[full], speed["explicit"], "images/s", "higher")


if __name__ == "__main__":
    main()
