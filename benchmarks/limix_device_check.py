"""limix device check (issue 49): cpu/device parity of every gpu-profile variant's LimiX, then a timed
slice of its pretraining on the device and the projected gpu-profile time.

1. parity — for each variant of the gpu profile (linear / RaBEL / MLP / Periodic / PLE embeddings,
   S→N→F and F→S→N, the wide model) at the gpu profile's model size (d = 96, 12 layers, 6 heads,
   K = 64): the same LimiX (runs.build_model, seeded on the CPU, copied to `--device`) on the same
   prior batch (data.prior_batch, 2 tasks ≤ 64 rows: the model's size, not the batch's, is the
   profile's): query logits, model.task_loss and its gradient, one AdamW step (TrainConfig's betas,
   clip 1.0) and the loss after it. TF32 off. Exit 1 past the tolerances below.
2. timed slice — pfn.train.train (the pipeline's loop: AdamW, warm-up/cosine, clip) for STEPS
   steps per variant on the device at the gpu profile's tasks per step and prior (rows ≤ 512,
   features ≤ 40), after one warm-up step; the projection is Σ variants s/step × steps × seeds.

    .venv/bin/python benchmarks/limix_device_check.py --device cuda --out /tmp/limix_device.json
    .venv/bin/python benchmarks/limix_device_check.py --device cpu --tiny      # exercises the code (tests)

--tiny: the smoke profile's model and prior, one timed step. On `--device cpu` parity is exact.
assets/limix/runs.train_job trains on the compute device (its jobs carry compute.resolved_device());
the projection is what the same steps cost on the device.
"""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

FORWARD_TOL = 1e-3      # max |Δ logits| / max |logit| (float32, 12 post-norm layers)
GRAD_TOL = 1e-2         # max |Δ g| / max |g|
STEP_TOL = 1e-2         # ‖Δθ_cpu − Δθ_dev‖ / ‖Δθ_cpu‖ of one AdamW step
LOSS_TOL = 1e-4         # relative |Δ loss| before and after the step
STEPS = 3               # timed training steps per variant (gpu sizes)


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
    from assets.common.pfn.train import TrainConfig, stream_rng, train
    from assets.limix import data as D
    from assets.limix import model as M
    from assets.limix import runs
    from assets.limix.params import LimiXParams
    from resources.profiles import load_params

    gpu = parse(LimiXParams, load_params("limix", "gpu"), "limix.gpu")
    p = gpu
    if args.tiny:
        p = dataclasses.replace(parse(LimiXParams, load_params("limix", "smoke"), "limix.smoke"), variants=gpu.variants)
    t = p.train
    prior = runs.prior(p)
    small = dataclasses.replace(prior, rows=(min(64, prior.rows[1]),) * 2, features=(min(8, prior.features[1]),) * 2)
    batch = D.to_torch(D.prior_batch(small, stream_rng(0, "device_check", 0), 2))

    def forward(m, b):
        return m(b["x"], b["y"][:, :b["n_context"]], b["n_context"])

    def adamw(params):
        return torch.optim.AdamW(params, lr=t.lr, betas=(0.9, 0.999))

    out: dict = {"device": args.device, "tiny": args.tiny, "model": dataclasses.asdict(p.model),
                 "parity_batch": {"tasks": 2, "rows": int(batch["x"].shape[1]), "features": int(batch["x"].shape[2])}}
    ok = True
    parity = {}
    for variant in p.variants:
        model = runs.build_model(p, variant, 0)
        parity[variant] = T.step_parity(torch, model, args.device, forward, M.task_loss, batch, T.move, adamw,
                                        clip=t.grad_clip)
        parity[variant]["ok"] = T.judged(parity[variant], FORWARD_TOL, GRAD_TOL, STEP_TOL, LOSS_TOL)
        ok &= parity[variant]["ok"]
    out["parity"] = parity

    sync = device_check.synchronizer(args.device)
    steps = 1 if args.tiny else STEPS
    config = TrainConfig(steps=steps, lr=t.lr, warmup_steps=t.warmup_steps, min_lr_ratio=t.min_lr_ratio,
                         grad_clip=t.grad_clip)
    stream = D.prior_stream(prior, 0, "pretrain", t.tasks_per_step)
    timing = {}
    for variant in p.variants:
        model = runs.build_model(p, variant, 0).to(args.device)
        train(model, lambda s: T.move(stream(s), args.device), M.task_loss, dataclasses.replace(config, steps=1))
        sync()
        result = train(model, lambda s: T.move(stream(s), args.device), M.task_loss, config, start_step=1)
        sync()
        timing[variant] = {"seconds_per_step": result.seconds_per_step, "steps": steps}
    out["timed"] = timing
    out["tasks_per_step"] = t.tasks_per_step
    out["projection"] = device_check.projection(
        [(f"{v} pretraining step (prior batch included)", timing[v]["seconds_per_step"],
          gpu.train.steps * len(gpu.seeds)) for v in gpu.variants],
        note="measured at --tiny sizes; " * args.tiny
        + "leaves out held-out AUC evaluation, the rank / attention / prediction analyses, inference timings and "
          "the sklearn baselines (CPU), checkpoint writes; the mean step over a few prior shapes (rows, features "
          "vary by step)")
    out["parity_ok"] = bool(ok)
    return device_check.finish(out, ok, args.out)


if __name__ == "__main__":
    sys.exit(main())
