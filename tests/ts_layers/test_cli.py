"""Bring your own series: `python -m assets.ts_layers.cli prune` scores, prunes and realigns the smoke
run's deepest TSFM on a CSV column, and refuses bad input before loading any model."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from assets.ts_layers import cli
from tests.conftest import smoke_run

run = smoke_run("ts_layers")


def _series(n: int = 400, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    return pd.DataFrame({"y": 50 + 10 * np.sin(2 * np.pi * t / 24) + rng.normal(0, 1, n), "other": 1.0})


def test_cli_prunes_and_reports_json(run, tmp_path, capsys, one_torch_thread):
    path = tmp_path / "series.csv"
    _series().to_csv(path, index=False)
    out = tmp_path / "pruned.pt"
    code = cli.main(["prune", "--csv", str(path), "--column", "y", "--tau", "0.5", "--steps", "3",
                     "--profile", "smoke", "--data-dir", str(run.data_dir), "--out", str(out)])
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    assert result["depth"] == 4 and result["keep"][0] == 1 and len(result["keep"]) == 2
    assert [r["layer"] for r in result["importance"]] == [1, 2, 3, 4]
    assert set(result["test_mse"]) == {"full", "full_continued", "pruned"}
    assert all(np.isfinite(v) for v in result["test_mse"].values())
    assert 0 < result["param_fraction"] < 0.6 and result["latency_ms_batch1"]["pruned"] > 0
    assert out.exists() and result["test_windows"] >= 10


@pytest.mark.parametrize("change, args, fragment", [
    ("nan", [], "NaN/inf or non-numeric"),
    ("text", [], "NaN/inf or non-numeric"),
    ("constant", [], "is constant"),
    ("short", [], "test windows (need ≥ 1 and ≥ 10"),
    (None, ["--column", "zzz"], "missing column(s) zzz"),
    (None, ["--tau", "1.5"], "--tau=1.5: must lie in (0, 1]"),
    (None, ["--tau", "0"], "--tau=0.0: must lie in (0, 1]"),
    (None, ["--depth", "3"], "was not trained"),
    (None, [], "no pretrained checkpoint"),
])
def test_cli_rejects_bad_input_before_loading_a_model(tmp_path, capsys, change, args, fragment):
    frame = _series()
    if change == "nan":
        frame.loc[7, "y"] = np.nan
    elif change == "text":
        frame["y"] = frame["y"].astype(object)
        frame.loc[3, "y"] = "seven"
    elif change == "constant":
        frame["y"] = 4.0
    elif change == "short":
        frame = frame.head(150)
    path = tmp_path / "series.csv"
    frame.to_csv(path, index=False)
    argv = ["prune", "--csv", str(path), "--column", "y", "--profile", "smoke", "--data-dir", str(tmp_path / "none")]
    code = cli.main(argv + args)
    assert code == 2
    assert fragment in json.loads(capsys.readouterr().err)["error"]
