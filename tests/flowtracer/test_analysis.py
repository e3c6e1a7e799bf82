"""FlowTracer analysis and claims: masking semantics, AUROC and odds-ratio known answers, the
accuracy AUC, and claims that hold or fail on constructed tables."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from assets.flowtracer import analysis as A
from assets.flowtracer import arithchain as AC
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
    kinds = ["S" if c == ";" else "L" if c.isalpha() else "P" for c in chars]
    tokens = pd.DataFrame({"problem": 0, "char": chars, "kind": kinds, "flow": flow}, index=range(100, 110))
    expected = ((3.5 / 1.5) / (1.5 / 5.5))
    assert A.hub_odds_ratio(tokens, 0.4) == pytest.approx(expected)
    # ArithChain counts `=` (kind E) as structural too; RegTrace has no such kind
    with_equals = tokens.assign(kind=["S", "L", "L", "E", "S", "V", "V", "V", "V", "V"])
    assert A.hub_odds_ratio(with_equals, 0.4, AC) == pytest.approx((4.5 / 0.5) / (1.5 / 5.5))
    assert A.hub_odds_ratio(with_equals, 0.4) == pytest.approx(expected)


def test_hub_top_is_per_problem_with_ties_in_row_order():
    # problem 0: 5 tokens, round(0.4·5) = 2 on top, the tie at 3 goes to the earlier row;
    # problem 1: 1 token, at least one on top; seed 1 repeats problem 0 and is its own problem
    tokens = pd.DataFrame({"seed": [0] * 6 + [1] * 5, "problem": [0] * 5 + [1] + [0] * 5,
                           "flow": [1.0, 3.0, 3.0, 0.5, 2.0, 9.0, 1.0, 3.0, 3.0, 0.5, 2.0]})
    top = A.hub_top(tokens, 0.4, keys=("seed", "problem"))
    assert top.tolist() == [False, True, True, False, False, True, False, True, True, False, False]
    # without the seed key the two seeds' problem 0 is one group of 10 (4 on top)
    assert A.hub_top(tokens, 0.4).sum() == 5


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
    assert B.masking_claim(good, 300, 0, "1-2").holds
    flat = _masking({"flow": 0.35, "random": 0.33, "bottom": 0.1, "recency": 0.3, "attention": 0.3,
                     "one_hop": 0.3, "rollout": 0.3})
    assert not B.masking_claim(flat, 300, 0, "1-2").holds


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
    times = pd.DataFrame({"method": ["flowtracer"] * 3 + ["uniform"] * 3, "seed": [0, 1, 2] * 2, "step": 1,
                          "seconds_credit": [0.02, 0.021, 0.019, 0.0, 0.0, 0.0], "seconds_step": [1.0] * 6})
    claim, numbers = B.overhead_claim(times)
    assert claim.holds and numbers["overhead_share"] == pytest.approx(0.02) and claim.volatile
    slow = times.assign(seconds_credit=[0.1, 0.11, 0.09, 0, 0, 0])
    assert not B.overhead_claim(slow)[0].holds
    assert not B.overhead_claim(None)[0].holds


def _reference_bootstrap(tokens, stat, n_boot, seed):
    """The plain definition: per replicate, resample seeds, then each seed's problems, relabelling
    every copy as its own problem."""
    seeds = sorted(tokens["seed"].unique())
    groups = {s: [g for _, g in tokens[tokens["seed"] == s].groupby("problem")] for s in seeds}
    rng = np.random.default_rng(seed)
    reps = []
    for _ in range(n_boot):
        values = []
        for i in rng.integers(0, len(seeds), size=len(seeds)):
            g = groups[seeds[i]]
            pick = rng.integers(0, len(g), size=len(g))
            values.append(stat(pd.concat([g[j].assign(problem=k) for k, j in enumerate(pick)], ignore_index=True)))
        reps.append(np.mean(values))
    return np.quantile(reps, [0.05, 0.95])


def test_bootstrap_statistic_matches_the_plain_resampling_definition():
    rng = np.random.default_rng(3)
    n = 240
    tokens = pd.DataFrame({"seed": rng.integers(0, 3, n), "problem": rng.integers(0, 12, n),
                           "label": rng.choice(["R", "D", "S"], n), "kind": rng.choice(list("SLP"), n),
                           "flow": rng.random(n)})
    tokens = tokens.sort_values(["seed", "problem"], kind="stable").reset_index(drop=True)
    auroc = lambda t: A.relevance_auroc(t, "flow")                     # noqa: E731
    point, low, high = B.bootstrap_statistic(tokens, auroc, 60, 5)
    assert [low, high] == pytest.approx(_reference_bootstrap(tokens, auroc, 60, 5).tolist())
    assert point == pytest.approx(np.mean([auroc(tokens[tokens["seed"] == s]) for s in range(3)]))
    # the hub statistic on precomputed per-problem flags equals regrouping every resampled copy
    flagged = tokens.assign(top=A.hub_top(tokens, 0.4, keys=("seed", "problem")),
                            structural=A.structural(tokens))
    fast = B.bootstrap_statistic(flagged, lambda t: A.odds_ratio(t["top"], t["structural"]), 60, 5)
    slow = _reference_bootstrap(tokens, lambda t: A.hub_odds_ratio(t, 0.4), 60, 5)
    assert fast[1:] == pytest.approx(slow.tolist())


def test_answer_source_is_the_last_relevant_step():
    # trace A1;B8;A2;#… with the query A: steps 0 and 2 relevant; the source is step 2 (A2)
    tokens = pd.DataFrame({"problem": 0, "position": range(10, 19), "char": list("A1;B8;A2;"),
                           "label": list("RRSDDSRRS"), "flow": [0, 0, 0, 0, 0, 0, 2.0, 3.0, 0]})
    assert A.answer_source(tokens).tolist() == [False] * 6 + [True, True, False]
    assert A.source_auroc(tokens, "flow") == 1.0
    # no relevant step: no source (the answer comes from the prompt)
    assert not A.answer_source(tokens.assign(label=list("DDSDDSDDS"))).any()


def test_masking_by_band_judges_each_band_and_the_claim_only_the_middle():
    rates = {"recency": 0.3, "attention": 0.3, "one_hop": 0.3, "rollout": 0.3}
    middle = _masking({"flow": 0.35, "random": 0.33, "bottom": 0.1, **rates}, band="1-2")
    early = _masking({"flow": 0.6, "random": 0.33, "bottom": 0.1, **rates}, band="0")
    both = pd.concat([middle, early], ignore_index=True)
    assert not B.masking_claim(both, 300, 0, "1-2").holds                     # judged at band 1-2
    text = B.masking_band_observation(both, 300, 0, "1-2").measured_value
    early_part, middle_part = text.split("band 1-2:")
    assert early_part.startswith("band 0:") and early_part.rstrip("; ").endswith("→ holds")
    assert "→ holds" not in middle_part


def test_rl_ablations_are_paired_against_flowtracer_and_left_out_of_rl_gain():
    from assets.flowtracer.params import RLAblation

    ablations = (RLAblation("top20", fraction=0.2), RLAblation("late", layers=(3,)))
    evals = _evals({"flowtracer": 0.8, "uniform": 0.3, "flowtracer-top20": 0.0, "flowtracer-late": 0.8})
    obs = B.rl_ablation_observation(evals, ablations, 0.4, (1, 2), 300, 0)
    assert obs.holds is None and obs.kind == "observation"
    top20, late = obs.measured_value.split("; ")[1:]
    assert top20.startswith("top20 (top 20%, layers [1, 2])") and "CI -" in top20 and "CI +" not in top20
    assert late.startswith("late (top 40%, layers [3])")
    low = float(late.split("CI ")[1].split(",")[0])
    assert low < 0 < float(late.split(", ")[-1].rstrip("]"))        # same gain: the CI straddles 0
    assert "not run at this profile" in B.rl_ablation_observation(evals, (), 0.4, (1, 2), 300, 0).measured_value
    # rl_gain sees the compared methods only: the ablation rows change none of its numbers
    full = _evals({"flowtracer": 0.8, "uniform": 0.3, "random": 0.3, "attention": 0.3, "entropy": 0.3, "bottom": 0.0})
    extra = pd.concat([full, evals[evals["method"].str.startswith("flowtracer-")]], ignore_index=True)
    compared = B.compared_runs(extra, ablations)
    assert set(compared["method"]) == set(full["method"])
    assert B.rl_claim(compared, 300, 0)[0].measured_value == B.rl_claim(full, 300, 0)[0].measured_value


def test_rl_ablation_params_are_checked():
    from dataclasses import replace

    from assets.common.params import parse
    from assets.flowtracer import runs as R
    from assets.flowtracer.params import FlowtracerParams, RLAblation
    from resources.profiles import load_params

    base = parse(FlowtracerParams, load_params("flowtracer", "cpu"), "flowtracer.cpu")
    p = replace(base, rl_ablations=(RLAblation("top60", fraction=0.6), RLAblation("early", layers=(0,))))
    assert p.run_methods == (*base.methods, "flowtracer-top60", "flowtracer-early")
    specs = {s["method"]: s for s in R.grpo_run_specs(p)}
    assert specs["flowtracer"] == {"method": "flowtracer", "rule": "flowtracer", "fraction": 0.4, "layers": (1, 2)}
    assert specs["flowtracer-top60"] == {"method": "flowtracer-top60", "rule": "flowtracer", "fraction": 0.6,
                                         "layers": (1, 2)}
    assert specs["flowtracer-early"]["layers"] == (0,) and specs["flowtracer-early"]["fraction"] == 0.4
    for bad, match in [((RLAblation("a"), RLAblation("a")), "distinct"), ((RLAblation("x-y"),), "distinct"),
                       ((RLAblation("a", fraction=0.0),), "fraction"), ((RLAblation("a", layers=(4,)),), "layers"),
                       ((RLAblation("a", layers=()),), "layers")]:
        with pytest.raises(ValueError, match=match):
            replace(base, rl_ablations=bad)
