"""skill_recompose device check (issue 49): no device parity (the gpu profile trains on the CPU), then a
timed slice of its dominant phase, the Variant B transformer's meta-training, and the projection.

- parity: n/a. `icl.train` / `icl.predict` build the model and the batches on the CPU (no device
  argument; runs.icl_job pins one torch thread) at every profile, and the MiniLM embeddings are
  pinned to the CPU by assets/common/minilm.py: the gpu profile's "gpu" is a bigger model and more
  steps (params skill_recompose.gpu.icl), not a device.
- timed slice (host CPU, one torch thread as runs.icl_job): `icl.train` at the gpu profile's model
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
PARITY = "n/a: no device path (icl.train / icl.predict and the MiniLM encoder run on the CPU at every profile)"


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
    icl.train(torch, data, True, 0, p.layers, p.d_model, p.heads, p.max_len, 1, p.batch, p.lr)     # warm-up
    per_step, losses = {}, {}
    for variant in VARIANTS:
        started = time.perf_counter()
        model, curve = icl.train(torch, data, variant == "icl_labelled", 1, p.layers, p.d_model, p.heads, p.max_len,
                                 steps, p.batch, p.lr)
        per_step[variant] = (time.perf_counter() - started) / steps
        losses[variant] = curve
    started = time.perf_counter()
    codes = icl.predict(torch, model, [e[:2] + (None,) for e in data[:64]], False, 0, p.max_len)
    predict_seconds = (time.perf_counter() - started) / len(codes)
    finite = all(np.isfinite(v).all() for v in losses.values()) and all(len(c) == QUERY for c in codes)
    models = len(gpu.seeds)
    report = {"paper": "skill_recompose", "device": args.device, "tiny": args.tiny, "parity": PARITY,
              "slice": {"steps": steps, "layers": p.layers, "d_model": p.d_model, "heads": p.heads, "batch": p.batch,
                        "max_len": p.max_len, "seconds_per_step": per_step, "losses": losses,
                        "predict_seconds_per_episode": predict_seconds, "finite": bool(finite)},
              "projection": device_check.projection(
                  [(f"{v} meta-training step ({gpu.icl.steps} steps × {models} seeds)", per_step[v],
                    gpu.icl.steps * models) for v in VARIANTS],
                  note=f"serial host-CPU seconds (gpu profile: workers = {gpu.workers}); leaves out D&R itself "
                       f"(demos, keyframes, MiniLM labels, leave-one-seen-task-out search, contexts, rollouts), "
                       f"Variant B's test-time predictions and the bootstrap")}
    return device_check.finish(report, bool(finite), args.out)


if __name__ == "__main__":
    sys.exit(main())
