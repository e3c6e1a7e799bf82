"""pfn_causal wiring: the smoke outputs, bad input stopped by a blocking check before anything
downstream consumes it (re-running only the gated asset and one downstream on the stored smoke
outputs), the predicates on corrupted values, the gpu profile's code path at toy size. The
group's completeness, determinism and typed parameters are tests/platform/test_smoke_contract.py's."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from assets.common.pfn.train import stream_rng
from assets.pfn_causal import checks, method, runs
from assets.pfn_causal import prior as P
from assets.pfn_causal.params import PFNCausalParams
from resources.artifacts import load_checkpoint, save_checkpoint
from tests.conftest import DATA_DIR_ENV, rerun, smoke_run, typed_params

SLUG = "pfn_causal"


run = smoke_run(SLUG)


def typed(profile: str = "smoke", **overrides) -> PFNCausalParams:
    return typed_params(PFNCausalParams, SLUG, profile, **overrides)


# ------------------------------------------------------------------------------ smoke outputs
def test_smoke_outputs_checkpoints_sidecars_and_report(run):
    root = run.data_dir
    pretrained = run.value("pretrained")
    assert set(pretrained.columns) >= {"checkpoint", "md5", "loss_drop", "initial_nmse", "validation_nmse"}
    _, sidecar = load_checkpoint_at(root, pretrained["checkpoint"].iloc[0])
    assert {"config", "seed", "loss_curve", "params_hash"} <= set(sidecar) and "git_sha" not in sidecar
    pwf = run.value("pwf")
    _, side = load_checkpoint_at(root, pwf["checkpoint"].iloc[0])
    assert set(side["mask_counts"]) == {str(side["target"]["key"])}             # PWF: its target subset only
    assert len(side["scm_fingerprints"]) == pwf["steps"].iloc[0] * typed().batch_size
    predictions = run.value("predictions")
    assert {"zero_shot", "continued", "msf", "random_ft", "pwf"} == set(predictions["method"])
    text = (root / "reports" / SLUG / "REPORT.md").read_text()
    assert "## How this reproduction differs from the paper" in text and "antithetic" in text
    assert (root / "reports" / SLUG / "plots" / "nmse_by_size.png").stat().st_size > 1000
    assert "ms per step" in (root / "runs" / SLUG / "TIMINGS.md").read_text()
    assert not {"train_seconds", "seconds"} & set(pretrained.columns)          # wall clock: run records only
    assert "### Ablation: MSF acquisition signal" in text and "ranking subsets by the predicted mean's nMSE" in text


def test_msf_ablation_reuses_the_run_s_scores_and_adds_the_nmse_variant(in_smoke_data):
    """The report-only acquisition ablation: one row per seed × (zero-shot, MSF, variant, random);
    the run's methods are scored from its `predictions` (the same worst-subset nMSE as
    msf_uniform's table), the variant made its own picks."""
    from assets.pfn_causal import benchmark as B

    p, table = typed(), in_smoke_data.value("msf_ablation")
    assert sorted(set(table["seed"])) == list(p.msf_ablation.seeds) == [0]
    assert list(table["method"]) == ["zero_shot", "msf", "msf_nmse", "random_ft"]
    assert np.isfinite(table[["worst", "mean", "covered", "uncovered"]].to_numpy()).all()
    assert len(table.set_index("method").loc["msf_nmse", "picks"].split(" → ")) == p.msf.rounds
    value = in_smoke_data.value("eval_bank")
    state, _ = load_checkpoint(value["bank"])
    bank = runs.bank_frame({k: v.numpy() for k, v in state.items()}, value["targets"])
    _, per = B.msf_uniform(B.errors(in_smoke_data.value("predictions"), bank.rename(columns={"target": "target_y"})),
                           [0], max(p.eval.context_sizes))
    worst = per.groupby("method")["se2"].max()
    for name in ("zero_shot", "msf", "random_ft"):
        assert np.isclose(table.set_index("method").loc[name, "worst"], worst[name])


def load_checkpoint_at(root, ref):
    import os

    before = os.environ.get(DATA_DIR_ENV)
    os.environ[DATA_DIR_ENV] = str(root)
    try:
        return load_checkpoint(ref)
    finally:
        if before is None:
            os.environ.pop(DATA_DIR_ENV)
        else:
            os.environ[DATA_DIR_ENV] = before


# ------------------------------------------------------------------------------ gating
def test_a_prior_that_covers_three_variable_subsets_stops_the_eval_bank(run, tmp_path, monkeypatch):
    real = runs.coverage_table

    def covered_three(p, seed_for):
        subsets, sizes, total = real(p, seed_for)
        sizes[2] = {**sizes[2], "count": 7, "empirical": 7 / total}
        return subsets, sizes, total

    monkeypatch.setattr(runs, "coverage_table", covered_three)
    seen = rerun(run, ["prior_config", "eval_bank"], tmp_path / "data")
    assert seen["checks"]["coverage_premise"] is False
    assert "|S| = 3 was drawn 7 times" in seen["details"][f"{SLUG}/prior_config:coverage_premise"][1]
    assert f"{SLUG}/eval_bank" not in seen["assets"]


def test_a_bank_scm_from_the_pretraining_stream_stops_pretraining(run, tmp_path, monkeypatch):
    config = run.value("prior_config")
    p = typed()
    leaked = P.stream_scm_fingerprints(runs.causal_prior(p), stream_rng(int(config["stream_seeds"]["0"]),
                                                                        "pretrain", 3), p.batch_size)[1]
    real = runs.eval_bank

    def leaky(*args, **kwargs):
        out = real(*args, **kwargs)
        out["fingerprints"][0] = leaked
        return out

    monkeypatch.setattr(runs, "eval_bank", leaky)
    seen = rerun(run, ["eval_bank", "pretrained"], tmp_path / "data")
    assert seen["checks"]["disjoint_from_training"] is False
    assert f"{SLUG}/pretrained" not in seen["assets"]


def test_imprecise_truth_stops_pretraining(run, tmp_path, monkeypatch):
    real = P.interventional_truth

    def noisy(*args, **kwargs):
        out = real(*args, **kwargs)
        out["se"] = out["se"] + 0.05
        return out

    monkeypatch.setattr(P, "interventional_truth", noisy)
    seen = rerun(run, ["eval_bank", "pretrained"], tmp_path / "data")
    assert seen["checks"]["truth_precise_grid_complete"] is False
    assert f"{SLUG}/pretrained" not in seen["assets"]


def test_pwf_trained_on_a_bank_scm_stops_the_predictions(run, tmp_path, monkeypatch):
    bank_fp = run.value("eval_bank")["fingerprints"][0]
    real = method.StreamRecord.add

    def add(self, batch):
        real(self, batch)
        self.fingerprints[-1] = bank_fp

    monkeypatch.setattr(method.StreamRecord, "add", add)
    seen = rerun(run, ["pwf", "predictions"], tmp_path / "data")
    assert seen["checks"]["trained_as_declared"] is False
    assert "eval-bank SCMs" in seen["details"][f"{SLUG}/pwf:trained_as_declared"][1]
    assert f"{SLUG}/predictions" not in seen["assets"]


def test_a_checkpoint_that_fails_to_reload_stops_the_predictions(run, tmp_path, monkeypatch):
    import resources.artifacts as artifacts

    real = artifacts.save_checkpoint

    def corrupting(path, state, **kwargs):
        written = real(path, state, **kwargs)
        with open(path, "ab") as fh:
            fh.write(b"garbage")
        return written

    monkeypatch.setattr(artifacts, "save_checkpoint", corrupting)
    seen = rerun(run, ["continued_pretrain", "predictions"], tmp_path / "data")
    assert seen["checks"]["loads_back_finite"] is False
    assert f"{SLUG}/predictions" not in seen["assets"]


def test_a_pretrained_model_that_did_not_learn_stops_the_fine_tuning(run, tmp_path, monkeypatch):
    real = runs.pretrain

    def unlearned(*args, **kwargs):
        frame, timings = real(*args, **kwargs)
        return frame.assign(validation_nmse=frame["initial_nmse"] * 1.05), timings     # worse than untrained

    monkeypatch.setattr(runs, "pretrain", unlearned)
    seen = rerun(run, ["pretrained", "continued_pretrain"], tmp_path / "data")
    assert seen["checks"]["learned"] is False
    assert "need" in seen["details"][f"{SLUG}/pretrained:learned"][1]
    assert f"{SLUG}/continued_pretrain" not in seen["assets"]


# ------------------------------------------------------------------------------ predicates
def test_coverage_premise_names_each_violation(run):
    value = run.value("prior_config")
    assert checks.coverage_premise(value).passed
    bad = {**value, "coverage_sizes": [dict(r) for r in value["coverage_sizes"]]}
    bad["coverage_sizes"][0]["empirical"] = 0.85
    problems = checks.coverage_premise(bad).problems
    assert any("|S| = 1: frequency 0.8500" in p for p in problems)


def test_bank_graph_and_truth_predicates_catch_cycles_children_of_y_and_gaps(in_smoke_data, tmp_path, monkeypatch):
    value = in_smoke_data.value("eval_bank")
    assert checks.bank_graphs(value).passed and checks.bank_truth(value).passed
    state, _ = load_checkpoint(value["bank"])
    arrays = {k: v.numpy().copy() for k, v in state.items()}
    arrays["scm.adjacency"][0, 4, 1] = True                                  # Y → x: a child of Y and a back edge
    arrays["scm.adjacency"][1, 2, 0] = True
    arrays["q_val"][0, 0, 3] = 0.5 if not arrays["q_mask"][0, 0, 3] else arrays["q_val"][0, 0, 3]
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path))                          # never write into the shared smoke run
    ref = save_checkpoint(tmp_path / SLUG / "checkpoints" / "bad_bank.pt", arrays, provenance={})
    bad = {**value, "bank": ref}
    graph_problems = " ".join(checks.bank_graphs(bad).problems)
    assert "SCM 0: Y (node 4) has children [1]" in graph_problems and "against the topological order" in graph_problems
    assert any("off its mask" in p for p in checks.bank_truth(bad).problems)


def test_trained_as_declared_rejects_undeclared_subsets(in_smoke_data):
    p = typed()
    frame = in_smoke_data.value("continued_pretrain").assign(regime="pwf")   # continued trained on π_pre, not S*
    value = in_smoke_data.value("eval_bank")
    assert checks.trained_as_declared(in_smoke_data.value("continued_pretrain"), value, p).passed
    problems = checks.trained_as_declared(frame, value, p).problems
    assert any("without a declared target" in p for p in problems)


def test_rule_and_completeness_predicates(run):
    rule = run.value("finetune_rule")
    assert checks.rule_valid(rule).passed
    bad = {**rule, "seeds": {k: {**v, "calibration_exceed": 0.2} for k, v in rule["seeds"].items()}}
    assert not checks.rule_valid(bad).passed
    p, bank = typed(), run.value("eval_bank")
    predictions = run.value("predictions")
    assert checks.predictions_complete(predictions, bank, p).passed
    assert not checks.predictions_complete(predictions[predictions["method"] != "msf"], bank, p).passed
    estimates = run.value("baseline_estimates")
    assert checks.baselines_complete(estimates, bank, p).passed
    broken = estimates.copy()
    broken.loc[0, "mu_hat"] = np.nan
    assert not checks.baselines_complete(broken, bank, p).passed


def test_loss_gates(run):
    frame = run.value("pretrained")
    assert checks.pretrained_learned(frame, typed()).passed
    worse = frame.assign(validation_nmse=frame["initial_nmse"] * 1.1)
    assert "need" in checks.pretrained_learned(worse, typed()).problems[0]
    assert not checks.pretrained_learned(frame.assign(validation_nmse=frame["initial_nmse"] * 0.9),
                                         typed("cpu")).passed                  # cpu needs −20 %
    assert not checks.pretrained_learned(frame.assign(initial_nmse=10.0, validation_nmse=0.8), typed()).passed


# ------------------------------------------------------------------------------ gpu profile, toy size
def test_gpu_profile_code_path_at_toy_size(tmp_path, monkeypatch):
    """d = 8 (255 subsets), the bar-distribution head and the full-coverage control, at toy
    sizes: prior config, bank, pretraining (both regimes), PWF, MSF, predictions, rule."""
    from resources.artifacts import ArtifactsResource
    from resources.compute import ComputeResource

    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path))
    tiny = {"seeds": [0], "model": {"d_model": 16, "n_heads": 2, "n_layers": 1, "bins": 16}, "batch_size": 2,
            "pretrain": {"steps": 3}, "pwf": {"steps": 2, "target_subsets": 1, "values_per_subset": 1,
                                              "ablation_multipliers": []},
            "msf": {"rounds": 1, "steps_per_round": 2, "estimate_scms": 2},
            "eval": {"scms": 2, "values": 1, "context_sizes": [32]}, "validation": {"scms": 2, "mc_draws": 40},
            "rule": {"scms": 2, "calibration_queries": 20, "bank_scms": 1}, "coverage_steps": 2, "workers": 1}
    compute = ComputeResource(profile="gpu", device="cpu", params_overrides={SLUG: tiny})
    artifacts = ArtifactsResource()
    p = typed("gpu", **tiny)
    assert p.n_covariates == 8 and p.model.head == "bar" and p.full_coverage
    seed_for = lambda *k: compute.seed_for(SLUG, *k)  # noqa: E731
    config = runs.prior_config(p, seed_for, lambda *k: compute.rng(SLUG, *k))
    assert len(config["coverage_subsets"]) == 255 and config["space"][-1]["distinct_means"] == 255
    bank = runs.eval_bank(p, config["targets"], compute.rng(SLUG, "bank"))
    assert bank["arrays"]["q_mask"].shape == (2, 255 + 2, 8)
    pretrained, _ = runs.pretrain(p, compute, artifacts, seed_for)
    assert set(pretrained["regime"]) == {"pretrain", "full_coverage"}
    _, sidecar = load_checkpoint(pretrained["checkpoint"].iloc[0])
    assert sidecar["config"]["head"] == "bar"
    pwf, _, _ = runs.finetune("pwf", pretrained, p, compute, artifacts, seed_for, config["targets"])
    msf, trace, _ = runs.finetune("msf", pretrained, p, compute, artifacts, seed_for)
    assert len(trace) == 255
    value = {"arrays": bank["arrays"], "targets": config["targets"]}
    predictions = runs.predictions(pretrained, {"pwf": pwf, "msf": msf}, value, p)
    assert {"zero_shot", "full_coverage", "msf", "pwf"} == set(predictions["method"])
    assert np.isfinite(predictions[["mu_hat", "var_hat"]].to_numpy()).all()
    rule = runs.finetune_rule(pretrained, value, config["targets"], p, compute, seed_for)
    assert np.isfinite(rule["seeds"]["0"]["threshold"])


def test_every_profile_keeps_the_issue_s_shape():
    cpu = typed("cpu")
    assert cpu.seeds == (0, 1, 2) and cpu.pretrain.steps == 1750 and cpu.batch_size == 16 and cpu.pwf.steps == 84
    assert cpu.msf.rounds * cpu.msf.steps_per_round == 350 and cpu.pi_pre == (0.9, 0.1, 0.0, 0.0)
    assert cpu.eval.scms == 50 and cpu.eval.values == 8 and cpu.eval.context_sizes == (32, 96)
    assert cpu.eval.mc_draws == 4000 and cpu.model.d_model == 64 and cpu.model.n_layers == 4
    gpu = typed("gpu")
    assert gpu.n_covariates == 8 and gpu.model.n_layers == 12 and gpu.model.d_model == 192
    with pytest.raises(Exception, match="pi_pre"):
        typed("cpu", pi_pre=[0.5, 0.5, 0.5, 0.0])
    assert isinstance(pd.DataFrame, type)
