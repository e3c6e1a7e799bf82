"""What each skill_recompose asset computes, given parameters and seeds — pure pandas/numpy (MiniLM
through assets.common.minilm), no Dagster import. Seeds and methods are table columns.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from assets.skill_recompose import method as M
from assets.skill_recompose import sim
from assets.skill_recompose.tasks import OBJECT_TYPES, SEEN, TASKS, UNSEEN, VERBS, bigrams, seen_bigrams

VERB_DESCRIPTIONS = {
    "Reach": "move the open gripper to an object", "Grasp": "close the gripper on an object",
    "Release": "open the gripper and let go", "Lift": "raise the held object",
    "Move": "carry the held object over a place", "Insert": "push the held object into a slot",
    "Slide": "drag the held object along the surface", "Rotate": "turn the gripper about its axis",
    "Pull": "pull a handle along its track", "Push": "push a part shut", "Press": "press down on a button",
}
METHODS = ("dnr", "xicm", "random", "dyn_only", "static_only", "no_labels", "no_rules", "oracle_plan",
           "noisy_plan_0.1", "noisy_plan_0.2")
PLAN_MODES = ("planner", "oracle", "noisy_0.1", "noisy_0.2")


# ----------------------------------------------------------------------------- (de)serialisation

def world_json(world: sim.World) -> str:
    return json.dumps([{"name": o.name, "type": o.type, "kind": o.kind, "pos": [int(v) for v in o.pos],
                        "yaw": int(o.yaw), "opening": int(o.opening), "angle": int(o.angle), "z0": int(o.z0)}
                       for o in world.objects.values()])


def world_from_json(text: str) -> sim.World:
    objs = {}
    for d in json.loads(text):
        if d["type"] not in OBJECT_TYPES:
            raise M.PlanError(f"unknown object type {d['type']!r}")
        objs[d["name"]] = sim.Obj(d["name"], d["type"], d["kind"], np.array(d["pos"], dtype=int), int(d["yaw"]),
                                  int(d.get("opening", 0)), int(d.get("angle", 0)), int(d.get("z0", sim.TABLE_Z)))
    return sim.World(objs)


def keys_from_json(text: str) -> np.ndarray:
    return np.asarray(json.loads(text), dtype=int).reshape(-1, 7)


def skills_json(skills) -> str:
    return json.dumps([[v, list(a)] for v, a in skills])


def skills_from_json(text: str) -> list[tuple[str, tuple[str, ...]]]:
    return [(v, tuple(a)) for v, a in json.loads(text)]


# ----------------------------------------------------------------------------- catalog, demos

def task_catalog() -> pd.DataFrame:
    rows = []
    for t in (*SEEN, *UNSEEN):
        rows.append({"task": t.name, "split": t.split, "level": t.level, "instruction": t.instruction,
                     "skills": json.dumps([[v, list(a)] for v, a in t.skills]), "verbs": json.dumps(list(t.verbs)),
                     "bigrams": json.dumps(sorted(bigrams(t.verbs))), "goal": json.dumps(list(t.goal)),
                     "objects": json.dumps(t.objects), "mirrors": t.mirrors})
    return pd.DataFrame(rows)


def seen_demos(seeds: Sequence[int], per_task: int, rng_for: Callable[..., np.random.Generator],
               trace_noise: float) -> pd.DataFrame:
    """Scripted demos (scenes re-drawn until the script succeeds) with their noisy low-level traces."""
    rows = []
    for seed in seeds:
        demo_id = 0
        for t in SEEN:
            rng = rng_for("demos", seed, t.name)
            for ep in range(per_task):
                for _ in range(20):
                    scene = sim.make_scene(t, rng)
                    keys, _ = sim.run_expert(scene, t)
                    if sim.execute(scene, t, keys)[0]:
                        break
                poses, grip, ends = sim.trace(keys, scene.world.state(), rng, noise=trace_noise)
                rows.append({"seed": int(seed), "demo_id": demo_id, "task": t.name, "episode": ep,
                             "instruction": t.instruction, "scene": world_json(scene.world),
                             "roles": json.dumps(scene.roles), "keys": json.dumps(keys.tolist()),
                             "skills": skills_json([(v, tuple(scene.roles[r] for r in a)) for v, a in t.skills]),
                             "trace": json.dumps(np.round(poses, 4).tolist()), "grip": json.dumps(grip.tolist()),
                             "key_samples": json.dumps(ends.tolist())})
                demo_id += 1
    return pd.DataFrame(rows)


def keyframes(demos: pd.DataFrame, thresholds: Sequence[float]) -> tuple[pd.DataFrame, dict]:
    """Calibrate the speed threshold on the seen demos (exact keyframe recovery rate; ties → the
    smaller threshold), then extract every demo's keyframes at it."""
    traces = [(np.asarray(json.loads(r.trace)), np.asarray(json.loads(r.grip)), keys_from_json(r.keys))
              for r in demos.itertuples()]
    rates = {}
    for thr in thresholds:
        ok = 0
        for poses, grip, keys in traces:
            ex = sim.keyframes_from_trace(poses, grip, sim.extract_keyframes(poses, grip, thr))
            ok += int(ex.shape == keys.shape and bool((ex == keys).all()))
        rates[float(thr)] = ok / max(len(traces), 1)
    best = max(rates, key=lambda t: (rates[t], -t))
    rows = []
    for r, (poses, grip, keys) in zip(demos.itertuples(), traces):
        idx = sim.extract_keyframes(poses, grip, best)
        ex = sim.keyframes_from_trace(poses, grip, idx)
        rows.append({"seed": r.seed, "demo_id": r.demo_id, "task": r.task, "samples": json.dumps(idx),
                     "keyframes": json.dumps(ex.tolist()), "n_keyframes": len(idx), "n_script": len(keys),
                     "exact": bool(ex.shape == keys.shape and (ex == keys).all())})
    return pd.DataFrame(rows), {"threshold": best, "rates": {str(k): v for k, v in rates.items()}}


# ----------------------------------------------------------------------------- embeddings

def texts_to_embed() -> list[str]:
    out = []
    for t in (*SEEN, *UNSEEN):
        out.append(t.instruction)
        for text, m1, m2 in t.phrases:
            out += [text, M.abstract_phrase(text, m1, m2), m1] + ([m2] if m2 else [])
    out += [name for _, name in OBJECT_TYPES.values()]
    out += [d for ds in M.ACTION_CLASSES.values() for d in ds] + [f"{v}: {d}" for v, d in VERB_DESCRIPTIONS.items()]
    return list(dict.fromkeys(out))


def text_embeddings(texts: Sequence[str], encode: Callable[[list[str]], np.ndarray]) -> pd.DataFrame:
    vecs = encode(list(texts))
    return pd.DataFrame({"text": list(texts), "vector": [v.astype(np.float32).tolist() for v in vecs]})


def lookup(frame: pd.DataFrame) -> Callable[[str], np.ndarray]:
    table = {t: np.asarray(v, dtype=np.float32) for t, v in zip(frame["text"], frame["vector"])}

    def emb(text: str) -> np.ndarray:
        if text not in table:
            raise M.PlanError(f"no embedding for {text!r} (add it to text_embeddings)")
        return table[text]

    return emb


def verb_similarity(emb) -> Callable[[str, str], float]:
    def sim_fn(a: str, b: str) -> float:
        return float(emb(f"{a}: {VERB_DESCRIPTIONS[a]}") @ emb(f"{b}: {VERB_DESCRIPTIONS[b]}"))
    return sim_fn


def mentions(task_name: str) -> list[str]:
    return [m for _, m1, m2 in TASKS[task_name].phrases for m in (m1, m2) if m]


# ----------------------------------------------------------------------------- annotations

def skill_annotations(demos: pd.DataFrame, kf: pd.DataFrame, emb, rng_for, noise: float) -> pd.DataFrame:
    rows = []
    for d, k in zip(demos.itertuples(), kf.itertuples()):
        world = world_from_json(d.scene)
        keys = keys_from_json(k.keyframes)
        ments = mentions(d.task)
        labels = M.label_demo(world, keys, ments, emb, rng_for("labels", d.seed, d.demo_id), noise, rules=True)
        raw = M.label_demo(world, keys, ments, emb, rng_for("labels", d.seed, d.demo_id), noise, rules=False)
        truth = skills_from_json(d.skills)
        match = M.match_segments(json.loads(k.samples), json.loads(d.key_samples))
        states = M.replay_states(world, keys)
        grip_seg = [M.is_gripper_segment(states[i].open, int(keys[i][6])) for i in range(len(keys))]
        ok = [j >= 0 and labels[i][0] == truth[j][0] for i, j in enumerate(match)]
        ok_raw = [j >= 0 and raw[i][0] == truth[j][0] for i, j in enumerate(match)]
        rows.append({"seed": d.seed, "demo_id": d.demo_id, "task": d.task, "labels": skills_json(labels),
                     "labels_norules": skills_json(raw), "verbs": json.dumps([v for v, _ in labels]),
                     "verbs_norules": json.dumps([v for v, _ in raw]),
                     "gripper_segments": json.dumps(grip_seg), "correct": json.dumps(ok),
                     "correct_norules": json.dumps(ok_raw),
                     "grip_ok": json.dumps([labels[i][0] == ("Grasp" if states[i].open else "Release")
                                            for i in range(len(keys)) if grip_seg[i]]),
                     "grip_ok_norules": json.dumps([raw[i][0] == ("Grasp" if states[i].open else "Release")
                                                    for i in range(len(keys)) if grip_seg[i]])})
    return pd.DataFrame(rows)


def label_accuracy(ann: pd.DataFrame) -> dict:
    def rate(col):
        v = [x for s in ann[col] for x in json.loads(s)]
        return float(np.mean(v)) if v else float("nan")
    return {"verb_acc": rate("correct"), "verb_acc_norules": rate("correct_norules"),
            "grip_acc": rate("grip_ok"), "grip_acc_norules": rate("grip_ok_norules")}


# ----------------------------------------------------------------------------- scenes

def projection(dim: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(1024, dim)) / np.sqrt(dim)


TYPE_INDEX = {t: i for i, t in enumerate(OBJECT_TYPES)}


def feature(world: sim.World, proj: np.ndarray) -> np.ndarray:
    return M.scene_feature(list(world.objects.values()), proj, len(TYPE_INDEX), TYPE_INDEX)


def scene_features(demos: pd.DataFrame, proj: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame({"seed": demos["seed"], "demo_id": demos["demo_id"], "task": demos["task"],
                         "vector": [feature(world_from_json(s), proj).tolist() for s in demos["scene"]]})


def query_episodes(seeds: Sequence[int], episodes: int, rng_for, proj: np.ndarray) -> pd.DataFrame:
    rows = []
    for seed in seeds:
        for t in UNSEEN:
            rng = rng_for("queries", seed, t.name)
            for ep in range(episodes):
                scene = sim.make_scene(t, rng)
                rows.append({"seed": int(seed), "task": t.name, "level": t.level, "episode": ep,
                             "instruction": t.instruction, "scene": world_json(scene.world),
                             "roles": json.dumps(scene.roles), "vector": feature(scene.world, proj).tolist()})
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- library

class Library:
    """One seed's labelled seen demos, ready for retrieval and recomposition."""

    def __init__(self, demos: pd.DataFrame, kf: pd.DataFrame, ann: pd.DataFrame, feats: pd.DataFrame, emb,
                 label_col: str = "labels"):
        self.ids = demos["demo_id"].to_numpy()
        self.tasks = demos["task"].tolist()
        self.worlds = [world_from_json(s) for s in demos["scene"]]
        self.keys = [keys_from_json(s) for s in kf["keyframes"]]
        self.labels = [skills_from_json(s) for s in ann[label_col]]
        self.verbs = [[v for v, _ in lab] for lab in self.labels]
        self.tokens = [M.tokens(v) for v in self.verbs]
        self.vis = np.stack([np.asarray(v) for v in feats["vector"]])
        self.instr = np.stack([emb(t) for t in demos["instruction"]])
        self._segments: dict = {}

    def subset(self, mask: np.ndarray) -> Library:
        lib = object.__new__(Library)
        idx = np.flatnonzero(mask)
        lib.ids = self.ids[idx]
        for name in ("tasks", "worlds", "keys", "labels", "verbs", "tokens"):
            setattr(lib, name, [getattr(self, name)[i] for i in idx])
        lib.vis, lib.instr, lib._segments = self.vis[idx], self.instr[idx], {}
        return lib

    def segments(self, i: int, rank: int, labelled: bool) -> list[M.Segment]:
        key = (i, labelled)
        if key not in self._segments:
            self._segments[key] = M.demo_segments(int(self.ids[i]), 0, self.worlds[i], self.keys[i],
                                                  self.labels[i] if labelled else None)
        return [M.Segment(s.demo, rank, s.verb, s.prev, s.code) for s in self._segments[key]]


RETRIEVAL = {"no_labels": "dnr", "no_rules": "dnr", "oracle_plan": "dnr", "noisy_plan_0.1": "dnr",
             "noisy_plan_0.2": "dnr", "icl_labelled": "dnr", "icl_raw": "dnr"}


def retrieve_for(lib: Library, method: str, plan_verbs, qvis: np.ndarray, qinstr: np.ndarray, hp: M.HParams,
                 rng: np.random.Generator, weights: dict, xicm_alpha: float) -> tuple[list[int], list[int]]:
    """(D_dyn, D_cov) as library indices for one query and method."""
    return M.retrieve(RETRIEVAL.get(method, method), plan_verbs, lib.vis @ qvis, lib.instr @ qinstr, lib.verbs, hp,
                      rng, weights, lib.tokens, xicm_alpha)


def act_for(lib: Library, method: str, plan_skills, qworld: sim.World, context: Sequence[int],
            qmentions: Sequence[str], emb, verb_sim) -> tuple[np.ndarray, list[str]]:
    """The executed actions from the context only: trajectory imitation of the top demo
    (xicm, no_labels) or Variant A recomposition (every other method)."""
    if not len(context):
        raise M.PlanError("the context is empty")
    if method in ("xicm", "no_labels"):
        top = context[0]
        mapping = M.role_map(lib.worlds[top], qworld, qmentions, emb)
        return M.imitate(lib.worlds[top], lib.keys[top], qworld, mapping), []
    segs = [s for rank, i in enumerate(context) for s in lib.segments(i, rank, labelled=True)]
    return M.recompose(plan_skills, qworld, segs, verb_sim)


def run_query(lib: Library, method: str, plan_skills, qworld: sim.World, qvis: np.ndarray, qinstr: np.ndarray,
              qmentions: Sequence[str], hp: M.HParams, rng: np.random.Generator, emb, verb_sim,
              weights: dict, xicm_alpha: float) -> tuple[list[int], list[int], np.ndarray, list[str]]:
    """Context (D_dyn, D_cov as library indices) and the executed actions for one query."""
    dyn, cov = retrieve_for(lib, method, [v for v, _ in plan_skills], qvis, qinstr, hp, rng, weights, xicm_alpha)
    acts, notes = act_for(lib, method, plan_skills, qworld, dyn + cov, qmentions, emb, verb_sim)
    return dyn, cov, acts, notes


# ----------------------------------------------------------------------------- hyper-parameters

def hparam_grid(grid: dict) -> list[M.HParams]:
    out = []
    for a in grid["alpha"]:
        for lam in grid["lam"]:
            for b in grid["beta"]:
                for g in grid["gamma"]:
                    for ks in grid["k_sim"]:
                        for kc in grid["k_cov"]:
                            out.append(M.HParams(float(a), float(lam), float(b), float(g), int(ks), int(kc)))
    return out


def loso_job(job: tuple) -> list[dict]:
    """Leave-one-seen-task-out success of D&R (and X-ICM-like's α) for every grid point, one seed,
    one held-out task. Only seen demos are read."""
    (seed, held, demos, kf, ann, feats, emb_frame, grid, xicm_alphas, queries) = job
    emb = lookup(emb_frame)
    vsim = verb_similarity(emb)
    lib = Library(demos, kf, ann, feats, emb)
    train = lib.subset(np.array([t != held for t in lib.tasks]))
    test_idx = [i for i, t in enumerate(lib.tasks) if t == held][:queries]
    task = TASKS[held]
    rows = []
    cache = {}
    for qi in test_idx:
        world = lib.worlds[qi]
        cache[qi] = M.plan(task.phrases, world, emb)
    for hp in grid:
        weights = M.idf_weights(train.tokens, hp.beta)
        ok = 0
        for qi in test_idx:
            world = lib.worlds[qi]
            try:
                _, _, acts, _ = run_query(train, "dnr", cache[qi], world, lib.vis[qi], lib.instr[qi],
                                          mentions(held), hp, np.random.default_rng(0), emb, vsim, weights, 0.5)
                ok += _success(world, lib, qi, acts)
            except M.PlanError:
                pass
        rows.append({"seed": seed, "held_out": held, "method": "dnr", **hp.__dict__, "success": ok / len(test_idx)})
    hp0 = grid[0]
    weights = M.idf_weights(train.tokens, hp0.beta)
    for xa in xicm_alphas:
        ok = 0
        for qi in test_idx:
            world = lib.worlds[qi]
            _, _, acts, _ = run_query(train, "xicm", cache[qi], world, lib.vis[qi], lib.instr[qi], mentions(held),
                                      hp0, np.random.default_rng(0), emb, vsim, weights, float(xa))
            ok += _success(world, lib, qi, acts)
        rows.append({"seed": seed, "held_out": held, "method": "xicm", **hp0.__dict__, "xicm_alpha": float(xa),
                     "success": ok / len(test_idx)})
    return rows


def _success(world: sim.World, lib: Library, qi: int, acts: np.ndarray) -> int:
    task = TASKS[lib.tasks[qi]]
    roles = _roles_of(world, task)
    scene = sim.Scene(task.name, world, roles)
    return int(sim.execute(scene, task, acts)[0])


def _roles_of(world: sim.World, task) -> dict:
    """Role → object name in a generated scene (roles are filled in order, types unique per task
    except repeated types, which get '#i' suffixes)."""
    names = list(world.objects)
    return {role: names[i] for i, role in enumerate(task.objects)}


def choose_hparams(table: pd.DataFrame) -> dict:
    """Best mean LOSO success over seeds and held-out tasks (ties → the earlier grid point)."""
    dnr = table[table["method"] == "dnr"]
    keys = ["alpha", "lam", "beta", "gamma", "k_sim", "k_cov"]
    mean = dnr.groupby(keys, sort=False)["success"].mean().reset_index()
    best = mean.loc[mean["success"].idxmax()]
    x = table[table["method"] == "xicm"].groupby("xicm_alpha", sort=False)["success"].mean()
    return {**{k: (int(best[k]) if k.startswith("k_") else float(best[k])) for k in keys},
            "loso_success": float(best["success"]), "xicm_alpha": float(x.idxmax()),
            "xicm_loso_success": float(x.max())}


def check_coverable(seen_demo_verbs: Sequence[Sequence[str]]) -> set[str]:
    return set().union(*(M.tokens(v) for v in seen_demo_verbs)) if seen_demo_verbs else set()


__all__ = ["METHODS", "PLAN_MODES", "VERBS", "seen_bigrams"]


# ----------------------------------------------------------------------------- planner, contexts, rollouts

def planner_predictions(queries: pd.DataFrame, emb, p_errs: Sequence[float], rng_for) -> pd.DataFrame:
    """Ŝ per query: the planner (instruction + scene only), its noisy versions, and the oracle
    (the task's ground-truth skills: read only for the oracle ablation)."""
    rows = []
    for r in queries.itertuples():
        task = TASKS[r.task]
        world = world_from_json(r.scene)
        roles = json.loads(r.roles)
        planned = M.plan(task.phrases, world, emb)
        truth = [(v, tuple(roles[a] for a in args)) for v, args in task.skills]
        base = {"seed": r.seed, "task": r.task, "level": r.level, "episode": r.episode}
        rows.append({**base, "mode": "planner", "source": "planner", "skills": skills_json(planned),
                     "exact": planned == truth})
        for p in p_errs:
            noisy = M.perturb_plan(planned, float(p), rng_for("plan_noise", r.seed, r.task, r.episode, p))
            rows.append({**base, "mode": f"noisy_{p}", "source": "planner", "skills": skills_json(noisy),
                         "exact": noisy == truth})
        rows.append({**base, "mode": "oracle", "source": "oracle", "skills": skills_json(truth), "exact": True})
    return pd.DataFrame(rows)


PLAN_OF = {"oracle_plan": "oracle", "noisy_plan_0.1": "noisy_0.1", "noisy_plan_0.2": "noisy_0.2"}


def _seed_frames(frame: pd.DataFrame, seed: int) -> pd.DataFrame:
    return frame[frame["seed"] == seed].reset_index(drop=True)


def contexts_job(job: tuple) -> list[dict]:
    """Every query × method of one seed: D_dyn, D_cov (demo ids), coverage (raw, coverable)."""
    seed, demos, kf, ann, feats, queries, plans, emb_frame, hp_row, methods = job
    emb = lookup(emb_frame)
    libs = {"labels": Library(demos, kf, ann, feats, emb), "labels_norules": None}
    hp = M.HParams(*(hp_row[k] for k in ("alpha", "lam", "beta", "gamma", "k_sim", "k_cov")))
    plan_of = {(r.task, r.episode, r.mode): skills_from_json(r.skills) for r in plans.itertuples()}
    rows = []
    for m in methods:
        col = "labels_norules" if m == "no_rules" else "labels"
        if libs.get(col) is None:
            libs[col] = Library(demos, kf, ann, feats, emb, label_col=col)
        lib = libs[col]
        weights = M.idf_weights(lib.tokens, hp.beta)
        coverable = set().union(*lib.tokens)
        for q in queries.itertuples():
            skills = plan_of[(q.task, q.episode, PLAN_OF.get(m, "planner"))]
            verbs = [v for v, _ in skills]
            rng = np.random.default_rng([int(seed), q.episode, zlib_key(q.task), zlib_key(m)])
            dyn, cov = retrieve_for(lib, m, verbs, np.asarray(q.vector), emb(q.instruction), hp, rng, weights,
                                    float(hp_row["xicm_alpha"]))
            ctx_tokens = set().union(*(lib.tokens[i] for i in dyn + cov)) if dyn + cov else set()
            rows.append({"seed": seed, "method": m, "task": q.task, "level": q.level, "episode": q.episode,
                         "d_dyn": json.dumps([int(lib.ids[i]) for i in dyn]),
                         "d_cov": json.dumps([int(lib.ids[i]) for i in cov]),
                         "coverage_raw": M.coverage(verbs, ctx_tokens),
                         "coverage": M.coverage(verbs, ctx_tokens, coverable)})
    return rows


def zlib_key(text: str) -> int:
    import zlib

    return zlib.crc32(str(text).encode())


def rollouts_job(job: tuple) -> list[dict]:
    """Execute every context of one seed (Variant A / imitation) in the simulator."""
    seed, demos, kf, ann, feats, queries, plans, ctx, emb_frame = job
    emb = lookup(emb_frame)
    vsim = verb_similarity(emb)
    libs = {}
    plan_of = {(r.task, r.episode, r.mode): skills_from_json(r.skills) for r in plans.itertuples()}
    qrows = {(q.task, q.episode): q for q in queries.itertuples()}
    rows = []
    for c in ctx.itertuples():
        col = "labels_norules" if c.method == "no_rules" else "labels"
        if col not in libs:
            libs[col] = Library(demos, kf, ann, feats, emb, label_col=col)
        lib = libs[col]
        pos = {int(d): i for i, d in enumerate(lib.ids)}
        q = qrows[(c.task, c.episode)]
        task = TASKS[c.task]
        world = world_from_json(q.scene)
        skills = plan_of[(c.task, c.episode, PLAN_OF.get(c.method, "planner"))]
        context = [pos[d] for d in json.loads(c.d_dyn) + json.loads(c.d_cov)]
        try:
            acts, notes = act_for(lib, c.method, skills, world, context, mentions(c.task), emb, vsim)
            ok, reason, _ = sim.execute(sim.Scene(c.task, world, json.loads(q.roles)), task, acts)
        except (M.PlanError, sim.SceneError) as err:
            acts, notes, ok, reason = np.zeros((0, 7), dtype=int), [], False, f"unsolvable: {err}"
        rows.append({"seed": seed, "method": c.method, "task": c.task, "level": c.level, "episode": c.episode,
                     "success": int(ok), "reason": reason if not ok else "", "n_actions": int(len(acts)),
                     "actions": json.dumps(acts.tolist()), "notes": "; ".join(notes)})
    return rows


# ----------------------------------------------------------------------------- Variant B

def icl_train_episodes(demos: pd.DataFrame, kf: pd.DataFrame, ann: pd.DataFrame, feats: pd.DataFrame, emb,
                       hp: M.HParams, per_task: int) -> list[tuple]:
    """Meta-training episodes, leave-one-seen-task-out: the query is a seen demo (its labelled
    verbs as Ŝ, its own segment codes as targets), the context D&R-retrieved from the other
    seen tasks."""
    lib = Library(demos, kf, ann, feats, emb)
    out = []
    for held in sorted(set(lib.tasks)):
        train = lib.subset(np.array([t != held for t in lib.tasks]))
        weights = M.idf_weights(train.tokens, hp.beta)
        for qi in [i for i, t in enumerate(lib.tasks) if t == held][:per_task]:
            verbs = lib.verbs[qi]
            dyn, cov = retrieve_for(train, "dnr", verbs, lib.vis[qi], lib.instr[qi], hp, np.random.default_rng(0),
                                    weights, 0.5)
            ctx = [(s.verb, s.code) for rank, i in enumerate(dyn + cov) for s in train.segments(i, rank, True)]
            own = lib.segments(qi, 0, True)
            out.append((ctx, verbs, [s.code for s in own]))
    return out


def icl_test_episodes(lib: Library, queries: pd.DataFrame, plans: pd.DataFrame, ctx: pd.DataFrame) -> list[tuple]:
    plan_of = {(r.task, r.episode): skills_from_json(r.skills) for r in plans[plans["mode"] == "planner"].itertuples()}
    pos = {int(d): i for i, d in enumerate(lib.ids)}
    out = []
    for c in ctx[ctx["method"] == "dnr"].itertuples():
        context = [pos[d] for d in json.loads(c.d_dyn) + json.loads(c.d_cov)]
        segs = [(s.verb, s.code) for rank, i in enumerate(context) for s in lib.segments(i, rank, True)]
        skills = plan_of[(c.task, c.episode)]
        out.append((segs, [v for v, _ in skills], None, c.task, c.episode, c.level, skills))
    return out


def execute_codes(task_name: str, scene_json: str, roles_json: str, skills, codes) -> tuple[bool, str]:
    """Re-ground predicted codes on Ŝ's anchors, open loop, and execute."""
    task = TASKS[task_name]
    world = world_from_json(scene_json)
    w = world.copy()
    acts = []
    for (_verb, args), code in zip(skills, codes):
        a = M.reground(code, w, args[-1])
        w.step(a)
        acts.append(a)
    ok, reason, _ = sim.execute(sim.Scene(task_name, world, json.loads(roles_json)), task, acts)
    return ok, reason


def icl_fit(torch, episodes, labelled: bool, seed: int, p, log=None, device: str = "cpu"
            ) -> tuple[dict, list[float]]:
    """Variant B's model trained on `device`: (its state_dict on the CPU, losses)."""
    from assets.skill_recompose import icl

    model, losses = icl.train(torch, episodes, labelled, seed, p.layers, p.d_model, p.heads, p.max_len, p.steps,
                              p.batch, p.lr, log, device)
    return model.cpu().state_dict(), losses


def icl_rollouts(torch, states: dict, lib: Library, queries: pd.DataFrame, plans: pd.DataFrame, ctx: pd.DataFrame,
                 seed: int, p) -> list[dict]:
    """Variant B on the unseen queries: D&R contexts, labelled vs raw, executed."""
    from assets.skill_recompose import icl

    episodes = icl_test_episodes(lib, queries, plans, ctx)
    qrows = {(q.task, q.episode): q for q in queries.itertuples()}
    rows = []
    for variant, labelled in (("icl_labelled", True), ("icl_raw", False)):
        model = icl.build_model(torch, p.layers, p.d_model, p.heads, p.max_len)
        model.load_state_dict(states[variant])
        codes = icl.predict(torch, model, [e[:3] for e in episodes], labelled, seed, p.max_len)
        for e, c in zip(episodes, codes):
            _, _, _, task, episode, level, skills = e
            q = qrows[(task, episode)]
            try:
                ok, reason = execute_codes(task, q.scene, q.roles, skills, c)
            except (M.PlanError, sim.ActionError, sim.SceneError) as err:
                ok, reason = False, f"unsolvable: {err}"
            rows.append({"seed": seed, "method": variant, "task": task, "level": level, "episode": episode,
                         "success": int(ok), "reason": "" if ok else reason, "n_actions": len(c), "actions": "[]",
                         "notes": ""})
    return rows


def icl_job(job: tuple) -> dict:
    """One Variant B model (in a worker process on the CPU, in-process on a GPU):
    (seed, variant, episodes, ICLParams, torch seed, device)."""
    from assets.common.worker import torch_worker

    seed, variant, episodes, p, torch_seed, device = job
    torch = torch_worker(1, deterministic=True)
    state, losses = icl_fit(torch, episodes, variant == "icl_labelled", torch_seed, p, device=device)
    return {"seed": seed, "variant": variant, "state": {k: v.detach().numpy() for k, v in state.items()},
            "losses": losses, "torch_seed": torch_seed}
