"""Ordered score streams for OSCS benchmarks (benign and malicious scores resampled).

Scenarios (malicious fraction pi1; "easy" = rare_word, insert_sentence, random_suffix):

- ``mix_p05`` / ``mix_p20`` / ``mix_p40``: stationary mixture of all four attacks in equal
  shares, exactly round(pi1 T) malicious items, positions shuffled;
- ``hard_p40``: fluent_preamble only, pi1 = 0.4;
- ``switch``: pi1 = 0.2, easy attacks in the first half, fluent_preamble in the second;
- ``burst``: pi1 = 0.05 outside a 200-step window starting at T // 2 where pi1 = 0.8.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from assets.oscs.data import ATTACKS, EASY_ATTACKS, HARD_ATTACK

BURST_LENGTH = 200
BURST_PI1 = 0.8

SCENARIOS: dict[str, dict] = {
    "mix_p05": {"kind": "stationary", "pi1": 0.05, "attacks": ATTACKS},
    "mix_p20": {"kind": "stationary", "pi1": 0.20, "attacks": ATTACKS},
    "mix_p40": {"kind": "stationary", "pi1": 0.40, "attacks": ATTACKS},
    "hard_p40": {"kind": "stationary", "pi1": 0.40, "attacks": (HARD_ATTACK,)},
    "switch": {"kind": "switch", "pi1": 0.20, "attacks_first": EASY_ATTACKS, "attacks_second": (HARD_ATTACK,)},
    "burst": {"kind": "burst", "pi1": 0.05, "attacks": ATTACKS, "burst_pi1": BURST_PI1, "burst_length": BURST_LENGTH},
}
STATIONARY_SCENARIOS = tuple(name for name, spec in SCENARIOS.items() if spec["kind"] == "stationary")


def _burst_window(T: int, burst_length: int) -> tuple[int, int]:
    """[start, stop) of the burst; the burst is capped at half the stream."""
    length = min(burst_length, T // 2)
    start = T // 2
    return start, min(T, start + length)


def _segments(name: str, T: int) -> list[tuple[int, int, int, tuple[str, ...]]]:
    """(start, stop, n_malicious, attacks) segments that make up a scenario of length T."""
    spec = SCENARIOS[name]
    if spec["kind"] == "stationary":
        return [(0, T, int(round(spec["pi1"] * T)), tuple(spec["attacks"]))]
    if spec["kind"] == "switch":
        n_malicious = int(round(spec["pi1"] * T))
        half = T // 2
        first = n_malicious // 2
        return [
            (0, half, first, tuple(spec["attacks_first"])),
            (half, T, n_malicious - first, tuple(spec["attacks_second"])),
        ]
    start, stop = _burst_window(T, spec["burst_length"])
    outside_length = T - (stop - start)
    outside_total = int(round(spec["pi1"] * outside_length))
    before = int(round(outside_total * start / max(outside_length, 1)))
    attacks = tuple(spec["attacks"])
    return [
        (0, start, before, attacks),
        (start, stop, int(round(spec["burst_pi1"] * (stop - start))), attacks),
        (stop, T, outside_total - before, attacks),
    ]


def scenario_target_pi1(name: str, T: int = 5000) -> float:
    """Malicious fraction a stream of scenario ``name`` and length ``T`` is built to have.

    For the stationary and switch scenarios this is round(pi1 T) / T; for ``burst`` it
    includes the burst window (e.g. (160 + 240) / 5000 = 0.08 at T = 5000).
    """
    return sum(segment[2] for segment in _segments(name, T)) / T


def build_stream(
    benign_scores: np.ndarray,
    malicious_scores: dict[str, np.ndarray],
    scenario: str,
    T: int,
    seed: int,
) -> pd.DataFrame:
    """Sample a stream of length ``T`` for ``scenario`` (with replacement from the pools).

    Within each segment the malicious positions are a uniformly random subset of exactly the
    scenario's count, and the attacks are split as evenly as possible across the segment's
    attack list. Returns a DataFrame with columns ``t`` (1..T), ``score``, ``label``
    (int8, 1 = malicious), ``attack`` ("benign" for benign rows) and ``pool_index`` (row of
    the pool the score was drawn from). Deterministic in ``seed``.
    """
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}; expected one of {tuple(SCENARIOS)}")
    benign_scores = np.asarray(benign_scores, dtype=float)
    rng = np.random.default_rng(seed)
    attack = np.full(T, "benign", dtype=object)
    for start, stop, count, attacks in _segments(scenario, T):
        missing = [a for a in attacks if a not in malicious_scores or len(malicious_scores[a]) == 0]
        if count and missing:
            raise ValueError(f"no malicious scores for attacks {missing}")
        positions = start + rng.choice(stop - start, size=int(count), replace=False)
        assigned = np.resize(np.array(attacks, dtype=object), int(count))
        attack[positions] = assigned[rng.permutation(int(count))]

    score = np.empty(T)
    pool_index = np.empty(T, dtype=np.int64)
    is_benign = attack == "benign"
    pool_index[is_benign] = rng.integers(0, benign_scores.size, int(is_benign.sum()))
    score[is_benign] = benign_scores[pool_index[is_benign]]
    for name in sorted(set(attack[~is_benign])):
        rows = attack == name
        pool = np.asarray(malicious_scores[name], dtype=float)
        pool_index[rows] = rng.integers(0, pool.size, int(rows.sum()))
        score[rows] = pool[pool_index[rows]]
    return pd.DataFrame(
        {
            "t": np.arange(1, T + 1),
            "score": score,
            "label": (~is_benign).astype(np.int8),
            "attack": attack.astype(str),
            "pool_index": pool_index,
        }
    )
