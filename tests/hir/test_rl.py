"""The RL step on a tiny random policy: budget accounting, same-group replays, copied old and
reference log-probs (the ratio detail), log-prob bookkeeping, bad input."""
from __future__ import annotations

import copy
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from assets.hir import rl
from assets.hir.constraints import parse_criteria
from assets.hir.data import SPECIALS, Vocab
from assets.hir.replay import ReplayError

WORDS = [f"w{i}" for i in range(20)]


def params(**kw):
    base = dict(prompts_per_step=3, group_size=5, generated=3, budget_steps=2, max_new=6, temperature=1.0, clip=0.2,
                lr=3e-4, kl_coef=0.02, lambda0=2.0, lambda_growth=1.05, minibatches=2, grad_clip=1.0,
                estimator="grpo", eval_points=2, log_every=1, keep_floor=True)
    return SimpleNamespace(**{**base, **kw})


@pytest.fixture
def setup(one_torch_thread):
    torch.manual_seed(0)
    vocab = Vocab([*SPECIALS, *WORDS, ".", ",", "!", "?", "at", "least", "most", "words", "write", "about", "1"])
    policy = rl.build_model(len(vocab), 1, 16, 2, 40)
    # min_words 1 and max_words 1: every response of ≥ 2 words (or none) is a partial success
    criteria = tuple(parse_criteria(["min_words:1", "max_words:1"]))
    prompts = []
    for i in range(3):
        q = ("write", "about", WORDS[i], ".")
        prompts.append(rl.Prompt(i, q, criteria, "type1", tuple(rl.encode_instruction(vocab, q, criteria, "type1"))))
    return vocab, policy, copy.deepcopy(policy), prompts


def collect(setup, method, p=None, seed=0):
    vocab, policy, ref, prompts = setup
    return rl.collect(policy, ref, prompts, rl.METHOD_SPECS[method], 0, vocab, p or params(),
                      torch.Generator().manual_seed(seed), np.random.default_rng(seed))


def test_budget_counts_generated_responses_not_replays(setup):
    p = params()
    items, stats, _ = collect(setup, "hir", p)
    replays = [it for it in items if it.is_replay]
    assert stats["generated"] == (p.generated + stats["resample_n"]) * p.prompts_per_step
    assert len(items) == p.group_size * p.prompts_per_step            # the batch holds n·B sequences
    assert len(replays) == stats["replays"] == (p.group_size - p.generated - stats["resample_n"]) * 3
    items_b, stats_b, _ = collect(setup, "grpo_binary", p)
    assert stats_b["generated"] == len(items_b) == p.group_size * p.prompts_per_step


def test_replays_share_the_group_and_copy_old_and_reference_logprobs(setup):
    vocab, policy, ref, _ = setup
    items, _, rows = collect(setup, "hir")
    generated = [it for it in items if not it.is_replay]
    replays = [it for it in items if it.is_replay]
    assert replays
    for r in replays:
        (src,) = [g for g in generated if g.response_ids == r.response_ids and g.group == r.group][:1]
        assert r.score == 1.0 and r.prompt_ids != src.prompt_ids            # rewritten instruction q'
        assert torch.equal(r.old, src.old) and torch.equal(r.ref, src.ref)  # π_old(y|q), π_ref(y|q)
        # and those are really the log-probs of y under q, not q'
        under_q, _, m = rl.sequence_logprobs(policy, [src.prompt_ids], [src.response_ids], vocab.pad)
        assert torch.allclose(under_q[0, :int(m.sum())], r.old, atol=1e-5)
        under_q2, _, _ = rl.sequence_logprobs(policy, [r.prompt_ids], [r.response_ids], vocab.pad)
        assert not torch.allclose(under_q2[0, :len(r.old)], r.old, atol=1e-5)
    assert all(row["sparse"] == 1.0 for row in rows if row["is_replay"])


def test_onpolicy_ablation_recomputes_old_under_q_prime(setup):
    vocab, policy, _, _ = setup
    items, _, _ = collect(setup, "hir_onpolicy")
    replays = [it for it in items if it.is_replay]
    assert replays
    for r in replays:
        under_qp, _, m = rl.sequence_logprobs(policy, [r.prompt_ids], [r.response_ids], vocab.pad)
        assert torch.allclose(under_qp[0, :int(m.sum())], r.old, atol=1e-5)


def test_sequence_logprobs_match_the_sampler(setup):
    from assets.common.tiny_lm.sampling import generate, left_pad

    vocab, policy, _, prompts = setup
    toks, mask = left_pad([list(p.ids) for p in prompts], vocab.pad)
    s = generate(policy, toks, mask, 6, eos=vocab.eos, pad=vocab.pad, generator=torch.Generator().manual_seed(3))
    responses = [s.completion[i][s.completion_mask[i]].tolist() for i in range(len(prompts))]
    lp, _, m = rl.sequence_logprobs(policy, [p.ids for p in prompts], responses, vocab.pad)
    assert torch.allclose(lp.sum(1), (s.logprobs * s.completion_mask).sum(1), atol=1e-4)


def test_one_step_updates_the_policy_and_keeps_the_reference(setup):
    vocab, policy, ref, prompts = setup
    before = [t.clone() for t in policy.parameters()]
    opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
    stats, _ = rl.rl_step(policy, ref, opt, prompts, rl.METHOD_SPECS["hir"], 0, vocab, params(),
                          torch.Generator().manual_seed(0), np.random.default_rng(0))
    assert np.isfinite(stats["loss"])
    assert any(not torch.equal(a, b) for a, b in zip(before, policy.parameters()))


def test_a_replay_failing_reverification_stops_the_step(setup, monkeypatch):
    from assets.hir import replay

    monkeypatch.setattr(replay, "rewrite", lambda criteria, judge_list: list(criteria))  # keeps the failed one
    with pytest.raises(ReplayError):
        collect(setup, "hir")


def test_bad_input_raises(setup):
    vocab, policy, ref, prompts = setup
    with pytest.raises(ValueError, match="0 < generated"):
        collect(setup, "hir", params(generated=5))                    # n ≤ g
    with pytest.raises(ValueError, match="empty batch"):
        rl.collect(policy, ref, [], rl.METHOD_SPECS["hir"], 0, vocab, params(), torch.Generator(),
                   np.random.default_rng(0))
    with pytest.raises(ValueError, match="outside|lie in"):
        rl.sequence_logprobs(policy, [[vocab.bos, len(vocab) + 3]], [[1]], vocab.pad)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        vocab.decode([len(vocab)])


def test_reinforce_pp_whitens_over_the_batch():
    rewards = torch.tensor([1.0, 0.0, 0.0, 0.0])
    adv = rl._advantages(rewards, torch.tensor([0, 0, 1, 1]), "reinforce_pp")
    assert adv.mean().abs() < 1e-6 and adv.std(unbiased=False) == pytest.approx(1.0, abs=1e-4)
    grpo = rl._advantages(rewards, torch.tensor([0, 0, 1, 1]), "grpo")
    assert grpo[2:].abs().max() == 0                                   # an all-zero group has no signal



def test_responses_below_the_floor_are_never_replayed(setup):
    # min_words:1 + max_words:1 with ≤ 2 tokens: empty answers miss the floor (dense ½), two-word answers miss
    # the maximum (dense ½); only the latter may be replayed
    def replayed(keep_floor, seed):
        items, _, _ = collect(setup, "hir", params(max_new=2, keep_floor=keep_floor), seed=seed)
        return [it.log["response"] for it in items if it.is_replay]

    with_floor = [r for seed in range(4) for r in replayed(True, seed)]
    without = [r for seed in range(4) for r in replayed(False, seed)]
    assert with_floor and all(len(r.split()) >= 1 for r in with_floor)
    assert any(r == "" for r in without)            # the pitfall the floor filter removes
