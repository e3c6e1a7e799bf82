"""Objectives, schedule and training loop: closed forms and invariants."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from assets.logit_distill import metrics as M
from assets.logit_distill import model as net

torch.set_num_threads(1)      # 2 shared cores: intra-op threads only thrash at these sizes


def test_schedule_is_constant_factor_then_exponential():
    config = net.TrainConfig(epochs=30, lr=1e-3, gamma=0.9, warmup_epochs=20, warmup_factor=1e-3)
    assert net.learning_rate(config, 0) == pytest.approx(1e-6)
    assert net.learning_rate(config, 19) == pytest.approx(1e-6)
    assert net.learning_rate(config, 20) == pytest.approx(1e-3)
    assert net.learning_rate(config, 23) == pytest.approx(1e-3 * 0.9 ** 3)


def test_kl_objective_is_kl_teacher_to_student_at_temperature_one():
    torch.manual_seed(0)
    zs, zt = torch.randn(16, 7, dtype=torch.float64), 3 * torch.randn(16, 7, dtype=torch.float64)
    expected = M.kl_divergence(zt.numpy(), zs.numpy())        # mean over inputs of KL(p_t ‖ p_s)
    assert float(net.distillation_loss("kl", zs, zt, None)) == pytest.approx(expected, rel=1e-10)
    assert float(net.distillation_loss("kl", zs + 5.0, zs, None)) == pytest.approx(0.0, abs=1e-12)


def test_raw_logit_losses_and_the_l2_bound_on_logit_distance():
    torch.manual_seed(1)
    zs, zt = torch.randn(10, 5, dtype=torch.float64), torch.randn(10, 5, dtype=torch.float64)
    l2 = float(net.distillation_loss("l2", zs, zt, None))
    assert l2 == pytest.approx(float(((zs - zt) ** 2).sum() / 10))
    assert float(net.distillation_loss("l1", zs, zt, None)) == pytest.approx(float((zs - zt).abs().mean()))
    # centring is an orthogonal projection: raw L2 matching upper-bounds d²_logit ...
    assert M.d2_logit(zs.numpy(), zt.numpy()) <= l2 + 1e-12
    # ... and a constant shift costs L2 but not d_logit (KL is blind to it as well)
    assert float(net.distillation_loss("l2", zt + 2.0, zt, None)) == pytest.approx(4.0 * 5)
    assert M.d2_logit((zt + 2.0).numpy(), zt.numpy()) < 1e-20


def test_unknown_objective_and_label_term_free_objectives():
    zs, zt = torch.zeros(4, 3), torch.zeros(4, 3)
    wrong_labels = torch.tensor([0, 1, 2, 0])
    for objective in ("kl", "l1", "l2"):     # no label term: labels do not matter
        assert float(net.distillation_loss(objective, zs, zt, wrong_labels)) == 0.0
    with pytest.raises(ValueError, match="unknown objective"):
        net.distillation_loss("mse", zs, zt, wrong_labels)


def test_model_family_has_bias_free_heads_and_respects_the_diversity_condition():
    model = net.EmbeddingNet(net.ModelConfig(input_dim=4, rep_dim=2, n_classes=7, n_concepts=3, hidden=8))
    assert model.head.bias is None and model.concept_head.bias is None
    x = torch.randn(5, 4)
    f, logits, _ = model.eval()(x)
    torch.testing.assert_close(logits, f @ model.head.weight.T)      # p(y|x) ∝ exp(f(x)ᵀ g(y))
    with pytest.raises(ValueError, match="representation dimension"):
        net.EmbeddingNet(net.ModelConfig(input_dim=4, rep_dim=6, n_classes=7))


def _fit(seed):
    torch.manual_seed(seed)
    x = torch.randn(256, 2)
    y = (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long()          # 4 quadrant classes
    model = net.EmbeddingNet(net.ModelConfig(input_dim=2, rep_dim=2, n_classes=4, hidden=32, dropout=0.0))
    result = net.train(model, x, lambda m, i: torch.nn.functional.cross_entropy(m(x[i])[1], y[i]),
                       net.TrainConfig(epochs=60, batch_size=64, lr=1e-2, warmup_epochs=0), seed=seed)
    return model, result, x, y


def test_training_learns_and_is_deterministic_given_the_seed():
    model_a, result_a, x, y = _fit(3)
    model_b, result_b, _, _ = _fit(3)
    assert result_a.losses[-1] < 0.5 * result_a.losses[0]
    accuracy = float((model_a(x)[1].argmax(1) == y).float().mean())
    assert accuracy > 0.9
    for name, tensor in model_a.state_dict().items():
        torch.testing.assert_close(tensor, model_b.state_dict()[name])
    assert result_a.samples_per_second > 0 and not net.state_dict_is_finite(model_a.state_dict())


def test_non_finite_weights_are_named():
    state = {"a": torch.zeros(2), "b": torch.tensor([1.0, float("nan")]), "steps": torch.tensor(3)}
    assert net.state_dict_is_finite(state) == ["b"]


# ----------------------------------------------------------------------------- CNN
def _cnn_config(**overrides):
    base = dict(input_dim=12 * 12, rep_dim=5, n_classes=10, n_concepts=3, hidden=16, depth=2, dropout=0.1,
                encoder="cnn", image_size=12, conv_width=4)
    return net.ModelConfig(**{**base, **overrides})


def test_conv_output_size_known_answers():
    assert net.conv_output_size(12, 2) == 3 and net.conv_output_size(32, 3) == 4
    assert net.conv_output_size(28, 3) == 4 and net.conv_output_size(16, 2) == 4


def test_cnn_has_a_d_dimensional_representation_and_the_bias_free_family():
    torch.manual_seed(0)
    model = net.EmbeddingNet(_cnn_config()).eval()
    assert isinstance(model.encoder, net.ConvEncoder)
    assert model.head.bias is None and model.concept_head.bias is None
    x = torch.rand(7, 144)
    f, logits, concept_logits = model(x)
    assert f.shape == (7, 5) and logits.shape == (7, 10) and concept_logits.shape == (7, 3)
    # p(y|x) ∝ exp(f(x)ᵀ g(y)): log p(y|x) − f(x)ᵀ g(y) is the same for every y (the log-partition)
    log_p = torch.log_softmax(logits, dim=1)
    gap = log_p - f @ model.head.weight.T
    torch.testing.assert_close(gap, gap[:, :1].expand_as(gap))
    # the image is read row-major: a flattened input and the (1, S, S) image give the same f
    torch.testing.assert_close(model.encoder.project(model.encoder.features(x.reshape(7, 1, 12, 12))), f)
    with pytest.raises(ValueError, match="input_dim"):
        net.EmbeddingNet(_cnn_config(input_dim=100))
    with pytest.raises(ValueError, match="representation dimension"):
        net.EmbeddingNet(_cnn_config(rep_dim=9))
    with pytest.raises(ValueError, match="unknown encoder"):
        net.EmbeddingNet(_cnn_config(encoder="vit"))


def test_cnn_checkpoint_round_trip_reproduces_logits(data_dir):
    from assets.logit_distill import runs
    from resources.artifacts import save_checkpoint

    torch.manual_seed(1)
    model = net.EmbeddingNet(_cnn_config(n_concepts=0)).eval()
    x = torch.rand(4, 144)
    ref = save_checkpoint(data_dir / "student.pt", model.state_dict(), provenance={}, config=model.config)
    rebuilt, sidecar = runs.rebuild(ref["checkpoint"])          # weights_only load + config from JSON
    assert rebuilt.config == model.config and sidecar["config"]["encoder"] == "cnn"
    with torch.no_grad():
        torch.testing.assert_close(rebuilt(x)[1], model(x)[1], rtol=0, atol=0)


def test_cnn_learns_shapes_and_is_deterministic_given_the_seed():
    from assets.logit_distill import data

    frame = data.make_shapes_concept(per_class=40, image_size=12, n_classes=10, seed=0, noise=0.0)
    x = torch.from_numpy(frame[data.input_columns(frame)].to_numpy(np.float32, copy=True))
    y = torch.from_numpy(frame["label"].to_numpy(copy=True))

    def fit():
        torch.manual_seed(2)
        model = net.EmbeddingNet(_cnn_config(n_concepts=0, conv_width=8, hidden=32, dropout=0.0))
        result = net.train(model, x, lambda m, i: torch.nn.functional.cross_entropy(m(x[i])[1], y[i]),
                           net.TrainConfig(epochs=25, batch_size=50, lr=1e-2, warmup_epochs=0), seed=2)
        return model, result

    model_a, result_a = fit()
    model_b, _ = fit()
    accuracy = float((model_a(x)[1].argmax(1) == y).float().mean())
    assert accuracy > 0.6 and result_a.losses[-1] < 0.5 * result_a.losses[0]    # chance 0.1
    for name, tensor in model_a.state_dict().items():
        torch.testing.assert_close(tensor, model_b.state_dict()[name])


def test_bare_loop_does_the_same_computation_as_our_loop():
    """At a constant lr (no warm-up, γ = 1) the two loops visit the same batches in the same
    order: identical weights — so their samples/s ratio measures loop overhead only."""
    torch.manual_seed(0)
    x = torch.rand(90, 144)
    z = torch.randn(90, 10)

    def loss(m, i):
        return net.distillation_loss("l2", m(x[i])[1], z[i], None)

    config = net.TrainConfig(epochs=2, batch_size=32, lr=1e-2, gamma=1.0, warmup_epochs=0)
    torch.manual_seed(3)
    ours = net.EmbeddingNet(_cnn_config(n_concepts=0, dropout=0.0))
    net.train(ours, x, loss, config, seed=7)
    torch.manual_seed(3)
    bare = net.EmbeddingNet(_cnn_config(n_concepts=0, dropout=0.0))
    samples_per_second = net.bare_loop(bare, x, loss, batch_size=32, epochs=2, lr=1e-2, seed=7)
    for name, tensor in ours.state_dict().items():
        torch.testing.assert_close(tensor, bare.state_dict()[name])
    assert samples_per_second > 0
    speed = net.loop_throughput(lambda: net.EmbeddingNet(_cnn_config(n_concepts=0)), x, loss, config, 1, seed=7)
    assert speed["ratio"] == pytest.approx(speed["ours"] / speed["bare"]) and speed["bare"] > 0
