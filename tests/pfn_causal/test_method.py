"""pfn_causal mathematics: the exponential space (closed form), the query encoding (v = 0 ≠ not
intervened), queries that cannot see each other, the interventional truth against a linear
closed form, the samplers' support, the baselines on a confounded SCM, MSF's acquisition (and its
nMSE ablation)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from assets.common.pfn import scm as S
from assets.common.pfn.train import stream_rng
from assets.pfn_causal import baselines as BL
from assets.pfn_causal import method as ME
from assets.pfn_causal import model as M
from assets.pfn_causal import prior as P
from assets.pfn_causal import runs

PRIOR = P.CausalPrior(scm=S.SCMPriorConfig(nodes=(5, 5)), n_covariates=4, context=(32, 48), queries=8)
PRE = P.QuerySpec(size_probs=(0.9, 0.1, 0.0, 0.0))


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    yield


@pytest.mark.parametrize("d", range(2, 11))
def test_complete_linear_dags_have_2_to_the_d_minus_1_distinct_interventional_means(d):
    out = runs.distinct_interventional_means(d, np.random.default_rng(d))
    assert out["subsets"] == 2 ** d - 1 and out["distinct_means"] == 2 ** d - 1
    assert out["covered_by_pi_pre"] == d + math.comb(d, 2)


def test_subsets_and_pi_pre_support():
    masks = P.all_subsets(4)
    assert masks.shape == (15, 4) and len({P.subset_key(m) for m in masks}) == 15
    assert [int(m.sum()) for m in masks[:5]] == [1, 1, 1, 1, 2]
    assert len(P.covered_subsets(PRE.size_probs, 4)) == 10
    assert P.subset_probability(masks[0], PRE.size_probs) == pytest.approx(0.9 / 4)
    assert P.subset_name(np.array([True, False, True, False])) == "x1+x3"


def test_pretraining_masks_follow_pi_pre_and_never_reach_three():
    masks = P.draw_masks(PRE, np.random.default_rng(0), (4000, 8), 4)
    sizes = masks.sum(-1).ravel()
    assert set(np.unique(sizes)) == {1, 2}
    assert abs(np.mean(sizes == 1) - 0.9) < 0.01
    keys = np.bincount((masks.reshape(-1, 4) * (1 << np.arange(4))).sum(1), minlength=16)
    assert abs(keys[1] / sizes.size - 0.225) < 0.01 and abs(keys[3] / sizes.size - 0.1 / 6) < 0.005


def test_pwf_spec_draws_only_its_target_with_values_around_v_star():
    spec = P.QuerySpec(size_probs=PRE.size_probs, picks=((0, 2, 3),), pick_frac=1.0, value_center=(0.5, -0.3, 0.8),
                       value_sd=0.25)
    rng = np.random.default_rng(1)
    masks = P.draw_masks(spec, rng, (2000, 8), 4)
    assert np.all(masks == np.array([True, False, True, True]))
    values = P.draw_values(spec, rng, masks)
    np.testing.assert_allclose(values[..., [0, 2, 3]].mean(axis=(0, 1)), [0.5, -0.3, 0.8], atol=0.01)
    np.testing.assert_allclose(values[..., [0, 2, 3]].std(axis=(0, 1)), 0.25, atol=0.01)
    assert np.all(values[..., 1] == 0)


def test_interventional_truth_matches_the_linear_closed_form():
    W = np.zeros((4, 4))
    W[0, 1], W[0, 3], W[1, 2], W[2, 3], W[1, 3] = 0.9, 0.7, -0.8, 0.6, 0.4
    bias = np.array([0.2, -0.1, 0.3, 0.0])
    scm = S.linear_scm(W, bias, np.array([1.0, 0.6, 0.5, 0.3]))
    perm = np.array([[2, 0, 1]])                         # column c shows node perm[c]
    ctx = P.Contexts(scms=scm, perm=perm, n=np.array([1]), x=np.zeros((1, 1, 3)), y=np.zeros((1, 1)),
                     fingerprints=[])
    masks = np.array([[[True, False, False], [False, True, True], [False, False, True]]])
    values = np.where(masks, np.array([[[0.5, -1.0, 1.2]]]), 0.0)
    truth = P.interventional_truth(ctx, masks, values, 20_000, np.random.default_rng(2))
    for q in range(3):
        node_mask = P.to_nodes(perm, masks[:, q])[0]
        node_val = P.to_nodes(perm, values[:, q])[0]
        exact = S.linear_interventional_mean(W, bias, node_mask, node_val)[3]
        assert abs(truth["mu"][0, q] - exact) < 3 * truth["se"][0, q] + 1e-9
    np.testing.assert_allclose(truth["obs_mean"][0], np.linalg.solve(np.eye(4) - W.T, bias)[3], atol=0.03)


def test_stream_regeneration_matches_the_training_batches():
    batch = P.build_tasks(PRIOR, PRE, stream_rng(5, "pretrain", 3), 6)
    assert P.stream_scm_fingerprints(PRIOR, stream_rng(5, "pretrain", 3), 6) == batch.fingerprints
    np.testing.assert_array_equal(P.stream_masks(PRIOR, PRE, stream_rng(5, "pretrain", 3), 6), batch.q_mask)
    again = P.build_tasks(PRIOR, PRE, stream_rng(5, "pretrain", 3), 6)
    np.testing.assert_array_equal(again.y, batch.y)
    # standardised on the valid context rows
    w = batch.ctx_valid
    assert np.allclose((batch.ctx_y * w).sum(1) / w.sum(1), 0, atol=1e-9)
    assert np.allclose(np.sqrt((batch.ctx_y ** 2 * w).sum(1) / w.sum(1)), 1, atol=1e-9)


def tiny_model(**kw) -> M.CausalPFN:
    return M.build_model(M.CausalPFNConfig(d_model=16, n_heads=2, n_layers=2, **kw), 0).eval()


def test_no_query_affects_another_and_value_zero_differs_from_not_intervened():
    model = tiny_model()
    batch = P.build_tasks(PRIOR, PRE, stream_rng(0, "t", 0), 2)
    t = M.tensors(batch)
    out = model(t["ctx_x"], t["ctx_y"], t["ctx_valid"], t["q_mask"], t["q_val"])
    q_mask, q_val = t["q_mask"].clone(), t["q_val"].clone()
    q_mask[:, 3] = torch.tensor([True, True, True, False])
    q_val[:, 3] = torch.tensor([0.0, 0.0, 0.0, 0.0])                       # v = 0 on three columns
    other = model(t["ctx_x"], t["ctx_y"], t["ctx_valid"], q_mask, q_val)
    torch.testing.assert_close(other[:, [0, 1, 2, 4, 5, 6, 7]], out[:, [0, 1, 2, 4, 5, 6, 7]])
    q_mask[:, 3] = False                                                  # the same zero values, not intervened
    untouched = model(t["ctx_x"], t["ctx_y"], t["ctx_valid"], q_mask, q_val)
    assert not torch.allclose(untouched[:, 3], other[:, 3])


def test_predictions_are_equivariant_to_the_units_of_the_data():
    model = tiny_model()
    ctx = P.draw_contexts(PRIOR, stream_rng(1, "t", 0), 3, n=40)
    masks = P.draw_masks(PRE, np.random.default_rng(0), (3, 8), 4)
    values = P.draw_values(PRE, np.random.default_rng(1), masks)
    a = M.predict(model, P.make_batch(ctx.x, ctx.y, ctx.valid, masks, values))
    scale, shift = np.array([2.0, 0.5, 3.0, 1.5]), np.array([1.0, -2.0, 0.0, 4.0])
    b = M.predict(model, P.make_batch(ctx.x * scale + shift, 10 * ctx.y - 3, ctx.valid, masks,
                                      np.where(masks, values * scale + shift, 0.0)))
    np.testing.assert_allclose(b["mean"], 10 * a["mean"] - 3, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(b["var"], 100 * a["var"], rtol=1e-4)


def test_gaussian_nll_closed_form_and_the_bar_head():
    model = tiny_model()
    out = torch.tensor([[[0.5, math.log(4.0)]]])
    expected = 0.5 * (math.log(2 * math.pi) + math.log(4.0) + (1.5 - 0.5) ** 2 / 4.0)
    assert float(model.nll(out, torch.tensor([[1.5]]))) == pytest.approx(expected, rel=1e-6)
    borders = np.linspace(-3, 3, 9)
    bar = M.build_model(M.CausalPFNConfig(d_model=16, n_heads=2, n_layers=1, head="bar", bins=8), 0, borders)
    batch = P.build_tasks(PRIOR, PRE, stream_rng(0, "t", 1), 2)
    loss = M.batch_loss(bar, batch)
    assert torch.isfinite(loss)
    assert np.isfinite(M.predict(bar, batch)["mean"]).all()


def test_acquisition_adds_a_hamming_bonus_and_never_repeats_a_pick():
    subsets = P.all_subsets(3)                                            # x1, x2, x3, x1+x2, x1+x3, x2+x3, all
    losses = np.array([1.0, 1.0, 1.0, 1.2, 1.2, 1.2, 1.3])
    assert np.argmax(ME.acquisition_scores(losses, subsets, [], 0.5)) == 6
    scores = ME.acquisition_scores(losses, subsets, [6], 0.5)
    assert scores[6] == -np.inf
    # x1 is 2 flips from x1+x2+x3: bonus 0.5 · 2/3; x1+x2 is 1 flip: 0.5 · 1/3
    assert scores[0] == pytest.approx(1.0 + 0.5 * 2 / 3) and scores[3] == pytest.approx(1.2 + 0.5 / 3)


@pytest.mark.parametrize("acquisition", ["loss", "nmse", "random"])
def test_msf_records_its_picks_and_trains_on_declared_subsets(acquisition):
    model = tiny_model()
    config = ME.MSFConfig(rounds=2, steps_per_round=2, replay=0.5, diversity=0.25, estimate_scms=4,
                          acquisition=acquisition, truth_draws=40)
    from assets.common.pfn.train import TrainConfig

    trace, record, losses = ME.meta_sampling_finetune(model, PRIOR, PRE, config, TrainConfig(steps=2, lr=1e-3), 0,
                                                      "msf", 4)
    picks = [r["subset_key"] for r in trace if r["picked"]]
    assert len(picks) == 2 and len(set(picks)) == 2 and len(losses) == 4
    assert set(record.masks) <= PRE.support(4) | set(picks)
    assert len(record.fingerprints) == 4 * 4


UNCOVERED_A = np.array([True, True, True, False])                         # x1+x2+x3


class ErrsWhereNLLIsLow(torch.nn.Module):
    """A stub 'model': the context mean of y on every subset but x1+x2+x3, where its mean is 5
    context sd off; its NLL is 0.5 there and 2.0 elsewhere. So x1+x2+x3 has the largest error of
    the mean and the smallest NLL."""

    def forward(self, ctx_x, ctx_y, ctx_valid, q_mask, q_val):
        on_a = (q_mask == torch.as_tensor(UNCOVERED_A)).all(-1).float()
        return torch.stack([5.0 * on_a, on_a], dim=-1)

    def moments(self, out):
        return out[..., 0], torch.ones_like(out[..., 0])

    def nll(self, out, y):
        return 2.0 - 1.5 * out[..., 1]


def test_nmse_acquisition_picks_the_subset_with_the_largest_mean_error_though_its_nll_is_lowest(monkeypatch):
    """The acquisition ablation (asset msf_ablation, regime msf_nmse): ranked by nMSE against
    Monte-Carlo truth, the subset whose mean is worst comes first; ranked by mean NLL (MSF as
    built), it comes last."""
    from assets.common.pfn.train import TrainConfig, TrainResult
    from assets.pfn_causal.params import PFNCausalParams
    from tests.conftest import typed_params

    subsets = P.all_subsets(4)
    a = int(np.flatnonzero((subsets == UNCOVERED_A).all(-1))[0])
    model = ErrsWhereNLLIsLow()
    nll = ME.subset_losses(model, PRIOR, subsets, np.random.default_rng(0), 4, 1.5)
    nmse = ME.subset_nmse(model, PRIOR, subsets, np.random.default_rng(0), 4, 1.5, 40)
    assert np.argmin(nll) == a and np.argmax(nmse) == a
    monkeypatch.setattr(ME, "run_training", lambda *args, **kwargs: TrainResult())   # the stub has no weights
    first = {}
    for acquisition in ("loss", "nmse"):
        config = ME.MSFConfig(rounds=1, steps_per_round=1, replay=0.5, diversity=0.0, estimate_scms=4,
                              acquisition=acquisition, truth_draws=40)
        trace, _, _ = ME.meta_sampling_finetune(model, PRIOR, PRE, config, TrainConfig(steps=1), 0, "msf", 4)
        first[acquisition] = next(r["subset"] for r in trace if r["picked"])
    assert first["nmse"] == "x1+x2+x3" and first["loss"] != "x1+x2+x3"
    # the asset's regime: MSF's schedule with the nMSE acquisition and the ablation's Hamming weight
    p = typed_params(PFNCausalParams, "pfn_causal", "cpu")
    variant, msf = runs.msf_config(p, runs.MSF_NMSE), runs.msf_config(p, "msf")
    assert variant.acquisition == "nmse" and msf.acquisition == "loss"
    assert variant.diversity == p.msf_ablation.diversity != msf.diversity
    assert (variant.rounds, variant.steps_per_round, variant.replay, variant.estimate_scms) == \
        (msf.rounds, msf.steps_per_round, msf.replay, msf.estimate_scms)


def confounded(n: int, seed: int):
    """x1 → x2 → y and x1 → y (x1 confounds x2's effect): E[y | do(x2 = v)] = 1.5 v; the naive
    regression of y on x2 also picks up x1."""
    rng = np.random.default_rng(seed)
    x1 = rng.normal(size=n)
    x2 = 0.9 * x1 + 0.4 * rng.normal(size=n)
    y = 1.5 * x2 + 2.0 * x1 + 0.2 * rng.normal(size=n)
    return np.stack([x1, x2], axis=1), y


def test_g_formula_removes_the_confounding_the_naive_regression_keeps():
    x, y = confounded(2000, 0)
    masks = np.array([[False, True], [False, True]])
    values = np.array([[0.0, 0.5], [0.0, -0.5]])
    config = BL.HGBConfig(max_iter=100, learning_rate=0.1, max_leaf_nodes=16, min_samples_leaf=10)
    g = BL.g_formula(x, y, [[], [0]], [0, 1], [0, 1], masks, values, 2000, np.random.default_rng(1), config)
    naive = BL.naive(x, y, masks, values, config)
    np.testing.assert_allclose(g, [0.75, -0.75], atol=0.15)
    assert np.all(np.abs(naive - np.array([0.75, -0.75])) > 0.5)          # slope ≈ 1.5 + 2·0.9/0.97 ≈ 3.4
    s = BL.s_learner(x, y, masks, values, config)
    np.testing.assert_allclose(s, [0.75, -0.75], atol=0.25)               # both covariates observed: fine here


def test_column_graph_maps_nodes_to_columns():
    adjacency = np.zeros((4, 4), bool)
    adjacency[0, 1] = adjacency[1, 3] = adjacency[2, 3] = True           # node 3 = Y
    parents, y_parents, order = BL.column_graph(adjacency, np.array([2, 0, 1]))   # columns show nodes 2, 0, 1
    assert parents == [[], [], [1]] and sorted(y_parents) == [0, 2] and order == [1, 2, 0]


def test_subset_nmse_is_the_error_of_the_mean_against_monte_carlo_truth():
    """A 'model' predicting the context mean of y for every query: subset_nmse must equal
    Σ (ȳ_ctx − μ_do)² / Σ Var(Y) per subset, recomputed here from the same random draws."""
    prior = P.CausalPrior(scm=S.SCMPriorConfig(nodes=(3, 3)), n_covariates=2, context=(200, 200), queries=4)

    class MeanOfY(torch.nn.Module):
        def forward(self, ctx_x, ctx_y, ctx_valid, q_mask, q_val):
            return torch.zeros((*q_mask.shape[:2], 2))            # standardised mean 0 = ȳ_ctx

        def moments(self, out):
            return out[..., 0], out[..., 1].exp()

        def nll(self, out, y):
            return torch.zeros_like(y)

    subsets = P.all_subsets(2)
    got = ME.subset_nmse(MeanOfY(), prior, subsets, np.random.default_rng(0), 6, 1.5, 400)
    rng = np.random.default_rng(0)
    ctx = P.draw_contexts(prior, rng, 6)
    masks = np.broadcast_to(subsets[None, :, None, :], (6, 3, 4, 2)).reshape(6, 12, 2)
    values = np.where(masks, rng.uniform(-1.5, 1.5, size=masks.shape), 0.0)
    truth = P.interventional_truth(ctx, masks, values, 400, rng)
    y_bar = ctx.y.mean(axis=1)
    want = ((y_bar[:, None] - truth["mu"]) ** 2).reshape(6, 3, 4).mean(axis=(0, 2)) / np.mean(truth["obs_sd"] ** 2)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert np.all(want > 0)
