"""HiR's select-then-rewrite arithmetic: resampling, group sizes, selection, re-verification."""
from __future__ import annotations

import math

import numpy as np
import pytest

from assets.hir import replay as R
from assets.hir.constraints import parse_constraint


@pytest.mark.parametrize("valid, expected", [(16, 0), (40, 0), (15, 1), (8, 1), (7, 2), (0, 2)])
def test_resample_formula(valid, expected):
    # B = 8, n = 8, g = 6: (n − g)·B = 16 replay slots
    assert R.resample_count(valid, 8, 8, 6) == expected
    assert expected == (0 if valid >= 16 else math.ceil((16 - valid) / 8))


@pytest.mark.parametrize("batch, n, g", [(8, 8, 6), (5, 10, 7), (1, 4, 1)])
def test_groups_stay_n(batch, n, g):
    for valid in range(0, (n - g) * batch + 3):
        r = R.resample_count(valid, batch, n, g)
        assert R.generated_count(batch, g, r) + R.replay_budget(batch, n, g, r) == n * batch
        assert 0 <= r <= n - g


def test_bad_sizes_raise():
    with pytest.raises(ValueError, match="0 < generated"):
        R.resample_count(0, 8, 6, 6)            # n ≤ g
    with pytest.raises(ValueError, match="0 < generated"):
        R.check_group_sizes(4, 5, 8)
    with pytest.raises(ValueError, match="non-empty batch"):
        R.resample_count(0, 0, 8, 6)
    with pytest.raises(ValueError):
        R.replay_budget(8, 8, 6, 3)             # resample beyond n − g


def test_selection_scores_closed_form():
    s = R.selection_scores(np.array([0.5, 0.25]), np.array([1.0, 2.0]), step=3)
    lam = 2.0 * 1.05 ** 3
    assert s == pytest.approx([lam * 0.5 + 1.0, lam * 0.25 + 2.0])


def test_select_top_returns_the_top_set_over_the_batch():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=50)
    valid = rng.random(50) < 0.6
    for k in (0, 1, 7, 30, 100):
        got = R.select_top(scores, valid, k)
        idx = np.flatnonzero(valid)
        want = np.sort(idx[np.argsort(-scores[idx])][:k])
        assert got.tolist() == want.tolist()
    # invalid entries are never chosen, however high their score
    assert R.select_top(np.array([9.0, 1.0, 2.0]), np.array([False, True, True]), 1).tolist() == [2]


def test_select_random_only_valid_and_distinct():
    valid = np.array([True, False, True, True, False])
    got = R.select_random(valid, 2, np.random.default_rng(1))
    assert len(set(got)) == 2 and all(valid[got])
    assert R.select_random(valid, 10, np.random.default_rng(1)).tolist() == [0, 2, 3]


def test_valid_candidates_are_partial_successes():
    assert R.valid_candidates(np.array([0.0, 0.2, 1.0, 0.99])).tolist() == [False, True, False, True]


def test_replays_reverify_to_reward_one():
    criteria = [parse_constraint(s) for s in ("min_words:2", "include_word:fire", "no_commas")]
    response = "the fire , spread .".split()
    judged = [c.check(response) for c in criteria]
    assert judged == [True, True, False]
    (rep,) = R.make_replays([0], [criteria], [judged], [response])
    assert rep.reward == 1.0 and list(rep.kept) == criteria[:2]
    assert all(c.check(response) for c in rep.kept)


def test_a_lying_judge_list_stops_the_replay():
    criteria = [parse_constraint(s) for s in ("min_words:2", "include_word:fire", "no_commas")]
    response = "the fire , spread .".split()
    with pytest.raises(R.ReplayError):
        R.make_replays([0], [criteria], [[True, False, True]], [response])


def test_floor_filter_drops_partial_successes_below_min_words():
    criteria = [parse_constraint(s) for s in ("min_words:3", "no_commas")]
    judged = [[False, True], [True, False], [True, True]]          # empty answer, comma answer, success
    dense = np.array([0.5, 0.5, 1.0])
    assert R.candidates(dense, [criteria] * 3, judged).tolist() == [False, True, False]
    assert R.candidates(dense, [criteria] * 3, judged, keep_floor=False).tolist() == [True, True, False]
