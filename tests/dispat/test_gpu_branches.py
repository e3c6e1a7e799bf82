"""The gpu profile's option that no other test runs (tests/platform/test_gpu_coverage.py lists them): the
wine table (gpu datasets and variants.datasets; cpu stops at breast_cancer). Its splits, schema and
serialised corpus at the gpu profile's own split sizes (the table is small: 71 normal rows, scaled down pro
rata) through the same gates the group runs. The critic (option B) is run by test_critic.py."""
from __future__ import annotations

import json
from dataclasses import replace

import numpy as np

from assets.common.params import parse
from assets.dispat import checks, runs
from assets.dispat import data as D
from assets.dispat.params import DispatParams
from resources.compute import ComputeResource
from resources.profiles import load_params

GPU = parse(DispatParams, load_params("dispat", "gpu"), "dispat.gpu")


def test_wine_splits_pass_the_split_gates_at_gpu_sizes():
    assert "wine" in GPU.datasets and "wine" in GPU.variants.datasets
    assert "wine" not in parse(DispatParams, load_params("dispat", "cpu"), "dispat.cpu").datasets
    p = replace(GPU, datasets=("wine",))
    compute = ComputeResource(profile="gpu", device="cpu")

    def rng_for(*keys):
        return compute.rng("dispat", *keys)

    raw = runs.raw_tables(p, rng_for)
    assert len(raw) == 178 and (raw["label"] == 0).sum() == 71              # sklearn wine: class 1 is normal
    assert set(raw.loc[raw["label"] == 1, "anomaly_type"]) == {"other_cultivar"}
    frame = runs.splits(raw, p, rng_for)
    assert set(frame["seed"]) == set(GPU.seeds)
    gate = checks.splits_valid(frame, p)
    assert gate.passed, gate.problems
    for _, g in frame.groupby("seed"):
        counts = g.groupby("split").size().to_dict()
        normal = g[g["label"] == 0]
        # every normal row is used once: ≥ 20 validation rows, test ~ 510 · 71 / 2310, the rest trains
        assert normal["row_id"].is_unique and len(normal) == 71
        assert counts["val"] == D.MIN_VAL and counts["test"] - g["label"].sum() == 16
        assert counts["train"] == 71 - D.MIN_VAL - 16
        ratio = g.loc[g["split"] == "test", "label"].mean()
        assert GPU.gates.anomaly_ratio[0] <= ratio <= GPU.gates.anomaly_ratio[1]
    # the numeric-only table serialises and parses back exactly
    first = replace(p, seeds=GPU.seeds[:1])
    corpus = runs.serialized_corpus(frame[frame["seed"] == GPU.seeds[0]], first, rng_for)
    assert checks.corpus_round_trip(corpus).passed
    schema = D.Schema.from_dict(json.loads(corpus["schema"].iloc[0]))
    assert len(schema.columns) == 13 and {c.kind for c in schema.columns} == {D.NUMERIC}
    assert np.all([" is " in t for t in corpus["text"]])
