"""Next-scale transformers: block-causal mask, KV-cache ≡ full forward, S-JFB gradients,
schedules, FLOPs accounting, saved-activation memory."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from assets.viar import model as M
from assets.viar import tokenizer as T

SCALES = (1, 2, 3)


def _tokenizer():
    torch.manual_seed(0)
    return T.MultiScaleVQVAE(T.TokenizerConfig(image_channels=1, image_size=3, scales=SCALES, hidden=8,
                                               cvae=4, vocab=12)).eval()


def _model(kind, depth=2, damping=1.0):
    torch.manual_seed(1)
    cfg = M.ARConfig(kind=kind, vocab=12, cvae=4, scales=SCALES, num_classes=3, width=16, heads=2, depth=depth,
                     damping=damping)
    model = M.NextScaleAR(cfg)
    # leave the near-identity init: give every AdaLN gate a non-trivial value so blocks matter
    with torch.no_grad():
        for mod in model.modules():
            if isinstance(mod, M.AdaLNBlock):
                mod.ada[-1].weight.normal_(0, 0.3)
                mod.ada[-1].bias.normal_(0, 0.3)
    return model.eval()


def _batch(tok, n=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, 12, (n, sum(p * p for p in SCALES)), generator=g)
    labels = torch.randint(0, 3, (n,), generator=g)
    return tokens, tok.teacher_forcing_inputs(tokens), labels


def test_block_causal_mask_known_answer():
    mask = M.block_causal_mask((1, 2)).int()
    expected = torch.tensor([[1, 0, 0, 0, 0]] + [[1, 1, 1, 1, 1]] * 4)
    assert torch.equal(mask, expected)


@pytest.mark.parametrize("kind", ["var", "viar"])
def test_logits_of_a_scale_ignore_later_scales_but_see_their_own(kind):
    tok, model = _tokenizer(), _model(kind)
    tokens, tf, labels = _batch(tok)
    base = model(tf, labels, n_nograd=0, m_grad=3)
    later = tf.clone()
    later[:, 4:] += 1.0            # inputs of scale 3 (positions 5..13 of the sequence)
    out = model(later, labels, n_nograd=0, m_grad=3)
    assert torch.allclose(out[:, :5], base[:, :5], atol=1e-6)     # scales 1 and 2 unchanged
    assert not torch.allclose(out[:, 5:], base[:, 5:], atol=1e-4)
    same = tf.clone()
    same[:, 0] += 1.0               # first token of scale 2 changes every token of scale 2
    out = model(same, labels, n_nograd=0, m_grad=3)
    assert not torch.allclose(out[:, 1:5], base[:, 1:5], atol=1e-4)


@pytest.mark.parametrize("kind,schedule", [("var", None), ("viar", [3, 3, 3])])
def test_kv_cached_generation_equals_the_teacher_forced_forward(kind, schedule):
    """Incremental decoding with the (grouped-by-iteration) cache reproduces the training
    forward exactly when the schedule equals the training iteration count."""
    tok, model = _tokenizer(), _model(kind)
    tokens, tf, labels = _batch(tok)
    full = model(tf, labels, n_nograd=0, m_grad=3)
    out = M.generate(model, tok, labels, schedule, cfg_scale=0.0, top_p=1.0, top_k=0,
                     generator=torch.Generator(), teacher_tokens=tokens)
    assert torch.allclose(out["logits"], full, atol=1e-5)
    assert torch.equal(out["tokens"], tokens)


@pytest.mark.parametrize("kind,schedule", [("var", None), ("viar", [3, 2, 1])])
def test_unguided_generation_skips_the_unconditional_stream_without_changing_the_result(kind, schedule):
    """cfg_scale = 0 runs the conditional stream only; a (vanishing) guidance scale runs both
    streams and must give the same logits and the same sampled tokens."""
    tok, model = _tokenizer(), _model(kind)
    _, _, labels = _batch(tok)
    single = M.generate(model, tok, labels, schedule, 0.0, 0.9, 0, torch.Generator().manual_seed(3), record=True)
    both = M.generate(model, tok, labels, schedule, 1e-30, 0.9, 0, torch.Generator().manual_seed(3), record=True)
    assert torch.allclose(single["logits"], both["logits"], atol=1e-6)
    assert torch.equal(single["tokens"], both["tokens"])
    assert torch.allclose(single["images"], both["images"], atol=1e-6)
    assert [t[:2] for t in single["trace"]] == [t[:2] for t in both["trace"]]


def test_jfb_keeps_no_graph_through_no_grad_iterations():
    tok, model = _tokenizer(), _model("viar")
    tokens, tf, labels = _batch(tok)
    model.train()
    bytes_by_n = {n: M.saved_activation_bytes(model, tf, tokens, labels, n_nograd=n, m_grad=1) for n in (0, 3, 9)}
    assert len(set(bytes_by_n.values())) == 1
    by_m = [M.saved_activation_bytes(model, tf, tokens, labels, n_nograd=2, m_grad=m) for m in (1, 2, 3)]
    assert by_m[0] < by_m[1] < by_m[2] and by_m[2] - by_m[1] == by_m[1] - by_m[0]


def _grads(model, tf, tokens, labels, n, m):
    model.zero_grad(set_to_none=True)
    logits = model(tf, labels, n_nograd=n, m_grad=m)
    F.cross_entropy(logits.reshape(-1, 12), tokens.reshape(-1)).backward()
    return {k: p.grad.clone() for k, p in model.named_parameters() if p.grad is not None}


def test_jfb_gradient_is_the_truncated_gradient_and_reaches_pre_blocks_through_the_injection():
    tok, model = _tokenizer(), _model("viar")
    tokens, tf, labels = _batch(tok)
    jfb = _grads(model, tf, tokens, labels, n=4, m=1)
    full = _grads(model, tf, tokens, labels, n=0, m=5)          # same forward value, full backprop
    with torch.no_grad():
        assert torch.allclose(model(tf, labels, 4, 1), model(tf, labels, 0, 5), atol=1e-6)
    # the pre-block still gets a gradient (only path: the non-detached injection x)
    pre = [k for k in jfb if k.startswith("pre.") and "attn.qkv.weight" in k]
    assert pre and all(jfb[k].abs().sum() > 0 for k in pre)
    # ... but not the full BPTT one: the n detached iterations contribute nothing
    assert not torch.allclose(jfb["implicit.attn.qkv.weight"], full["implicit.attn.qkv.weight"], atol=1e-7)
    # JFB with n = 0 is exactly backprop through its m iterations
    assert all(torch.allclose(a, b) for a, b in zip(_grads(model, tf, tokens, labels, 0, 5).values(), full.values()))


def test_schedules_parse_and_wrong_lengths_are_refused():
    assert M.parse_schedule("dec8-2", 4) == [8, 6, 4, 2]
    assert M.parse_schedule("con5", 3) == [5, 5, 5]
    assert M.parse_schedule("cal:4,2,1", 3) == [4, 2, 1]
    with pytest.raises(ValueError, match="has length 2, the model has 3 scales"):
        M.parse_schedule("cal:4,2", 3)
    tok, model = _tokenizer(), _model("viar")
    with pytest.raises(ValueError, match="has length 2"):
        M.generate(model, tok, torch.tensor([0, 1]), [2, 2], 1.5, 0.9, 0, torch.Generator())


def test_class_label_outside_the_conditioning_set_is_refused():
    tok, model = _tokenizer(), _model("var")
    with pytest.raises(ValueError, match="outside the conditioning set"):
        M.generate(model, tok, torch.tensor([0, 3]), None, 1.5, 0.9, 0, torch.Generator())


def test_sampling_flops_are_affine_in_iterations_and_depth():
    cfg_viar = _model("viar").cfg
    f = [M.sampling_flops(cfg_viar, [c] * 3) for c in (1, 2, 3, 4)]
    assert np.allclose(np.diff(f), f[1] - f[0]) and f[1] > f[0]
    var = [M.sampling_flops(_model("var", depth=d).cfg, None) for d in (1, 2, 3)]
    assert np.allclose(np.diff(var), var[1] - var[0])
    # one implicit iteration costs one block plus the Proj MLP (6C² per token, ×2 FLOPs, ×2 CFG)
    assert f[1] - f[0] == pytest.approx(var[1] - var[0] + 4 * 6 * 16 * 16 * 14)
    assert M.sampling_flops(cfg_viar, [4, 3, 2]) < M.sampling_flops(cfg_viar, [4, 4, 4])


def test_top_p_keeps_the_nucleus():
    logits = torch.log(torch.tensor([[[0.7, 0.2, 0.1]]])).expand(1, 200, 3)
    g = torch.Generator().manual_seed(0)
    assert torch.all(M.top_p_sample(logits, 0.5, 0, g) == 0)
    ids = M.top_p_sample(logits, 0.85, 0, g)
    assert set(ids.unique().tolist()) == {0, 1}


def test_fixed_point_trace_and_damping():
    tok, model = _tokenizer(), _model("viar")
    tokens, tf, labels = _batch(tok)
    trace = model.fixed_point_trace(tf, labels, 6)
    assert trace["relative_residual"].shape == (6, 3) and np.isfinite(trace["relative_residual"]).all()
    damped = _model("viar", damping=0.5)
    d = damped.fixed_point_trace(tf, labels, 1)["relative_residual"][0]
    # z¹ − z⁰ is halved by damping 0.5 (same weights, same z⁰ = x)
    assert np.allclose(d, trace["relative_residual"][0] * 0.5, rtol=1e-5)


def test_viar_is_smaller_than_the_deep_var():
    var8 = M.count_parameters(_model("var", depth=8))
    viar = M.count_parameters(_model("viar"))
    assert viar < 0.5 * var8


def test_training_is_deterministic_given_the_seed_and_resamples_n_and_m():
    tok = _tokenizer()
    tokens, tf, labels = _batch(tok, n=16)
    runs = []
    for _ in range(2):
        model = _model("viar")
        runs.append(M.train_ar(model, tf.numpy(), tokens.numpy(), labels.numpy(), steps=6, batch=8, lr=1e-3,
                               weight_decay=0.05, warmup=2, clip=2.0, label_drop=0.1, seed=3, jfb=(4, 4)))
    assert runs[0]["losses"] == runs[1]["losses"] and runs[0]["n_iters"] == runs[1]["n_iters"]
    assert set(runs[0]["n_iters"]) <= set(range(5)) and set(runs[0]["m_iters"]) <= set(range(1, 5))
    assert len(set(zip(runs[0]["n_iters"], runs[0]["m_iters"]))) > 1          # resampled every step


def test_calibration_accounts_for_coarse_scales_degrading_later_ones(monkeypatch):
    """A coarse scale whose own NLL barely depends on its iterations, but whose few-iteration
    cache hurts every later scale: a per-scale greedy picks 1 there and can never recover;
    the calibrated schedule must still be within tolerance of the converged one."""
    K, converged, tol = 4, 16, 0.02

    def fake_nll(model, tokenizer, tokens, labels, schedule):
        c = np.asarray(schedule, dtype=float)
        nll = 1.0 + 0.05 / c + 0.5 * (1.0 / c[0] - 1.0 / converged)
        nll[0] = 1.0 + 0.001 / c[0]
        return nll

    monkeypatch.setattr(M, "teacher_forced_scale_nll", fake_nll)
    fake_model = type("Fake", (), {"cfg": type("Cfg", (), {"scales": [1, 2, 3, 4]})()})()
    out = M.calibrate_schedule(fake_model, None, None, None, [1, 2, 4, 8], converged, tol)
    ratio = out["nll_calibrated"].mean() / out["nll_converged"].mean()
    assert ratio <= 1 + tol
    assert out["schedule"][0] > 1                      # the coarse scale is not starved
    assert sum(out["schedule"]) < K * converged        # and it is cheaper than converged
    assert out["nll_converged"] == pytest.approx(fake_nll(None, None, None, None, [converged] * K))
