"""skill_recompose data-quality predicates (pure; wired as blocking gates in definitions.py)."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from assets.common.findings import Finding, finding
from assets.skill_recompose import method as M
from assets.skill_recompose import runs, sim
from assets.skill_recompose.tasks import TASKS, VERBS

MIN_VERB_ACCURACY = 0.9
UNSEEN_ASSETS = ("query_episodes", "planner_predictions", "contexts", "icl_model", "rollouts")


def catalog_valid(catalog: pd.DataFrame) -> Finding:
    """Unseen templates disjoint from seen ones (by instruction and by skill sequence), every
    verb in the vocabulary, every Level-2 task with ≥ 1 bigram absent from all seen sequences."""
    seen, unseen = catalog[catalog["split"] == "seen"], catalog[catalog["split"] == "unseen"]
    problems = []
    both = set(seen["task"]) & set(unseen["task"])
    problems += [f"task {t} is both seen and unseen" for t in sorted(both)]
    problems += [f"unseen {r.task} repeats a seen instruction" for r in unseen.itertuples()
                 if r.instruction in set(seen["instruction"])]
    seen_seqs = {r.verbs for r in seen.itertuples()}
    seen_objs = {r.objects for r in seen.itertuples()}
    problems += [f"unseen {r.task} repeats a seen skill sequence and objects" for r in unseen.itertuples()
                 if r.verbs in seen_seqs and r.objects in seen_objs]
    for r in catalog.itertuples():
        bad = [v for v in json.loads(r.verbs) if v not in VERBS]
        if bad:
            problems.append(f"{r.task}: verbs {bad} not in the vocabulary")
    seen_bi = set().union(*(set(json.loads(b)) for b in seen["bigrams"]))
    for r in unseen[unseen["level"] == 2].itertuples():
        if not set(json.loads(r.bigrams)) - seen_bi:
            problems.append(f"Level-2 task {r.task} has no unseen bigram")
    for r in unseen[unseen["level"] == 1].itertuples():
        if set(json.loads(r.bigrams)) - seen_bi:
            problems.append(f"Level-1 task {r.task} has an unseen bigram")
    if len(seen) != 18 or len(unseen) != 23:
        problems.append(f"expected 18 seen / 23 unseen tasks, got {len(seen)} / {len(unseen)}")
    return finding(problems, ok=f"{len(seen)} seen, {len(unseen)} unseen; every Level-2 task has an unseen bigram")


def demos_valid(demos: pd.DataFrame, params) -> Finding:
    """Every demo replays to success; actions inside the voxel / Euler / gripper ranges; the
    configured number of demos for every seen task and seed."""
    problems = []
    for r in demos.itertuples():
        task = TASKS.get(r.task)
        if task is None or task.split != "seen":
            problems.append(f"demo {r.seed}/{r.demo_id}: {r.task} is not a seen task")
            continue
        try:
            keys = runs.keys_from_json(r.keys)
            world = runs.world_from_json(r.scene)
            ok, reason, _ = sim.execute(sim.Scene(r.task, world, json.loads(r.roles)), task, keys)
        except (sim.ActionError, M.PlanError, sim.SceneError) as err:
            ok, reason = False, str(err)
        if not ok:
            problems.append(f"demo {r.seed}/{r.demo_id} ({r.task}) does not replay to success: {reason}")
    counts = demos.groupby(["seed", "task"]).size()
    short = counts[counts < params.demos_per_task]
    problems += [f"seed {s} task {t}: {n} demos < {params.demos_per_task}" for (s, t), n in short.items()]
    missing = {t.name for t in TASKS.values() if t.split == "seen"} - set(demos["task"])
    problems += [f"no demos for {t}" for t in sorted(missing)]
    return finding(problems, ok=f"{len(demos)} demos replay to success")


def annotations_valid(ann: pd.DataFrame) -> Finding:
    """Every segment labelled with a known verb; gripper-change segments 100 % Grasp/Release;
    relational labels in (movable, target) order; verb accuracy ≥ 0.9 (gates retrieval)."""
    problems = []
    for r in ann.itertuples():
        labels = runs.skills_from_json(r.labels)
        if any(v not in VERBS or not args for v, args in labels):
            problems.append(f"demo {r.seed}/{r.demo_id}: an unlabelled segment or unknown verb")
    acc = runs.label_accuracy(ann)
    if not acc["grip_acc"] == 1.0:
        problems.append(f"gripper-change segments are {acc['grip_acc']:.3f} Grasp/Release, not 100 %")
    if not acc["verb_acc"] >= MIN_VERB_ACCURACY:
        problems.append(f"verb accuracy {acc['verb_acc']:.3f} < {MIN_VERB_ACCURACY}")
    return finding(problems, ok=f"verb accuracy {acc['verb_acc']:.3f}, Grasp/Release {acc['grip_acc']:.3f}",
                   **{k: float(v) for k, v in acc.items()})


def embeddings_valid(frame: pd.DataFrame) -> Finding:
    """384-d, finite, unit-norm MiniLM vectors, one per distinct text."""
    vecs = np.asarray(frame["vector"].tolist(), dtype=float)
    problems = []
    if vecs.ndim != 2 or vecs.shape[1] != 384:
        problems.append(f"embeddings have shape {vecs.shape}, expected (n, 384)")
    elif not np.isfinite(vecs).all():
        problems.append("non-finite embedding values")
    else:
        norms = np.linalg.norm(vecs, axis=1)
        bad = int((np.abs(norms - 1) > 1e-3).sum())
        if bad:
            problems.append(f"{bad} embeddings are not unit-norm (norms {norms.min():.4f}–{norms.max():.4f})")
    if frame["text"].duplicated().any():
        problems.append("duplicate texts")
    return finding(problems, ok=f"{len(frame)} unit-norm 384-d embeddings")


def hparams_seen_only(value: dict) -> Finding:
    """The hyper-parameters were chosen on seen tasks only: no unseen asset upstream, only seen
    tasks held out."""
    problems = [f"retrieval_hparams has the unseen asset {a} upstream" for a in value.get("upstream", [])
                if a in UNSEEN_ASSETS]
    problems += [f"held-out task {t} is not seen" for t in value.get("held_out_tasks", [])
                 if TASKS.get(t) is None or TASKS[t].split != "seen"]
    if not value.get("held_out_tasks"):
        problems.append("no leave-one-seen-task-out folds recorded")
    return finding(problems, ok=f"chosen on {len(value.get('held_out_tasks', []))} seen folds")


def contexts_seen_only(ctx: pd.DataFrame, seen_demos: pd.DataFrame) -> Finding:
    """Every context demo id is a seen demo of the same seed."""
    ids = {(int(s), int(d)) for s, d in zip(seen_demos["seed"], seen_demos["demo_id"])}
    bad = 0
    for r in ctx.itertuples():
        for d in json.loads(r.d_dyn) + json.loads(r.d_cov):
            bad += (int(r.seed), int(d)) not in ids
    empty = int(sum(not (json.loads(a) + json.loads(b)) for a, b in zip(ctx["d_dyn"], ctx["d_cov"])))
    return finding([f"{bad} context ids are not seen demos" if bad else "",
                    f"{empty} empty contexts" if empty else ""], ok=f"{len(ctx)} contexts, seen ids only")


def planner_truth_only_oracle(plans: pd.DataFrame, queries: pd.DataFrame, emb_frame: pd.DataFrame) -> Finding:
    """Ground truth appears only in the oracle rows: the planner rows recompute from the
    instruction and scene alone."""
    emb = runs.lookup(emb_frame)
    problems = []
    if set(plans.loc[plans["source"] == "oracle", "mode"]) - {"oracle"}:
        problems.append("a non-oracle mode reads the ground truth")
    qi = {(q.seed, q.task, q.episode): q for q in queries.itertuples()}
    for r in plans[plans["mode"] == "planner"].itertuples():
        q = qi[(r.seed, r.task, r.episode)]
        again = M.plan(TASKS[r.task].phrases, runs.world_from_json(q.scene), emb)
        if runs.skills_json(again) != r.skills:
            problems.append(f"planner row {r.seed}/{r.task}/{r.episode} does not recompute from instruction + scene")
    return finding(problems, ok="planner rows recompute from instruction + scene; truth only in oracle rows")


def rollouts_complete(rollouts: pd.DataFrame, params) -> Finding:
    """The full grid (seed × method × task × episode) is present and success ∈ {0, 1}."""
    methods = [*params.methods, "icl_labelled", "icl_raw"]
    want = len(params.seeds) * len(methods) * 23 * params.episodes
    problems = []
    if len(rollouts) != want:
        problems.append(f"{len(rollouts)} rollouts, expected {want}")
    if not rollouts["success"].isin([0, 1]).all():
        problems.append("success outside {0, 1}")
    return finding(problems, ok=f"{len(rollouts)} rollouts")
