"""What each HiR asset computes, given parameters, seeds and a log function — no Dagster.

Training runs (pretraining, SFT, RL method × seed) write torch state_dicts with JSON sidecars
(resources.artifacts); the RL runs are independent jobs over spawned worker processes
(assets.common.parallel.spawn_imap), each seeding its own generators.

Every torch workload (pretraining, SFT, evaluation, RL collection and updates) runs on `device`
("cpu" or "cuda": compute.resolved_device()): models are built and seeded on the CPU, then
moved; checkpoints are written as CPU tensors (resources.artifacts.save_state_dict) and loaded on
the CPU, then moved.
"""
from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from assets.common.gensim_text import read_gensim_lines
from assets.hir import data as D
from assets.hir.params import HirParams

VOCAB_FILE = "vocab"


def vocab_hash(tokens: list[str]) -> str:
    return hashlib.md5("\n".join(tokens).encode()).hexdigest()


# ----------------------------------------------------------------------------- data

def corpus(p: HirParams) -> pd.DataFrame:
    lines = [line for name in D.SOURCES for line in read_gensim_lines(name)]
    frame = D.corpus_sentences(lines, p.corpus.min_words, p.corpus.max_words)
    if frame.empty:
        raise ValueError("no corpus sentences survived the length filter")
    return frame


def vocab(corpus_frame: pd.DataFrame, p: HirParams) -> dict:
    numbers = sorted({*p.data.floor_choices, *p.data.max_words_choices, *range(1, 6),
                      *range(1, max(p.data.constraint_counts) + 1)})
    tokens = D.build_vocab(corpus_frame["text"].tolist(), p.corpus.vocab_words, numbers)
    v = D.Vocab(tokens)
    texts = corpus_frame["text"].tolist()
    return {"tokens": tokens, "size": len(tokens), "md5": vocab_hash(tokens),
            "topics": D.topic_words(texts, v, p.data.topics),
            "constraint_words": D.constraint_words(texts, v, p.data.constraint_words)}


def kept_sentences(corpus_frame: pd.DataFrame, v: D.Vocab, max_unk: float) -> pd.DataFrame:
    """Sentences whose share of <unk> tokens is at most max_unk."""
    unk = corpus_frame["text"].map(lambda t: np.mean([x == D.UNK for x in v.normalize(t.split())]))
    return corpus_frame[unk <= max_unk].reset_index(drop=True)


def instruction_dataset(vocab_value: dict, p: HirParams, rng: np.random.Generator) -> pd.DataFrame:
    frame = D.instruction_dataset(rng, vocab_value["topics"], vocab_value["constraint_words"], p.data.train_prompts,
                                  p.data.test_prompts, p.data.constraint_counts, p.data.floor_choices,
                                  p.data.max_words_choices)
    return frame


def sft_pairs(corpus_frame: pd.DataFrame, vocab_value: dict, p: HirParams, rng: np.random.Generator) -> pd.DataFrame:
    v = D.Vocab(vocab_value["tokens"])
    sentences = kept_sentences(corpus_frame, v, p.corpus.max_unk_fraction)
    return D.sft_pairs(sentences, v, vocab_value["topics"], vocab_value["constraint_words"], p.data.sft_pairs,
                       p.data.sft_max_constraints, p.rl.max_new, p.data.swap_end, p.data.max_words_choices, rng)


# ----------------------------------------------------------------------------- training

def _model_config(p: HirParams, vocab_size: int) -> dict:
    return {"vocab_size": vocab_size, "n_layers": p.model.n_layers, "d_model": p.model.d_model,
            "n_heads": p.model.n_heads, "context": p.model.context}


def load_policy(checkpoint: dict, vocab_value: dict, device: str = "cpu"):
    """The TinyLM of a checkpoint, on `device` (loaded on the CPU, then moved); raises if its
    vocabulary is not `vocab_value`'s."""
    from assets.hir import rl
    from resources.artifacts import load_checkpoint

    state, sidecar = load_checkpoint(checkpoint)
    if sidecar.get("vocab_md5") != vocab_value["md5"] or sidecar["config"]["vocab_size"] != vocab_value["size"]:
        raise ValueError(f"checkpoint {checkpoint['checkpoint']} was trained on vocabulary "
                         f"{sidecar.get('vocab_md5')} ({sidecar['config']['vocab_size']} tokens), not "
                         f"{vocab_value['md5']} ({vocab_value['size']} tokens)")
    model = rl.build_model(**sidecar["config"])
    model.load_state_dict(state)
    model.eval()
    return model.to(device)


def pretrain(corpus_frame: pd.DataFrame, vocab_value: dict, p: HirParams, seed: int, torch_for, save,
             log: Callable[[str], None], device: str = "cpu") -> dict:
    """LM pretraining on "<bos> sentence <eos>" on `device` (the model initialised on the CPU);
    save(state, config, extra) → checkpoint ref (extra carries the device)."""
    from assets.hir import rl

    torch_for(seed, p.threads)
    v = D.Vocab(vocab_value["tokens"])
    seqs = [[v.bos, *v.encode(t.split()), v.eos] for t in corpus_frame["text"]]
    model = rl.build_model(**_model_config(p, len(v))).to(device)     # seeded on the CPU
    start = time.perf_counter()
    losses = rl.train_lm(model, seqs, [1] * len(seqs), p.pretrain.steps, p.pretrain.batch_size, p.pretrain.lr,
                         np.random.default_rng(seed), v.pad, log)
    final = float(np.mean(losses[-max(1, len(losses) // 10):]))
    ref = save(model.state_dict(), _model_config(p, len(v)),
               {"final_loss": final, "vocab_md5": vocab_value["md5"], "device": device})
    return {**ref, "final_loss": final, "sentences": len(seqs), "seconds": time.perf_counter() - start}


def sft_sequences(pairs: pd.DataFrame, v: D.Vocab) -> tuple[list[list[int]], list[int]]:
    """(ids of instruction + response + <eos> per SFT pair, where each response starts)."""
    from assets.hir import rl
    from assets.hir.constraints import parse_criteria

    seqs, starts = [], []
    for row in pairs.itertuples(index=False):
        prompt = rl.encode_instruction(v, str(row.question).split(), parse_criteria(list(row.criteria)), row.q_type)
        seqs.append([*prompt, *v.encode(str(row.response).split()), v.eos])
        starts.append(len(prompt))
    return seqs, starts


def sft(pairs: pd.DataFrame, pretrained: dict, vocab_value: dict, p: HirParams, seed: int, torch_for, save,
        log: Callable[[str], None], device: str = "cpu") -> dict:
    """SFT on (instruction, response) pairs, loss on the response and <eos>, on `device`."""
    from assets.hir import rl

    torch_for(seed, p.threads)
    v = D.Vocab(vocab_value["tokens"])
    model = load_policy(pretrained, vocab_value, device)
    seqs, starts = sft_sequences(pairs, v)
    start = time.perf_counter()
    losses = rl.train_lm(model, seqs, starts, p.sft.steps, p.sft.batch_size, p.sft.lr, np.random.default_rng(seed),
                         v.pad, log)
    final = float(np.mean(losses[-max(1, len(losses) // 10):]))
    ref = save(model.state_dict(), _model_config(p, len(v)),
               {"final_loss": final, "vocab_md5": vocab_value["md5"], "device": device})
    return {**ref, "final_loss": final, "pairs": len(seqs), "seconds": time.perf_counter() - start}


def difficulty(sft_checkpoint: dict, dataset: pd.DataFrame, vocab_value: dict, p: HirParams, seed: int,
               torch_for, device: str = "cpu") -> pd.DataFrame:
    """Warm-start (SFT) test metrics per prompt (greedy and one sample) with n_constraints,
    evaluated on `device`."""
    from assets.hir import rl

    torch_for(seed, p.threads)
    v = D.Vocab(vocab_value["tokens"])
    model = load_policy(sft_checkpoint, vocab_value, device)
    test = dataset[dataset["split"] == "test"]
    prompts = rl.make_prompts(test, v)
    metrics = rl.evaluate(model, model, prompts, v, p.rl.max_new, seed)
    frame = pd.DataFrame(metrics)
    frame.insert(0, "prompt_id", test["prompt_id"].to_numpy())
    frame.insert(1, "n_constraints", test["n_constraints"].to_numpy())
    return frame


def rl_job(job: dict) -> dict:
    """One method × seed RL run in a worker process (or in this one): train to the budget on
    job["device"] (policy and reference loaded on the CPU, then moved), save the checkpoint
    from the CPU, return steps, rollouts and per-prompt evaluations as records (plain Python)."""
    from assets.common.worker import torch_worker
    from assets.hir import rl
    from resources.artifacts import save_checkpoint

    torch = torch_worker(job["threads"], job["seed"])
    p = job["params"]
    vocab_value = job["vocab"]
    v = D.Vocab(vocab_value["tokens"])
    device = job.get("device", "cpu")
    policy = load_policy(job["sft"], vocab_value, device)
    reference = load_policy(job["sft"], vocab_value, device)
    for param in reference.parameters():
        param.requires_grad_(False)
    train = rl.make_prompts(pd.DataFrame(job["train"]), v)
    test = rl.make_prompts(pd.DataFrame(job["test"]), v)
    start = time.perf_counter()
    out = rl.run_rl(policy, reference, train, test, rl.METHOD_SPECS[job["method"]], v, p.rl, job["seed"])
    seconds = time.perf_counter() - start
    ref = save_checkpoint(Path(job["path"]), policy.state_dict(), provenance=job["provenance"],
                          config=_model_config(p, len(v)), seed=job["seed"], device=device, method=job["method"],
                          vocab_md5=vocab_value["md5"])
    finite = all(bool(torch.isfinite(t).all()) for t in policy.state_dict().values())
    evals = []
    for k, generated, step, metrics in out["evals"]:
        for j, prompt in enumerate(test):
            evals.append({"method": job["method"], "seed": job["seed"], "eval_point": k, "generated": generated,
                          "step": step, "prompt_id": prompt.prompt_id,
                          **{name: float(values[j]) for name, values in metrics.items()}})
    steps = [{"method": job["method"], "seed": job["seed"], **s} for s in out["steps"]]
    rollouts = [{"method": job["method"], "seed": job["seed"], **r} for r in out["rollouts"]]
    return {"method": job["method"], "seed": job["seed"], "checkpoint": ref["checkpoint"], "md5": ref["md5"],
            "finite": finite, "budget": out["budget"], "generated": steps[-1]["generated_total"] if steps else 0,
            "steps": steps, "rollouts": rollouts, "evals": evals, "seconds": seconds}


def rl_runs(sft_checkpoint: dict, dataset: pd.DataFrame, vocab_value: dict, p: HirParams, seed_for,
            checkpoint_path, provenance: dict, workers: int, spawn_imap, log: Callable[[str], None],
            device: str = "cpu") -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Every method × seed on `device`: (runs, evals, steps, rollouts) tables."""
    from assets.common.progress import Progress

    cols = ["prompt_id", "question", "criteria", "q_type"]
    train = dataset[dataset["split"] == "train"][cols]
    test = dataset[dataset["split"] == "test"][cols]
    train_records = [{**r, "criteria": list(r["criteria"])} for r in train.to_dict("records")]
    test_records = [{**r, "criteria": list(r["criteria"])} for r in test.to_dict("records")]
    jobs = [{"method": m, "seed": int(seed_for("rl", s)), "seed_index": s, "params": p, "vocab": vocab_value,
             "sft": sft_checkpoint, "train": train_records, "test": test_records, "threads": p.threads,
             "device": device, "path": str(checkpoint_path(f"rl_{m}_seed{s}")), "provenance": provenance}
            for s in p.seeds for m in p.methods]
    progress = Progress(log, len(jobs), "rl runs")
    runs, evals, steps, rollouts = [], [], [], []
    for job, result in zip(jobs, spawn_imap(rl_job, jobs, workers)):
        final = [e for e in result["evals"] if e["eval_point"] == max(x["eval_point"] for x in result["evals"])]
        ila = float(np.mean([e["ila_greedy"] for e in final]))
        progress.step(f"{job['method']}/seed {job['seed_index']}: {result['generated']} generated, final ILA {ila:.3f}"
                      f" ({result['seconds']:.0f} s)")
        seed_index = job["seed_index"]
        runs.append({k: result[k] for k in ("method", "checkpoint", "md5", "finite", "budget", "generated", "seconds")}
                    | {"seed": seed_index, "rl_seed": result["seed"], "steps": len(result["steps"])})
        for table, rows in ((evals, result["evals"]), (steps, result["steps"]), (rollouts, result["rollouts"])):
            table += [{**r, "seed": seed_index} for r in rows]
    return pd.DataFrame(runs), pd.DataFrame(evals), pd.DataFrame(steps), pd.DataFrame(rollouts)


def rollout_log(rollouts: pd.DataFrame) -> pd.DataFrame:
    """The annotation table: every logged rollout re-judged by the checkers (verified column:
    the stored judge list and sparse reward agree with a fresh verification)."""
    from assets.hir.constraints import judge, parse_criteria

    frame = rollouts.copy()
    verified = []
    for row in frame.itertuples(index=False):
        judged, _, sparse = judge(str(row.response).split(), parse_criteria(str(row.criteria).split()))
        verified.append("".join("1" if j else "0" for j in judged) == row.judge_list and sparse == row.sparse)
    frame["verified"] = verified
    return frame


def run_summary(runs: pd.DataFrame) -> list[dict[str, Any]]:
    return runs.drop(columns=["checkpoint", "md5"]).to_dict("records")


def verifier_md5() -> str:
    """md5 of the verifier's source (constraints.py): the constraint bank's code version."""
    from assets.hir import constraints

    return hashlib.md5(Path(constraints.__file__).read_bytes()).hexdigest()


def full_dataset(corpus_frame: pd.DataFrame, vocab_value: dict, p: HirParams, rng_prompts: np.random.Generator,
                 rng_sft: np.random.Generator) -> pd.DataFrame:
    """RL prompts (train / test) and SFT pairs (split "sft") in one table; `response` is the SFT
    response (empty for RL prompts)."""
    prompts = instruction_dataset(vocab_value, p, rng_prompts)
    prompts["response"] = ""
    pairs = sft_pairs(corpus_frame, vocab_value, p, rng_sft)
    pairs["split"] = "sft"
    pairs["prompt_id"] = np.arange(len(pairs)) + len(prompts)
    pairs["n_constraints"] = pairs["criteria"].map(len)
    pairs["text"] = [" ".join(D.prompt_tokens(r)) for r in pairs.to_dict("records")]
    return pd.concat([prompts, pairs[prompts.columns]], ignore_index=True)
