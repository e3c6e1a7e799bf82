"""lari device check (issue 49): cpu/device parity of the gpu profile's point-map and stop UNets, then a
timed slice of their training on the device and the projected gpu-profile time.

1. parity — model.build of the gpu profile's nets (128² images, width 32, 4 levels; the point-map net
   with L = 5 heads and the stop net with L + 1 classes), seeded on the CPU and copied to `--device`,
   on PARITY_IMAGES random RGB images with random layered GT (positive depths, a random stop index
   per pixel): the outputs, model.pointmap_loss (with its per-image SSI solve) / model.stop_loss and
   their gradients, one AdamW step (the profile's betas, weight decay) and the loss after it. TF32 off.
   Exit 1 past the tolerances below.
2. timed slice — model.train_net (the pipeline's loop: batch sampling, CPU→device copies, AdamW,
   cosine lr) for STEPS steps at the profile's batch on the device, after a one-step warm-up, for every
   net the profile trains: point-map L ∈ {5, 1} and the ablation L ∈ {2, 3, 4}, and the stop net.
   Projection: s/step × train.steps × the runs of runs.training_jobs (kinds × seeds, the ablation at
   the first seed of objects only).

    .venv/bin/python benchmarks/lari_device_check.py --device cuda --out /tmp/lari_device.json
    .venv/bin/python benchmarks/lari_device_check.py --device cpu --tiny     # exercises the code (tests)

--tiny: the smoke profile's sizes (16², width 16, 3 levels, L = 4), one timed step. On `--device cpu`
parity is exact.
"""
from __future__ import annotations

import sys
from pathlib import Path

FORWARD_TOL = 1e-3      # max |Δ output| / max |output| (the point-map's exp remap amplifies)
GRAD_TOL = 1e-2         # max |Δ g| / max |g| (GroupNorm, the SSI least squares)
STEP_TOL = 1e-2         # ‖Δθ_cpu − Δθ_dev‖ / ‖Δθ_cpu‖ of one AdamW step
LOSS_TOL = 1e-4         # relative |Δ loss| before and after the step
STEPS = 3               # timed training steps per net (gpu sizes)
PARITY_IMAGES = 4
KINDS = ("object", "room")      # runs.KINDS


def runs_per_net(p) -> dict[str, int]:
    """Training runs of each net (runs.training_jobs): {"pointmap_L5": 6, "pointmap_L1": 6, …, "stop": 6}."""
    n = len(KINDS) * len(p.seeds)
    out = {f"pointmap_L{p.model.layers}": n, "pointmap_L1": n}
    for L in p.model.ablation_layers:
        out[f"pointmap_L{L}"] = out.get(f"pointmap_L{L}", 0) + 1
    out["stop"] = n
    return out


def main(argv: list[str] | None = None) -> int:
    root = Path(__file__).resolve().parents[1]
    sys.path[:0] = [str(root), str(root / "benchmarks")]
    from assets.common import device_check

    args = device_check.arguments(argv)
    torch = device_check.prepare(args.device)
    if torch is None:
        return device_check.NO_DEVICE

    import _torch_parity as T
    import numpy as np

    from assets.common.params import parse
    from assets.lari import model as NN
    from assets.lari.params import LariParams
    from resources.profiles import load_params

    gpu = parse(LariParams, load_params("lari", "gpu"), "lari.gpu")
    p = parse(LariParams, load_params("lari", "smoke"), "lari.smoke") if args.tiny else gpu
    m, t, H = p.model, p.train, p.image
    rng = np.random.default_rng(0)

    def data(n: int, L: int):
        rgb = rng.integers(0, 256, size=(n, H, H, 3), dtype=np.uint8)
        stop = rng.integers(0, L + 1, size=(n, H, H)).astype(np.int64)
        points = np.concatenate([rng.normal(size=(n, H, H, L, 2)), rng.uniform(0.5, 3.0, size=(n, H, H, L, 1))], -1)
        return rgb, points.astype(np.float32), stop

    def adamw(ps):
        return torch.optim.AdamW(ps, lr=t.lr, betas=tuple(t.betas), weight_decay=t.weight_decay)

    out: dict = {"device": args.device, "tiny": args.tiny, "image": H, "model": {"width": m.width, "levels": m.levels,
                                                                                 "layers": m.layers}, "parity": {}}
    ok = True
    rgb, points, stop = data(PARITY_IMAGES, m.layers)
    batch = {"x": NN.to_batch(rgb), "p": torch.from_numpy(points), "s": torch.from_numpy(stop)}
    batch["mask"] = torch.arange(m.layers)[None, None, None, :] < batch["s"][..., None]
    losses = {"pointmap": lambda net, b: NN.pointmap_loss(net(b["x"]), b["p"], b["mask"]),
              "stop": lambda net, b: NN.stop_loss(net(b["x"]), b["s"])}
    for kind, loss in losses.items():
        torch.manual_seed(0)
        net = NN.build(NN.NetConfig(kind, m.layers, m.width, m.levels, H))
        r = T.step_parity(torch, net, args.device, lambda n, b: n(b["x"]), loss, batch, T.move, adamw)
        r["ok"] = T.judged(r, FORWARD_TOL, GRAD_TOL, STEP_TOL, LOSS_TOL)
        out["parity"][f"{kind}_L{m.layers}"] = r
        ok &= r["ok"]

    steps = 1 if args.tiny else STEPS
    timed = {}
    train = {"batch": t.batch, "lr": t.lr, "lr_min": t.lr_min, "weight_decay": t.weight_decay,
             "betas": tuple(t.betas), "seed": 0, "device": args.device}
    for name in runs_per_net(gpu):
        kind, L = ("stop", m.layers) if name == "stop" else ("pointmap", int(name.rsplit("L", 1)[1]))
        if args.tiny and kind == "pointmap" and L > m.layers:
            L = m.layers
        rgb, points, stop = data(t.batch, max(L, m.layers))
        cfg = NN.NetConfig(kind, L, m.width, m.levels, H)
        NN.train_net(cfg, rgb, points, stop, steps=1, **train)                  # warm-up
        res = NN.train_net(cfg, rgb, points, stop, steps=steps, **train)
        timed[name] = {"seconds_per_step": res["seconds"] / steps, "steps": steps, "layers": L,
                       "parameters": res["parameters"]}
    out["timed"] = timed
    units = runs_per_net(gpu)
    out["projection"] = device_check.projection(
        [(f"{name} training step (batch {gpu.train.batch}, {gpu.image}²)", timed[name]["seconds_per_step"],
          gpu.train.steps * n) for name, n in units.items()],
        note="measured at --tiny sizes; " * args.tiny
        + "leaves out mesh generation, the torch ray-caster annotation and RGB renders (3,000 objects × 12 views, "
          "1,000 rooms × 8), GT surface points, evaluation (predictions, SSI alignment, Chamfer / F-score, the "
          "threshold sweep), the trimesh perf benchmark and checkpoint writes")
    out["parity_ok"] = bool(ok)
    return device_check.finish(out, ok, args.out)


if __name__ == "__main__":
    sys.exit(main())
