"""assets/common/worker.py (the one torch set-up of a job) and the training paths that take the
compute device (issue 49): each is asked for CUDA on a machine without it and must fail trying to
put its model there — a path that ignored the device would train on the CPU and pass."""
from __future__ import annotations

import os

import pytest
import torch

from assets.common.worker import cpu_workers, to_device, torch_worker

NO_CUDA = pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")


def test_torch_worker_sets_threads_seed_and_determinism():
    before = torch.get_num_threads()
    deterministic = (torch.are_deterministic_algorithms_enabled(),
                     torch.is_deterministic_algorithms_warn_only_enabled())
    try:
        t = torch_worker(1, seed=7, deterministic=True)
        assert t is torch and torch.get_num_threads() == 1
        assert torch.are_deterministic_algorithms_enabled()
        first = torch.rand(3)
        torch_worker(1, seed=7, deterministic=True)
        assert torch.equal(first, torch.rand(3))
        torch_worker(1, seed=8)
        assert not torch.equal(first, torch.rand(3))
        assert os.environ.get("CUBLAS_WORKSPACE_CONFIG")
    finally:
        torch.set_num_threads(before)
        torch.use_deterministic_algorithms(deterministic[0], warn_only=deterministic[1])


def test_torch_worker_caps_blas_only_in_a_spawned_worker():
    from assets.common import worker

    torch_worker(1, cap_blas=True)           # the test process is no spawned worker: nothing is kept
    assert worker._BLAS_LIMIT == []


def test_to_device_moves_every_nested_tensor_and_keeps_the_rest():
    batch = {"x": torch.ones(2), "pair": (torch.zeros(1), 3), "items": [torch.ones(1)], "n": 5}
    moved = to_device(batch, "meta")
    assert moved["x"].is_meta and moved["pair"][0].is_meta and moved["items"][0].is_meta
    assert moved["pair"][1] == 3 and moved["n"] == 5 and isinstance(moved["pair"], tuple)
    assert not batch["x"].is_meta                                       # the input is not changed


def test_cpu_workers_is_the_smallest_of_request_jobs_and_cores():
    cores = os.cpu_count() or 1
    assert cpu_workers(10, 1) == 1
    assert cpu_workers(1, 16) == 1
    assert cpu_workers(100, 100) == min(100, cores)
    assert cpu_workers(0, 0) == 1


def _limix():
    from assets.limix import runs
    from assets.limix.params import LimiXParams
    from tests.conftest import typed_params

    p = typed_params(LimiXParams, "limix")
    runs.train_job({"params": p, "threads": 1, "deterministic": True, "device": "cuda", "variant": p.variants[0],
                    "seed": 0, "stream_seed": 0, "val": []})


def _ts_layers():
    from assets.ts_layers import runs
    from assets.ts_layers.params import TSLayersParams
    from tests.conftest import typed_params

    runs.text_job({"params": typed_params(TSLayersParams, "ts_layers"), "seed": 0, "threads": 1, "device": "cuda"})


def _vcot():
    from assets.vcot import learned
    from assets.vcot.params import VcotParams
    from tests.conftest import typed_params

    cfg = typed_params(VcotParams, "vcot").learned
    learned.train([], learned.vocabulary([]), cfg, torch, 0, device="cuda")


def _skill_recompose():
    from assets.skill_recompose import icl

    code = (1, 0, 4, "d", 0, 0)
    episodes = [([("Lift", code)], ["Lift"], [code])] * 2
    icl.train(torch, episodes, True, 0, 1, 32, 4, 8, 2, 2, 1e-3, device="cuda")


@NO_CUDA
@pytest.mark.parametrize("train", [_limix, _ts_layers, _vcot, _skill_recompose],
                         ids=["limix.train_job", "ts_layers.text_job", "vcot.learned.train", "skill_recompose.icl"])
def test_training_puts_its_model_on_the_requested_device(train):
    with pytest.raises((AssertionError, RuntimeError), match="CUDA"):
        train()


# Files that still set torch threads themselves. Each is in a paper's DVC stage, so converting it
# re-runs that paper: they go with the next full cold run (issue 50). The list may only shrink.
# CLIs and the device-check helper are outside the stages and may set one thread directly.
_PENDING = {"resources/compute.py", "assets/common/minilm.py",
            "assets/dream_mpc/training.py", "assets/fair_selective/agents.py", "assets/ts_layers/pipeline.py",
            "assets/vcot/runs.py"}


def test_no_new_pipeline_code_sets_torch_threads_itself():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    setters = {str(f.relative_to(root)) for d in ("assets", "resources") for f in (root / d).rglob("*.py")
               if "torch.set_num_threads(" in f.read_text(encoding="utf-8")}
    allowed = {"assets/common/worker.py", "assets/common/device_check.py"}
    own = {f for f in setters if not f.endswith("/cli.py")} - allowed
    assert own <= _PENDING, f"set torch threads through assets.common.worker.torch_worker: {sorted(own - _PENDING)}"
    assert _PENDING <= own, f"converted, remove from _PENDING: {sorted(_PENDING - own)}"
