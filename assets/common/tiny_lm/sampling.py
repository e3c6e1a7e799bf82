"""Sampling from a TinyLM with its KV cache — torch only, no Dagster.

Prompts of different lengths are left-padded: `prompt_mask` marks the real tokens, padded
keys get no attention and positions count only real tokens, so a prompt's continuation does
not depend on how much padding its batch needed.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch.nn import functional as F

from assets.common.tiny_lm.model import TinyLM


@dataclass
class Samples:
    """tokens (B, P + N): prompt (left-padded) then N sampled tokens; mask (B, P + N): real
    tokens (prompt tokens, and sampled tokens up to and including the first `eos`);
    logprobs (B, N): log-probability of each sampled token under the sampling distribution's
    model (temperature 1 logits); prompt_length P."""

    tokens: torch.Tensor
    mask: torch.Tensor
    logprobs: torch.Tensor
    prompt_length: int

    @property
    def completion(self) -> torch.Tensor:
        return self.tokens[:, self.prompt_length:]

    @property
    def completion_mask(self) -> torch.Tensor:
        return self.mask[:, self.prompt_length:]


def left_pad(prompts: list[list[int]], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(tokens (B, P), mask (B, P)) with every prompt right-aligned."""
    width = max(len(p) for p in prompts)
    tokens = torch.full((len(prompts), width), pad, dtype=torch.long)
    mask = torch.zeros((len(prompts), width), dtype=torch.bool)
    for i, prompt in enumerate(prompts):
        if prompt:
            tokens[i, width - len(prompt):] = torch.tensor(prompt, dtype=torch.long)
            mask[i, width - len(prompt):] = True
    return tokens, mask


def positions_of(mask: torch.Tensor) -> torch.Tensor:
    """Position of each real token among the real tokens of its row (0 for padding)."""
    return (mask.long().cumsum(dim=1) - 1).clamp(min=0)


def sampling_generator(generator: torch.Generator, device: torch.device) -> torch.Generator:
    """The generator sampling on `device` draws from: `generator` (a CPU generator) itself on the
    CPU, so CPU runs draw exactly what they drew before devices existed; on another device one of
    that device, seeded from `generator` (torch samples there only from a device generator)."""
    if device.type == "cpu":
        return generator
    seed = int(torch.randint(0, 2**62, (1,), generator=generator))
    return torch.Generator(device=device).manual_seed(seed)


@torch.no_grad()
def generate(model: TinyLM, prompt_tokens: torch.Tensor, prompt_mask: torch.Tensor, max_new: int, *,
             eos: int | None = None, pad: int = 0, temperature: float = 1.0, greedy: bool = False,
             generator: torch.Generator | None = None,
             logits_hook: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
             use_cache: bool = True, stop_when_done: bool = False) -> Samples:
    """Sample `max_new` tokens per row (stopping rows at `eos`: later tokens are `pad` and
    masked out). Deterministic given `generator`.

    logits_hook(logits (B, V), generated (B, n)) → logits, called before every choice with the
    tokens sampled so far (constrained decoding: set disallowed tokens to −inf); the recorded
    log-probabilities are then those of the constrained distribution. use_cache=False
    recomputes the whole prefix at every step (same tokens; a speed baseline).
    stop_when_done ends the loop once every row has emitted `eos` (fewer than max_new columns).
    The defaults keep the original behaviour. Works on the model's device (prompt, generator and
    model on the same device; CPU tensors as before)."""
    b, p = prompt_tokens.shape
    if p + max_new > model.config.context:
        raise ValueError(f"prompt {p} + {max_new} new tokens exceed the context {model.config.context}")
    mask = prompt_mask.bool().clone()
    positions = positions_of(mask)
    out = model(prompt_tokens, key_mask=mask, positions=positions, use_cache=True,
                cache_capacity=p + max_new if use_cache else 0)
    cache, logits = out.cache, out.logits[:, -1]
    next_position = positions[:, -1] + mask[:, -1].long()
    done = torch.zeros(b, dtype=torch.bool, device=prompt_tokens.device)
    tokens, logps, alive = [], [], []
    for _ in range(max_new):
        if logits_hook is not None:
            generated = torch.stack(tokens, dim=1) if tokens else prompt_tokens.new_zeros((b, 0))
            logits = logits_hook(logits, generated)
        logp = F.log_softmax(logits.float(), dim=-1)
        if greedy:
            choice = logp.argmax(dim=-1)
        else:
            probs = torch.softmax(logits.float() / temperature, dim=-1)
            choice = torch.multinomial(probs, 1, generator=generator).squeeze(-1)
        live = ~done
        choice = torch.where(live, choice, torch.full_like(choice, pad))
        tokens.append(choice)
        logps.append(torch.where(live, logp.gather(-1, choice[:, None]).squeeze(-1), logp.new_zeros(b)))
        alive.append(live)
        if eos is not None:
            done = done | (choice == eos)
        mask = torch.cat([mask, live[:, None]], dim=1)
        if stop_when_done and eos is not None and bool(done.all()):
            break
        if use_cache:
            out = model(choice[:, None], key_mask=mask, positions=next_position[:, None], cache=cache,
                        use_cache=True)
            cache, logits = out.cache, out.logits[:, -1]
        else:
            so_far = torch.cat([prompt_tokens, torch.stack(tokens, dim=1)], dim=1)
            out = model(so_far, key_mask=mask, positions=positions_of(mask))
            logits = out.logits[:, -1]
        next_position = next_position + live.long()
    new = torch.stack(tokens, dim=1)
    return Samples(torch.cat([prompt_tokens, new], dim=1), torch.cat([prompt_mask.bool(), torch.stack(alive, 1)], 1),
                   torch.stack(logps, dim=1), p)
