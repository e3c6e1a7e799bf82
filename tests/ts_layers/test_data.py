"""Offline data: generators, the statsmodels loaders, chronological windows."""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.ts_layers import data as D


def test_synthetic_corpus_is_seeded_and_varied():
    a = D.synthetic_corpus(40, 512, 0.1, seed=3)
    b = D.synthetic_corpus(40, 512, 0.1, seed=3)
    assert all(np.array_equal(x, y) for x, y in zip(a["values"], b["values"]))
    assert (a["split"] == "val").sum() == 4 and list(a["split"].iloc[-4:]) == ["val"] * 4
    scales = a["scale"].to_numpy()
    assert scales.min() >= 1e-2 and scales.max() <= 1e3 and scales.max() / scales.min() > 100
    assert set(a["n_sin"]) <= {1, 2, 3} and all(np.isfinite(v).all() and np.std(v) > 0 for v in a["values"])


def test_sunspots_monthly_parser_reads_full_and_partial_years():
    text = ("MONTHLY MEAN\nYear Jan Feb\n-----\n1749    58.0  62.6  70.0  55.7  85.0  83.5  94.8  66.3  75.9  75.5 "
            "158.6  85.2\n\n1750    73.3  75.9\nNo observations were available during February 1824.\n")
    s = D.parse_sunspots_monthly(text)
    assert len(s) == 14 and s.iloc[0] == 58.0 and s.iloc[-1] == 75.9 and s.index[-1] == "1750-02"


def test_real_series_load_offline_with_the_issue_s_lengths():
    frame = D.load_real_series(("co2", "sunspots", "elnino", "macro", "elec_equip"))
    sizes = frame.groupby("task").size().to_dict()
    assert sizes["co2"] == 2284 and sizes["elnino"] == 732 and sizes["elec_equip"] == 257
    assert sizes["macro"] == 12 * 203 and sizes["sunspots"] > 3000
    assert frame["value"].notna().all() and frame.loc[frame["task"] == "co2", "filled"].sum() == 59
    for _, g in frame.groupby(["task", "channel"]):
        assert (np.diff(g["t"].to_numpy()) > 0).all()


def test_windows_are_chronological_by_target_time():
    starts = D.window_starts(1000, 96, 24, 16, (0.7, 0.8), 10 ** 9)
    train_end, val_end = 700, 800
    assert (starts["train"] + 96 + 16 <= train_end).all() and starts["train"].max() + 112 == train_end
    assert (starts["val"] + 96 >= train_end).all() and (starts["val"] + 120 <= val_end).all()
    assert (starts["test"] + 96 >= val_end).all() and starts["test"].max() + 120 == 1000
    thinned = D.window_starts(1000, 96, 24, 16, (0.7, 0.8), 10)["test"]
    assert len(thinned) == 10 and thinned[0] == starts["test"][0] and thinned[-1] == starts["test"][-1]
    frame = pd.DataFrame({"task": "x", "channel": "x", "t": np.arange(400), "value": np.sin(np.arange(400.0))})
    index = D.window_index(frame, 96, 24, 16, (0.7, 0.8), 256)
    test, fit = index[index["split"] == "test"], index[index["split"] != "test"]
    assert fit["target_end"].max() <= test["target_start"].min()
