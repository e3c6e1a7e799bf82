"""FlowTracer analysis and claims: masking semantics, AUROC and odds-ratio known answers, the
accuracy AUC, and claims that hold or fail on constructed tables."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from assets.flowtracer import analysis as A
from assets.flowtracer import benchmark as B
from assets.flowtracer import data as D
from assets.flowtracer import policy as P

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def tiny_model():
    torch.manual_seed(0)
    return P.build_model(n_layers=4, d_model=16, n_heads=2, context=96, tie_embeddings=False)


def test_auroc_known_answers():
    assert A.auroc([3, 4, 1, 2], [True, True, False, False]) == 1.0
    assert A.auroc([1, 2, 3, 4], [True, True, False, False]) == 0.0
    assert A.auroc([1, 1, 1, 1], [True, False, True, False]) == 0.5
    assert A.auroc([2, 1, 3], [True, False, False]) == 0.5
    assert np.isnan(A.auroc([1, 2], [True, True]))


def test_hub_odds_ratio_known_answer():
    # one problem, 10 tokens: the top 4 by τ are 3 structural + 1 digit; the rest 1 structural + 5 digits
    chars = [";", "A", "B", "3", ";", "4", "5", "6", "7", "8"]
    flow = [10, 9, 8, 7, 1, 1, 1, 1, 1, 1]
    tokens = pd.DataFrame({"problem": 0, "char": chars, "flow": flow}, index=range(100, 110))
    expected = ((3.5 / 1.5) / (1.5 / 5.5))
    assert A.hub_odds_ratio(tokens, 0.4) == pytest.approx(expected)


def test_scores_cover_the_trace_only_and_masked_tokens_get_no_attention():
    model = tiny_model()
    frame = D.generate(np.random.default_rng(0), 5, 4, 8)
    scored = A.score_tokens(model, frame, [1, 2], True, torch.Generator().manual_seed(0))
    for rule, s in scored["scores"].items():
        assert torch.equal(~torch.isnan(s), scored["trace"]), rule
    assert float(scored["conservation_error"].max()) < 1e-9
    assert float((scored["absorbed_mass"] - 1).abs().max()) < 1e-9
    # masking a token hides it from every query: attention on it is exactly 0
    tokens, key_mask = scored["tokens"], scored["key_mask"].clone()
    hidden = torch.nonzero(scored["trace"][0]).flatten()[:3]
    key_mask[0, hidden] = False
    out = model(tokens, key_mask=key_mask, return_attention=True)
    for layer in out.attentions:
        assert float(layer[0][..., hidden].detach().abs().max()) == 0.0
    table = A.masking(model, frame, scored, 0.2, A.SCORE_RULES, torch.Generator().manual_seed(0))
    assert set(table["rule"]) == set(A.SCORE_RULES) and len(table) == 5 * len(A.SCORE_RULES)
    n_trace = scored["trace"].sum(dim=1)
    expected = torch.clamp(torch.round(0.2 * n_trace.double()), min=1).long().tolist()
    assert table[table["rule"] == "flow"]["masked"].tolist() == expected


def test_relevance_auroc_reads_the_labels():
    tokens = pd.DataFrame({"label": ["R", "R", "D", "D", "S"], "flow": [0.9, 0.8, 0.1, 0.2, 5.0]})
    assert A.relevance_auroc(tokens, "flow") == 1.0                     # the separator is not scored


def test_accuracy_auc_is_the_normalised_trapezoid():
    evals = pd.DataFrame({"method": "m", "seed": 0, "prompt": 0, "step": [0, 10, 20], "reward": [0.0, 1.0, 1.0]})
    assert B.accuracy_auc(evals)["auc"].tolist() == [pytest.approx(0.75)]


def _masking(rates: dict[str, float], seeds=(0, 1, 2), problems=200, band="1-2") -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for s in seeds:
        for rule, rate in rates.items():
            hits = rng.random(problems) < rate
            rows += [{"seed": s, "problem": i, "rule": rule, "band": band, "answer_changed": int(h),
                      "flipped": int(h and i % 3 == 0)} for i, h in enumerate(hits)]
    return pd.DataFrame(rows)


def test_masking_claim_holds_only_with_the_ordered_gaps():
    good = _masking({"flow": 0.6, "random": 0.35, "bottom": 0.1, "recency": 0.3, "attention": 0.3,
                     "one_hop": 0.3, "rollout": 0.3})
    assert B.masking_claim(good, 300, 0).holds
    flat = _masking({"flow": 0.35, "random": 0.33, "bottom": 0.1, "recency": 0.3, "attention": 0.3,
                     "one_hop": 0.3, "rollout": 0.3})
    assert not B.masking_claim(flat, 300, 0).holds


def _evals(gains: dict[str, float], seeds=(0, 1, 2), prompts=60) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    rows = []
    for method, gain in gains.items():
        for s in seeds:
            base = rng.random(prompts) < 0.4
            for step in (0, 10, 20):
                better = rng.random(prompts) < gain * step / 20
                rows += [{"method": method, "seed": s, "prompt": i, "step": step,
                          "reward": float(base[i] or better[i])} for i in range(prompts)]
    return pd.DataFrame(rows)


def test_rl_claim_needs_every_comparison():
    good = _evals({"flowtracer": 0.8, "uniform": 0.3, "random": 0.3, "attention": 0.3, "entropy": 0.3, "bottom": 0.0})
    claim, numbers = B.rl_claim(good, 300, 0)
    assert claim.holds and numbers["accuracy_auc_flowtracer"] > numbers["accuracy_auc_uniform"]
    tie = _evals({"flowtracer": 0.8, "uniform": 0.3, "random": 0.3, "attention": 0.8, "entropy": 0.3, "bottom": 0.0})
    assert not B.rl_claim(tie, 300, 0)[0].holds                         # not above attention
    no_bottom = good[good["method"] != "bottom"]
    assert not B.rl_claim(no_bottom, 300, 0)[0].holds


def test_overhead_claim_reads_the_credit_share():
    times = pd.DataFrame({"method": ["flowtracer"] * 3 + ["uniform"] * 3, "seed": 0, "step": [1, 2, 3] * 2,
                          "seconds_credit": [0.02, 0.02, 0.02, 0.0, 0.0, 0.0], "seconds_step": [1.0] * 6})
    claim, numbers = B.overhead_claim(times)
    assert claim.holds and numbers["overhead_share"] == pytest.approx(0.02) and claim.volatile
    slow = times.assign(seconds_credit=[0.1, 0.1, 0.1, 0, 0, 0])
    assert not B.overhead_claim(slow)[0].holds
    assert not B.overhead_claim(None)[0].holds
