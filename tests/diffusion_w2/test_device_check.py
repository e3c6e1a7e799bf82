"""benchmarks/diffusion_w2_device_check.py (issue 49): on the CPU both sides are the same kernels, so the
chains, Hessian extremes and W2 estimates of every target (the gpu-only 16- and 64-D ones included) agree
exactly; the projection covers every dimension of the gpu profile."""
from __future__ import annotations

import re

import pytest

from tests.conftest import DEVICES, run_device_check


@pytest.mark.parametrize("device", DEVICES)
def test_device_check_parity_and_projection(tmp_path, device):
    code, report = run_device_check("diffusion_w2", device, tmp_path)
    assert code == 0 and report["parity"]["ok"]
    rows = {k: v for k, v in report["parity"].items() if k != "ok"}
    assert {r["dim"] for r in rows.values()} == {1, 2, 16, 64}
    assert {re.sub(r"_[pm]\d+$", "", r["w2_method"]) for r in rows.values()} == {
        "sorted", "ot", "sliced_lb", "gauss_moments"}                   # every W2 estimator exercised
    for row in rows.values():
        assert row["ok"] and row["finite"] and row["w2"] > 0
        if device == "cpu":
            assert row["chain_max_rel_diff"] == row["lambda_max_rel_diff"] == row["w2_rel_diff"] == 0.0
    parts = report["projection"]["parts"]
    assert [r["what"].split(" (")[0] for r in parts[::2]] == [f"particle-step, d = {d}" for d in (1, 2, 16, 64)]
    assert all(r["seconds_per_unit"] > 0 and r["units"] > 0 for r in parts)
