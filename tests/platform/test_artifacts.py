"""Artifacts: checkpoint round trip with weights_only loading, IO manager, md5 = DVC's."""
from __future__ import annotations

import json
import pickle
import shutil
import subprocess
from pathlib import Path

import dagster as dg
import numpy as np
import pandas as pd
import pytest
import torch

from resources.artifacts import ArtifactsResource, PaperlabIOManager, load_state_dict, save_state_dict
from resources.versioning import file_md5, params_hash


def test_state_dict_round_trip_with_sidecar(tmp_path):
    state = {"w": torch.randn(3, 4), "scalar": np.array(0.75), "counts": np.arange(5)}
    sidecar = save_state_dict(tmp_path / "m.pt", state, {"config": {"lr": 0.1}, "seed": 3})
    loaded, meta = load_state_dict(tmp_path / "m.pt")
    assert torch.equal(loaded["w"], state["w"])
    assert loaded["scalar"].shape == () and float(loaded["scalar"]) == 0.75
    assert loaded["counts"].tolist() == [0, 1, 2, 3, 4]
    assert meta["seed"] == 3 and meta["torch_version"] == torch.__version__ and meta == sidecar
    # weights_only loading: a pickle of an arbitrary object is refused
    torch.save({"obj": object()}, tmp_path / "bad.pt")
    with pytest.raises(pickle.UnpicklingError):
        torch.load(tmp_path / "bad.pt", weights_only=True)


def test_tampered_checkpoint_is_refused(tmp_path):
    save_state_dict(tmp_path / "m.pt", {"w": torch.ones(2)}, {})
    torch.save({"w": torch.zeros(2)}, tmp_path / "m.pt")
    with pytest.raises(ValueError, match="does not match the md5"):
        load_state_dict(tmp_path / "m.pt")


def test_only_tensors_in_a_state_dict(tmp_path):
    with pytest.raises(TypeError, match="only tensors"):
        save_state_dict(tmp_path / "m.pt", {"name": "x"}, {})


def test_io_manager_round_trips_frames_and_dicts(data_dir):
    frame = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})

    @dg.asset(key=["t", "frame"])
    def table():
        return frame

    @dg.asset(key=["t", "summary"], ins={"table": dg.AssetIn(key=["t", "frame"])})
    def summary(table: pd.DataFrame) -> dict:
        return {"rows": len(table)}

    result = dg.materialize([table, summary], resources={"io_manager": PaperlabIOManager()})
    assert result.success
    pd.testing.assert_frame_equal(pd.read_parquet(data_dir / "t" / "frame.parquet"), frame)
    assert json.loads((data_dir / "t" / "summary.json").read_text()) == {"rows": 2}
    meta = result.get_asset_materialization_events()[0].materialization.metadata
    assert meta["md5"].value == file_md5(data_dir / "t" / "frame.parquet")


def test_artifact_paths_are_deterministic(data_dir):
    art = ArtifactsResource()
    assert art.checkpoint_path("x", "m") == data_dir / "x" / "checkpoints" / "m.pt"
    assert art.report_dir("x") == data_dir / "reports" / "x"


def test_params_hash_is_order_independent():
    assert params_hash({"a": 1, "b": [1, 2]}) == params_hash({"b": [1, 2], "a": 1})
    assert params_hash({"a": 1}) != params_hash({"a": 2})


def test_md5_equals_dvc(tmp_path):
    dvc = shutil.which("dvc") or str(Path(__file__).resolve().parents[2] / ".venv" / "bin" / "dvc")
    if not Path(dvc).exists():
        pytest.skip("dvc is not installed (make venv links it into .venv/bin)")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([dvc, "init", "-q"], cwd=tmp_path, check=True)
    out = tmp_path / "out.bin"
    out.write_bytes(np.random.default_rng(0).bytes(100_000) + b"line\r\nend\n")
    subprocess.run([dvc, "add", "-q", "out.bin"], cwd=tmp_path, check=True)
    dvc_file = (tmp_path / "out.bin.dvc").read_text()
    assert f"md5: {file_md5(out)}" in dvc_file


def test_every_stored_output_records_provenance(smoke_resources):
    from assets.oscs import definitions as oscs
    from resources.profiles import load_params
    from resources.versioning import git_sha

    result = dg.materialize([oscs.benign_corpus], resources=smoke_resources)
    meta = result.get_asset_materialization_events()[0].materialization.metadata
    assert meta["profile"].value == "smoke"
    assert meta["params_hash"].value == params_hash(load_params("oscs", "smoke"))
    assert meta["git_sha"].value == git_sha()
