"""BREW's detector against text length (issue 46): exact-message and wrong-message acceptance of
clean watermarked texts whose length is or is not a whole number of codeword cycles, for both
readings (per-block re-synchronisation, one global shift), plus a few edited texts.

Texts: the method's generator (generate_batch + brew_bit_schedule) over a random bigram LM
(Dirichlet(0.3) rows over V words), BCH(31,16), L = 16 (n·L = 496), δ = 2.0, every text written
to the longest length and cut (a prefix of T tokens is exactly what the generator writes for T).
Detector defaults otherwise (S = 4, α = 0.02, soft verification, payload check on);
`per_block, no payload check` is the same reading with the W bounded-distance check switched off.

Usage: python benchmarks/brew_length_sync.py [--texts 60] [--out data/reports/brew/length_sync.json]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from assets.brew import method as M  # noqa: E402
from assets.brew.bch import bits_to_message, make_code  # noqa: E402

LENGTHS = (300, 420, 496, 508, 520, 560, 700, 992, 1000, 1240)
READINGS = {"per_block": {"sync": "per_block"},
            "per_block, no payload check": {"sync": "per_block", "payload_check": False},
            "global": {"sync": "global"}}


def _insert(ids, rate, rng, vocab):
    tokens = list(ids[1:])
    for _ in range(int(round(rate * len(tokens)))):
        tokens.insert(int(rng.integers(1, len(tokens) + 1)), int(rng.integers(3, vocab)))
    return np.array([ids[0], *tokens])


def _delete(ids, rate, rng):
    tokens = list(ids[1:])
    for _ in range(int(round(rate * len(tokens)))):
        tokens.pop(int(rng.integers(0, len(tokens))))
    return np.array([ids[0], *tokens])


def _substitute(ids, rate, rng, vocab):
    ids = ids.copy()
    places = rng.choice(np.arange(1, ids.size), int(round(rate * (ids.size - 1))), replace=False)
    ids[places] = rng.integers(3, vocab, places.size)
    return ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=60)
    parser.add_argument("--vocab", type=int, default=1000)
    parser.add_argument("--delta", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    code, L, V = make_code("bch31_16"), 16, args.vocab
    green = M.green_matrix(7, V, 0.5)
    rows = rng.dirichlet(np.full(V, 0.3), size=V)
    messages = rng.integers(0, 2, (args.texts, code.k)).astype(np.uint8)
    out = M.generate_batch(lambda u, v: rows[v], rng.integers(3, V, (args.texts, 2)), max(LENGTHS), green,
                           M.brew_bit_schedule(code.encode(messages), L), args.delta, rng)
    truth = bits_to_message(messages).astype(int)
    cases = [(f"clean, T = {T}", [ids[: T + 1] for ids in out["ids"]]) for T in LENGTHS]
    cases += [("496 + 5 % insertions", [_insert(ids[:497], 0.05, rng, V) for ids in out["ids"]]),
              ("496 − 5 % deletions", [_delete(ids[:497], 0.05, rng) for ids in out["ids"]]),
              ("496, 10 % tokens replaced", [_substitute(ids[:497], 0.10, rng, V) for ids in out["ids"]]),
              ("700 + 5 % insertions", [_insert(ids[:701], 0.05, rng, V) for ids in out["ids"]]),
              ("496, first 8 dropped (> S)", [np.concatenate([ids[:1], ids[9:497]]) for ids in out["ids"]])]
    results = []
    for name, texts in cases:
        row = {"case": name, "texts": len(texts)}
        for reading, overrides in READINGS.items():
            config = M.BrewConfig(block_length=L, **overrides)
            decisions = [M.brew_detect(ids, green, code, config) for ids in texts]
            accepted = np.array([d["accepted"] for d in decisions])
            right = np.array([d["message"] == t for d, t in zip(decisions, truth)])
            row[reading] = {"right": float(np.mean(accepted & right)), "wrong": float(np.mean(accepted & ~right))}
        results.append(row)
    print(f"hit rate {M.hit_rate(out['favoured'][:, :496]):.3f}, {args.texts} texts, BCH(31,16), L = {L}, "
          f"δ = {args.delta}")
    print("| text | " + " | ".join(f"{r}: right / wrong" for r in READINGS) + " |")
    print("|---|" + "---|" * len(READINGS))
    for row in results:
        cells = [f"{100 * row[r]['right']:.0f} % / {100 * row[r]['wrong']:.0f} %" for r in READINGS]
        print(f"| {row['case']} | " + " | ".join(cells) + " |")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        summary = {"texts": args.texts, "vocab": V, "delta": args.delta, "rows": results}
        args.out.write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
