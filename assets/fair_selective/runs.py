"""What each fair_selective asset computes, given parameters and seeds — no Dagster import."""
from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable

import numpy as np
import pandas as pd

from assets.fair_selective import agents as ag
from assets.fair_selective import env as envs
from assets.fair_selective import fairness as fm
from assets.fair_selective import static
from assets.fair_selective.params import FairSelectiveParams

SEED_OF_POOL = "pool"


def spec_of(p: FairSelectiveParams, name: str) -> envs.EnvSpec:
    return envs.env_spec(name, p.cost, p.shares)


def env_spec_table(p: FairSelectiveParams) -> pd.DataFrame:
    """One row per (env, state): group, features, P(state | group), P(y = 1 | state), plus cost,
    shares, the exact myopic TPR gap and a sha256 of the generating constants (provenance)."""
    frames = []
    for name in p.envs:
        spec = spec_of(p, name)
        constants = {"lending": [envs.LENDING_BUCKET_PROBS, envs.LENDING_REPAY],
                     "hiring": [envs.HIRING_EDUCATION, envs.HIRING_EXPERIENCE, envs.HIRING_LOGIT]}[name]
        digest = hashlib.sha256(json.dumps(constants, sort_keys=True).encode()).hexdigest()
        frame = pd.DataFrame(spec.table())
        frames.append(frame.assign(cost=spec.cost, share_0=spec.shares[0], share_1=spec.shares[1],
                                   myopic_tpr_gap=envs.myopic_tpr_gap(spec), source="generated (spec constants)",
                                   source_sha256=digest))
    return pd.concat(frames, ignore_index=True)


def spec_from_table(table: pd.DataFrame, name: str) -> envs.EnvSpec:
    """Rebuild an EnvSpec from the env_spec asset (so downstream assets read the gated table)."""
    rows = table[table["env"] == name].sort_values("state")
    base = envs.env_spec(name, float(rows["cost"].iloc[0]), (float(rows["share_0"].iloc[0]),
                                                              float(rows["share_1"].iloc[0])))
    if not np.allclose(base.p_success, rows["p_success"].to_numpy()) or \
            not np.allclose(base.p_state, rows["p_state"].to_numpy()):
        raise ValueError(f"env_spec table for {name} differs from its generator")
    return base


def applicant_pools(p: FairSelectiveParams, table: pd.DataFrame, rng: Callable) -> pd.DataFrame:
    """N applicants per (env, seed) for every seed used (static and RL)."""
    frames = []
    for name in p.envs:
        spec = spec_from_table(table, name)
        for seed in sorted(set(p.seeds) | set(p.static.seeds)):
            ids = envs.sample_pool(spec, p.pool_size, rng(SEED_OF_POOL, name, seed))
            frames.append(pd.DataFrame({"env": name, "seed": seed, "applicant": np.arange(p.pool_size),
                                        "state": ids, "group": spec.states[ids, 0],
                                        "p_success": spec.p_success[ids]}))
    return pd.concat(frames, ignore_index=True)


def pool_of(pools: pd.DataFrame, name: str, seed: int) -> np.ndarray:
    return pools[(pools["env"] == name) & (pools["seed"] == seed)].sort_values("applicant")["state"].to_numpy()


def behaviour_logs(p: FairSelectiveParams, table: pd.DataFrame, pools: pd.DataFrame, rng: Callable) -> pd.DataFrame:
    """Full logs (true label on every row; evaluator only) of every behaviour policy."""
    frames = []
    for name in p.envs:
        spec = spec_from_table(table, name)
        for seed in p.static.seeds:
            for pol in p.static.policies:
                log = static.behaviour_log(spec, pool_of(pools, name, seed),
                                           {"offset": pol.offset, "epsilon": pol.epsilon}, p.static.log_size,
                                           rng("log", name, seed, pol.name))
                frames.append(log.assign(env=name, seed=seed, policy=pol.name))
    cols = ["env", "seed", "policy", "row", "state", "group", "accept_prob", "action", "label"]
    return pd.concat(frames, ignore_index=True)[cols]


def fairness_estimates(p: FairSelectiveParams, table: pd.DataFrame, full: pd.DataFrame,
                       observed: pd.DataFrame) -> pd.DataFrame:
    """static.static_study on every (env, seed, policy) log and measure."""
    frames = []
    for (name, seed, pol), obs in observed.groupby(["env", "seed", "policy"], sort=True):
        truth = full[(full["env"] == name) & (full["seed"] == seed) & (full["policy"] == pol)]
        study = static.static_study(spec_from_table(table, name), truth.reset_index(drop=True),
                                    obs.reset_index(drop=True), p.static.measures, p.static.batch, p.omega)
        frames.append(study.assign(env=name, seed=seed, policy=pol))
    return pd.concat(frames, ignore_index=True)


def beta2_grid(p: FairSelectiveParams, kind: str) -> tuple[float, ...]:
    """The second grid axis of an agent kind: SELLF's Rényi weight β2, FOCOPS's ν_max, else (0,)."""
    if kind in ag.SELLF_KINDS:
        return p.agents.beta2_grid
    if kind == "focops":
        return p.agents.nu_max_grid
    return (0.0,)


def agent_config(p: FairSelectiveParams, kind: str, beta1: float, beta2: float = 0.0,
                 total_steps: int | None = None) -> ag.AgentConfig:
    """β1 is the advantage weight of the A-PPO / SELLF family, ELBERT's bias coefficient and
    FOCOPS's cost limit; β2 is SELLF's Rényi weight and FOCOPS's ν_max."""
    a = p.agents
    return ag.AgentConfig(kind=kind, measure=p.measure, beta1=beta1,
                          beta2=beta2 if kind in (*ag.SELLF_KINDS, "focops") else 0.0,
                          pocar_beta2=a.pocar_beta2, omega=p.omega, lr=a.lr,
                          total_steps=total_steps or a.total_steps, n_steps=a.n_steps, batch_size=a.batch_size,
                          epochs=a.epochs, predictor=a.predictor, predictor_steps=a.predictor_steps,
                          history=a.history, censor=a.censor if kind == "sellf_censored" else 0.0)


def training_jobs(p: FairSelectiveParams, table: pd.DataFrame, pools: pd.DataFrame, seed_for: Callable) -> list[dict]:
    jobs = []
    for name in p.envs:
        spec = spec_from_table(table, name)
        for kind, betas in p.agents.grid.items():
            for beta1 in betas:
                for beta2 in beta2_grid(p, kind):
                    for seed in p.seeds:
                        jobs.append({"env": name, "kind": kind, "beta1": float(beta1), "beta2": float(beta2),
                                     "seed": int(seed),
                                     "train_seed": seed_for("train", name, kind, beta1, beta2, seed),
                                     "env_seed": seed_for("env", name, seed),
                                     "spec": (name, spec.cost, spec.shares), "pool": pool_of(pools, name, seed),
                                     "cfg": agent_config(p, kind, float(beta1), float(beta2)), "window": p.window,
                                     "horizon": p.horizon, "resource0": p.resource0})
    return jobs


def train_job(job: dict) -> dict:
    """One training run (module level: spawn workers call it)."""
    start = time.perf_counter()
    spec = envs.env_spec(*job["spec"])
    out = ag.train_agent(spec, job["pool"], job["cfg"], job["train_seed"], job["window"], job["horizon"],
                         job["resource0"], env_seed=job["env_seed"])
    out["seconds"] = time.perf_counter() - start
    return out


def checkpoint_row(job: dict, out: dict, ref: dict) -> dict:
    """The agent_checkpoint table row of one run (no wall-clock values: DVC tracks it)."""
    curve = pd.DataFrame(out["curve"])
    last = curve.iloc[-1]
    state = out["state"]
    finite = all(bool(np.isfinite(v.double().numpy()).all()) for v in state.values())
    largest = max(float(v.abs().max()) for k, v in state.items() if k.startswith(("policy.", "predictor.")))
    return {"env": job["env"], "agent": job["kind"], "beta1": job["beta1"], "beta2": job["beta2"],
            "seed": job["seed"],
            "checkpoint": ref["checkpoint"], "md5": ref["md5"], "finite": finite, "largest_weight": largest,
            "memory_rows": out["memory_rows"], "max_importance_weight": out["max_weight"],
            "uses_predictor": job["kind"] in ag.PREDICTOR_KINDS,
            "train_delta_obs": float(last["delta_obs"]), "train_delta_true": float(last["delta_true"]),
            "train_last_resource": float(last["last_resource"]),
            "max_residual": float(curve["residual"].max()), "iterations": len(curve),
            "bound_stats": json.dumps(out["bound_stats"]), "curve": curve.to_json(orient="records")}


def select_configs(checkpoints: pd.DataFrame, omega: float) -> pd.DataFrame:
    """The spec's observable-only rule per (env, agent) over its (β1, β2) grid: round the mean
    training Δ_obs to 2 decimals, treat ≤ ω as 0, keep the minimum, then the highest final
    resource. Never reads the true Δ."""
    rows = []
    for (name, kind), grp in checkpoints.groupby(["env", "agent"], sort=True):
        means = grp.groupby(["beta1", "beta2"]).agg(delta_obs=("train_delta_obs", "mean"),
                                                    resource=("train_last_resource", "mean")).reset_index()
        rounded = means["delta_obs"].round(2)
        means["score"] = np.where(rounded <= omega, 0.0, rounded)
        keep = means[means["score"] == means["score"].min()]
        best = keep.sort_values(["resource", "beta1", "beta2"], ascending=[False, True, True]).iloc[0]
        rows.append({"env": name, "agent": kind, "beta1": float(best["beta1"]), "beta2": float(best["beta2"]),
                     "candidates": json.dumps(means[["beta1", "beta2", "delta_obs", "resource"]].to_dict("records")),
                     "rule": "min round(Δ_obs, 2) (≤ ω → 0), then max final resource"})
    return pd.DataFrame(rows)


def evaluate(spec: envs.EnvSpec, pool: np.ndarray, tables: dict, cfg: ag.AgentConfig, bound_stats: list[dict],
             seed: int, episodes: int, window: int, horizon: int, resource0: float, log_every: int) -> pd.DataFrame:
    """`episodes` sampled-action episodes of a trained agent (lookup tables of its final
    networks): rows every log_every steps and at each episode's last step with (ep, t, group,
    action, label, pred, resource, Δ_true, Δ_obs, Δ_imp, bias bound, certified)."""
    rows = []
    groups_of = spec.states[:, 0]
    uses_pred = cfg.kind in ag.PREDICTOR_KINDS
    # the sampled action: SELLF-censored's forced reject where π < censor, as in training
    accept = ag.censored_accept(tables["accept"], cfg.censor) if cfg.censor > 0 else tables["accept"]
    bound_g = np.array([s["bound"] for s in bound_stats]) if uses_pred else None
    for ep in range(episodes):
        env = envs.ResamplingEnv(spec, pool, horizon, resource0, seed * 1000 + ep)
        rng = np.random.default_rng([seed, ep, 11])
        win = fm.RingWindow(window)
        fs = env.pool[rng.integers(len(env.pool), size=window)]
        fa = (rng.random(window) < accept[fs]).astype(np.int64)
        fy = env.prefill_labels(fs, fa)
        fh = (rng.random(window) < tables["pred"][fs]).astype(np.int64) if uses_pred else 0 * fa
        win.fill(groups_of[fs], fa, fy, np.where(fa == 1, fy, fh))
        done, t = False, 0
        while not done:
            i, s = env.draw()
            a = int(rng.random() < accept[s])
            u = rng.random()
            _, y, done = env.step(i, a)
            yt = float(y) if a == 1 else (float(u < tables["pred"][s]) if uses_pred else 0.0)
            win.push(int(groups_of[s]), a, y, yt)
            if t % log_every == 0 or done:
                sums = win.sums.tolist()
                d_true = fm.delta_scalar(sums, cfg.measure, "full")
                d_obs = fm.delta_scalar(sums, cfg.measure, cfg.estimator) if cfg.kind != "ppo" else float("nan")
                row = {"ep": ep, "t": t, "group": int(groups_of[s]), "action": a,
                       "label": int(y) if a == 1 else None, "pred": float(tables["pred"][s]) if uses_pred else None,
                       "resource": env.resource, "delta_true": abs(d_true), "delta_obs": abs(d_obs),
                       "done": bool(done)}
                if uses_pred:
                    dec = fm.decomposition(win.sums, cfg.measure)
                    bias = float((dec["k"] * bound_g).sum())
                    row.update(delta_imp=abs(dec["delta_imp"]), bias_bound=bias,
                               certified=fm.certificate(dec["delta_imp"], bias, cfg.omega))
                rows.append(row)
            t += 1
    return pd.DataFrame(rows)


def eval_job(job: dict) -> pd.DataFrame:
    spec = envs.env_spec(*job["spec"])
    frame = evaluate(spec, job["pool"], job["tables"], job["cfg"], job["bound_stats"], job["eval_seed"],
                     job["episodes"], job["window"], job["horizon"], job["resource0"], job["log_every"])
    return frame.assign(env=job["env"], agent=job["kind"], beta1=job["beta1"], beta2=job["beta2"], seed=job["seed"])


def tables_from_state(state: dict, spec: envs.EnvSpec, cfg: ag.AgentConfig) -> dict:
    """Lookup tables (accept, pred, a_K) of a saved checkpoint."""
    import torch

    nets = ag.build_networks(torch, spec.obs_dim, cfg)
    for name, net in nets.items():
        net.load_state_dict({k[len(name) + 1:]: v for k, v in state.items() if k.startswith(name + ".")})
    obs = torch.from_numpy(spec.observations())
    with torch.no_grad():
        logits, _ = nets["policy"](obs)
        accept = torch.softmax(logits, -1)[:, 1].double().numpy()
        pred = torch.sigmoid(nets["predictor"](obs)).squeeze(-1).double().numpy()
    return {"accept": accept, "pred": pred, "a_k": fm.coverage(state["history_accept"].double().numpy())}


def eval_job_spec(p: FairSelectiveParams, row, state: dict, sidecar: dict, pool: np.ndarray, eval_seed: int) -> dict:
    """The eval job of one checkpoint row (lookup tables of its networks, its bound statistics)."""
    cfg = ag.AgentConfig(**sidecar["config"])
    spec_args = (row.env, p.cost, p.shares)
    spec = envs.env_spec(*spec_args)
    return {"env": row.env, "kind": row.agent, "beta1": row.beta1, "beta2": row.beta2, "seed": row.seed,
            "spec": spec_args, "pool": pool, "tables": tables_from_state(state, spec, cfg), "cfg": cfg,
            "bound_stats": json.loads(row.bound_stats), "eval_seed": eval_seed, "episodes": p.eval.episodes,
            "window": p.window, "horizon": p.horizon, "resource0": p.resource0, "log_every": p.eval.log_every}
