"""PAC labeling wiring: the smoke group is complete (tests/platform/test_smoke_contract.py), bad
input is stopped by a blocking check before anything downstream consumes it (re-running only
the gated asset and its downstream on the stored smoke outputs), and the predicates name what
is wrong. The paper-CSV path runs on a generated stand-in CSV (PAPERLAB_PAC_LABELS_DIR), never
on the shared data."""
from __future__ import annotations

import json
from dataclasses import asdict

import numpy as np
import pandas as pd
import pytest

from assets.pac_labels import checks, runs
from assets.pac_labels import method as pac_method
from assets.pac_labels import models as pac_models
from assets.pac_labels.params import PACLabelsParams
from resources.artifacts import load_checkpoint
from tests.conftest import rerun, smoke_run, typed_params

SLUG = "pac_labels"
PAC_DOWNSTREAM = {f"{SLUG}/{n}" for n in ("calibrated_thresholds", "labeled_datasets", "trial_outcomes",
                                           "benchmark_report")}


run = smoke_run(SLUG)


@pytest.fixture(scope="module")
def params() -> PACLabelsParams:
    return typed_params(PACLabelsParams, SLUG, "smoke")


@pytest.fixture
def in_smoke(run, monkeypatch):
    """Checkpoint references are relative to the data directory: resolve them in the smoke run's."""
    monkeypatch.setenv("PAPERLAB_DATA_DIR", str(run.data_dir))
    return run


def detail(root, asset: str, name: str) -> str:
    """The message of one check as the rerun recorded it (data/runs/<slug>/checks_*.parquet)."""
    return str(pd.read_parquet(root / "runs" / SLUG / f"checks_{asset}_{name}.parquet")["detail"].iloc[0])


def _stance_like(directory, n=600, seed=0, confidence=None):
    """A generated CSV with the paper's stance columns (not the paper's data)."""
    rng = np.random.default_rng(seed)
    conf = rng.choice([0.6, 0.8, 0.9, 0.95, 1.0], size=n) if confidence is None else confidence
    y = rng.choice(["agrees", "disagrees", "neutral"], size=n)
    wrong = rng.random(n) < (1 - conf) * 1.5
    yhat = np.where(wrong, np.where(y == "agrees", "neutral", "agrees"), y)
    directory.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"text": [f"claim {i}" for i in range(n)], "Y": y, "Yhat (GPT4o)": yhat,
                  "confidence": conf}).to_csv(directory / "stance.csv")


@pytest.fixture
def paper_dir(tmp_path, monkeypatch):
    path = tmp_path / "paper_csvs"
    path.mkdir()
    monkeypatch.setenv("PAPERLAB_PAC_LABELS_DIR", str(path))
    return path


# ------------------------------------------------------------------------------ the smoke run
def test_smoke_labels_every_partition_through_the_ledger(run):
    report = run.data_dir / "reports" / SLUG
    assert (report / "plots" / "realized_error.png").stat().st_size > 1000
    assert "How this reproduction differs from the paper" in (report / "REPORT.md").read_text()
    metrics = json.loads((report / "metrics.json").read_text())
    assert {"digits/router/wsr", "synthetic_reg/gb_ensemble/clt"} <= set(metrics["pac"])
    labeled = run.value("labeled_datasets")
    assert set(labeled["provenance"]) == {"ai", "expert_sampled", "expert_threshold"}
    assert {"digits", "synthetic_cls", "synthetic_reg"} <= set(labeled["dataset_id"])
    # every partition is labelled, and only those the partitions asset lists
    keys = {runs.spec_key(s) for s in run.value("partitions")}
    assert set(labeled[["dataset_id", "model", "ci"]].astype(str).agg("/".join, axis=1)) == keys
    thresholds = run.value("calibrated_thresholds")
    # determinism: trial seeds are derived from keys, and the stored draws replay identically
    assert thresholds["seed"].nunique() == len(thresholds) // 2


def test_router_value_carries_its_checkpoint_and_its_rows_are_annotations(in_smoke, params):
    run = in_smoke
    router = run.value("router")
    state, sidecar = load_checkpoint(router)
    assert sidecar["md5"] == router["md5"] and sidecar["n_classes"] == router["n_classes"]
    assert sidecar["config"]["epochs"] == params.router.epochs
    annotations = run.value("ai_annotations")
    routed = annotations[annotations["model"] == runs.ROUTER_MODEL]
    assert routed["item_id"].tolist() == router["routed"]["item_id"]
    assert routed["prelabelled"].eq(len(router["calibration_item_ids"])).all()
    assert not set(routed["item_id"]) & set(router["calibration_item_ids"])
    assert checks.router_loads_back(router, run.value("source_datasets"), run.value("ai_models")).passed
    assert sidecar["config"]["head"] == params.router.head and len(router["history"]) == params.router.epochs
    for name in params.router.ablations:     # same items, same calibration split, own uncertainty
        rows = annotations[annotations["model"] == f"{runs.ROUTER_MODEL}_{name}"]
        assert rows["item_id"].tolist() == router["routed"]["item_id"]
        assert rows["prelabel_cost"].eq(router["prelabel_cost"]).all()
    same_routing = annotations[annotations["model"] == "router_routed_confidence"]
    assert same_routing["routed_model"].tolist() == routed["routed_model"].tolist()


def test_router_that_routes_differently_is_named(in_smoke):
    run = in_smoke
    router = run.value("router")
    flipped = dict(router, routed=dict(router["routed"], model=[1 - m for m in router["routed"]["model"][:3]]
                                       + router["routed"]["model"][3:]))
    found = checks.router_loads_back(flipped, run.value("source_datasets"), run.value("ai_models"))
    assert not found.passed and "routes 3 items to another model than recorded" in found.message()
    missing = dict(router, checkpoint="pac_labels/checkpoints/nowhere.pt")
    assert "router checkpoint does not load" in checks.router_loads_back(
        missing, run.value("source_datasets"), run.value("ai_models")).message()


# ------------------------------------------------------------------------------ partitions
def test_partitions_are_the_configured_ones_plus_each_loaded_paper_csv(params):
    configured = runs.partition_specs(params, loaded=[])
    expected = []
    for s in params.partitions:         # each router partition is followed by its ablations
        expected.append(f"{s.dataset}/{s.model}/{s.ci}")
        if s.model == "router":
            expected += [f"{s.dataset}/router_{a}/{s.ci}" for a in params.router.ablations]
    assert [runs.spec_key(s) for s in configured] == expected and params.router.ablations
    with_stance = runs.partition_specs(params, loaded=["stance"])
    assert with_stance[:-1] == configured
    assert with_stance[-1] == {"dataset": "stance", "model": "gpt4o", "ci": "wsr", "num_draws": 500,
                               "label_range": None}


def test_more_draws_than_items_is_stopped(run, params, tmp_path):
    greedy = [dict(asdict(s), num_draws=10 ** 6) if s.model == "gnb" else asdict(s) for s in params.partitions]
    seen = rerun(run, ["partitions", "ai_annotations", "calibrated_thresholds"], tmp_path / "data",
                 params_overrides={SLUG: {"partitions": greedy}})
    assert seen["checks"]["valid"] is False
    assert ("partition digits/gnb/wsr: num_draws (K) = 1000000 is larger than the pool"
            in detail(tmp_path / "data", "ai_annotations", "valid"))
    assert f"{SLUG}/ai_annotations" in seen["assets"] and not PAC_DOWNSTREAM & seen["assets"]


# ------------------------------------------------------------------------------ gating
def test_non_finite_model_confidence_is_stopped(run, tmp_path, monkeypatch):
    real = pac_models.predict

    def broken(kind, state, X):
        yhat, conf = real(kind, state, X)
        conf = conf.copy()
        conf[2] = np.nan
        return yhat, conf

    monkeypatch.setattr(pac_models, "predict", broken)
    seen = rerun(run, ["ai_annotations", "calibrated_thresholds"], tmp_path / "data")
    assert seen["checks"]["valid"] is False
    assert ("column 'confidence' not finite or outside [0, 1] at items ["
            in detail(tmp_path / "data", "ai_annotations", "valid"))
    assert not PAC_DOWNSTREAM & seen["assets"]


def test_labels_not_bought_through_the_ledger_are_stopped(run, tmp_path, monkeypatch):
    real = pac_method.finalize_labels

    def sloppy(yhat, uncertainty, oracle, calibration):
        result = real(yhat, uncertainty, oracle, calibration)
        ai = np.flatnonzero(result.provenance == pac_method.AI)
        if ai.size:   # claim an expert label for an item the oracle never sold
            result.provenance[ai[0]] = pac_method.EXPERT_THRESHOLD
        return result

    monkeypatch.setattr(pac_method, "finalize_labels", sloppy)
    seen = rerun(run, ["labeled_datasets", "trial_outcomes", "benchmark_report"], tmp_path / "data")
    assert seen["checks"]["complete_and_ledger"] is False
    assert seen["checks"]["ledger_matches_provenance"] is False
    assert "ledger ≠ provenance" in detail(tmp_path / "data", "labeled_datasets", "complete_and_ledger")
    assert f"{SLUG}/benchmark_report" not in seen["assets"]


def test_paper_csv_with_bad_confidences_is_stopped(run, tmp_path, paper_dir):
    conf = np.full(600, 0.9)
    conf[[3, 5]] = 1.7
    _stance_like(paper_dir, confidence=conf)
    seen = rerun(run, ["paper_datasets", "expert_oracle"], tmp_path / "data")
    assert seen["checks"]["tables_valid"] is False
    assert ("stance: column 'confidence' has confidences outside [0, 1] at rows 3, 5"
            in detail(tmp_path / "data", "paper_datasets", "tables_valid"))
    assert f"{SLUG}/expert_oracle" not in seen["assets"]


def test_paper_csv_stand_in_becomes_a_partition(run, tmp_path, paper_dir):
    _stance_like(paper_dir)
    seen = rerun(run, ["paper_datasets", "partitions", "expert_oracle"], tmp_path / "data")
    assert seen["checks"]["tables_valid"] is True and seen["checks"]["complete"] is True
    specs = json.loads((tmp_path / "data" / SLUG / "partitions.json").read_text())
    assert "stance/gpt4o/wsr" in {runs.spec_key(s) for s in specs}
    oracle = pd.read_parquet(tmp_path / "data" / SLUG / "expert_oracle.parquet")
    assert (oracle["dataset_id"] == "stance").sum() == 600


def test_absent_paper_data_is_skipped_with_a_reason(run, tmp_path, paper_dir):
    seen = rerun(run, ["paper_datasets", "partitions"], tmp_path / "data")
    assert seen["checks"]["tables_valid"] is True
    assert "none present: skipped" in detail(tmp_path / "data", "paper_datasets", "tables_valid")
    assert pd.read_parquet(tmp_path / "data" / SLUG / "paper_datasets.parquet").empty
    specs = json.loads((tmp_path / "data" / SLUG / "partitions.json").read_text())
    assert {s["dataset"] for s in specs} == {"digits", "synthetic_cls", "synthetic_reg"}


# ------------------------------------------------------------------------------ predicates
def test_clean_smoke_values_pass_every_predicate(in_smoke, params):
    run = in_smoke
    annotations, oracle = run.value("ai_annotations"), run.value("expert_oracle")
    assert checks.source_schema(run.value("source_datasets")).passed
    assert checks.models_load_back(run.value("ai_models")).passed
    assert checks.oracle_complete(oracle).passed
    assert checks.annotations_valid(annotations, oracle, run.value("partitions"), params).passed
    assert checks.thresholds_valid(run.value("calibrated_thresholds"), params).passed
    assert checks.labeled_complete(run.value("labeled_datasets"), annotations).passed
    assert checks.outcomes_ledger(run.value("trial_outcomes")).passed


def test_tied_uncertainties_and_labels_outside_the_space_are_named(run, params):
    frame = run.value("ai_annotations")
    gnb = frame.index[(frame["dataset_id"] == "digits") & (frame["model"] == "gnb")]
    frame.loc[gnb[1], "uncertainty"] = frame.loc[gnb[0], "uncertainty"]
    frame.loc[gnb[2], "yhat"] = 42.0
    found = checks.annotations_valid(frame, run.value("expert_oracle"), run.value("partitions"), params)
    assert not found.passed
    assert "digits/gnb: 1 tied uncertainties (ties not broken)" in found.message()
    assert "digits/gnb: column 'yhat' has labels outside the label space at items [" in found.message()


def test_paper_table_problems_name_the_column_and_rows(params):
    frame = pd.DataFrame({"dataset_id": "stance", "row": np.arange(4), "Y": ["a", "b", "a", "b"],
                          "Yhat (GPT4o)": ["a", "b", "z", "b"], "confidence": ["0.9", "0.8", "0.7", "1.5"]})
    found = checks.paper_tables_valid(frame, params)
    assert not found.passed
    assert "stance: column 'confidence' has confidences outside [0, 1] at rows 3" in found.message()
    assert "column 'Yhat (GPT4o)' has labels outside the label space (['z']) at rows 2" in found.message()
    clean = frame.assign(**{"Yhat (GPT4o)": ["a", "b", "a", "b"], "confidence": ["0.9", "0.8", "0.7", "0.6"]})
    assert checks.paper_tables_valid(clean, params).passed


def test_missing_trials_and_unlabelled_items_are_named(run, params):
    thresholds = run.value("calibrated_thresholds")
    found = checks.thresholds_valid(thresholds[thresholds["trial"] != 3], params)
    assert not found.passed and "digits/gnb/wsr/pac: trials 3 ≠ 4" in found.message()
    labeled = run.value("labeled_datasets")
    found = checks.labeled_complete(labeled.iloc[1:], run.value("ai_annotations"))
    first = labeled.iloc[0]
    assert not found.passed and f"{first['dataset_id']}/{first['model']}/{first['ci']}: " in found.message()
    assert "labelled items vs" in found.message()


def test_duplicated_or_missing_expert_labels_are_named(run):
    oracle = run.value("expert_oracle")
    broken = pd.concat([oracle, oracle.head(2)], ignore_index=True)
    broken.loc[0, "y"] = np.nan
    found = checks.oracle_complete(broken)
    assert not found.passed
    assert "1 hidden labels missing/non-finite" in found.message() and "2 duplicated (dataset_id, item_id)" in \
        found.message()
