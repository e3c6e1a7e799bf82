"""LimiX's block and readout: S→N→F and F→S→N share one parameter set, queries are
independent, the context is a set."""
import numpy as np
import pytest
import torch

from assets.limix import data, model


def build(embedding="rabel", arch="snf", seed=0, **kw):
    torch.manual_seed(seed)
    return model.LimiX(model.LimiXConfig(embedding=embedding, arch=arch, **kw)).eval()


def task(seed=0, b=2, r=30, d=5, n=20):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(b, r, d, generator=g) * 10 ** torch.randn(1, 1, d, generator=g)
    y = torch.randint(0, 3, (b, n), generator=g)
    return x, y, n


@pytest.mark.parametrize("embedding", ["linear", "rabel", "mlp", "periodic", "ple"])
def test_snf_and_fsn_have_equal_state_dicts(embedding):
    snf, fsn = build(embedding, "snf").state_dict(), build(embedding, "fsn").state_dict()
    assert snf.keys() == fsn.keys()
    assert all(torch.equal(snf[k], fsn[k]) for k in snf)
    assert model.count_parameters(build(embedding, "snf")) == model.count_parameters(build(embedding, "fsn"))


def test_the_order_changes_the_function():
    x, y, n = task()
    with torch.no_grad():
        assert not torch.allclose(build(arch="snf")(x, y, n), build(arch="fsn")(x, y, n))


@pytest.mark.parametrize("arch", ["snf", "fsn"])
@pytest.mark.parametrize("pool", [False, True])
def test_no_query_row_affects_another(arch, pool):
    m = build(arch=arch, pool=pool)
    x, y, n = task(1)
    x2 = x.clone()
    x2[:, n + 3] = torch.randn(2, 5) * 1e3
    x2[:, n + 5, 1] = float("nan")
    with torch.no_grad():
        a, b = m(x, y, n), m(x2, y, n)
    keep = [i for i in range(x.shape[1] - n) if i not in (3, 5)]
    assert torch.allclose(a[:, keep], b[:, keep], atol=1e-5)
    assert not torch.allclose(a[:, 3], b[:, 3])


@pytest.mark.parametrize("arch", ["snf", "fsn"])
def test_context_permutation_invariance(arch):
    m = build(arch=arch)
    x, y, n = task(2)
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(3))
    xp = torch.cat([x[:, perm], x[:, n:]], 1)
    with torch.no_grad():
        assert torch.allclose(m(x, y, n), m(xp, y[:, perm], n), atol=1e-5)


def test_query_permutation_equivariance():
    m = build()
    x, y, n = task(4)
    perm = torch.randperm(x.shape[1] - n, generator=torch.Generator().manual_seed(5))
    xp = torch.cat([x[:, :n], x[:, n:][:, perm]], 1)
    with torch.no_grad():
        assert torch.allclose(m(x, y, n)[:, perm], m(xp, y, n), atol=1e-5)


def test_eval_predictions_are_deterministic_and_too_many_features_are_rejected():
    m = build(max_features=6)
    x, y, n = task(6)
    with torch.no_grad():
        assert torch.equal(m(x, y, n), m(x, y, n))
    with pytest.raises(ValueError, match="at most 6"):
        m(torch.randn(1, 10, 7), y[:1, :5], 5)


def test_loss_falls_on_a_fixed_batch():
    torch.manual_seed(0)
    m = model.LimiX(model.LimiXConfig(embedding="rabel", arch="snf", d_model=16, n_layers=1))
    batch = data.prior_stream(data.PriorConfig(), 0, "pretrain", 4)(0)
    opt = torch.optim.Adam(m.parameters(), 3e-3)
    first = float(model.task_loss(m, batch).detach())
    for _ in range(40):
        loss = model.task_loss(m, batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert float(loss.detach()) < 0.8 * first


def test_prior_batches_are_a_function_of_seed_stream_step_and_hold_every_class():
    cfg = data.PriorConfig()
    a, b = data.prior_stream(cfg, 0, "pretrain", 8)(3), data.prior_stream(cfg, 0, "pretrain", 8)(3)
    assert torch.equal(torch.nan_to_num(a["x"], 7.0), torch.nan_to_num(b["x"], 7.0))
    c = data.prior_stream(cfg, 0, "val", 8)(3)
    assert a["x"].shape != c["x"].shape or not torch.equal(torch.nan_to_num(a["x"]), torch.nan_to_num(c["x"]))
    for step in range(10):
        t = data.prior_batch(cfg, np.random.default_rng(step), 8)
        n, k = t["n_context"], t["n_classes"]
        assert 2 <= t["x"].shape[2] <= 8 and 32 <= t["x"].shape[1] <= 64 and 2 <= k <= 4
        for i in range(8):
            assert len(np.unique(t["y"][i, :n])) == k and len(np.unique(t["y"][i, n:])) == k
        assert np.array_equal(np.isnan(t["x"]), t["missing"])


@pytest.mark.parametrize("name", ["logreg", "knn", "random_forest", "hist_gbm"])
def test_baselines_return_query_probabilities(name):
    from assets.limix import baselines

    rng = np.random.default_rng(0)
    x = rng.standard_normal((60, 4))
    y = (x[:, 0] + 0.3 * rng.standard_normal(60) > 0).astype(int)
    x[5, 2] = np.nan
    p = baselines.fit_predict(name, x[:40], y[:40], x[40:], 2)
    assert p.shape == (20, 2) and np.allclose(p.sum(1), 1)
    assert ((p[:, 1] > 0.5) == y[40:]).mean() >= 0.7
