"""Bring your own data: `python -m assets.pfn_causal.cli` answers a do-query on a CSV with the
smoke run's pretrained PFN (zero-shot, the rule's verdict, PWF), and refuses bad input with a
clear message before any model is loaded."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from assets.pfn_causal import cli
from assets.pfn_causal.userdata import BadInput, parse_do, validate
from tests.conftest import smoke_run

run = smoke_run("pfn_causal")


def _frame(n: int = 60, seed: int = 0) -> pd.DataFrame:
    """x1 → x2 → y, x1 → y, x3 noise: E[y | do(x2 = v)] = 2 v (units of the CSV)."""
    rng = np.random.default_rng(seed)
    x1 = rng.normal(size=n)
    x2 = 0.8 * x1 + 0.5 * rng.normal(size=n)
    x3 = rng.normal(size=n)
    y = 2.0 * x2 + 1.0 * x1 + 0.3 * rng.normal(size=n)
    return pd.DataFrame({"x1": x1, "x2": x2, "x3": x3, "y": 10 * y + 5})


def test_cli_answers_zero_shot_rule_and_pwf_in_json(run, tmp_path, capsys):
    path = tmp_path / "obs.csv"
    _frame().to_csv(path, index=False)
    code = cli.main(["--csv", str(path), "--outcome", "y", "--do", "x1=0.5,x3=-1", "--pwf", "--pwf-steps", "3",
                     "--profile", "smoke", "--data-dir", str(run.data_dir)])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["do"] == {"x1": 0.5, "x3": -1.0} and out["rows"] == 60 and out["outcome"] == "y"
    for key in ("zero_shot", "pwf"):
        assert np.isfinite(out[key]["mean"]) and out[key]["sd"] > 0
    assert out["pwf"]["steps"] == 3 and out["pwf"]["mean"] != out["zero_shot"]["mean"]
    assert out["rule"]["verdict"] in ("pwf", "zero_shot")
    assert (out["rule"]["verdict"] == "pwf") == (out["rule"]["score"] > out["rule"]["threshold"])
    assert any("padded" in f for f in out["flags"])                         # 3 covariates, the model's d = 4
    # the CSV's units: shifting and scaling y moves the zero-shot estimate the same way
    shifted = _frame().assign(y=lambda f: (f["y"] - 5) / 10)
    again = cli.answer(shifted, "y", "x1=0.5,x3=-1", profile="smoke", data_dir=run.data_dir)
    assert again["zero_shot"]["mean"] == pytest.approx((out["zero_shot"]["mean"] - 5) / 10, rel=1e-4, abs=1e-4)


def test_values_outside_the_observed_range_are_flagged_not_refused():
    frame = _frame()
    names, values = parse_do("x2=9")
    query = validate(frame, "y", names, values, 4)
    assert any("outside the observed 5–95 % range" in f for f in query.flags)
    inside = validate(frame, "y", *parse_do("x2=0"), 4)
    assert not any("outside" in f for f in inside.flags)


@pytest.mark.parametrize("change, do, fragment", [
    (None, " , ", "empty intervention"),
    (None, "x9=1", "unknown column(s) ['x9']"),
    (None, "y=1", "the outcome cannot be intervened on"),
    (None, "x1=1,x1=2", "repeated column in the intervention: ['x1']"),
    (None, "x1", "has no value"),
    ("nan", "x1=1", "non-finite or non-numeric cells"),
    ("text", "x1=1", "non-finite or non-numeric cells"),
    ("wide", "x1=1", "more than the model's d = 4"),
    ("short", "x1=1", "at least 16 observational rows"),
    (None, "x1=abc", "is not a number"),
    (None, "x1=inf", "is not finite"),
])
def test_cli_rejects_bad_input_before_loading_a_model(tmp_path, capsys, change, do, fragment):
    frame = _frame()
    if change == "nan":
        frame.loc[3, "x2"] = np.nan
    elif change == "text":
        frame["x3"] = frame["x3"].astype(object)
        frame.loc[5, "x3"] = "seven"
    elif change == "wide":
        for i in range(4, 7):
            frame[f"x{i}"] = 0.0
    elif change == "short":
        frame = frame.head(10)
    path = tmp_path / "obs.csv"
    frame.to_csv(path, index=False)
    code = cli.main(["--csv", str(path), "--outcome", "y", "--do", do, "--profile", "smoke",
                     "--data-dir", str(tmp_path / "nowhere")])                  # no model exists there
    assert code == 2
    assert fragment in json.loads(capsys.readouterr().err)["error"]


def test_mask_value_length_mismatch_and_repeated_table_columns():
    with pytest.raises(BadInput, match="mask/value length mismatch"):
        parse_do("x1,x2", "0.5")
    frame = _frame()
    dup = pd.concat([frame, frame[["x1"]]], axis=1)
    with pytest.raises(BadInput, match="repeated column names"):
        validate(dup, "y", ["x1"], [0.5], 4)
    with pytest.raises(BadInput, match="mask/value length mismatch"):
        validate(frame, "y", ["x1", "x2"], [0.5], 4)
