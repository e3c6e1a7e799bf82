"""vcot (VCoT-Lift / VCoT-Bench on MiniVerus) as Dagster assets — wiring only.

(No `from __future__ import annotations` here: Dagster reads the context annotation at runtime.)

    program_corpus ─> vc_queries ─> z3_proofs ─> solver_budget ─> lifted_programs ─> lift_steps
                                                                        │
                                                     semantic_blocks <──┤
                                                                        v
                                      learned_completer <── bench_tasks ──> completions ─> scores
                                                                                              v
                                                                                   benchmark_report
"""

import dagster as dg
import pandas as pd

from assets.common.paper import Paper
from assets.vcot import bench, checks, data, report, runs
from assets.vcot.params import VcotParams
from resources.artifacts import ArtifactsResource, load_checkpoint, save_checkpoint
from resources.compute import ComputeResource

paper = Paper("vcot", params=VcotParams)


def _workers(compute: ComputeResource, jobs: int) -> int:
    return compute.workers(jobs, paper.params(compute).workers)


@paper.asset(kinds={"pandas"}, description="Dataset: MiniVerus programs with their original sparse hints from "
             "four template families (diffy / mbpp / clover / bsearch), canonical text, parameters, md5, and "
             "whether each parses back identically and verifies under Verus's options.")
def program_corpus(context: dg.AssetExecutionContext, compute: ComputeResource) -> pd.DataFrame:
    p = paper.params(compute)
    corpus = data.generate_corpus(p.n_programs, compute.seed_for(paper.slug, "corpus"), tuple(p.families))
    verdicts = runs.corpus_verdicts(corpus, p.rlimit_probe)
    frame = corpus.merge(verdicts, on="program_id")
    context.add_output_metadata({"programs_per_family": dg.MetadataValue.json(
        frame["family"].value_counts().sort_index().to_dict()), "verify": int(frame["verifies"].sum())})
    return frame


@paper.asset(kinds={"pandas", "duckdb"}, description="Dataset: one SMT-LIB2 query per obligation (asserts, lemma "
             "preconditions, invariant entry / preservation, postconditions, bounds) with status and rlimit used "
             "at the provisional cap.")
def vc_queries(context: dg.AssetExecutionContext, program_corpus: pd.DataFrame,
               compute: ComputeResource) -> pd.DataFrame:
    frame = runs.vc_queries(program_corpus, paper.params(compute).rlimit_probe)
    context.log.info(f"{len(frame)} queries; statuses {frame['status'].value_counts().to_dict()}")
    return frame


@paper.asset(kinds={"pandas"}, description="Annotation: proof-DAG summary per query (rule histogram over the 36 "
             "rule names, tier counts, liftable high-tier nodes), with the z3 version.")
def z3_proofs(context: dg.AssetExecutionContext, vc_queries: pd.DataFrame, compute: ComputeResource) -> pd.DataFrame:
    frame = runs.z3_proofs(vc_queries, paper.params(compute).rlimit_probe)
    context.add_output_metadata({"z3_version": str(frame["z3_version"].iloc[0]) if len(frame) else "",
                                 "proof_nodes": int(frame["nodes"].sum())})
    return frame


@paper.asset(kinds={"python"}, description="Decision rule: per-query rlimit cap = 4 × the corpus's largest query; "
             "triviality budget of the restricted solver = the median query.")
def solver_budget(context: dg.AssetExecutionContext, vc_queries: pd.DataFrame, z3_proofs: pd.DataFrame,
                  compute: ComputeResource) -> dict:
    p = paper.params(compute)
    value = runs.solver_budget(vc_queries, p.cap_factor, p.rlimit_probe)
    context.log.info(f"rlimit cap {value['rlimit_cap']}, triviality budget {value['trivial_rlimit']}")
    return value


@paper.asset(kinds={"pandas"}, description="Dataset (= VCoT-Bench's org/): the lifted VCoT programs — proof-derived "
             "steps checked, pruned and repaired — with coverage per checker category, proof lines before/after, "
             "block counts and every step with its provenance (JSON).")
def lifted_programs(context: dg.AssetExecutionContext, program_corpus: pd.DataFrame, solver_budget: dict,
                    compute: ComputeResource, artifacts: ArtifactsResource) -> pd.DataFrame:
    p = paper.params(compute)
    frame, timings = runs.lift_corpus(program_corpus, solver_budget, p, _workers(compute, len(program_corpus)),
                                      compute.base_seed, context.log.info)
    artifacts.record_timings(paper.slug, "lift", timings)
    context.add_output_metadata({"lifted": int((frame["status"] == "lifted").sum()),
                                 "excluded": int((frame["status"] != "lifted").sum())})
    return frame


@paper.asset(kinds={"pandas"}, description="Benchmark table: every candidate step of the lift (kept, dropped, "
             "pruned trivial / redundant, repair-dropped) with rule, checker category and provenance.")
def lift_steps(lifted_programs: pd.DataFrame) -> pd.DataFrame:
    return runs.lift_steps(lifted_programs)


@paper.asset(kinds={"pandas"}, description="Annotation: the semantic blocks of each lifted program (lemma / "
             "invariant / assertion), chain index, Loc third and line span.")
def semantic_blocks(lifted_programs: pd.DataFrame) -> pd.DataFrame:
    return runs.semantic_blocks(lifted_programs[lifted_programs["status"] == "lifted"])


@paper.asset(kinds={"pandas"}, description="Dataset: VCoT-Bench tasks — masked programs with the paper's "
             "placeholders, gold blocks, hole → type, dimension (ratio / type / loc), bucket, mask seed.")
def bench_tasks(context: dg.AssetExecutionContext, lifted_programs: pd.DataFrame, semantic_blocks: pd.DataFrame,
                compute: ComputeResource) -> pd.DataFrame:
    p = paper.params(compute)
    lifted = lifted_programs[lifted_programs["status"] == "lifted"]
    frame = bench.build_tasks(lifted, tuple(p.mask_seeds),
                              lambda pid, seed, k: compute.seed_for(paper.slug, "mask", pid, seed, k))
    context.add_output_metadata({"tasks": dg.MetadataValue.json(frame["dimension"].value_counts().to_dict())})
    return frame


@paper.asset(gpu=True, kinds={"torch"}, description="Checkpoint (gpu profile; toy size at smoke): the learned "
             "completer — one tiny transformer per held-out family trained on the other families' blocks.")
def learned_completer(context: dg.AssetExecutionContext, lifted_programs: pd.DataFrame, bench_tasks: pd.DataFrame,
                      compute: ComputeResource, artifacts: ArtifactsResource) -> dict:
    p = paper.params(compute)
    if not p.learned.enabled:
        context.log.info("learned completer disabled at this profile")
        return {"enabled": False}
    torch = compute.torch(seed=compute.seed_for(paper.slug, "learned"), threads=1)
    lifted = lifted_programs[lifted_programs["status"] == "lifted"]
    state, info = runs.train_learned(lifted, p.learned, torch, compute.seed_for(paper.slug, "learned"),
                                     context.log.info, compute.resolved_device())
    ref = save_checkpoint(artifacts.checkpoint_path(paper.slug, "learned_completer"), state,
                          provenance=compute.provenance(paper.slug), config=p.learned, seed=compute.base_seed,
                          vocab=info["vocab"], losses=info["losses"])
    return {"enabled": True, **ref, "losses": info["losses"]}


@paper.asset(kinds={"pandas"}, description="Dataset: every completer's completion ({hole_id: text}) of every task "
             "(completer × dimension in columns): null, oracle, trivial, retrieval kNN, solver-guided, learned.")
def completions(context: dg.AssetExecutionContext, lifted_programs: pd.DataFrame, bench_tasks: pd.DataFrame,
                solver_budget: dict, learned_completer: dict, compute: ComputeResource,
                artifacts: ArtifactsResource) -> pd.DataFrame:
    p = paper.params(compute)
    lifted = lifted_programs[lifted_programs["status"] == "lifted"]
    learned = None
    if learned_completer.get("enabled"):
        compute.torch(threads=1)
        state, sidecar = load_checkpoint(learned_completer)
        learned = runs.load_learned(state, sidecar, p.learned, lifted)
    frame, timings = runs.complete_all(lifted, bench_tasks, p, solver_budget, learned,
                                       _workers(compute, lifted["program_id"].nunique()), compute.base_seed,
                                       context.log.info)
    artifacts.record_timings(paper.slug, "completions", timings)
    return frame


@paper.asset(kinds={"pandas"}, description="Annotation: SynAcc, SemAcc (+ unknown flags), Acc (1 / 0.5 / 0.25 / 0) "
             "and Verified (Verus options; Z3 defaults for the null completer) per task × completer.")
def scores(context: dg.AssetExecutionContext, lifted_programs: pd.DataFrame, bench_tasks: pd.DataFrame,
           completions: pd.DataFrame, solver_budget: dict, compute: ComputeResource,
           artifacts: ArtifactsResource) -> pd.DataFrame:
    p = paper.params(compute)
    lifted = lifted_programs[lifted_programs["status"] == "lifted"]
    frame, timings = runs.score_all(lifted, bench_tasks, completions, p, solver_budget,
                                    _workers(compute, lifted["program_id"].nunique()), compute.base_seed,
                                    context.log.info)
    artifacts.record_timings(paper.slug, "scores", timings)
    return frame


@paper.asset(kinds={"duckdb", "markdown"}, description="VCoT-Bench analogue: lifting fidelity and proof-line "
             "factor, Acc by Ratio bucket / Type / Loc per completer with bootstrap CIs, the paper's anchors as "
             "reference lines → REPORT.md, plots, warehouse rows, claims.")
def benchmark_report(context: dg.AssetExecutionContext, lifted_programs: pd.DataFrame, lift_steps: pd.DataFrame,
                     z3_proofs: pd.DataFrame, semantic_blocks: pd.DataFrame, bench_tasks: pd.DataFrame,
                     scores: pd.DataFrame, solver_budget: dict, learned_completer: dict, compute: ComputeResource,
                     artifacts: ArtifactsResource) -> dict:
    built = report.build_report(lifted_programs, lift_steps, z3_proofs, semantic_blocks, bench_tasks, scores,
                                solver_budget, learned_completer, paper.params(compute), compute.base_seed,
                                artifacts.recorded_timings(paper.slug, "lift"),
                                _joined_timings(artifacts))
    return paper.publish(context, compute, artifacts, built)


def _joined_timings(artifacts: ArtifactsResource):
    done = artifacts.recorded_timings(paper.slug, "completions")
    judged = artifacts.recorded_timings(paper.slug, "scores")
    if done is None or judged is None:
        return None
    return judged.merge(done[["program_id", "completer", "complete_seconds"]], on=["program_id", "completer"],
                        how="left")


PAPER = paper.define(
    assets=[program_corpus, vc_queries, z3_proofs, solver_budget, lifted_programs, lift_steps, semantic_blocks,
            bench_tasks, learned_completer, completions, scores, benchmark_report],
    checks=[
        paper.gate(program_corpus, "unique_round_trip_verifies", "GX: unique ids and texts, known families; every "
                   "program parses back identically and verifies (the failing obligation is named).",
                   checks.corpus_valid),
        paper.gate(vc_queries, "all_unsat_under_cap", "Every query unsat within the provisional rlimit; an "
                   "exhausted rlimit is named.", checks.queries_unsat, uses_params=True),
        paper.gate(z3_proofs, "proof_per_query", "A proof for every unsat query; only the 36 tiered rule names; "
                   "z3 version recorded.", checks.proofs_complete),
        paper.gate(solver_budget, "budget_sane", "Triviality budget within the cap; the corpus fits the cap.",
                   checks.budget_sane),
        paper.gate(lifted_programs, "verify_coverage_provenance", "100 % of lifted programs verify, coverage ≥ "
                   "target in every checker category, every step traced to a high-tier proof node, nothing "
                   "excluded.", checks.lifted_valid, uses_params=True),
        paper.gate(semantic_blocks, "plausible_block_counts", "≥ 2 blocks per program, mean in a plausible "
                   "range (the real corpus has 7.7).", checks.blocks_plausible),
        paper.gate(bench_tasks, "holes_gold_counts", "≥ 1 hole per task; gold re-insertion = the lifted program; "
                   "buckets in 10..100; unique ids; counts = Σ N_p / types present / 3 × Loc-eligible.",
                   checks.tasks_valid, uses_params=True, additional={"programs": lifted_programs}),
        paper.gate(learned_completer, "loads_back", "The learned completer's checkpoint reloads (weights_only), "
                   "finite losses (or disabled).", checks.learned_valid),
        paper.gate(completions, "no_assume_known_holes", "No assume / admit in any completion; only the task's "
                   "hole ids.", checks.completions_clean, additional={"tasks": bench_tasks}),
        paper.gate(scores, "oracle_100_trivial_vacuous", "The oracle scores Acc 100; the trivial completer's "
                   "SemAcc ≤ 2 %.", checks.scores_sane),
    ],
    claims=["proof_line_factor", "fragility_solver", "fragility_retrieval",
            "assertion_harder_than_invariant", "middle_harder_than_front"],
    observations=["lift_fidelity", "null_verified", "type_loc_acc", "judge_checks", "learned_completer",
                  "per_hole_fragility", "lift_cost", "judge_speed"],
)
