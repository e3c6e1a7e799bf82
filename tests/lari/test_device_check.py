"""benchmarks/lari_device_check.py (issue 49) runs end to end: on the CPU its parity of the point-map and
stop UNets is exact, its projection counts every net runs.training_jobs trains at the gpu profile, and CUDA
without a GPU is refused."""
from __future__ import annotations

import pandas as pd
import pytest

from assets.common.params import parse
from assets.lari import runs
from assets.lari.params import LariParams
from resources.profiles import load_params
from tests.conftest import DEVICES, PARITY_DIFFS, load_device_check, run_device_check


@pytest.mark.parametrize("device", DEVICES)
def test_device_check_parity_and_projection(tmp_path, device):
    code, report = run_device_check("lari", device, tmp_path)
    assert code == 0 and report["parity_ok"]
    assert set(report["parity"]) == {"pointmap_L4", "stop_L4"}           # the smoke model's L
    for key, parity in report["parity"].items():
        assert parity["ok"] and parity["grad_max_abs"] > 0, key
        if device == "cpu":
            assert all(parity[k] == 0.0 for k in PARITY_DIFFS), (key, parity)
    projection = report["projection"]
    assert projection["gpu_profile_s"] > 0
    assert [part["units"] for part in projection["parts"]] == [3000 * 6, 3000 * 6, 3000, 3000, 3000, 3000 * 6]


def test_runs_per_net_matches_the_training_jobs():
    """The script's count of nets equals runs.training_jobs' at the gpu profile (both net kinds)."""
    gpu = parse(LariParams, load_params("lari", "gpu"), "lari.gpu")
    splits = pd.DataFrame({"scene_kind": ["object", "room"], "split": ["train", "train"], "index": [0, 0]})
    files = pd.DataFrame({"scene_kind": ["object", "room"], "path": ["a.npz", "b.npz"]})
    jobs = [j for net in ("pointmap", "stop")
            for j in runs.training_jobs(gpu, net, splits, files, files, lambda *k: 0, "cpu")]
    counted = {}
    for j in jobs:
        key = "stop" if j["net"] == "stop" else f"pointmap_L{j['layers']}"
        counted[key] = counted.get(key, 0) + 1
    assert load_device_check("lari").runs_per_net(gpu) == counted
