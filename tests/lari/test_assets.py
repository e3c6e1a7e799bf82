"""lari wiring: the smoke group is complete and reported; bad input is stopped by a blocking check before
anything downstream runs (re-running only the gated asset and one downstream on the stored smoke outputs)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.lari import checks, runs
from tests.conftest import rerun, smoke_run

run = smoke_run("lari")


def test_smoke_report_names_every_claim_and_renders(run):
    report = run.data_dir / "reports" / "lari"
    for name in ("render_object", "render_room", "f_vs_layers", "training_loss"):
        assert (report / "plots" / f"{name}.png").stat().st_size > 1000
    claims = pd.read_parquet(run.data_dir / "results" / "lari" / "claims.parquet")
    assert set(claims["claim_id"]) == (set(run.paper.claim_ids) | set(run.paper.observation_ids)) - {
        "caster_speed", "inference_latency"}
    text = (report / "REPORT.md").read_text()
    assert "How this reproduction differs from the paper" in text and "## Results per method" in text


def test_smoke_predictions_cover_every_method(run):
    pred = run.value("predictions")
    assert {"lari", "lari_tau", "lari_gt_mask", "lari_all_valid", "lari_z_rule", "visible_only",
            "heuristic_mirror"} <= set(pred["method"])
    rooms = pred[(pred["scene_kind"] == "room") & (pred["method"] == "visible_only")]
    assert (rooms.loc[rooms["metric"] == "unseen_f@0.05", "value"] == 0).all()     # visible-only sees no unseen


def test_a_broken_layer_order_stops_the_rgb_renders(run, tmp_path, monkeypatch):
    real = runs.annotate_job

    def broken(job):
        out = real(job)
        hit = out["stop"] >= 2
        z = out["z"]
        z[..., 1][hit] = z[..., 0][hit] - 0.01                       # layer 2 in front of layer 1
        return out

    monkeypatch.setattr(runs, "annotate_job", broken)
    seen = rerun(run, ["layered_gt", "rgb_renders"], tmp_path / "data")
    assert seen["checks"]["layers_consistent"] is False
    assert "not strictly increasing" in seen["details"]["lari/layered_gt:layers_consistent"][1]
    assert "lari/rgb_renders" not in seen["assets"]


def test_a_mesh_in_two_splits_stops_the_training(run, tmp_path, monkeypatch):
    real = runs.make_splits

    def leaky(*args, **kwargs):
        frame = real(*args, **kwargs)
        row = frame[frame["split"] == "test"].iloc[[0]].assign(split="train")
        return pd.concat([frame, row], ignore_index=True)

    monkeypatch.setattr(runs, "make_splits", leaky)
    seen = rerun(run, ["splits", "pointmap_model"], tmp_path / "data")
    assert seen["checks"]["disjoint"] is False
    assert "splits" in seen["details"]["lari/splits:disjoint"][1]
    assert "lari/pointmap_model" not in seen["assets"]


def test_a_diverged_net_stops_the_threshold(run, tmp_path, monkeypatch):
    real = runs.train_job

    def diverged(job):
        out = real(job)
        out["losses"] = np.full_like(out["losses"], np.nan)
        return out

    monkeypatch.setattr(runs, "train_job", diverged)
    seen = rerun(run, ["stop_index_model", "stop_threshold"], tmp_path / "data")
    assert seen["details"]["lari/stop_index_model:finite_and_falling"][0] is False
    assert "non-finite training loss" in seen["details"]["lari/stop_index_model:finite_and_falling"][1]
    assert "lari/stop_threshold" not in seen["assets"]


def test_rgb_that_disagrees_with_layer1_stops_the_splits(run, tmp_path, monkeypatch):
    real = runs.rgb_renders

    def dark(*args, **kwargs):
        frame = real(*args, **kwargs)
        return frame.assign(mismatch=0.05, rejected=False)

    monkeypatch.setattr(runs, "rgb_renders", dark)
    seen = rerun(run, ["rgb_renders", "splits"], tmp_path / "data")
    assert seen["checks"]["matches_layer1"] is False
    assert "lari/splits" not in seen["assets"]


def test_a_degenerate_mesh_stops_the_catalog(run, tmp_path, monkeypatch):
    from assets.lari import data as D

    def flat(generator, rng):
        D.validate_mesh(np.zeros((3, 3)), np.array([[0, 1, 2]]), generator)

    monkeypatch.setattr(D, "object_mesh", flat)
    seen = rerun(run, ["mesh_catalog", "camera_rigs"], tmp_path / "data")
    assert not seen["success"] and "lari/mesh_catalog" not in seen["assets"]
    assert "lari/camera_rigs" not in seen["assets"]


def test_parity_and_occlusion_predicates_on_corrupted_tables():
    table = pd.DataFrame({"scene_kind": ["object", "object", "room"], "watertight": [True, True, False],
                          "hit_pixels": [100, 100, 100], "odd_pixels": [0, 1, 50], "multi_pixels": [40, 30, 0]})
    assert checks.parity(table).passed and checks.has_occlusions(table).passed
    odd = table.assign(odd_pixels=[3, 0, 0])
    assert "odd-hit pixels 1.50%" in checks.parity(odd).problems[0]
    flat = table.assign(multi_pixels=[20, 30, 0])
    assert "only 25.0%" in checks.has_occlusions(flat).problems[0]
    splits = pd.DataFrame({"scene_kind": ["object"] * 3 + ["room"] * 3, "mesh_id": list("abcdef"),
                           "split": ["train", "val", "test"] * 2})
    assert checks.splits_disjoint(splits).passed
    leak = pd.concat([splits, splits.iloc[[0]].assign(split="test")])
    assert "mesh a is in 2 splits" in checks.splits_disjoint(leak).problems
