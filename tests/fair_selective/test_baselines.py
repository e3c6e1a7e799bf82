"""The gpu-profile baselines ELBERT-PO, FOCOPS and SELLF-censored: their mathematics on hand
cases (ELBERT's bias and the sign of its gradient, FOCOPS's per-sample loss, its ν step and
cost returns, the censored sampling and the overlap it breaks), that none reads a hidden label,
and one tiny end-to-end run of each through the runs layer."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from assets.common.params import parse
from assets.fair_selective import agents as ag
from assets.fair_selective import benchmark, plots, report, runs
from assets.fair_selective import env as envs
from assets.fair_selective import fairness as fm
from assets.fair_selective.params import FairSelectiveParams
from resources.profiles import load_params

# ELBERT ----------------------------------------------------------------------------------


def test_elbert_bias_on_a_hand_case():
    # U = [30, 10], B = [60, 40] per episode → z = [0.5, 0.25], bias 0.25, ∂(bias²)/∂z = 2·0.25·[+1, −1]
    z, bias, grad_h = ag.elbert_bias(np.array([30.0, 10.0]), np.array([60.0, 40.0]))
    assert z.tolist() == pytest.approx([0.5, 0.25])
    assert bias == pytest.approx(0.25)
    assert grad_h.tolist() == pytest.approx([0.5, -0.5])
    # the arg-max may be either group
    _, bias, grad_h = ag.elbert_bias(np.array([5.0, 30.0]), np.array([50.0, 60.0]))
    assert bias == pytest.approx(0.4) and grad_h.tolist() == pytest.approx([-0.8, 0.8])
    # equal rates: no bias, no gradient
    _, bias, grad_h = ag.elbert_bias(np.array([10.0, 20.0]), np.array([40.0, 80.0]))
    assert bias == 0.0 and grad_h.tolist() == [0.0, 0.0]


def test_elbert_fair_term_is_the_chain_rule_of_the_squared_bias():
    """With A_U, A_B replaced by directional changes dU, dB, the fair term is the directional
    derivative of h = (z_max − z_min)², z_g = U_g / B_g (finite differences)."""
    rng = np.random.default_rng(0)
    z_u, z_b = np.array([30.0, 10.0]), np.array([60.0, 40.0])

    def h(u, b):
        z = u / b
        return (z.max() - z.min()) ** 2

    for _ in range(20):
        d_u, d_b = rng.normal(size=2), rng.normal(size=2)
        eps = 1e-6
        numeric = (h(z_u + eps * d_u, z_b + eps * d_b) - h(z_u - eps * d_u, z_b - eps * d_b)) / (2 * eps)
        assert ag.elbert_fair_term(z_u, z_b, d_u, d_b) == pytest.approx(numeric, rel=1e-6, abs=1e-10)
    # sign: one more accepted positive in the advantaged group 0 widens the gap (term > 0), so an
    # action that raises it gets a lower fair advantage; one in group 1 narrows it (term < 0)
    assert ag.elbert_fair_term(z_u, z_b, np.array([1.0, 0.0]), np.zeros(2)) > 0
    assert ag.elbert_fair_term(z_u, z_b, np.array([0.0, 1.0]), np.zeros(2)) < 0
    # accepting a negative of group 0 (B_0 up, U_0 unchanged) lowers z_0: it narrows the gap
    assert ag.elbert_fair_term(z_u, z_b, np.zeros(2), np.array([1.0, 0.0])) < 0


def test_elbert_advantage_combines_standardised_streams():
    rng = np.random.default_rng(1)
    cfg = ag.AgentConfig(kind="elbert", beta1=3.0)
    adv, adv_u, adv_b = rng.normal(size=(2, 8)), rng.normal(size=(2, 2, 8)), rng.normal(size=(2, 2, 8))
    z_u, z_b = np.array([30.0, 10.0]), np.array([60.0, 40.0])
    out = ag.elbert_advantage(cfg, adv, adv_u, adv_b, z_u, z_b)
    expect = ag.standardise(adv) - 3.0 * ag.elbert_fair_term(z_u, z_b, ag.standardise(adv_u), ag.standardise(adv_b))
    assert out.shape == (2, 8) and np.allclose(out, expect)
    # row by row, the fair term of a row equals the per-group sum written out by hand
    _, _, grad_h = ag.elbert_bias(z_u, z_b)
    su, sb = ag.standardise(adv_u), ag.standardise(adv_b)
    hand = sum(grad_h[g] * (su[g, 0] / z_b[g] - z_u[g] / z_b[g] ** 2 * sb[g, 0]) for g in (0, 1))
    assert np.allclose(out[0], ag.standardise(adv)[0] - 3.0 * hand)
    # a group never accepted in the rollout (B_g = 0): the rate is undefined, only the reward term is left
    assert np.allclose(ag.elbert_advantage(cfg, adv, adv_u, adv_b, z_u, np.array([60.0, 0.0])), ag.standardise(adv))


# FOCOPS ----------------------------------------------------------------------------------


def test_focops_per_sample_loss_on_a_known_input():
    import torch

    logp_old = torch.log(torch.tensor([[0.55, 0.45], [0.55, 0.45], [0.8, 0.2]], dtype=torch.float64))
    logits = torch.zeros(3, 2, dtype=torch.float32, requires_grad=True)     # π_θ = (0.5, 0.5)
    actions = torch.tensor([1, 0, 1])
    adv = torch.tensor([1.0, -1.0, 1.0], dtype=torch.float64)
    cadv = torch.tensor([2.0, 0.0, 0.0], dtype=torch.float64)
    loss = ag.focops_loss(torch, logits, logp_old, actions, adv, cadv, nu=0.25, lam=1.5, eta=0.02)
    kl = 0.5 * math.log(0.5 / 0.55) + 0.5 * math.log(0.5 / 0.45)             # 0.005025 ≤ η
    # row 0: ratio 0.5/0.45, Â − ν·Â_C = 1 − 0.5; row 1: ratio 0.5/0.55, Â = −1; row 2: KL 0.223 > η → 0
    assert loss[0].item() == pytest.approx(kl - (0.5 / 0.45) * 0.5 / 1.5, abs=1e-7)
    assert loss[1].item() == pytest.approx(kl + (0.5 / 0.55) / 1.5, abs=1e-7)
    assert loss[2].item() == 0.0
    loss.sum().backward()
    assert logits.grad[2].abs().max().item() == 0.0 and logits.grad[0].abs().max().item() > 0
    # at π_θ = π_old: KL = 0, ratio = 1, the loss is −(Â − ν·Â_C)/λ
    same = ag.focops_loss(torch, logp_old[:1].float(), logp_old[:1], actions[:1], adv[:1], cadv[:1], 0.25, 1.5, 0.02)
    assert same.item() == pytest.approx(-(1.0 - 0.5) / 1.5, abs=1e-7)


def test_focops_nu_step_is_projected_gradient_ascent():
    assert ag.focops_nu_update(0.0, avg_cost=12.0, cost_limit=10.0, lr=0.01, nu_max=2.0) == pytest.approx(0.02)
    assert ag.focops_nu_update(1.99, avg_cost=300.0, cost_limit=5.0, lr=0.01, nu_max=2.0) == 2.0
    assert ag.focops_nu_update(0.01, avg_cost=0.0, cost_limit=5.0, lr=0.01, nu_max=2.0) == 0.0
    assert ag.focops_nu_update(0.5, avg_cost=4.0, cost_limit=5.0, lr=0.01, nu_max=2.0) == pytest.approx(0.49)


def test_segment_cost_returns_close_at_done_and_at_the_cap():
    # γ = 0.5, cap 2: [1 + 0.5] closes at the done, [1 + 0.5] at the cap, the fifth cost stays open
    closed, carry = ag.segment_cost_returns(np.ones(5), np.array([0, 1, 0, 0, 0], bool), 0.5, 2)
    assert closed == pytest.approx([1.5, 1.5]) and carry == (1.0, 1)
    closed, carry = ag.segment_cost_returns(np.array([2.0]), np.array([False]), 0.5, 2, carry)
    assert closed == pytest.approx([2.0]) and carry == (0.0, 0)


def test_batch_normalisation_uses_the_population_std():
    v = np.array([1.0, 2.0, 3.0, 4.0])
    out = ag.normalise_batch(v)
    assert out.mean() == pytest.approx(0.0) and out.std() == pytest.approx(1.0, abs=1e-5)
    assert out[0] == pytest.approx(-1.5 / (np.std(v) + 1e-6))


# SELLF-censored --------------------------------------------------------------------------


def test_censoring_forces_a_reject_below_the_threshold():
    accept = np.array([0.1, 0.2499, 0.25, 0.9])
    eff = ag.censored_accept(accept, 0.25)
    assert eff.tolist() == [0.0, 0.0, 0.25, 0.9]
    u = np.random.default_rng(0).random((20_000, 1))
    sampled = u < eff
    assert not sampled[:, :2].any() and 0.23 < sampled[:, 2].mean() < 0.27
    assert ag.AgentConfig(kind="sellf_censored", censor=0.25).threshold == 0.025
    with pytest.raises(ValueError, match="censor"):
        ag.AgentConfig(kind="sellf_censored", censor=1.0)


def test_censoring_breaks_overlap():
    """Where every past π < censor nothing is ever accepted: the real coverage is 0, so the
    importance weights of the rejected region are undefined, while the raw a_K (which the
    reference uses) stays positive."""
    history = np.array([[0.2, 0.6], [0.1, 0.7], [0.24, 0.4]])     # 3 past policies × 2 states
    raw = fm.coverage(history)
    effective = fm.coverage(ag.censored_accept(history, 0.25))
    assert raw[0] == pytest.approx(1 - 0.8 * 0.9 * 0.76) and raw[0] > 0
    assert effective[0] == 0.0 and effective[1] == pytest.approx(raw[1])
    with pytest.raises(fm.FairnessInputError, match="a_K = 0"):
        fm.importance_weights(np.array([0.2, 0.6]), effective)


def test_censored_training_never_labels_a_censored_state(one_torch_thread):
    spec = envs.lending_spec()
    pool = envs.sample_pool(spec, 150, np.random.default_rng(0))
    cfg = ag.AgentConfig(kind="sellf_censored", beta1=2.0, beta2=0.05, censor=0.5, total_steps=384, n_steps=128,
                         epochs=2, predictor_steps=5)
    out = ag.train_agent(spec, pool, cfg, seed=3, window=100, horizon=150, resource0=50.0)
    history = out["state"]["history_accept"].numpy()               # every collecting policy (3 ≤ 10)
    assert len(history) == len(out["curve"])
    counts = out["state"]["memory_counts"].numpy()
    censored = (history < cfg.censor).all(axis=0)
    drawn = np.isin(np.arange(spec.n_states), pool)
    assert (censored & drawn).any()                                   # the test is not vacuous
    assert counts[censored].sum() == 0                                # no label, so no overlap there
    assert counts[~censored].sum() == out["memory_rows"] > 0
    assert all(0 < r["censored_share"] < 1 for r in out["curve"])


# wiring ------------------------------------------------------------------------------------


def test_baseline_fields_stay_out_of_the_other_agents_sidecars():
    plain = ag.AgentConfig(kind="sellf").as_dict()
    assert not set(ag.BASELINE_FIELDS) & set(plain)
    assert ag.AgentConfig(**plain) == ag.AgentConfig(kind="sellf")
    cens = ag.AgentConfig(kind="sellf_censored", censor=0.25)
    assert cens.as_dict()["censor"] == 0.25 and ag.AgentConfig(**cens.as_dict()) == cens


def test_only_the_gpu_profile_trains_the_new_baselines():
    for profile in ("smoke", "cpu"):
        p = parse(FairSelectiveParams, load_params("fair_selective", profile), profile)
        assert not set(p.agents.grid) & set(ag.GPU_KINDS)
    p = parse(FairSelectiveParams, load_params("fair_selective", "gpu"), "gpu")
    table = runs.env_spec_table(p)
    pools = runs.applicant_pools(p, table, lambda *k: np.random.default_rng(0))
    jobs = runs.training_jobs(p, table, pools, lambda *k: 0)
    by_kind = {k: [j for j in jobs if j["kind"] == k] for k in ag.GPU_KINDS}
    assert len({j["beta1"] for j in by_kind["elbert"]}) == 7
    assert {(j["cfg"].beta1, j["cfg"].beta2) for j in by_kind["focops"]} == {
        (b, n) for b in (5.0, 10.0, 15.0) for n in (2.0, 5.0, 20.0, 100.0)}
    assert {j["cfg"].censor for j in by_kind["sellf_censored"]} == {0.25}
    assert len({(j["beta1"], j["beta2"]) for j in by_kind["sellf_censored"]}) == 12
    assert all(j["cfg"].censor == 0.0 for j in jobs if j["kind"] != "sellf_censored")


@pytest.mark.parametrize("kind", ["elbert", "focops", "sellf_censored"])
def test_new_baselines_never_read_hidden_labels(kind, one_torch_thread):
    spec = envs.lending_spec()
    pool = envs.sample_pool(spec, 150, np.random.default_rng(0))
    cfg = ag.AgentConfig(kind=kind, beta1=5.0, beta2=2.0 if kind == "focops" else 0.05,
                         censor=0.3 if kind == "sellf_censored" else 0.0, total_steps=384, n_steps=128, epochs=2,
                         predictor_steps=5)
    clean, poisoned = (ag.train_agent(spec, pool, cfg, seed=3, window=100, horizon=150, resource0=50.0,
                                      poison_hidden=p) for p in (False, True))
    for key in clean["state"]:
        assert clean["state"][key].equal(poisoned["state"][key]), key
    assert [r["delta_true"] for r in clean["curve"]] != [r["delta_true"] for r in poisoned["curve"]]


def test_new_baselines_train_select_and_evaluate_end_to_end(one_torch_thread):
    """Each new kind at the smoke size (768 steps, N = T = W = 200) through the runs layer:
    training job, checkpoint row, selection, sampled-action evaluation, per-seed table, report
    table and figures."""
    p = parse(FairSelectiveParams, load_params("fair_selective", "smoke"), "smoke")
    grid = {"elbert": (200.0,), "focops": (5.0,), "sellf_censored": (2.0,)}
    p = dataclasses.replace(p, envs=("lending",), seeds=(0,), agents=dataclasses.replace(p.agents, grid=grid))
    table = runs.env_spec_table(p)
    pools = runs.applicant_pools(p, table, lambda *k: np.random.default_rng(0))
    jobs = runs.training_jobs(p, table, pools, lambda *k: 5)
    assert [j["kind"] for j in jobs] == ["elbert", "focops", "sellf_censored"]
    rows, outs = [], []
    for job in jobs:
        out = runs.train_job(job)
        outs.append(out)
        rows.append(runs.checkpoint_row(job, out, {"checkpoint": "x", "md5": "y"}))
    ckpt = pd.DataFrame(rows)
    assert ckpt["finite"].all() and (ckpt["iterations"] == 3).all()
    assert ckpt.set_index("agent")["uses_predictor"].to_dict() == {"elbert": False, "focops": False,
                                                                  "sellf_censored": True}
    assert int(ckpt.loc[ckpt["agent"] == "sellf_censored", "memory_rows"].iloc[0]) > 0
    elbert, focops = outs[0], outs[1]
    assert elbert["state"]["extra.weights.2"].shape == (4, 64, 1)
    assert focops["state"]["extra.weights.2"].shape == (1, 64, 1)
    # TPR on accepted rows is ≡ 0: FOCOPS's cost is the 1e-8 jitter, so ν never leaves 0
    assert all(r["nu"] == 0.0 and r["avg_cost"] < 1e-5 for r in focops["curve"] if not np.isnan(r["avg_cost"]))
    assert all(1 <= r["epochs_run"] <= 2 for r in focops["curve"])
    assert all(np.isfinite(r["benefit_gap"]) for r in elbert["curve"])
    selected = runs.select_configs(ckpt, p.omega)
    assert len(selected) == 3
    frames = []
    for job, out, row in zip(jobs, outs, ckpt.itertuples()):
        spec = envs.lending_spec(p.cost, p.shares)
        ev = runs.eval_job_spec(p, row, out["state"], {"config": job["cfg"].as_dict()}, job["pool"], 11)
        assert ev["cfg"] == job["cfg"]
        assert np.allclose(ev["tables"]["accept"], out["tables"]["accept"])
        frames.append(runs.eval_job(ev))
        assert spec.n_states == len(ev["tables"]["accept"])
    rollouts = pd.concat(frames, ignore_index=True)
    assert not (rollouts["label"].notna() & (rollouts["action"] == 0)).any()
    per_seed = benchmark.per_seed(rollouts, p.resource0)
    assert set(per_seed["agent"]) == set(ag.GPU_KINDS)
    shown = report.agent_table(per_seed, 50)
    assert set(shown["agent"]) == set(ag.GPU_KINDS)
    for fig in (plots.training_curves(ckpt, selected), plots.fairness_vs_profit(per_seed)):
        labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
        assert sum(k in " ".join(labels) for k in ag.GPU_KINDS) == 3


def test_censored_evaluation_rejects_below_the_threshold():
    spec = envs.lending_spec()
    pool = envs.sample_pool(spec, 100, np.random.default_rng(0))
    tables = {"accept": np.full(spec.n_states, 0.2), "pred": np.full(spec.n_states, 0.5)}
    stats = [{"group": g, "bound": 0.1} for g in (0, 1)]
    cfg = ag.AgentConfig(kind="sellf_censored", censor=0.25)
    ev = runs.evaluate(spec, pool, tables, cfg, stats, seed=0, episodes=1, window=50, horizon=200, resource0=20.0,
                       log_every=1)
    assert (ev["action"] == 0).all() and len(ev) == 200
    plain = runs.evaluate(spec, pool, tables, dataclasses.replace(cfg, kind="sellf", censor=0.0), stats, seed=0,
                          episodes=1, window=50, horizon=200, resource0=20.0, log_every=1)
    assert plain["action"].mean() > 0.1
