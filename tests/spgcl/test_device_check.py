"""benchmarks/spgcl_device_check.py (issue 49): on the CPU both sides are the same kernels, so the parity
of every family's embedding, loss, gradient and optimizer step is exact; the projection covers every run."""
from __future__ import annotations

import pytest

from tests.conftest import DEVICES, run_device_check

FAMILIES = ("spgcl", "grace", "dgi", "bgrl")


@pytest.mark.parametrize("device", DEVICES)
def test_device_check_parity_and_projection(tmp_path, device):
    from resources.profiles import load_params

    code, report = run_device_check("spgcl", device, tmp_path)
    assert code == 0 and report["parity"]["ok"]
    for family in FAMILIES:
        row = report["parity"][family]
        assert row["ok"] and row["grad_max_abs"] > 0
        if device == "cpu":
            assert row["embed_max_rel_diff"] == row["loss_rel_diff"] == row["grad_max_rel_diff"] == 0.0
            assert row["step_max_abs_diff"] == row["step_mismatch_fraction"] == 0.0
    p = load_params("spgcl", "gpu")
    runs = sum(len(methods) for methods in p["runs"].values()) * len(p["seeds"])
    parts = report["projection"]["parts"]
    assert sum(int(r["what"].split(", ")[1].split(" runs")[0]) for r in parts) == runs      # 400 runs
    assert all(r["seconds_per_unit"] > 0 for r in parts) and report["projection"]["gpu_profile_s"] > 0
