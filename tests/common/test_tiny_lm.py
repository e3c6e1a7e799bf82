"""The shared tiny transformer: causality, masks, layer skipping, KV cache, sampling, GRPO."""
from __future__ import annotations

import pytest
import torch

from assets.common.tiny_lm import TinyLM, TinyLMConfig, token_logprobs
from assets.common.tiny_lm.grpo import clipped_policy_loss, group_advantages
from assets.common.tiny_lm.sampling import generate, left_pad, sampling_generator


def lm(**kw) -> TinyLM:
    torch.manual_seed(0)
    return TinyLM(TinyLMConfig(**{"vocab_size": 17, "d_model": 16, "n_heads": 4, "n_layers": 3, "context": 24, **kw}))


def test_config_rejects_inconsistent_shapes():
    with pytest.raises(ValueError, match="divisible"):
        TinyLMConfig(vocab_size=5, d_model=10, n_heads=4)
    with pytest.raises(ValueError, match="exactly one"):
        TinyLMConfig(vocab_size=5, input_dim=3)


def test_outputs_are_causal_and_attention_rows_sum_to_one():
    model = lm().eval()
    x = torch.randint(0, 17, (2, 10))
    y = x.clone()
    y[:, 6:] = (y[:, 6:] + 1) % 17                 # change the future only
    a, b = model(x, return_attention=True), model(y)
    torch.testing.assert_close(a.logits[:, :6], b.logits[:, :6])
    for probs in a.attentions:
        assert probs.shape == (2, 4, 10, 10)
        torch.testing.assert_close(probs.sum(-1), torch.ones(2, 4, 10))
        assert torch.all(probs.triu(diagonal=1) == 0)


def test_masked_keys_get_no_attention_and_do_not_matter():
    model = lm().eval()
    x = torch.randint(0, 17, (1, 8))
    mask = torch.ones(1, 8, dtype=torch.bool)
    mask[0, 2] = False
    out = model(x, key_mask=mask, return_attention=True)
    assert all(torch.all(p[..., 2] == 0) for p in out.attentions)
    y = x.clone()
    y[0, 2] = (y[0, 2] + 5) % 17                  # what a masked key holds cannot reach later queries
    torch.testing.assert_close(model(y, key_mask=mask).logits[:, 3:], out.logits[:, 3:])


@pytest.mark.parametrize("positional", ["learned", "alibi"])
def test_padding_changes_no_real_token_and_no_gradient(positional):
    """Right padding (every query keeps a key: the masks fold into one additive term) and left
    padding (the first queries of a row have no key: masked per layer, NaN rows zeroed) give each
    row's real tokens the logits and parameter gradients of that row run alone, unpadded."""
    model = lm(positional=positional)
    rows = [torch.randint(0, 17, (n,), generator=torch.Generator().manual_seed(n)) for n in (9, 5, 7)]

    def loss_and_grads(logits_of_rows):
        model.zero_grad()
        logits = logits_of_rows()
        sum(l.square().mean() for l in logits).backward()
        return [l.detach() for l in logits], [p.grad.clone() for p in model.parameters()]

    alone = loss_and_grads(lambda: [model(r[None]).logits[0] for r in rows])
    width = max(len(r) for r in rows)
    right = torch.zeros(3, width, dtype=torch.long)
    right_mask = torch.zeros(3, width, dtype=torch.bool)
    left, left_mask = torch.zeros_like(right), torch.zeros_like(right_mask)
    for i, r in enumerate(rows):
        right[i, :len(r)], right_mask[i, :len(r)] = r, True
        left[i, width - len(r):], left_mask[i, width - len(r):] = r, True
    left_positions = (left_mask.cumsum(1) - 1).clamp(min=0)
    padded = {
        "right": lambda: [l[:len(r)] for l, r in zip(model(right, key_mask=right_mask).logits, rows)],
        "left": lambda: [l[width - len(r):] for l, r in zip(
            model(left, key_mask=left_mask, positions=left_positions).logits, rows)],
    }
    for name, run in padded.items():
        logits, grads = loss_and_grads(run)
        for a, b in zip(logits, alone[0]):
            torch.testing.assert_close(a, b, msg=f"{name} padding changed a real token's logits")
        for a, b in zip(grads, alone[1]):
            assert torch.isfinite(a).all(), f"{name} padding: non-finite gradient"
            torch.testing.assert_close(a, b, msg=f"{name} padding changed a gradient")


def test_keep_all_layers_is_the_full_model_and_skipping_is_identity():
    model = lm().eval()
    x = torch.randint(0, 17, (2, 7))
    full = model(x, return_hidden=True)
    torch.testing.assert_close(model(x, keep=[0, 1, 2]).logits, full.logits)
    # skipping layer 1 = that block's residual branches contribute zero
    skipped = model(x, keep=[0, 2])
    blocks = model.blocks
    saved = [p.detach().clone() for p in blocks[1].attn.out.parameters()] + \
            [p.detach().clone() for p in blocks[1].mlp[2].parameters()]
    with torch.no_grad():
        for p in [*blocks[1].attn.out.parameters(), *blocks[1].mlp[2].parameters()]:
            p.zero_()
    torch.testing.assert_close(model(x).logits, skipped.logits)
    with torch.no_grad():
        for p, s in zip([*blocks[1].attn.out.parameters(), *blocks[1].mlp[2].parameters()], saved):
            p.copy_(s)
    assert skipped.layers == [0, 2] and len(full.hidden_states) == 4
    with pytest.raises(ValueError, match="increasing"):
        model(x, keep=[2, 0])


@pytest.mark.parametrize("positional", ["learned", "alibi", "learned+alibi"])
def test_kv_cache_equals_the_full_forward_pass(positional):
    model = lm(positional=positional).eval()
    x = torch.randint(0, 17, (3, 9))
    full = model(x).logits
    out = model(x[:, :5], use_cache=True)
    steps = [out.logits]
    cache = out.cache
    for t in range(5, 9):
        out = model(x[:, t:t + 1], cache=cache, use_cache=True)
        cache = out.cache
        steps.append(out.logits)
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("positional", ["learned", "alibi"])
def test_a_cache_with_capacity_fills_one_buffer_in_place_and_gives_the_same_numbers(positional):
    model = lm(positional=positional).eval()
    x = torch.randint(0, 17, (3, 9))
    grown = model(x[:, :5], use_cache=True)
    sized = model(x[:, :5], use_cache=True, cache_capacity=7)
    buffer = sized.cache[0].key_buffer
    assert buffer.shape[2] == 7 and grown.cache[0].key_buffer is None
    for t in range(5, 9):                       # positions 5, 6 fit the buffer; 7, 8 are concatenated
        grown = model(x[:, t:t + 1], cache=grown.cache, use_cache=True)
        sized = model(x[:, t:t + 1], cache=sized.cache, use_cache=True)
        assert torch.equal(sized.logits, grown.logits)
        for a, b in zip(sized.cache, grown.cache):
            assert torch.equal(a.keys, b.keys) and torch.equal(a.values, b.values)
        assert (sized.cache[0].key_buffer is buffer) == (t + 1 <= 7)
        if t + 1 <= 7:
            assert sized.cache[0].keys.data_ptr() == buffer.data_ptr()      # a view: nothing copied


def test_vector_inputs_give_hidden_states_without_an_lm_head():
    torch.manual_seed(0)
    model = TinyLM(TinyLMConfig(input_dim=5, d_model=16, n_heads=2, n_layers=2, context=12)).eval()
    out = model(vectors=torch.randn(2, 6, 5))
    assert out.logits is None and out.hidden.shape == (2, 6, 16)
    assert model.n_parameters([0]) < model.n_parameters()


def test_token_logprobs_match_the_softmax_of_the_logits():
    model = lm().eval()
    x = torch.randint(0, 17, (2, 6))
    lp = token_logprobs(model, x)
    manual = torch.log_softmax(model(x).logits, -1)[:, :-1].gather(-1, x[:, 1:, None]).squeeze(-1)
    torch.testing.assert_close(lp, manual)


@pytest.mark.parametrize("positional", ["learned", "alibi"])
def test_left_padded_generation_does_not_depend_on_the_batch(positional):
    model = lm(positional=positional).eval()
    prompts = [[1, 2, 3], [4, 5, 6, 7, 8]]
    tokens, mask = left_pad(prompts, pad=0)
    batch = generate(model, tokens, mask, 6, greedy=True)
    alone_tokens, alone_mask = left_pad(prompts[:1], pad=0)
    alone = generate(model, alone_tokens, alone_mask, 6, greedy=True)
    assert batch.completion[0].tolist() == alone.completion[0].tolist()
    # sampled log-probs are the model's: re-scoring the sequence gives the same numbers
    lp = token_logprobs(model, alone.tokens)[:, alone.prompt_length - 1:]
    torch.testing.assert_close(lp, alone.logprobs, atol=1e-5, rtol=1e-5)


def test_generation_stops_at_eos_and_is_seeded():
    model = lm().eval()
    tokens, mask = left_pad([[1, 2]], pad=0)
    a = generate(model, tokens, mask, 8, generator=torch.Generator().manual_seed(5))
    b = generate(model, tokens, mask, 8, generator=torch.Generator().manual_seed(5))
    assert torch.equal(a.tokens, b.tokens)
    free = generate(model, tokens, mask, 8, greedy=True).completion[0].tolist()
    eos = free[2]                                   # the token greedy decoding emits third
    stop = free.index(eos)
    stopped = generate(model, tokens, mask, 8, greedy=True, eos=eos, pad=16)
    assert stopped.completion[0, :stop + 1].tolist() == free[:stop + 1]
    assert stopped.completion_mask[0, stop] and not stopped.completion_mask[0, stop + 1:].any()
    assert stopped.completion[0, stop + 1:].tolist() == [16] * (7 - stop)
    assert torch.all(stopped.logprobs[0, stop + 1:] == 0)


def test_sampling_builds_no_autograd_graph_and_the_cpu_generator_is_used_as_is():
    model = lm().eval()                      # parameters require grad: sampling must not track them
    tokens, mask = left_pad([[1, 2], [3]], pad=0)
    out = generate(model, tokens, mask, 6, generator=torch.Generator().manual_seed(1))
    assert out.logprobs.grad_fn is None and not out.logprobs.requires_grad
    cpu = torch.Generator().manual_seed(3)
    assert sampling_generator(cpu, torch.device("cpu")) is cpu


def test_group_advantages_known_answers():
    rewards = torch.tensor([1.0, 0.0, 1.0, 0.0, 0.5, 0.5])
    groups = torch.tensor([0, 0, 0, 0, 1, 1])
    adv = group_advantages(rewards, groups)
    torch.testing.assert_close(adv[:4], torch.tensor([1.0, -1.0, 1.0, -1.0]), atol=1e-5, rtol=0)
    assert torch.all(adv[4:] == 0)                         # equal rewards: no signal


def test_clipped_loss_is_plain_policy_gradient_inside_the_clip_and_weights_scale_it():
    logp = torch.tensor([[-1.0, -2.0, -3.0]], requires_grad=True)
    old = logp.detach().clone()
    adv = torch.tensor([2.0])
    mask = torch.tensor([[1, 1, 0]])
    loss = clipped_policy_loss(logp, old, adv, mask)
    assert loss.item() == pytest.approx(-2.0)             # ratio 1: −mean over the 2 real tokens of Â
    loss.backward()
    torch.testing.assert_close(logp.grad, torch.tensor([[-1.0, -1.0, 0.0]]))
    weighted = clipped_policy_loss(logp.detach(), old, adv, mask, weights=torch.tensor([[1.5, 1.0, 1.0]]))
    assert weighted.item() == pytest.approx(-2.5)
    # a ratio beyond 1 + ε with a positive advantage is clipped: no gradient
    far = (old + 1.0).requires_grad_(True)
    clipped_policy_loss(far, old, adv, mask).backward()
    assert torch.all(far.grad == 0)


# ----------------------------------------------------------------------------- ALiBi positions

def test_alibi_slopes_are_the_geometric_sequence_of_the_paper():
    from assets.common.tiny_lm.model import alibi_slopes
    torch.testing.assert_close(alibi_slopes(4), torch.tensor([2.0 ** -2, 2.0 ** -4, 2.0 ** -6, 2.0 ** -8]))
    torch.testing.assert_close(alibi_slopes(8), torch.tensor([2.0 ** -(h + 1) for h in range(8)]))
    with pytest.raises(ValueError, match="positional"):
        TinyLMConfig(vocab_size=5, positional="rotary")


def test_alibi_attention_with_constant_scores_is_the_softmax_of_minus_slope_times_distance():
    model = lm(positional="alibi").eval()
    with torch.no_grad():                          # queries and keys zero: every raw score is 0
        for block in model.blocks:
            block.attn.qkv.weight[:2 * 16].zero_()
            block.attn.qkv.bias[:2 * 16].zero_()
    t = 6
    out = model(torch.randint(0, 17, (1, t)), return_attention=True)
    slopes = torch.tensor([2.0 ** -2, 2.0 ** -4, 2.0 ** -6, 2.0 ** -8])
    i, j = torch.arange(t)[:, None], torch.arange(t)[None, :]
    expected = torch.softmax((-slopes[:, None, None] * (i - j)).masked_fill(j > i, float("-inf")), dim=-1)
    for probs in out.attentions:
        torch.testing.assert_close(probs[0], expected)
    assert "position.weight" not in model.state_dict()
    assert "slopes" not in model.state_dict()      # a constant, not a parameter of the checkpoint


def test_alibi_depends_on_relative_positions_only_and_learned_positions_do_not():
    x = torch.randint(0, 17, (2, 7))
    base = torch.arange(7).expand(2, 7)
    alibi, learned = lm(positional="alibi").eval(), lm().eval()
    torch.testing.assert_close(alibi(x, positions=base + 5).logits, alibi(x, positions=base).logits)
    assert not torch.allclose(learned(x, positions=base + 5).logits, learned(x, positions=base).logits)
    # and it is not position-blind: reversing the order of the keys changes the output
    assert not torch.allclose(alibi(x.flip(1)).logits[:, -1], alibi(x).logits[:, -1])
