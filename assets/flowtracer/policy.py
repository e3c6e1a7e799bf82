"""The FlowTracer policy: a TinyLM trained by SFT on gold traces, greedy decoding and accuracy —
torch only, no Dagster.

Sequences are `<bos> prompt trace <eos>` (assets.flowtracer.data), right-padded for training
(positions 0…, the loss on trace and `<eos>` tokens only) and left-padded for generation
(assets.common.tiny_lm.sampling: positions count real tokens, so both see the same positions).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType

import numpy as np
import torch
from torch.nn import functional as F

from assets.common.tiny_lm.model import TinyLM, TinyLMConfig
from assets.common.tiny_lm.sampling import generate, left_pad
from assets.flowtracer import data as D


def build_model(n_layers: int, d_model: int, n_heads: int, context: int, tie_embeddings: bool,
                positional: str = "learned", task: ModuleType = D) -> TinyLM:
    """A TinyLM over the task's vocabulary (RegTrace's by default; assets.flowtracer.tasks)."""
    return TinyLM(TinyLMConfig(vocab_size=len(task.VOCAB), d_model=d_model, n_heads=n_heads, n_layers=n_layers,
                               context=context, tie_embeddings=tie_embeddings, positional=positional))


def prompt_ids(prompt: str, task: ModuleType = D) -> list[int]:
    """`<bos>` + prompt tokens: what generation starts from."""
    return [D.BOS_ID] + task.encode(prompt)


@dataclass(frozen=True)
class SFTExample:
    ids: list[int]                  # <bos> prompt trace <eos>
    loss_from: int                  # first target position (the first trace token)
    n_ops: int


def sft_examples(frame, task: ModuleType = D) -> list[SFTExample]:
    return [SFTExample(task.sequence_ids(r.prompt, r.trace), D.trace_start(r.prompt), int(r.n_ops))
            for r in frame.itertuples()]


def curriculum_max_ops(step: int, curriculum: int, min_ops: int, max_ops: int) -> int:
    """Largest op count allowed at SFT step `step` (1-based): min_ops for the first `curriculum`
    steps (a warm-up on the shortest problems), max_ops after (and throughout when 0)."""
    return min_ops if step <= curriculum else max_ops


def sft_batch(examples: Sequence[SFTExample], pick: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    """(tokens (b, L) right-padded with <pad>, target mask (b, L − 1): trace and <eos> targets)."""
    width = max(len(examples[i].ids) for i in pick)
    tokens = torch.full((len(pick), width), D.PAD_ID, dtype=torch.long)
    target = torch.zeros((len(pick), width - 1), dtype=torch.bool)
    for row, i in enumerate(pick):
        ex = examples[i]
        tokens[row, :len(ex.ids)] = torch.tensor(ex.ids, dtype=torch.long)
        target[row, ex.loss_from - 1:len(ex.ids) - 1] = True
    return tokens, target


def learning_rate(step: int, lr: float, warmup: int, decay: int, floor: float = 0.1) -> float:
    """lr at SFT step `step` (1-based): linear warm-up over `warmup` steps, then a cosine from lr
    to floor · lr over `decay` steps (constant after; no decay when decay is 0)."""
    scale = min(1.0, step / warmup) if warmup else 1.0
    if decay:
        scale *= floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * min(1.0, step / decay)))
    return lr * scale


def sft_loss(logits: torch.Tensor, tokens: torch.Tensor, target: torch.Tensor, answer_weight: float = 1.0,
             answer_after: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(loss, plain mean cross-entropy) of next-token logits (b, L − 1, V) for tokens (b, L) on the
    target mask (b, L − 1). loss = Σ w_t ℓ_t / Σ w_t with w_t = answer_weight where the input
    token is `answer_after` (the answer digit follows `#`), 1 elsewhere; with answer_weight 1 it
    is the plain mean itself."""
    if answer_weight == 1.0:
        plain = F.cross_entropy(logits[target], tokens[:, 1:][target])
        return plain, plain
    ce = F.cross_entropy(logits[target], tokens[:, 1:][target], reduction="none")
    w = torch.where(tokens[:, :-1][target] == answer_after, answer_weight, 1.0).to(ce.dtype)
    return (w * ce).sum() / w.sum(), ce.detach().mean()


def sft_train(model: TinyLM, examples: Sequence[SFTExample], steps: int, batch_size: int, lr: float, warmup: int,
              curriculum: int, min_ops: int, max_ops: int, rng: np.random.Generator, decay: int = 0,
              on_snapshot: Callable[[int, float], bool] | None = None, snapshot_every: int = 0,
              log: Callable[[str], None] | None = None, weight_decay: float = 0.0,
              beta2: float = 0.999, answer_weight: float = 1.0, answer_weight_loss: float = 0.0,
              answer_after: int | None = None) -> list[float]:
    """Next-token cross-entropy (nats/token) on trace tokens, AdamW (betas (0.9, beta2), weight_decay), the
    `learning_rate` schedule, gradient-norm clip 1, a shortest-problems-first curriculum.
    Every `snapshot_every` steps calls on_snapshot(step, mean recent loss); training stops
    early when it returns True.

    answer_weight w ≠ 1: the answer's target (the one whose input token is `answer_after`, the
    `#`) weighs w in a weighted mean, Σ w_t ℓ_t / Σ w_t, from the first snapshot whose mean loss
    is under answer_weight_loss on (from the start when answer_weight_loss is 0); before that,
    and with w = 1, the plain mean, bit for bit.
    Returns the per-step losses (the plain mean cross-entropy, weighted or not)."""
    if not examples:
        raise ValueError("no SFT examples")
    if answer_weight != 1.0 and answer_after is None:
        raise ValueError("answer_weight needs answer_after (the token id before the answer)")
    weighted = answer_weight != 1.0 and not answer_weight_loss
    n_ops = np.array([ex.n_ops for ex in examples])
    device = next(model.parameters()).device
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, beta2), weight_decay=weight_decay)
    losses: list[float] = []
    model.train()
    for step in range(1, steps + 1):
        allowed = np.flatnonzero(n_ops <= curriculum_max_ops(step, curriculum, min_ops, max_ops))
        pick = rng.choice(allowed, size=min(batch_size, len(allowed)), replace=False)
        tokens, target = (t.to(device) for t in sft_batch(examples, pick))
        for group in opt.param_groups:
            group["lr"] = learning_rate(step, lr, warmup, decay)
        logits = model(tokens[:, :-1]).logits
        loss, plain = sft_loss(logits, tokens, target, answer_weight if weighted else 1.0, answer_after)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(float(plain.detach()))
        if log and step % max(1, steps // 10) == 0:
            log(f"SFT step {step}/{steps}: loss {np.mean(losses[-50:]):.3f}")
        if on_snapshot is not None and snapshot_every and step % snapshot_every == 0:
            model.eval()
            recent = float(np.mean(losses[-snapshot_every:]))
            stop = on_snapshot(step, recent)
            model.train()
            if answer_weight != 1.0 and not weighted and recent < answer_weight_loss:
                weighted = True
                if log:
                    log(f"SFT step {step}: loss {recent:.3f} < {answer_weight_loss}: the answer weighs {answer_weight}")
            if stop:
                break
    model.eval()
    return losses


@torch.no_grad()
def greedy_traces(model: TinyLM, prompts: Sequence[str], max_new: int, batch_size: int = 256,
                  task: ModuleType = D) -> list[str]:
    """Greedy completions (text after the prompt, cut at the first `<eos>`)."""
    out: list[str] = []
    for start in range(0, len(prompts), batch_size):
        chunk = [prompt_ids(p, task) for p in prompts[start:start + batch_size]]
        tokens, mask = (t.to(next(model.parameters()).device) for t in left_pad(chunk, D.PAD_ID))
        samples = generate(model, tokens, mask, max_new, eos=D.EOS_ID, pad=D.PAD_ID, greedy=True,
                           stop_when_done=True)
        for row in samples.completion.tolist():
            out.append(completion_text(row, task))
    return out


def completion_text(ids: Sequence[int], task: ModuleType = D) -> str:
    """Decoded completion up to (not including) the first `<eos>`; padding dropped."""
    kept = []
    for i in ids:
        if i == D.EOS_ID:
            break
        if i != D.PAD_ID:
            kept.append(i)
    return task.decode(kept)


def accuracy(model: TinyLM, prompts: Sequence[str], answers: Sequence[int], max_new: int,
             task: ModuleType = D) -> tuple[float, list[float]]:
    """Greedy accuracy: reward 1 iff the trace parses and its answer is right. (mean, per prompt)."""
    texts = greedy_traces(model, prompts, max_new, task=task)
    rewards = [task.reward(int(a), t) for a, t in zip(answers, texts, strict=True)]
    return float(np.mean(rewards)) if rewards else float("nan"), rewards
