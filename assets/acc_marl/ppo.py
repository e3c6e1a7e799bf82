"""Shared-parameter PPO for the team policy, evaluation with random / value-based task
assignment, and the random-policy baseline — torch + numpy, no Dagster import.

Every agent is one sample of the shared actor-critic (decentralised execution: each agent
acts on its own egocentric grid and the DFAs own-first). Variants:
  pbrs     progressed DFAs in the observation, shaped reward r + γΦ(A') − Φ(A) (ACC-MARL);
  no_pbrs  progressed DFAs, sparse team reward only;
  gru      GRU(128) policy that sees only the *initial* DFAs (no progression), shaped reward.
PPO: GAE(λ) per agent, clipped surrogate, value MSE × vf_coef, entropy bonus, global grad
norm clip, Adam; `epochs` passes over `minibatches` shuffled minibatches per rollout (the
GRU replays whole per-agent sequences, so its minibatches are sets of sequences).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass

import numpy as np

from assets.acc_marl import model as model_mod
from assets.acc_marl.env import PoolArrays, TeamEnv, own_first
from assets.acc_marl.layouts import Layout
from assets.common.worker import torch_worker

VARIANTS = ("pbrs", "no_pbrs", "gru")
PRECISIONS = ("fp32", "bf16")


def autocast(torch, device: str, precision: str):
    """The mixed-precision context of `precision` on `device` (a no-op for fp32): matmuls and
    convolutions in bfloat16, parameters and reductions (softmax, log-softmax) in fp32."""
    kind = "cuda" if str(device).startswith("cuda") else "cpu"
    return torch.autocast(kind, dtype=torch.bfloat16, enabled=precision == "bf16")


@dataclass(frozen=True)
class PPOConfig:
    """Spec PPO settings (lr 3e-4, clip 0.2, entropy 0.02, γ 0.99, λ 0.95, vf 0.5, grad 0.5)."""

    total_steps: int = 200_000          # env steps (each has n agent samples)
    n_envs: int = 32
    n_steps: int = 128
    epochs: int = 4
    minibatches: int = 4
    lr: float = 3e-4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip: float = 0.2
    vf_coef: float = 0.5
    ent_coef: float = 0.02
    max_grad_norm: float = 0.5
    max_len: int = 100
    iterations_gnn: int = 6             # GATv2 message-passing rounds (= the largest DFA size)
    precision: str = "fp32"             # "bf16": network forward/backward under bfloat16 autocast (fp32 weights,
                                        # Adam state, losses and log-probs); the environment is unaffected

    def __post_init__(self):
        if self.precision not in PRECISIONS:
            raise ValueError(f"unknown precision {self.precision!r}; known: {PRECISIONS}")

    def as_dict(self) -> dict:
        return asdict(self)


def net_for(torch, layout: Layout, cfg: PPOConfig, variant: str):
    return model_mod.build(torch, layout.n_channels, *layout.shape, layout.n_agents,
                           iterations=cfg.iterations_gnn, recurrent=variant == "gru")


class Encoded:
    """DFA graph tensors of the pool on `device`; `embed(net, ids)` → (len(ids), 32), encoding
    each unique id once, padded to the largest DFA among them (canonical states are 0..k−1)."""

    def __init__(self, torch, graphs: dict, n_states: np.ndarray, device: str = "cpu"):
        self.torch = torch
        self.device = device
        self.edges = torch.from_numpy(graphs["edges"]).to(device)
        self.nodes = torch.from_numpy(graphs["nodes"]).to(device)
        self.n_states = n_states

    def tensor(self, array: np.ndarray):
        """A numpy array as a tensor on this encoder's device."""
        return self.torch.from_numpy(np.ascontiguousarray(array)).to(self.device)

    def embed(self, net, ids: np.ndarray):
        flat = np.asarray(ids).ravel()
        uniq, inv = np.unique(flat, return_inverse=True)
        k = max(1, int(self.n_states[uniq].max()))
        u = self.tensor(uniq)
        emb = net.encoder(self.edges[u][:, :k, :k], self.nodes[u][:, :k])
        return emb[self.tensor(inv)].reshape(*np.shape(ids)[:-1], -1)


class EmbeddingMemo:
    """DFA embeddings of a *fixed* network (no-grad rollouts), each pool id encoded once: ids
    not seen yet are encoded together (Encoded.embed), later calls read the (N, 32) table.
    Padding changes an embedding only by float rounding (tested), so this is the same map."""

    def __init__(self, enc: Encoded, net):
        self.enc, self.net = enc, net
        self.table = enc.torch.zeros(len(enc.n_states), net.encoder.out.out_features, device=enc.device)
        self.have = np.zeros(len(enc.n_states), dtype=bool)

    def __call__(self, ids: np.ndarray):
        """ids (..., n) → (..., n·32), like Encoded.embed."""
        flat = np.asarray(ids).ravel()
        need = np.unique(flat[~self.have[flat]])
        if len(need):
            with self.enc.torch.no_grad():
                self.table[self.enc.tensor(need)] = self.enc.embed(self.net, need[:, None]).to(self.table.dtype)
            self.have[need] = True
        return self.table[self.enc.tensor(flat)].reshape(*np.shape(ids)[:-1], -1)


def _policy_inputs(torch, obs: dict, dfa_ids: np.ndarray, enc: Encoded, net, memo: EmbeddingMemo | None = None):
    """Flatten (E, n, ...) observations to (E·n, ...) tensors on the encoder's device; DFA
    features from `memo` when given (no-grad rollouts of a fixed network)."""
    E, n = dfa_ids.shape[:2]
    grid = enc.tensor(obs["grid"].reshape(E * n, *obs["grid"].shape[2:]))
    agent = enc.tensor(obs["agent"].reshape(-1))
    feats = (memo or (lambda ids: enc.embed(net, ids)))(dfa_ids.reshape(E * n, n))
    return grid, agent, feats


def train(layout: Layout, arrays: PoolArrays, graphs: dict, roots: np.ndarray, cfg: PPOConfig, variant: str,
          seed: int, threads: int = 1, log=None, callback=None, device: str = "cpu") -> dict:
    """Train one policy. roots: pool ids of the training DFAs (sampled i.i.d. per agent at
    reset, U{0..n−1} replaced by the trivial DFA). Returns {"state": state_dict, "log": rows
    per iteration (steps, success, episode length, team return, entropy, losses, approx KL)}.
    Deterministic given seed and device; `callback(iteration, net)` runs after each update
    (snapshots). `device` ("cpu" / "cuda") holds the network, the rollout batch and the update;
    the environment stays numpy on the CPU and the returned state_dict is on the CPU."""
    import torch

    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; known: {VARIANTS}")
    torch_worker(threads, seed)
    rng = np.random.default_rng([seed, 1])
    net = net_for(torch, layout, cfg, variant).to(device)
    opt = torch.optim.Adam(net.parameters(), lr=cfg.lr, eps=1e-5)
    enc = Encoded(torch, graphs, arrays.n_states, device)
    env = TeamEnv(layout, arrays, cfg.n_envs, cfg.max_len, cfg.gamma, rng,
                  sample_ids=lambda r, e, n: roots[r.integers(len(roots), size=(e, n))])
    env.reset()
    shaping = variant != "no_pbrs"
    recurrent = variant == "gru"
    E, n, T = cfg.n_envs, layout.n_agents, cfg.n_steps
    B = E * n
    h = torch.zeros(B, 128, device=device) if recurrent else None
    iterations = max(1, math.ceil(cfg.total_steps / (E * T)))
    rows = []
    new_episode = np.ones(B, dtype=np.float32)
    for it in range(iterations):
        grids = np.zeros((T, B, layout.n_channels, *layout.shape), dtype=np.float32)
        dfas = np.zeros((T, B, n), dtype=np.int64)
        acts = np.zeros((T, B), dtype=np.int64)
        logps, vals, rews = (np.zeros((T, B), dtype=np.float32) for _ in range(3))
        dones = np.zeros((T, B), dtype=np.float32)            # episode ended after step t
        starts = np.zeros((T, B), dtype=np.float32)           # step t starts a new episode
        h_start = h.clone() if recurrent else None
        ended = {"success": [], "length": [], "team": []}
        memo = EmbeddingMemo(enc, net)                      # the network is fixed until the update
        with torch.no_grad(), autocast(torch, device, cfg.precision):
            for t in range(T):
                obs = env.observe()
                ids = own_first(env.init_ids) if recurrent else obs["dfa"]
                grid, agent, feats = _policy_inputs(torch, obs, ids, enc, net, memo)
                if recurrent:
                    h = h * enc.tensor(1.0 - new_episode)[:, None]
                    logits, value, h = net(grid, agent, feats, h)
                    h = h.float()
                else:
                    logits, value = net(grid, agent, feats)
                logits, value = logits.float(), value.float()
                dist = torch.distributions.Categorical(logits=logits)
                a = dist.sample()
                a_np = a.cpu().numpy()
                out = env.step(a_np.reshape(E, n), shaping=shaping)
                grids[t], dfas[t], acts[t] = obs["grid"].reshape(B, *grids.shape[2:]), ids.reshape(B, n), a_np
                logps[t], vals[t] = dist.log_prob(a).cpu().numpy(), value.cpu().numpy()
                rews[t] = out["reward"].reshape(B)
                dones[t] = np.repeat(out["done"], n).astype(np.float32)
                starts[t] = new_episode
                new_episode = dones[t].copy()
                for e in np.nonzero(out["done"])[0]:
                    ended["success"].append(float(out["success"][e]))
                    ended["length"].append(int(out["length"][e]))
                    ended["team"].append(float(out["team"][e]))
            obs = env.observe()
            ids = own_first(env.init_ids) if recurrent else obs["dfa"]
            grid, agent, feats = _policy_inputs(torch, obs, ids, enc, net, memo)
            if recurrent:
                _, last_v, _ = net(grid, agent, feats, h * enc.tensor(1.0 - new_episode)[:, None])
            else:
                _, last_v = net(grid, agent, feats)
            last_v = last_v.float()
        adv = np.zeros((T, B), dtype=np.float32)
        running = np.zeros(B, dtype=np.float32)
        nxt_v = last_v.cpu().numpy()
        for t in range(T - 1, -1, -1):
            nonterm = 1.0 - dones[t]
            delta = rews[t] + cfg.gamma * nxt_v * nonterm - vals[t]
            running = delta + cfg.gamma * cfg.gae_lambda * nonterm * running
            adv[t] = running
            nxt_v = vals[t]
        rets = adv + vals
        stats = _update(torch, net, opt, enc, cfg, rng, grids, dfas, acts, logps, adv, rets, starts, h_start,
                        recurrent, n)
        row = {"iteration": it, "steps": (it + 1) * E * T, "episodes": len(ended["success"]),
               "success": float(np.mean(ended["success"])) if ended["success"] else float("nan"),
               "length": float(np.mean(ended["length"])) if ended["length"] else float("nan"),
               "team_return": float(np.mean(ended["team"])) if ended["team"] else float("nan"),
               "shaped_reward": float(rews.mean()), **stats}
        rows.append(row)
        if log is not None:
            log(row)
        if callback is not None:
            callback(it, net)
    state = {k: v.detach().cpu().clone() for k, v in net.state_dict().items()}
    return {"state": state, "log": rows}


def _update(torch, net, opt, enc, cfg, rng, grids, dfas, acts, logps, adv, rets, starts, h_start, recurrent, n):
    """PPO epochs on the encoder's device (rollout arrays (T, B, ...) numpy); returns the mean
    entropy, losses and approx KL of the last epoch."""
    T, B = acts.shape
    t_grid = enc.tensor(grids)
    t_act, t_logp = enc.tensor(acts), enc.tensor(logps)
    t_adv, t_ret = enc.tensor(adv), enc.tensor(rets)
    agent_of = np.tile(np.arange(n), B // n)
    stats = {}
    for _ in range(cfg.epochs):
        acc = {"entropy": [], "policy_loss": [], "value_loss": [], "approx_kl": []}
        if recurrent:
            groups = np.array_split(rng.permutation(B), cfg.minibatches)
        else:
            groups = np.array_split(rng.permutation(T * B), cfg.minibatches)
        for g in groups:
            with autocast(torch, enc.device, cfg.precision):
                logits, value, a, lp_old, ad, ret = _minibatch(torch, net, enc, g, T, B, t_grid, dfas, t_act, t_logp,
                                                               t_adv, t_ret, starts, h_start, agent_of, recurrent)
            logits, value = logits.float(), value.float()
            dist = torch.distributions.Categorical(logits=logits)
            lp = dist.log_prob(a)
            ratio = torch.exp(lp - lp_old)
            ad = (ad - ad.mean()) / (ad.std() + 1e-8)
            pl = -torch.minimum(ratio * ad, torch.clamp(ratio, 1 - cfg.clip, 1 + cfg.clip) * ad).mean()
            vl = 0.5 * ((value - ret) ** 2).mean()
            ent = dist.entropy().mean()
            loss = pl + cfg.vf_coef * vl - cfg.ent_coef * ent
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), cfg.max_grad_norm)
            opt.step()
            acc["entropy"].append(float(ent.detach()))
            acc["policy_loss"].append(float(pl.detach()))
            acc["value_loss"].append(float(vl.detach()))
            acc["approx_kl"].append(float(((ratio - 1) - torch.log(ratio)).mean().detach()))
        stats = {k: float(np.mean(v)) for k, v in acc.items()}
    return stats


def _minibatch(torch, net, enc, g, T, B, t_grid, dfas, t_act, t_logp, t_adv, t_ret, starts, h_start, agent_of,
               recurrent):
    """Logits, values and the stored rollout quantities of minibatch `g` (sequences for the GRU,
    (t, b) samples otherwise)."""
    if recurrent:
        h = h_start[enc.tensor(g)]
        b = len(g)
        feats_all = enc.embed(net, dfas[:, g]).reshape(T * b, -1)                # (T·b, n·32)
        agent = enc.tensor(np.tile(agent_of[g], T))
        x = net.gru_in(net.features(t_grid[:, enc.tensor(g)].reshape(T * b, *t_grid.shape[2:]),
                                    agent, feats_all)).reshape(T, b, -1)
        hs = []
        for t in range(T):
            h = h * (1.0 - enc.tensor(starts[t, g]))[:, None]
            h = net.gru_step(x[t], h)
            hs.append(h)
        hs = torch.stack(hs).reshape(T * b, -1)
        logits, value = net.policy(hs), net.value(hs).squeeze(-1)
        sel = (slice(None), enc.tensor(g))
        a, lp_old = t_act[sel].reshape(-1), t_logp[sel].reshape(-1)
        ad, ret = t_adv[sel].reshape(-1), t_ret[sel].reshape(-1)
    else:
        tt, bb = np.divmod(g, B)
        idx_t, idx_b = enc.tensor(tt), enc.tensor(bb)
        feats = enc.embed(net, dfas[tt, bb])
        logits, value = net(t_grid[idx_t, idx_b], enc.tensor(agent_of[bb]), feats)
        a, lp_old, ad, ret = t_act[idx_t, idx_b], t_logp[idx_t, idx_b], t_adv[idx_t, idx_b], t_ret[idx_t, idx_b]
    return logits, value, a, lp_old, ad, ret


# ---------------------------------------------------------------- evaluation
def team_values(torch, net, env: TeamEnv, enc: Encoded, tasks: np.ndarray, recurrent: bool) -> np.ndarray:
    """Σ_i V_i at t = 0 of each episode for task tuple `tasks` (E, n) (observations rebuilt
    for every agent: DFAs own-first)."""
    E, n = tasks.shape
    pos = np.broadcast_to(env.layout.starts, (E, n, 2)).copy()
    obs = env.observe(pos, tasks)
    grid, agent, feats = _policy_inputs(torch, obs, obs["dfa"], enc, net)
    with torch.no_grad():
        h0 = torch.zeros(E * n, 128, device=enc.device)
        out = net(grid, agent, feats, h0) if recurrent else net(grid, agent, feats)
    return out[1].cpu().numpy().reshape(E, n).sum(axis=1)


def assign(torch, net, env: TeamEnv, enc: Encoded, tasks: np.ndarray, recurrent: bool) -> tuple[np.ndarray, np.ndarray]:
    """Value-based assignment: per episode the permutation π of the n tasks maximising
    Σ_i V_i(obs_i(π)). Returns (assigned tasks (E, n), chosen permutation index (E,))."""
    perms = list(itertools.permutations(range(tasks.shape[1])))
    scores = np.stack([team_values(torch, net, env, enc, tasks[:, list(p)], recurrent) for p in perms], axis=1)
    best = scores.argmax(axis=1)
    chosen = np.stack([tasks[e, list(perms[b])] for e, b in enumerate(best)])
    return chosen, best


def rollout(torch, net, layout: Layout, arrays: PoolArrays, enc: Encoded, tasks: np.ndarray, max_len: int,
            seed: int, recurrent: bool = False, random_policy: bool = False, record: bool = False) -> dict:
    """Play one episode per row of tasks (E, n) from the layout's starts with sampled actions.
    Returns per-episode success (all accept), length, any_reject, all_accept, and when
    `record` the positions (T+1, E, n, 2), DFA ids and door state per step."""
    rng = np.random.default_rng([seed, 2])
    E, n = tasks.shape
    env = TeamEnv(layout, arrays, E, max_len, 0.99, rng, sample_ids=None)
    env.reset(ids=tasks)
    if not random_policy:
        torch.manual_seed(seed)
    finished = np.zeros(E, dtype=bool)
    success = np.zeros(E, dtype=bool)
    length = np.full(E, max_len, dtype=np.int64)
    final_ids = tasks.copy()
    h = torch.zeros(E * n, 128, device=enc.device) if recurrent else None
    memo = None if random_policy else EmbeddingMemo(enc, net)
    trace = {"pos": [env.pos.copy()], "ids": [env.ids.copy()], "open": [env.door_open(env.pos)]}
    for _ in range(max_len):
        if random_policy:
            actions = rng.integers(0, 5, size=(E, n))
        else:                       # only unfinished episodes need the network (others no-op)
            live = np.nonzero(~finished)[0]
            obs = env.observe(env.pos[live], env.ids[live])
            ids = own_first(env.init_ids[live]) if recurrent else obs["dfa"]
            grid, agent, feats = _policy_inputs(torch, obs, ids, enc, net, memo)
            rows = enc.tensor((live[:, None] * n + np.arange(n)).ravel())
            with torch.no_grad():
                if recurrent:
                    logits, _, h_live = net(grid, agent, feats, h[rows])
                    h[rows] = h_live
                else:
                    logits, _ = net(grid, agent, feats)
                actions = np.full((E, n), 4, dtype=np.int64)
                actions[live] = torch.distributions.Categorical(logits=logits).sample().cpu().numpy().reshape(-1, n)
        out = env.step(actions, shaping=False)
        if record:
            trace["pos"].append(out["pos"])
            trace["ids"].append(out["ids"])
            trace["open"].append(env.door_open(out["pos"]))
        newly = out["done"] & ~finished
        success[newly] = out["success"][newly]
        length[newly] = out["length"][newly]
        final_ids[newly] = out["ids"][newly]
        finished |= out["done"]
        if finished.all():
            break
    final_ids[~finished] = env.ids[~finished]
    acc = arrays.accepting[final_ids]
    rejected = (arrays.n_states[final_ids] <= 1) & ~acc
    result = {"success": success, "length": length, "all_accept": acc.all(axis=1), "any_reject": rejected.any(axis=1)}
    if record:
        result["trace"] = {k: np.stack(v) for k, v in trace.items()}
    return result
