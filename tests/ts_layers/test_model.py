"""The patch forecaster: keep / skip semantics, compaction, RevIN, the LLM4TS transplant."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from assets.ts_layers import method as M
from assets.ts_layers.model import (
    PatchConfig,
    PatchForecaster,
    compact,
    flops_per_window,
    forecast,
    from_text_backbone,
    revin_denormalize,
    revin_normalize,
    revin_stats,
    text_lm,
    to_patches,
)


@pytest.fixture
def model(one_torch_thread):
    torch.manual_seed(0)
    m = PatchForecaster(PatchConfig("tsfm", 4, 32, 4, 16, 7))
    for p in m.parameters():                                   # larger weights than the init: non-trivial blocks
        p.data += 0.05 * torch.randn_like(p)
    return m.eval()


def test_revin_round_trip_and_statistics():
    x = torch.randn(5, 96, dtype=torch.float64) * 300 + 1e3
    mean, std = revin_stats(x)
    z = revin_normalize(x, mean, std)
    assert torch.allclose(revin_denormalize(z, mean, std), x, rtol=0, atol=1e-9)
    assert torch.allclose(z.mean(dim=1), torch.zeros(5, dtype=torch.float64), atol=1e-9)
    assert torch.allclose(z.std(dim=1, unbiased=False), torch.ones(5, dtype=torch.float64), atol=1e-6)


def test_keeping_every_layer_reproduces_the_outputs(model):
    z = torch.randn(3, 6, 16)
    full, _ = model(z)
    kept, out = model(z, keep=[0, 1, 2, 3])
    assert torch.equal(full, kept) and out.layers == [0, 1, 2, 3]


def test_skipping_a_layer_equals_zeroing_its_residual_branches(model):
    z = torch.randn(3, 6, 16)
    skipped, _ = model(z, keep=[0, 1, 3])
    zeroed = PatchForecaster(model.config)
    zeroed.load_state_dict(model.state_dict())
    block = zeroed.backbone.blocks[2]
    for layer in (block.attn.out, block.mlp[2]):               # the two residual branches' last linear maps
        torch.nn.init.zeros_(layer.weight)
        torch.nn.init.zeros_(layer.bias)
    with torch.no_grad():
        same, out = zeroed(z, return_hidden=True)
    assert torch.allclose(skipped, same, atol=1e-6)
    h2, h3 = out.hidden_states[2].reshape(-1, 32).numpy(), out.hidden_states[3].reshape(-1, 32).numpy()
    assert np.allclose(h2, h3)                                  # an identity layer …
    cka = M.cka_matrix([h.reshape(-1, 32).numpy() for h in out.hidden_states])
    assert M.shift_scores(cka, 0.5, 1)[2] == pytest.approx(0.0, abs=1e-9)   # … has s_l = 0
    assert M.block_influence(h2, h3) == pytest.approx(0.0, abs=1e-6)        # … and BI = 0


def test_compact_model_equals_the_kept_layers(model):
    z = torch.randn(2, 6, 16)
    small = compact(model, [0, 2]).eval()
    assert small.config.depth == 2
    assert torch.allclose(small(z)[0], model(z, keep=[0, 2])[0], atol=1e-6)
    assert small.n_parameters() == model.n_parameters([0, 2]) < model.n_parameters()


def test_forecast_is_two_autoregressive_patches(model):
    look = torch.randn(4, 96) * 10 + 3
    out = forecast(model, look, 24)
    assert out.shape == (4, 24)
    mean, std = revin_stats(look)
    z = to_patches(revin_normalize(look, mean, std), 16)
    first = model(z)[0][:, -1]
    assert torch.allclose(out[:, :16], first, atol=1e-6)
    second = model(torch.cat([z, first[:, None]], dim=1))[0][:, -1, :8]
    assert torch.allclose(out[:, 16:], second, atol=1e-6)
    # RevIN makes the normalised forecast invariant to the series' scale and level
    assert torch.allclose(forecast(model, look * 1000 - 50, 24), out, atol=1e-4)


def test_llm4ts_transplants_blocks_positions_and_final_norm(one_torch_thread):
    torch.manual_seed(1)
    lm = text_lm(30, 2, 32, 4, 64)
    config = PatchConfig("llm4ts", 2, 32, 4, 16, 7)
    model = from_text_backbone(lm.state_dict(), config)
    state = model.state_dict()
    for name, value in lm.state_dict().items():
        if name.startswith("blocks.") or name.startswith("ln_f."):
            assert torch.equal(state["backbone." + name], value)
    assert torch.equal(state["backbone.position.weight"], lm.state_dict()["position.weight"][:7])
    assert state["backbone.embed.weight"].shape == (32, 16)     # a new patch embedding, not the token table


def test_flops_fraction_tracks_kept_layers():
    config = PatchConfig("tsfm", 16, 64, 4, 16, 7)
    frac = flops_per_window(config, 4, 7) / flops_per_window(config, 16, 7)
    assert 0.25 < frac < 0.26
