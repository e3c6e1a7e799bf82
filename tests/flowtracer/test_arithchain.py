"""ArithChain (the spec's FlowTracer task, gpu profile): interpreter, dependency labels,
generator, gates, and one pass of SFT → flow → GRPO on it at toy size."""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from assets.flowtracer import arithchain as AC
from assets.flowtracer import checks as C
from assets.flowtracer import data as D
from assets.flowtracer import tasks
from tests.conftest import DEVICES, run_device_check, typed_params

RANGES = {"train": (3, 4), "val": (5, 6), "test": (5, 6), "rl": (3, 6), "rl_eval": (5, 6)}


@pytest.fixture(scope="module")
def frame():
    sizes = {"train": 300, "val": 40, "test": 40, "rl": 60, "rl_eval": 20}
    return AC.splits(np.random.default_rng(0), sizes, RANGES, (1, 3))


def test_spec_worked_example():
    prompt = "a=4;b=7;c=a+b;d=c*3;e=b-2;?d"
    assert AC.interpret(prompt) == ("c=1;d=3;e=5;#3", 3)      # 4+7 = 11 → 1; 1·3 = 3; 7−2 = 5
    assert AC.annotate(prompt) == ("RRRSRRRSDDDSHA", "LEVSLEVSLEVSHA")
    assert AC.facts(prompt)["n_ops"] == 2 and AC.facts(prompt)["query"] == "d"


def test_relevance_follows_every_ancestor_in_the_dag():
    # e = c + d reads both c (from a, b) and d (from b): c, d, e relevant; f reads e (a descendant,
    # not an ancestor) and g reads a literal: both dead ends
    prompt = "a=1;b=2;c=a+b;d=b*4;e=c-d;f=e+1;g=a*a;?e"
    assert AC.relevant_steps(prompt) == [True, True, True, False, False]
    trace, answer = AC.interpret(prompt)
    assert (trace, answer) == ("c=3;d=8;e=5;f=6;g=1;#5", 5)           # 3 − 8 = −5 → 5
    assert AC.annotate(prompt)[0] == "RRRS" * 3 + "DDDS" * 2 + "HA"


def test_operations_are_mod_10():
    assert AC.interpret("a=9;b=9;c=a*b;?c")[1] == 1                  # 81
    assert AC.interpret("a=0;b=3;c=a-b;?c")[1] == 7                  # −3
    assert AC.interpret("a=7;b=0;c=a+8;?c")[1] == 5                  # 15


def test_generator_agrees_with_the_interpreter(frame):
    for row in frame.itertuples():
        facts = AC.facts(row.prompt)
        assert {k: getattr(row, k) for k in facts} == facts, row.prompt
        assert row.n_tokens == AC.n_tokens(row.prompt, row.trace) <= AC.MAX_TOKENS


def test_splits_draw_their_own_depths_and_distractors(frame):
    for split, (low, high) in RANGES.items():
        part = frame[frame["split"] == split]
        assert set(part["n_ops"]) == set(range(low, high + 1)), split
    steps = frame["trace"].str.count(";")
    distractors = steps - frame["n_ops"]
    assert set(distractors) == {1, 2, 3}
    assert frame["prompt"].is_unique and frame["labels"].map(lambda s: "R" in s and "D" in s).all()
    again = AC.splits(np.random.default_rng(0), {"train": 300, "val": 40, "test": 40, "rl": 60, "rl_eval": 20},
                      RANGES, (1, 3))
    pd.testing.assert_frame_equal(frame, again)


def test_the_longest_problem_fits_max_tokens():
    rng = np.random.default_rng(1)
    longest = max(AC._problem(rng, 6, 6, (3, 3))["n_tokens"] for _ in range(50))
    assert longest == AC.MAX_TOKENS                 # 2 + 8 + 54 + 2 + 36 + 2: every step has 2 operands


def test_vocabulary_shares_the_special_ids_and_differs_from_regtrace():
    assert AC.VOCAB[:3] == list(D.SPECIALS) and len(AC.VOCAB) == 32
    assert AC.vocab_md5() != D.vocab_md5()
    text = "<bos>a=4;b=7;c=a+b;?cc=1;#1<eos>"
    assert AC.decode(AC.encode(text)) == text
    with pytest.raises(ValueError, match="unknown character 'A'"):
        AC.encode("A=1")


@pytest.mark.parametrize("prompt, message", [
    ("a=1;a=2;b=a+1;?b", "defines a a second time"),
    ("a=1;b=c+1;?b", "neither a literal"),
    ("a=1;b=a+1;c=3;?b", "neither a literal"),                       # a literal after a step
    ("a=1;b=a/2;?b", "neither a literal"),
    ("a=1;b=a+1;?a", "computed variable"),                           # the query must be computed
    ("a=1;b=a+1;?z", "computed variable"),
    ("a=1;b=a+1", "computed variable"),
])
def test_prompts_that_do_not_parse(prompt, message):
    with pytest.raises(ValueError, match=message):
        AC.interpret(prompt)


def test_parse_trace_and_reward():
    assert AC.parse_trace("c=1;d=3;#3") == ([("c", 1), ("d", 3)], 3)
    assert AC.reward(3, "c=1;d=3;#3<eos><pad>") == 1.0
    assert AC.reward(4, "c=1;d=3;#3") == 0.0
    for bad in ("c1;#3", "c=1#3", "c=1;#", "C=1;#3", "c=1;#3;"):
        assert AC.reward(3, bad) == 0.0, bad


def gpu_params():
    from assets.flowtracer.params import FlowtracerParams

    return typed_params(FlowtracerParams, "flowtracer", "gpu")


def test_the_gpu_profile_runs_arithchain_and_its_sequences_fit_the_context():
    p = gpu_params()
    assert p.data.task == "arithchain"
    ranges = tasks.split_ranges(p.data)
    assert ranges["train"] == (3, 4) and ranges["test"] == (5, 6) and ranges["rl"] == (3, 6)
    small = dataclasses.replace(p.data, train=50, val=20, test=20, rl=20, rl_eval=20)
    frame = tasks.generate(small, np.random.default_rng(0))
    assert C.dataset_valid(frame, dataclasses.replace(p, data=small)).passed
    longest_prompt = 1 + 2 * 4 + 6 * (ranges["test"][1] + p.data.distractors[1]) + 2   # <bos>, literals, steps, ?x
    assert longest_prompt + tasks.max_new(p.data) <= p.model.context


@pytest.mark.parametrize("profile", ["smoke", "cpu", "gpu"])
def test_every_profile_analyses_its_claim_band(profile):
    """The claims are judged at the band of flow.layers (analysis.band_name), so the analysis must
    compute it: flow.layers is one of flow.all_layer_bands, within the model's layers."""
    from assets.common.params import parse
    from assets.flowtracer import analysis as A
    from assets.flowtracer.params import FlowtracerParams
    from resources.profiles import load_params

    p = parse(FlowtracerParams, load_params("flowtracer", profile), f"flowtracer.{profile}")
    assert A.band_name(p.flow.layers) in {A.band_name(b) for b in p.flow.all_layer_bands}
    assert all(0 <= i < p.model.n_layers for band in p.flow.all_layer_bands for i in band)


def test_dataset_gate_checks_each_split_range_and_the_interpreter(frame):
    p = gpu_params()
    assert C.dataset_valid(frame, p).passed, C.dataset_valid(frame, p).message()
    shallow_val = frame.copy()
    i = shallow_val.index[shallow_val["split"] == "train"][0]
    shallow_val.loc[i, "split"] = "val"
    assert "outside their split's range" in C.dataset_valid(shallow_val, p).message()
    wrong = frame.copy()
    wrong.loc[0, "labels"] = wrong.loc[0, "labels"].replace("D", "R")
    assert "whose labels the interpreter does not reproduce" in C.dataset_valid(wrong, p).message()
    foreign = frame.copy()
    foreign.loc[0, "prompt"] = "A=1;" + foreign.loc[0, "prompt"]
    assert "characters outside the vocabulary ['A']" in C.dataset_valid(foreign, p).message()
    assert C.vocab_matches(AC.vocab_md5(), frame, AC).passed
    assert "not the ArithChain vocabulary" in C.vocab_matches(D.vocab_md5(), frame, AC).message()


def test_sft_flow_and_grpo_run_on_arithchain(data_dir):
    """Toy sizes: a few SFT steps, the flow analysis (conservation, mass) and one GRPO step per
    flow rule, all on the ArithChain vocabulary."""
    from assets.flowtracer import report, runs
    from tests.flowtracer.test_assets import smoke_params

    p = smoke_params()
    data = dataclasses.replace(p.data, task="arithchain", min_ops=3, max_ops=4, held_out_ops=(5, 6), train=200,
                               val=8, test=6, rl=16, rl_eval=4)
    p = dataclasses.replace(p, data=data, model=dataclasses.replace(p.model, context=112),
                            grpo=dataclasses.replace(p.grpo, steps=1), rl_ablations=())
    frame = runs.dataset(p, np.random.default_rng(0))
    assert C.dataset_valid(frame, p).passed
    provenance = {"profile": "test"}
    sft = runs.sft_job({"params": p, "seed": 0, "threads": 1, "path": str(data_dir / "sft"),
                        "provenance": provenance, "train": runs.split(frame, "train").to_dict("records"),
                        "val": runs.split(frame, "val").to_dict("records"),
                        "test": runs.split(frame, "test").to_dict("records")})
    ref = {"checkpoint": sft["checkpoint"], "md5": sft["md5"]}
    assert runs.load_policy(ref, AC).config.vocab_size == len(AC.VOCAB)
    with pytest.raises(ValueError, match="not RegTrace's"):
        runs.load_policy(ref, D)
    problems = runs.split(frame, "test").to_dict("records")
    flow = runs.flow_job({"params": p, "seed": 0, "seed_index": 0, "threads": 1, "checkpoint": ref,
                          "problems": problems})
    assert all(b["conservation_error"] < 1e-6 and b["absorbed_mass_error"] < 1e-6 and b["nan"] == 0
               for b in flow["bands"])
    tokens = pd.DataFrame(flow["tokens"])
    assert set(tokens["kind"]) <= set("LEVS") and set(tokens["label"]) <= set("RDS")
    evals, steps = [], []
    for rule in ("flowtracer", "uniform"):
        out = runs.grpo_job({"params": p, "method": rule, "rule": rule, "fraction": 0.4, "layers": (1, 2),
                             "seed": 0, "seed_index": 0, "threads": 1, "checkpoint": ref,
                             "rl": runs.split(frame, "rl").to_dict("records"),
                             "rl_eval": runs.split(frame, "rl_eval").to_dict("records"),
                             "path": str(data_dir / f"grpo_{rule}"), "provenance": provenance})
        assert out["finite"] and len(out["steps"]) == 1
        evals += out["evals"]
        steps += out["steps"]
    # the report on ArithChain: its setup line, and hubs counted by ArithChain's structural kinds
    seed = {"seed": 0, "sft_seed": 0, "in_band": True, "val_accuracy": sft["curve"][-1]["val_accuracy"],
            "test_prompts": len(problems),
            **{k: sft[k] for k in ("steps", "curve", "checkpoint", "md5", "test_accuracy")}}
    calibration = {"seeds": [seed]}
    built = report.build_report(tokens.assign(seed=0), pd.DataFrame(flow["masking"]).assign(seed=0),
                                pd.DataFrame(evals), pd.DataFrame(steps), runs.sft_checkpoints(calibration),
                                calibration, p, 0)
    assert "ArithChain (assignment chains mod 10: depth 3–4 for SFT, 5–6 held out, 1–3 distractor steps)" in built.body
    hubs = next(c for c in built.claims if c.claim_id == "hubs")
    assert hubs.measured_value.startswith("odds ratio of a `=` or variable letter or separator `;` in the top 40%")
    assert "`=` " in hubs.detail and "value digit" not in hubs.detail


@pytest.mark.parametrize("device", DEVICES)
def test_device_check_script_runs_and_cpu_parity_is_exact(tmp_path, device):
    """benchmarks/flowtracer_device_check.py (the gpu-machine check) end to end at tiny size."""
    code, found = run_device_check("flowtracer", device, tmp_path)
    assert code == 0
    assert found["parity_ok"] and found["grpo_flow_ok"] and found["grpo_finite"] and found["task"] == "ArithChain"
    if device == "cpu":
        assert found["logit_max_rel_diff"] == 0.0 and found["tau_max_abs_diff"] == 0.0
        assert found["masking_agreement"] == 1.0 and found["sft_loss_rel_diff"] == 0.0
