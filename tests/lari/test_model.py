"""The mathematics of the nets and the metrics: SSI closed form = least squares, exp remap, losses, stop-index
decision rules, CD / F on known sets, the baselines' rules, bad images and checkpoints of another L."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from assets.common.params import parse
from assets.lari import metrics as M
from assets.lari import model as NN
from assets.lari.params import LariParams
from resources.profiles import load_params


def test_ssi_closed_form_equals_lstsq_and_recovers_a_known_scale_and_shift():
    rng = np.random.default_rng(0)
    pred = rng.uniform(-1, 1, size=(2, 50, 3)) + [0, 0, 3]
    gt = 1.7 * pred + np.array([0, 0, -0.4])                     # known (s, t) = (1.7, −0.4)
    gt[1] += rng.normal(scale=0.05, size=(50, 3))                # second image: noisy → compare with lstsq
    mask = np.ones((2, 50), bool)
    mask[1, :10] = False
    s, t, ok = NN.ssi_solve(torch.tensor(pred), torch.tensor(gt), torch.tensor(mask))
    assert ok.all() and abs(float(s[0]) - 1.7) < 1e-10 and abs(float(t[0]) + 0.4) < 1e-10
    # least squares on the stacked system [P̂ | e_z] (s, t) = P over the valid points of image 1
    p, g = pred[1][mask[1]], gt[1][mask[1]]
    A = np.concatenate([np.stack([p[:, k], np.full(len(p), float(k == 2))], 1) for k in range(3)])
    sol = np.linalg.lstsq(A, np.concatenate([g[:, k] for k in range(3)]), rcond=None)[0]
    assert np.allclose([float(s[1]), float(t[1])], sol, atol=1e-10)
    assert np.allclose(M.ssi_fit(pred[1], gt[1], mask[1]), sol, atol=1e-10)


def test_ssi_skips_det_le_0_and_the_loss_vanishes_at_the_aligned_optimum():
    zero = torch.zeros(1, 5, 3)
    _, _, ok = NN.ssi_solve(zero, torch.ones(1, 5, 3), torch.ones(1, 5, dtype=torch.bool))
    assert not ok.any()
    rng = np.random.default_rng(1)
    gt = torch.tensor(rng.uniform(1, 2, size=(2, 4, 4, 3, 3)))
    mask = torch.tensor(rng.random((2, 4, 4, 3)) > 0.3)
    pred = (gt - torch.tensor([0, 0, 0.5])) / 2.0                # s = 2, t = 1 reproduce gt exactly
    assert float(NN.pointmap_loss(pred, gt, mask)) < 1e-10
    # invalid GT points are excluded: corrupting them changes nothing
    bad = gt.clone()
    bad[~mask] = 0
    assert float(NN.pointmap_loss(pred, bad, mask)) < 1e-10
    # and the loss is the mean Euclidean distance after alignment
    noisy = pred + torch.tensor([0.01, 0, 0])                     # x offset: alignment cannot remove it fully
    loss = float(NN.pointmap_loss(noisy, gt, mask))
    assert 0 < loss < 0.03


def test_exp_remap_gives_positive_depth_and_rays_through_xy_hat():
    cfg = NN.NetConfig("pointmap", 3, 8, 2, 8)
    net = NN.build(cfg).eval()
    raw = net.net(torch.rand(2, 3, 8, 8)).permute(0, 3, 4, 1, 2)
    out = net(torch.rand(2, 3, 8, 8))
    assert out.shape == (2, 8, 8, 3, 3) and (out[..., 2] > 0).all()
    torch.manual_seed(0)
    x = torch.rand(1, 3, 8, 8)
    raw, out = net.net(x).permute(0, 3, 4, 1, 2), net(x)
    assert torch.allclose(out[..., 2], torch.exp(raw[..., 2]))
    assert torch.allclose(out[..., 0] / out[..., 2], raw[..., 0], atol=1e-6)


def test_stop_decision_rules():
    probs = np.array([[0.1, 0.2, 0.3, 0.4], [0.7, 0.1, 0.1, 0.1], [0.05, 0.05, 0.5, 0.4]])   # L = 3
    assert NN.stop_argmax(probs).tolist() == [3, 0, 2]
    # P(S ≥ 1..3): [.9, .7, .4], [.3, .2, .1], [.95, .9, .4]
    assert NN.stop_threshold_rule(probs, 0.5).tolist() == [2, 0, 2]
    assert NN.stop_threshold_rule(probs, 0.35).tolist() == [3, 0, 3]
    assert NN.stop_threshold_rule(probs, 0.99).tolist() == [0, 0, 0]


def test_stop_loss_is_cross_entropy_over_l_plus_1_classes():
    logits = torch.zeros(1, 5, 2, 2)
    assert abs(float(NN.stop_loss(logits, torch.zeros(1, 2, 2))) - np.log(5)) < 1e-6


def test_chamfer_and_f_on_known_sets():
    gt = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]])
    same = M.chamfer_f(gt, gt, (0.1, 0.05))
    assert same["cd"] == 0 and same["f@0.1"] == 1 and same["f@0.05"] == 1
    shifted = M.chamfer_f(gt + [0.07, 0, 0], gt, (0.1, 0.05))
    assert abs(shifted["cd"] - 0.07) < 1e-12 and shifted["f@0.1"] == 1 and shifted["f@0.05"] == 0
    half = M.chamfer_f(gt[:2], gt, (0.1,))
    # precision 1, recall 1/2 → F = 2/3; CD = ½ (0 + mean(0, 0, 1, 1)) = 0.25 (NN of (0,1,0) in the pred is at √2?)
    d_gp = np.array([0, 0, 1, 1.0])                                 # (0,1,0)→(0,0,0) is 1, (0,0,1)→(0,0,0) is 1
    assert abs(half["cd"] - 0.5 * d_gp.mean()) < 1e-12 and abs(half["f@0.1"] - 2 / 3) < 1e-12
    empty = M.chamfer_f(np.zeros((0, 3)), gt, (0.05,))
    assert empty["f@0.05"] == 0 and np.isnan(empty["cd"])


def test_mirrored_completion_and_z_rule():
    pts = np.zeros((1, 3, 3))
    pts[0, :, 2] = [1.0, 2.0, 3.0]                                 # visible depths, median 2
    back = M.mirrored_completion(pts, np.ones((1, 3), bool))
    assert sorted(back[:, 2].tolist()) == [1.0, 2.0, 3.0, 3.0]       # z = 1 mirrors to 3; 2 and 3 do not
    layers = np.zeros((1, 2, 3, 3))
    layers[0, 0, :, 2] = [1.0, 1.2, 1.21]
    layers[0, 1, :, 2] = [1.0, 0.9, 1.5]
    assert M.z_rule_stop(layers, 0.05).tolist() == [[2, 1]]                # 1.2 → 1.21 grows by < τ
    assert M.order_violations(layers, np.array([[3, 3]])) == (1, 4)


def test_bad_images_and_checkpoints_of_another_l():
    with pytest.raises(NN.ImageError, match=r"\(16, 16, 3\)"):
        NN.check_image(np.zeros((16, 16)), 16)
    with pytest.raises(NN.ImageError, match="dtype"):
        NN.check_image(np.zeros((16, 16, 3), np.int32), 16)
    with pytest.raises(NN.ImageError, match="non-finite"):
        NN.check_image(np.full((16, 16, 3), np.nan, np.float32), 16)
    assert NN.check_image(np.full((16, 16, 3), 255, np.uint8), 16).max() == 1.0
    cfg = NN.NetConfig("pointmap", 2, 8, 2, 16)
    state = NN.build(cfg).state_dict()
    with pytest.raises(NN.CheckpointError, match="L = 2 layers, expected L = 4"):
        NN.load_net(state, cfg.as_dict(), "pointmap", 4)
    with pytest.raises(NN.CheckpointError, match="expected 'stop'"):
        NN.load_net(state, cfg.as_dict(), "stop", 2)


def test_training_lowers_the_loss_on_a_tiny_problem(one_torch_thread):
    rng = np.random.default_rng(0)
    rgb = rng.integers(0, 255, size=(8, 8, 8, 3), dtype=np.uint8)
    stop = (rgb[..., 0] > 128).astype(np.int64)                     # S decided by the red channel
    out = NN.train_net(NN.NetConfig("stop", 1, 8, 2, 8), rgb, np.ones((8, 8, 8, 1, 3)), stop, 60, 8, 1e-2, 1e-3,
                       0.0, (0.9, 0.95), 0)
    assert out["losses"][-5:].mean() < 0.7 * out["losses"][:5].mean()


@pytest.mark.parametrize("profile", ["smoke", "cpu", "gpu"])
def test_every_profile_builds_its_nets_at_tiny_size(profile, one_torch_thread):
    p = parse(LariParams, load_params("lari", profile), f"lari.{profile}")
    size = 2 ** (p.model.levels - 1) * 2
    for kind, layers in (("pointmap", p.model.layers), ("pointmap", 1), ("stop", p.model.layers)):
        net = NN.build(NN.NetConfig(kind, layers, p.model.width, p.model.levels, size))
        out = net(torch.rand(1, 3, size, size))
        assert out.shape == ((1, size, size, layers, 3) if kind == "pointmap" else (1, layers + 1, size, size))
    assert p.lmax >= p.model.layers and p.image % 2 ** (p.model.levels - 1) == 0
