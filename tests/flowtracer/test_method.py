"""FlowTracer policy, credit and GRPO step: known answers and invariants."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from assets.common.tiny_lm.grpo import clipped_policy_loss, group_advantages
from assets.flowtracer import data as D
from assets.flowtracer import method as M
from assets.flowtracer import policy as P

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def tiny_model(seed: int = 0):
    torch.manual_seed(seed)
    return P.build_model(n_layers=2, d_model=16, n_heads=2, context=96, tie_embeddings=False)


def problems(n: int, seed: int = 0) -> pd.DataFrame:
    return D.generate(np.random.default_rng(seed), n, 4, 8)


def test_curriculum_trains_on_the_shortest_problems_first():
    assert [P.curriculum_max_ops(s, 3, 4, 8) for s in (1, 3, 4, 10)] == [4, 4, 8, 8]
    assert P.curriculum_max_ops(1, 0, 4, 8) == 8


def test_learning_rate_warms_up_then_decays_to_the_floor():
    assert P.learning_rate(5, 1.0, 10, 0) == 0.5
    assert P.learning_rate(50, 1.0, 0, 0) == 1.0
    assert P.learning_rate(0, 1.0, 0, 100) == pytest.approx(1.0)
    assert P.learning_rate(50, 1.0, 0, 100) == pytest.approx(0.55)
    assert P.learning_rate(100, 1.0, 0, 100) == pytest.approx(0.1) == P.learning_rate(500, 1.0, 0, 100)


def test_sft_batch_targets_exactly_the_trace_and_eos():
    frame = problems(3)
    examples = P.sft_examples(frame)
    tokens, target = P.sft_batch(examples, np.arange(3))
    for row, (ex, r) in enumerate(zip(examples, frame.itertuples(), strict=True)):
        predicted = tokens[row, 1:][target[row]].tolist()          # the tokens the loss predicts
        assert D.decode(predicted) == r.trace + D.EOS
        assert len(ex.ids) == D.n_tokens(r.prompt, r.trace)


def test_sft_learns_and_stops_when_the_snapshot_says_so():
    frame = problems(64)
    model = tiny_model()
    seen = []
    losses = P.sft_train(model, P.sft_examples(frame), 60, 16, 3e-3, 5, 0, 4, 8, np.random.default_rng(0),
                         on_snapshot=lambda step, loss: seen.append(step) or step >= 40, snapshot_every=20)
    assert seen == [20, 40] and len(losses) == 40
    assert np.mean(losses[-5:]) < np.mean(losses[:5]) - 0.3


def test_sft_beta2_is_adamw_second_moment_decay():
    """beta2 0.999 is torch's AdamW default (the stored runs); another β2 changes the update."""
    def trained(**kw):
        torch.manual_seed(0)
        model = tiny_model()
        P.sft_train(model, P.sft_examples(problems(16)), 3, 8, 3e-3, 0, 0, 4, 8, np.random.default_rng(0), **kw)
        return torch.cat([q.detach().flatten() for q in model.parameters()])

    default = trained()
    assert torch.equal(default, trained(beta2=0.999))
    assert not torch.equal(default, trained(beta2=0.9))


def test_greedy_traces_do_not_depend_on_the_batch_padding():
    model = tiny_model(1)
    frame = problems(6, seed=3)
    together = P.greedy_traces(model, list(frame["prompt"]), 27)
    alone = [P.greedy_traces(model, [p], 27)[0] for p in frame["prompt"]]
    assert together == alone


def test_top_fraction_picks_the_highest_scores_and_breaks_ties_at_random():
    scores = torch.tensor([[0.1, 0.9, 0.5, 0.7, 0.0], [1.0, 1.0, 1.0, 1.0, 0.0]])
    mask = torch.tensor([[True, True, True, True, True], [True, True, True, True, False]])
    top = M.top_fraction_mask(scores, mask, 0.4, torch.Generator().manual_seed(0))
    assert top[0].tolist() == [False, True, False, True, False]          # round(0.4·5) = 2
    assert int(top[1].sum()) == 2 and not bool(top[1, 4])                # round(0.4·4) = 2, never masked-out
    picks = {tuple(M.top_fraction_mask(scores[1:], mask[1:], 0.4, torch.Generator().manual_seed(s))[0].tolist())
             for s in range(20)}
    assert len(picks) > 1                                                # ties: not always the first positions


def test_credit_weights_gamma_on_top_fraction_and_one_elsewhere():
    scores = torch.tensor([[3.0, 1.0, 2.0, 0.0, 5.0]])
    mask = torch.tensor([[False, True, True, True, True]])
    w = M.credit_weights(scores, mask, 0.5, 1.5)
    assert w.tolist() == [[1.0, 1.0, 1.5, 1.0, 1.5]]
    assert torch.equal(M.credit_weights(None, mask, 0.5, 1.5), torch.ones(1, 5))


def test_gamma_one_is_plain_grpo_and_equal_rewards_give_no_gradient():
    torch.manual_seed(0)
    logp = torch.randn(4, 6, requires_grad=True)
    mask = torch.ones(4, 6, dtype=torch.bool)
    adv = group_advantages(torch.tensor([1.0, 0.0, 1.0, 1.0]), torch.tensor([0, 0, 1, 1]))
    assert adv[2:].abs().max() == 0.0                                    # equal rewards in group 1
    plain = clipped_policy_loss(logp, logp.detach(), adv, mask)
    ones = clipped_policy_loss(logp, logp.detach(), adv, mask, M.credit_weights(torch.rand(4, 6), mask, 0.4, 1.0))
    assert torch.allclose(plain, ones)
    plain.backward()
    assert logp.grad[2:].abs().max() == 0.0


def test_pack_marks_question_response_and_answer_region():
    prompt = [D.BOS_ID] + D.encode("A=2;B=9;C=1;A-;B-;C-;A+;?A")
    response = D.encode("A1;B8;C0;A2;#2") + [D.EOS_ID]
    batch = M.pack([prompt], [response], [2], keep_bos=False)
    assert batch.rewards.tolist() == [1.0]
    assert int(batch.question[0].sum()) == len(prompt) - 1 and not bool(batch.question[0, 0])
    answer = torch.nonzero(batch.answer[0]).flatten().tolist()
    assert D.decode(batch.tokens[0, answer].tolist()) == "#2"
    assert int(batch.response[0].sum()) == len(response)
    no_hash = M.pack([prompt], [D.encode("A1;B") + [D.EOS_ID]], [2], keep_bos=True)
    assert not bool(no_hash.answer.any()) and no_hash.rewards.tolist() == [0.0]


@pytest.mark.parametrize("rule", M.CREDIT_RULES)
def test_a_grpo_step_runs_for_every_rule_and_keeps_the_weight_budget(rule):
    model = tiny_model(2)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    frame = problems(4, seed=5)
    stats = M.grpo_step(model, opt, list(zip(frame["prompt"], frame["answer"], strict=True)), rule, group_size=4,
                        max_new=27, temperature=1.0, clip=0.2, fraction=0.4, gamma=1.5, layers=[1],
                        drop_bos=True, log_space=False, generator=torch.Generator().manual_seed(0))
    assert np.isfinite(stats["loss"]) and stats["rollouts"] == 16
    if rule == "uniform":
        assert stats["mean_weight"] == 1.0
    elif rule in ("random", "attention", "entropy"):
        assert 1.15 < stats["mean_weight"] < 1.25          # ≈ 1 + 0.5 · 0.4 (rounding per rollout)
    else:                                                  # rollouts without `#` keep γ ≡ 1
        assert 1.0 <= stats["mean_weight"] < 1.25
        if stats["no_flow"] < 16:
            assert stats["conservation_error"] < 1e-9 and stats["absorbed_mass_error"] < 1e-9


def test_sft_answer_weight_is_a_weighted_mean_from_its_trigger_on():
    """w = 1 is the plain mean bit for bit; w ≠ 1 from the start changes the update; with a loss
    trigger the run equals the plain one until the first snapshot under it, and differs after."""
    hash_id = D.TOKEN_ID["#"]

    def trained(steps=4, **kw):
        torch.manual_seed(0)
        model = tiny_model()
        losses = P.sft_train(model, P.sft_examples(problems(16)), steps, 8, 3e-3, 0, 0, 4, 8,
                             np.random.default_rng(0), answer_after=hash_id, snapshot_every=2,
                             on_snapshot=lambda step, loss: False, **kw)
        return torch.cat([q.detach().flatten() for q in model.parameters()]), losses

    plain, plain_losses = trained()
    assert torch.equal(plain, trained(answer_weight=1.0)[0])
    assert not torch.equal(plain, trained(answer_weight=5.0)[0])
    # a trigger no loss reaches: the plain run; one every loss reaches: plain for the first 2 steps only
    assert torch.equal(plain, trained(answer_weight=5.0, answer_weight_loss=1e-9)[0])
    late, late_losses = trained(answer_weight=5.0, answer_weight_loss=1e9)
    assert late_losses[:2] == plain_losses[:2] and late_losses[2] == pytest.approx(plain_losses[2], rel=1e-6)
    assert not torch.equal(plain, late)
    with pytest.raises(ValueError, match="answer_after"):
        P.sft_train(tiny_model(), P.sft_examples(problems(4)), 1, 2, 1e-3, 0, 0, 4, 8,
                    np.random.default_rng(0), answer_weight=2.0)


def test_the_answer_weight_is_the_closed_form_weighted_mean():
    """sft_loss with weight w on the answer target: Σ w_t ℓ_t / Σ w_t over the trace targets, from
    per-token cross-entropies computed directly; w = 1 is the plain mean."""
    examples = P.sft_examples(problems(4, seed=5))
    tokens, target = P.sft_batch(examples, np.arange(4))
    torch.manual_seed(0)
    logits = torch.randn((*tokens[:, :-1].shape, len(D.VOCAB)), dtype=torch.float64)
    logp = torch.log_softmax(logits, dim=-1)
    ce = -logp.gather(-1, tokens[:, 1:, None]).squeeze(-1)[target]
    answer = (tokens[:, :-1] == D.TOKEN_ID["#"])[target]
    assert int(answer.sum()) == 4                                   # one answer digit per trace
    loss, plain = P.sft_loss(logits, tokens, target, 3.0, D.TOKEN_ID["#"])
    expected = (ce[~answer].sum() + 3.0 * ce[answer].sum()) / (int((~answer).sum()) + 3.0 * 4)
    assert float(loss) == pytest.approx(float(expected), rel=1e-12)
    assert float(plain) == pytest.approx(float(ce.mean()), rel=1e-12)
    one, one_plain = P.sft_loss(logits, tokens, target)
    assert float(one) == float(one_plain) == pytest.approx(float(ce.mean()), rel=1e-12)
