"""Bring-your-own-CSV command line: output table, summary, and clear errors on bad input."""
import json

import numpy as np
import pandas as pd
import pytest

from assets.pac_labels import cli


def _csv(path, n=1500, seed=0, **overrides):
    rng = np.random.default_rng(seed)
    conf = rng.choice([0.55, 0.7, 0.85, 0.95, 1.0], size=n)
    y = rng.choice(["cat", "dog", "bird"], size=n)
    wrong = rng.random(n) < (1.0 - conf) * 0.9
    yhat = np.where(wrong, np.where(y == "cat", "dog", "cat"), y)
    frame = pd.DataFrame({"label": y, "ai": yhat, "conf": conf, "text": [f"item {i}" for i in range(n)]})
    for col, value in overrides.items():
        frame[col] = value
    frame.to_csv(path, index=False)
    return frame


ARGS = ["--label-col", "label", "--pred-col", "ai", "--conf-col", "conf", "--num-draws", "300",
        "--wsr-grid-size", "10000"]


def test_cli_labels_a_csv_with_provenance_and_summary(tmp_path, capsys):
    frame = _csv(tmp_path / "in.csv")
    code = cli.main(["--csv", str(tmp_path / "in.csv"), "--out", str(tmp_path / "out.csv"),
                     "--summary", str(tmp_path / "s.json"), *ARGS])
    assert code == 0
    out = pd.read_csv(tmp_path / "out.csv")
    summary = json.loads((tmp_path / "s.json").read_text())
    assert list(out.columns[:4]) == list(frame.columns) and len(out) == len(frame)
    assert set(out["provenance"]) <= {"ai", "expert_sampled", "expert_threshold"}
    expert = out["provenance"] != "ai"
    assert (out.loc[expert, "pac_label"] == out.loc[expert, "label"]).all()
    assert (out.loc[~expert, "pac_label"] == out.loc[~expert, "ai"]).all()
    assert summary["expert_labels_bought"] == int(expert.sum())
    assert summary["expert_sampled"] == int((out["provenance"] == "expert_sampled").sum())
    assert 0 < summary["fraction_saved"] < 1 and summary["threshold_feasible"]
    assert np.mean(out["pac_label"] != out["label"]) <= 0.05         # this run meets ε
    assert json.loads(capsys.readouterr().out) == summary


@pytest.mark.parametrize("overrides, extra, fragment", [
    ({"conf": 1.5}, [], "'conf' has confidences outside [0, 1] at rows 0, 1"),
    ({"ai": "unicorn"}, [], "'ai' has labels outside the label space"),
    ({"label": np.nan}, [], "'label' has 1500 missing value(s)"),
    ({}, ["--epsilon", "1.2"], "--epsilon=1.2: must lie in (0, 1)"),
    ({}, ["--alpha", "0"], "--alpha=0.0: must lie in (0, 1)"),
    ({}, ["--num-draws", "5000"], "num_draws (K) = 5000 is larger than the pool (1500 items)"),
    ({}, ["--conf-col", "score"], "missing column(s) score; header is label, ai, conf, text"),
])
def test_cli_rejects_bad_input_naming_the_problem(tmp_path, capsys, overrides, extra, fragment):
    _csv(tmp_path / "in.csv", **overrides)
    code = cli.main(["--csv", str(tmp_path / "in.csv"), "--out", str(tmp_path / "out.csv"), *ARGS, *extra])
    assert code == 2
    assert fragment in capsys.readouterr().err
    assert not (tmp_path / "out.csv").exists()


def test_cli_is_deterministic_given_the_seed(tmp_path):
    _csv(tmp_path / "in.csv")
    for name in ("a", "b"):
        assert cli.main(["--csv", str(tmp_path / "in.csv"), "--out", str(tmp_path / f"{name}.csv"), *ARGS,
                         "--seed", "7"]) == 0
    assert (tmp_path / "a.csv").read_text() == (tmp_path / "b.csv").read_text()
