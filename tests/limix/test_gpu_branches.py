"""The gpu profile's option that no other test runs (tests/platform/test_gpu_coverage.py lists them): the
MLP / Periodic / PLE embedding arms (gpu `variants`). The smoke group's checkpoints and everything
downstream are materialized again with the gpu variant list switched on at smoke sizes: every arm
trains, passes the gates, and the best_embedding claim is judged on them."""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.limix.params import EMBEDDING_VARIANTS
from resources.profiles import load_params
from tests.conftest import rerun, smoke_run

SLUG = "limix"
GPU_VARIANTS = load_params(SLUG, "gpu")["variants"]
DOWNSTREAM = ["prior_config", "checkpoints", "embedding_rank", "feature_attention", "predictions",
              "benchmark_report"]


run = smoke_run(SLUG)


def test_gpu_embedding_variants_train_and_are_judged(run, tmp_path):
    assert set(EMBEDDING_VARIANTS) <= set(GPU_VARIANTS)
    assert not set(EMBEDDING_VARIANTS) & set(load_params(SLUG, "smoke")["variants"])
    seen = rerun(run, DOWNSTREAM, tmp_path / "data", params_overrides={SLUG: {"variants": GPU_VARIANTS}})
    gates = {k: v for k, v in seen["checks"].items() if not k.startswith("claim_")}
    assert seen["success"] and all(gates.values()), gates
    assert {f"{SLUG}/{n}" for n in DOWNSTREAM} <= seen["assets"]
    root = tmp_path / "data"
    ck = pd.read_parquet(root / SLUG / "checkpoints.parquet")
    assert set(ck["variant"]) == set(GPU_VARIANTS)
    arms = ck[ck["variant"].isin(EMBEDDING_VARIANTS)]
    assert np.isfinite(arms["val_auc"]).all() and ((arms["val_auc"] >= 0) & (arms["val_auc"] <= 1)).all()
    # same backbone, another embedding: the arms differ from RaBEL-SNF in parameters, not in the block order
    params = ck.groupby("variant")["params"].first()
    assert all(params[v] != params["rabel_snf"] for v in EMBEDDING_VARIANTS)
    pred = pd.read_parquet(root / SLUG / "predictions.parquet")
    assert set(EMBEDDING_VARIANTS) <= set(pred["variant"])
    claims = pd.read_parquet(root / "results" / SLUG / "claims.parquet").set_index("claim_id")
    row = claims.loc["best_embedding"]
    assert "gpu profile only" not in row["measured_value"], row.to_dict()
    assert "paired CIs" in row["measured_value"]
    assert all(f"vs {v}" in row["detail"] for v in EMBEDDING_VARIANTS)
