"""Offline data for ts_layers — no Dagster import.

- `synthetic_corpus`: seeded series of 1–3 sinusoids (periods 4–96), linear / piecewise trends,
  AR(2) noise, level shifts, scales 1e-2…1e3 (the spec's pretraining corpus).
- `load_real_series`: statsmodels' bundled datasets (no download): co2 (weekly, gaps
  forward-filled), sunspots monthly (parsed from `src/sunspots_monthly.dat`), elnino (61 years ×
  12 months → 732), macrodata (12 quarterly columns, one task), elec_equip (monthly). nile (100
  points) is too short for a 96-step look-back with 10 test windows: excluded.
- `window_index`: chronological 70/10/20 splits by target time, window starts per split.

Long-format frames: one row per (task, channel, t) with a strictly increasing integer t.
"""
from __future__ import annotations

import os
import re

import numpy as np
import pandas as pd

MACRO_COLUMNS = ("realgdp", "realcons", "realinv", "realgovt", "realdpi", "cpi", "m1", "tbilrate", "unemp",
                 "pop", "infl", "realint")
# seasonal period of each task in its own steps (seasonal-naive, ETS); 1 = none below the look-back
SEASONAL_PERIOD = {"co2": 52, "sunspots": 1, "elnino": 12, "macro": 4, "elec_equip": 12}
FREQUENCY = {"co2": "weekly", "sunspots": "monthly", "elnino": "monthly", "macro": "quarterly",
             "elec_equip": "monthly"}


# ------------------------------------------------------------------------------ synthetic corpus
def synthetic_series(rng: np.random.Generator, length: int) -> tuple[np.ndarray, dict]:
    """One series (length,) float64 and its generator parameters."""
    t = np.arange(length, dtype=float)
    n_sin = int(rng.integers(1, 4))
    periods = np.exp(rng.uniform(np.log(4), np.log(96), size=n_sin))
    amplitudes = rng.uniform(0.3, 1.5, size=n_sin)
    phases = rng.uniform(0, 2 * np.pi, size=n_sin)
    x = (amplitudes[:, None] * np.sin(2 * np.pi * t[None] / periods[:, None] + phases[:, None])).sum(axis=0)
    kind = rng.choice(["none", "linear", "piecewise"], p=[0.3, 0.4, 0.3])
    slope = rng.normal(0, 1.5) / length
    if kind == "linear":
        x += slope * t
    elif kind == "piecewise":
        knot = rng.integers(length // 4, 3 * length // 4)
        x += slope * t + rng.normal(0, 1.5) / length * np.clip(t - knot, 0, None)
    # AR(2) noise with roots inside the unit circle: φ1 = r1 + r2, φ2 = −r1 r2, |r| < 0.9
    r = rng.uniform(-0.9, 0.9, size=2)
    phi = (r[0] + r[1], -r[0] * r[1])
    e = rng.normal(0, rng.uniform(0.05, 0.4), size=length + 50)
    noise = np.zeros_like(e)
    for i in range(2, len(e)):
        noise[i] = phi[0] * noise[i - 1] + phi[1] * noise[i - 2] + e[i]
    x += noise[50:]
    shifts = int(rng.poisson(0.7))
    for _ in range(shifts):
        x[int(rng.integers(1, length)):] += rng.normal(0, 1.0)
    scale = 10 ** rng.uniform(-2, 3)
    offset = rng.normal(0, 3) * scale
    params = {"n_sin": n_sin, "periods": [round(float(p), 3) for p in periods], "trend": str(kind),
              "ar": [round(float(v), 4) for v in phi], "shifts": shifts, "scale": float(scale)}
    return x * scale + offset, params


def synthetic_corpus(n_series: int, length: int, val_fraction: float, seed: int) -> pd.DataFrame:
    """Wide frame: one row per series (series_id, split, values: list of `length` floats, and
    the generator parameters). The last ⌈val_fraction · n⌉ series are "val"."""
    rng = np.random.default_rng(seed)
    n_val = max(1, int(np.ceil(val_fraction * n_series)))
    rows = []
    for i in range(n_series):
        x, params = synthetic_series(rng, length)
        rows.append({"series_id": i, "split": "val" if i >= n_series - n_val else "train",
                     "values": x.astype(np.float32), "n_sin": params["n_sin"], "trend": params["trend"],
                     "shifts": params["shifts"], "scale": params["scale"]})
    return pd.DataFrame(rows)


def corpus_array(frame: pd.DataFrame, split: str) -> np.ndarray:
    """(n_series, length) float32 of one split of the synthetic corpus."""
    part = frame[frame["split"] == split].sort_values("series_id")
    return np.stack([np.asarray(v, dtype=np.float32) for v in part["values"]])


# ------------------------------------------------------------------------------ real series
def _statsmodels_dir() -> str:
    import statsmodels.datasets as D

    return os.path.dirname(D.__file__)


def parse_sunspots_monthly(text: str) -> pd.Series:
    """Monthly means from the fixed-width year × month table (rows "YYYY v1 … v12"; the last
    year may be partial). Index: month number since the first row's January."""
    values, stamps = [], []
    for line in text.splitlines():
        m = re.match(r"^\s*(\d{4})\s+(.*)$", line)
        if not m:
            continue
        numbers = [float(v) for v in m.group(2).split()]
        if not 1 <= len(numbers) <= 12:
            continue
        year = int(m.group(1))
        for month, v in enumerate(numbers):
            stamps.append(f"{year}-{month + 1:02d}")
            values.append(v)
    series = pd.Series(values, index=stamps, dtype=float)
    return series[~series.index.duplicated(keep="first")]


def load_real_series(names: tuple[str, ...]) -> pd.DataFrame:
    """Long frame (task, channel, t, stamp, value, filled) of the named statsmodels series."""
    import statsmodels.api as sm

    frames = []

    def add(task: str, channel: str, values, stamps, filled=None) -> None:
        values = np.asarray(values, dtype=float)
        frames.append(pd.DataFrame({"task": task, "channel": channel, "t": np.arange(len(values)),
                                    "stamp": [str(s) for s in stamps], "value": values,
                                    "filled": np.zeros(len(values), bool) if filled is None else filled}))

    for name in names:
        if name == "co2":
            raw = sm.datasets.co2.load_pandas().data["co2"]
            add("co2", "co2", raw.ffill().bfill().to_numpy(), raw.index.strftime("%Y-%m-%d"), raw.isna().to_numpy())
        elif name == "sunspots":
            path = os.path.join(_statsmodels_dir(), "sunspots", "src", "sunspots_monthly.dat")
            with open(path, encoding="utf-8", errors="replace") as fh:
                s = parse_sunspots_monthly(fh.read())
            add("sunspots", "sunspots", s.to_numpy(), s.index)
        elif name == "elnino":
            raw = sm.datasets.elnino.load_pandas().data
            months = raw.columns[1:]
            values = raw[months].to_numpy().ravel()
            stamps = [f"{int(y)}-{m + 1:02d}" for y in raw["YEAR"] for m in range(12)]
            add("elnino", "sst", values, stamps)
        elif name == "macro":
            raw = sm.datasets.macrodata.load_pandas().data
            stamps = [f"{int(y)}Q{int(q)}" for y, q in zip(raw["year"], raw["quarter"])]
            for column in MACRO_COLUMNS:
                add("macro", column, raw[column].to_numpy(), stamps)
        elif name == "elec_equip":
            from statsmodels.datasets import elec_equip

            raw = elec_equip.load().data.iloc[:, 0]
            add("elec_equip", "elec_equip", raw.to_numpy(), pd.to_datetime(raw.index).strftime("%Y-%m"))
        else:
            raise ValueError(f"unknown real series {name!r}")
    return pd.concat(frames, ignore_index=True)


def channel_arrays(frame: pd.DataFrame) -> dict[tuple[str, str], np.ndarray]:
    """{(task, channel): values (n,) float64} ordered by t."""
    return {(task, channel): g.sort_values("t")["value"].to_numpy(dtype=float)
            for (task, channel), g in frame.groupby(["task", "channel"], sort=True)}


# ------------------------------------------------------------------------------ windows
def split_bounds(n: int, split: tuple[float, float]) -> tuple[int, int]:
    """(train_end, val_end): targets at t < train_end are train, < val_end val, the rest test."""
    return int(np.floor(split[0] * n)), int(np.floor(split[1] * n))


def window_starts(n: int, lookback: int, horizon: int, patch: int, split: tuple[float, float],
                  max_test: int) -> dict[str, np.ndarray]:
    """Window starts s of one channel of length n, by split, chronological by target time:
    - train: training windows [s, s + lookback + patch) whose every target (all but the first
      patch) lies before train_end: s + lookback + patch ≤ train_end;
    - val / test: forecast windows, look-back [s, s + lookback), targets [s + lookback,
      s + lookback + horizon) inside [train_end, val_end) / [val_end, n);
    test starts are thinned to at most `max_test`, evenly spaced."""
    train_end, val_end = split_bounds(n, split)
    train = np.arange(0, max(0, train_end - lookback - patch + 1))
    val = np.arange(max(0, train_end - lookback), max(0, val_end - lookback - horizon + 1))
    test = np.arange(max(0, val_end - lookback), max(0, n - lookback - horizon + 1))
    if len(test) > max_test:
        test = test[np.unique(np.linspace(0, len(test) - 1, max_test).round().astype(int))]
    return {"train": train, "val": val, "test": test}


def window_index(real: pd.DataFrame, lookback: int, horizon: int, patch: int, split: tuple[float, float],
                 max_test: int) -> pd.DataFrame:
    """One row per window: task, channel, split, start, target_start, target_end (exclusive),
    and its look-back's RevIN mean / std (raw units)."""
    rows = []
    for (task, channel), x in channel_arrays(real).items():
        for split_name, starts in window_starts(len(x), lookback, horizon, patch, split, max_test).items():
            for s in starts:
                look = x[s:s + lookback]
                span = patch if split_name == "train" else 0
                rows.append({"task": task, "channel": channel, "split": split_name, "start": int(s),
                             "target_start": int(s + (patch if split_name == "train" else lookback)),
                             "target_end": int(s + lookback + (span if split_name == "train" else horizon)),
                             "revin_mean": float(look.mean()), "revin_std": float(look.std())})
    return pd.DataFrame(rows)
