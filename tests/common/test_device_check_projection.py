"""assets.common.device_check.projection: the projected gpu-profile time is Σ seconds/unit × units."""
import pytest

from assets.common.device_check import projection


def test_projection_sums_each_phase_cost():
    p = projection([("train step", 0.5, 10), ("eval pass", 2.0, 3)], note="excludes data generation")
    assert p["gpu_profile_s"] == pytest.approx(11.0)
    assert [r["seconds"] for r in p["parts"]] == pytest.approx([5.0, 6.0])
    assert p["note"] == "excludes data generation"


def test_projection_refuses_negative_costs():
    with pytest.raises(ValueError, match="non-negative"):
        projection([("train step", -0.1, 10)])
