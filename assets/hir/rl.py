"""HiR's policy training — torch, no Dagster: LM pretraining, SFT warm start, evaluation and
the RL step of every method (HiR and its ablations, GRPO-binary, GRPO-dense).

Sequences are word-level token ids: pretraining "<bos> sentence <eos>"; prompts
"<bos> instruction <sep>" followed by a response of ≤ max_new tokens ending in <eos>. The
policy is `assets.common.tiny_lm.TinyLM`; the SFT model is the frozen KL reference.

RL objective (one epoch of PPO-clip per batch, `minibatches` Adam steps):

    R_i   = r_i − β · Σ_t (log π_old(y_t) − log π_ref(y_t))     KL in the reward (nats)
    Â_i   = GRPO: (R_i − mean_g R) / std_g R within group g;  REINFORCE++: whitened over the batch
    L     = −mean_i mean_t min(ρ_t Â_i, clip(ρ_t, 1 ± ε) Â_i),  ρ_t = π_θ(y_t | q_i) / π_old(y_t | ·)

where for an HiR replay q_i = q' and π_old(y_t | ·) = π_old(y_t | q) copied from the original
(ratio "copied", the reference code) or recomputed under q' ("onpolicy", the ablation).

Device: the model's (its parameters'). Forward and backward passes and sampling run there;
batches are built, checked and indexed on the CPU (numpy and the CPU torch generators drive
every draw: on another device sampling draws from a device generator seeded from the CPU
stream: tiny_lm.sampling.sampling_generator), and the per-response bookkeeping of a step (old
and reference log-probs, masks, entropies, advantages) stays on the CPU. On the CPU every
transfer is a no-op: the same operations on the same tensors as before devices existed.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch.nn import functional as F

from assets.common.tiny_lm import TinyLM, TinyLMConfig
from assets.common.tiny_lm.grpo import clipped_policy_loss, group_advantages
from assets.common.tiny_lm.sampling import generate, left_pad, positions_of, sampling_generator
from assets.hir import replay as R
from assets.hir.constraints import Constraint, judge, parse_criteria, render
from assets.hir.data import Vocab


@dataclass(frozen=True)
class MethodSpec:
    """What distinguishes the methods: responses generated per prompt, reward, replay options."""

    name: str
    replay: bool                    # HiR replays (group = g generated + n − g replays)
    reward: str                     # "sparse" (binary) or "dense" (fraction of constraints)
    select: str = "score"           # "score" (λ·dense + entropy) or "random"
    ratio: str = "copied"           # replay old log-prob from (q, y) ("copied") or (q', y) ("onpolicy")


METHOD_SPECS = {
    "hir": MethodSpec("hir", True, "sparse"),
    "hir_random": MethodSpec("hir_random", True, "sparse", select="random"),
    "hir_onpolicy": MethodSpec("hir_onpolicy", True, "sparse", ratio="onpolicy"),
    "grpo_binary": MethodSpec("grpo_binary", False, "sparse"),
    "grpo_dense": MethodSpec("grpo_dense", False, "dense"),
}


# ----------------------------------------------------------------------------- model helpers

def build_model(vocab_size: int, n_layers: int, d_model: int, n_heads: int, context: int) -> TinyLM:
    """A TinyLM on the CPU, initialised from torch's global CPU stream (move it with `.to`)."""
    return TinyLM(TinyLMConfig(vocab_size=vocab_size, d_model=d_model, n_heads=n_heads, n_layers=n_layers,
                               context=context))


def check_ids(ids: torch.Tensor, vocab_size: int) -> None:
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= vocab_size):
        raise ValueError(f"token ids must lie in [0, {vocab_size}), got [{int(ids.min())}, {int(ids.max())}]")


def sequence_logprobs(model: TinyLM, prompts: Sequence[Sequence[int]], responses: Sequence[Sequence[int]],
                      pad: int, with_entropy: bool = False) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-token log π(y_t | q, y_<t) of each response under its prompt.

    prompts: N id lists (left-padded together); responses: N id lists (right-padded to the
    longest). Returns (logp (N, T), entropy (N, T) of the predictive distribution in nats, or
    zeros, mask (N, T) bool of real response tokens), on the model's device (the ids are
    padded and checked on the CPU, then moved)."""
    ptoks, pmask = left_pad([list(p) for p in prompts], pad)
    width = max(1, max(len(r) for r in responses))
    rtoks = torch.full((len(responses), width), pad, dtype=torch.long)
    rmask = torch.zeros((len(responses), width), dtype=torch.bool)
    for i, r in enumerate(responses):
        if len(r):
            rtoks[i, :len(r)] = torch.tensor(list(r), dtype=torch.long)
            rmask[i, :len(r)] = True
    tokens = torch.cat([ptoks, rtoks], dim=1)
    check_ids(tokens, model.config.vocab_size)
    mask = torch.cat([pmask, rmask], dim=1)
    device = next(model.parameters()).device
    tokens, mask, rtoks, rmask = (t.to(device) for t in (tokens, mask, rtoks, rmask))
    positions = positions_of(mask)
    out = model(tokens[:, :-1], key_mask=mask[:, :-1], positions=positions[:, :-1])
    p = ptoks.shape[1]
    logits = out.logits[:, p - 1:]
    logp_all = F.log_softmax(logits.float(), dim=-1)
    logp = logp_all.gather(-1, rtoks[:, :, None]).squeeze(-1)
    entropy = -(logp_all.exp() * logp_all).sum(-1) if with_entropy else torch.zeros_like(logp)
    return logp * rmask, entropy * rmask, rmask


def lm_batches(sequences: Sequence[Sequence[int]], loss_from: Sequence[int], batch_size: int, steps: int,
               rng: np.random.Generator, pad: int):
    """Yield (tokens (b, L), target mask (b, L − 1)) batches; loss on positions ≥ loss_from[i]."""
    n = len(sequences)
    for _ in range(steps):
        pick = rng.integers(0, n, size=min(batch_size, n))
        width = max(len(sequences[i]) for i in pick)
        tokens = torch.full((len(pick), width), pad, dtype=torch.long)
        target = torch.zeros((len(pick), width - 1), dtype=torch.bool)
        for row, i in enumerate(pick):
            seq = sequences[i]
            tokens[row, :len(seq)] = torch.tensor(seq, dtype=torch.long)
            target[row, max(0, loss_from[i] - 1):len(seq) - 1] = True
        yield tokens, target


def train_lm(model: TinyLM, sequences: Sequence[Sequence[int]], loss_from: Sequence[int], steps: int,
             batch_size: int, lr: float, rng: np.random.Generator, pad: int,
             log: Callable[[str], None] | None = None) -> list[float]:
    """Next-token cross-entropy (nats/token) on the masked positions, Adam; returns the losses.
    Batches are drawn (from `rng`) and checked on the CPU, then moved to the model's device."""
    if not sequences:
        raise ValueError("no training sequences")
    for seq in sequences:
        if len(seq) > model.config.context:
            raise ValueError(f"a sequence of {len(seq)} tokens exceeds the context {model.config.context}")
    device = next(model.parameters()).device
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    model.train()
    for step, (tokens, target) in enumerate(lm_batches(sequences, loss_from, batch_size, steps, rng, pad)):
        check_ids(tokens, model.config.vocab_size)
        tokens, target = tokens.to(device), target.to(device)
        logits = model(tokens[:, :-1]).logits
        loss = F.cross_entropy(logits[target], tokens[:, 1:][target])
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(float(loss.detach()))
        if log and (step + 1) % max(1, steps // 5) == 0:
            log(f"step {step + 1}/{steps}: loss {np.mean(losses[-50:]):.3f}")
    model.eval()
    return losses


# ----------------------------------------------------------------------------- prompts

@dataclass(frozen=True)
class Prompt:
    """An RL/eval prompt: question tokens, constraints, template; ids = <bos> instruction <sep>."""

    prompt_id: int
    question: tuple[str, ...]
    criteria: tuple[Constraint, ...]
    q_type: str
    ids: tuple[int, ...]


def encode_instruction(vocab: Vocab, question: Sequence[str], criteria: Sequence[Constraint], q_type: str) -> list[int]:
    return [vocab.bos, *vocab.encode(render(question, criteria, q_type)), vocab.sep]


def make_prompts(frame, vocab: Vocab) -> list[Prompt]:
    """Prompt objects of instruction-dataset rows (question, criteria, q_type, prompt_id)."""
    out = []
    for row in frame.itertuples(index=False):
        question = tuple(str(row.question).split())
        criteria = tuple(parse_criteria(list(row.criteria)))
        out.append(Prompt(int(row.prompt_id), question, criteria, str(row.q_type),
                          tuple(encode_instruction(vocab, question, criteria, str(row.q_type)))))
    return out


# ----------------------------------------------------------------------------- sampling and scoring

@dataclass
class Rollouts:
    """N generated responses: prompt index into the batch, response ids (with <eos> if
    generated), response tokens (decoded, no <eos>), judge lists, dense, sparse."""

    prompt: list[int] = field(default_factory=list)
    ids: list[list[int]] = field(default_factory=list)
    tokens: list[list[str]] = field(default_factory=list)
    judge: list[list[bool]] = field(default_factory=list)
    dense: list[float] = field(default_factory=list)
    sparse: list[float] = field(default_factory=list)

    def extend(self, other: Rollouts) -> None:
        for name in ("prompt", "ids", "tokens", "judge", "dense", "sparse"):
            getattr(self, name).extend(getattr(other, name))

    def __len__(self) -> int:
        return len(self.prompt)


def sample_responses(model: TinyLM, prompts: Sequence[Prompt], per_prompt: int, vocab: Vocab, max_new: int,
                     temperature: float, generator: torch.Generator, greedy: bool = False) -> Rollouts:
    """per_prompt responses for each prompt (prompt-major order), scored by the checkers.
    Generated on the model's device; `generator` is a CPU generator (on another device the
    sampling draws from a device generator seeded from it; greedy decoding draws nothing)."""
    if not prompts:
        raise ValueError("an empty batch of prompts")
    index = [i for i in range(len(prompts)) for _ in range(per_prompt)]
    ptoks, pmask = left_pad([list(prompts[i].ids) for i in index], vocab.pad)
    check_ids(ptoks, model.config.vocab_size)
    device = next(model.parameters()).device
    samples = generate(model, ptoks.to(device), pmask.to(device), max_new, eos=vocab.eos, pad=vocab.pad,
                       temperature=temperature, greedy=greedy,
                       generator=generator if greedy else sampling_generator(generator, device))
    out = Rollouts()
    completion, cmask = samples.completion.cpu(), samples.completion_mask.cpu()
    for row, i in enumerate(index):
        ids = completion[row][cmask[row]].tolist()
        tokens = vocab.decode(ids)
        judged, dense, sparse = judge(tokens, prompts[i].criteria)
        out.prompt.append(i)
        out.ids.append(ids)
        out.tokens.append(tokens)
        out.judge.append(judged)
        out.dense.append(dense)
        out.sparse.append(sparse)
    return out


@torch.no_grad()
def evaluate(model: TinyLM, ref: TinyLM, prompts: Sequence[Prompt], vocab: Vocab, max_new: int, seed: int,
             batch: int = 256, with_kl: bool = True) -> dict[str, np.ndarray]:
    """Per test prompt: greedy sparse/dense (ILA/CLA), one temperature-1 sample's sparse/dense,
    the sample's KL estimate Σ_t log π_θ − log π_ref (nats; NaN unless with_kl) and its length
    (tokens). model and ref on one device; the sampling noise comes from a CPU generator seeded
    with `seed`."""
    out = {k: [] for k in ("ila_greedy", "cla_greedy", "ila_sample", "cla_sample", "kl_sample", "len_sample",
                           "len_greedy")}
    generator = torch.Generator().manual_seed(seed)
    for start in range(0, len(prompts), batch):
        chunk = list(prompts[start:start + batch])
        greedy = sample_responses(model, chunk, 1, vocab, max_new, 1.0, generator, greedy=True)
        sampled = sample_responses(model, chunk, 1, vocab, max_new, 1.0, generator)
        lengths = [len(i) for i in sampled.ids]
        if with_kl:
            pids = [chunk[i].ids for i in sampled.prompt]
            lp, _, mask = sequence_logprobs(model, pids, sampled.ids, vocab.pad)
            lr, _, _ = sequence_logprobs(ref, pids, sampled.ids, vocab.pad)
            kl = ((lp - lr) * mask).sum(1).tolist()
        else:
            kl = [math.nan] * len(lengths)
        out["ila_greedy"] += greedy.sparse
        out["cla_greedy"] += greedy.dense
        out["len_greedy"] += [len(t) for t in greedy.tokens]
        out["ila_sample"] += sampled.sparse
        out["cla_sample"] += sampled.dense
        out["kl_sample"] += kl
        out["len_sample"] += lengths
    return {k: np.asarray(v, dtype=float) for k, v in out.items()}


# ----------------------------------------------------------------------------- the RL step

@dataclass
class StepItem:
    """One training sequence of a step: prompt ids, response ids, reward, group, old/ref
    log-probs (T,) (CPU tensors, T = response length), replay flag and log fields."""

    prompt_ids: list[int]
    response_ids: list[int]
    score: float
    group: int
    old: torch.Tensor
    ref: torch.Tensor
    is_replay: bool
    log: dict


def _advantages(rewards: torch.Tensor, groups: torch.Tensor, estimator: str) -> torch.Tensor:
    if estimator == "grpo":
        return group_advantages(rewards, groups)
    if estimator == "reinforce_pp":
        std = rewards.std(unbiased=False)
        centred = rewards - rewards.mean()
        return torch.where(std > 0, centred / (std + 1e-6), torch.zeros_like(centred))
    raise ValueError(f"unknown advantage estimator {estimator!r}")


def rl_step(policy: TinyLM, ref: TinyLM, opt: torch.optim.Optimizer, prompts: Sequence[Prompt], method: MethodSpec,
            step: int, vocab: Vocab, p, generator: torch.Generator, rng: np.random.Generator) -> tuple[dict, list]:
    """One training step of `method` on a batch of prompts (p: RLParams): collect, then one
    PPO epoch. Returns (stats, log rows). Stats count `generated` responses (the budget:
    resamples in, replays out)."""
    items, stats, rows = collect(policy, ref, prompts, method, step, vocab, p, generator, rng)
    t0 = time.perf_counter()
    kl, loss = ppo_update(policy, opt, items, p, rng, vocab.pad)
    stats.update(kl_mean=kl, loss=loss, seconds_update=time.perf_counter() - t0)
    stats["seconds_step"] = stats["seconds_collect"] + stats["seconds_update"]
    return stats, rows


def collect(policy: TinyLM, ref: TinyLM, prompts: Sequence[Prompt], method: MethodSpec, step: int, vocab: Vocab, p,
            generator: torch.Generator, rng: np.random.Generator) -> tuple[list[StepItem], dict, list[dict]]:
    """Generate, score and (for HiR) select, rewrite and append replays: (items, stats, log rows).
    Items are prompt-major generated responses, then the replays (each right after its group's
    generations in the group-id sense: same `group`). The passes run on the policy's device;
    their log-probs, entropies and masks come back to the CPU once per pass."""
    B, n, g = len(prompts), p.group_size, p.generated
    if B == 0:
        raise ValueError("an RL step needs a non-empty batch of prompts")
    t0 = time.perf_counter()
    per_prompt = g if method.replay else n
    if method.replay:
        R.check_group_sizes(n, g, B)
    policy.eval()
    rolls = sample_responses(policy, prompts, per_prompt, vocab, p.max_new, p.temperature, generator)
    generated_sparse = list(rolls.sparse)
    resample_n = 0
    if method.replay:
        n_valid = int(R.candidates(np.array(rolls.dense), [prompts[i].criteria for i in rolls.prompt], rolls.judge,
                                   p.keep_floor).sum())
        resample_n = R.resample_count(n_valid, B, n, g)
        if resample_n:
            rolls.extend(sample_responses(policy, prompts, resample_n, vocab, p.max_new, p.temperature, generator))
    generated = len(rolls)
    gen_tokens = int(sum(len(i) for i in rolls.ids))
    t_gen = time.perf_counter()
    pids = [list(prompts[i].ids) for i in rolls.prompt]
    with torch.no_grad():
        old, entropy, mask = (t.cpu() for t in sequence_logprobs(policy, pids, rolls.ids, vocab.pad,
                                                                 with_entropy=True))
        ref_lp = sequence_logprobs(ref, pids, rolls.ids, vocab.pad)[0].cpu()
    t_lp = time.perf_counter()
    scores_sel = np.full(generated, np.nan)
    chosen = np.zeros(0, dtype=int)
    replays: list[R.Replay] = []
    if method.replay:
        num_replay = R.replay_budget(B, n, g, resample_n)
        valid = R.candidates(np.array(rolls.dense), [prompts[i].criteria for i in rolls.prompt], rolls.judge,
                             p.keep_floor)
        mean_entropy = ((entropy * mask).sum(1) / mask.sum(1).clamp(min=1)).numpy()
        scores = R.selection_scores(np.array(rolls.dense), mean_entropy, step, p.lambda0, p.lambda_growth)
        scores_sel[valid] = scores[valid]
        chosen = (R.select_top(scores, valid, num_replay) if method.select == "score"
                  else R.select_random(valid, num_replay, rng))
        replays = R.make_replays(chosen, [prompts[i].criteria for i in rolls.prompt], rolls.judge, rolls.tokens)
    t_sel = time.perf_counter()
    items: list[StepItem] = []
    rows: list[dict] = []
    log_generated = p.log_every > 0 and step % p.log_every == 0
    chosen_set = {int(c) for c in chosen}
    for k in range(generated):
        length = int(mask[k].sum())
        score = rolls.sparse[k] if method.reward == "sparse" else rolls.dense[k]
        info = {"prompt_id": prompts[rolls.prompt[k]].prompt_id, "is_replay": False,
                "criteria": " ".join(c.spec for c in prompts[rolls.prompt[k]].criteria),
                "q_type": prompts[rolls.prompt[k]].q_type, "response": " ".join(rolls.tokens[k]),
                "judge_list": "".join("1" if j else "0" for j in rolls.judge[k]),
                "dense": rolls.dense[k], "sparse": rolls.sparse[k], "reward": float(score),
                "selection_score": float(scores_sel[k]), "selected": k in chosen_set,
                "resampled": k >= per_prompt * B, "logp_q": float(old[k, :length].sum()), "logp_q_prime": math.nan}
        items.append(StepItem(pids[k], rolls.ids[k], float(score), rolls.prompt[k], old[k, :length],
                              ref_lp[k, :length], False, info))
        if log_generated:
            rows.append(info)
    if replays:
        q_primes = [encode_instruction(vocab, prompts[rolls.prompt[r.source]].question, r.kept,
                                       prompts[rolls.prompt[r.source]].q_type) for r in replays]
        with torch.no_grad():
            under_q_prime = sequence_logprobs(policy, q_primes, [rolls.ids[r.source] for r in replays],
                                              vocab.pad)[0].cpu()
        for j, r in enumerate(replays):
            src = items[r.source]
            length = len(src.response_ids)
            new_old = under_q_prime[j, :length] if method.ratio == "onpolicy" else src.old
            info = {**src.log, "is_replay": True, "criteria": " ".join(c.spec for c in r.kept),
                    "judge_list": "1" * len(r.kept), "dense": 1.0, "sparse": 1.0, "reward": r.reward,
                    "selected": True, "logp_q_prime": float(under_q_prime[j, :length].sum())}
            items.append(StepItem(q_primes[j], src.response_ids, r.reward, src.group, new_old, src.ref, True, info))
            rows.append(info)
    sparse_by_prompt = np.array(generated_sparse).reshape(B, per_prompt)
    pref = [it.log["logp_q_prime"] - it.log["logp_q"] for it in items if it.is_replay]
    for row in rows:
        row["step"] = step
    stats = {"step": step, "generated": generated, "replays": len(replays), "resample_n": resample_n,
             "valid_candidates": int(R.valid_candidates(np.array(rolls.dense)).sum()),
             "generated_tokens": gen_tokens, "sequences": len(items),
             "all_zero_group_rate": float((sparse_by_prompt.max(1) == 0).mean()),
             "sparse_mean": float(np.mean(rolls.sparse)), "dense_mean": float(np.mean(rolls.dense)),
             "logpref_mean": float(np.mean(pref)) if pref else math.nan,
             "response_tokens_mean": float(mask.sum(1).float().mean()),
             "seconds_generate": t_gen - t0, "seconds_logprob": t_lp - t_gen, "seconds_select": t_sel - t_lp,
             "seconds_collect": time.perf_counter() - t0}
    return items, stats, rows


def ppo_update(policy: TinyLM, opt: torch.optim.Optimizer, items: Sequence[StepItem], p, rng: np.random.Generator,
               pad: int) -> tuple[float, float]:
    """KL-penalised rewards, advantages, one PPO epoch over `minibatches`; (mean KL, mean loss).
    Rewards and advantages on the CPU; each mini-batch's old log-probs and advantages are moved
    to the policy's device for its loss."""
    kl = torch.tensor([float((it.old - it.ref).sum()) for it in items])
    rewards = torch.tensor([it.score for it in items]) - p.kl_coef * kl
    groups = torch.tensor([it.group for it in items])
    advantages = _advantages(rewards, groups, p.estimator)
    # one epoch of PPO over mini-batches
    policy.train()
    order = rng.permutation(len(items))
    losses = []
    for chunk in np.array_split(order, max(1, min(p.minibatches, len(items)))):
        chunk_items = [items[i] for i in chunk]
        logp, _, m = sequence_logprobs(policy, [it.prompt_ids for it in chunk_items],
                                       [it.response_ids for it in chunk_items], pad)
        old_t = torch.zeros_like(logp, device="cpu")
        for row, it in enumerate(chunk_items):
            old_t[row, :len(it.old)] = it.old
        loss = clipped_policy_loss(logp, old_t.to(logp.device), advantages[torch.as_tensor(chunk)].to(logp.device),
                                   m, clip=p.clip)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.parameters(), p.grad_clip)
        opt.step()
        losses.append(float(loss.detach()))
    policy.eval()
    return float(kl.mean()), float(np.mean(losses))


def run_rl(policy: TinyLM, ref: TinyLM, train: Sequence[Prompt], test: Sequence[Prompt], method: MethodSpec,
           vocab: Vocab, p, seed: int, log: Callable[[str], None] | None = None) -> dict:
    """Train `method` until `budget = budget_steps·B·n` responses are generated; evaluate before
    training and whenever the generated count passes budget·k/eval_points. Returns
    {"steps": [stats], "rollouts": [rows], "evals": [(k, generated, step, per-prompt metrics)]}."""
    budget = p.budget_steps * p.prompts_per_step * p.group_size
    rng = np.random.default_rng(seed)
    generator = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(policy.parameters(), lr=p.lr)
    eval_seed = 10_000 + seed                      # the same sampling noise at every evaluation
    evals = [(0, 0, 0, evaluate(policy, ref, test, vocab, p.max_new, eval_seed, with_kl=False))]
    steps, rollouts, generated, step = [], [], 0, 0
    order = rng.permutation(len(train))
    cursor = 0
    while generated < budget:
        if cursor + p.prompts_per_step > len(order):
            order, cursor = rng.permutation(len(train)), 0
        batch = [train[i] for i in order[cursor:cursor + p.prompts_per_step]]
        cursor += p.prompts_per_step
        stats, rows = rl_step(policy, ref, opt, batch, method, step, vocab, p, generator, rng)
        generated += stats["generated"]
        stats["generated_total"] = generated
        steps.append(stats)
        rollouts += rows
        step += 1
        while len(evals) <= p.eval_points and generated >= budget * len(evals) / p.eval_points:
            final = len(evals) == p.eval_points          # the KL gate reads the final evaluation only
            evals.append((len(evals), generated, step,
                          evaluate(policy, ref, test, vocab, p.max_new, eval_seed, with_kl=final)))
            if log:
                e = evals[-1][3]
                log(f"{method.name}/seed {seed}: {generated} generated, step {step}: ILA {e['ila_greedy'].mean():.3f} "
                    f"CLA {e['cla_greedy'].mean():.3f}")
    return {"steps": steps, "rollouts": rollouts, "evals": evals, "budget": budget}
