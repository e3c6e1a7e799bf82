"""What each acc_marl asset computes, given parameters, seeds and a log function — no Dagster import."""
from __future__ import annotations

import itertools
import json
import time

import numpy as np
import pandas as pd

from assets.acc_marl import dfa as dfa_mod
from assets.acc_marl import layouts as lay_mod
from assets.acc_marl import model as model_mod
from assets.acc_marl import ppo
from assets.acc_marl.env import PoolArrays, TeamEnv
from assets.acc_marl.params import AccMarlParams
from assets.common.worker import torch_worker

SPLITS = ("train", "test", "ood")
# curated scenarios: agent 0's token lies behind a door (only reachable through it)
DOOR_TOKEN = {"buttons2": 8, "rooms2": 9}
PARTNER_TOKEN = {"buttons2": 9, "rooms2": 8}
SHORT_TOKENS = {"rooms2": (8, 9)}          # 8 in agent 0's room, 9 behind the door
SCENARIOS = ("hold_the_door", "helper", "short_circuit")


# ---------------------------------------------------------------- layouts
def layouts_table(p: AccMarlParams) -> pd.DataFrame:
    rows = []
    for name in p.layouts:
        text = lay_mod.LAYOUTS[name]
        lay = lay_mod.parse(text, name)
        reach = lay_mod.reachable(lay, doors_open=True)
        rows.append({"layout": name, "text": text, "height": lay.shape[0], "width": lay.shape[1],
                     "n_agents": lay.n_agents, "pairs": "".join(lay.pairs), "channels": lay.n_channels,
                     "tokens": json.dumps(sorted(lay.tokens_present())),
                     "unreachable_tokens": json.dumps(sorted({int(t) for t in lay.token[(lay.token >= 0) & ~reach]})),
                     "source": "rad-dfa/acc-marl configs (MIT), re-entered as data"})
    return pd.DataFrame(rows)


def layout_of(table: pd.DataFrame, name: str) -> lay_mod.Layout:
    return lay_mod.parse(table.loc[table["layout"] == name, "text"].iloc[0], name)


# ---------------------------------------------------------------- DFA pool
def reach_any(tokens, n_tokens: int = dfa_mod.N_TOKENS) -> tuple[np.ndarray, np.ndarray]:
    """Two-state DFA accepting once any of `tokens` is seen."""
    trans = np.zeros((2, n_tokens), dtype=np.int64)
    trans[1] = 1
    trans[0, list(tokens)] = 1
    return trans, np.array([False, True])


def scenario_tasks(layout: str) -> dict[str, tuple]:
    """Scenario → per-agent DFAs (None = trivial)."""
    out = {"hold_the_door": (reach_any([DOOR_TOKEN[layout]]), None),
           "helper": (reach_any([DOOR_TOKEN[layout]]), reach_any([PARTNER_TOKEN[layout]]))}
    if layout in SHORT_TOKENS:
        out["short_circuit"] = (reach_any(SHORT_TOKENS[layout]), None)
    return out


def sampler_spec(p: AccMarlParams, name: str, split: str) -> dfa_mod.SamplerSpec:
    q = p.pool
    lo = 2 if name == "R" else 3
    if split == "ood":
        lo, hi = q.max_size + 1, q.ood_max_size
    else:
        hi = q.max_size
    return dfa_mod.SamplerSpec(name, lo, hi, stutter=q.stutter, rad_stutter=q.rad_stutter,
                               max_mutations=q.max_mutations)


def _draw(spec, count, rng, allowed, exclude: set, min_states: int = 2) -> list:
    out, seen = [], set(exclude)
    for _ in range(200 * count):
        if len(out) == count:
            break
        t, a = dfa_mod.sample(spec, rng, allowed)
        k = dfa_mod.key(t, a)
        if k in seen or len(t) < min_states:
            continue
        seen.add(k)
        out.append((t, a))
    if len(out) < count:
        raise RuntimeError(f"sampler {spec.name} drew only {len(out)} distinct DFAs of {count}")
    return out


def build_pool(p: AccMarlParams, layouts: pd.DataFrame, rng_for) -> pd.DataFrame:
    """Rows (one per DFA × role): id, role (train/test/ood/scenario/trivial/progression),
    sampler, hash, n_states, accepting, trans/accept/next_id (JSON). Training DFAs are RAD;
    test DFAs of every sampler exclude the training languages; OOD DFAs have more states
    than the in-distribution maximum. The pool is closed under progression."""
    allowed = set.intersection(*[set(json.loads(t)) for t in layouts["tokens"]])
    pool = dfa_mod.Pool()
    roles: list[tuple[int, str, str]] = []
    train = _draw(sampler_spec(p, "RAD", "train"), p.pool.train, rng_for("train", "RAD"), allowed, set())
    train_keys = {dfa_mod.key(t, a) for t, a in train}
    roles += [(pool.add(t, a), "train", "RAD") for t, a in train]
    for name in p.eval.samplers:
        for split, count, min_states in (("test", p.pool.test, 2), ("ood", p.pool.ood, p.pool.max_size + 1)):
            drawn = _draw(sampler_spec(p, name, split), count, rng_for(split, name), allowed, train_keys, min_states)
            roles += [(pool.add(t, a), split, name) for t, a in drawn]
    roles.append((pool.add(*dfa_mod.trivial()), "trivial", ""))
    for name in layouts["layout"]:
        for scen, tasks in scenario_tasks(name).items():
            roles += [(pool.add(*task), "scenario", f"{name}/{scen}/{i}") for i, task in enumerate(tasks) if task]
    pool.close()
    rooted = {i for i, _, _ in roles}
    roles += [(i, "progression", "") for i in range(len(pool)) if i not in rooted]
    nxt = pool.next_id
    rows = []
    for i, role, sampler in roles:
        t, a = pool.trans[i], pool.accept[i]
        rows.append({"id": i, "role": role, "sampler": sampler, "hash": dfa_mod.dfa_hash(t, a),
                     "n_states": len(t), "accepting": bool(a[0]), "trans": json.dumps(t.tolist()),
                     "accept": json.dumps(a.astype(int).tolist()), "next_id": json.dumps(nxt[i].tolist())})
    return pd.DataFrame(rows).sort_values(["id", "role", "sampler"], kind="stable").reset_index(drop=True)


def pool_from_table(table: pd.DataFrame) -> tuple[PoolArrays, dfa_mod.Pool]:
    """PoolArrays (and the DFAs, for on-the-fly progression) from the dfa_pool asset."""
    uniq = table.drop_duplicates("id").sort_values("id")
    if not (uniq["id"].to_numpy() == np.arange(len(uniq))).all():
        raise ValueError("dfa_pool ids are not 0..N−1")
    pool = dfa_mod.Pool()
    for r in uniq.itertuples():
        pool.add(np.array(json.loads(r.trans), dtype=np.int64), np.array(json.loads(r.accept), dtype=bool))
    next_id = np.array([json.loads(s) for s in uniq["next_id"]], dtype=np.int64)
    pool.next = list(next_id)
    trivial = int(table.loc[table["role"] == "trivial", "id"].iloc[0])
    arrays = PoolArrays(next_id, uniq["n_states"].to_numpy(), uniq["accepting"].to_numpy(bool), trivial, pool)
    return arrays, pool


def roots(table: pd.DataFrame, role: str, sampler: str) -> np.ndarray:
    return table.loc[(table["role"] == role) & (table["sampler"] == sampler), "id"].to_numpy(np.int64)


# ---------------------------------------------------------------- training
def ppo_config(p: AccMarlParams) -> ppo.PPOConfig:
    t = p.train
    return ppo.PPOConfig(total_steps=t.total_steps, n_envs=t.n_envs, n_steps=t.n_steps, epochs=t.epochs,
                         minibatches=t.minibatches, lr=t.lr, gamma=t.gamma, gae_lambda=t.gae_lambda, clip=t.clip,
                         vf_coef=t.vf_coef, ent_coef=t.ent_coef, max_grad_norm=t.max_grad_norm,
                         max_len=p.eval.max_len, iterations_gnn=p.pool.ood_max_size,
                         precision=t.precision)


def iterations(p: AccMarlParams) -> int:
    """PPO iterations of one run (ppo.train: ⌈total_steps / (n_envs · n_steps)⌉, at least 1)."""
    return max(1, -(-p.train.total_steps // (p.train.n_envs * p.train.n_steps)))


def snapshot_iterations(p: AccMarlParams) -> tuple[int, ...]:
    """The 1-based PPO iterations after which an ACC-MARL (pbrs) run keeps a budget-curve snapshot:
    round(fraction · iterations), clipped to [1, iterations], each once (cpu: 6, 12, 24, 36 of 48)."""
    n = iterations(p)
    return tuple(sorted({min(n, max(1, round(f * n))) for f in p.budget.fractions}))


def training_jobs(p: AccMarlParams, layouts: pd.DataFrame, pool: pd.DataFrame, seed_for,
                  device: str = "cpu") -> list[dict]:
    """One job per layout × variant × seed; `device` is where PPO trains (compute.resolved_device());
    ACC-MARL (pbrs) jobs keep the budget curve's snapshots."""
    cfg = ppo_config(p)
    text = dict(zip(layouts["layout"], layouts["text"]))
    return [{"layout": name, "variant": v, "seed": int(s), "text": text[name], "device": device,
             "pool": pool, "cfg": cfg, "train_seed": seed_for("train", name, v, s),
             "snapshots": snapshot_iterations(p) if v == "pbrs" else ()}
            for name in p.layouts for v in p.variants for s in p.seeds]


def train_cost(job: dict) -> float:
    """Relative wall clock of a training job (cpu runs: GRU ≈ 55 s, pbrs ≈ 45 s, no_pbrs ≈ 40 s)."""
    return job["cfg"].total_steps * (1.3 if job["variant"] == "gru" else 1.0)


def eval_cost(job: dict) -> float:
    """Relative wall clock of an eval job: cells × (1 with a network, 0.1 for the random policy)."""
    return len(job["cells"]) * (0.1 if job["row"]["variant"] == "random" else 1.0)


def train_job(job: dict) -> dict:
    """One PPO run (module level: spawn workers call it). out["snapshots"]: {iteration: CPU
    state_dict} after each 1-based iteration in job["snapshots"]; copying the weights draws nothing,
    so the run is the same with or without them."""
    start = time.perf_counter()
    arrays, pool = pool_from_table(job["pool"])
    graphs = model_mod.dfa_graphs(pool)
    keep, snapshots = set(job.get("snapshots", ())), {}

    def snapshot(it: int, net) -> None:
        if it + 1 in keep:
            snapshots[it + 1] = {k: v.detach().cpu().clone() for k, v in net.state_dict().items()}

    out = ppo.train(lay_mod.parse(job["text"], job["layout"]), arrays, graphs, roots(job["pool"], "train", "RAD"),
                    job["cfg"], job["variant"], job["train_seed"], device=job["device"],
                    callback=snapshot if keep else None)
    out["snapshots"] = snapshots
    out["seconds"] = time.perf_counter() - start
    return out


def policy_row(job: dict, out: dict, ref: dict, snapshots: list[dict] = ()) -> dict:
    """One policy table row; `snapshots`: [{iteration, steps, checkpoint, md5}] of its budget-curve
    checkpoints (JSON in the "snapshots" column)."""
    log = pd.DataFrame(out["log"])
    finite = all(bool(np.isfinite(v.double().numpy()).all()) for v in out["state"].values())
    return {"layout": job["layout"], "variant": job["variant"], "seed": job["seed"], "checkpoint": ref["checkpoint"],
            "md5": ref["md5"], "finite_weights": finite, "final_entropy": float(log["entropy"].iloc[-1]),
            "final_success": float(log["success"].iloc[-1]), "steps": int(log["steps"].iloc[-1]),
            "channels": int(out["state"]["conv.0.weight"].shape[1]), "log": log.to_json(orient="records"),
            "snapshots": json.dumps(list(snapshots))}


def load_policy(torch, row, layout: lay_mod.Layout, cfg: ppo.PPOConfig):
    """The network of a policy row, checked against the layout (channels, agents)."""
    from resources.artifacts import load_checkpoint

    state, sidecar = load_checkpoint({"checkpoint": row.checkpoint, "md5": row.md5})
    return net_from_state(torch, state, layout, cfg, row.variant, sidecar.get("layout"))


def net_from_state(torch, state: dict, layout: lay_mod.Layout, cfg: ppo.PPOConfig, variant: str,
                   trained_on: str | None = None):
    chans = int(state["conv.0.weight"].shape[1])
    agents = int(state["agent_emb.weight"].shape[0])
    if chans != layout.n_channels or agents != layout.n_agents:
        where = f" (trained on {trained_on})" if trained_on else ""
        raise ValueError(f"checkpoint/layout mismatch: the checkpoint{where} expects {chans} channels and "
                         f"{agents} agents; layout {layout.name!r} has "
                         f"{layout.n_channels} channels ({len(layout.pairs)} pairs) and {layout.n_agents} agents")
    net = ppo.net_for(torch, layout, cfg, variant)
    net.load_state_dict(state)
    net.eval()
    return net


# ---------------------------------------------------------------- evaluation
def draw_tasks(rng: np.random.Generator, ids: np.ndarray, count: int, n: int, trivial: int) -> np.ndarray:
    """(count, n) task tuples: i.i.d. pool roots, U{0..n−1} random agents made helpers."""
    tasks = ids[rng.integers(len(ids), size=(count, n))]
    for row in range(count):
        k = int(rng.integers(0, n))
        tasks[row, rng.permutation(n)[:k]] = trivial
    return tasks


def eval_cells(p: AccMarlParams, variant: str) -> list[tuple[str, str, str]]:
    """(sampler, split, assignment) cells evaluated for a variant: the full grid for ACC-MARL
    (pbrs), RAD in-distribution for no_pbrs and gru, random assignment for the random policy."""
    if variant == "pbrs":
        return [(s, sp, a) for s in p.eval.samplers for sp in ("in", "ood") for a in ("random", "value")]
    if variant == "random":
        return [(s, sp, "random") for s in p.eval.samplers for sp in ("in", "ood")]
    return [("RAD", "in", a) for a in ("random", "value")]


def eval_jobs(p: AccMarlParams, layouts: pd.DataFrame, pool: pd.DataFrame, policies: pd.DataFrame, seed_for):
    jobs = []
    rows = [*policies.itertuples()]
    for name in p.layouts:
        for s in p.seeds:
            rows.append(pd.Series({"layout": name, "variant": "random", "seed": int(s), "checkpoint": "", "md5": ""}))
    for r in rows:
        r = r if isinstance(r, pd.Series) else pd.Series(r._asdict())
        jobs.append({"row": r, "text": layouts.loc[layouts["layout"] == r["layout"], "text"].iloc[0], "pool": pool,
                     "cfg": ppo_config(p), "cells": eval_cells(p, r["variant"]), "episodes": p.eval.episodes,
                     "max_len": {"in": p.eval.max_len, "ood": p.eval.ood_max_len},
                     "task_seed": seed_for("tasks", r["layout"], int(r["seed"])),
                     "roll_seed": seed_for("rollout", r["layout"], r["variant"], int(r["seed"]))})
    return jobs


def _policy(torch, job):
    r = job["row"]
    layout = lay_mod.parse(job["text"], r["layout"])
    if r["variant"] == "random":
        return layout, None
    return layout, load_policy(torch, r, layout, job["cfg"])


def eval_job(job: dict) -> pd.DataFrame:
    """Per-episode rows of one policy over its cells; task tuples depend only on (layout,
    seed, sampler, split), so every variant meets the same tasks."""
    import torch

    torch_worker(1)
    arrays, pool = pool_from_table(job["pool"])
    enc = ppo.Encoded(torch, model_mod.dfa_graphs(pool), arrays.n_states)
    layout, net = _policy(torch, job)
    r = job["row"]
    frames = []
    for k, (sampler, split, assignment) in enumerate(job["cells"]):
        ids = roots(job["pool"], "test" if split == "in" else "ood", sampler)
        rng = np.random.default_rng([job["task_seed"], zlib_key(sampler), zlib_key(split)])
        tasks = draw_tasks(rng, ids, job["episodes"], layout.n_agents, arrays.trivial)
        if assignment == "value":
            env = TeamEnv(layout, arrays, len(tasks), job["max_len"][split], 0.99, rng)
            tasks, _ = ppo.assign(torch, net, env, enc, tasks, r["variant"] == "gru")
        out = ppo.rollout(torch, net, layout, arrays, enc, tasks, job["max_len"][split], job["roll_seed"] + k,
                          recurrent=r["variant"] == "gru", random_policy=net is None)
        frames.append(pd.DataFrame({"layout": r["layout"], "variant": r["variant"], "seed": int(r["seed"]),
                                    "sampler": sampler, "split": split, "assignment": assignment,
                                    "episode": np.arange(len(tasks)), "success": out["success"],
                                    "length": out["length"], "all_accept": out["all_accept"],
                                    "any_reject": out["any_reject"], "helpers": (tasks == arrays.trivial).sum(1)}))
    return pd.concat(frames, ignore_index=True)


def budget_jobs(p: AccMarlParams, layouts: pd.DataFrame, pool: pd.DataFrame, policies: pd.DataFrame,
                seed_for) -> list[dict]:
    """One eval job per ACC-MARL snapshot, on the premise's cell only (RAD in-distribution, random
    assignment) with the eval's task tuples and the rollout seed of that cell in the final policy's
    eval job, so a snapshot and the final policy meet the same tasks (a snapshot at the last
    iteration reproduces the eval's rows)."""
    cell = ("RAD", "in", "random")
    offset = eval_cells(p, "pbrs").index(cell)
    jobs = []
    for r in policies[policies["variant"] == "pbrs"].itertuples():
        for snap in json.loads(r.snapshots):
            row = pd.Series({"layout": r.layout, "variant": "pbrs", "seed": int(r.seed),
                             "checkpoint": snap["checkpoint"], "md5": snap["md5"]})
            jobs.append({"row": row, "text": layouts.loc[layouts["layout"] == r.layout, "text"].iloc[0],
                         "pool": pool, "cfg": ppo_config(p), "cells": [cell], "episodes": p.eval.episodes,
                         "max_len": {"in": p.eval.max_len, "ood": p.eval.ood_max_len},
                         "task_seed": seed_for("tasks", r.layout, int(r.seed)),
                         "roll_seed": seed_for("rollout", r.layout, "pbrs", int(r.seed)) + offset,
                         "iteration": int(snap["iteration"]), "steps": int(snap["steps"])})
    return jobs


def budget_job(job: dict) -> pd.DataFrame:
    """eval_job's per-episode rows of one snapshot, with its iteration and env steps."""
    return eval_job(job).assign(iteration=job["iteration"], steps=job["steps"])


def zlib_key(text: str) -> int:
    import zlib

    return zlib.crc32(text.encode())


# ---------------------------------------------------------------- assignment study
def assignment_job(job: dict) -> pd.DataFrame:
    """Per instance × permutation: Σ V at t = 0, Monte-Carlo success over `rollouts`
    episodes (the oracle), the value-argmax and the oracle choice."""
    import torch

    torch_worker(1)
    arrays, pool = pool_from_table(job["pool"])
    enc = ppo.Encoded(torch, model_mod.dfa_graphs(pool), arrays.n_states)
    layout, net = _policy(torch, job)
    r = job["row"]
    rng = np.random.default_rng([job["task_seed"], 77])
    n = layout.n_agents
    tasks = draw_tasks(rng, roots(job["pool"], "test", "RAD"), job["instances"], n, arrays.trivial)
    perms = list(itertools.permutations(range(n)))
    env = TeamEnv(layout, arrays, len(tasks), job["max_len"], 0.99, rng)
    values = np.stack([ppo.team_values(torch, net, env, enc, tasks[:, list(q)], False) for q in perms], 1)
    reps = job["rollouts"]
    mc = np.zeros((len(tasks), len(perms)))
    lengths = np.zeros_like(mc)
    for k, q in enumerate(perms):
        batch = np.repeat(tasks[:, list(q)], reps, axis=0)
        out = ppo.rollout(torch, net, layout, arrays, enc, batch, job["max_len"], job["roll_seed"] + k)
        mc[:, k] = out["success"].reshape(len(tasks), reps).mean(1)
        lengths[:, k] = out["length"].reshape(len(tasks), reps).mean(1)
    rows = []
    for i in range(len(tasks)):
        for k, q in enumerate(perms):
            rows.append({"layout": r["layout"], "seed": int(r["seed"]), "instance": i, "perm": k,
                         "perm_order": json.dumps(list(q)), "tasks": json.dumps(tasks[i, list(q)].tolist()),
                         "value_sum": float(values[i, k]), "mc_success": float(mc[i, k]),
                         "mc_length": float(lengths[i, k]), "value_choice": int(values[i].argmax()),
                         "oracle_choice": int(mc[i].argmax()), "oracle_gap": float(mc[i].max() - mc[i].min())})
    return pd.DataFrame(rows)


def assignment_jobs(p: AccMarlParams, layouts, pool, policies, seed_for) -> list[dict]:
    jobs = []
    for r in policies[policies["variant"] == "pbrs"].itertuples():
        row = pd.Series(r._asdict())
        jobs.append({"row": row, "text": layouts.loc[layouts["layout"] == r.layout, "text"].iloc[0], "pool": pool,
                     "cfg": ppo_config(p), "instances": p.assignment.instances, "rollouts": p.assignment.rollouts,
                     "max_len": p.eval.max_len, "task_seed": seed_for("assign", r.layout, int(r.seed)),
                     "roll_seed": seed_for("assign_rollout", r.layout, int(r.seed))})
    return jobs


# ---------------------------------------------------------------- coordination traces
def crossing_events(trace: dict, layout: lay_mod.Layout, mover: int, helper: int) -> dict:
    """Events of one episode from its trace (pos (T+1, n, 2)): `crossed` = the mover stepped
    onto a door cell; `held` = at every such step the helper stood (before the move) on a
    button cell of that door's pair; `crossings` = how many."""
    pos = trace["pos"]
    door, button = layout.door, layout.button
    crossings, held = 0, True
    for t in range(1, len(pos)):
        r0, c0 = pos[t - 1, mover]
        r1, c1 = pos[t, mover]
        if door[r1, c1] >= 0 and door[r0, c0] < 0:
            crossings += 1
            hr, hc = pos[t - 1, helper]
            held &= bool(button[hr, hc] == door[r1, c1])
    return {"crossed": crossings > 0, "held": crossings > 0 and held, "crossings": crossings}


def trace_jobs(p: AccMarlParams, layouts, pool, policies, seed_for) -> list[dict]:
    jobs = []
    for r in policies[policies["variant"] == "pbrs"].itertuples():
        row = pd.Series(r._asdict())
        jobs.append({"row": row, "text": layouts.loc[layouts["layout"] == r.layout, "text"].iloc[0], "pool": pool,
                     "cfg": ppo_config(p), "episodes": p.traces.episodes, "max_len": p.eval.max_len,
                     "roll_seed": seed_for("traces", r.layout, int(r.seed))})
    return jobs


def trace_job(job: dict) -> pd.DataFrame:
    """Curated scenarios (agent 0 fixed to its task, agent 1 as given): per-episode success,
    length and events detected from the recorded positions; the first successful
    hold-the-door trace is kept as JSON."""
    import torch

    torch_worker(1)
    arrays, pool = pool_from_table(job["pool"])
    enc = ppo.Encoded(torch, model_mod.dfa_graphs(pool), arrays.n_states)
    layout, net = _policy(torch, job)
    r = job["row"]
    frames = []
    for k, (scen, tasks) in enumerate(scenario_tasks(r["layout"]).items()):
        ids = [pool.index[dfa_mod.key(*t)] if t else arrays.trivial for t in tasks]
        batch = np.tile(np.array(ids, dtype=np.int64), (job["episodes"], 1))
        out = ppo.rollout(torch, net, layout, arrays, enc, batch, job["max_len"], job["roll_seed"] + k, record=True)
        rows, example = [], ""
        for e in range(len(batch)):
            tr = {"pos": out["trace"]["pos"][:, e]}
            length = int(out["length"][e])
            tr["pos"] = tr["pos"][:length + 1]
            ev0 = crossing_events(tr, layout, 0, 1)
            ev1 = crossing_events(tr, layout, 1, 0)
            row = {"layout": r["layout"], "seed": int(r["seed"]), "scenario": scen, "episode": e,
                   "success": bool(out["success"][e]), "length": length, "all_accept": bool(out["all_accept"][e]),
                   "mover_crossed": ev0["crossed"], "helper_held": ev0["held"], "partner_crossed": ev1["crossed"],
                   "partner_held": ev1["held"], "trace": ""}
            if scen == "hold_the_door" and row["success"] and not example:
                example = json.dumps({"pos": tr["pos"].tolist(),
                                      "open": out["trace"]["open"][:length + 1, e].astype(int).tolist()})
                row["trace"] = example
            rows.append(row)
        frames.append(pd.DataFrame(rows))
    return pd.concat(frames, ignore_index=True)


# ---------------------------------------------------------------- progression benchmark
def progression_benchmark(p: AccMarlParams, layouts: pd.DataFrame, pool: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Env steps/s with table progression vs a per-env loop minimising on the fly, on the same
    random-action trajectories (asserted identical), and value-assignment time per episode."""
    arrays, dpool = pool_from_table(pool)
    name = p.layouts[0]
    layout = layout_of(layouts, name)
    ids = roots(pool, "train", "RAD")
    rows, finals = [], {}
    for mode in ("table", "minimise"):
        rng = np.random.default_rng([seed, 5])
        env = TeamEnv(layout, arrays, p.perf.envs, p.eval.max_len, 0.99, rng,
                      sample_ids=lambda r, e, n: ids[r.integers(len(ids), size=(e, n))], progression=mode)
        env.reset()
        act_rng = np.random.default_rng([seed, 6])
        history = []
        start = time.perf_counter()
        for _ in range(p.perf.steps):
            out = env.step(act_rng.integers(0, 5, size=(p.perf.envs, layout.n_agents)))
            history.append(out["ids"])
        secs = time.perf_counter() - start
        finals[mode] = np.stack(history)
        rows.append({"metric": f"env_steps_per_s_{mode}", "value": p.perf.envs * p.perf.steps / secs})
    if not (finals["table"] == finals["minimise"]).all():
        raise AssertionError("table and on-the-fly progression diverged on the same trajectories")
    rows.append({"metric": "table_speedup", "value": rows[0]["value"] / rows[1]["value"]})
    import torch

    torch_worker(1)
    net = ppo.net_for(torch, layout, ppo_config(p), "pbrs")
    enc = ppo.Encoded(torch, model_mod.dfa_graphs(dpool), arrays.n_states)
    tasks = draw_tasks(np.random.default_rng([seed, 8]), ids, 64, layout.n_agents, arrays.trivial)
    env = TeamEnv(layout, arrays, len(tasks), p.eval.max_len, 0.99, np.random.default_rng(0))
    start = time.perf_counter()
    ppo.assign(torch, net, env, enc, tasks, False)
    rows.append({"metric": "assignment_ms_per_episode", "value": 1000 * (time.perf_counter() - start) / len(tasks)})
    return pd.DataFrame(rows).assign(layout=name)
