"""hir wiring: the smoke group's report, the predicates on corrupted inputs, gating (bad input
stops the downstream asset), and the gpu profile exercised on the CPU at a tiny size."""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.hir import checks, runs
from tests.conftest import rerun, smoke_run, typed_params

run = smoke_run("hir")


def smoke_params():
    from assets.hir.params import HirParams

    return typed_params(HirParams, "hir", "smoke")


def test_smoke_report_has_every_claim_and_the_curves(run):
    report = run.data_dir / "reports" / "hir"
    assert (report / "plots" / "ila_curves.png").stat().st_size > 1000
    claims = pd.read_parquet(run.data_dir / "results" / "hir" / "claims.parquet")
    assert set(run.paper.claim_ids) | set(run.paper.observation_ids) == set(claims["claim_id"])
    text = (report / "REPORT.md").read_text()
    assert "How this reproduction differs from the paper" in text and "no numeric anchors" in text


def test_smoke_budgets_match_and_replays_verify(run):
    value = run.value("rl_runs")
    table = pd.DataFrame(value["runs"])
    assert (table["generated"] >= table["budget"]).all()
    log = run.value("rollout_log")
    replays = log[log["is_replay"]]
    assert len(replays) and replays["verified"].all() and (replays["reward"] == 1.0).all()
    # a replay keeps the template and drops constraints: its criteria are a subset of a logged original's
    assert checks.replays_valid(log).passed


# ----------------------------------------------------------------------------- predicates

def test_dataset_check_names_conflicts_templates_overlap_and_failing_sft_pairs(run):
    frame = run.value("instruction_dataset")
    assert checks.dataset_valid(frame, params=smoke_params()).passed
    bad = frame.copy()
    i = bad.index[bad["split"] == "train"][0]
    bad.at[i, "criteria"] = ["min_words:4", "include_word:the", "exclude_word:the"]
    j = bad.index[bad["split"] == "train"][1]
    bad.at[j, "q_type"] = "type7"
    k = bad.index[bad["split"] == "test"][0]
    bad.at[k, "text"] = bad.at[bad.index[bad["split"] == "train"][2], "text"]
    s = bad.index[bad["split"] == "sft"][0]
    bad.at[s, "criteria"] = ["min_words:30"]
    message = checks.dataset_valid(bad, params=smoke_params()).message()
    assert "conflicting" in message and "type7" in message and "both train and test" in message
    assert "SFT pairs do not meet" in message
    unknown = frame.copy()
    unknown.at[i, "criteria"] = ["min_words:4", "shout"]
    assert "unknown constraint" in checks.dataset_valid(unknown, params=smoke_params()).message()


def test_warm_start_gate_range():
    assert checks.warm_start_in_regime(pd.DataFrame({"ila_greedy": [0.0] * 9 + [1.0]})).passed
    assert not checks.warm_start_in_regime(pd.DataFrame({"ila_greedy": [0.0] * 100})).passed
    assert not checks.warm_start_in_regime(pd.DataFrame({"ila_greedy": [0.0, 1.0]})).passed


def test_checkpoint_vocabulary_mismatch_is_caught(run, in_smoke_data):
    value, vocab = run.value("sft_checkpoint"), run.value("vocab")
    assert checks.checkpoint_valid(value, vocab).passed
    other = {**vocab, "md5": "0" * 32}
    found = checks.checkpoint_valid(value, other)
    assert not found.passed and "vocabulary" in found.message()


def test_runs_check_catches_budget_and_kl(run, in_smoke_data):
    from resources.artifacts import data_ref, write_parquet

    value = run.value("rl_runs")
    assert checks.runs_valid(value).passed
    short = {**value, "runs": [{**r, "generated": r["budget"] - 1} for r in value["runs"]]}
    assert "generated vs budget" in checks.runs_valid(short).message()
    evals = pd.read_parquet(checks.D_path(value["evals"])).assign(kl_sample=1e3)
    path = in_smoke_data.data_dir / "hir" / "rl" / "evals_bad.parquet"
    write_parquet(path, evals)
    try:
        assert "KL to the reference" in checks.runs_valid({**value, "evals": data_ref(path)}).message()
    finally:
        path.unlink()              # the smoke directory is shared with the byte-identical rerun test


def test_an_ablation_collapse_warns_but_a_claimed_method_collapse_blocks(run, in_smoke_data):
    """HiR-onpolicy leaving the reference is a result (warning); HiR leaving it blocks."""
    from resources.artifacts import data_ref, write_parquet

    value = run.value("rl_runs")
    evals = pd.read_parquet(checks.D_path(value["evals"]))
    assert checks.ablations_kl(value).passed
    path = in_smoke_data.data_dir / "hir" / "rl" / "evals_kl.parquet"
    try:
        for method, blocks in (("hir_onpolicy", False), ("hir", True)):
            assert method in set(evals["method"]), f"{method} not run at smoke"
            bad = evals.assign(kl_sample=np.where(evals["method"] == method, 1e3, evals["kl_sample"]))
            write_parquet(path, bad)
            ref = {**value, "evals": data_ref(path)}
            assert checks.runs_valid(ref).passed is not blocks
            assert checks.ablations_kl(ref).passed is blocks
            assert method in (checks.runs_valid(ref) if blocks else checks.ablations_kl(ref)).message()
    finally:
        path.unlink(missing_ok=True)


def test_corpus_check_catches_a_changed_source(run):
    frame = run.value("corpus")
    assert checks.corpus_valid(frame).passed
    found = checks.corpus_valid(frame, source_bytes=lambda name: b"changed")
    assert not found.passed and "md5" in found.message()


# ----------------------------------------------------------------------------- gating

def test_conflicting_prompts_stop_the_warm_start(run, tmp_path, monkeypatch):
    real = runs.full_dataset

    def conflicting(*args, **kwargs):
        frame = real(*args, **kwargs)
        i = frame.index[frame["split"] == "train"][0]
        frame.at[i, "criteria"] = ["min_words:4", "min_words:9", "max_words:5"]
        return frame

    monkeypatch.setattr(runs, "full_dataset", conflicting)
    seen = rerun(run, ["instruction_dataset", "sft_checkpoint"], tmp_path / "data")
    assert seen["checks"]["valid_prompts"] is False
    assert "hir/sft_checkpoint" not in seen["assets"]


def test_warm_start_outside_the_regime_stops_rl(run, tmp_path, monkeypatch):
    real = runs.difficulty
    monkeypatch.setattr(runs, "difficulty", lambda *a, **k: real(*a, **k).assign(ila_greedy=0.0))
    seen = rerun(run, ["difficulty", "rl_runs"], tmp_path / "data")
    assert seen["checks"]["sparse_reward_regime"] is False
    assert "hir/rl_runs" not in seen["assets"]


def test_a_replay_failing_reverification_stops_the_run(run, tmp_path, monkeypatch):
    from assets.hir import replay

    monkeypatch.setattr(replay, "rewrite", lambda criteria, judge_list: list(criteria))
    seen = rerun(run, ["rl_runs", "rollout_log"], tmp_path / "data")
    assert "hir/rl_runs" not in seen["assets"] and "hir/rollout_log" not in seen["assets"]
    assert not seen["success"]


# ----------------------------------------------------------------------------- gpu profile at a tiny size

def test_gpu_profile_builds_and_steps_on_cpu(one_torch_thread):
    import dataclasses

    import torch

    from assets.common.params import parse
    from assets.hir import data as D
    from assets.hir import rl
    from assets.hir.params import HirParams
    from resources.profiles import load_params

    p = parse(HirParams, load_params("hir", "gpu"), "hir.gpu")
    assert p.rl.estimator == "reinforce_pp" and p.model.d_model == 256 and len(p.seeds) == 5
    assert p.rl.prompts_per_step == 64 and p.rl.budget_steps == 1000
    tiny_rl = dataclasses.replace(p.rl, prompts_per_step=2, budget_steps=1, max_new=5, eval_points=1)
    vocab = D.Vocab([*D.SPECIALS, "a", "b", ".", "at", "least", "most", "words", "write", "about", "1", "3"])
    torch.manual_seed(0)
    policy = rl.build_model(len(vocab), p.model.n_layers, p.model.d_model, p.model.n_heads, p.model.context)
    ref = rl.build_model(len(vocab), p.model.n_layers, p.model.d_model, p.model.n_heads, p.model.context)
    ref.load_state_dict(policy.state_dict())
    prompts = rl.make_prompts(pd.DataFrame([{"prompt_id": i, "question": "write about a .",
                                              "criteria": ["min_words:1", "max_words:3"], "q_type": "type1"}
                                             for i in range(2)]), vocab)
    out = rl.run_rl(policy, ref, prompts, prompts, rl.METHOD_SPECS["hir"], vocab, tiny_rl, seed=0)
    assert out["steps"][-1]["generated_total"] >= out["budget"] == 2 * p.rl.group_size
    assert np.isfinite(out["steps"][-1]["loss"])
