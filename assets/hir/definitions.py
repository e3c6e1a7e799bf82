"""HiR (hindsight instruction replay) as Dagster assets — wiring only (data, constraints, replay,
rl, runs, checks, benchmark and report do the work).

(No `from __future__ import annotations` here: Dagster reads the context annotation at runtime.)

    corpus ─> vocab ─> constraint_bank ─> instruction_dataset (train / test prompts, SFT pairs)
                 v                                  v
           pretrained_lm ──────────────────> sft_checkpoint ─> difficulty (warm-start ILA gate)
                                                                   v
                                      rl_runs (method × seed) ─> rollout_log ─> benchmark_report

Method × seed are table columns and checkpoint-name parts (no partitions), so every blocking
check gates everything downstream in one run. Wall-clock numbers (training seconds, step
phase times) go to data/runs/hir/timings (artifacts.record_timings), never into stored values.
"""

import dagster as dg
import pandas as pd

from assets.common.gensim_text import gensim_text_bytes
from assets.common.paper import Paper
from assets.common.parallel import spawn_imap
from assets.common.report import markdown_table
from assets.hir import checks, constraints, replay, report, runs
from assets.hir.params import HirParams
from resources.artifacts import ArtifactsResource, data_ref, save_checkpoint, write_parquet
from resources.compute import ComputeResource
from resources.versioning import bytes_md5

paper = Paper("hir", params=HirParams)
STEP_TIMES = ["seconds_generate", "seconds_logprob", "seconds_select", "seconds_collect", "seconds_update",
              "seconds_step"]


def _saver(compute: ComputeResource, artifacts: ArtifactsResource, name: str, seed: int):
    def save(state, config, extra):
        return save_checkpoint(artifacts.checkpoint_path(paper.slug, name), state,
                               provenance=compute.provenance(paper.slug), config=config, seed=seed, **extra)
    return save


@paper.asset(kinds={"pandas"}, description="gensim 4.4.0 test data (lee_background.cor + lee.cor): lowercased "
             "sentences of 6–20 words, tokenized into words, numbers and . ! ? ,")
def corpus(context: dg.AssetExecutionContext, compute: ComputeResource) -> pd.DataFrame:
    frame = runs.corpus(paper.params(compute))
    context.add_output_metadata({"sentences": len(frame), "source_md5": dg.MetadataValue.json(
        {name: bytes_md5(gensim_text_bytes(name)) for name in checks.SOURCE_FILES})})
    return frame


@paper.asset(kinds={"python"}, description="Word-level vocabulary (specials, frequent corpus tokens, template "
             "words, digits, constraint numbers), topic words and constraint words.")
def vocab(context: dg.AssetExecutionContext, corpus: pd.DataFrame, compute: ComputeResource) -> dict:
    value = runs.vocab(corpus, paper.params(compute))
    context.add_output_metadata({"size": value["size"], "md5": value["md5"],
                                 "topics": dg.MetadataValue.json(value["topics"][:20])})
    return value


@paper.asset(kinds={"pandas"}, description="The constraint bank: every checker's golden cases judged by the "
             "verifier (kind, spec, response, expected, got) and the verifier code's md5.")
def constraint_bank(context: dg.AssetExecutionContext, vocab: dict) -> pd.DataFrame:
    rows = []
    for spec, response, expected in constraints.GOLDEN:
        c = constraints.parse_constraint(spec)
        rows.append({"kind": c.kind, "spec": spec, "response": response, "expected": expected,
                     "got": c.check(response.split())})
    context.add_output_metadata({"kinds": len(constraints.KINDS), "templates": len(constraints.TEMPLATES),
                                 "verifier_md5": runs.verifier_md5()})
    return pd.DataFrame(rows)


@paper.asset(kinds={"pandas"}, description="Prompts 'write about {topic} .' + 3–5 constraints (a min_words floor "
             "first), templates type1–6: disjoint train / test splits; SFT pairs (instruction with 0–2 constraints "
             "a 1–2-sentence corpus response meets, response).")
def instruction_dataset(context: dg.AssetExecutionContext, corpus: pd.DataFrame, vocab: dict,
                        constraint_bank: pd.DataFrame, compute: ComputeResource) -> pd.DataFrame:
    p = paper.params(compute)
    frame = runs.full_dataset(corpus, vocab, p, compute.rng(paper.slug, "prompts"), compute.rng(paper.slug, "sft"))
    counts = frame.groupby(["split", "n_constraints"]).size().rename("rows").reset_index()
    context.add_output_metadata({"rows": dg.MetadataValue.md(markdown_table(counts))})
    return frame


@paper.asset(gpu=True, description="Checkpoint: TinyLM pretrained on the corpus sentences (next-token CE).")
def pretrained_lm(context: dg.AssetExecutionContext, corpus: pd.DataFrame, vocab: dict, compute: ComputeResource,
                  artifacts: ArtifactsResource) -> dict:
    seed = compute.seed_for(paper.slug, "pretrain")
    value = runs.pretrain(corpus, vocab, paper.params(compute), seed, compute.torch,
                          _saver(compute, artifacts, "pretrained_lm", seed), context.log.info,
                          compute.resolved_device())
    artifacts.record_timings(paper.slug, "pretrained_lm", pd.DataFrame([{"seconds": value.pop("seconds")}]))
    context.add_output_metadata({"final_loss": value["final_loss"]})
    return value


@paper.asset(gpu=True, description="Checkpoint: the SFT warm start (loss on the response) — also the frozen KL "
             "reference of every RL run.")
def sft_checkpoint(context: dg.AssetExecutionContext, instruction_dataset: pd.DataFrame, pretrained_lm: dict,
                   vocab: dict, compute: ComputeResource, artifacts: ArtifactsResource) -> dict:
    seed = compute.seed_for(paper.slug, "sft")
    pairs = instruction_dataset[instruction_dataset["split"] == "sft"]
    value = runs.sft(pairs, pretrained_lm, vocab, paper.params(compute), seed, compute.torch,
                     _saver(compute, artifacts, "sft_checkpoint", seed), context.log.info, compute.resolved_device())
    artifacts.record_timings(paper.slug, "sft_checkpoint", pd.DataFrame([{"seconds": value.pop("seconds")}]))
    context.add_output_metadata({"final_loss": value["final_loss"]})
    return value


@paper.asset(kinds={"pandas"}, description="Calibrated difficulty: the warm start's greedy and sampled ILA / CLA "
             "per test prompt (constraints per prompt and SFT steps are set so that ILA ∈ [0.02, 0.25]).")
def difficulty(context: dg.AssetExecutionContext, sft_checkpoint: dict, instruction_dataset: pd.DataFrame,
               vocab: dict, compute: ComputeResource) -> pd.DataFrame:
    frame = runs.difficulty(sft_checkpoint, instruction_dataset, vocab, paper.params(compute),
                            compute.seed_for(paper.slug, "difficulty"), compute.torch, compute.resolved_device())
    by_count = frame.groupby("n_constraints")[["ila_greedy", "cla_greedy"]].mean().reset_index()
    context.log.info(f"warm-start ILA {frame['ila_greedy'].mean():.3f}, CLA {frame['cla_greedy'].mean():.3f}")
    context.add_output_metadata({"ila": float(frame["ila_greedy"].mean()),
                                 "by_constraints": dg.MetadataValue.md(markdown_table(by_count))})
    return frame


@paper.asset(gpu=True, description="RL runs, method × seed (HiR, GRPO-binary, GRPO-dense, HiR-random, HiR-onpolicy) "
             "from the SFT warm start to the same generated-response budget: checkpoints, per-prompt test "
             "evaluations at budget fractions, per-step statistics, logged rollouts.")
def rl_runs(context: dg.AssetExecutionContext, difficulty: pd.DataFrame, sft_checkpoint: dict,
            instruction_dataset: pd.DataFrame, vocab: dict, compute: ComputeResource,
            artifacts: ArtifactsResource) -> dict:
    p = paper.params(compute)
    if any(m.startswith("hir") for m in p.methods):
        replay.check_group_sizes(p.rl.group_size, p.rl.generated, p.rl.prompts_per_step)
    table, evals, steps, rollouts = runs.rl_runs(
        sft_checkpoint, instruction_dataset, vocab, p, lambda *k: compute.seed_for(paper.slug, *k),
        lambda name: artifacts.checkpoint_path(paper.slug, name), compute.provenance(paper.slug),
        compute.workers(len(p.methods) * len(p.seeds), p.workers), spawn_imap, context.log.info,
        compute.resolved_device())
    artifacts.record_timings(paper.slug, "rl_steps", steps[["method", "seed", "step", *STEP_TIMES]])
    artifacts.record_timings(paper.slug, "rl_runs", table[["method", "seed", "seconds"]])
    base = artifacts.paper_dir(paper.slug) / "rl"
    refs = {name: data_ref(write_parquet(base / f"{name}.parquet", frame))
            for name, frame in (("evals", evals), ("steps", steps.drop(columns=STEP_TIMES)), ("rollouts", rollouts))}
    final = evals[evals["eval_point"] == evals["eval_point"].max()]
    summary = final.groupby("method")[["ila_greedy", "cla_greedy"]].mean().reset_index()
    context.add_output_metadata({"final": dg.MetadataValue.md(markdown_table(summary))})
    return {"runs": table.drop(columns=["seconds"]).to_dict("records"), **refs}


@paper.asset(kinds={"pandas"}, description="Annotation: logged rollouts (every replay; every generated response of "
             "each log_every-th step) with judge lists, dense / sparse, reward, replay flag, selection score, "
             "log π(y|q) and log π(y|q'), re-verified by the checkers.")
def rollout_log(context: dg.AssetExecutionContext, rl_runs: dict) -> pd.DataFrame:
    frame = runs.rollout_log(pd.read_parquet(checks.D_path(rl_runs["rollouts"])))
    context.add_output_metadata({"rows": len(frame), "replays": int(frame["is_replay"].sum())})
    return frame


@paper.asset(kinds={"duckdb", "markdown"}, description="HiR vs GRPO-binary / GRPO-dense / HiR-random / "
             "HiR-onpolicy at equal generated responses: ILA / CLA curves, claims, report.")
def benchmark_report(context: dg.AssetExecutionContext, rl_runs: dict, rollout_log: pd.DataFrame,
                     difficulty: pd.DataFrame, compute: ComputeResource, artifacts: ArtifactsResource) -> dict:
    p = paper.params(compute)
    built = report.build_report(
        pd.read_parquet(checks.D_path(rl_runs["evals"])), pd.read_parquet(checks.D_path(rl_runs["steps"])),
        rollout_log, difficulty, p, compute.base_seed, step_times=artifacts.recorded_timings(paper.slug, "rl_steps"),
        run_times=artifacts.recorded_timings(paper.slug, "rl_runs"))
    return paper.publish(context, compute, artifacts, built)


PAPER = paper.define(
    assets=[corpus, vocab, constraint_bank, instruction_dataset, pretrained_lm, sft_checkpoint, difficulty, rl_runs,
            rollout_log, benchmark_report],
    checks=[
        paper.gate(corpus, "md5_and_size", "gensim source files have the expected bytes and md5; GX: non-null "
                   "text, ≥ 1000 sentences.", checks.corpus_valid),
        paper.gate(vocab, "vocabulary", "Unique tokens, specials first, size in range, constraint words inside.",
                   checks.vocab_valid),
        paper.gate(constraint_bank, "golden_cases", "Every checker's golden cases give the expected answer.",
                   checks.bank_valid),
        paper.gate(instruction_dataset, "valid_prompts", "Known, non-conflicting constraints; templates type1–6 and "
                   "coverage; constraint counts and min_words floor; disjoint splits; SFT pairs re-verified.",
                   checks.dataset_valid, uses_params=True),
        paper.gate(pretrained_lm, "loads_back", "Reloads, finite, sane loss, trained on this vocabulary.",
                   checks.checkpoint_valid, additional={"vocab": vocab}),
        paper.gate(sft_checkpoint, "loads_back", "Reloads, finite, sane loss, trained on this vocabulary.",
                   checks.checkpoint_valid, additional={"vocab": vocab}),
        paper.gate(difficulty, "sparse_reward_regime", "Warm-start greedy test ILA ∈ [0.02, 0.25] (blocking: "
                   "otherwise the comparison is meaningless).", checks.warm_start_in_regime),
        paper.gate(rl_runs, "finite_kl_budget", "Finite weights and metrics; KL to the reference ≤ 1 nat/token for "
                   "HiR and the GRPO baselines; generated responses match the budget.", checks.runs_valid,
                   uses_params=True),
        paper.gate(rl_runs, "ablations_kl", "Warn: an ablation (HiR-random, HiR-onpolicy) ends > 1 nat/token from "
                   "the reference (a collapse the report shows).", checks.ablations_kl, severity="warn"),
        paper.gate(rollout_log, "replays_verify", "Every replay re-verifies to reward 1 under its rewritten "
                   "instruction; logged judge lists reproduce.", checks.replays_valid),
    ],
    claims=["beats_binary", "matches_dense", "select_matters", "cla_not_lower", "less_budget"],
    observations=["replays_valid", "onpolicy_ratio", "instruction_preference", "all_zero_groups", "warm_start"],
)
