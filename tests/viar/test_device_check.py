"""benchmarks/viar_device_check.py (issue 49) runs end to end: on the CPU its parity of the MSVQ tokenizers,
VAR and VIAR (forward / loss / gradient / step, the paper's training loops, the teacher-forced sampling pass)
is exact, its projection counts the runs and samples of the gpu profile, and CUDA without a GPU is refused."""
from __future__ import annotations

import pytest

from resources.profiles import load_params
from tests.conftest import DEVICES, PARITY_DIFFS, assert_projection_adds_up, run_device_check

DIFFS = (*PARITY_DIFFS, "train_loop_loss_max_rel_diff", "train_loop_step_l2_rel_diff")
CLASSES = {"digits": 10, "shapes": 8}


def expected_units(gpu: dict) -> list[float]:
    """The projection's units from the gpu block itself: tokenizer steps per dataset; VAR steps × (seeds at
    the claims' depth, ladder_seeds at the ladder depths) × datasets, VIAR steps × seeds × datasets; images
    per_class × classes of every sampling run (VAR models once, VIAR at every schedule + the calibrated)."""
    datasets, steps, seeds = gpu["datasets"], gpu["ar"]["steps"], len(gpu["seeds"])
    depths = sorted({*gpu["ladder_depths"], gpu["claim_depth"]})
    runs_at = {d: (seeds if d == gpu["claim_depth"] else len(gpu["ladder_seeds"])) * len(datasets) for d in depths}
    images = sum(gpu["sampling"]["per_class"] * CLASSES[ds] for ds in datasets)
    return ([gpu["tokenizer"]["steps"]] * len(datasets) + [steps * runs_at[d] for d in depths]
            + [steps * seeds * len(datasets)]
            + [images * runs_at[d] // len(datasets) for d in depths]
            + [images * seeds] * (len(gpu["schedules"]) + 1))


@pytest.mark.parametrize("device", DEVICES)
def test_device_check_parity_and_projection(tmp_path, device):
    code, report = run_device_check("viar", device, tmp_path)
    assert code == 0 and report["parity_ok"]
    gpu = load_params("viar", "gpu")
    assert set(report["parity"]) == {"tokenizer_digits", "tokenizer_shapes", f"var_d{gpu['claim_depth']}", "viar"}
    for key, parity in report["parity"].items():
        assert parity["ok"] and parity["grad_max_abs"] > 0, key
        if device == "cpu":                                    # the same kernels on both sides
            assert all(parity[k] == 0.0 for k in DIFFS), (key, parity)
            assert parity.get("ids_agreement", 1.0) == 1.0
            assert parity.get("sampling_logits_max_rel", 0.0) == parity.get("sampling_images_max_rel", 0.0) == 0.0
    projection = report["projection"]
    assert [part["units"] for part in projection["parts"]] == expected_units(gpu)
    assert expected_units(gpu)[:8] == [4000, 4000, 6000, 6000, 6000, 18000, 18000, 1800]   # the block as written
    assert_projection_adds_up(projection)
    assert projection["gpu_profile_s"] > 0
    viar = report["timed"]["viar"]                             # S-JFB seconds rescaled to E[n], E[m]
    passes = viar["block_passes_measured"]
    assert passes == pytest.approx(2 + viar["mean_n"] / 3 + viar["mean_m"])         # smoke: pre 1 + post 1
    assert report["timed"]["viar_seconds_per_step"] == pytest.approx(
        viar["seconds_per_step_measured"] * viar["block_passes_expected"] / passes)
