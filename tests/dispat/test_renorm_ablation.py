"""Issue 48's ablation (asset dispat/renorm_ablation): the two log-ratios on a constructed case, the
asset's rows at the smoke profile (the renormalised arm is the run's own rounds), and the report
sentences read off its numbers."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from assets.common.params import ParamsError
from assets.dispat import benchmark as B
from assets.dispat import lm as L
from assets.dispat import report as R
from assets.dispat import runs
from assets.dispat.params import DispatParams
from resources.artifacts import resolve_data_ref
from resources.compute import ComputeResource
from tests.conftest import smoke_run, typed_params

SLUG = "dispat"
run = smoke_run(SLUG)


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    yield


def typed(profile: str = "smoke", **overrides) -> DispatParams:
    return typed_params(DispatParams, SLUG, profile, **overrides)


# ------------------------------------------------------------------------------ the two log-ratios
def _tiny_rows():
    """A tiny LM (vocab 6) and two rows of 4 tokens whose last 3 are value tokens."""
    torch.manual_seed(0)
    model = L.build_model(6, 8, 2, 1, 8)
    model.eval()
    tokens = torch.tensor([[0, 2, 3, 4], [0, 3, 2, 5]])
    values = torch.tensor([[False, True, True, True], [False, True, True, True]])
    return model, tokens, values


def test_renormalised_row_logprob_sums_log_q_over_the_allowed_sets_and_differs_when_mass_is_removed():
    model, tokens, values = _tiny_rows()
    with torch.no_grad():
        log_p = torch.log_softmax(model(tokens[:, :-1]).logits, -1)          # (2, 3, 6)
        targets = tokens[:, 1:]
        unconstrained = L._row_logprobs(model, tokens, values, None)
        everything = L._row_logprobs(model, tokens, values, torch.ones(2, 3, 6, dtype=torch.bool))
        allowed = torch.zeros(2, 3, 6, dtype=torch.bool)
        allowed[..., 2:] = True                                               # the mask removes tokens 0 and 1
        renormalised = L._row_logprobs(model, tokens, values, allowed)
    picked = log_p.gather(-1, targets[..., None]).squeeze(-1)
    assert torch.allclose(unconstrained, picked.sum(1), atol=1e-5)            # Σ log p over the value tokens
    assert torch.allclose(everything, unconstrained, atol=1e-5)               # nothing masked: the same ratio
    mass = torch.logsumexp(log_p[..., 2:], -1)                                # log P(A | prefix) < 0
    assert torch.allclose(renormalised, (picked - mass).sum(1), atol=1e-5)    # Σ log q = Σ (log p − log P(A))
    assert (renormalised - unconstrained > 1e-3).all()                       # differs once the mask removes mass
    # the log-ratio θ vs θt: equal for θ = θt under both, different once θ moves and mass changes
    moved = L.build_model(6, 8, 2, 1, 8)
    moved.load_state_dict(model.state_dict())
    with torch.no_grad():
        for w in moved.parameters():
            w.add_(0.05 * torch.randn_like(w))
        ratio_p = L._row_logprobs(moved, tokens, values, None) - unconstrained
        ratio_q = L._row_logprobs(moved, tokens, values, allowed) - renormalised
    assert not torch.allclose(ratio_p, ratio_q, atol=1e-4)


# ------------------------------------------------------------------------------ params and arms
def test_params_and_arms():
    p = typed("cpu")
    assert p.renorm_ablation.datasets == ("synthetic_transactions", "fair") and p.renorm_ablation.seeds == (0, 1, 2)
    assert p.renorm_ablation.rounds == 1
    assert runs.ablation_cells(p) == [(d, s) for d in ("synthetic_transactions", "fair") for s in (0, 1, 2)]
    assert runs.ablation_arms(p) == ["renormalised", "unconstrained", "no_contrast"]
    off = typed("cpu", self_play={"renormalise": False}, renorm_ablation={"arms": ["renormalised", "unconstrained"]})
    assert runs.ablation_arms(off) == ["unconstrained", "renormalised"]      # the run's objective first, reused
    assert runs.ablation_cells(typed("smoke")) == [("synthetic_transactions", 0)]
    with pytest.raises(ParamsError, match="arms"):
        typed(renorm_ablation={"arms": ["tv"]})
    with pytest.raises(ParamsError, match="rounds"):
        typed(renorm_ablation={"rounds": 5})


# ------------------------------------------------------------------------------ the asset at smoke
def test_smoke_ablation_reuses_the_runs_rounds_and_computes_the_other_arms(run):
    p = typed()
    frame = run.value("renorm_ablation")
    assert list(dict.fromkeys(frame["objective"])) == ["renormalised", "unconstrained", "no_contrast"]
    assert set(frame["round"]) == {0} and set(zip(frame["dataset"], frame["seed"])) == {("synthetic_transactions", 0)}
    rounds = run.value("policy_dispat")
    own = rounds[(rounds["f"] == p.self_play.f) & (rounds["round"] == 0)].iloc[0]
    ren = frame[frame["objective"] == "renormalised"].iloc[0]
    unc = frame[frame["objective"] == "unconstrained"].iloc[0]
    nc = frame[frame["objective"] == "no_contrast"].iloc[0]
    assert ren["val_nll_after"] == own["val_nll_after"] and ren["divergence"] == own["divergence"]
    assert ren["val_nll_change"] == pytest.approx(own["val_nll_after"] / own["val_nll_before"] - 1)
    # same θ0, same samples: the same starting point; another objective: another θ
    assert unc["val_nll_before"] == ren["val_nll_before"]
    assert unc["log_p_allowed_before"] == ren["log_p_allowed_before"]
    assert unc["val_nll_after"] != ren["val_nll_after"]
    assert nc["log_p_allowed_before"] != ren["log_p_allowed_before"]          # train rows, not θ0's samples
    assert np.isfinite(frame[["val_nll_change", "val_nll_q_change", "d_log_p_allowed"]].to_numpy()).all()
    text = (run.data_dir / "reports" / SLUG / "REPORT.md").read_text(encoding="utf-8")
    assert "## Ablation: renormalised vs unconstrained log-ratio" in text and "seeds 0 (1)" in text
    assert f"{ren['val_nll_change']:+.2%}" in text                          # the number comes from the asset


def test_recomputing_the_renormalised_arm_gives_the_runs_round(in_smoke_data):
    """The reuse is sound: renorm_ablation_job with the run's objective reproduces policy_dispat's
    round 0 (same θ0, samples, stream and validation seeds)."""
    run = in_smoke_data
    p = typed()
    compute = ComputeResource(profile="smoke")
    jobs = runs.renorm_ablation_jobs(run.value("serialized_corpus"), run.value("tokenizer"), run.value("policy_sft"),
                                     run.value("pseudo_anomalies"), p, lambda *k: compute.seed_for(SLUG, *k),
                                     lambda ref: str(resolve_data_ref(ref)), ["renormalised"])
    job = {**jobs[0], "threads": 1}
    rec = runs.renorm_ablation_job(job)["records"][0]
    own = run.value("renorm_ablation")
    own = own[own["objective"] == "renormalised"].iloc[0]
    assert rec["val_nll_after"] == pytest.approx(own["val_nll_after"], rel=1e-6)
    assert rec["divergence"] == pytest.approx(own["divergence"], rel=1e-5)


# ------------------------------------------------------------------------------ summary, observation, reading
def _ablation(changes: dict[str, list[float]], q_share: float = 0.2) -> pd.DataFrame:
    rows = []
    for objective, values in changes.items():
        for seed, c in enumerate(values):
            before = 10.0
            after = before * (1 + c)
            rows.append({"dataset": "fair", "seed": seed, "objective": objective, "round": 0,
                         "val_nll_before": before, "val_nll_after": after, "accepted": c <= 0.02,
                         "val_nll_q_before": 9.0, "val_nll_q_after": 9.0 + q_share * (after - before),
                         "log_p_allowed_before": -0.03, "log_p_allowed_after": -0.1, "divergence": 0.1,
                         "val_nll_change": c, "val_nll_q_change": q_share * (after - before) / 9.0,
                         "d_log_p_allowed": -0.07})
    return pd.DataFrame(rows)


def _policies(change: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    sft = pd.DataFrame({"dataset": "fair", "seed": [0, 1, 2], "val_nll": 10.0})
    return sft, sft.assign(val_nll=10.0 * (1 + change))


def test_summary_and_observation_count_rounds_and_average_changes():
    ab = _ablation({"renormalised": [0.08, 0.09, 0.10], "unconstrained": [0.03, 0.01, 0.05],
                    "no_contrast": [0.04, 0.04, 0.04]})
    table = B.renorm_summary(ab)
    assert list(table["objective"]) == ["renormalised", "unconstrained", "no_contrast"]
    unc = table[table["objective"] == "unconstrained"].iloc[0]
    assert unc["kept"] == 1 and unc["rounds"] == 3 and unc["val_nll_change"] == pytest.approx(0.03)
    assert unc["min_change"] == pytest.approx(0.01) and unc["max_change"] == pytest.approx(0.05)
    obs = B.renorm_observation(ab)
    assert obs.kind == "observation" and obs.seeds == "0–2 (3)"
    assert "renormalised +9.00% (0 of 3 kept)" in obs.measured_value
    assert "unconstrained +3.00% (1 of 3 kept)" in obs.measured_value
    assert B.renorm_observation(ab.iloc[:0]).measured_value.startswith("not run")


def test_reading_follows_the_numbers():
    sft, matched = _policies(-0.10)
    rejected = _ablation({"renormalised": [0.08, 0.09, 0.10], "unconstrained": [0.03, 0.04, 0.05],
                          "no_contrast": [0.04, 0.04, 0.04]})
    text = " ".join(R._renorm_reading(B.renorm_summary(rejected), rejected, sft, matched))
    assert "bias is not why rounds are rejected" in text and "mass leaving the allowed set" in text
    assert "moves θ away from θ0 even without a contrast" in text and "-10.00% to -10.00%" in text
    kept = _ablation({"renormalised": [0.01, 0.0, 0.01], "unconstrained": [0.03, 0.04, 0.05],
                      "no_contrast": [-0.01, -0.01, -0.01]}, q_share=0.9)
    text = " ".join(R._renorm_reading(B.renorm_summary(kept), kept, sft, matched))
    assert "bias is not why" not in text and "Renormalising keeps more rounds (3 vs 0 of 3)" in text
    assert "mass leaving" not in text and "even without a contrast" not in text
