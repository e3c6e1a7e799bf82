"""The gpu profile's code path, proven on the CPU at tiny sizes (no GPU is lent to CI).

The gpu block of params.yaml is used as is (32×32 shapes with two stride-2 stages → 8×8 latent,
scales 1..8, VAR-d12 vs VIAR-p2, S-JFB N = 10 / M = 12, the dec16-4 schedule, the memory sweep over
depths 3..12 and n up to 10) with only the sizes shrunk (images, widths, steps, batches) and the
quality gates opened (a 2-step model cannot reach them; the gates themselves are tested in
test_assets.py). Device placement goes through compute.resolved_device() with device="cpu", so the
assets take the non-CUDA branch of every measurement: peak memory = saved-tensor bytes in the
memory profile, no allocator peak in the throughput table. The CUDA branch of DevicePeak is
checked against a stand-in allocator.
"""
from __future__ import annotations

import json
import math

import dagster as dg
import numpy as np
import pandas as pd
import pytest
import torch

from assets.common.params import parse
from assets.viar import model as viar_model
from assets.viar import runs
from assets.viar.params import VIARRunParams
from jobs.papers import load_paper
from resources.compute import ComputeResource

TINY = {
    "datasets": ["shapes"],
    "seeds": [0],
    "ladder_depths": [3],
    "shapes": {"split_sizes": [64, 24, 24]},
    "classifier": {"epochs": 1, "batch": 32},
    "tokenizer": {"hidden": 8, "steps": 3, "batch": 16, "restart_every": 2},
    "ar": {"width": 16, "heads": 2, "steps": 2, "batch": 4, "warmup": 1},
    "sampling": {"per_class": 1},
    "calibration": {"per_class": 1, "candidates": [1, 2], "converged": 4},
    "throughput": {"batch": 2, "reps": 1},
    "memory": {"batch": 2},
    "checks": {"min_classifier_accuracy": 0.0, "max_recon_mse": 10.0, "min_codebook_usage": 0.0,
               "max_ce_over_unigram": 10.0},
}


SELECTED = ["images", "eval_classifier", "reference_stats", "msvq_tokenizer", "token_pyramids", "var_models",
            "viar_models", "iteration_schedule", "throughput", "memory_profile"]


def test_gpu_block_builds_at_full_size():
    """The gpu block as written (no overrides) builds a tokenizer and both AR models."""
    from resources.profiles import load_params

    params = parse(VIARRunParams, load_params("viar", "gpu"), "viar.gpu")
    shapes = runs.tokenizer_config(params, "shapes")
    assert (shapes.latent_size, shapes.tokens_per_image) == (8, 130)
    var = viar_model.NextScaleAR(runs.ar_config(params, shapes.to_dict(), "shapes", "var", params.claim_depth))
    imp = viar_model.NextScaleAR(runs.ar_config(params, shapes.to_dict(), "shapes", "viar"))
    n_var, n_viar = viar_model.count_parameters(var), viar_model.count_parameters(imp)
    assert var.cfg.width == imp.cfg.width == 256 and (imp.cfg.pre, imp.cfg.post) == (2, 2)
    assert n_viar < 0.5 * n_var                       # 2 + 1 + 2 blocks + Proj vs 12 blocks


def test_device_peak_reads_the_cuda_allocator_on_cuda_and_nothing_on_cpu(monkeypatch):
    calls = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: calls.append("sync"))
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda: calls.append("reset"))
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda: 123_456)
    with viar_model.DevicePeak("cuda") as peak:
        calls.append("work")
    assert calls == ["sync", "reset", "work", "sync"]          # reset before the work, read after it
    assert peak.bytes == 123_456.0 and peak.source == "cuda_max_memory_allocated"
    calls.clear()
    with viar_model.DevicePeak("cpu") as cpu_peak:
        pass
    assert calls == [] and math.isnan(cpu_peak.bytes) and cpu_peak.source == "saved_tensor_bytes"


def test_gpu_profile_code_path_runs_on_cpu_at_tiny_size(data_dir):
    from jobs.definitions import resources

    paper = load_paper("viar")
    res = resources()
    res["compute"] = ComputeResource(profile="gpu", device="cpu", params_overrides={"viar": TINY})
    assert res["compute"].resolved_device() == "cpu"
    chosen = [a for a in paper.assets if {k.path[-1] for k in a.keys} <= set(SELECTED)]
    keys = {k for a in chosen for k in a.keys}
    checks = [c for c in paper.asset_checks if {k.asset_key for k in c.check_keys} <= keys
              and "schema" not in {k.name for k in c.check_keys}]     # the GX schema check is tested at smoke
    result = dg.materialize([*chosen, *checks], resources=res, raise_on_error=False)
    assert result.success, [e.check_name for e in result.get_asset_check_evaluations() if not e.passed]

    tok = json.loads((data_dir / "viar" / "msvq_tokenizer.json").read_text())["shapes"]
    assert tok["config"]["image_size"] == 32 and tok["config"]["downsample"] == 2
    assert tok["tokens_per_image"] == 130

    models = pd.concat([pd.read_parquet(data_dir / "viar" / f"{n}.parquet") for n in ("var_models", "viar_models")])
    assert set(models["model"]) == {"VAR-d3", "VAR-d12", "VIAR-p2"}

    mem = pd.read_parquet(data_dir / "viar" / "memory_profile.parquet")
    assert (mem["device"] == "cpu").all() and (mem["peak_source"] == "saved_tensor_bytes").all()
    assert np.array_equal(mem["peak_bytes"].to_numpy(), mem["saved_bytes"].to_numpy(dtype=float))
    assert mem["peak_cuda_bytes"].isna().all()
    var = mem[mem["sweep"] == "var_depth"].sort_values("value")
    assert var["value"].tolist() == [3, 6, 9, 12]
    steps = np.diff(var["saved_bytes"].to_numpy(dtype=float))
    assert steps.min() > 0 and steps.max() / steps.min() == pytest.approx(1.0, rel=0.02)   # linear in depth
    nograd = mem[mem["sweep"] == "viar_nograd_iters"]
    assert nograd["value"].tolist() == [0, 2, 5, 10] and nograd["saved_bytes"].nunique() == 1
    grad = mem[mem["sweep"] == "viar_grad_iters"].sort_values("value")
    assert np.all(np.diff(grad["saved_bytes"].to_numpy()) > 0)

    tp = pd.read_parquet(data_dir / "runs" / "viar" / "throughput.parquet")           # a run record
    assert (tp["device"] == "cpu").all() and tp["peak_memory_bytes"].isna().all()
    assert {"explicit", "dec16-4", "calibrated"} <= set(tp["schedule"])
    assert (tp["images_per_second"] > 0).all()
