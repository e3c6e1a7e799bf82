"""The mathematics of LimiX's tokens: Prop. 3.1's rank bounds, the mantissa/exponent split,
normalisation from context rows only."""
import numpy as np
import pytest
import torch

from assets.common.pfn.model import Attention
from assets.limix import tokens


def rank(m: torch.Tensor) -> int:
    s = torch.linalg.svdvals(m.double())
    return int((s > 1e-6 * s[0]).sum())


@pytest.fixture
def column():
    torch.manual_seed(0)
    return torch.linspace(-3, 3, 200)[torch.randperm(200)] + 0.001 * torch.randn(200)


def affine_tokens(x, d=32):
    emb = tokens.AffineEmbedding(d)
    column_id = torch.randn(d)
    return emb(x) + column_id


def test_affine_plus_column_id_tokens_have_rank_at_most_two(column):
    with torch.no_grad():
        assert rank(affine_tokens(column)) <= 2


def test_single_head_attention_keeps_rank_at_most_two(column):
    torch.manual_seed(1)
    with torch.no_grad():
        e = affine_tokens(column)[None]
        out, _ = Attention(32, 1)(e, e)
        assert rank(out[0]) <= 2


@pytest.mark.parametrize("heads", [2, 4, 8])
def test_h_head_attention_has_rank_at_most_h_plus_one(column, heads):
    torch.manual_seed(2)
    with torch.no_grad():
        e = affine_tokens(column)[None]
        out, _ = Attention(32, heads)(e, e)
        r = rank(out[0])
        assert r <= heads + 1
        assert r > 2  # the bound is not vacuous: several heads do lift the rank


def test_rabel_tokens_of_one_column_have_rank_at_least_twelve_at_k16(column):
    torch.manual_seed(3)
    with torch.no_grad():
        z, _, _ = tokens.preprocess(column[None, :, None], 200)
        assert rank(tokens.RaBEL(32, k=16)(z[0, :, 0])) >= 12


def test_mantissa_exponent_round_trip():
    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.standard_normal(2000) * 10.0 ** rng.uniform(-12, 12, 2000))
    x = torch.cat([x, torch.tensor([0.0, 1.0, -1.0, 10.0, 100.0, 1e-3, 0.1, 1e9, 9.999999])]).double()
    s, e, m = tokens.mantissa_exponent(x)
    assert torch.allclose(tokens.compose(s, e, m), x, rtol=1e-12, atol=0)
    assert (e.abs() <= 9).all()
    inside = (x.abs() >= 1e-9) & (x.abs() < 1e10)
    assert ((m[inside] >= 1) & (m[inside] < 10)).all()
    assert m[x == 0].eq(0).all()
    assert torch.equal(s, (x < 0).long())


def test_normalisation_is_blind_to_query_rows():
    torch.manual_seed(4)
    x = torch.randn(3, 40, 5) * 10 ** torch.randn(1, 1, 5)
    y = x.clone()
    y[:, 30:] = torch.randn(3, 10, 5) * 1e6
    y[0, 35, 2] = float("nan")
    zx, _, vx = tokens.preprocess(x, 30)
    zy, miss, vy = tokens.preprocess(y, 30)
    assert torch.equal(zx[:, :30], zy[:, :30]) and torch.equal(vx, vy)
    assert miss[0, 35, 2] and miss.sum() == 1
    ctx = zx[:, :30]
    assert torch.allclose(ctx.mean(1), torch.zeros(3, 5), atol=1e-5)


def test_missing_cells_get_the_mask_embedding_and_constant_columns_are_dropped():
    torch.manual_seed(5)
    enc = tokens.TokenEncoder(16, "rabel")
    x = torch.randn(1, 20, 4)
    x[0, 3, 1] = float("nan")
    x[0, 4, 0] = float("inf")
    x[0, :, 3] = 7.0
    cells, valid = enc.cells(x, 15)
    assert torch.equal(cells[0, 3, 1], enc.mask_embedding) and torch.equal(cells[0, 4, 0], enc.mask_embedding)
    assert valid.tolist() == [[True, True, True, False]]
    assert torch.isfinite(enc(x, torch.zeros(1, 15, dtype=torch.long), 15)).all()


@pytest.mark.parametrize("kind", tokens.EMBEDDINGS)
def test_every_embedding_maps_scalars_to_tokens(kind):
    emb = tokens.scalar_embedding(kind, 24, 16)
    assert emb(torch.randn(2, 7, 3)).shape == (2, 7, 3, 24)
