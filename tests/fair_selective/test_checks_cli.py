"""Predicates on corrupted inputs (milliseconds), the bring-your-own-data CLI, the typed profiles."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from assets.common.params import parse
from assets.fair_selective import checks, cli, runs, static
from assets.fair_selective import env as envs
from assets.fair_selective import fairness as fm
from assets.fair_selective.params import FairSelectiveParams
from resources.profiles import PROFILES, load_params
from tests.conftest import typed_params


@pytest.fixture(scope="module")
def params():
    return typed_params(FairSelectiveParams, "fair_selective", "smoke")


def observed_log(m=2000, seed=0):
    spec = envs.lending_spec()
    pool = envs.sample_pool(spec, 500, np.random.default_rng(seed))
    full = static.behaviour_log(spec, pool, {"offset": 0.0, "epsilon": 0.1}, m, np.random.default_rng(seed + 1))
    return spec, full, static.observe(full).assign(env="lending", seed=0, policy="myopic")


def test_every_profile_parses():
    for profile in PROFILES:
        p = parse(FairSelectiveParams, load_params("fair_selective", profile), f"fair_selective.{profile}")
        assert p.omega == 0.05 and p.measure == "tpr"


def test_env_spec_gate_names_a_broken_distribution_and_a_fair_env(params):
    table = runs.env_spec_table(params)
    assert checks.env_spec_valid(table) == []
    broken = table.copy()
    broken.loc[0, "p_state"] += 0.2
    broken.loc[1, "p_success"] = 1.3
    problems = checks.env_spec_valid(broken)
    assert any("≠ 1" in p for p in problems) and any("outside [0, 1]" in p for p in problems)
    fair = table.assign(myopic_tpr_gap=0.02)
    assert any("premise fails" in p for p in checks.env_spec_valid(fair))


def test_leakage_gate_and_bad_logs_are_named(params):
    _, _, obs = observed_log()
    assert checks.observed_logs_valid(obs, params).passed
    leaked = obs.copy()
    leaked.loc[leaked.index[leaked["action"] == 0][:3], "label"] = 1
    assert "leakage: 3 rejected row(s) carry a label" in checks.observed_logs_valid(leaked, params).message()
    three = obs.copy()
    three.loc[0, "group"] = 2
    assert "groups must be exactly" in checks.observed_logs_valid(three, params).message()
    bad_p = obs.copy()
    bad_p.loc[0, "accept_prob"] = 1.5
    assert "outside [0, 1]" in checks.observed_logs_valid(bad_p, params).message()
    zero = obs.copy()
    zero.loc[zero.index[zero["action"] == 0][0], "accept_prob"] = 0.0
    assert "a_K = 0 on a rejected row" in checks.observed_logs_valid(zero, params).message()
    short = obs.iloc[:100]
    assert "longer than a log" in checks.observed_logs_valid(short, params).message()
    no_pos = obs.copy()
    no_pos.loc[(no_pos["group"] == 1) & (no_pos["action"] == 1), "label"] = 0
    assert "no accepted positive" in checks.observed_logs_valid(no_pos, params).message()


def test_estimator_refuses_bad_logs_and_long_windows():
    spec, full, obs = observed_log()
    with pytest.raises(fm.FairnessInputError, match="longer than the log"):
        static.static_study(spec, full, obs, ("tpr",), 5000, 0.05)
    leaked = obs.copy()
    leaked.loc[leaked.index[leaked["action"] == 0][0], "label"] = 0
    with pytest.raises(fm.FairnessInputError, match="leakage"):
        static.static_study(spec, full, leaked, ("tpr",), 500, 0.05)


def test_static_study_never_reads_hidden_labels():
    spec, full, obs = observed_log()
    flipped = full.copy()
    flipped.loc[flipped["action"] == 0, "label"] = 1 - flipped.loc[flipped["action"] == 0, "label"]
    a = static.fit_predictors(spec, static.observe(full))
    b = static.fit_predictors(spec, static.observe(flipped))
    assert np.array_equal(a["iw"], b["iw"]) and np.array_equal(a["unweighted"], b["unweighted"])


def test_identity_gate_fails_on_a_residual():
    spec, full, obs = observed_log()
    est = static.static_study(spec, full, obs.drop(columns=["env", "seed", "policy"]), ("tpr",), 500, 0.05)
    assert checks.estimates_valid(est) == []
    assert "identity" in checks.estimates_valid(est.assign(residual=1e-6))[0]


def test_rollout_gate_names_leaks_and_negative_resource(params):
    frame = pd.DataFrame({"t": [0, 1], "action": [0, 1], "label": [1, 1], "resource": [1.0, -1.0],
                          "delta_true": [0.1, 0.2], "delta_obs": [0.0, 0.0]})
    problems = checks.rollouts_valid(frame, params)
    assert "negative resource" in problems and any("leakage" in p for p in problems)


def test_cli_reports_estimates_and_refuses_leaks(tmp_path, capsys):
    spec, _, obs = observed_log(4000)
    frame = obs.assign(bucket=spec.states[obs["state"], 1])[["group", "bucket", "action", "label", "accept_prob"]]
    path = tmp_path / "log.csv"
    frame.to_csv(path, index=False)
    assert cli.main(["--csv", str(path), "--measure", "tpr"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["delta_obs"] == 0.0 and abs(out["delta_imp"]) > 0.1 and out["certified"] is False
    assert out["bias_bound"] > 0 and out["weighted"] is True
    frame.loc[frame.index[frame["action"] == 0][0], "label"] = 1
    frame.to_csv(path, index=False)
    assert cli.main(["--csv", str(path)]) == 2
    assert "leakage" in capsys.readouterr().err


def test_gpu_profile_builds_its_full_grid():
    p = parse(FairSelectiveParams, load_params("fair_selective", "gpu"), "fair_selective.gpu")
    table = runs.env_spec_table(p)
    pools = runs.applicant_pools(p, table, lambda *k: np.random.default_rng(0))
    jobs = runs.training_jobs(p, table, pools, lambda *k: 0)
    sellf = [j for j in jobs if j["kind"] == "sellf"]
    assert len({(j["beta1"], j["beta2"]) for j in sellf}) == 12
    # + the gpu-only baselines: ELBERT-PO 7 bias coefficients, FOCOPS 3 cost limits × 4 ν_max, SELLF-censored 4 × 3
    assert len(jobs) == len(p.envs) * len(p.seeds) * (1 + 4 + 4 + 1 + 12 + 7 + 12 + 12)
    assert all(j["cfg"].total_steps == 500_000 and j["cfg"].predictor == "deep" for j in jobs)
    assert {j["horizon"] for j in jobs} == {10_000}
