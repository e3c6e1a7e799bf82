"""Bring your own table: fit on normal rows, score new ones, clear errors on bad input."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from assets.dispat import cli
from assets.dispat import data as D


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    root = tmp_path_factory.mktemp("dispat_cli")
    table = D.synthetic_transactions(160, 0, np.random.default_rng(0)).drop(columns=list(D.META))
    table.to_csv(root / "normal.csv", index=False)
    assert cli.main(["fit", "--csv", str(root / "normal.csv"), "--model", str(root / "model"), "--text-columns",
                     "description", "--profile", "smoke"]) == 0
    return root, table


def test_fit_then_score_flags_and_attributes(fitted):
    root, table = fitted
    new = D.synthetic_transactions(40, 8, np.random.default_rng(1))
    new.drop(columns=list(D.META)).to_csv(root / "new.csv", index=False)
    assert cli.main(["score", "--csv", str(root / "new.csv"), "--model", str(root / "model"), "--alpha", "0.05",
                     "--out", str(root / "scores.csv")]) == 0
    out = pd.read_csv(root / "scores.csv")
    assert len(out) == 48 and out["flag"].dtype == bool
    attr = [c for c in out.columns if c.startswith("attr_")]
    assert attr == [f"attr_{c}" for c in table.columns]
    assert np.allclose(out[attr].sum(axis=1), out["score"], atol=1e-6)
    assert (out["flag"] == (out["score"] > out["threshold"])).all()


def test_bad_input_is_a_clear_error(fitted, capsys):
    root, table = fitted
    bad = table.head(5).astype({"amount": object})
    bad.loc[3, "amount"] = "abc"
    bad.to_csv(root / "bad.csv", index=False)
    assert cli.main(["score", "--csv", str(root / "bad.csv"), "--model", str(root / "model")]) == 2
    assert "numeric column 'amount' at row 3" in capsys.readouterr().err
    table.head(5).drop(columns=["merchant"]).to_csv(root / "cols.csv", index=False)
    assert cli.main(["score", "--csv", str(root / "cols.csv"), "--model", str(root / "model")]) == 2
    assert "missing ['merchant']" in capsys.readouterr().err
    assert cli.main(["score", "--csv", str(root / "bad.csv"), "--model", str(root / "model"), "--alpha", "1.2"]) == 2
    assert "alpha" in capsys.readouterr().err
    table.head(0).to_csv(root / "empty.csv", index=False)
    assert cli.main(["score", "--csv", str(root / "empty.csv"), "--model", str(root / "model")]) == 2
    assert "empty.csv: header only, no data rows" in capsys.readouterr().err
