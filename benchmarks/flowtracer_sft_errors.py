"""FlowTracer SFT: where the calibrated checkpoints' greedy traces go wrong (RegTrace, cpu run).

Reads the stored `sft_checkpoints` and `trace_dataset` (run `make reproduce PAPERS=flowtracer`
first) and decodes the first `--val` validation prompts greedily, as the calibration does. Each
trace that differs from the gold one is counted by its first wrong step: a trace step after an
`X=d` op, after an `X±` op, the answer (`#d`) with every trace step right, or a trace with
every gold step right but steps missing or added. For answer-only
errors it also says what the wrong answer is: the value written by the last trace step (another
register's), another register's final value, an earlier value of the queried register, or none
of these.

    .venv/bin/python benchmarks/flowtracer_sft_errors.py
"""
from __future__ import annotations

import argparse
import json

import pandas as pd
import torch

from assets.flowtracer import policy as P
from assets.flowtracer import runs as R
from assets.flowtracer import tasks


def answer_error_kind(prompt: str, gold: list[str], answer: str) -> str:
    """What a wrong answer digit is, given the prompt and the gold trace steps (without `#d`)."""
    query = prompt.split("?")[1]
    values: dict[str, list[str]] = {init[0]: [init[2]] for init in prompt.split(";")[:3]}
    for step in gold:
        values[step[0]].append(step[1])
    if gold and gold[-1][0] != query and gold[-1][1] == answer:
        return "last_written_value"
    if any(v[-1] == answer for r, v in values.items() if r != query):
        return "other_register_final"
    if answer in values[query][:-1]:
        return "queried_earlier_value"
    return "other"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--val", type=int, default=256)
    args = parser.parse_args()
    torch.set_num_threads(1)
    task = tasks.get("regtrace")
    frame = pd.read_parquet("data/flowtracer/trace_dataset.parquet")
    val = R.split(frame, "val").head(args.val)
    for cp in pd.read_parquet("data/flowtracer/sft_checkpoints.parquet").itertuples():
        model = R.load_policy({"checkpoint": cp.checkpoint, "md5": cp.md5}, task)
        texts = P.greedy_traces(model, list(val["prompt"]), 36)
        counts = {"exact": 0, "step_after_assign": 0, "step_after_increment": 0, "answer_only": 0,
                  "wrong_length": 0}
        answers = {"last_written_value": 0, "other_register_final": 0, "queried_earlier_value": 0, "other": 0}
        for prompt, gold_text, text in zip(val["prompt"], val["trace"], texts, strict=True):
            gold, got = gold_text.split(";"), text.split(";")
            if got == gold:
                counts["exact"] += 1
                continue
            k = next((i for i, (g, t) in enumerate(zip(gold, got)) if g != t), min(len(gold), len(got)))
            if got[:-1] == gold[:-1]:
                counts["answer_only"] += 1
                answers[answer_error_kind(prompt, gold[:-1], got[-1][1:] if got[-1].startswith("#") else "")] += 1
            elif k < len(gold) - 1:
                op = prompt.split(";")[3:-1][k]
                counts["step_after_assign" if "=" in op else "step_after_increment"] += 1
            else:
                counts["wrong_length"] += 1
        print(json.dumps({"seed": cp.seed, "steps": cp.steps, "prompts": len(val), **counts,
                          "answer_only_errors": answers}))


if __name__ == "__main__":
    main()
