"""What dispat added to the shared tiny LM's sampler: a logits hook (constrained decoding),
a no-cache path (the KV-cache speed baseline) and early stopping — defaults unchanged."""
from __future__ import annotations

import torch

from assets.common.tiny_lm import TinyLM, TinyLMConfig
from assets.common.tiny_lm.sampling import generate, left_pad


def _model(seed: int = 0) -> TinyLM:
    torch.manual_seed(seed)
    return TinyLM(TinyLMConfig(vocab_size=13, d_model=32, n_heads=4, n_layers=2, context=40)).eval()


def test_no_cache_path_gives_the_same_tokens_as_the_cache():
    model = _model()
    tokens, mask = left_pad([[1, 2, 3], [4], [5, 6]], pad=0)
    a = generate(model, tokens, mask, 12, eos=7, greedy=True)
    b = generate(model, tokens, mask, 12, eos=7, greedy=True, use_cache=False)
    assert torch.equal(a.tokens, b.tokens) and torch.equal(a.mask, b.mask)
    assert torch.allclose(a.logprobs, b.logprobs, atol=1e-5)
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    s1 = generate(model, tokens, mask, 12, eos=7, generator=g1)
    s2 = generate(model, tokens, mask, 12, eos=7, generator=g2, use_cache=False)
    assert torch.equal(s1.tokens, s2.tokens)


def test_defaults_are_unchanged_by_an_identity_hook():
    model = _model(1)
    tokens, mask = left_pad([[1, 2], [3]], pad=0)
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    plain = generate(model, tokens, mask, 10, eos=7, generator=g1)
    hooked = generate(model, tokens, mask, 10, eos=7, generator=g2, logits_hook=lambda logits, gen: logits)
    assert torch.equal(plain.tokens, hooked.tokens)
    assert torch.allclose(plain.logprobs, hooked.logprobs)


def test_hook_constrains_every_choice_and_sees_the_tokens_so_far():
    model = _model(2)
    tokens, mask = left_pad([[1], [2], [3]], pad=0)
    seen = []

    def only_even_then_eos(logits, generated):
        seen.append(generated.shape[1])
        out = torch.full_like(logits, float("-inf"))
        if generated.shape[1] >= 4:
            out[:, 7] = 0.0                              # force eos after four tokens
        else:
            out[:, [2, 4, 6, 8]] = logits[:, [2, 4, 6, 8]]
        return out

    s = generate(model, tokens, mask, 9, eos=7, generator=torch.Generator().manual_seed(0),
                 logits_hook=only_even_then_eos, stop_when_done=True)
    comp = s.completion
    assert comp.shape[1] == 5                            # stopped once every row emitted eos
    assert seen == [0, 1, 2, 3, 4]
    assert set(comp[:, :4].flatten().tolist()) <= {2, 4, 6, 8}
    assert (comp[:, 4] == 7).all()
    # the recorded log-probabilities are those of the constrained distribution (forced eos: 0)
    assert torch.allclose(s.logprobs[:, 4], torch.zeros(3))
