"""logit_distill device check (issue 49): cpu/device parity of the gpu profile's teachers and students,
then a timed slice of their training on the device and the projected gpu-profile time.

1. parity — per dataset of the gpu profile (spirals: MLP 2 → 512 ×3 → 2; digits: MLP 64 → 256 ×2 → 5
   with the concept head; shapes: the CNN 32 → 64 → 128 channels on 32×32 images, concept head),
   the model of runs.model_config (seeded on the CPU, copied to `--device`) on one batch of the
   profile's batch size (random inputs of the dataset's width: the weights' and the batch's sizes
   are the profile's): the teacher's (embedding, logits, concept logits) and model.teacher_loss,
   and a student under each distillation objective (kl, l1, l2, ce against the teacher's logits):
   the loss and its gradient, one Adam step and the loss after it. Dropout off. TF32 off.
   Exit 1 past the tolerances below.
2. timed slice — model.train (the pipeline's loop: randperm, slice, Adam, schedule) for STEPS steps
   of a teacher and of a KL student per dataset on the device, after one warm-up step. Projection:
   per dataset, the optimizer steps of every teacher (epochs × ⌈n_train / batch⌉ × teacher seeds),
   every student (× objectives × student seeds × teacher seeds) and the loop-vs-bare throughput
   timing (2 repeats × 2 loops × throughput_epochs per dataset × objective); n_train is half the
   dataset (data.stratified_split's 50 %).

    .venv/bin/python benchmarks/logit_distill_device_check.py --device cuda --out /tmp/logit_distill_device.json
    .venv/bin/python benchmarks/logit_distill_device_check.py --device cpu --tiny    # exercises the code (tests)

--tiny: the smoke profile's sizes (shapes: its toy CNN), one timed step. On `--device cpu` parity is exact.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

FORWARD_TOL = 1e-4      # max |Δ output| / max |output| (float32, ≤ 5 layers)
GRAD_TOL = 1e-3         # max |Δ g| / max |g|
STEP_TOL = 1e-2         # ‖Δθ_cpu − Δθ_dev‖ / ‖Δθ_cpu‖ of one Adam step
LOSS_TOL = 1e-4         # relative |Δ loss| before and after the step
STEPS = 10              # timed optimizer steps per model (gpu sizes)
TRAIN_FRACTION = 0.5    # data.stratified_split: 50 / 25 / 25


def dataset_rows(name: str, d) -> int:
    """Rows of one dataset at its profile (data.make_spirals / make_digits_concept / make_shapes_concept)."""
    if name == "spirals":
        return d.n_labels * d.arms_per_label * d.points_per_arm
    if name == "digits":
        return (d.max_images or 1797) * d.shifts
    return d.per_class * d.n_classes


def input_width(name: str, d) -> int:
    return {"spirals": 2, "digits": 64}.get(name, d.channels * d.image_size ** 2)


def optimizer_steps(params) -> dict[str, dict[str, int]]:
    """Per dataset: teacher, student and throughput-timing optimizer steps of the whole profile."""
    out = {}
    for name in params.datasets:
        d = params.dataset(name)
        n_train = int(round(TRAIN_FRACTION * dataset_rows(name, d)))
        t_steps, s_steps = math.ceil(n_train / d.teacher.batch_size), math.ceil(n_train / d.student.batch_size)
        out[name] = {"teacher": d.teacher.epochs * t_steps * len(params.teacher_seeds),
                     "student": d.student.epochs * s_steps * len(params.objectives) * len(params.student_seeds)
                     * len(params.teacher_seeds),
                     "throughput": 2 * 2 * params.throughput_epochs * s_steps * len(params.objectives)}
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

    from assets.common.params import parse
    from assets.logit_distill import model as net
    from assets.logit_distill import runs
    from assets.logit_distill.params import LogitDistillParams
    from resources.profiles import load_params

    gpu = parse(LogitDistillParams, load_params("logit_distill", "gpu"), "logit_distill.gpu")
    p = parse(LogitDistillParams, load_params("logit_distill", "smoke"), "logit_distill.smoke") if args.tiny else gpu
    sync = device_check.synchronizer(args.device)
    out: dict = {"device": args.device, "tiny": args.tiny, "parity": {}, "timed": {}}
    ok = True
    g = torch.Generator().manual_seed(0)
    for name in gpu.datasets:
        d = p.dataset(name)
        width, k = input_width(name, d), d.n_classes
        bs = d.teacher.batch_size
        x = torch.randn(bs, width, generator=g)
        y = torch.randint(0, k, (bs,), generator=g)
        c = torch.randint(0, max(1, d.n_concepts), (bs,), generator=g)
        z = 3 * torch.randn(bs, k, generator=g)
        batch = {"x": x, "y": y, "c": c, "z": z}

        def adam(ps, lr=d.teacher.lr):
            return torch.optim.Adam(ps, lr=lr)

        def teacher_loss(m, b):
            _, logits, concept = m(b["x"])
            return net.teacher_loss(logits, concept, b["y"], b["c"] if concept is not None else None)

        torch.manual_seed(0)
        teacher = net.EmbeddingNet(runs.model_config(d, width, k, True))
        res = {"teacher": T.step_parity(torch, teacher, args.device, lambda m, b: m(b["x"]), teacher_loss, batch,
                                        T.move, adam)}
        for objective in gpu.objectives:
            torch.manual_seed(0)
            student = net.EmbeddingNet(runs.model_config(d, width, k, False))
            res[f"student_{objective}"] = T.step_parity(
                torch, student, args.device, lambda m, b: m(b["x"]),
                lambda m, b, o=objective: net.distillation_loss(o, m(b["x"])[1], b["z"], b["y"]), batch, T.move,
                lambda ps, lr=d.student.lr: torch.optim.Adam(ps, lr=lr))
        for r in res.values():
            r["ok"] = T.judged(r, FORWARD_TOL, GRAD_TOL, STEP_TOL, LOSS_TOL)
            ok &= r["ok"]
        out["parity"][name] = res

        steps = 1 if args.tiny else STEPS
        timed = {}
        for role, cfg in (("teacher", d.teacher), ("student", d.student)):
            n = steps * cfg.batch_size
            X = torch.randn(n, width, generator=g).to(args.device)
            Y = torch.randint(0, k, (n,), generator=g).to(args.device)
            C = torch.randint(0, max(1, d.n_concepts), (n,), generator=g).to(args.device)
            Z = (3 * torch.randn(n, k, generator=g)).to(args.device)
            model = net.EmbeddingNet(runs.model_config(d, width, k, role == "teacher")).to(args.device)
            if role == "teacher":
                def loss(m, i, X=X, Y=Y, C=C):
                    _, logits, concept = m(X[i])
                    return net.teacher_loss(logits, concept, Y[i], C[i] if concept is not None else None)
            else:
                def loss(m, i, X=X, Y=Y, Z=Z):
                    return net.distillation_loss("kl", m(X[i])[1], Z[i], Y[i])
            one = runs.train_config(cfg)
            net.train(model, X[: cfg.batch_size], loss, type(one)(**{**one.as_dict(), "epochs": 1}), 0)   # warm-up
            sync()
            result = net.train(model, X, loss, type(one)(**{**one.as_dict(), "epochs": 1}), 1)
            timed[role] = {"seconds_per_step": result.seconds / steps, "steps": steps, "batch": cfg.batch_size}
        out["timed"][name] = timed
    units = optimizer_steps(gpu)
    parts = []
    for name, u in units.items():
        t = out["timed"][name]
        parts += [(f"{name} teacher step", t["teacher"]["seconds_per_step"], u["teacher"]),
                  (f"{name} student step", t["student"]["seconds_per_step"], u["student"]),
                  (f"{name} loop-vs-bare throughput step", t["student"]["seconds_per_step"], u["throughput"])]
    out["optimizer_steps"] = units
    out["projection"] = device_check.projection(
        parts, note="measured at --tiny sizes; " * args.tiny
        + "leaves out data generation (spirals, shifted digits, 30,000 rendered shapes), teacher outputs, "
          "representation metrics / d_rep subsets / concept probes (CPU, numpy / sklearn), checkpoint writes; "
          "n_train taken as half of each dataset")
    out["parity_ok"] = bool(ok)
    return device_check.finish(out, ok, args.out)


if __name__ == "__main__":
    sys.exit(main())
