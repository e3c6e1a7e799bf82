"""What each FlowTracer asset computes, given parameters, seeds and a log function — no Dagster.

SFT seeds and GRPO method × seed runs are independent jobs (module-level functions over plain
records) run through assets.common.parallel; each job seeds its own generators, so results do
not depend on the worker that ran it.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from assets.common.worker import torch_worker
from assets.flowtracer import tasks
from assets.flowtracer.params import FlowtracerParams

Log = Callable[[str], None]
CHECKPOINT_FIELDS = ("n_layers", "d_model", "n_heads", "context", "tie_embeddings", "positional")


def dataset(p: FlowtracerParams, rng: np.random.Generator) -> pd.DataFrame:
    """The profile's task (data.task: RegTrace or ArithChain) in disjoint splits."""
    return tasks.generate(p.data, rng)


def split(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    return frame[frame["split"] == name].reset_index(drop=True)


def model_config(p: FlowtracerParams) -> dict:
    return {k: getattr(p.model, k) for k in CHECKPOINT_FIELDS}


def max_new(p: FlowtracerParams) -> int:
    """Response budget: the longest gold trace of the task plus `<eos>` (tasks.max_new)."""
    return tasks.max_new(p.data)


def load_policy(ref: dict, task, device: str = "cpu"):
    """The TinyLM of a checkpoint reference, on `device`; raises when it was trained on another
    vocabulary than `task`'s."""
    from assets.flowtracer.policy import build_model
    from resources.artifacts import load_checkpoint

    state, sidecar = load_checkpoint(ref)
    if sidecar.get("vocab_md5") != task.vocab_md5():
        raise ValueError(f"checkpoint {ref['checkpoint']} was trained on vocabulary {sidecar.get('vocab_md5')}, "
                         f"not {task.NAME}'s ({task.vocab_md5()}): retrain it")
    model = build_model(**{k: sidecar["config"][k] for k in CHECKPOINT_FIELDS}, task=task)
    model.load_state_dict(state)
    model.eval()
    return model.to(device)


# ----------------------------------------------------------------------------- SFT

def in_band_run(curve: list[dict], low: float, high: float) -> int:
    """How many of the latest snapshots in a row have validation accuracy in [low, high]."""
    run = 0
    for point in reversed(curve):
        if not low <= point["val_accuracy"] <= high:
            break
        run += 1
    return run


def sft_job(job: dict, log: Log | None = None) -> dict:
    """Train one SFT seed until its first snapshot whose greedy validation accuracy is in the
    band (sft.stable snapshots in a row; at most sft.max_steps), save that checkpoint and measure
    its greedy test accuracy. job: params, seed, train / val / test records, path, provenance,
    threads. Returns the checkpoint reference, steps, the snapshot curve, test_accuracy,
    seconds. log (in-process calls only): a line every 10 snapshots."""
    from assets.flowtracer import policy as P
    from resources.artifacts import save_checkpoint

    p: FlowtracerParams = job["params"]
    task = tasks.get(p.data.task)
    torch_worker(job["threads"], job["seed"])
    model = P.build_model(**model_config(p), task=task).to(job.get("device", "cpu"))   # seeded on the CPU
    examples = P.sft_examples(pd.DataFrame(job["train"]), task)
    val = pd.DataFrame(job["val"]).head(p.sft.val_prompts)
    low, high = p.sft.band
    curve: list[dict] = []

    def snapshot(step: int, loss: float) -> bool:
        acc, _ = P.accuracy(model, list(val["prompt"]), list(val["answer"]), max_new(p), task)
        curve.append({"step": step, "val_accuracy": acc, "loss": loss})
        if log and len(curve) % 10 == 0:
            log(f"SFT step {step}: loss {loss:.3f}, greedy validation accuracy {acc:.3f}")
        return in_band_run(curve, low, high) >= p.sft.stable

    start = time.perf_counter()
    P.sft_train(model, examples, p.sft.max_steps, p.sft.batch_size, p.sft.lr, p.sft.warmup, p.sft.curriculum,
                p.data.min_ops, p.data.max_ops, np.random.default_rng(job["seed"]), decay=p.sft.decay,
                on_snapshot=snapshot, snapshot_every=p.sft.snapshot_every, beta2=p.sft.beta2,
                answer_weight=p.sft.answer_weight, answer_weight_loss=p.sft.answer_weight_loss,
                answer_after=task.TOKEN_ID["#"])
    seconds = time.perf_counter() - start
    trained = curve[-1]["step"] if curve else p.sft.max_steps
    ref = save_checkpoint(Path(job["path"]), model.state_dict(), provenance=job["provenance"],
                          config=model_config(p), seed=job["seed"], vocab_md5=task.vocab_md5(), sft_steps=trained)
    test = pd.DataFrame(job["test"])
    test_accuracy, _ = P.accuracy(model, list(test["prompt"]), list(test["answer"]), max_new(p), task)
    return {**ref, "seed": job["seed"], "steps": trained, "curve": curve, "test_accuracy": test_accuracy,
            "seconds": seconds}


def calibrate(frame: pd.DataFrame, p: FlowtracerParams, seed_for, checkpoint_path, provenance: dict,
              workers: int, log: Log, device: str = "cpu") -> dict:
    """Every SFT seed's calibrated step count: the first snapshot (every snapshot_every steps)
    whose greedy validation accuracy is in p.sft.band, and was at the p.sft.stable − 1 snapshots
    before it too. The checkpoint of that snapshot is the seed's SFT checkpoint; its greedy test
    accuracy is measured in the worker that trained it.

    The seeds are independent jobs of unknown length (the jump in accuracy comes at a step that
    differs by seed), so the caller runs them all at once (`workers` = number of seeds on 2
    cores): a 2-process pool would leave a core idle behind the longest seed.
    Returns {"seeds": [{seed (index), sft_seed, steps, in_band, val_accuracy, curve,
    checkpoint, md5, test_accuracy, test_prompts, seconds}]}."""
    from assets.common.parallel import spawn_imap
    from assets.common.progress import Progress

    low, high = p.sft.band
    log(f"calibrating SFT steps per seed: first {p.sft.snapshot_every}-step snapshot with validation accuracy "
        f"in {list(p.sft.band)} (at most {p.sft.max_steps} steps), {len(p.seeds)} seeds on {workers} workers")
    train, val = split(frame, "train").to_dict("records"), split(frame, "val").to_dict("records")
    test = split(frame, "test")[["prompt", "answer"]].to_dict("records")
    jobs = [{"params": p, "seed": int(seed_for("sft", s)), "seed_index": s, "threads": p.threads, "device": device,
             "train": train,
             "val": val, "test": test, "path": str(checkpoint_path(f"sft_seed{s}")), "provenance": provenance}
            for s in p.seeds]
    progress = Progress(log, len(jobs), "SFT seeds")
    seeds = []
    for job, out in zip(jobs, spawn_imap(sft_job, jobs, workers)):
        curve = out["curve"]
        in_band = bool(curve) and in_band_run(curve, low, high) >= p.sft.stable
        val_accuracy = curve[-1]["val_accuracy"] if curve else float("nan")
        progress.step(f"seed {job['seed_index']}: {out['steps']} steps, validation accuracy {val_accuracy:.3f} "
                      f"({'in' if in_band else 'NOT in'} band), test accuracy {out['test_accuracy']:.3f} "
                      f"({out['seconds']:.0f} s)")
        seeds.append({"seed": job["seed_index"], "sft_seed": out["seed"], "steps": out["steps"], "in_band": in_band,
                      "val_accuracy": val_accuracy, "curve": curve, "checkpoint": out["checkpoint"],
                      "md5": out["md5"], "test_accuracy": out["test_accuracy"], "test_prompts": len(test),
                      "seconds": out["seconds"]})
    return {"seeds": seeds}


def sft_checkpoints(calibration: dict) -> pd.DataFrame:
    """The calibrated SFT checkpoints as a table, one row per seed: seed, sft_seed, steps,
    in_band, val_accuracy (at the chosen snapshot), checkpoint, md5, test_accuracy, test_prompts."""
    return pd.DataFrame([{k: v for k, v in s.items() if k not in ("curve", "seconds")}
                         for s in calibration["seeds"]])


# ----------------------------------------------------------------------------- flow analysis

def flow_job(job: dict) -> dict:
    """Token scores, masking and per-band results for one SFT checkpoint (plain records)."""
    import torch

    from assets.flowtracer import analysis as A

    p: FlowtracerParams = job["params"]
    task = tasks.get(p.data.task)
    torch_worker(job["threads"])
    model = load_policy(job["checkpoint"], task, job.get("device", "cpu"))
    problems = pd.DataFrame(job["problems"])
    tokens, masks, bands = [], [], []
    for band in p.flow.all_layer_bands:
        generator = torch.Generator().manual_seed(job["seed"])
        scored = A.score_tokens(model, problems, band, p.flow.drop_bos, generator, task)
        table = A.token_table(problems, scored)
        masked = A.masking(model, problems, scored, p.analysis.mask_fraction, A.SCORE_RULES, generator, task)
        name = A.band_name(band)
        table["band"] = masked["band"] = name
        bands.append({"band": name, "conservation_error": float(scored["conservation_error"].max()),
                      "absorbed_mass_error": float((scored["absorbed_mass"] - 1).abs().max()),
                      "nan": int(sum(int(torch.isnan(s).sum()) for s in [scored["conservation_error"],
                                                                           scored["absorbed_mass"]]))})
        tokens.append(table)
        masks.append(masked)
    return {"seed": job["seed_index"], "tokens": pd.concat(tokens).to_dict("records"),
            "masking": pd.concat(masks).to_dict("records"), "bands": bands}


def flow_annotations(frame: pd.DataFrame, checkpoints: pd.DataFrame, p: FlowtracerParams, workers: int,
                     log: Log, device: str = "cpu") -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(tokens, masking, diagnostics) over every SFT seed and layer band, on the first
    analysis.prompts test problems."""
    from assets.common.parallel import spawn_imap

    problems = split(frame, "test").head(p.analysis.prompts).to_dict("records")
    jobs = [{"params": p, "seed": int(r.sft_seed), "seed_index": int(r.seed), "threads": p.threads, "device": device,
             "checkpoint": {"checkpoint": r.checkpoint, "md5": r.md5}, "problems": problems}
            for r in checkpoints.itertuples()]
    tokens, masks, diags = [], [], []
    for result in spawn_imap(flow_job, jobs, workers):
        s = result["seed"]
        tokens.append(pd.DataFrame(result["tokens"]).assign(seed=s))
        masks.append(pd.DataFrame(result["masking"]).assign(seed=s))
        diags += [{**b, "seed": s} for b in result["bands"]]
        log(f"flow annotations seed {s}: {len(result['tokens'])} token rows over {len(p.flow.all_layer_bands)} bands")
    return pd.concat(tokens, ignore_index=True), pd.concat(masks, ignore_index=True), pd.DataFrame(diags)


# ----------------------------------------------------------------------------- GRPO

def grpo_job(job: dict) -> dict:
    """One method × seed GRPO run from its SFT checkpoint: per-step statistics and held-out
    greedy rewards per prompt at every evaluation step (plain records). job["method"] names the
    run; job["rule"], job["fraction"] and job["layers"] are the credit it uses."""
    import torch

    from assets.flowtracer import method as M
    from resources.artifacts import save_checkpoint

    p: FlowtracerParams = job["params"]
    task = tasks.get(p.data.task)
    g = p.grpo
    torch_worker(job["threads"], job["seed"])
    generator = torch.Generator().manual_seed(job["seed"])
    rng = np.random.default_rng(job["seed"])
    policy = load_policy(job["checkpoint"], task, job.get("device", "cpu"))
    opt = torch.optim.Adam(policy.parameters(), lr=g.lr)
    train = [(r["prompt"], int(r["answer"])) for r in job["rl"]]
    held = [(r["prompt"], int(r["answer"])) for r in job["rl_eval"]]
    evals, steps = [], []
    start = time.perf_counter()

    def evaluate(step: int) -> None:
        rewards = M.rewards_by_prompt(policy, held, max_new(p), task)
        evals.extend({"step": step, "prompt": i, "reward": float(r)} for i, r in enumerate(rewards))

    evaluate(0)
    for step in range(1, g.steps + 1):
        pick = rng.choice(len(train), size=g.prompts_per_step, replace=False)
        stats = M.grpo_step(policy, opt, [train[i] for i in pick], job["rule"], group_size=g.group_size,
                            max_new=max_new(p), temperature=g.temperature, clip=g.clip, fraction=job["fraction"],
                            gamma=p.flow.gamma, layers=job["layers"], drop_bos=p.flow.drop_bos,
                            log_space=p.flow.log_space, generator=generator, task=task)
        steps.append({"step": step, **stats})
        if step % g.eval_every == 0 or step == g.steps:
            evaluate(step)
    seconds = time.perf_counter() - start
    finite = all(bool(torch.isfinite(t).all()) for t in policy.state_dict().values())
    ref = save_checkpoint(Path(job["path"]), policy.state_dict(), provenance=job["provenance"],
                          config=model_config(p), seed=job["seed"], vocab_md5=task.vocab_md5(), method=job["method"])
    tag = {"method": job["method"], "seed": job["seed_index"]}
    return {**tag, **ref, "finite": finite, "seconds": seconds, "steps": [{**tag, **s} for s in steps],
            "evals": [{**tag, **e} for e in evals]}


def grpo_run_specs(p: FlowtracerParams) -> list[dict]:
    """Every GRPO run per seed: {method (its name), rule, fraction, layers} for each compared
    method (the profile's share and layers), then each RL ablation (flowtracer credit with its
    share or layers)."""
    specs = [{"method": m, "rule": m, "fraction": p.flow.top_fraction, "layers": tuple(p.flow.layers)}
             for m in p.methods]
    for a in p.rl_ablations:
        fraction, layers = a.credit(p.flow.top_fraction, tuple(p.flow.layers))
        specs.append({"method": a.method, "rule": "flowtracer", "fraction": fraction, "layers": layers})
    return specs


def grpo_runs(frame: pd.DataFrame, checkpoints: pd.DataFrame, p: FlowtracerParams, seed_for, checkpoint_path,
              provenance: dict, workers: int, log: Log,
              device: str = "cpu") -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Every method × seed from that seed's SFT checkpoint: (runs, evals, steps)."""
    from assets.common.parallel import longest_first
    from assets.common.progress import Progress

    rl = split(frame, "rl")[["prompt", "answer"]].to_dict("records")
    held = split(frame, "rl_eval")[["prompt", "answer"]].to_dict("records")
    by_seed = {int(r.seed): {"checkpoint": r.checkpoint, "md5": r.md5} for r in checkpoints.itertuples()}
    jobs = [{"params": p, **run, "seed": int(seed_for("grpo", s)), "seed_index": s, "threads": p.threads,
             "device": device, "checkpoint": by_seed[s], "rl": rl, "rl_eval": held,
             "path": str(checkpoint_path(f"grpo_{run['method']}_seed{s}")), "provenance": provenance}
            for s in p.seeds for run in grpo_run_specs(p)]
    costs = [1.2 if j["rule"] in ("flowtracer", "bottom", "attention") else 1.0 for j in jobs]
    progress = Progress(log, len(jobs), "GRPO runs")
    runs, evals, steps = [], [], []
    for _, result in longest_first(grpo_job, jobs, workers, costs):
        final = [e["reward"] for e in result["evals"] if e["step"] == p.grpo.steps]
        first = [e["reward"] for e in result["evals"] if e["step"] == 0]
        progress.step(f"{result['method']}/seed {result['seed']}: held-out accuracy {np.mean(first):.3f} → "
                      f"{np.mean(final):.3f} ({result['seconds']:.0f} s)")
        runs.append({k: result[k] for k in ("method", "seed", "checkpoint", "md5", "finite", "seconds")}
                    | {"steps": len(result["steps"])})
        evals += result["evals"]
        steps += result["steps"]
    order = ["method", "seed"]
    return (pd.DataFrame(runs).sort_values(order, ignore_index=True),
            pd.DataFrame(evals).sort_values([*order, "step", "prompt"], ignore_index=True),
            pd.DataFrame(steps).sort_values([*order, "step"], ignore_index=True))

