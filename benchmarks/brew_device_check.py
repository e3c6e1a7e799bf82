"""brew device check (issue 49): no torch parity (BREW is numpy), then a timed slice of the gpu
profile's dominant phases, text generation and detection, and the projection.

- parity: n/a. The LM is a Kneser–Ney trigram and the watermark, BCH code and detectors are numpy;
  torch appears only as the checkpoint container and in the MiniLM encoder (synonym table, realism),
  which assets/common/minilm.py pins to the CPU at every profile.
- timed slice (host CPU): the gpu profile's code (T = n·L scored tokens) on the real corpus and LM
  (data.load_corpus, runs.fit_lm): one key's green list and MPAC allocation table
  (method.green_matrix, allocation_table), `method.generate_batch` of GEN_TEXTS BREW texts, and
  `benchmark.detect_text` with every method on each of them; seconds per unit × the profile's units.

    .venv/bin/python benchmarks/brew_device_check.py --device cuda --out /tmp/brew_device.json
    .venv/bin/python benchmarks/brew_device_check.py --device cpu --tiny     # exercises the code (tests)

--tiny uses the smoke profile's code (a shorter text) and 2 texts.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

GEN_TEXTS, TINY_TEXTS = 8, 2
DELTA = 2.0              # a δ of the profile's delta_grid (the codebook calibrates one; cost does not depend on it)
PARITY = "n/a: no torch path (numpy LM, watermark and detectors; the MiniLM encoder is pinned to the CPU)"


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))      # the repo root, from any directory
    from assets.common import device_check

    args = device_check.arguments(argv)
    if device_check.prepare(args.device) is None:
        return device_check.NO_DEVICE

    from assets.brew import benchmark as B
    from assets.brew import data, runs
    from assets.brew import method as M
    from assets.brew.bch import make_code
    from assets.brew.params import BrewParams
    from assets.common.params import parse
    from resources.profiles import load_params

    gpu = parse(BrewParams, load_params("brew", "gpu"), "brew.gpu")
    p = parse(BrewParams, load_params("brew", "smoke"), "brew.smoke") if args.tiny else gpu
    texts = TINY_TEXTS if args.tiny else GEN_TEXTS
    started = time.perf_counter()
    corpus = data.load_corpus(p.train_fraction, seed=0)
    lm, _ = runs.fit_lm(p, corpus)
    setup = time.perf_counter() - started
    code = make_code(p.code)
    T, L = code.n * p.block_length, p.block_length

    t0 = time.perf_counter()
    green = M.green_matrix(1, lm.vocab_size, p.gamma)
    allocation = M.allocation_table(1, lm.vocab_size, code.k)
    key_seconds = time.perf_counter() - t0

    rng = np.random.default_rng(0)
    prompts = data.prompt_pool(corpus)
    contexts = runs._contexts(lm, [prompts[i] for i in rng.choice(len(prompts), size=texts, replace=False)])
    messages = rng.integers(0, 2, (texts, code.k)).astype(np.uint8)
    schedule = M.brew_bit_schedule(np.stack([M.codeword_for(code, m) for m in messages]), L)
    t0 = time.perf_counter()
    out = M.generate_batch(M.CachedNextToken(lm), contexts, T, green, schedule, DELTA, rng, entropy_min=p.entropy_min)
    generate_seconds = (time.perf_counter() - t0) / texts

    config = runs.brew_config({"block_length": L, "gamma": p.gamma, "delta": DELTA, "alpha": p.alpha,
                               "max_shift": p.max_shift, "vote_mode": p.vote_mode, "verify_mode": p.verify_mode,
                               "sync": p.sync, "min_tokens": p.min_tokens})
    ids = [runs.to_ids(lm, " ".join(lm.vocab[i] for i in row)) for row in out["ids"]]
    B.detect_text(ids[0], B.METHODS, green, code, config, 1, allocation)              # warm-up
    t0 = time.perf_counter()
    detected = [B.detect_text(x, B.METHODS, green, code, config, 1, allocation) for x in ids]
    detect_seconds = (time.perf_counter() - t0) / texts
    accepted = float(np.mean([r["accepted"] for rows in detected for r in rows if r["method"] == "brew_soft_S4"]))

    # the gpu profile's units
    human = data.human_windows(corpus, make_code(gpu.code).n * gpu.block_length + 1, gpu.human_stride, seed=0)
    seeds, n_attacks = len(gpu.seeds), len(gpu.attacks)
    positives = gpu.texts_per_seed + 2 * gpu.baseline_texts_per_seed
    negatives = 2 * gpu.negative_texts_per_seed
    generated = seeds * (positives + negatives)
    screened = seeds * (positives * n_attacks + negatives + gpu.human_keys_per_seed * len(human))
    report = {"paper": "brew", "device": args.device, "tiny": args.tiny, "parity": PARITY,
              "slice": {"code": p.code, "text_length": T, "texts": texts, "setup_seconds": setup,
                        "key_tables_seconds": key_seconds, "generate_seconds_per_text": generate_seconds,
                        "detect_seconds_per_text": detect_seconds, "brew_soft_S4_accept_rate": accepted,
                        "hit_rate": float(out["favoured"].mean())},
              "projection": device_check.projection([
                  ("green list + allocation table per key", key_seconds, seeds * (2 + gpu.human_keys_per_seed)),
                  (f"generated text ({T} tokens, cold LM cache)", generate_seconds, generated),
                  ("screened text (every method: an upper bound for KGW / MPAC texts)", detect_seconds, screened),
              ], note=f"host-CPU work, serial; {len(human)} human windows × {gpu.human_keys_per_seed} null keys "
                      f"per seed; leaves out δ calibration, the synonym table and realism (MiniLM), the attacks, "
                      f"calibrated thresholds and the report")}
    return device_check.finish(report, True, args.out)


if __name__ == "__main__":
    sys.exit(main())
