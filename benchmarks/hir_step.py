"""HiR RL-step cost on one core: HiR vs GRPO-binary per step and per generated response.

Builds the cpu profile's data (corpus, vocabulary, prompts) and a fresh TinyLM of the cpu
profile's size (untrained: step costs depend on sizes, not on weights, apart from response
lengths), then times `--steps` RL steps of each method in CPU seconds of this process
(`time.process_time`, one torch thread, so the numbers do not depend on the machine's other
load). Reports per method: seconds per step, its phases (generate, log-probs, select-and-
rewrite, update), generated tokens per step, and the HiR / GRPO-binary ratios per step and per
generated response; plus an estimate of the cpu profile's RL wall time alone on 2 workers.
HiR vs GRPO-binary CPU seconds per step and per generated response are rows of
results/bench.csv (benchmarks/_bench.py).

Usage: python benchmarks/hir_step.py [--steps 10] [--out /tmp/hir_step.json]
"""
from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from assets.common.params import parse  # noqa: E402
from assets.hir import data as D  # noqa: E402
from assets.hir import rl, runs  # noqa: E402
from assets.hir.params import HirParams  # noqa: E402
from benchmarks._bench import record  # noqa: E402
from resources.profiles import load_params  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--methods", default="hir,grpo_binary")
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(0)
    p = parse(HirParams, load_params("hir", "cpu"), "hir.cpu")
    corpus = runs.corpus(p)
    vocab_value = runs.vocab(corpus, p)
    v = D.Vocab(vocab_value["tokens"])
    prompts = rl.make_prompts(runs.instruction_dataset(vocab_value, p, np.random.default_rng(0)), v)
    model = rl.build_model(len(v), p.model.n_layers, p.model.d_model, p.model.n_heads, p.model.context)
    out = {}
    for method in args.methods.split(","):
        policy, ref = copy.deepcopy(model), copy.deepcopy(model)
        opt = torch.optim.Adam(policy.parameters(), lr=p.rl.lr)
        rng, gen = np.random.default_rng(0), torch.Generator().manual_seed(0)
        cpu, generated, tokens = 0.0, 0, 0
        phases = {k: 0.0 for k in ("seconds_generate", "seconds_logprob", "seconds_select", "seconds_update")}
        for step in range(args.steps):
            batch = prompts[step * p.rl.prompts_per_step:(step + 1) * p.rl.prompts_per_step]
            t0 = time.process_time()
            stats, _ = rl.rl_step(policy, ref, opt, batch, rl.METHOD_SPECS[method], step, v, p.rl, gen, rng)
            cpu += time.process_time() - t0
            generated += stats["generated"]
            tokens += stats["generated_tokens"]
            for k in phases:
                phases[k] += stats[k]
        wall = sum(phases.values())
        out[method] = {"cpu_s_per_step": cpu / args.steps, "generated_per_step": generated / args.steps,
                       "tokens_per_step": tokens / args.steps, "cpu_s_per_response": cpu / generated,
                       **{k.replace("seconds_", "share_"): v_ / wall for k, v_ in phases.items()}}
    if {"hir", "grpo_binary"} <= set(out):
        h, b = out["hir"], out["grpo_binary"]
        out["ratios"] = {"step_time": h["cpu_s_per_step"] / b["cpu_s_per_step"],
                         "tokens_per_step": h["tokens_per_step"] / b["tokens_per_step"],
                         "time_per_generated_response": h["cpu_s_per_response"] / b["cpu_s_per_response"]}
        budget = p.rl.budget_steps * p.rl.prompts_per_step * p.rl.group_size
        per_run = {m: budget * out[m]["cpu_s_per_response"] for m in ("hir", "grpo_binary")}
        # 3 HiR-like and 2 GRPO-like methods × seeds on 2 workers (evaluations not included)
        out["cpu_profile_rl_estimate_s"] = len(p.seeds) * (3 * per_run["hir"] + 2 * per_run["grpo_binary"]) / 2
    text = json.dumps(out, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    if "ratios" in out:
        for key in ("cpu_s_per_step", "cpu_s_per_response"):
            record("hir_step", key, out["hir"][key], out["grpo_binary"][key], "cpu-s", "lower")


if __name__ == "__main__":
    main()
