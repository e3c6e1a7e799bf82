"""The ts_layers group at the smoke profile: complete, gated, and stopped by bad input."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from assets.common.params import ParamsError
from assets.ts_layers import checks, data, pipeline
from assets.ts_layers.params import TSLayersParams
from tests.conftest import assert_group_complete, rerun, smoke_run, typed_params

SLUG = "ts_layers"


run = smoke_run(SLUG)


def typed(profile: str = "smoke", **overrides) -> TSLayersParams:
    return typed_params(TSLayersParams, SLUG, profile, **overrides)


def test_smoke_group_is_complete(run):
    seen = assert_group_complete(run)
    assert seen["checks"]["claim_concentration"] in (True, False)
    imp = run.value("layer_importance")
    assert set(zip(imp["family"], imp["depth"])) == {("tsfm", 4), ("llm4ts", 4)}
    pruned = run.value("pruned_checkpoints")
    assert set(pruned["method"]) == {"full_continued", "keep_tau", "bottom_k", "bi_top_k", "drop_last", "scratch",
                                     "random_0", "random_1"}
    ev = run.value("forecast_eval")
    assert {"naive", "seasonal_naive", "ets", "arima"} <= set(ev["method"])


# ------------------------------------------------------------------------------ gating (rerun)
def _corrupt_real(monkeypatch, how: str) -> None:
    real = data.load_real_series

    def corrupted(names):
        frame = real(names)
        if how == "nan":
            frame.loc[frame.index[10], "value"] = np.nan
        elif how == "inf":
            frame.loc[frame.index[3], "value"] = np.inf
        elif how == "constant":
            frame["value"] = 2.5
        elif how == "non_monotone":
            frame.loc[frame.index[[5, 6]], "t"] = frame.loc[frame.index[[6, 5]], "t"].to_numpy()
        elif how == "short":
            frame = frame[frame["t"] < 150]
        return frame

    monkeypatch.setattr(data, "load_real_series", corrupted)


@pytest.mark.parametrize("how, fragment", [("nan", "NaN/inf values"), ("inf", "NaN/inf values"),
                                           ("constant", "constant series"),
                                           ("non_monotone", "not strictly increasing"),
                                           ("short", "test windows (need ≥ 10)")])
def test_bad_real_series_stop_the_windows(run, tmp_path, monkeypatch, how, fragment):
    _corrupt_real(monkeypatch, how)
    seen = rerun(run, ["real_series", "windows"], tmp_path / "data")
    assert seen["checks"]["finite_monotone_long_enough"] is False
    assert fragment in seen["details"][f"{SLUG}/real_series:finite_monotone_long_enough"][1]
    assert f"{SLUG}/windows" not in seen["assets"]


def test_calibration_windows_in_test_stop_training(run, tmp_path, monkeypatch):
    real = pipeline.windows

    def leaky(*args, **kwargs):
        frame = real(*args, **kwargs)
        test = frame.index[(frame["split"] == "test")][:3]
        frame.loc[test, "calibration"] = True
        return frame

    monkeypatch.setattr(pipeline, "windows", leaky)
    seen = rerun(run, ["windows", "text_backbone"], tmp_path / "data")
    assert seen["checks"]["chronological_no_leakage"] is False
    assert "3 calibration windows outside the train split" in \
        seen["details"][f"{SLUG}/windows:chronological_no_leakage"][1]
    assert f"{SLUG}/text_backbone" not in seen["assets"]


def test_too_few_test_windows_and_overlap_stop_training(run, tmp_path, monkeypatch):
    real = pipeline.windows

    def thin(*args, **kwargs):
        frame = real(*args, **kwargs)
        test = frame.index[frame["split"] == "test"]
        frame = frame.drop(test[5:])
        frame.loc[frame.index[frame["split"] == "val"][:1], "target_end"] = 10 ** 6
        return frame

    monkeypatch.setattr(pipeline, "windows", thin)
    seen = rerun(run, ["windows", "text_backbone"], tmp_path / "data")
    detail = seen["details"][f"{SLUG}/windows:chronological_no_leakage"][1]
    assert "5 test windows (need ≥ 10)" in detail and "a train/val target reaches" in detail
    assert f"{SLUG}/text_backbone" not in seen["assets"]


def test_importance_length_not_depth_stops_the_keep_rule(run, tmp_path, monkeypatch):
    real = pipeline.layer_importance

    def short(*args, **kwargs):
        frame = real(*args, **kwargs)
        return frame.drop(frame.index[(frame["family"] == "tsfm") & (frame["layer"] == 3)])

    monkeypatch.setattr(pipeline, "layer_importance", short)
    seen = rerun(run, ["layer_importance", "keep_rule"], tmp_path / "data")
    assert seen["checks"]["finite_one_per_layer"] is False
    assert "3 importance scores for 4 layers" in seen["details"][f"{SLUG}/layer_importance:finite_one_per_layer"][1]
    assert f"{SLUG}/keep_rule" not in seen["assets"]


@pytest.mark.parametrize("keep, fragment", [([1, 0], "not strictly increasing"), ([1], "drops layer 1"),
                                            ([0, 9], "outside"), ([0, 1], "keep sizes differ")])
def test_bad_keep_lists_stop_the_realignment(run, tmp_path, monkeypatch, keep, fragment):
    real = pipeline.keep_rule

    def bad(*args, **kwargs):
        value = real(*args, **kwargs)
        value["models"][0]["keeps"]["keep_tau"] = keep
        return value

    monkeypatch.setattr(pipeline, "keep_rule", bad)
    seen = rerun(run, ["keep_rule", "pruned_checkpoints"], tmp_path / "data")
    assert seen["checks"]["same_k_fraction"] is False
    assert fragment in seen["details"][f"{SLUG}/keep_rule:same_k_fraction"][1]
    assert f"{SLUG}/pruned_checkpoints" not in seen["assets"]


# ------------------------------------------------------------------------------ predicates
def test_tau_outside_the_unit_interval_is_refused():
    for tau in (0.0, 1.5, -0.2):
        with pytest.raises(ParamsError, match="tau must be in"):
            typed(importance={"tau": tau})
    assert typed(importance={"tau": 1.0}).importance.tau == 1.0


def test_keep_rule_predicate_rejects_tau_and_fraction(run):
    value = run.value("keep_rule")
    assert checks.keep_rule_valid(value).passed
    assert "outside (0, 1]" in checks.keep_rule_valid({**value, "tau": 1.2}).problems[0]
    big = {**value, "models": [{**m, "param_fraction": {**m["param_fraction"], "keep_tau": 0.5}}
                               for m in value["models"]]}
    assert any("param fraction 0.500 > 0.3" in p for p in checks.keep_rule_valid(big).problems)


def test_checkpoint_and_budget_predicates(run, in_smoke_data):
    p = typed()
    ckpts = in_smoke_data.value("checkpoints")
    assert checks.checkpoints_valid(ckpts, p).passed
    worse = ckpts.assign(val_mse=ckpts["naive_val_mse"] * 1.01)
    assert any("does not beat last-value naive" in x for x in checks.checkpoints_valid(worse, p).problems)
    assert any("missing checkpoints" in x for x in checks.checkpoints_valid(ckpts.iloc[1:], p).problems)
    pruned = in_smoke_data.value("pruned_checkpoints")
    rule = in_smoke_data.value("keep_rule")
    assert checks.pruned_valid(pruned, rule, p).passed
    unequal = pruned.copy()
    unequal.loc[unequal["method"] == "keep_tau", "steps"] += 1
    assert any("budget" in x for x in checks.pruned_valid(unequal, rule, p).problems)
    missing = pruned[pruned["method"] != "bottom_k"]
    assert any("methods" in x for x in checks.pruned_valid(missing, rule, p).problems)


def test_eval_and_corpus_predicates(run):
    ev = run.value("forecast_eval")
    ckpts, pruned = run.value("checkpoints"), run.value("pruned_checkpoints")
    assert checks.eval_complete(ev, pruned, ckpts).passed
    broken = ev.copy()
    broken.loc[0, "mse"] = np.nan
    assert not checks.eval_complete(broken, pruned, ckpts).passed
    corpus = run.value("synthetic_corpus")
    p = typed()
    assert checks.corpus_valid(corpus, p).passed
    bad = corpus.copy()
    bad.at[0, "values"] = np.full(512, np.nan)
    bad.at[1, "values"] = np.zeros(512)
    problems = " ".join(checks.corpus_valid(bad, p).problems)
    assert "1 synthetic series with NaN/inf" in problems and "1 constant synthetic series" in problems


# ------------------------------------------------------------------------------ profiles
def test_profiles_keep_the_issue_s_shape():
    cpu = typed("cpu")
    assert cpu.depths == (2, 4, 8, 16) and cpu.seeds == (0, 1, 2) and len(cpu.series) == 5
    assert cpu.train.steps == 400 and cpu.realign.steps == 150 and cpu.train.batch_size == 128
    assert cpu.importance.calibration_windows == 512 and cpu.importance.tau == 0.25
    assert cpu.prune_models == (("tsfm", 8), ("tsfm", 16), ("llm4ts", 8))
    # the two deliberate cuts for the 10-minute budget (issue: 5 draws, 300 text steps; NOTES.md)
    assert cpu.random_draws == 3 and cpu.text.steps == 150 and typed("gpu").random_draws == 5
    assert cpu.lookback == 96 and cpu.horizon == 24 and cpu.patch == 16 and cpu.d_model == 64
    smoke = typed()
    assert smoke.depths == (2, 4) and len(smoke.series) == 1 and smoke.train.steps == 20
    gpu = typed("gpu")
    assert gpu.d_model == 256 and max(gpu.depths) == 32


def test_gpu_profile_code_path_at_toy_size(tmp_path, monkeypatch, one_torch_thread):
    """The gpu profile's code path (depth 32, LLM4TS 16, its τ and heads) at toy sizes on the CPU
    (d = 64 here: d = 256 checkpoints of 32 layers cost minutes to write): pretraining,
    importance, keep rule, realignment, evaluation."""
    import torch

    from assets.ts_layers import runs as R

    p = typed("gpu", synthetic={"series": 20, "val_windows": 8}, series=["elec_equip"], seeds=[0],
              depths=[2, 32], prune_models=[["tsfm", 32]], max_test_windows=12, random_draws=1,
              train={"steps": 1, "batch_size": 4}, realign={"steps": 1}, text={"steps": 1, "batch_size": 2},
              importance={"calibration_windows": 8}, classical_windows=2, llm4ts={"depth": 16}, d_model=64)
    assert typed("gpu").d_model == 256 and p.n_heads == 8
    corpus = data.synthetic_corpus(p.synthetic.series, p.synthetic.length, p.synthetic.val_fraction, 0)
    real = data.load_real_series(p.series)
    frame = pipeline.windows(corpus, real, p, np.random.default_rng(0))
    assert checks.windows_valid(frame).passed
    path = pipeline.bundle(corpus, real, frame, p, tmp_path / "bundle.npz")
    def save(name, state, **_):
        path = tmp_path / f"{name}.pt"
        torch.save({k: torch.as_tensor(v) for k, v in state.items()}, path)
        return {"checkpoint": str(path), "md5": ""}

    def load_state(ref):
        return torch.load(ref, weights_only=True), {}

    text, _ = pipeline.text_backbone(p, lambda *k: 1, save, 1, 1, lambda _: None)
    ckpts, _ = pipeline.checkpoints(p, text, path, lambda *k: 1, save, lambda r: r, 1, 1, lambda _: None)
    assert set(ckpts["depth"]) == {2, 32, 16} and np.isfinite(ckpts["val_mse"]).all()
    imp = pipeline.layer_importance(p, ckpts, path, load_state, lambda _: None)
    assert len(imp) == 32
    rule = pipeline.keep_rule(p, imp, lambda f, d, k: len(k) / d, lambda *k: np.random.default_rng(0))
    assert rule["models"][0]["k"] == 8
    pruned, _ = pipeline.pruned_checkpoints(p, ckpts, rule, path, lambda *k: 1, save, lambda r: r, 1, 1,
                                            lambda _: None)
    ev = pipeline.forecast_eval(p, frame, ckpts, pruned, path, load_state, lambda _: None)
    assert np.isfinite(ev["mse"]).all() and R.load_bundle(path)["test"].shape[1] == 120
    assert isinstance(ev, pd.DataFrame)
