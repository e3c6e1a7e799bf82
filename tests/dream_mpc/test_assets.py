"""Dream-MPC wiring at the smoke profile: every asset and check runs, and bad input is stopped
by a blocking check (or a clear asset error) before anything downstream consumes it."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from assets.dream_mpc import definitions as dream
from assets.dream_mpc import planners as P
from assets.dream_mpc import training as T
from tests.conftest import materialize_paper, outcomes

DOWNSTREAM_OF_MODEL = {"dream_mpc/planner_configs", "dream_mpc/eval_episodes", "dream_mpc/planner_microbench",
                       "dream_mpc/benchmark_report"}


def test_smoke_materializes_every_asset_and_check(smoke_resources, data_dir):
    result = materialize_paper(dream, smoke_resources)
    seen = outcomes(result)
    assert result.success
    assert seen["assets"] == {a.key.to_user_string() for a in dream.assets}
    blocking = {s.name for c in dream.asset_checks for s in c.check_specs if s.blocking}
    assert blocking and all(seen["checks"][name] for name in blocking)
    assert {f"claim_{cid}" for cid in dream.CLAIM_IDS} <= set(seen["checks"])
    report = data_dir / "reports" / "dream_mpc"
    assert (report / "REPORT.md").exists() and next(report.rglob("microbench.png")).stat().st_size > 1000
    metrics = json.loads((report / "metrics.json").read_text())
    assert metrics["claims_total"] == len(dream.CLAIM_IDS)
    claims = pd.read_parquet(data_dir / "results" / "dream_mpc" / "claims.parquet")
    assert set(claims["claim_id"]) == set(dream.CLAIM_IDS)
    # checkpoint references are relative to the data root, never absolute paths
    model = json.loads((data_dir / "dream_mpc" / "world_model.json").read_text())
    assert all(not e["checkpoint"].startswith("/") for e in model["checkpoints"])
    episodes = pd.read_parquet(data_dir / "dream_mpc" / "eval_episodes.parquet")
    dream_rows = episodes[episodes["planner"] == "dream_mpc"]
    assert (dream_rows["opt_evals_max"] == 15).all() and (episodes[episodes["planner"] == "mppi"]["opt_evals_max"] == 9216).all()
    # the probe CLI (how the cpu task list was chosen) reproduces the pipeline's strong checkpoint
    from assets.dream_mpc.probe import probe

    strong = next(e for e in model["checkpoints"] if e["budget"] == "strong" and e["seed"] == 0)
    found = probe(strong["task"], 0, "smoke")
    assert found["policy_eval_return"] == pytest.approx(strong["policy_eval_return"])
    assert found["consistency_mse"] == pytest.approx(strong["consistency_mse"], rel=1e-5)
    assert set(found["gates"]) == {"heldout_fit", "q_ensemble_sane", "policy_beats_random"}
    # the report-only task survey ran the probe for params task_survey and is in the report
    survey = pd.read_parquet(data_dir / "dream_mpc" / "task_survey.parquet")
    assert list(zip(survey["task"], survey["seed"])) == [("reacher-easy", 0)]
    assert "## Task survey" in (report / "REPORT.md").read_text()


def test_task_survey_rejects_an_unknown_task_before_training(monkeypatch):
    import dagster as dg

    from assets.dream_mpc.envs import UnknownTaskError
    from resources.compute import ComputeResource

    real = dream._params
    monkeypatch.setattr(dream, "_params", lambda c: {**real(c), "task_survey": {"tasks": ["pendulum-swingdown"], "seeds": [0]}})
    monkeypatch.setattr(T, "train_online", lambda *a, **k: pytest.fail("trained before validating the task id"))
    with pytest.raises(UnknownTaskError, match="pendulum-swingdown"):
        dream.task_survey(dg.build_asset_context(), ComputeResource(profile="smoke"))


def test_non_finite_transitions_stop_everything_downstream(smoke_resources, monkeypatch):
    real = T.train_online

    def corrupted(*args, **kwargs):
        out = real(*args, **kwargs)
        out["episodes"][1].reward[3] = float("nan")
        return out

    monkeypatch.setattr(T, "train_online", corrupted)
    seen = outcomes(materialize_paper(dream, smoke_resources))
    assert seen["checks"]["finite_in_range_complete"] is False
    assert not ({"dream_mpc/world_model"} | DOWNSTREAM_OF_MODEL) & seen["assets"]


def test_buffer_check_names_out_of_range_actions_and_wrong_lengths():
    spec = {"task": "cartpole-swingup", "obs_dim": 2, "act_dim": 1, "action_repeat": 4, "decisions_per_episode": 3}
    rows = [{"task": "cartpole-swingup", "seed": 0, "episode": 0, "split": "train", "t": t,
             "obs": np.zeros(2), "action": np.array([1.5 if t == 1 else 0.0]), "reward": 0.5,
             "next_obs": np.zeros(2), "done": t == 1} for t in range(2)]

    class _Compute:
        def params(self, slug):
            return {"training": {"min_transitions": 1}}

    result = dream._buffer_valid(pd.DataFrame(rows), {"tasks": [spec]}, _Compute())
    assert not result.passed
    assert "|action| up to 1.500 > 1" in result.description and "not of length 3" in result.description


def test_poor_world_model_fit_stops_evaluation(smoke_resources, monkeypatch):
    real = dream._params

    def strict(compute):
        params = real(compute)
        params["gates"] = {**params["gates"], "max_reward_mse": 0.0}
        return params

    monkeypatch.setattr(dream, "_params", strict)
    seen = outcomes(materialize_paper(dream, smoke_resources))
    assert seen["checks"]["heldout_fit"] is False
    assert not DOWNSTREAM_OF_MODEL & seen["assets"]


def test_counter_mismatch_fails_evaluation_and_blocks_the_report(smoke_resources, monkeypatch):
    real = P.trajectory_objective

    def leaky(model, z0, actions, *args, **kwargs):   # one extra, unaccounted model call
        model.next(z0, actions[0])
        return real(model, z0, actions, *args, **kwargs)

    monkeypatch.setattr(P, "trajectory_objective", leaky)
    result = materialize_paper(dream, smoke_resources)
    seen = outcomes(result)
    assert "dream_mpc/eval_episodes" not in seen["assets"]
    assert "dream_mpc/benchmark_report" not in seen["assets"]
    failures = [str(e.event_specific_data.error) for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    assert any("optimisation evaluations" in f and "configuration says" in f for f in failures)


def test_corrupt_or_mismatched_checkpoint_is_a_clear_error(data_dir):
    from assets.dream_mpc import envs
    from assets.dream_mpc import model as M
    from resources.artifacts import data_ref, save_state_dict

    spec = envs.task_spec("cartpole-swingup", 40, 4).to_dict()
    cfg = M.ModelConfig(obs_dim=spec["obs_dim"], act_dim=spec["act_dim"], latent_dim=16, mlp_dim=16, enc_dim=16)
    path = data_dir / "dream_mpc" / "checkpoints" / "probe.pt"
    save_state_dict(path, M.state_dict_for_checkpoint(M.WorldModel(cfg)), {"model_config": cfg.to_dict()})
    ref = data_ref(path)
    assert not ref.startswith("/")
    model, _ = dream.load_model(ref, spec)                    # intact: loads and fits
    assert model.cfg.act_dim == spec["act_dim"]
    with pytest.raises(ValueError, match="checkpoint/environment mismatch"):
        dream.load_model(ref, {**spec, "act_dim": spec["act_dim"] + 1})
    blob = bytearray(path.read_bytes())
    blob[len(blob) // 2] ^= 0xFF
    path.write_bytes(bytes(blob))
    with pytest.raises(ValueError, match="corrupt or unreadable checkpoint"):
        dream.load_model(ref, spec)


@pytest.mark.parametrize("profile", ["smoke", "cpu", "gpu"])
def test_every_profile_has_complete_parameters(profile):
    from assets.dream_mpc.envs import KNOWN_TASKS
    from resources.profiles import load_params

    params = load_params("dream_mpc", profile)
    assert set(params["tasks"]) <= set(KNOWN_TASKS)
    for task in params["tasks"]:
        repeat = dream.action_repeat(params, task)
        assert params["time_limit_steps"] % repeat == 0
        decisions = params["time_limit_steps"] // repeat
        assert params["training"]["decisions"] % decisions == 0
        seed_decisions, pretrain = dream.seed_phase(params["training"], decisions)
        assert 0 < seed_decisions < params["training"]["decisions"] and pretrain == seed_decisions
    names = {c.name for c in P.default_planners(0.99)}
    assert set(params["evaluation"]["planners_strong"]) <= names


def test_action_repeat_per_task_and_seed_phase():
    assert dream.action_repeat({"action_repeat": 8}, "reacher-easy") == 8
    per_task = {"action_repeat": {"default": 8, "reacher-easy": 4}}
    assert dream.action_repeat(per_task, "reacher-easy") == 4
    assert dream.action_repeat(per_task, "cartpole-swingup") == 8
    with pytest.raises(ValueError, match="no entry for 'walker-stand'"):
        dream.action_repeat({"action_repeat": {"reacher-easy": 4}}, "walker-stand")
    # TD-MPC2: seed steps of random actions, then as many pretraining updates
    assert dream.seed_phase({"seed_episodes": 2}, 125) == (250, 250)
