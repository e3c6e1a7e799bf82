"""skill_recompose device check (issue 49): cpu/device parity of the Variant B transformer's meta-training,
a timed slice of it (the dominant phase of the gpu profile) and the projection.

- parity: the loss curve of STEPS `icl.train` steps from one seed on the CPU and on the device (the
  meta-training runs on the compute device since issue 49; the test-time predictions and the MiniLM
  embeddings stay on the CPU): max relative difference ≤ TOLERANCE.
- timed slice (one torch thread as runs.icl_job): `icl.train` on the device at the gpu profile's model
  (layers, d_model, heads, max_len) and batch for STEPS steps (after a warm-up step) on episodes of
  the real shape — context segments (verb, code) and query verbs with codes, drawn at random from
  tasks.VERBS and valid code fields: make_batch pads every episode to max_len, so a step's cost does
  not depend on the episodes' content — then seconds per step × steps × models (seeds × 2 variants).

    .venv/bin/python benchmarks/skill_recompose_device_check.py --device cuda --out /tmp/skill_recompose_device.json
    .venv/bin/python benchmarks/skill_recompose_device_check.py --device cpu --tiny     # exercises the code (tests)
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

STEPS, TINY_STEPS = 2, 2
CONTEXT, QUERY = 40, 8            # segments per context, skill steps per query (≤ max_len together)
VARIANTS = ("icl_labelled", "icl_raw")
TOLERANCE = 1e-3                  # max relative difference of a step's loss, cpu vs device


def episodes(rng: np.random.Generator, count: int, verbs: tuple[str, ...]) -> list[tuple]:
    """Random episodes of the meta-training shape: ([(verb, code)] context, query verbs, query codes)."""
    def code():
        x, y, z = (int(v) for v in rng.integers(-8, 9, 3))
        return x, y, z, ("a" if rng.random() < 0.5 else "d"), int(rng.integers(0, 8)), int(rng.integers(0, 2))

    return [([(verbs[int(rng.integers(len(verbs)))], code()) for _ in range(CONTEXT)],
             [verbs[int(rng.integers(len(verbs)))] for _ in range(QUERY)], [code() for _ in range(QUERY)])
            for _ in range(count)]


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))      # the repo root, from any directory
    from assets.common import device_check

    args = device_check.arguments(argv)
    torch = device_check.prepare(args.device)          # also one torch thread, as runs.icl_job
    if torch is None:
        return device_check.NO_DEVICE

    from assets.common.params import parse
    from assets.skill_recompose import icl
    from assets.skill_recompose.params import SkillRecomposeParams
    from assets.skill_recompose.tasks import VERBS
    from resources.profiles import load_params

    gpu = parse(SkillRecomposeParams, load_params("skill_recompose", "gpu"), "skill_recompose.gpu")
    p = parse(SkillRecomposeParams, load_params("skill_recompose", "smoke"), "skill_recompose.smoke").icl \
        if args.tiny else gpu.icl
    steps = TINY_STEPS if args.tiny else STEPS
    data = episodes(np.random.default_rng(0), 4 * p.batch, VERBS)
    def fit(variant: str, device: str):
        return icl.train(torch, data, variant == "icl_labelled", 1, p.layers, p.d_model, p.heads, p.max_len,
                         steps, p.batch, p.lr, device=device)

    sync = device_check.synchronizer(args.device)
    icl.train(torch, data, True, 0, p.layers, p.d_model, p.heads, p.max_len, 1, p.batch, p.lr,
              device=args.device)                                                          # warm-up
    per_step, losses = {}, {}
    for variant in VARIANTS:
        sync()
        started = time.perf_counter()
        model, curve = fit(variant, args.device)
        sync()
        per_step[variant] = (time.perf_counter() - started) / steps
        losses[variant] = curve
    cpu_curve = np.asarray(fit(VARIANTS[0], "cpu")[1])
    diff = float(np.max(np.abs(np.asarray(losses[VARIANTS[0]]) - cpu_curve) / np.maximum(np.abs(cpu_curve), 1e-12)))
    parity = {"loss_rel_diff": diff, "tolerance": TOLERANCE, "steps": steps, "ok": bool(diff <= TOLERANCE)}
    started = time.perf_counter()
    codes = icl.predict(torch, model.cpu(), [e[:2] + (None,) for e in data[:64]], False, 0, p.max_len)
    predict_seconds = (time.perf_counter() - started) / len(codes)
    finite = all(np.isfinite(v).all() for v in losses.values()) and all(len(c) == QUERY for c in codes)
    models = len(gpu.seeds)
    report = {"paper": "skill_recompose", "device": args.device, "tiny": args.tiny, "parity": parity,
              "parity_ok": parity["ok"],
              "slice": {"steps": steps, "layers": p.layers, "d_model": p.d_model, "heads": p.heads, "batch": p.batch,
                        "max_len": p.max_len, "seconds_per_step": per_step, "losses": losses,
                        "predict_seconds_per_episode": predict_seconds, "finite": bool(finite)},
              "projection": device_check.projection(
                  [(f"{v} meta-training step ({gpu.icl.steps} steps × {models} seeds)", per_step[v],
                    gpu.icl.steps * models) for v in VARIANTS],
                  note=f"serial seconds on {args.device} (gpu profile: workers = {gpu.workers}); leaves out D&R itself "
                       f"(demos, keyframes, MiniLM labels, leave-one-seen-task-out search, contexts, rollouts), "
                       f"Variant B's test-time predictions and the bootstrap")}
    return device_check.finish(report, bool(finite) and parity["ok"], args.out)


if __name__ == "__main__":
    sys.exit(main())
