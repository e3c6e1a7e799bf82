"""Option B, the explicit critic: the f-GAN critic objective, its optimum, the unbiased policy-gradient
estimators, the gpu profile's dispat_critic round at tiny size on the CPU, and the device plumbing."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from assets.dispat import critic as C
from assets.dispat import method as M
from assets.dispat import runs
from assets.dispat.params import DispatParams
from resources.profiles import load_params
from tests.conftest import DEVICES, rerun, run_device_check, typed_params

F = ("js", "kl", "chi2")
P = np.array([0.4, 0.25, 0.15, 0.12, 0.08])
Q = np.array([0.1, 0.2, 0.3, 0.15, 0.25])


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    yield


def typed(profile: str) -> DispatParams:
    return typed_params(DispatParams, "dispat", profile)


# ------------------------------------------------------------------------------ critic objective
@pytest.mark.parametrize("f", F)
def test_critic_objective_at_the_optimal_critic_is_minus_the_divergence(f):
    """At v = log P/Q (T = f′(P/Q)) the f-GAN critic loss is −D_f(P‖Q); any other critic does worse."""
    p, q = torch.tensor(P, dtype=torch.float64), torch.tensor(Q, dtype=torch.float64)
    v = torch.log(p / q)
    assert float(C.critic_loss(f, v, v, p, q)) == pytest.approx(-M.f_divergence(f, P, Q), abs=1e-12)
    assert torch.allclose(C.critic_T(f, v), M.f_prime_log(f, v))            # T* = f′(P/Q)
    rng = np.random.default_rng(0)
    for _ in range(20):
        w = v + torch.from_numpy(rng.normal(0, 0.5, 5))
        assert float(C.critic_loss(f, w, w, p, q)) > -M.f_divergence(f, P, Q)
    # the reward is f*(T): f*(f′(r)) = r f′(r) − f(r)
    r = p / q
    assert torch.allclose(C.reward(f, v), r * M.f_prime_log(f, v) - M.f_value(f, r))


@pytest.mark.parametrize("f", F)
def test_critic_on_a_two_distribution_toy_converges_to_the_optimal_T(f):
    """D_φ (the MLP) on one-hot features of samples of P (real) and Q (generated) learns T ≈ f′(P/Q)."""
    rng = np.random.default_rng(0)
    eye = torch.eye(5)
    real = eye[torch.from_numpy(rng.choice(5, 4000, p=P))]
    fake = eye[torch.from_numpy(rng.choice(5, 4000, p=Q))]
    torch.manual_seed(0)
    critic = C.Critic(5, 32)
    t_star = C.critic_T(f, torch.log(torch.tensor(P / Q, dtype=torch.float32)))
    with torch.no_grad():
        start = (C.critic_T(f, critic(eye)) - t_star).abs().max().item()
    curve = C.train_critic(critic, real, fake, f, 600, 256, 0.01, 0.0, rng)
    with torch.no_grad():
        err = (C.critic_T(f, critic(eye)) - t_star).abs().max().item()
    assert err < 0.1 * t_star.abs().max().item() + 0.05 and err < start / 4
    # its estimate D̂_f = −loss approaches D_f(P‖Q) from the sampled batches
    assert np.mean(curve[-100:]) == pytest.approx(M.f_divergence(f, P, Q), rel=0.1)


# ------------------------------------------------------------------------------ policy gradient
def _per_sample_grads(f, theta, theta_t, v, baseline, real_share, xs):
    """∇_θ of pg_surrogate on a single row x, for each x in xs: (len(xs), K)."""
    out = []
    ref = torch.log_softmax(theta_t, 0).detach()
    for x in xs:
        th = theta.clone().requires_grad_(True)
        logp = torch.log_softmax(th, 0)
        idx = torch.tensor([x])
        loss, _ = C.pg_surrogate(f, logp[idx], ref[idx], v[idx], logp[idx], ref[idx], v[idx], baseline, real_share)
        loss.backward()
        out.append(th.grad.clone())
    return torch.stack(out)


@pytest.mark.parametrize("f", F)
def test_policy_gradient_estimators_are_unbiased_on_a_categorical_toy(f):
    """J(θ) = −E_{p_θ}[R_φ]: the generated-row estimator (rows of p_θt, any critic) and the real-row
    estimator (rows of P, importance weights e^{−v} of the exact critic) both have expectation ∇J,
    also away from θt (importance ratio ρ); a baseline adds no bias; a sampled batch agrees; and at
    θ = θt with the exact critic ∇J = ∇_θ D_f(P‖p_θ)."""
    dt = torch.float64
    theta_t = torch.log(torch.tensor(Q, dtype=dt))
    theta = theta_t + torch.tensor([0.3, -0.2, 0.1, 0.0, -0.4], dtype=dt)
    q_t = torch.softmax(theta_t, 0)
    p = torch.tensor(P, dtype=dt)

    def exact(th0, v):
        th = th0.clone().requires_grad_(True)
        (-(torch.softmax(th, 0) * C.reward(f, v)).sum()).backward()
        return th.grad

    v_any = torch.tensor([0.5, -1.0, 0.2, 1.5, -0.3], dtype=dt)             # an arbitrary critic
    v_opt = torch.log(p / q_t)                                               # the exact critic
    xs = range(5)
    for baseline in (0.0, 0.7):
        gen = (q_t[:, None] * _per_sample_grads(f, theta, theta_t, v_any, baseline, 0.0, xs)).sum(0)
        assert torch.allclose(gen, exact(theta, v_any), atol=1e-12)
        real = (p[:, None] * _per_sample_grads(f, theta, theta_t, v_opt, baseline, 1.0, xs)).sum(0)
        assert torch.allclose(real, exact(theta, v_opt), atol=1e-12)
    # a sampled batch (the estimator as used): close to the exact gradient
    rng = np.random.default_rng(0)
    n = 40000
    xg = torch.from_numpy(rng.choice(5, n, p=Q))
    xd = torch.from_numpy(rng.choice(5, n, p=P))
    th = theta.clone().requires_grad_(True)
    logp, ref = torch.log_softmax(th, 0), torch.log_softmax(theta_t, 0)
    loss, _ = C.pg_surrogate(f, logp[xd], ref[xd], v_opt[xd], logp[xg], ref[xg], v_opt[xg], 0.2, 0.5)
    loss.backward()
    target = exact(theta, v_opt)
    assert (th.grad - target).norm() < 0.05 * target.norm() + 1e-3
    # at θ = θt with the exact critic the estimated gradient is that of D_f(P‖p_θ)
    th = theta_t.clone().requires_grad_(True)
    q = torch.softmax(th, 0)
    (q * M.f_value(f, p / q)).sum().backward()
    assert torch.allclose(exact(theta_t, v_opt), th.grad, atol=1e-12)


# ------------------------------------------------------------------------------ params, runs, gpu profile
def test_critic_is_off_except_at_gpu_and_adds_a_run_per_cell():
    for profile in ("smoke", "cpu"):
        p = typed(profile)
        assert not p.critic.enabled
        assert not any(runs.is_critic(f) for _, _, f in runs.dispat_runs(p))
    g = typed("gpu")
    assert g.critic.enabled
    labels = [f for _, _, f in runs.dispat_runs(g)]
    assert labels.count("js_critic") == len(runs.cells(g))
    assert runs.method_name("js_critic", g) == "dispat_critic" and runs.f_of("js_critic") == "js"
    assert runs.method_name("kl", g) == "dispat_kl" and runs.method_name("js", g) == "dispat"
    # the default is "off" without the key (base, smoke, cpu carry no critic key: their params hash is unchanged)
    assert "critic" not in load_params("dispat", "cpu") and "critic" not in load_params("dispat", "smoke")


def _tiny_gpu_job(tmp_path, label: str):
    from assets.dispat import data as D
    from assets.dispat import serialize as S
    from resources.artifacts import save_state_dict

    g = typed("gpu")
    p = dataclasses.replace(
        g, self_play=dataclasses.replace(g.self_play, rounds=2, steps=2),
        train=dataclasses.replace(g.train, batch_size=4),
        critic=dataclasses.replace(g.critic, steps=4, batch=8))
    sizes = D.SplitSizes(40, 12, 12, 0.15)
    rng = np.random.default_rng(0)
    fr = D.make_splits("synthetic_transactions", D.raw_table("synthetic_transactions", sizes, rng), sizes, rng)
    schema = D.fit_schema(fr[fr.split == "train"], runs.TEXT_COLUMNS["synthetic_transactions"])
    rows = S.format_rows(fr, schema)
    train = [r for r, s in zip(rows, fr.split) if s == "train"]
    val = [r for r, s in zip(rows, fr.split) if s == "val"]
    vocab = S.fit_vocab(train, schema, 512)
    model = runs._model(p, vocab, init_seed=0)
    assert model.config.n_layers == 8 and model.config.d_model == 384
    path = tmp_path / "theta0.pt"
    save_state_dict(path, runs._cpu_state(model), {})
    sampled = runs.sample_job({"params": p, "threads": 1, "vocab": vocab.to_json(), "train": train, "state": str(path),
                               "n": 8, "sample_seed": 1})
    assert all(x is not None for x in sampled["parsed"])
    extra = {"label": label, "critic": p.critic} if runs.is_critic(label) else {}
    job = {"params": p, "f": runs.f_of(label), **extra, "threads": 1, "device": "cpu", "vocab": vocab.to_json(),
           "train": train, "val": val, "state": str(path), "round0_ids": sampled["ids"], "n_gen": 8,
           "stream_seed": 3, "val_seed": 4}
    return p, job


def test_gpu_profile_runs_dispat_critic_rounds_at_tiny_size_on_the_cpu(tmp_path):
    """The gpu profile (8 layers, d = 384, critic on) through runs.dispat_job: two rounds of option B
    (critic fit + policy steps) on a tiny table; finite records under the run label, a critic state."""
    p, job = _tiny_gpu_job(tmp_path, "js_critic")
    out = runs.dispat_job(job)
    recs = out["records"]
    assert [r["round"] for r in recs] == [0, 1] and {r["f"] for r in recs} == {"js_critic"}
    for r in recs:
        assert np.isfinite([r["divergence"], r["divergence_first"], r["u_data"], r["u_gen"], r["val_nll_after"]]).all()
    state = out["critic_state"]
    assert state["net.0.weight"].shape == (p.critic.hidden, 2 * p.model.d_model) and state["mean"].device.type == "cpu"
    assert all(v.device.type == "cpu" for v in out["state"].values())
    # the implicit method on the same job has no critic state and keeps its f as the label
    one_round = dataclasses.replace(p, self_play=dataclasses.replace(p.self_play, rounds=1))
    plain = runs.dispat_job({**{k: v for k, v in job.items() if k not in ("label", "critic")}, "params": one_round})
    assert "critic_state" not in plain and [r["f"] for r in plain["records"]] == ["js"]


def test_device_cpu_is_the_default_and_gives_the_same_numbers():
    """Passing device='cpu' explicitly changes nothing (the lead's byte-identity rerun covers the group)."""
    from assets.dispat import data as D
    from assets.dispat import serialize as S

    p = typed("smoke")
    sizes = D.SplitSizes(30, 10, 10, 0.15)
    rng = np.random.default_rng(0)
    fr = D.make_splits("fair", D.raw_table("fair", sizes, rng), sizes, rng)
    schema = D.fit_schema(fr[fr.split == "train"], ())
    rows = S.format_rows(fr, schema)
    train = [r for r, s in zip(rows, fr.split) if s == "train"]
    vocab = S.fit_vocab(train, schema, 512)
    base = {"params": p, "threads": 1, "vocab": vocab.to_json(), "train": train, "val": train[:8], "init_seed": 5,
            "stream_seed": 6, "val_seed": 7, "steps": 3, "batch": 4, "lr": 1e-3}
    a, b = runs.sft_job(base), runs.sft_job({**base, "device": "cpu"})
    assert a["curve"] == b["curve"] and a["val_nll"] == b["val_nll"]
    assert all(torch.equal(a["state"][k], b["state"][k]) for k in a["state"])


def test_report_shows_the_critic_rows_only_when_it_ran():
    import pandas as pd

    from assets.dispat import benchmark, report

    rows = []
    for d in ("fair", "wine"):
        for s in (0, 1):
            for m, auc in (("dispat", 0.70), ("dispat_critic", 0.72 + 0.01 * s), ("anollm_matched", 0.69),
                           ("dispat_kl", 0.71)):
                rows.append({"dataset": d, "seed": s, "method": m, "auroc": auc, "auprc": auc / 2, "fpr": 0.05})
    th = pd.DataFrame(rows)
    rounds = pd.DataFrame([{"dataset": "fair", "seed": 0, "f": f, "round": 0, "divergence_first": 0.1,
                            "divergence": 0.2, "u_data": 0.3, "u_gen": -0.3, "val_nll_before": 5.0,
                            "val_nll_after": 5.01, "accepted": True} for f in ("js", "js_critic")])
    table = benchmark.critic_table(th)
    assert list(table["dataset"]) == ["fair", "wine"]
    assert np.allclose(table["critic_minus_dispat"], 0.025) and list(table["critic_won_cells"]) == [2, 2]
    section = report._critic_section(th, rounds)
    assert section[0].startswith("## Explicit critic") and "js_critic" in section[-2]
    # the f variants observation counts f variants only, not the critic
    p = typed("smoke")
    assert "dispat_critic" not in benchmark.f_variants(th, p).measured_value
    assert "kl: 0.7100" in benchmark.f_variants(th, p).measured_value
    # without dispat_critic (base / smoke / cpu) the report has no critic section
    assert report._critic_section(th[th["method"] != "dispat_critic"], rounds[rounds["f"] == "js"]) == []


@pytest.mark.parametrize("device", DEVICES)
def test_device_check_script_runs_and_cpu_parity_is_exact(tmp_path, device):
    """benchmarks/dispat_device_check.py (the gpu-machine check) end to end at tiny size."""
    code, found = run_device_check("dispat", device, tmp_path)
    assert code == 0
    assert found["parity_ok"] and found["device_parse_rate"] == 1.0 and found["critic_round_finite"]
    if device == "cpu":
        assert found["score_max_rel_diff"] == 0.0 and found["sft_loss_rel_diff"] == 0.0


def test_critic_enabled_through_the_group_scores_and_reports_dispat_critic(smoke, tmp_path):
    """The wiring end to end (smoke sizes, critic switched on as at gpu): policy_dispat adds the js_critic run
    (its gate passes), scores / thresholds carry dispat_critic, the report has its report-only section."""
    import pandas as pd

    run = smoke("dispat")
    on = {"dispat": {"critic": {"enabled": True, "steps": 20, "batch": 32}}}
    seen = rerun(run, ["policy_dispat", "scores", "thresholds", "benchmark_report"], tmp_path / "data",
                 params_overrides=on)
    assert seen["success"] and seen["checks"]["rounds_parse_no_collapse"] and seen["checks"]["validation_fpr"]
    root = tmp_path / "data"
    rounds = pd.read_parquet(root / "dispat" / "policy_dispat.parquet")
    assert set(rounds["f"]) == {"js", "kl", "js_critic"}
    assert (root / "dispat" / "checkpoints" / "critic_js_critic_synthetic_transactions_seed0.pt").exists()
    th = pd.read_parquet(root / "dispat" / "thresholds.parquet")
    assert "dispat_critic" in set(th["method"])
    text = (root / "reports" / "dispat" / "REPORT.md").read_text()
    assert "## Explicit critic (option B, report-only)" in text
