"""PPO, A-PPO (POCAR advantage; oracle and naive-accepted), naive imputation and SELLF on the
resampling env — torch, no Dagster import.

All agents share one training loop (`train_agent`); `AgentConfig.kind` selects the
estimator of Δ used for learning and the advantage:

  kind       estimator    advantage (each term min-max normalised per minibatch, then standardised)
  ppo        —            A_GAE
  oracle     full         β0·mm(A) + β1·mm(min(0, ω − |Δ|)) + βp·mm(min(0, −1[|Δ| > ω]·(|Δ_t| − |Δ_{t−1}|)))
  naive_acc  accepted     as oracle (Δ on accepted rows: ≡ 0 for TPR)
  naive_imp  imputation   β0·mm(A) + β1·mm(min(0, ω − |Δ|)); unweighted predictor, no Rényi term
  sellf      imputation   β0·mm(A) + β1·mm(min(0, ω/2 − |Δ|)); loss + β2·R; weighted predictor

States are discrete (env.EnvSpec), so every network is evaluated on all S states once per
rollout ("one batched pass") and looked up per step; gradients use the same networks on the
minibatch observations. Only `kind == "oracle"` and the evaluator read true labels of rejected
rows: learners get `ResamplingEnv.reveal(a, y)` and the window's revealed sums.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from assets.fair_selective import fairness as fm
from assets.fair_selective.env import EnvSpec, ResamplingEnv

KINDS = ("ppo", "oracle", "naive_acc", "naive_imp", "sellf")
ESTIMATOR = {"ppo": "full", "oracle": "full", "naive_acc": "accepted", "naive_imp": "imputation",
             "sellf": "imputation"}
PREDICTOR_KINDS = ("naive_imp", "sellf")


@dataclass(frozen=True)
class AgentConfig:
    """One agent's hyper-parameters (spec PPO defaults except lr, calibrated; see NOTES.md)."""

    kind: str
    measure: str = "tpr"
    beta0: float = 1.0
    beta1: float = 0.0
    beta2: float = 0.0              # SELLF: Rényi weight
    pocar_beta2: float = 0.25       # A-PPO: weight of the "Δ increased while violating" term
    omega: float = 0.05
    lr: float = 1e-3
    total_steps: int = 100_000
    n_steps: int = 2048
    batch_size: int = 64
    epochs: int = 10
    gamma: float = 1.0
    gae_lambda: float = 0.95
    clip: float = 0.2
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    hidden: int = 64
    predictor: str = "linear"       # linear | deep (64-64 tanh)
    predictor_lr: float = 1e-2
    predictor_decay: float = 0.95
    predictor_steps: int = 25
    predictor_batch: int = 64
    history: int = 10
    memory_max: int = 300_000

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown agent kind {self.kind!r}; known: {KINDS}")

    @property
    def estimator(self) -> str:
        return ESTIMATOR[self.kind]

    @property
    def threshold(self) -> float:
        """The fairness threshold of the advantage term: ω/2 for SELLF (the sufficient condition), ω else."""
        return self.omega / 2 if self.kind == "sellf" else self.omega

    def as_dict(self) -> dict:
        return asdict(self)


def actor_critic_module(torch, d_in: int, hidden: int):
    """Actor (64-64 tanh → 2 logits) and critic (64-64 tanh → 1 value) as one module whose
    weights are stacked on a leading axis of size 2 (index 0 actor, 1 critic), so both run in
    one batched matmul per layer. Orthogonal init (gain √2; last layer 0.01 actor, 1 critic),
    zero biases. forward(obs (m, d)) → (logits (m, 2), value (m,))."""
    nn = torch.nn

    class ActorCritic(nn.Module):
        def __init__(self):
            super().__init__()
            shapes = [(d_in, hidden), (hidden, hidden), (hidden, 2)]
            self.weights = nn.ParameterList([nn.Parameter(torch.empty(2, i, o)) for i, o in shapes])
            self.biases = nn.ParameterList([nn.Parameter(torch.zeros(2, 1, o)) for _, o in shapes])
            for k, w in enumerate(self.weights):
                for net in (0, 1):
                    gain = math.sqrt(2) if k < 2 else (0.01 if net == 0 else 1.0)
                    block = torch.empty(w.shape[2], w.shape[1])
                    nn.init.orthogonal_(block, gain=gain)
                    with torch.no_grad():
                        w[net].copy_(block.T)

        def forward(self, obs):
            h = obs.unsqueeze(0).expand(2, *obs.shape)
            for k in range(3):
                h = torch.baddbmm(self.biases[k], h, self.weights[k])
                if k < 2:
                    h = torch.tanh(h)
            return h[0], h[1, :, 0]

    return ActorCritic()


def build_networks(torch, obs_dim: int, cfg: AgentConfig) -> dict:
    """policy (actor + critic, see actor_critic_module), predictor (1 logit: linear or 64-64 tanh)."""
    nn = torch.nn
    policy = actor_critic_module(torch, obs_dim, cfg.hidden)
    if cfg.predictor == "linear":
        predictor = nn.Linear(obs_dim, 1)
    elif cfg.predictor == "deep":
        predictor = nn.Sequential(nn.Linear(obs_dim, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 1))
    else:
        raise ValueError(f"predictor must be linear or deep, got {cfg.predictor!r}")
    return {"policy": policy, "predictor": predictor}


def minmax(v: np.ndarray) -> np.ndarray:
    """Row-wise (v − min) / (max − min) of (b, m) minibatch rows; 0 on a constant row."""
    lo, hi = v.min(axis=-1, keepdims=True), v.max(axis=-1, keepdims=True)
    span = hi - lo
    return np.divide(v - lo, span, out=np.zeros_like(v), where=span > 0)


def standardise(v: np.ndarray) -> np.ndarray:
    """Row-wise (v − mean) / (std + 1e-8) (std with ddof = 1, as torch.std)."""
    if v.shape[-1] < 2:
        return v - v.mean(axis=-1, keepdims=True)
    return (v - v.mean(axis=-1, keepdims=True)) / (v.std(axis=-1, ddof=1, keepdims=True) + 1e-8)


def gae(rewards: np.ndarray, values: np.ndarray, dones: np.ndarray, last_value: float, gamma: float,
        lam: float) -> tuple[np.ndarray, np.ndarray]:
    """Generalised advantage estimates and λ-returns, (n,) each; dones[t] = episode ended at t."""
    n = len(rewards)
    adv = np.zeros(n)
    running = 0.0
    for t in range(n - 1, -1, -1):
        nxt = last_value if t == n - 1 else values[t + 1]
        nonterminal = 1.0 - float(dones[t])
        delta_t = rewards[t] + gamma * nxt * nonterminal - values[t]
        running = delta_t + gamma * lam * nonterminal * running
        adv[t] = running
    return adv, adv + values


def shaped_advantage(cfg: AgentConfig, adv: np.ndarray, dabs: np.ndarray, dabs_prev: np.ndarray) -> np.ndarray:
    """The advantage of minibatches (see the module table): inputs (b, m), one row per
    minibatch; min-max and standardisation are per row. The terms do not depend on the
    networks, so a whole epoch is shaped at once."""
    if cfg.kind == "ppo":
        return standardise(adv)
    out = cfg.beta0 * minmax(adv) + cfg.beta1 * minmax(np.minimum(0.0, cfg.threshold - dabs))
    if cfg.kind in ("oracle", "naive_acc"):
        increased = -(dabs > cfg.omega).astype(float) * (dabs - dabs_prev)
        out = out + cfg.pocar_beta2 * minmax(np.minimum(0.0, increased))
    return standardise(out)


def renyi_row_weights(groups: np.ndarray, c: np.ndarray) -> np.ndarray:
    """(b, m) q with Σ_i q_i·v_i = Σ_g c_g·mean_{i∈g}(v_i) / Σ_{g present} c_g per minibatch row."""
    out = np.zeros(groups.shape)
    for row in range(groups.shape[0]):
        g = groups[row]
        present = [k for k in (0, 1) if (g == k).any()]
        total = sum(c[k] for k in present)
        for k in present:
            m = g == k
            out[row, m] = c[k] / (m.sum() * total)
    return out


class _Tables:
    """Per-state lookups of the current networks (one batched pass per rollout)."""

    def __init__(self, torch, nets: dict, obs):
        with torch.no_grad():
            logits, value = nets["policy"](obs)
            self.accept = torch.softmax(logits, dim=-1)[:, 1].double().numpy()
            self.value = value.double().numpy()
            self.pred = torch.sigmoid(nets["predictor"](obs)).squeeze(-1).double().numpy()


def train_agent(spec: EnvSpec, pool: np.ndarray, cfg: AgentConfig, seed: int, window: int, horizon: int,
                resource0: float, poison_hidden: bool = False, threads: int = 1, env_seed: int | None = None) -> dict:
    """Train one agent; returns {"state": state_dicts (actor, critic, predictor, history, memory
    counts), "curve": per-iteration rows, "bound_stats": per-group overlap statistics of the
    final predictor, "max_weight", "memory_rows"}.

    pool: (N,) initial state ids. Iterations = ceil(total_steps / n_steps). Deterministic given
    seed (agent: numpy generators and torch.manual_seed) and env_seed (applicant draws and labels;
    default seed), so agents trained with one env_seed face the same applicant stream."""
    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    rng = np.random.default_rng([seed, 7])
    nets = build_networks(torch, spec.obs_dim, cfg)
    obs_all = torch.from_numpy(spec.observations())
    groups_of = spec.states[:, 0]
    opt = torch.optim.Adam(nets["policy"].parameters(), lr=cfg.lr, eps=1e-5, fused=True)
    popt = torch.optim.Adam(nets["predictor"].parameters(), lr=cfg.predictor_lr)
    sched = torch.optim.lr_scheduler.ExponentialLR(popt, gamma=cfg.predictor_decay)
    env = ResamplingEnv(spec, pool, horizon, resource0, seed if env_seed is None else env_seed,
                        poison_hidden=poison_hidden)
    uses_predictor = cfg.kind in PREDICTOR_KINDS
    history: list[np.ndarray] = []
    mem_s: list[int] = []
    mem_y: list[int] = []
    win = fm.RingWindow(window)
    iterations = math.ceil(cfg.total_steps / cfg.n_steps)
    curve, episode_resources = [], []
    prev_abs = 0.0
    for it in range(iterations):
        tab = _Tables(torch, nets, obs_all)
        a_k_tab = fm.coverage(np.stack(history)) if history else tab.accept.copy()
        # window refill: the current policy on W random pool members (hidden labels stay hidden)
        fill_s = env.pool[rng.integers(len(env.pool), size=window)]
        fill_a = (rng.random(window) < tab.accept[fill_s]).astype(np.int64)
        fill_y = env.prefill_labels(fill_s, fill_a)
        fill_hat = (rng.random(window) < tab.pred[fill_s]).astype(np.int64) if uses_predictor else 0 * fill_a
        win.fill(groups_of[fill_s], fill_a, fill_y, np.where(fill_a == 1, fill_y * fill_a, fill_hat))
        n = cfg.n_steps
        S = np.zeros(n, dtype=np.int64)
        A = np.zeros(n, dtype=np.int64)
        R, D_obs, D_prev, D_true, Yt = (np.zeros(n) for _ in range(5))
        done_flags = np.zeros(n, dtype=bool)
        residual = 0.0
        for t in range(n):
            i, s = env.draw()
            a = int(rng.random() < tab.accept[s])
            u_hat = rng.random()          # drawn every step: the stream never depends on a label
            reward, y, done = env.step(i, a)
            seen = ResamplingEnv.reveal(a, y)
            if seen is not None:
                y_tilde = float(seen)
                if len(mem_s) < cfg.memory_max:
                    mem_s.append(s)
                    mem_y.append(seen)
            else:
                y_tilde = float(u_hat < tab.pred[s]) if uses_predictor else 0.0
            # the window's full sums need the true label (evaluator, oracle); the learners'
            # estimators read only n, Σa, Σa·y (revealed) and Σỹ
            win.push(int(groups_of[s]), a, y, y_tilde)
            sums = win.sums.tolist()
            d_obs = abs(fm.delta_scalar(sums, cfg.measure, cfg.estimator)) if cfg.kind != "ppo" else 0.0
            S[t], A[t], R[t], Yt[t], done_flags[t] = s, a, reward, y_tilde, done
            D_obs[t], D_prev[t] = d_obs, prev_abs
            D_true[t] = abs(fm.delta_scalar(sums, cfg.measure, "full"))
            prev_abs = d_obs
            if done:
                episode_resources.append(env.resource)
                env.reset()
        residual = fm.decomposition(win.sums, cfg.measure)["residual"]
        values = tab.value[S]
        last_value = float(tab.value[env.pool].mean())
        adv, returns = gae(R, values, done_flags, last_value, cfg.gamma, cfg.gae_lambda)
        logp_old = np.log(np.where(A == 1, tab.accept[S], 1 - tab.accept[S]))

        pred_loss = float("nan")
        history.append(tab.accept.copy())       # the actor that collected this rollout
        history = history[-cfg.history:]
        a_k_tab = fm.coverage(np.stack(history))
        if uses_predictor and len(mem_s):
            pred_loss = _fit_predictor(torch, nets["predictor"], popt, obs_all, np.asarray(mem_s, dtype=np.int64),
                                       np.asarray(mem_y, dtype=np.int64), groups_of,
                                       tab.accept, a_k_tab, cfg, rng, weighted=cfg.kind == "sellf")
            sched.step()
        update = not (cfg.kind == "sellf" and it == 0)
        if update:
            c = fm.renyi_weights(groups_of[S], A, a_k_tab[S], Yt, cfg.measure) if cfg.kind == "sellf" else None
            _ppo_update(torch, nets, opt, obs_all, S, A, adv, returns, logp_old, D_obs, D_prev, a_k_tab,
                        groups_of, c, cfg, rng)
        curve.append({"iteration": it, "steps": (it + 1) * n, "reward": float(R.sum()),
                      "delta_obs": float(D_obs.mean()), "delta_true": float(D_true.mean()),
                      "accept_rate": float(A.mean()), "residual": float(residual), "predictor_loss": pred_loss,
                      "episodes": len(episode_resources),
                      "last_resource": float(episode_resources[-1]) if episode_resources else float("nan")})
    final = _Tables(torch, nets, obs_all)
    a_k_tab = fm.coverage(np.stack(history))
    counts = np.zeros((spec.n_states, 2), dtype=np.int64)
    np.add.at(counts, (np.asarray(mem_s, dtype=np.int64), np.asarray(mem_y, dtype=np.int64)), 1)
    stats, max_w = bound_statistics(counts, final.pred, final.accept, a_k_tab, groups_of)
    state = {f"{k}.{p}": v.detach().clone() for k, net in nets.items() for p, v in net.state_dict().items()}
    state["history_accept"] = torch.tensor(np.stack(history))
    state["memory_counts"] = torch.tensor(counts)
    return {"state": state, "curve": curve, "bound_stats": stats, "max_weight": max_w,
            "memory_rows": int(len(mem_s)), "tables": {"accept": final.accept, "pred": final.pred,
                                                        "a_k": a_k_tab}}


def bound_statistics(counts: np.ndarray, pred: np.ndarray, accept: np.ndarray, a_k: np.ndarray,
                     groups_of: np.ndarray) -> tuple[list[dict], float]:
    """Per-group overlap statistics (fairness.overlap_bound) of a predictor on the accepted
    memory, given as counts (S, 2) of (state, label); and the largest importance weight."""
    stats, max_w = [], 0.0
    for g in (0, 1):
        s_idx, y_idx = np.nonzero(counts * (groups_of[:, None] == g))
        reps = counts[s_idx, y_idx]
        if reps.sum() == 0:
            stats.append({"group": g, "e_iw": float("nan"), "d2": float("nan"), "mse": float("nan"),
                          "bound": float("inf")})
            continue
        err = np.repeat(pred[s_idx] - y_idx, reps)
        w = np.repeat(fm.importance_weights(accept[s_idx], a_k[s_idx]), reps)
        max_w = max(max_w, float(w.max()))
        stats.append({"group": g, **fm.overlap_bound(err, w)})
    return stats, max_w


def _fit_predictor(torch, predictor, popt, obs_all, mem_s, mem_y, groups_of, accept, a_k, cfg, rng,
                   weighted: bool) -> float:
    """25 Adam steps of per-group-normalised (w-weighted) BCE on batches of the accepted memory."""
    w_tab = fm.importance_weights(accept, a_k) if weighted else np.ones(len(accept))
    last = float("nan")
    for _ in range(cfg.predictor_steps):
        idx = rng.integers(len(mem_s), size=cfg.predictor_batch)
        s, y = mem_s[idx], mem_y[idx]
        logits = predictor(obs_all[s]).squeeze(-1)
        loss_i = torch.nn.functional.binary_cross_entropy_with_logits(
            logits, torch.from_numpy(y.astype(np.float32)), reduction="none")
        w = torch.from_numpy(w_tab[s].astype(np.float32))
        g = torch.from_numpy(groups_of[s])
        loss = sum((w * loss_i * (g == k)).sum() / (w * (g == k)).sum() for k in (0, 1) if bool((g == k).any()))
        popt.zero_grad()
        loss.backward()
        popt.step()
        last = float(loss.detach())
    return last


def _ppo_update(torch, nets, opt, obs_all, S, A, adv, returns, logp_old, D_obs, D_prev, a_k_tab, groups_of,
                c, cfg, rng) -> None:
    """cfg.epochs passes of PPO-clip over shuffled minibatches (the last one dropped when short)."""
    policy = nets["policy"]
    n = len(S)
    b = n // cfg.batch_size
    for _ in range(cfg.epochs):
        perm = rng.permutation(n)[:b * cfg.batch_size].reshape(b, cfg.batch_size)
        a_hat = torch.from_numpy(shaped_advantage(cfg, adv[perm], D_obs[perm], D_prev[perm]))
        use_reg = c is not None and cfg.beta2 > 0
        q = torch.from_numpy(renyi_row_weights(groups_of[S[perm]], c) / a_k_tab[S[perm]]) if use_reg else None
        obs_e = obs_all[torch.from_numpy(S[perm])]
        act_e = torch.from_numpy(A[perm])
        ret_e = torch.from_numpy(returns[perm].astype(np.float32))
        logp_e = torch.from_numpy(logp_old[perm])
        for row in range(b):
            obs = obs_e[row]
            logits, value = policy(obs)
            logp_all = torch.log_softmax(logits, dim=-1)
            logp = logp_all.gather(1, act_e[row][:, None]).squeeze(1).double()
            ratio = torch.exp(logp - logp_e[row])
            l_clip = -torch.minimum(ratio * a_hat[row],
                                    torch.clamp(ratio, 1 - cfg.clip, 1 + cfg.clip) * a_hat[row]).mean()
            l_v = torch.nn.functional.mse_loss(value, ret_e[row])
            loss = l_clip + cfg.vf_coef * l_v
            if use_reg:     # R = Σ_g c_g mean_g((1 − π)² / a_K) / Σ c_g, as row weights q (÷ a_K folded in)
                loss = loss + cfg.beta2 * (q[row] * (1 - torch.exp(logp_all[:, 1]).double()) ** 2).sum()
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), cfg.max_grad_norm)   # joint, as SB3
            opt.step()
