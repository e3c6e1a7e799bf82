"""flowtracer device check (issue 25, gpu profile): cpu/device parity of the ArithChain pipeline,
then its speed on the device.

One script, a few minutes on a GPU machine (nothing here is claimed):
1. parity — one TinyLM (seeded on the CPU, copied to `--device`) on ArithChain test problems:
   the teacher-forced logits, the flow throughput τ and the masking answers of the analysis
   (analysis.score_tokens / masking), and 3 SFT steps on the same numpy batch stream, on the CPU
   and on the device; TF32 off so CUDA matmuls are float32. Sampling cannot match bit for bit
   (the device has its own random stream): one GRPO step per flow rule must stay finite with
   flow conservation and absorbed mass within 1e-6. Fails (exit 1) past the tolerances below.
2. speed — on the device: SFT steps/s at the profile's batch, and the seconds of a GRPO step
   (flowtracer credit) with its flow-analysis share.

    .venv/bin/python benchmarks/flowtracer_device_check.py --device cuda --out /tmp/flowtracer_device.json
    .venv/bin/python benchmarks/flowtracer_device_check.py --device cpu --tiny     # exercises the code (tests)

The default model and sizes are the gpu profile's (6 layers, d = 256, 64 prompts × G = 8); --tiny
uses the smoke profile's model and small counts.
"""
from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

LOGIT_TOL = 1e-3        # max |Δ| of the teacher-forced logits, relative to max |logit|
TAU_TOL = 1e-4          # max |Δτ| (τ is a probability mass per token, float64 from float32 attention)
LOSS_TOL = 1e-3         # relative |Δ| of the SFT losses
FLOW_TOL = 1e-6         # conservation and absorbed mass on the device (the gate's tolerance)


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))      # the repo root, from any directory
    from assets.common import device_check

    args = device_check.arguments(argv)
    torch = device_check.prepare(args.device)
    if torch is None:
        return device_check.NO_DEVICE

    from assets.common.params import parse
    from assets.flowtracer import analysis as A
    from assets.flowtracer import method as M
    from assets.flowtracer import policy as P
    from assets.flowtracer import runs, tasks
    from assets.flowtracer.params import FlowtracerParams
    from resources.profiles import load_params

    gpu = parse(FlowtracerParams, load_params("flowtracer", "gpu"), "flowtracer.gpu")
    p = gpu
    if args.tiny:
        smoke = parse(FlowtracerParams, load_params("flowtracer", "smoke"), "flowtracer.smoke")
        p = dataclasses.replace(smoke, data=gpu.data, model=dataclasses.replace(smoke.model,
                                                                                 context=gpu.model.context))
    n = 12 if args.tiny else 256
    data = dataclasses.replace(p.data, train=200 if args.tiny else 4000, val=8, test=n, rl=4 * n, rl_eval=8)
    p = dataclasses.replace(p, data=data)
    task = tasks.get(p.data.task)
    frame = runs.dataset(p, np.random.default_rng(0))
    test = runs.split(frame, "test")
    out: dict = {"device": args.device, "task": task.NAME, "model": dataclasses.asdict(p.model), "problems": n}

    # 1. parity
    torch.manual_seed(0)
    cpu = P.build_model(**runs.model_config(p), task=task)
    dev = P.build_model(**runs.model_config(p), task=task)
    dev.load_state_dict(cpu.state_dict())
    dev = dev.to(args.device)
    for m in (cpu, dev):
        m.eval()
    scored = {}
    for name, m in (("cpu", cpu), ("dev", dev)):
        generator = torch.Generator().manual_seed(1)
        scored[name] = A.score_tokens(m, test, p.flow.layers, p.flow.drop_bos, generator, task)
        scored[name]["masking"] = A.masking(m, test, scored[name], p.analysis.mask_fraction, ("flow", "random"),
                                            generator, task)
    with torch.no_grad():
        logits = [m(s["tokens"], key_mask=s["key_mask"]).logits.cpu() for m, s in ((cpu, scored["cpu"]),
                                                                                  (dev, scored["dev"]))]
    out["logit_max_rel_diff"] = float((logits[0] - logits[1]).abs().max() / logits[0].abs().max())
    tau = [torch.nan_to_num(s["scores"]["flow"].cpu(), nan=0.0) for s in (scored["cpu"], scored["dev"])]
    out["tau_max_abs_diff"] = float((tau[0] - tau[1]).abs().max())
    out["masking_agreement"] = float((scored["cpu"]["masking"]["answer_changed"].to_numpy()
                                      == scored["dev"]["masking"]["answer_changed"].to_numpy()).mean())
    out["device_conservation_error"] = float(scored["dev"]["conservation_error"].max())
    examples = P.sft_examples(runs.split(frame, "train"), task)
    batch = 8 if args.tiny else p.sft.batch_size
    losses = [P.sft_train(m, examples, 3, batch, p.sft.lr, 0, 0, p.data.min_ops, p.data.max_ops,
                          np.random.default_rng(2)) for m in (cpu, dev)]
    out["sft_loss_rel_diff"] = float(np.max(np.abs(np.subtract(*losses)) / np.abs(losses[0])))
    ok = (out["logit_max_rel_diff"] <= LOGIT_TOL and out["tau_max_abs_diff"] <= TAU_TOL
          and out["sft_loss_rel_diff"] <= LOSS_TOL and out["device_conservation_error"] <= FLOW_TOL)

    # one GRPO step per flow rule on the device: finite, flow sound (sampling has the device's stream)
    rl = [(r.prompt, int(r.answer)) for r in runs.split(frame, "rl").itertuples()]
    g = p.grpo
    prompts = 4 if args.tiny else g.prompts_per_step
    opt = torch.optim.Adam(dev.parameters(), lr=g.lr)
    generator = torch.Generator().manual_seed(3)
    sync = device_check.synchronizer(args.device)
    steps = []
    for i, rule in enumerate(("flowtracer", "bottom", "flowtracer", "flowtracer")):
        sync()
        stats = M.grpo_step(dev, opt, rl[i * prompts:(i + 1) * prompts], rule, group_size=g.group_size,
                            max_new=runs.max_new(p), temperature=g.temperature, clip=g.clip,
                            fraction=p.flow.top_fraction, gamma=p.flow.gamma, layers=p.flow.layers,
                            drop_bos=p.flow.drop_bos, log_space=p.flow.log_space, generator=generator, task=task)
        sync()
        steps.append(stats)
    flow_ok = all(s.get("conservation_error", 0.0) <= FLOW_TOL and s.get("absorbed_mass_error", 0.0) <= FLOW_TOL
                  and np.isfinite(s["loss"]) for s in steps)
    out["grpo_flow_ok"] = bool(flow_ok)
    out["grpo_finite"] = all(bool(torch.isfinite(t).all()) for t in dev.state_dict().values())
    ok = ok and flow_ok and out["grpo_finite"]

    # 2. speed on the device (the last two flowtracer steps are warm)
    warm = steps[2:]
    out["grpo_rollouts"] = int(warm[-1]["rollouts"])
    out["grpo_step_seconds"] = float(np.median([s["seconds_step"] for s in warm]))
    out["grpo_flow_share"] = float(np.median([s["seconds_credit"] / s["seconds_step"] for s in warm]))
    sft_steps = 3 if args.tiny else 50
    sync()
    started = time.perf_counter()
    P.sft_train(dev, examples, sft_steps, batch, p.sft.lr, 0, 0, p.data.min_ops, p.data.max_ops,
                np.random.default_rng(4))
    sync()
    out["sft_steps_per_s"] = sft_steps / (time.perf_counter() - started)
    seeds = len(gpu.seeds)
    out["projection"] = device_check.projection(
        [(f"SFT step (batch {batch}; max_steps per seed: an upper bound)", 1 / out["sft_steps_per_s"],
          gpu.sft.max_steps * seeds),
         (f"GRPO step ({out['grpo_rollouts']} rollouts, flow credit included)", out["grpo_step_seconds"],
          gpu.grpo.steps * seeds * len(runs.grpo_run_specs(gpu)))],
        note="measured at --tiny sizes; " * args.tiny
        + "leaves out data generation, SFT snapshot validation (the calibration band), the attention-flow "
          "analysis and masking, GRPO evaluations (every eval_every steps), bootstrap CIs, checkpoint writes")
    out["parity_ok"] = bool(ok)
    return device_check.finish(out, ok, args.out)


if __name__ == "__main__":
    sys.exit(main())
