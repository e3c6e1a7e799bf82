"""GX wrapper and profile switch."""
from __future__ import annotations

import pandas as pd
import pytest

from resources.compute import ComputeResource
from resources.profiles import PROFILES, load_params
from resources.quality import expect, gx_check_result, validate_frame


def test_gx_wrapper_reports_failed_expectations():
    frame = pd.DataFrame({"score": [0.1, None, 5.0], "split": ["a", "b", "zzz"]})
    result = validate_frame(frame, [
        expect("ExpectColumnValuesToNotBeNull", column="score"),
        expect("ExpectColumnValuesToBeBetween", column="score", min_value=0, max_value=1),
        expect("ExpectColumnValuesToBeInSet", column="split", value_set=["a", "b"]),
        expect("ExpectTableRowCountToBeBetween", min_value=1),
    ], name="probe")
    assert not result.success and result.evaluated == 4
    failed = {f["type"]: f for f in result.failed}
    assert set(failed) == {"expect_column_values_to_not_be_null", "expect_column_values_to_be_between",
                           "expect_column_values_to_be_in_set"}
    assert failed["expect_column_values_to_be_in_set"]["partial_unexpected_list"] == ["zzz"]
    check = gx_check_result(result)
    assert not check.passed and "3/4 failed" in check.description
    assert len(check.metadata["failed_expectations"].value) == 3


def test_gx_wrapper_passes_clean_frames():
    result = validate_frame(pd.DataFrame({"x": [1, 2]}), [expect("ExpectColumnToExist", column="x")], "ok")
    assert result.success and gx_check_result(result).passed


def test_unknown_expectation_is_an_error():
    with pytest.raises(ValueError, match="unknown GX expectation"):
        validate_frame(pd.DataFrame({"x": [1]}), [expect("ExpectNothingAtAll")], "bad")


def test_profile_switch_selects_the_params_block():
    smoke, cpu = ComputeResource(profile="smoke"), ComputeResource(profile="cpu")
    assert smoke.params("oscs") == load_params("oscs", "smoke") != cpu.params("oscs")
    with pytest.raises(ValueError, match="unknown profile"):
        ComputeResource(profile="huge").params("oscs")
    with pytest.raises(KeyError, match="no section for paper"):
        cpu.params("not_a_paper")


def test_every_paper_defines_every_profile():
    from jobs.papers import PAPERS

    for slug in PAPERS:
        for profile in PROFILES:
            assert load_params(slug, profile), f"{slug} lacks a {profile} profile"


def test_seeds_are_stable_and_distinct():
    compute = ComputeResource(base_seed=7)
    a = compute.rng("oscs", "stream", 1).random(3)
    assert (a == ComputeResource(base_seed=7).rng("oscs", "stream", 1).random(3)).all()
    assert (a != compute.rng("oscs", "stream", 2).random(3)).all()
    assert compute.seed_for("x") == ComputeResource(base_seed=7).seed_for("x")


def test_device_auto_falls_back_to_cpu_without_cuda():
    import torch

    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert ComputeResource(device="auto").resolved_device() == expected
    assert ComputeResource(device="cpu").resolved_device() == "cpu"
