"""skill_recompose wiring: the smoke group's report, predicates on corrupted inputs, gating (bad input
stops the downstream asset), the hyper-parameter lineage, and the gpu profile's Variant B at a tiny size."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from assets.skill_recompose import checks, runs
from tests.conftest import rerun, smoke_run

run = smoke_run("skill_recompose")


def test_smoke_report_has_every_claim(run):
    report = run.data_dir / "reports" / "skill_recompose"
    assert (report / "plots" / "per_task.png").stat().st_size > 1000
    claims = pd.read_parquet(run.data_dir / "results" / "skill_recompose" / "claims.parquet")
    assert set(run.paper.claim_ids) | set(run.paper.observation_ids) == set(claims["claim_id"])
    text = (report / "REPORT.md").read_text()
    assert "representation and retrieval" in text and "How this reproduction differs from the paper" in text
    roll = run.value("rollouts")
    assert set(roll["method"]) >= {"dnr", "xicm", "no_labels", "icl_labelled", "icl_raw"}


def test_hparams_lineage_has_no_unseen_asset(run):
    from assets.skill_recompose.definitions import UPSTREAM_OF_HPARAMS

    paper = run.paper
    graph = {k.path[-1]: {d.path[-1] for d in a.asset_deps[k]} for a in paper.assets for k in a.keys}
    seen, todo = set(), ["retrieval_hparams"]
    while todo:
        for dep in graph[todo.pop()]:
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    assert seen == set(UPSTREAM_OF_HPARAMS)
    assert not seen & set(checks.UNSEEN_ASSETS)
    assert checks.hparams_seen_only(run.value("retrieval_hparams")).passed
    bad = {**run.value("retrieval_hparams"), "upstream": [*UPSTREAM_OF_HPARAMS, "rollouts"]}
    assert "rollouts" in checks.hparams_seen_only(bad).message()


# ----------------------------------------------------------------------------- predicates

def test_catalog_predicate_catches_overlap_and_missing_bigram(run):
    cat = run.value("task_catalog")
    assert checks.catalog_valid(cat).passed
    bad = cat.copy()
    i = bad.index[bad["task"] == "turn_oven_on"][0]
    bad.at[i, "bigrams"] = json.dumps(["Reach->Grasp"])
    j = bad.index[bad["task"] == "lamp_on"][0]
    bad.at[j, "instruction"] = cat.loc[cat["task"] == "push_buttons", "instruction"].iloc[0]
    msg = checks.catalog_valid(bad).message()
    assert "turn_oven_on has no unseen bigram" in msg and "repeats a seen instruction" in msg


def test_embedding_and_context_predicates(run):
    emb = run.value("text_embeddings")
    assert checks.embeddings_valid(emb).passed
    bad = emb.copy()
    bad.at[0, "vector"] = list(np.asarray(bad.at[0, "vector"]) * 2)
    assert "not unit-norm" in checks.embeddings_valid(bad).message()
    ctx, demos = run.value("contexts"), run.value("seen_demos")
    assert checks.contexts_seen_only(ctx, demos).passed
    worse = ctx.copy()
    worse.at[0, "d_cov"] = json.dumps([99999])
    assert "not seen demos" in checks.contexts_seen_only(worse, demos).message()


def test_annotation_predicate_catches_unforced_gripper_labels(run):
    ann = run.value("skill_annotations")
    assert checks.annotations_valid(ann).passed
    bad = ann.copy()
    bad["grip_ok"] = bad["grip_ok_norules"]
    bad["correct"] = bad["correct"].map(lambda s: json.dumps([False] * len(json.loads(s))))
    msg = checks.annotations_valid(bad).message()
    assert "not 100 %" in msg or "Grasp/Release" in msg
    assert "verb accuracy" in msg


# ----------------------------------------------------------------------------- gating

def test_a_demo_that_does_not_replay_stops_keyframes(run, tmp_path, monkeypatch):
    real = runs.seen_demos

    def broken(*a, **k):
        frame = real(*a, **k)
        keys = json.loads(frame.at[0, "keys"])
        keys[-1][6] = 1 - keys[-1][6]
        keys[2][0] = (keys[2][0] + 3) % 20
        frame.at[0, "keys"] = json.dumps(keys)
        return frame

    monkeypatch.setattr(runs, "seen_demos", broken)
    seen = rerun(run, ["seen_demos", "keyframes"], tmp_path / "data")
    assert seen["checks"]["replay_to_success"] is False
    assert "skill_recompose/keyframes" not in seen["assets"]
    assert "does not replay to success" in seen["details"]["skill_recompose/seen_demos:replay_to_success"][1]


def test_labels_without_the_gripper_rules_stop_retrieval(run, tmp_path, monkeypatch):
    real = runs.skill_annotations

    def no_rules(*a, **k):
        frame = real(*a, **k)
        frame["grip_ok"] = frame["grip_ok"].map(lambda s: json.dumps([False] + json.loads(s)[1:]))
        return frame

    monkeypatch.setattr(runs, "skill_annotations", no_rules)
    seen = rerun(run, ["skill_annotations", "static_library"], tmp_path / "data")
    assert seen["checks"]["gripper_rules_verb_accuracy"] is False
    assert "skill_recompose/static_library" not in seen["assets"]


def test_an_unseen_id_in_a_context_stops_the_model(run, tmp_path, monkeypatch):
    real = runs.contexts_job

    def leaky(job):
        rows = real(job)
        rows[0]["d_dyn"] = json.dumps([123456])
        return rows

    monkeypatch.setattr(runs, "contexts_job", leaky)
    seen = rerun(run, ["contexts", "icl_model"], tmp_path / "data")
    assert seen["checks"]["seen_ids_only"] is False
    assert "skill_recompose/icl_model" not in seen["assets"]


def test_a_planner_reading_the_truth_stops_the_contexts(run, tmp_path, monkeypatch):
    real = runs.planner_predictions

    def cheating(queries, emb, p_errs, rng_for):
        frame = real(queries, emb, p_errs, rng_for)
        truth = frame[frame["mode"] == "oracle"].set_index(["seed", "task", "episode"])["skills"]
        mask = frame["mode"] == "planner"
        frame.loc[mask, "skills"] = [truth[(r.seed, r.task, r.episode)] for r in frame[mask].itertuples()]
        return frame

    monkeypatch.setattr(runs, "planner_predictions", cheating)
    seen = rerun(run, ["planner_predictions", "contexts"], tmp_path / "data")
    assert seen["checks"]["truth_only_for_oracle"] is False
    assert "skill_recompose/contexts" not in seen["assets"]


# ----------------------------------------------------------------------------- gpu profile, tiny

def test_gpu_variant_b_builds_and_trains_on_cpu_at_a_tiny_size(run, one_torch_thread):
    import torch

    from assets.common.params import parse
    from assets.skill_recompose import icl
    from assets.skill_recompose.params import SkillRecomposeParams
    from resources.profiles import load_params

    p = parse(SkillRecomposeParams, load_params("skill_recompose", "gpu"), "skill_recompose.gpu").icl
    assert p.layers >= 4 and p.d_model >= 256
    model = icl.build_model(torch, p.layers, 32, 4, p.max_len)
    code = (1, 0, 4, "d", 0, 0)
    episodes = [([("Lift", code), ("Reach", (0, 0, 0, "a", 0, 1))], ["Lift"], [code])] * 4
    _, losses = icl.train(torch, episodes, True, 0, p.layers, 32, 4, p.max_len, 3, 2, 1e-3)
    assert len(losses) == 3 and all(np.isfinite(losses))
    assert icl.fields_code(icl.code_fields(code)) == code
    assert model is not None
