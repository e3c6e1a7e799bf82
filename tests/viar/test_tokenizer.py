"""Multi-scale residual VQ: exact nearest-code lookup, round trip, teacher forcing, restarts."""
from __future__ import annotations

import pytest
import torch

from assets.viar import tokenizer as T


def _identity_phis(model: T.MultiScaleVQVAE) -> None:
    """φ(h) = 0.5 h + 0.5 conv(h) is the identity when conv is the centre-tap identity."""
    with torch.no_grad():
        for phi in model.phis:
            phi.weight.zero_()
            phi.bias.zero_()
            for c in range(phi.weight.shape[0]):
                phi.weight[c, c, 1, 1] = 1.0


def _model(scales=(1, 2, 4), vocab=16, cvae=4, downsample=0, size=4):
    torch.manual_seed(0)
    return T.MultiScaleVQVAE(T.TokenizerConfig(image_channels=1, image_size=size, scales=scales, hidden=8,
                                               cvae=cvae, vocab=vocab, downsample=downsample)).eval()


def test_nearest_code_matches_brute_force():
    model = _model()
    vectors = torch.randn(50, 4)
    brute = torch.cdist(vectors, model.codebook.weight).argmin(1)
    assert torch.equal(model.nearest_code(vectors), brute)


def test_quantization_is_exact_when_the_codebook_holds_the_latent():
    """One scale at full resolution, φ = identity, codebook ⊇ the latent vectors → f̂ = f, and
    the residual left after quantisation is zero."""
    model = _model(scales=(4,), vocab=16, size=4)
    _identity_phis(model)
    f = torch.randn(1, 4, 4, 4)
    with torch.no_grad():
        model.codebook.weight.copy_(f.permute(0, 2, 3, 1).reshape(16, 4))
        ids, f_hat, _, _ = model.quantize(f)
    assert torch.allclose(f_hat, f, atol=1e-6)
    assert torch.equal(ids[0].flatten(), torch.arange(16))


def test_round_trip_decode_tokens_equals_reconstruction():
    model = _model(scales=(1, 2, 3, 4), vocab=32, downsample=1, size=8)
    x = torch.rand(6, 1, 8, 8) * 2 - 1
    tokens = model.encode_tokens(x)
    assert tokens.shape == (6, 1 + 4 + 9 + 16)
    with torch.no_grad():
        recon_ste, _, _, _ = model(x)
        recon = model.decode_latent(model.quantize(model.encoder(x))[1])
    assert torch.equal(model.tokens_to_latent(tokens), model.quantize(model.encoder(x))[1].detach())
    # the decoder's conv kernels may pick another algorithm for another memory layout: 1e-4
    assert torch.allclose(model.decode_tokens(tokens), recon, atol=1e-4)
    # the straight-through output f + (f̂ − f) equals f̂ up to float rounding
    assert torch.allclose(recon_ste, recon, atol=1e-4)


def test_residual_accumulates_scale_contributions():
    """f̂ = Σ_k h_k and the quantised rest at scale k is area_down(f − Σ_{j<k} h_j)."""
    model = _model(scales=(1, 2, 4))
    f = torch.randn(3, 4, 4, 4)
    with torch.no_grad():
        ids, f_hat, _, rests = model.quantize(f)
        contributions = [model.scale_contribution(k, i) for k, i in enumerate(ids)]
        assert torch.allclose(f_hat, sum(contributions), atol=1e-6)
        rest_k2 = T.area_down(f - contributions[0], 2).permute(0, 2, 3, 1).reshape(-1, 4)
        assert torch.allclose(rests[1], rest_k2, atol=1e-6)


def test_teacher_forcing_is_area_downsampled_cumulative_reconstruction():
    """Scales (1, 2) on a 2×2 latent with φ = identity: the scale-2 input is f̂ after scale 1,
    i.e. the 1×1 code broadcast to 2×2 (bicubic upsampling of a constant is constant)."""
    model = _model(scales=(1, 2), size=2)
    _identity_phis(model)
    tokens = torch.tensor([[3, 0, 1, 2, 3]])
    tf = model.teacher_forcing_inputs(tokens)
    assert tf.shape == (1, 4, 4)
    assert torch.allclose(tf[0], model.codebook.weight[3].expand(4, 4), atol=1e-6)
    assert torch.allclose(T.area_down(torch.arange(16.).reshape(1, 1, 4, 4), 2).flatten(),
                          torch.tensor([2.5, 4.5, 10.5, 12.5]))


def test_token_outside_codebook_is_refused():
    model = _model(scales=(1, 2), size=2, vocab=8)
    with pytest.raises(ValueError, match="outside the codebook"):
        model.decode_tokens(torch.tensor([[8, 0, 1, 2, 3]]))


def test_dead_codes_are_restarted_from_quantised_vectors():
    model = _model(vocab=4)
    usage = torch.tensor([100.0, 0.0, 50.0, 0.0])
    rests = torch.full((10, 4), 7.0)
    before = model.codebook.weight.detach().clone()
    n = T.restart_dead_codes(model, usage, rests, 1e-3, torch.Generator().manual_seed(0))
    after = model.codebook.weight.detach()
    assert n == 2
    assert torch.equal(after[[0, 2]], before[[0, 2]]) and torch.all(after[[1, 3]] == 7.0)


def test_config_rejects_scales_not_ending_at_the_latent():
    with pytest.raises(ValueError, match="end at the latent size 4"):
        T.TokenizerConfig(image_channels=1, image_size=8, scales=(1, 2, 8), downsample=1)
