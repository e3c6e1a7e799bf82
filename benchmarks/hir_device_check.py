"""hir device check (gpu profile): cpu/device parity of the TinyLM training and RL passes, then
their speed on the device.

One script, a few minutes on a GPU machine (nothing here is claimed):
1. parity — one TinyLM of the gpu profile's size (seeded on the CPU, copied to `--device`) on
   the profile's vocabulary, prompts and SFT pairs: the teacher-forced logits of SFT sequences,
   the response log-probs under left-padded instructions (rl.sequence_logprobs, the RL scoring
   pass), the greedy responses to test prompts, one PPO update (rl.ppo_update, one mini-batch)
   on the same HiR batch (collected once on the CPU): its KL term and clipped gradient (its loss
   is ≈ 0 at ratio 1 with centred advantages: reported only), then 3 LM training steps
   (rl.train_lm) on the same numpy batch stream — on the CPU and on the device;
   TF32 off so CUDA matmuls are float32. Sampling cannot match bit for bit (the device has its
   own random stream): RL steps of HiR and GRPO-binary on the device must keep finite weights
   and the budget accounting (HiR: (g + resamples)·B generated, with the replays ≤ n·B
   sequences; GRPO: n·B of each).
   Fails (exit 1) past the tolerances below; the greedy agreement is reported, not gated.
2. speed — on the device: LM training steps/s at the profile's batch, the seconds of an RL step
   (HiR and GRPO-binary, B prompts × n responses of ≤ max_new tokens; the model is untrained,
   so responses mostly run to max_new: an upper bound) by phase, and of one evaluation of the
   test prompts.

    .venv/bin/python benchmarks/hir_device_check.py --device cuda --out /tmp/hir_device.json
    .venv/bin/python benchmarks/hir_device_check.py --device cpu --tiny     # exercises the code (tests)

The default model and sizes are the gpu profile's (3 layers, d = 256, B = 64 prompts × n = 8,
batch 64); --tiny uses the smoke profile's model and small counts. On `--device cpu` the parity
is exact (both sides are the same CPU kernels): the tests use that.
"""
from __future__ import annotations

import copy
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

LOGIT_TOL = 1e-3        # max |Δ| of the teacher-forced logits, relative to max |logit|
LOGPROB_TOL = 1e-3      # max |Δ| of response-token log-probs (nats)
LOSS_TOL = 1e-3         # relative |Δ| of the LM training losses
GRAD_TOL = 1e-3         # max |Δ| of the PPO update's clipped gradient, relative to its max |g|
PHASES = ("seconds_generate", "seconds_logprob", "seconds_select", "seconds_update", "seconds_step")


def projection(device_check, gpu, out: dict, steps: dict, tiny: bool) -> dict:
    """The gpu profile from the timed slice: pretraining + SFT LM steps per seed, every method's RL steps
    (budget_steps·B·n generated responses, at the measured responses per prompt; the hir_* methods at HiR's
    step cost, grpo_* at GRPO-binary's) and its evaluations (eval_points + 1 per run)."""
    budget = gpu.rl.budget_steps * gpu.rl.prompts_per_step * gpu.rl.group_size
    seeds = len(gpu.seeds)
    parts = [(f"LM training step (batch {out['train_batch']})", 1 / out["train_steps_per_s"],
              (gpu.pretrain.steps + gpu.sft.steps) * seeds)]
    for method in gpu.methods:
        timed = "grpo_binary" if method.startswith("grpo") else "hir"
        per_prompt = float(np.median([s["generated"] for s in steps[timed][1:]])) / out["prompts_per_step"]
        parts.append((f"{method} RL step (as {timed}, {per_prompt:.1f} responses a prompt)",
                      out[f"{timed}_step"]["seconds_step"], seeds * budget / (per_prompt * gpu.rl.prompts_per_step)))
    parts.append(("evaluation of the test prompts", out["eval_seconds"],
                  (gpu.rl.eval_points + 1) * len(gpu.methods) * seeds))
    return device_check.projection(parts, note="measured at --tiny sizes; " * tiny
                                   + "leaves out corpus / dataset building, bootstrap CIs, checkpoint writes; "
                                     "RL steps of an untrained model run to max_new (an upper bound)")


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))      # the repo root, from any directory
    from assets.common import device_check

    args = device_check.arguments(argv)
    torch = device_check.prepare(args.device)
    if torch is None:
        return device_check.NO_DEVICE

    from assets.common.params import parse
    from assets.hir import data as D
    from assets.hir import rl, runs
    from assets.hir.params import HirParams
    from resources.profiles import load_params

    gpu = parse(HirParams, load_params("hir", "gpu"), "hir.gpu")
    p = gpu
    if args.tiny:
        smoke = parse(HirParams, load_params("hir", "smoke"), "hir.smoke")
        p = dataclasses.replace(gpu, model=smoke.model, rl=dataclasses.replace(gpu.rl, prompts_per_step=2))
    B, batch = p.rl.prompts_per_step, (8 if args.tiny else p.pretrain.batch_size)
    p = dataclasses.replace(p, data=dataclasses.replace(p.data, train_prompts=4 * B, test_prompts=8 if args.tiny
                                                        else 256, sft_pairs=32 if args.tiny else 512))
    corpus = runs.corpus(p)
    vocab_value = runs.vocab(corpus, p)
    v = D.Vocab(vocab_value["tokens"])
    frame = runs.full_dataset(corpus, vocab_value, p, np.random.default_rng(0), np.random.default_rng(1))
    train = rl.make_prompts(frame[frame["split"] == "train"], v)
    test = rl.make_prompts(frame[frame["split"] == "test"], v)
    seqs, starts = runs.sft_sequences(frame[frame["split"] == "sft"], v)
    prompts, responses = [s[:k] for s, k in zip(seqs, starts)], [s[k:] for s, k in zip(seqs, starts)]
    out: dict = {"device": args.device, "model": dataclasses.asdict(p.model), "vocab": len(v),
                 "prompts_per_step": B, "group_size": p.rl.group_size, "max_new": p.rl.max_new}

    # 1. parity
    torch.manual_seed(0)
    config = {"vocab_size": len(v), **dataclasses.asdict(p.model)}
    cpu = rl.build_model(**config)
    dev = copy.deepcopy(cpu).to(args.device)
    with torch.no_grad():
        tokens, _ = next(rl.lm_batches(seqs, starts, batch, 1, np.random.default_rng(2), v.pad))
        logits = [m(tokens[:, :-1].to(next(m.parameters()).device)).logits.cpu() for m in (cpu, dev)]
        logps = [rl.sequence_logprobs(m, prompts, responses, v.pad)[0].cpu() for m in (cpu, dev)]
    out["logit_max_rel_diff"] = float((logits[0] - logits[1]).abs().max() / logits[0].abs().max())
    out["logprob_max_abs_diff"] = float((logps[0] - logps[1]).abs().max())
    greedy = [rl.sample_responses(m, test, 1, v, p.rl.max_new, 1.0, torch.Generator().manual_seed(3),
                                  greedy=True).ids for m in (cpu, dev)]
    out["greedy_agreement"] = float(np.mean([a == b for a, b in zip(*greedy, strict=True)]))

    # one PPO update on one HiR batch collected on the CPU: loss and clipped gradient, then the weights
    one = dataclasses.replace(p.rl, minibatches=1)
    items, _, _ = rl.collect(cpu, cpu, train[:B], rl.METHOD_SPECS["hir"], 0, v, one,
                             torch.Generator().manual_seed(4), np.random.default_rng(4))
    updates, grads = [], []
    for m in (cpu, dev):
        opt = torch.optim.Adam(m.parameters(), lr=p.rl.lr)
        updates.append(rl.ppo_update(m, opt, items, one, np.random.default_rng(5), v.pad))
        grads.append(torch.cat([q.grad.flatten().cpu() for q in m.parameters() if q.grad is not None]))
    out["ppo_kl_equal"] = updates[0][0] == updates[1][0]          # from the CPU-side log-probs of the batch
    out["ppo_loss_abs_diff"] = abs(updates[0][1] - updates[1][1])   # ≈ 0 on both (ratio 1, centred advantages)
    out["ppo_grad_max_abs"] = float(grads[0].abs().max())
    out["ppo_grad_max_rel_diff"] = float((grads[0] - grads[1]).abs().max() / grads[0].abs().max())
    out["ppo_params_max_abs_diff"] = float(max((a - b.cpu()).abs().max() for a, b in
                                              zip(cpu.state_dict().values(), dev.state_dict().values(), strict=True)))
    losses = [rl.train_lm(m, seqs, starts, 3, batch, p.sft.lr, np.random.default_rng(6), v.pad) for m in (cpu, dev)]
    out["train_loss_rel_diff"] = float(np.max(np.abs(np.subtract(*losses)) / np.abs(losses[0])))
    ok = (out["logit_max_rel_diff"] <= LOGIT_TOL and out["logprob_max_abs_diff"] <= LOGPROB_TOL
          and out["ppo_kl_equal"] and out["ppo_grad_max_abs"] > 0 and out["ppo_grad_max_rel_diff"] <= GRAD_TOL
          and out["train_loss_rel_diff"] <= LOSS_TOL)

    # RL steps on the device (sampling from the device's stream): finite, budget accounting
    sync = device_check.synchronizer(args.device)
    ref = copy.deepcopy(dev)
    for q in ref.parameters():
        q.requires_grad_(False)
    n, g = p.rl.group_size, p.rl.generated
    steps: dict[str, list[dict]] = {}
    accounting = True
    for method in ("hir", "grpo_binary"):
        policy = copy.deepcopy(dev)
        opt = torch.optim.Adam(policy.parameters(), lr=p.rl.lr)
        generator, rng = torch.Generator().manual_seed(7), np.random.default_rng(7)
        steps[method] = []
        for step in range(2 if args.tiny else 3):
            sync()
            stats, _ = rl.rl_step(policy, ref, opt, train[(step % 4) * B:(step % 4 + 1) * B], rl.METHOD_SPECS[method],
                                  step, v, p.rl, generator, rng)
            sync()
            steps[method].append(stats)
            if method == "hir":       # fewer replays than slots only when too few partial successes
                accounting &= (stats["generated"] == (g + stats["resample_n"]) * B
                               and stats["sequences"] == stats["generated"] + stats["replays"] <= n * B)
            else:
                accounting &= stats["generated"] == stats["sequences"] == n * B
        out[f"{method}_finite"] = (all(bool(torch.isfinite(t).all()) for t in policy.state_dict().values())
                                   and all(np.isfinite(s["loss"]) and np.isfinite(s["kl_mean"]) for s in steps[method]))
    out["rl_accounting_ok"] = bool(accounting)
    ok = ok and accounting and out["hir_finite"] and out["grpo_binary_finite"]

    # 2. speed on the device (the first RL step of each method is the warm-up)
    for method, stats in steps.items():
        warm = stats[1:]
        out[f"{method}_step"] = {k: float(np.median([s[k] for s in warm])) for k in PHASES}
        out[f"{method}_generated_tokens"] = int(np.median([s["generated_tokens"] for s in warm]))
    sync()
    started = time.perf_counter()
    rl.evaluate(dev, ref, test, v, p.rl.max_new, 8)
    sync()
    out["eval_seconds"] = time.perf_counter() - started
    out["eval_prompts"] = len(test)
    train_steps = 3 if args.tiny else 50
    sync()
    started = time.perf_counter()
    rl.train_lm(dev, seqs, starts, train_steps, batch, p.sft.lr, np.random.default_rng(9), v.pad)
    sync()
    out["train_steps_per_s"] = train_steps / (time.perf_counter() - started)
    out["train_batch"] = batch
    out["projection"] = projection(device_check, gpu, out, steps, args.tiny)
    out["parity_ok"] = bool(ok)
    return device_check.finish(out, ok, args.out)


if __name__ == "__main__":
    sys.exit(main())
