"""Empirical W2 estimators and the coupling RMS: known answers."""
from __future__ import annotations

import numpy as np
import pytest

from assets.diffusion_w2 import empirical as EMP


def test_sorted_w2_of_a_translation_is_the_shift():
    x = np.random.default_rng(0).normal(size=(500, 1))
    assert EMP.w2_sorted(x, x + 0.37) == pytest.approx(0.37)
    assert EMP.w2_sorted(x, x[::-1]) == 0.0                    # same empirical measure


def test_ot_w2_equals_sorting_in_one_dimension_and_shift_in_two():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(300, 1)), rng.gamma(2.0, size=(300, 1))
    assert EMP.w2_ot(x, y) == pytest.approx(EMP.w2_sorted(x, y), rel=1e-9)
    z = rng.normal(size=(200, 2))
    assert EMP.w2_ot(z, z + np.array([0.3, -0.4])) == pytest.approx(0.5, rel=1e-9)


def test_pot_and_assignment_solvers_agree():
    rng = np.random.default_rng(2)
    m = EMP.ASSIGNMENT_MAX + 1                                  # POT's network simplex
    x, y = rng.normal(size=(m, 2)), rng.normal(size=(m, 2)) * [1.0, 0.5] + 0.2
    from scipy.optimize import linear_sum_assignment
    from scipy.spatial.distance import cdist

    cost = cdist(x, y, "sqeuclidean")
    r, c = linear_sum_assignment(cost)
    assert EMP.w2_ot(x, y) == pytest.approx(np.sqrt(cost[r, c].mean()), rel=1e-9)


def test_coupling_rms_and_standard_error():
    delta = np.array([[3.0, 4.0], [0.0, 0.0]])
    rms, se = EMP.coupling_rms(delta)
    assert rms == pytest.approx(np.sqrt(12.5))
    assert se == pytest.approx(np.std([25.0, 0.0], ddof=1) / np.sqrt(2) / (2 * rms))


def test_bootstrap_ci_brackets_the_mean():
    values = np.array([1.0, 1.2, 0.9, 1.1, 1.05])
    lo, hi = EMP.bootstrap_mean_ci(values, np.random.default_rng(0))
    assert lo <= values.mean() <= hi and lo >= values.min() and hi <= values.max()
