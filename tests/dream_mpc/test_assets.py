"""Dream-MPC wiring: the smoke group is complete (tests/platform/test_smoke_contract.py), bad
input is stopped by a blocking check (or a clear asset error) before anything downstream
consumes it (re-running only the gated asset and one downstream on the stored smoke outputs),
the predicates name what is wrong, and the probe CLI reproduces the pipeline's checkpoint."""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from assets.dream_mpc import checks, configs, envs, evaluation, runs
from assets.dream_mpc import planners as P
from assets.dream_mpc import training as T
from assets.dream_mpc.envs import KNOWN_TASKS, UnknownTaskError
from assets.dream_mpc.params import load
from resources.compute import ComputeResource
from resources.profiles import PROFILES
from tests.conftest import rerun, smoke_run

run = smoke_run("dream_mpc")


@pytest.fixture(scope="module")
def params():
    return load(ComputeResource(profile="smoke"))


def test_smoke_values_hold_relative_refs_exact_counters_and_no_wall_clock(run):
    model = run.value("world_model")
    assert all(not e["checkpoint"].startswith("/") for e in model["checkpoints"])
    episodes = run.value("eval_episodes")
    assert (episodes[episodes["planner"] == "dream_mpc"]["opt_evals_max"] == 15).all()
    assert (episodes[episodes["planner"] == "mppi"]["opt_evals_max"] == 9216).all()
    # wall-clock measurements live in run records, never in the values DVC tracks
    assert "seconds_per_decision" not in episodes and "wall_s" not in pd.read_parquet(
        run.data_dir / episodes["steps_ref"].iloc[0])
    assert not any("seconds" in k for e in model["checkpoints"] for k in e)
    assert not any("seconds" in c for c in model["curves"])
    sidecar = json.loads((run.data_dir / (model["checkpoints"][0]["checkpoint"] + ".json")).read_text())
    assert sidecar["timing"] == {"decisions": 30, "updates": 30} and "git_sha" not in sidecar
    wall = pd.read_parquet(run.data_dir / "runs" / "dream_mpc" / "timings" / "eval_episodes.parquet")
    assert len(wall) == len(episodes) and (wall["seconds_per_decision"] > 0).all()
    survey = run.value("task_survey")
    assert list(zip(survey["task"], survey["seed"])) == [("reacher-easy", 0)] and "seconds" not in survey
    report = (run.data_dir / "reports" / "dream_mpc" / "REPORT.md").read_text()
    assert "## Task survey" in report and "How this reproduction differs from the paper" in report
    assert "ms" not in report.split("## Compute accounting")[1].split("##")[0].split()
    timings = (run.data_dir / "runs" / "dream_mpc" / "TIMINGS.md").read_text()
    assert "Single-state decision latency" in timings and "| compute_wall_time |" in timings


def test_probe_cli_reproduces_the_pipelines_strong_checkpoint(run, capsys):
    from assets.dream_mpc import probe

    strong = next(e for e in run.value("world_model")["checkpoints"] if e["budget"] == "strong" and e["seed"] == 0)
    probe.main([strong["task"], "--seed", "0", "--profile", "smoke"])
    found = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert found["policy_eval_return"] == pytest.approx(strong["policy_eval_return"])
    assert found["gate_diff_low"] == pytest.approx(strong["gate_diff_low"])      # the same paired gate measurement
    assert found["consistency_mse"] == pytest.approx(strong["consistency_mse"], rel=1e-5)
    assert set(found["gates"]) == {"heldout_fit", "q_ensemble_sane", "policy_beats_random"}
    assert found["passes_all_gates"] is True


def test_probe_survey_is_the_task_survey_assets_table(run):
    """The cpu profile's opt-in survey command computes the asset's rows (same jobs, same gates)."""
    from assets.dream_mpc import probe

    asset = run.value("task_survey")
    cli = probe.survey(list(asset["task"]), [int(asset["seed"].iloc[0])], profile="smoke")
    pd.testing.assert_frame_equal(cli.reset_index(drop=True), asset.reset_index(drop=True))


def test_probe_cli_rejects_an_action_repeat_for_a_survey():
    from assets.dream_mpc import probe

    with pytest.raises(SystemExit):
        probe.main(["reacher-easy", "--seeds", "0", "1", "--action-repeat", "4", "--profile", "smoke"])


def test_probe_runs_without_the_dagster_definitions():
    code = ("import sys, assets.dream_mpc.probe, assets.dream_mpc.runs; "
            "assert 'assets.dream_mpc.definitions' not in sys.modules; "
            "assert 'torch' not in sys.modules, 'torch imported at module level'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_task_survey_rejects_an_unknown_task_before_training(run, tmp_path, monkeypatch):
    trained = []
    monkeypatch.setattr(T, "train_online", lambda *a, **k: trained.append(1))
    seen = rerun(run, ["task_survey"], tmp_path / "data",
                 params_overrides={"dream_mpc": {"task_survey": {"tasks": ["pendulum-swingdown"], "seeds": [0]}}})
    assert "dream_mpc/task_survey" not in seen["assets"] and not trained
    p = load(ComputeResource(profile="smoke", params_overrides={
        "dream_mpc": {"task_survey": {"tasks": ["pendulum-swingdown"], "seeds": [0]}}}))
    with pytest.raises(UnknownTaskError, match="pendulum-swingdown"):
        runs.survey_jobs(p.task_survey, {"profile": "smoke"})


def test_non_finite_transitions_stop_the_world_model(run, tmp_path, monkeypatch):
    real = T.train_online

    def corrupted(*args, **kwargs):
        out = real(*args, **kwargs)
        out["episodes"][1].reward[3] = float("nan")
        return out

    monkeypatch.setattr(T, "train_online", corrupted)
    seen = rerun(run, ["replay_buffer", "world_model"], tmp_path / "data")
    assert seen["checks"]["finite_in_range_complete"] is False
    assert "dream_mpc/replay_buffer" in seen["assets"] and "dream_mpc/world_model" not in seen["assets"]


def test_poor_world_model_fit_stops_the_planners(run, tmp_path):
    seen = rerun(run, ["world_model", "planner_configs"], tmp_path / "data",
                 params_overrides={"dream_mpc": {"gates": {"max_reward_mse": 0.0}}})
    assert seen["checks"]["heldout_fit"] is False
    assert "dream_mpc/world_model" in seen["assets"] and "dream_mpc/planner_configs" not in seen["assets"]


def test_counter_mismatch_fails_evaluation_and_blocks_the_report(run, tmp_path, monkeypatch):
    real = P.trajectory_objective

    def leaky(model, z0, actions, *args, **kwargs):   # one extra, unaccounted model call
        model.next(z0, actions[0])
        return real(model, z0, actions, *args, **kwargs)

    monkeypatch.setattr(P, "trajectory_objective", leaky)
    seen = rerun(run, ["eval_episodes", "benchmark_report"], tmp_path / "data")
    assert "dream_mpc/eval_episodes" not in seen["assets"] and "dream_mpc/benchmark_report" not in seen["assets"]
    # the error names the mismatch
    monkeypatch.setenv("PAPERLAB_DATA_DIR", str(run.data_dir))
    entry = run.value("world_model")["checkpoints"][-1]
    spec = run.value("env_catalog")["tasks"][0]
    dream = next(c for c in run.value("planner_configs")["per_task"][spec["task"]] if c["name"] == "dream_mpc")
    model, _ = runs.load_model(entry["checkpoint"], spec)
    with pytest.raises(evaluation.CounterMismatchError, match="evaluations at step 0, configuration says 15"):
        evaluation.run_episodes(model, envs.TaskSpec(**spec), P.PlannerConfig(**dream), [1], generator_seed=0)


def _buffer(actions, spec):
    return pd.DataFrame([{"task": spec["task"], "seed": 0, "episode": 0, "split": "train", "t": t,
                          "obs": np.zeros(2), "action": np.array([a]), "reward": 0.5, "next_obs": np.zeros(2),
                          "done": t == len(actions) - 1} for t, a in enumerate(actions)])


def test_buffer_check_names_out_of_range_actions_and_wrong_lengths(params):
    spec = {"task": "cartpole-swingup", "obs_dim": 2, "act_dim": 1, "action_repeat": 4, "decisions_per_episode": 3}
    p = replace(params, training=replace(params.training, min_transitions=1))
    assert checks.buffer_valid(_buffer([0.0, 0.5, -1.0], spec), {"tasks": [spec]}, p).passed
    found = checks.buffer_valid(_buffer([0.0, 1.5], spec), {"tasks": [spec]}, p)
    assert not found.passed
    assert "|action| up to 1.500 > 1" in found.message() and "not of length 3" in found.message()
    found = checks.buffer_valid(_buffer([0.0, np.nan, 0.0], spec), {"tasks": [spec]}, p)
    assert "1 transitions with non-finite action (first: seed 0, episode 0, t 1)" in found.message()


def test_world_model_predicates_name_the_checkpoint_and_the_bound(run, params):
    value = run.value("world_model")
    strict = replace(params, gates=replace(params.gates, max_reward_mse=0.0, policy_margin_over_random=1e6,
                                           min_q_ensemble_std=1.0))
    for name, predicate in checks.WORLD_MODEL_PREDICATES.items():
        assert predicate(value, params).passed, name
    fit = checks.world_model_fit(value, strict)
    assert not fit.passed and "cartpole-swingup/seed 0/strong: held-out reward MSE" in fit.message()
    q = checks.q_ensemble_sane(value, strict)
    assert not q.passed and "≤ 1.0 (collapsed)" in q.message()
    policy = checks.policy_beats_random(value, strict)
    assert not policy.passed and "does not beat the random policy by > 1000000.0" in policy.message()
    exploded = {"checkpoints": [{**value["checkpoints"][0], "q_finite": False}]}
    assert "non-finite Q" in checks.q_ensemble_sane(exploded, params).message()


def test_grid_check_names_missing_cells_and_wrong_counters(run, params):
    frame, model, planners = run.value("eval_episodes"), run.value("world_model"), run.value("planner_configs")
    assert checks.grid_complete(frame, model, planners, params).passed
    found = checks.grid_complete(frame.iloc[1:], model, planners, params)
    assert not found.passed and "1 missing cells" in found.message()
    wrong = frame.copy()
    wrong.loc[wrong["planner"] == "dream_mpc", "opt_evals_max"] = 30
    assert "dream_mpc: counters 15..30 != configured 15" in checks.grid_complete(wrong, model, planners,
                                                                                 params).message()


def test_microbench_and_catalog_checks_name_the_problem(run):
    value = run.value("planner_microbench")
    assert checks.microbench_valid(value).passed
    above = [{**r, "J": r["J_opt"] + 1.0} if r["planner"] == "dream_mpc/I=1" else r for r in value["synthetic"]]
    assert "planners exceed the known optimum J*" in checks.microbench_valid({"synthetic": above}).message()
    catalog = run.value("env_catalog")
    assert checks.catalog_valid(catalog).passed
    broken = {"tasks": [{**catalog["tasks"][0], "act_dim": 0}]}
    assert "action dim 0" in checks.catalog_valid(broken).message()


def test_corrupt_or_mismatched_checkpoint_is_a_clear_error(data_dir):
    from assets.dream_mpc import model as M
    from resources.artifacts import data_ref, save_state_dict

    spec = envs.task_spec("cartpole-swingup", 40, 4).to_dict()
    cfg = M.ModelConfig(obs_dim=spec["obs_dim"], act_dim=spec["act_dim"], latent_dim=16, mlp_dim=16, enc_dim=16)
    path = data_dir / "dream_mpc" / "checkpoints" / "probe.pt"
    save_state_dict(path, M.state_dict_for_checkpoint(M.WorldModel(cfg)), {"model_config": cfg.to_dict()})
    ref = data_ref(path)
    assert not ref.startswith("/")
    model, _ = runs.load_model(ref, spec)                    # intact: loads and fits
    assert model.cfg.act_dim == spec["act_dim"]
    with pytest.raises(ValueError, match="checkpoint/environment mismatch"):
        runs.load_model(ref, {**spec, "act_dim": spec["act_dim"] + 1})
    blob = bytearray(path.read_bytes())
    blob[len(blob) // 2] ^= 0xFF
    path.write_bytes(bytes(blob))
    with pytest.raises(ValueError, match="corrupt or unreadable checkpoint"):
        runs.load_model(ref, spec)


@pytest.mark.parametrize("profile", PROFILES)
def test_every_profile_trains_whole_episodes_of_known_tasks(profile):
    """Beyond parsing (the smoke contract): the tasks exist, every budget is whole episodes and
    the seed phase fits in it, and every planner named is defined."""
    p = load(ComputeResource(profile=profile))
    assert set(p.tasks) | set(p.task_survey.tasks) <= set(KNOWN_TASKS)
    for task in p.tasks:
        repeat = configs.action_repeat(p.action_repeat, task)
        assert p.time_limit_steps % repeat == 0
        decisions = p.time_limit_steps // repeat
        assert p.training.decisions % decisions == 0
        seed_decisions, pretrain = configs.seed_phase(p.training, decisions)
        assert 0 < seed_decisions < p.training.decisions and pretrain == seed_decisions
    names = {c.name for c in P.default_planners(0.99)}
    assert set(p.evaluation.planners_strong) | set(p.evaluation.planners_prior_sweep) <= names


def test_action_repeat_per_task_and_seed_phase(params):
    assert configs.action_repeat(8, "reacher-easy") == 8
    per_task = {"default": 8, "reacher-easy": 4}
    assert configs.action_repeat(per_task, "reacher-easy") == 4
    assert configs.action_repeat(per_task, "cartpole-swingup") == 8
    with pytest.raises(ValueError, match="no entry for 'walker-stand'"):
        configs.action_repeat({"reacher-easy": 4}, "walker-stand")
    # TD-MPC2: seed steps of random actions, then as many pretraining updates
    assert configs.seed_phase(replace(params.training, seed_episodes=2), 125) == (250, 250)
    # a per-task mapping in params.yaml parses into the typed parameters
    p = load(ComputeResource(profile="smoke", params_overrides={"dream_mpc": {"action_repeat": per_task}}))
    assert configs.action_repeat(p.action_repeat, "reacher-easy") == 4


def test_policy_vs_random_pairs_states_and_keeps_the_random_reference_fixed():
    """The gate measurement is the paired t interval (claims.paired_ci) of the policy's and the
    random actions' returns on the same initial states; the random returns depend on the task's
    random seed only, not on the checkpoint."""
    import torch

    from assets.common.claims import paired_ci
    from assets.dream_mpc import model as M

    spec = envs.task_spec("cartpole-swingup", 40, 4)
    cfg = M.ModelConfig(obs_dim=spec.obs_dim, act_dim=spec.act_dim, latent_dim=16, mlp_dim=16, enc_dim=16)
    seeds = [7001, 7002, 7003]
    models = []
    for s in (0, 1):
        torch.manual_seed(s)
        models.append(M.WorldModel(cfg).freeze())
    a, b = (T.policy_vs_random(m, spec, seeds, random_seed=11) for m in models)
    assert a["gate_random_return"] == b["gate_random_return"]           # checkpoint-independent reference
    assert a["gate_policy_return"] != b["gate_policy_return"]
    policy = T.evaluate_policy(models[0], spec, seeds, np.random.default_rng(0))
    random = T.evaluate_policy(None, spec, seeds, np.random.default_rng(11))
    ci = paired_ci(policy, random, 0.90, "t")
    assert a == {"gate_episodes": 3, "gate_policy_return": pytest.approx(np.mean(policy)),
                 "gate_random_return": pytest.approx(np.mean(random)), "gate_diff": pytest.approx(ci.mean),
                 "gate_diff_low": pytest.approx(ci.low), "gate_diff_high": pytest.approx(ci.high)}
    assert a["gate_diff_low"] < a["gate_diff"] < a["gate_diff_high"]
    with pytest.raises(ValueError, match="≥ 2 episodes"):
        T.policy_vs_random(models[0], spec, [7001], random_seed=11)


def _strong(seed, policy, random, low=None):
    entry = {"task": "cartpole-swingup", "seed": seed, "budget": "strong", "policy_eval_return": policy,
             "random_eval_return": random}
    if low is not None:
        entry.update(gate_policy_return=policy, gate_random_return=random - 30, gate_diff=low + 15,
                     gate_diff_low=low, gate_diff_high=low + 30)
    return entry


def test_policy_gate_judges_the_interval_and_names_the_point_estimate(params):
    """With policy_episodes > 0 the CI lower bound decides: a lucky 4-episode random mean (the
    2026-12-06 seed-4 case, 168.8 vs 199.8) no longer fails a policy whose paired interval is
    above 0, but is named; a point estimate above random with an interval reaching 0 fails."""
    gated = replace(params, gates=replace(params.gates, policy_margin_over_random=0.0, policy_episodes=40))
    lucky = checks.policy_beats_random({"checkpoints": [_strong(0, 230.8, 91.2, 80.0), _strong(4, 168.8, 199.8, 21.0)]},
                                       gated)
    assert lucky.passed
    assert "alone would fail ['cartpole-swingup/seed 4']" in lucky.message()
    assert "Δ +36.0 [90% CI +21.0, +51.0]" in lucky.message()
    weak = checks.policy_beats_random({"checkpoints": [_strong(1, 250.0, 100.0, -2.0)]}, gated)
    assert not weak.passed and "(90% CI lower bound) on ['cartpole-swingup/seed 1']" in weak.message()
    missing = checks.policy_beats_random({"checkpoints": [_strong(1, 250.0, 100.0)]}, gated)
    assert not missing.passed and "no paired policy-vs-random measurement" in missing.message()
    point_rule = replace(gated, gates=replace(gated.gates, policy_episodes=0))
    assert not checks.policy_beats_random({"checkpoints": [_strong(4, 168.8, 199.8, 21.0)]}, point_rule).passed
