"""The tabular LM on the shared tiny transformer: constrained decoding parses, the AnoLLM score
adds up, SFT learns, a self-play round runs on its own samples."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from assets.dispat import data as D
from assets.dispat import lm as L
from assets.dispat import method as M
from assets.dispat import serialize as S
from assets.dispat.runs import TEXT_COLUMNS, negatives

SIZES = D.SplitSizes(150, 40, 40, 0.15)


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    yield


def _cell(name: str):
    rng = np.random.default_rng(0)
    fr = D.make_splits(name, D.raw_table(name, SIZES, rng), SIZES, rng)
    schema = D.fit_schema(fr[fr.split == "train"], TEXT_COLUMNS.get(name, ()))
    rows = S.format_rows(fr, schema)
    train = [r for r, s in zip(rows, fr.split) if s == "train"]
    vocab = S.fit_vocab(train, schema, 512)
    torch.manual_seed(0)
    model = L.build_model(vocab.size, 32, 4, 2, 96)
    return rows, train, vocab, model, schema


@pytest.mark.parametrize("name", ["synthetic_transactions", "fair", "breast_cancer"])
def test_constrained_decoding_always_parses(name):
    """An untrained (random) LM's samples all parse: the constraint, not the model, guarantees it."""
    _, train, vocab, model, schema = _cell(name)
    rows = L.TokenRows(train, vocab)
    parsed, ids = L.sample_rows(model, vocab, rows, 96, np.random.default_rng(1), negatives(train, schema))
    assert all(p is not None for p in parsed)
    levels = {c.name: set(c.levels) for c in schema.columns if c.kind == D.CATEGORICAL}
    for p in parsed:
        for col, allowed in levels.items():
            assert p[col] in allowed                   # categorical values are whole train levels
    # unconstrained sampling of the same random model does not parse
    bad, _ = L.sample_rows(model, vocab, rows, 32, np.random.default_rng(1), {}, constrained=False)
    assert np.mean([p is None for p in bad]) > 0.5
    # value spans of a sampled row match those of the same row re-encoded from its values
    enc = L.encode_sampled(ids[:4], vocab)
    assert enc.value_mask.sum() > 0 and (enc.span[~enc.value_mask] == -1).all()


@pytest.mark.parametrize("name", ["synthetic_transactions", "fair", "breast_cancer"])
def test_replayed_allowed_sets_are_the_decoders_and_admit_every_data_row(name):
    """SchemaConstraint.replay along sampled rows gives exactly the sets the decoder masked with, and
    every token of a train row (any column order) is in its set, so the renormalised log q is finite."""
    from assets.common.tiny_lm.sampling import generate

    _, train, vocab, model, schema = _cell(name)
    rows, neg = L.TokenRows(train, vocab), negatives(train, schema)
    orders = S.permutations(16, len(schema.names), np.random.default_rng(5))
    hook = L.SchemaConstraint(vocab, rows, orders, neg)
    seen = []

    def recording(logits, generated):
        out = hook(logits, generated)
        seen.append(torch.isfinite(out))
        return out

    prompt = torch.full((16, 1), vocab.bos, dtype=torch.long)
    out = generate(model, prompt, torch.ones_like(prompt, dtype=torch.bool), 95, eos=vocab.eos, pad=vocab.pad,
                   generator=torch.Generator().manual_seed(0), logits_hook=recording, stop_when_done=True)
    tokens = out.tokens.numpy()
    replay = L.SchemaConstraint(vocab, rows, orders[:0], neg).replay(tokens)
    mask = out.mask[:, 1:]
    for j, allowed in enumerate(seen):
        live = mask[:, j]
        assert torch.equal(replay[live, j], allowed[live])
    data = rows.batch(np.random.default_rng(6), 64)
    sets = L.SchemaConstraint(vocab, rows, orders[:0], neg).replay(data.tokens)
    hit = sets.gather(-1, torch.from_numpy(data.tokens)[:, 1:, None]).squeeze(-1)
    assert hit[torch.from_numpy(data.mask[:, 1:])].all()


def test_greedy_decoding_is_the_same_with_and_without_the_kv_cache():
    _, train, vocab, model, schema = _cell("synthetic_transactions")
    rows = L.TokenRows(train, vocab)
    a = L.sample_rows(model, vocab, rows, 8, np.random.default_rng(2), negatives(train, schema), greedy=True)
    b = L.sample_rows(model, vocab, rows, 8, np.random.default_rng(2), negatives(train, schema), greedy=True,
                      use_cache=False)
    assert a[1] == b[1]


def test_score_is_the_sum_of_span_nll_and_matches_value_logprob():
    rows, train, vocab, model, schema = _cell("fair")
    tr = L.TokenRows(rows[:10], vocab)
    scores, attr = L.score_rows(model, tr, 1, seed=5)
    assert np.allclose(attr.sum(1), scores)
    # with no text column, the score under one order = −Σ log p over value tokens of that order
    orders = np.stack([S.permutations(10, len(schema.names), np.random.default_rng(5))], axis=1)[:, 0]
    enc = tr.encode(np.arange(10), orders)
    tokens, _, values, _ = L.tensors(enc)
    with torch.no_grad():
        logp = M.sequence_logprobs(model, tokens, values).numpy()
    assert np.allclose(scores, -logp, atol=1e-4)


def test_text_spans_are_per_token():
    rows, train, vocab, model, schema = _cell("synthetic_transactions")
    tr = L.TokenRows(rows[:6], vocab)
    enc = tr.encode(np.arange(6), np.tile(np.arange(len(schema.names)), (6, 1)))
    tokens, _, _, span = L.tensors(enc)
    text = [i for i, c in enumerate(schema.columns) if c.kind == D.TEXT]
    with torch.no_grad():
        summed = M.span_nll(model, tokens, span, len(schema.names), []).numpy()
        per_token = M.span_nll(model, tokens, span, len(schema.names), text).numpy()
    lengths = np.array([len(tr.values[r][text[0]]) for r in range(6)])
    assert np.allclose(per_token[:, text[0]], summed[:, text[0]] / lengths, atol=1e-5)
    other = [i for i in range(len(schema.names)) if i not in text]
    assert np.allclose(per_token[:, other], summed[:, other])


def test_sft_learns_and_a_self_play_round_runs():
    rows, train, vocab, model, schema = _cell("synthetic_transactions")
    tr, val = L.TokenRows(train, vocab), L.TokenRows(rows[150:190], vocab)
    before = L.validation_nll(model, val, 0)
    curve = L.train_sft(model, tr, 40, 16, L.Optim(3e-3, 5, 0.7, 0.01), np.random.default_rng(0))
    after = L.validation_nll(model, val, 0)
    assert np.mean(curve[-5:]) < np.mean(curve[:5]) and after < before
    parsed, ids = L.sample_rows(model, vocab, tr, 32, np.random.default_rng(3), negatives(train, schema))
    final, records, generated = L.self_play(
        model, tr, val, vocab, L.encode_sampled(ids, vocab), f="js", beta=0.1, gamma=0.1, rounds=2, steps=3,
        batch=8, n_gen=16, o=L.Optim(5e-4, 1, 0.7, 0.01), max_val_rise=0.02, negatives=negatives(train, schema),
        rng=np.random.default_rng(4), val_seed=0)
    assert [r["round"] for r in records] == [0, 1] and len(generated) == 1 and len(generated[0]) == 16
    assert all(np.isfinite(r["divergence"]) for r in records)
    assert all(r["log_p_allowed_before"] <= 0 and np.isfinite(r["log_p_allowed_after"]) for r in records)
    # the unconstrained ablation runs the same rounds with another objective
    _, old, _ = L.self_play(
        model, tr, val, vocab, L.encode_sampled(ids, vocab), f="js", beta=0.1, gamma=0.1, rounds=1, steps=3,
        batch=8, n_gen=16, o=L.Optim(5e-4, 1, 0.7, 0.01), max_val_rise=0.02, negatives=negatives(train, schema),
        rng=np.random.default_rng(4), val_seed=0, renormalise=False)
    assert old[0]["log_p_allowed_before"] == records[0]["log_p_allowed_before"]
    assert old[0]["divergence"] != records[0]["divergence"]
    # a rejected round keeps θt: with max_val_rise = −1 every round is rejected
    same, recs, _ = L.self_play(model, tr, val, vocab, L.encode_sampled(ids, vocab), f="kl", beta=0.1, gamma=0.1,
                                rounds=1, steps=2, batch=8, n_gen=8, o=L.Optim(5e-4, 1, 0.7, 0.01),
                                max_val_rise=-1.0, negatives=negatives(train, schema), rng=np.random.default_rng(4),
                                val_seed=0)
    assert not recs[0]["accepted"]
    assert all(torch.equal(a, b) for a, b in zip(same.state_dict().values(), model.state_dict().values()))


def test_gpu_profile_model_builds_and_steps_on_cpu():
    """The gpu profile's LM (8 layers, d = 384) at tiny batch on the CPU: one SFT step, one sample."""
    from assets.common.params import parse
    from assets.dispat.params import DispatParams
    from resources.profiles import load_params

    p = parse(DispatParams, load_params("dispat", "gpu"), "dispat.gpu")
    rows, train, vocab, _, schema = _cell("synthetic_transactions")
    model = L.build_model(vocab.size, p.model.d_model, p.model.n_heads, p.model.n_layers, p.model.context)
    assert model.config.n_layers == 8 and model.config.d_model == 384
    curve = L.train_sft(model, L.TokenRows(train, vocab), 1, 2, L.Optim(1e-4, 1, 0.7, 0.0), np.random.default_rng(0))
    assert np.isfinite(curve[0])
    parsed, _ = L.sample_rows(model, vocab, L.TokenRows(train, vocab), 2, np.random.default_rng(0),
                              negatives(train, schema))
    assert all(x is not None for x in parsed)
