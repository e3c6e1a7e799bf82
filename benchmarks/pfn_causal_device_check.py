"""pfn_causal device check (issue 49): cpu/device parity of the gpu profile's CausalPFN, then a timed
slice of its training and MSF estimation on the device and the projected gpu-profile time.

1. parity — the gpu profile's model (d = 8 covariates, 12 layers, d_model 192, 6 heads, the bar head
   with borders from method.bar_borders), built by model.build_model on the CPU and copied to
   `--device`, on one prior task batch (method.task_stream, PARITY_TASKS tasks): the head outputs,
   model.batch_loss and its gradient, one AdamW step (clip 1.0) and the loss after it. TF32 off.
   Exit 1 past the tolerances below.
2. timed slice — on the device: STEPS steps of method.run_training (the pipeline's loop) at the gpu
   profile's batch (64 tasks) after one warm-up step, and one method.subset_losses pass (every one of
   the 255 subsets over msf.estimate_scms fresh SCMs: MSF's and random-FT's per-round estimate).
   Projection: every training step the profile runs (pretraining + full-coverage control, continued,
   PWF per target, MSF and random-FT rounds, the PWF and MSF acquisition ablations; one step cost) and
   every NLL estimate.

    .venv/bin/python benchmarks/pfn_causal_device_check.py --device cuda --out /tmp/pfn_causal_device.json
    .venv/bin/python benchmarks/pfn_causal_device_check.py --device cpu --tiny    # exercises the code (tests)

--tiny: the smoke profile's sizes with the gpu profile's bar head (16 bins), one timed step.
On `--device cpu` parity is exact.
"""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

FORWARD_TOL = 1e-3      # max |Δ head output| / max |output|
GRAD_TOL = 1e-2         # max |Δ g| / max |g|
STEP_TOL = 1e-2         # ‖Δθ_cpu − Δθ_dev‖ / ‖Δθ_cpu‖ of one AdamW step
LOSS_TOL = 1e-4         # relative |Δ loss| before and after the step
STEPS = 5               # timed training steps (gpu sizes)
PARITY_TASKS = 16


def training_steps(p) -> dict[str, int]:
    """Training steps of each regime over the profile's seeds (assets/pfn_causal/runs.py)."""
    seeds, targets = len(p.seeds), p.pwf.target_subsets * p.pwf.values_per_subset
    return {"pretrain": p.pretrain.steps * seeds * (2 if p.full_coverage else 1),
            "continued": p.pwf.steps * seeds,
            "pwf": p.pwf.steps * targets * seeds,
            "msf_and_random_ft": 2 * p.msf.rounds * p.msf.steps_per_round * seeds,
            "pwf_ablation": sum(p.pwf.steps * int(m) * p.pwf.target_subsets for m in p.pwf.ablation_multipliers),
            "msf_ablation": p.msf.rounds * p.msf.steps_per_round * len(p.msf_ablation.seeds)}


def main(argv: list[str] | None = None) -> int:
    root = Path(__file__).resolve().parents[1]
    sys.path[:0] = [str(root), str(root / "benchmarks")]
    from assets.common import device_check

    args = device_check.arguments(argv)
    torch = device_check.prepare(args.device)
    if torch is None:
        return device_check.NO_DEVICE

    import _torch_parity as T

    from assets.common.params import parse
    from assets.common.pfn.train import stream_rng
    from assets.pfn_causal import method as ME
    from assets.pfn_causal import model as M
    from assets.pfn_causal import prior as P
    from assets.pfn_causal import runs
    from assets.pfn_causal.params import PFNCausalParams
    from resources.profiles import deep_merge, load_params

    gpu = parse(PFNCausalParams, load_params("pfn_causal", "gpu"), "pfn_causal.gpu")
    p = gpu
    if args.tiny:
        bar = {"model": {"head": "bar", "bins": 16}}
        p = parse(PFNCausalParams, deep_merge(load_params("pfn_causal", "smoke"), bar), "pfn_causal.smoke")
    prior, spec = runs.causal_prior(p), runs.pre_spec(p)
    borders = ME.bar_borders(prior, spec, p.model.bins, 0)
    model = M.build_model(runs.model_config(p), 0, borders)
    batch = ME.task_stream(prior, spec, 0, "device_check", PARITY_TASKS if not args.tiny else 4)(0)

    def where(m) -> str:
        return str(next(m.parameters()).device)

    def forward(m, b):
        t = M.tensors(b, where(m))
        return m(t["ctx_x"], t["ctx_y"], t["ctx_valid"], t["q_mask"], t["q_val"])

    def loss(m, b):
        return M.batch_loss(m, b, where(m))

    cfg = runs.pretrain_config(p)
    parity = T.step_parity(torch, model, args.device, forward, loss, batch, lambda b, d: b,
                           lambda ps: torch.optim.AdamW(ps, lr=cfg.lr, weight_decay=cfg.weight_decay),
                           clip=cfg.grad_clip)
    parity["ok"] = T.judged(parity, FORWARD_TOL, GRAD_TOL, STEP_TOL, LOSS_TOL)
    out: dict = {"device": args.device, "tiny": args.tiny, "model": runs.model_config(p).to_dict(),
                 "parity": parity}

    sync = device_check.synchronizer(args.device)
    steps = 1 if args.tiny else STEPS
    dev = M.build_model(runs.model_config(p), 0, borders)
    ME.run_training(dev, prior, spec, dataclasses.replace(cfg, steps=1), 0, "device_check/warmup", p.batch_size,
                    args.device)
    sync()
    result = ME.run_training(dev, prior, spec, dataclasses.replace(cfg, steps=steps), 0, "device_check/timed",
                             p.batch_size, args.device)
    sync()
    step_s = result.seconds_per_step
    subsets = P.all_subsets(p.n_covariates)
    estimate_s = T.seconds_per_call(lambda: ME.subset_losses(dev, prior, subsets, stream_rng(0, "device_check", 1),
                                                             p.msf.estimate_scms, p.value_range, args.device),
                                    1, sync, warmup=0)
    units = training_steps(gpu)
    out["timed"] = {"seconds_per_step": step_s, "steps": steps, "batch_size": p.batch_size,
                    "seconds_per_estimate": estimate_s, "subsets": len(subsets), "estimate_scms": p.msf.estimate_scms}
    out["projection"] = device_check.projection(
        [*((f"{k} training step (batch {gpu.batch_size}, prior tasks included)", step_s, n) for k, n in units.items()),
         ("MSF / random-FT subset-loss estimate (255 subsets)", estimate_s, 2 * gpu.msf.rounds * len(gpu.seeds))],
        note="measured at --tiny sizes; " * args.tiny
        + "leaves out validation nMSE (before/after pretraining), the finetune rule's query scores, the MSF "
          "acquisition ablation's nMSE estimates (Monte-Carlo truth), the eval bank "
          "(Monte-Carlo ground truth), predictions and the sklearn / g-formula baselines, checkpoint writes; "
          "training steps of every regime are costed at the pretraining step's time")
    ok = parity["ok"]
    out["parity_ok"] = bool(ok)
    return device_check.finish(out, ok, args.out)


if __name__ == "__main__":
    sys.exit(main())
