"""Bulk-screening throughput of the BREW detector on 500-token texts, with the per-text cost
broken down into its stages.

Texts: T = 496 scored tokens (BCH(31,16), L = 16) drawn uniformly from a 5003-word
vocabulary (the detector's cost does not depend on where the tokens came from), and
watermarked-like texts whose tokens hit the designated half with probability 0.85.

Stages, each timed with perf_counter over the same texts:
- partition (one-off per key): building the keyed (V, V) green matrix;
- hashing: per-token partition lookups and (prev, token) pair ids (``score_text``);
- voting: split-half block votes at every shift (2S+1 = 9 shifts);
- decoding: BCH errors-and-erasures decoding of the 9 words + nearest-codeword fallback;
- verification: fresh-pair selection and the exact binomial tail at every shift;
- end to end: ``brew_detect`` (all of the above) → detections per second.

No baseline is timed in the same run (no other detector, and no claim of BREW's about speed
to define one), so this is a cost profile: a study in benchmarks/_bench.py, not part of
`make bench`, and it writes no results/bench.csv row.

Usage: python benchmarks/brew_detection.py [--texts 300] [--out data/reports/brew/detection_speed.json]
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from assets.brew import method as M  # noqa: E402
from assets.brew.bch import make_code  # noqa: E402

VOCAB = 5003
BLOCK = 16


def _texts(green: np.ndarray, code, count: int, watermarked: bool, rng: np.random.Generator) -> list[np.ndarray]:
    texts = []
    for _ in range(count):
        ids = [int(rng.integers(3, VOCAB))]
        codeword = code.encode(rng.integers(0, 2, code.k))
        for i in range(code.n * BLOCK):
            if not watermarked:
                ids.append(int(rng.integers(3, VOCAB)))
                continue
            bit = codeword[(i // BLOCK) % code.n] if rng.random() < 0.85 else 1 - codeword[(i // BLOCK) % code.n]
            row = np.nonzero(green[ids[-1], 3:] == bool(bit))[0] + 3
            ids.append(int(row[rng.integers(row.size)]))
        texts.append(np.array(ids))
    return texts


def stage_times(texts, green, code, config) -> dict[str, float]:
    """Mean seconds per text of each stage (the stages of ``brew_shift_statistics``)."""
    shifts = np.arange(-config.max_shift, config.max_shift + 1)
    totals = {"hashing": 0.0, "voting": 0.0, "decoding": 0.0, "verification": 0.0}
    for ids in texts:
        t0 = time.perf_counter()
        scored = M.score_text(ids, green)
        t1 = time.perf_counter()
        positions = np.arange(scored.length)
        words, erasures, sets = [], [], []
        for s in shifts:
            rel = positions - int(s)
            blocks = (rel // BLOCK) % code.n
            estimation = ((rel % BLOCK) % 2 == 0) & scored.scoreable
            votes, _ = M._block_votes(scored.green_bit, estimation, blocks, code.n)
            words.append((votes > 0).astype(np.uint8))
            erasures.append(votes == 0)
            sets.append((blocks, estimation, ~estimation & scored.scoreable))
        t2 = time.perf_counter()
        words, erasures = np.array(words), np.array(erasures)
        decoded = code.decode_with_erasures(words, erasures)
        codewords = decoded["codeword"].copy()
        failed = np.nonzero(~decoded["success"])[0]
        if failed.size:
            codewords[failed] = code.nearest_codeword(words[failed], erasures[failed])["codeword"]
        t3 = time.perf_counter()
        for j, (blocks, estimation, verification) in enumerate(sets):
            fresh = M.first_occurrence(scored.pair[verification], exclude=np.unique(scored.pair[estimation]))
            idx = np.nonzero(verification)[0][fresh]
            designated = codewords[j][blocks[idx]]
            hits = int((scored.green_bit[idx] == designated).sum())
            M.soft_null_sf(hits, int(designated.sum()), int(idx.size - designated.sum()), config.gamma)
        t4 = time.perf_counter()
        totals["hashing"] += t1 - t0
        totals["voting"] += t2 - t1
        totals["decoding"] += t3 - t2
        totals["verification"] += t4 - t3
    return {k: v / len(texts) for k, v in totals.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--texts", type=int, default=300)
    parser.add_argument("--out", default="data/reports/brew/detection_speed.json")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    code = make_code("bch31_16")
    config = M.BrewConfig(block_length=BLOCK, max_shift=4)
    start = time.perf_counter()
    green = M.green_matrix(12345, VOCAB, 0.5)
    partition_seconds = time.perf_counter() - start
    result = {"machine": platform.platform(), "python": platform.python_version(), "vocab": VOCAB,
              "tokens_per_text": code.n * BLOCK, "shifts": 2 * config.max_shift + 1,
              "partition_build_seconds_per_key": partition_seconds}
    for kind, watermarked in (("human_like", False), ("watermarked", True)):
        texts = _texts(green, code, args.texts, watermarked, rng)
        stages = stage_times(texts, green, code, config)
        start = time.perf_counter()
        accepted = sum(M.brew_detect(ids, green, code, config)["accepted"] for ids in texts)
        per_text = (time.perf_counter() - start) / len(texts)
        result[kind] = {"texts": len(texts), "accepted": int(accepted), "seconds_per_text": per_text,
                        "detections_per_second": 1.0 / per_text,
                        "stage_seconds_per_text": stages}
        print(f"{kind}: {1.0 / per_text:.0f} detections/s; stages (ms/text): "
              + ", ".join(f"{k} {v * 1e3:.2f}" for k, v in stages.items()))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
