"""Every key of every paper's gpu profile is classified, and every gpu option is executed by a test.

No GPU is lent to CI, so a code path that only the gpu profile of params.yaml turns on would first
run on a rented GPU. TABLE below classifies each leaf key of each paper's `gpu:` section (a pattern
may cover several: fnmatch on the dotted path) as

- SIZE: a scale or a numeric hyper-parameter (steps, seeds, widths, counts, batch sizes, threads,
  learning rates, grids of coefficients): no code of its own, the same code runs at smoke;
- Option(covered_by): a value that turns code on (a method / variant / dataset / task, a boolean, an
  estimator, an architecture). Each entry of `covered_by` is
    * "smoke" or "cpu": that profile already runs the gpu value (checked here: the gpu value equals
      that profile's, or is a sub-list of it — `ignore` names dict keys left out of the comparison);
    * a test node "tests/<paper>/<file>.py::<function>": checked to exist, and its source (decorators
      included) names the gpu profile or the option's value, so a test unrelated to it cannot be cited.

The test fails when the gpu section has a leaf key that no entry matches (a new gpu option cannot be
added silently), when an entry matches nothing (a stale row), and when an option's coverage does not
hold.
"""
from __future__ import annotations

import ast
import fnmatch
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from jobs.papers import PAPERS
from resources.profiles import load_all_params, load_params

ROOT = Path(__file__).resolve().parents[2]
SIZE = "size"


@dataclass(frozen=True)
class Option:
    covered_by: tuple[str, ...]
    ignore: tuple[str, ...] = ()          # dict keys (sizes) left out when comparing with a profile


def _t(paper: str, file: str, *functions: str) -> tuple[str, ...]:
    return tuple(f"tests/{paper}/{file}.py::{f}" for f in functions)


TABLE: dict[str, dict[str, object]] = {
    "oscs": {"sentences_per_attack": SIZE, "calibration_size": SIZE, "stream_length": SIZE, "seeds": SIZE,
             "gaussian.*": SIZE},
    "pac_labels": {
        "trials": SIZE, "curve_points": SIZE, "naive_split_seeds": SIZE, "synthetic_cls.*": SIZE,
        "synthetic_reg.*": SIZE,
        # the (dataset, model, ci) partitions are the cpu profile's; only num_draws grows
        "partitions": Option(("cpu",), ignore=("num_draws",)),
        "paper_datasets.*": Option(("cpu",)),
    },
    "brew": {"dev_texts": SIZE, "dev_length": SIZE, "seeds": SIZE, "texts_per_seed": SIZE,
             "baseline_texts_per_seed": SIZE, "negative_texts_per_seed": SIZE, "human_keys_per_seed": SIZE,
             "realism_texts": SIZE},
    "spgcl": {
        "seeds": SIZE, "probe_c_exponents": SIZE, "encoder.*": SIZE, "methods.*": SIZE, "scaling.epochs": SIZE,
        # every method on every graph (cpu runs a subset per graph)
        "runs.*": Option(_t("spgcl", "test_scaling", "test_gpu_profile_block_builds_and_its_code_path_runs_on_cpu")),
        # n = 50,000 is a size, but the similarity sums take their chunked (recomputed-backward) path at scale:
        # test_scaling.py::test_measure_reports_positive_rates_and_chunking runs both sides of the chunk
        "scaling.sizes": Option(_t("spgcl", "test_scaling",
                                   "test_gpu_profile_block_builds_and_its_code_path_runs_on_cpu")),
    },
    "diffusion_w2": {
        "n_particles.*": SIZE, "ot_subsample": SIZE, "sliced_projections": SIZE, "hessian_check_taus": SIZE,
        "bound_sweep.*": SIZE, "experiments.*.Ks": SIZE, "experiments.*.deltas": SIZE, "experiments.*.seeds": SIZE,
        **{key: Option(_t("diffusion_w2", "test_assets", "test_gpu_profile_path_runs_with_the_torch_backend_on_cpu")
                       + _t("diffusion_w2", "test_torch_backend",
                            "test_gpu_block_builds_and_has_high_dimensional_targets"))
           for key in ("backend", "dtype", "targets", "perf_benchmark", "claims.d1_targets",
                       "experiments.*.targets", "experiments.*.processes", "experiments.*.samplers",
                       "experiments.*.grids", "experiments.*.errors")},
    },
    "logit_distill": {
        "teacher_seeds": SIZE, "spirals.*": SIZE, "digits.*": SIZE,
        "shapes.encoder": Option(("smoke",) + _t("logit_distill", "test_assets",
                                                 "test_gpu_profile_code_path_runs_on_cpu_at_tiny_size")),
        "shapes.*": SIZE,
    },
    "dream_mpc": {
        "seeds": SIZE, "torch_threads": SIZE, "action_repeat": SIZE, "model.latent_dim": SIZE, "model.mlp_dim": SIZE,
        "model.enc_dim": SIZE, "training.decisions": SIZE, "training.seed_episodes": SIZE,
        "training.collect_mppi_*": SIZE, "training.heldout_episodes": SIZE, "training.eval_seeds": SIZE,
        "training.min_transitions": SIZE, "microbench.*": SIZE, "report.bootstrap": SIZE,
        "tasks": Option(_t("dream_mpc", "test_gpu_branches", "test_every_gpu_task_loads_steps_and_plans")),
        "model.activation": Option(_t("dream_mpc", "test_device", "test_gpu_block_builds_at_full_size")
                                   + _t("dream_mpc", "test_gpu_branches", "test_every_gpu_task_loads_steps_and_plans")),
        "training.planner_noise": Option(("cpu",)),
        "gates.fit_budgets": Option(_t("dream_mpc", "test_gpu_branches",
                                       "test_smoke_fits_every_budget_the_gpu_profile_gates")),
        "task_survey.*": Option(("smoke",)),          # [] at gpu: the survey is switched off
    },
    "viar": {
        "claim_depth": SIZE, "ladder_depths": SIZE, "torch_threads": SIZE, "shapes.*": SIZE, "classifier.*": SIZE,
        "tokenizer.*": SIZE, "ar.*": SIZE, "viar.*": SIZE, "sampling.*": SIZE, "calibration.*": SIZE,
        "throughput.*": SIZE, "memory.*": SIZE, "convergence.*": SIZE,
        "schedules": Option(_t("viar", "test_gpu_profile", "test_gpu_profile_code_path_runs_on_cpu_at_tiny_size")),
    },
    "pfn_causal": {
        "n_covariates": SIZE, "pi_pre": SIZE, "model.d_model": SIZE, "model.n_heads": SIZE, "model.n_layers": SIZE,
        "model.bins": SIZE, "batch_size": SIZE, "pretrain.*": SIZE, "finetune.*": SIZE, "pwf.*": SIZE, "msf.*": SIZE,
        "msf_ablation.*": SIZE, "eval.*": SIZE, "baselines.*": SIZE, "coverage_steps": SIZE, "workers": SIZE,
        "model.head": Option(_t("pfn_causal", "test_assets", "test_gpu_profile_code_path_at_toy_size")),
        "full_coverage": Option(_t("pfn_causal", "test_assets", "test_gpu_profile_code_path_at_toy_size")),
    },
    "vcot": {"n_programs": SIZE, "mask_seeds": SIZE, "solver_budget": SIZE, "learned.enabled": Option(("smoke",)),
             "learned.*": SIZE},
    "ts_layers": {"d_model": SIZE, "n_heads": SIZE, "depths": SIZE, "synthetic.*": SIZE, "train.*": SIZE,
                  "realign.*": SIZE, "text.*": SIZE, "llm4ts.*": SIZE, "prune_models": SIZE,
                  "max_test_windows": SIZE, "workers": SIZE},
    "hir": {
        "model.*": SIZE, "pretrain.*": SIZE, "sft.*": SIZE, "rl.prompts_per_step": SIZE, "rl.budget_steps": SIZE,
        "rl.eval_points": SIZE, "rl.log_every": SIZE, "seeds": SIZE, "workers": SIZE,
        "rl.estimator": Option(_t("hir", "test_assets", "test_gpu_profile_builds_and_steps_on_cpu")
                               + _t("hir", "test_rl", "test_reinforce_pp_whitens_over_the_batch")),
    },
    "fair_selective": {
        "pool_size": SIZE, "horizon": SIZE, "window": SIZE, "seeds": SIZE, "agents.total_steps": SIZE, "workers": SIZE,
        "agents.beta2_grid": SIZE,
        **{f"agents.grid.{k}": SIZE for k in ("ppo", "oracle", "naive_acc", "naive_imp", "sellf")},
        **{key: Option(_t("fair_selective", "test_baselines", "test_only_the_gpu_profile_trains_the_new_baselines",
                          "test_new_baselines_train_select_and_evaluate_end_to_end"))
           for key in ("agents.grid.elbert", "agents.grid.focops", "agents.grid.sellf_censored",
                       "agents.nu_max_grid", "agents.censor")},
        "agents.predictor": Option(_t("fair_selective", "test_method",
                                      "test_deep_predictor_gpu_variant_trains_at_tiny_size")),
    },
    "dispat": {
        "seeds": SIZE, "model.*": SIZE, "train.*": SIZE, "self_play.*": SIZE, "variants.seeds": SIZE,
        "n_permutations": SIZE, "baselines.*": SIZE, "bootstrap": SIZE, "workers": SIZE,
        "datasets": Option(_t("dispat", "test_gpu_branches", "test_wine_splits_pass_the_split_gates_at_gpu_sizes")),
        "variants.datasets": Option(_t("dispat", "test_gpu_branches",
                                       "test_wine_splits_pass_the_split_gates_at_gpu_sizes")),
        "critic.enabled": Option(_t("dispat", "test_critic",
                                    "test_gpu_profile_runs_dispat_critic_rounds_at_tiny_size_on_the_cpu",
                                    "test_critic_enabled_through_the_group_scores_and_reports_dispat_critic")),
    },
    "acc_marl": {"variants": Option(("smoke",)),     # smoke trains all three arms; cpu only pbrs
                 "train.precision": Option(_t("acc_marl", "test_model_ppo",
                                              "test_bf16_autocast_is_the_fp32_network_to_bfloat16_rounding")),
                 "seeds": SIZE, "pool.*": SIZE, "train.*": SIZE, "eval.*": SIZE, "assignment.*": SIZE,
                 "workers": SIZE},
    "skill_recompose": {"seeds": SIZE, "icl.*": SIZE, "workers": SIZE},
    "lari": {"image": SIZE, "lmax": SIZE, "objects.*": SIZE, "rooms.*": SIZE, "model.*": SIZE, "train.*": SIZE,
             "workers": SIZE},
    "flowtracer": {
        "data.min_ops": SIZE, "data.max_ops": SIZE, "data.train": SIZE, "data.val": SIZE, "data.test": SIZE,
        "data.rl": SIZE, "data.rl_eval": SIZE, "model.*": SIZE, "sft.*": SIZE, "flow.*": SIZE, "grpo.*": SIZE,
        "analysis.*": SIZE, "seeds": SIZE, "workers": SIZE, "bootstrap": SIZE,
        **{key: Option(_t("flowtracer", "test_assets", "test_the_group_runs_on_arithchain_through_its_gates")
                       + _t("flowtracer", "test_arithchain", "test_sft_flow_and_grpo_run_on_arithchain"))
           for key in ("data.task", "data.held_out_ops")},
        "data.distractors": Option(_t("flowtracer", "test_arithchain",
                                      "test_splits_draw_their_own_depths_and_distractors",
                                      "test_the_gpu_profile_runs_arithchain_and_its_sequences_fit_the_context")),
        # fraction-only and layer-only ablations; smoke runs a fraction + layers ablation through GRPO
        "rl_ablations": Option(_t("flowtracer", "test_analysis", "test_rl_ablation_params_are_checked")
                               + _t("flowtracer", "test_assets",
                                    "test_the_group_runs_on_arithchain_through_its_gates")),
    },
    "limix": {
        "model.*": SIZE, "prior.*": SIZE, "train.*": SIZE, "eval.*": SIZE, "workers": SIZE,
        "variants": Option(_t("limix", "test_gpu_branches", "test_gpu_embedding_variants_train_and_are_judged")),
    },
}


def leaves(tree: dict, prefix: tuple[str, ...] = ()):
    """(dotted path, value) of every leaf: mappings are walked, lists and scalars are leaves."""
    for key, value in tree.items():
        path = (*prefix, str(key))
        if isinstance(value, dict) and value:
            yield from leaves(value, path)
        else:
            yield ".".join(path), value


def value_at(params: dict, path: str):
    node = params
    for part in path.split("."):
        if not isinstance(node, dict):
            return KeyError(path)
        matches = [k for k in node if str(k) == part]
        if not matches:
            return KeyError(path)
        node = node[matches[0]]
    return node


def _strip(value, ignore: tuple[str, ...]):
    if isinstance(value, dict):
        return {k: _strip(v, ignore) for k, v in value.items() if k not in ignore}
    if isinstance(value, list):
        return [_strip(v, ignore) for v in value]
    return value


def runs_at(gpu_value, other, ignore: tuple[str, ...] = ()) -> bool:
    """The profile value `other` already runs the gpu value: equal, or the gpu list is a sub-list."""
    if isinstance(other, KeyError):
        return False
    g, o = _strip(gpu_value, ignore), _strip(other, ignore)
    if g == o:
        return True
    if isinstance(g, list) and isinstance(o, list):
        seen = [json.dumps(v, sort_keys=True, default=str) for v in o]
        return all(json.dumps(v, sort_keys=True, default=str) in seen for v in g)
    return False


def gpu_leaves(slug: str) -> dict:
    section = load_all_params()[slug].get("gpu") or {}
    return dict(leaves(section))


def entry_for(slug: str, path: str) -> list[str]:
    return [pattern for pattern in TABLE.get(slug, {}) if fnmatch.fnmatchcase(path, pattern)]


def function_source(node_id: str) -> str | None:
    file, name = node_id.split("::")
    path = ROOT / file
    if not path.exists():
        return None
    text = path.read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            start = min([d.lineno for d in node.decorator_list] + [node.lineno])
            return "\n".join(text.splitlines()[start - 1:node.end_lineno])
    return None


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    return []


def mentions(path: str, gpu_value, others: list) -> list[str]:
    """What a covering test may name instead of the gpu profile: the key itself, or a string of the
    gpu value that neither smoke nor cpu has (the new method, dataset, estimator ...)."""
    known = {s for other in others for s in _strings(other)}
    return [path.rsplit(".", 1)[-1], *[s for s in _strings(gpu_value) if s not in known]]


@pytest.mark.parametrize("slug", list(PAPERS))
def test_every_gpu_key_is_classified_and_no_row_is_stale(slug):
    keys = gpu_leaves(slug)
    unclassified = [k for k in keys if not entry_for(slug, k)]
    assert not unclassified, (f"params.yaml {slug}.gpu has keys without a row in tests/platform/test_gpu_coverage.py "
                              f"TABLE (SIZE, or an Option with the test that runs it at toy size): {unclassified}")
    stale = [p for p in TABLE.get(slug, {}) if not any(fnmatch.fnmatchcase(k, p) for k in keys)]
    assert not stale, f"TABLE rows of {slug} that match no gpu key: {stale}"


@pytest.mark.parametrize("slug", list(PAPERS))
def test_every_gpu_option_is_executed_by_a_test(slug):
    profiles = {p: load_params(slug, p) for p in ("smoke", "cpu")}
    problems = []
    for path, value in gpu_leaves(slug).items():
        # the first matching row decides (so a specific row may precede a pattern)
        row = TABLE[slug][entry_for(slug, path)[0]]
        if row == SIZE:
            continue
        assert isinstance(row, Option) and row.covered_by, f"{slug}.{path}: a row is SIZE or Option(covered_by)"
        for cover in row.covered_by:
            if cover in profiles:
                if not runs_at(value, value_at(profiles[cover], path), row.ignore):
                    problems.append(f"{slug}.{path}: the {cover} profile does not run the gpu value {value!r}")
                continue
            source = function_source(cover)
            if source is None:
                problems.append(f"{slug}.{path}: no test {cover}")
            elif "gpu" not in source.lower() and not any(
                    m in source for m in mentions(path, value, [value_at(q, path) for q in profiles.values()])):
                problems.append(f"{slug}.{path}: {cover} names neither the gpu profile nor {value!r}")
    assert not problems, "\n".join(problems)


def test_the_classifier_itself():
    """Known answers of the helpers the two tests above rely on."""
    assert dict(leaves({"a": 1, "b": {"c": [1, 2], "d": {}}, "e": {"f": {"g": "x"}}})) == \
        {"a": 1, "b.c": [1, 2], "b.d": {}, "e.f.g": "x"}
    assert runs_at([1, 2], [2, 1, 3]) and not runs_at([1, 4], [1, 2]) and runs_at(True, True)
    assert runs_at([{"a": 1, "n": 5}], [{"a": 1, "n": 9}], ignore=("n",))
    assert not runs_at([{"a": 1, "n": 5}], [{"a": 1, "n": 9}]) and not runs_at("x", KeyError("p"))
    assert value_at({"n": {16: 3}}, "n.16") == 3 and isinstance(value_at({"n": 1}, "n.x"), KeyError)
    assert entry_for("limix", "variants") == ["variants"] and entry_for("limix", "model.k") == ["model.*"]
    assert function_source("tests/platform/test_gpu_coverage.py::test_the_classifier_itself").startswith("def ")
    assert function_source("tests/platform/test_gpu_coverage.py::no_such_test") is None
    assert mentions("rl.estimator", "reinforce_pp", ["grpo", "grpo"]) == ["estimator", "reinforce_pp"]
    assert mentions("variants", ["a", "b", {"name": "c"}], [["a"], KeyError("x")]) == ["variants", "b", "c"]


# ------------------------------------------------------------------------------ python -m jobs.device_check
def test_device_check_job_runs_the_scripts_on_cpu_and_writes_one_table(tmp_path):
    """The two fastest scripts through the job at --device cpu --tiny (each script is also run by its
    paper's own tests, hir and acc_marl included): cpu-vs-cpu parity is exact, one JSON + one markdown."""
    from jobs import device_check as J

    assert {"acc_marl", "dispat", "flowtracer", "hir"} <= set(J.papers_with_a_check())
    code = J.main(["--papers", "dispat", "flowtracer", "--device", "cpu", "--tiny", "--out-dir", str(tmp_path)])
    table = json.loads((tmp_path / "device_check.json").read_text())
    assert code == 0 and table["exit_code"] == 0
    assert [r["paper"] for r in table["papers"]] == ["dispat", "flowtracer"]
    assert all(r["status"] == "ok" and r["report"] for r in table["papers"])
    flow = J.flatten(table["papers"][1]["report"])
    assert flow["logit_max_rel_diff"] == 0.0 and flow["sft_loss_rel_diff"] == 0.0
    text = (tmp_path / "device_check.md").read_text()
    assert "| dispat | ok |" in text and "| flowtracer | ok |" in text and "sft_steps_per_s=" in text
    assert "| projected gpu profile |" in text
    for row in table["papers"]:             # every script reports its projection; the job adds it as h:mm:ss
        assert row["projected_gpu_profile_s"] == row["report"]["projection"]["gpu_profile_s"] > 0
        assert row["projected_gpu_profile"] == J.hms(row["projected_gpu_profile_s"])
        assert f"| {row['projected_gpu_profile']} |" in text


def test_device_check_job_writes_the_projection_table(tmp_path):
    """--projection-out: paper | projected gpu-profile time | measured on | phases, the phases largest first,
    each paper's note below; a report without a projection shows "—"."""
    from jobs import device_check as J

    assert J.hms(0.4) == "0:00:00" and J.hms(3725.6) == "1:02:06" and J.hms(90_000) == "25:00:00"
    assert J.hms(None) == "—" and J.projected_seconds({}) is None
    rows = [{"paper": "a", "report": {"projection": {"gpu_profile_s": 3700.0, "note": "no evaluation", "parts": [
        {"what": "small", "seconds_per_unit": 0.1, "units": 1000.0, "seconds": 100.0},
        {"what": "big", "seconds_per_unit": 1.2, "units": 3000.0, "seconds": 3600.0}]}}},
            {"paper": "b", "report": {}}]
    text = J.projection_markdown(rows, "cuda", False)
    assert "| paper | projected gpu-profile time | measured on | phases |" in text
    assert "| a | 1:01:40 | cuda | big: 1:00:00 (3,000 × 1.2 s); small: 0:01:40 (1,000 × 0.1 s) |" in text
    assert "| b | — | cuda | — |" in text and "- a: no evaluation" in text
    out = tmp_path / "sub" / "gpu_projection.md"
    code = J.main(["--papers", "dispat", "--device", "cpu", "--tiny", "--out-dir", str(tmp_path),
                   "--projection-out", str(out)])
    assert code == 0 and "| dispat | " in out.read_text() and "| cpu (tiny sizes) |" in out.read_text()


def test_device_check_job_exits_non_zero_on_a_parity_failure_or_a_crash():
    from jobs import device_check as J

    assert J.exit_code([{"exit_code": 0}, {"exit_code": 0}]) == 0
    assert J.exit_code([{"exit_code": 0}, {"exit_code": 1}]) == 1                  # one parity failure
    assert J.exit_code([{"exit_code": J.NO_DEVICE}] * 2) == J.NO_DEVICE            # cuda asked for, none seen
    assert J.exit_code([{"exit_code": J.NO_DEVICE}, {"exit_code": 1}]) == 1
    assert J.flatten({"a": {"b": 1.0, "c": [1]}, "d": "x"}) == {"a.b": 1.0, "d": "x"}
