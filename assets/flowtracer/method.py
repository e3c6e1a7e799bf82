"""FlowTracer's token credit and the GRPO step it shapes — torch only, no Dagster.

Credit (spec step 5): for each rollout, T_high = the top `fraction` (40 %) of its response
tokens by a score; γ_t = `gamma` (1.5) on T_high, 1 elsewhere; every token's clipped surrogate
is multiplied by γ_t (assets.common.tiny_lm.grpo). The rules compared, all with the same γ
mechanism and the same share of tokens:

    flowtracer  τ(t), answer-conditioned flow throughput (assets.flowtracer.flow)
    bottom      −τ(t): the bottom 40 % (the paper's ablation)
    attention   max attention the token receives, max_k W[t, k] (point-wise)
    entropy     entropy of the policy's distribution at t (point-wise)
    random      a uniform random score (same mean weight)
    uniform     γ ≡ 1: plain GRPO

A rollout whose response has no answer region (no `#` followed by a token) has no flow: its
flow-based weights are 1 (counted as `no_flow` in the step statistics).
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType

import numpy as np
import torch

from assets.common.tiny_lm.grpo import clipped_policy_loss, group_advantages
from assets.common.tiny_lm.model import TinyLM
from assets.common.tiny_lm.sampling import generate, left_pad, sampling_generator
from assets.flowtracer import data as D
from assets.flowtracer import flow as FL
from assets.flowtracer.policy import completion_text, prompt_ids

CREDIT_RULES = ("flowtracer", "uniform", "random", "attention", "entropy", "bottom")
FLOW_RULES = ("flowtracer", "bottom")


def top_fraction_mask(scores: torch.Tensor, mask: torch.Tensor, fraction: float,
                      generator: torch.Generator | None = None) -> torch.Tensor:
    """(N, T) bool: per row, the round(fraction · n_i) highest-scoring positions among the n_i
    positions where mask is True (at least one when n_i > 0 and fraction > 0). Ties are broken
    uniformly at random (by `generator`), never by position."""
    mask = mask.bool()
    n = mask.sum(dim=1)
    k = torch.where(n > 0, torch.clamp(torch.round(fraction * n.double()).long(), min=1 if fraction > 0 else 0),
                    torch.zeros_like(n))
    noise = torch.rand(scores.shape, generator=generator, dtype=torch.float64).to(scores.device)   # CPU stream
    keyed = torch.where(mask, scores.double(), torch.full_like(scores, -torch.inf, dtype=torch.float64))
    # sort by score, then by random noise: lexicographic through a stable double sort
    order = torch.argsort(noise, dim=1)
    by_score = torch.argsort(torch.gather(keyed, 1, order), dim=1, descending=True, stable=True)
    ranked = torch.gather(order, 1, by_score)
    rank = torch.empty_like(ranked)
    rank.scatter_(1, ranked, torch.arange(scores.shape[1], device=scores.device).expand_as(ranked))
    return mask & (rank < k[:, None])


def credit_weights(scores: torch.Tensor | None, mask: torch.Tensor, fraction: float, gamma: float,
                   generator: torch.Generator | None = None) -> torch.Tensor:
    """γ (N, T) float: gamma on the top `fraction` of each row's masked positions by score, 1
    elsewhere; all ones when scores is None (plain GRPO)."""
    weights = torch.ones(mask.shape, dtype=torch.float32, device=mask.device)
    if scores is None:
        return weights
    top = top_fraction_mask(scores, mask, fraction, generator)
    weights[top] = gamma
    return weights


@dataclass
class Batch:
    """Rollouts re-packed right-padded for the scoring / update pass.

    tokens (N, T) long: <bos> prompt response (through <eos>) <pad>…; key_mask (N, T) bool real
    tokens; response (N, T) bool response positions; question (N, T) bool prompt positions (the
    <bos> included only when keep_bos); answer (N, T) bool the `#` and the token after it in
    the response (empty when the response has no `#`); rewards (N,) float; texts: decoded
    responses."""

    tokens: torch.Tensor
    key_mask: torch.Tensor
    response: torch.Tensor
    question: torch.Tensor
    answer: torch.Tensor
    rewards: torch.Tensor
    texts: list[str]

    def to(self, device) -> Batch:
        """The same batch with its tensors on `device` (itself on the CPU when it is there)."""
        return Batch(*(getattr(self, f).to(device) for f in ("tokens", "key_mask", "response", "question", "answer",
                                                             "rewards")), self.texts)


def pack(prompts: Sequence[list[int]], responses: Sequence[list[int]], answers: Sequence[int],
         keep_bos: bool, task: ModuleType = D) -> Batch:
    """prompts: token ids (<bos> first); responses: sampled ids through the first <eos> (or
    max_new tokens); answers: gold answers."""
    lengths = [len(p) + len(r) for p, r in zip(prompts, responses, strict=True)]
    n, width = len(prompts), max(lengths)
    tokens = torch.full((n, width), D.PAD_ID, dtype=torch.long)
    key_mask = torch.zeros((n, width), dtype=torch.bool)
    response = torch.zeros_like(key_mask)
    question = torch.zeros_like(key_mask)
    answer = torch.zeros_like(key_mask)
    texts, rewards = [], []
    hash_id = task.TOKEN_ID["#"]
    for i, (p, r) in enumerate(zip(prompts, responses, strict=True)):
        tokens[i, :len(p) + len(r)] = torch.tensor(p + r, dtype=torch.long)
        key_mask[i, :len(p) + len(r)] = True
        response[i, len(p):len(p) + len(r)] = True
        question[i, (0 if keep_bos else 1):len(p)] = True
        if hash_id in r:
            j = r.index(hash_id)
            if j + 1 < len(r):
                answer[i, len(p) + j:len(p) + j + 2] = True
        text = completion_text(r, task)
        texts.append(text)
        rewards.append(task.reward(int(answers[i]), text))
    return Batch(tokens, key_mask, response, question, answer, torch.tensor(rewards), texts)


def token_logprobs(model: TinyLM, batch: Batch, return_attention: bool):
    """log π(token_t | prefix) for t ≥ 1 (N, T − 1) aligned with tokens[:, 1:], the entropy of
    each of those distributions (N, T − 1), and the attention maps (N, L, H, T, T) or None."""
    out = model(batch.tokens, key_mask=batch.key_mask, return_attention=return_attention)
    logp_all = torch.log_softmax(out.logits[:, :-1].float(), dim=-1)
    logp = logp_all.gather(-1, batch.tokens[:, 1:, None]).squeeze(-1)
    entropy = -(logp_all.exp() * logp_all).sum(-1)
    attn = torch.stack(out.attentions, dim=1) if return_attention else None
    return logp, entropy, attn


def rule_scores(rule: str, attn: torch.Tensor | None, entropy: torch.Tensor, batch: Batch, layers: Sequence[int],
                drop_bos: bool, log_space: bool, generator: torch.Generator) -> tuple[torch.Tensor | None, dict]:
    """Per-position scores (N, T) for a credit rule (None for uniform) and diagnostics."""
    n, t = batch.tokens.shape
    device = batch.tokens.device
    info: dict = {}
    if rule == "uniform":
        return None, info
    if rule == "random":
        return torch.rand((n, t), generator=generator, dtype=torch.float64).to(device), info
    if rule == "entropy":
        scores = torch.zeros((n, t), dtype=torch.float64, device=device)
        scores[:, 1:] = entropy.detach().double()
        return scores, info
    if rule == "attention":
        W = FL.edge_weights(attn.detach(), layers, drop_sink_columns=(0,) if drop_bos else (), key_mask=batch.key_mask)
        return FL.max_received(W), info
    has_flow = batch.answer.any(dim=1)
    tau = torch.zeros((n, t), dtype=torch.float64, device=device)
    if bool(has_flow.any()):
        idx = torch.nonzero(has_flow).flatten()
        result = FL.trace_flow_batch(attn.detach()[idx], batch.key_mask[idx], batch.question[idx],
                                     batch.answer[idx], layers, log_space=log_space,
                                     drop_sink_columns=(0,) if drop_bos else ())
        tau[idx] = result.tau
        info["conservation_error"] = float(result.conservation_error.max())
        info["absorbed_mass_error"] = float((result.absorbed_mass - 1).abs().max())
    info["no_flow"] = int((~has_flow).sum())
    # without flow a rollout keeps γ ≡ 1: give every position the same score and no top set
    tau[~has_flow] = torch.nan
    return (tau if rule == "flowtracer" else -tau), info


def grpo_step(policy: TinyLM, opt: torch.optim.Optimizer, problems: Sequence[tuple[str, int]], rule: str, *,
              group_size: int, max_new: int, temperature: float, clip: float, fraction: float, gamma: float,
              layers: Sequence[int], drop_bos: bool, log_space: bool, generator: torch.Generator,
              task: ModuleType = D) -> dict:
    """One GRPO step on `problems` (prompt text, gold answer), G rollouts each: sample, reward,
    one scoring pass (log-probs, entropies, attention), credit, one clipped update. With one
    update per batch the ratio is 1 at the update, so the scoring pass is the old-log-prob pass
    (its attention is what the flow reads; detached). Returns step statistics (seconds by phase)."""
    t0 = time.perf_counter()
    device = next(policy.parameters()).device
    ids = [prompt_ids(p, task) for p, _ in problems for _ in range(group_size)]
    answers = [a for _, a in problems for _ in range(group_size)]
    groups = torch.arange(len(problems), device=device).repeat_interleave(group_size)
    tokens, mask = left_pad(ids, D.PAD_ID)
    policy.eval()
    samples = generate(policy, tokens.to(device), mask.to(device), max_new, eos=D.EOS_ID, pad=D.PAD_ID,
                       temperature=temperature, generator=sampling_generator(generator, device),
                       stop_when_done=True)
    responses = [[tok for tok, live in zip(row, alive, strict=True) if live]
                 for row, alive in zip(samples.completion.tolist(), samples.completion_mask.tolist(), strict=True)]
    batch = pack(ids, responses, answers, keep_bos=not drop_bos, task=task).to(device)
    t1 = time.perf_counter()
    advantages = group_advantages(batch.rewards, groups)
    policy.train()
    logp, entropy, attn = token_logprobs(policy, batch, return_attention=rule not in ("uniform", "random", "entropy"))
    t2 = time.perf_counter()
    scores, info = rule_scores(rule, attn, entropy, batch, layers, drop_bos, log_space, generator)
    target = batch.response[:, 1:]
    if scores is None:
        weights = credit_weights(None, target, fraction, gamma)
    else:
        s = scores[:, 1:]
        valid = ~torch.isnan(s).all(dim=1, keepdim=True) if s.numel() else target
        weights = credit_weights(torch.nan_to_num(s, nan=0.0), target & valid, fraction, gamma, generator)
    t3 = time.perf_counter()
    loss = clipped_policy_loss(logp, logp.detach(), advantages, target, weights, clip)
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
    opt.step()
    policy.eval()
    t4 = time.perf_counter()
    return {"rollouts": len(ids), "reward": float(batch.rewards.mean()), "loss": float(loss.detach()),
            "mean_weight": float((weights * target).sum() / target.sum().clamp(min=1)),
            "seconds_sample": t1 - t0, "seconds_score": t2 - t1, "seconds_credit": t3 - t2,
            "seconds_update": t4 - t3, "seconds_step": t4 - t0, **info}


def rewards_by_prompt(model: TinyLM, problems: Sequence[tuple[str, int]], max_new: int,
                      task: ModuleType = D) -> np.ndarray:
    """Greedy reward per problem (held-out accuracy)."""
    from assets.flowtracer.policy import greedy_traces
    texts = greedy_traces(model, [p for p, _ in problems], max_new, task=task)
    return np.array([task.reward(a, t) for (_, a), t in zip(problems, texts, strict=True)], dtype=float)
