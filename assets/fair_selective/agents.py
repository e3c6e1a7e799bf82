"""PPO, A-PPO (POCAR advantage; oracle and naive-accepted), naive imputation and SELLF on the
resampling env, plus the gpu-profile baselines ELBERT-PO, FOCOPS and SELLF-censored — torch,
no Dagster import.

All agents share one training loop (`train_agent`); `AgentConfig.kind` selects the
estimator of Δ used for learning and the advantage:

  kind       estimator    advantage (each term min-max normalised per minibatch, then standardised)
  ppo        —            A_GAE
  oracle     full         β0·mm(A) + β1·mm(min(0, ω − |Δ|)) + βp·mm(min(0, −1[|Δ| > ω]·(|Δ_t| − |Δ_{t−1}|)))
  naive_acc  accepted     as oracle (Δ on accepted rows: ≡ 0 for TPR)
  naive_imp  imputation   β0·mm(A) + β1·mm(min(0, ω − |Δ|)); unweighted predictor, no Rényi term
  sellf      imputation   β0·mm(A) + β1·mm(min(0, ω/2 − |Δ|)); loss + β2·R; weighted predictor

The gpu-profile baselines (hyper-parameters from the reference configs; NOTES.md):

  elbert          PPO-clip with the fair advantage β0·std(A) − β1·Σ_g ∂h/∂z_g·(std(A_U_g)/B_g
                  − U_g/B_g²·std(A_B_g)), h = (max_g z_g − min_g z_g)², z_g = U_g/B_g the benefit rate
                  of group g from per-step rewards r_U_g = 1[g]·a·y (revealed), r_B_g = 1[g]·a; four
                  extra value heads (U_0, U_1, B_0, B_1). β1 is ELBERT's bias coefficient α.
  focops          first-order constrained policy optimisation: per-sample loss
                  (KL(π‖π_old) − ratio·(Â − ν·Â_C)/λ)·1[KL ≤ η], cost c_t = |Δ_obs| on accepted rows,
                  ν ← clip(ν + ν_lr·(J_C − b), 0, ν_max). β1 is the cost limit b, β2 is ν_max.
  sellf_censored  SELLF whose sampled action is forced to 0 where π(x) < censor (breaks overlap).

States are discrete (env.EnvSpec), so every network is evaluated on all S states once per
rollout ("one batched pass") and looked up per step; gradients use the same networks on the
minibatch observations. Only `kind == "oracle"` and the evaluator read true labels of rejected
rows: learners get `ResamplingEnv.reveal(a, y)` and the window's revealed sums.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

import numpy as np

from assets.fair_selective import fairness as fm
from assets.fair_selective.env import EnvSpec, ResamplingEnv

KINDS = ("ppo", "oracle", "naive_acc", "naive_imp", "sellf", "elbert", "focops", "sellf_censored")
# ELBERT and FOCOPS get the accepted-rows estimator, as the reference's env factory gives every
# agent that is neither PPO/POCAR-full nor a SELLF variant
ESTIMATOR = {"ppo": "full", "oracle": "full", "naive_acc": "accepted", "naive_imp": "imputation",
             "sellf": "imputation", "elbert": "accepted", "focops": "accepted", "sellf_censored": "imputation"}
PREDICTOR_KINDS = ("naive_imp", "sellf", "sellf_censored")
SELLF_KINDS = ("sellf", "sellf_censored")      # weighted predictor, ω/2, Rényi term
GPU_KINDS = ("elbert", "focops", "sellf_censored")
# AgentConfig fields added for the gpu baselines: written to sidecars only when set, so the
# checkpoints of the other agents keep their bytes
BASELINE_FIELDS = ("censor", "cost_gamma", "cost_gae_lambda", "focops_lam", "focops_eta", "focops_kl_stop",
                   "focops_nu_lr", "focops_l2", "focops_max_grad_norm", "focops_episode")


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
    # gpu baselines (reference defaults): SELLF-censored's forced-reject threshold on π(x);
    # FOCOPS's cost discount / GAE λ, λ (temperature), η (per-sample KL mask), δ (epoch early
    # stop on the mean KL), ν learning rate, L2 on the critics, policy grad-norm clip and the
    # episode cap of its cost returns (max_eps_len)
    censor: float = 0.0
    cost_gamma: float = 0.99
    cost_gae_lambda: float = 0.95
    focops_lam: float = 1.5
    focops_eta: float = 0.02
    focops_kl_stop: float = 0.02
    focops_nu_lr: float = 0.01
    focops_l2: float = 1e-3
    focops_max_grad_norm: float = 40.0
    focops_episode: int = 2000

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown agent kind {self.kind!r}; known: {KINDS}")
        if not 0.0 <= self.censor < 1.0:
            raise ValueError(f"censor must lie in [0, 1), got {self.censor}")

    @property
    def estimator(self) -> str:
        return ESTIMATOR[self.kind]

    @property
    def threshold(self) -> float:
        """The fairness threshold of the advantage term: ω/2 for SELLF (the sufficient condition), ω else."""
        return self.omega / 2 if self.kind in SELLF_KINDS else self.omega

    def as_dict(self) -> dict:
        """All fields, except the gpu-baseline fields still at their defaults (older sidecars)."""
        out = asdict(self)
        for f in fields(self):
            if f.name in BASELINE_FIELDS and out[f.name] == f.default:
                del out[f.name]
        return out


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


def value_heads_module(torch, d_in: int, hidden: int, heads: int):
    """`heads` separate value MLPs (64-64 tanh → 1) stacked on a leading axis, as the critic of
    actor_critic_module (orthogonal init, gain √2, last layer 1, zero biases).
    forward(obs (m, d)) → (m, heads)."""
    nn = torch.nn

    class ValueHeads(nn.Module):
        def __init__(self):
            super().__init__()
            shapes = [(d_in, hidden), (hidden, hidden), (hidden, 1)]
            self.weights = nn.ParameterList([nn.Parameter(torch.empty(heads, i, o)) for i, o in shapes])
            self.biases = nn.ParameterList([nn.Parameter(torch.zeros(heads, 1, o)) for _, o in shapes])
            for k, w in enumerate(self.weights):
                for net in range(heads):
                    block = torch.empty(w.shape[2], w.shape[1])
                    nn.init.orthogonal_(block, gain=math.sqrt(2) if k < 2 else 1.0)
                    with torch.no_grad():
                        w[net].copy_(block.T)

        def forward(self, obs):
            h = obs.unsqueeze(0).expand(heads, *obs.shape)
            for k in range(3):
                h = torch.baddbmm(self.biases[k], h, self.weights[k])
                if k < 2:
                    h = torch.tanh(h)
            return h[:, :, 0].T

    return ValueHeads()


# extra value heads of the gpu baselines: ELBERT's U_0, U_1, B_0, B_1; FOCOPS's cost critic
EXTRA_HEADS = {"elbert": 4, "focops": 1}


def build_networks(torch, obs_dim: int, cfg: AgentConfig) -> dict:
    """policy (actor + critic, see actor_critic_module), predictor (1 logit: linear or 64-64 tanh),
    and for ELBERT / FOCOPS `extra` (value_heads_module with EXTRA_HEADS[kind] heads)."""
    nn = torch.nn
    policy = actor_critic_module(torch, obs_dim, cfg.hidden)
    if cfg.predictor == "linear":
        predictor = nn.Linear(obs_dim, 1)
    elif cfg.predictor == "deep":
        predictor = nn.Sequential(nn.Linear(obs_dim, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 1))
    else:
        raise ValueError(f"predictor must be linear or deep, got {cfg.predictor!r}")
    nets = {"policy": policy, "predictor": predictor}
    if cfg.kind in EXTRA_HEADS:
        nets["extra"] = value_heads_module(torch, obs_dim, cfg.hidden, EXTRA_HEADS[cfg.kind])
    return nets


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


def censored_accept(accept: np.ndarray, censor: float) -> np.ndarray:
    """SELLF-censored's effective acceptance probability: 0 where π(x) < censor, π(x) elsewhere
    (the reference samples a ~ π and then forces a = 0 below the threshold)."""
    accept = np.asarray(accept, dtype=float)
    return np.where(accept < censor, 0.0, accept)


def elbert_bias(z_u: np.ndarray, z_b: np.ndarray) -> tuple[np.ndarray, float, np.ndarray]:
    """ELBERT's two-group bias of the benefit rates z_g = U_g / B_g: (z (2,), bias = max z − min z,
    ∂h/∂z (2,) for h = bias², i.e. 2·bias·(+1 at the arg-max, −1 at the arg-min))."""
    z = np.asarray(z_u, dtype=float) / np.asarray(z_b, dtype=float)
    bias = float(z.max() - z.min())
    sign = np.ones(2)
    sign[int(np.argmin(z))] = -1.0
    return z, bias, 2.0 * bias * sign


def elbert_fair_term(z_u: np.ndarray, z_b: np.ndarray, adv_u: np.ndarray, adv_b: np.ndarray) -> np.ndarray:
    """Σ_g ∂h/∂z_g · (A_U_g / B_g − U_g / B_g² · A_B_g): the advantage form of ∇h by the chain rule
    (∇(U/B) = ∇U/B − U·∇B/B²). adv_u, adv_b: (2, ...) per group → (...)."""
    z_u, z_b = np.asarray(z_u, dtype=float), np.asarray(z_b, dtype=float)
    _, _, grad_h = elbert_bias(z_u, z_b)
    shape = (2,) + (1,) * (np.ndim(adv_u) - 1)
    d_ratio = adv_u / z_b.reshape(shape) - (z_u / z_b ** 2).reshape(shape) * adv_b
    return np.tensordot(grad_h, d_ratio, axes=1)


def elbert_advantage(cfg: AgentConfig, adv: np.ndarray, adv_u: np.ndarray, adv_b: np.ndarray,
                     z_u: np.ndarray, z_b: np.ndarray) -> np.ndarray:
    """ELBERT's fair advantage of minibatch rows: β0·std(A) − β1·elbert_fair_term(std(A_U), std(A_B)),
    each advantage standardised per row. adv (b, m); adv_u, adv_b (2, b, m); z_u, z_b (2,) the
    rollout's per-episode sums of r_U_g, r_B_g. A group with B_g = 0 (no acceptance in the
    rollout) leaves the benefit rate undefined: the fairness term is then dropped."""
    out = cfg.beta0 * standardise(adv)
    if (np.asarray(z_b) > 0).all():
        out = out - cfg.beta1 * elbert_fair_term(z_u, z_b, standardise(adv_u), standardise(adv_b))
    return out


def focops_nu_update(nu: float, avg_cost: float, cost_limit: float, lr: float, nu_max: float) -> float:
    """FOCOPS's dual step ν ← clip(ν + lr·(J_C − b), 0, ν_max), J_C the mean episode cost return."""
    return float(min(max(nu + lr * (avg_cost - cost_limit), 0.0), nu_max))


def focops_loss(torch, logits, logp_old, actions, adv, cadv, nu: float, lam: float, eta: float):
    """FOCOPS's per-sample policy loss (m,): (KL(π_θ‖π_old)(s) − ratio·(Â − ν·Â_C)/λ)·1[KL(s) ≤ η].

    logits (m, 2) of π_θ; logp_old (m, 2) log-probabilities of π_old; actions (m,) long;
    adv, cadv (m,) reward / cost advantages (batch-normalised); the mask uses the detached KL."""
    logp = torch.log_softmax(logits, dim=-1).double()
    kl = (logp.exp() * (logp - logp_old)).sum(-1)
    ratio = torch.exp((logp - logp_old).gather(1, actions[:, None]).squeeze(1))
    return (kl - ratio * (adv - nu * cadv) / lam) * (kl.detach() <= eta).double()


def normalise_batch(v: np.ndarray) -> np.ndarray:
    """(v − mean) / (std + 1e-6) over the whole rollout (population std), FOCOPS's normalisation."""
    return (v - v.mean()) / (v.std() + 1e-6)


def segment_cost_returns(costs: np.ndarray, dones: np.ndarray, gamma: float, max_len: int,
                         carry: tuple[float, int] = (0.0, 0)) -> tuple[list[float], tuple[float, int]]:
    """Discounted cost returns Σ_t γ^t·c_t of the episodes that close in this rollout (at done, or
    after max_len steps: FOCOPS's max_eps_len), and the open episode's (return, length) carried
    into the next rollout."""
    ret, length = carry
    closed = []
    for c, d in zip(costs, dones):
        ret += gamma ** length * float(c)
        length += 1
        if d or length >= max_len:
            closed.append(ret)
            ret, length = 0.0, 0
    return closed, (ret, length)


class _Tables:
    """Per-state lookups of the current networks (one batched pass per rollout)."""

    def __init__(self, torch, nets: dict, obs):
        with torch.no_grad():
            logits, value = nets["policy"](obs)
            self.accept = torch.softmax(logits, dim=-1)[:, 1].double().numpy()
            self.value = value.double().numpy()
            self.pred = torch.sigmoid(nets["predictor"](obs)).squeeze(-1).double().numpy()
            self.logp = torch.log_softmax(logits, dim=-1).double().numpy()
            self.extra = nets["extra"](obs).double().numpy() if "extra" in nets else None


def train_agent(spec: EnvSpec, pool: np.ndarray, cfg: AgentConfig, seed: int, window: int, horizon: int,
                resource0: float, poison_hidden: bool = False, threads: int = 1, env_seed: int | None = None) -> dict:
    """Train one agent; returns {"state": state_dicts (actor, critic, predictor, extra value
    heads, history, memory counts), "curve": per-iteration rows, "bound_stats": per-group
    overlap statistics of the final predictor, "max_weight", "memory_rows"}.

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
    if cfg.kind == "elbert":        # one optimiser over actor, critic and the four fairness critics (SB3)
        opt = torch.optim.Adam([*nets["policy"].parameters(), *nets["extra"].parameters()], lr=cfg.lr, eps=1e-5,
                               fused=True)
    elif cfg.kind == "focops":      # Adam defaults, as the reference's three optimisers (disjoint parameters)
        opt = torch.optim.Adam([*nets["policy"].parameters(), *nets["extra"].parameters()], lr=cfg.lr, fused=True)
    else:
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
    nu, cost_carry = 0.0, (0.0, 0)          # FOCOPS's multiplier and open cost episode
    for it in range(iterations):
        tab = _Tables(torch, nets, obs_all)
        # the sampling table: SELLF-censored forces a = 0 where π < censor; a_K and the weights
        # keep the raw π (as the reference)
        act_tab = censored_accept(tab.accept, cfg.censor) if cfg.censor > 0 else tab.accept
        a_k_tab = fm.coverage(np.stack(history)) if history else tab.accept.copy()
        # window refill: the current policy on W random pool members (hidden labels stay hidden)
        fill_s = env.pool[rng.integers(len(env.pool), size=window)]
        fill_a = (rng.random(window) < act_tab[fill_s]).astype(np.int64)
        fill_y = env.prefill_labels(fill_s, fill_a)
        fill_hat = (rng.random(window) < tab.pred[fill_s]).astype(np.int64) if uses_predictor else 0 * fill_a
        win.fill(groups_of[fill_s], fill_a, fill_y, np.where(fill_a == 1, fill_y * fill_a, fill_hat))
        n = cfg.n_steps
        S = np.zeros(n, dtype=np.int64)
        A = np.zeros(n, dtype=np.int64)
        R, D_obs, D_prev, D_true, Yt = (np.zeros(n) for _ in range(5))
        done_flags = np.zeros(n, dtype=bool)
        starts = np.zeros(n, dtype=bool)
        residual = 0.0
        for t in range(n):
            starts[t] = env.t == 0
            i, s = env.draw()
            a = int(rng.random() < act_tab[s])
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
                                       tab.accept, a_k_tab, cfg, rng, weighted=cfg.kind in SELLF_KINDS)
            sched.step()
        extra_row = {}
        if cfg.kind == "elbert":
            # per-step fairness rewards from revealed labels only (Yt = a·y for an agent without predictor)
            g_t = groups_of[S]
            streams = [(g_t == g) * A * Yt for g in (0, 1)] + [(g_t == g) * A * 1.0 for g in (0, 1)]
            fair = [gae(r, tab.extra[S, j], done_flags, float(tab.extra[env.pool, j].mean()), cfg.gamma,
                        cfg.gae_lambda) for j, r in enumerate(streams)]
            n_episodes = max(1, int(starts.sum()))
            z = np.array([r.sum() for r in streams]) / n_episodes
            _elbert_update(torch, nets, opt, obs_all, S, A, adv, returns, logp_old,
                           np.stack([f[0] for f in fair]), np.stack([f[1] for f in fair]), z[:2], z[2:], cfg, rng)
            extra_row = {"benefit_gap": elbert_bias(z[:2], z[2:])[1] if (z[2:] > 0).all() else float("nan")}
        elif cfg.kind == "focops":
            # cost c_t = |Δ_obs| (accepted rows); an exact 0 gets a 1e-8-scale jitter, as the reference
            cost = np.where(D_obs == 0, rng.random(n) * 1e-8, D_obs)
            cadv, creturns = gae(cost, tab.extra[S, 0], done_flags, float(tab.extra[env.pool, 0].mean()),
                                 cfg.cost_gamma, cfg.cost_gae_lambda)
            closed, cost_carry = segment_cost_returns(cost, done_flags, cfg.cost_gamma, cfg.focops_episode,
                                                      cost_carry)
            avg_cost = float(np.mean(closed)) if closed else float("nan")
            if closed:
                nu = focops_nu_update(nu, avg_cost, cfg.beta1, cfg.focops_nu_lr, cfg.beta2)
            epochs = _focops_update(torch, nets, opt, obs_all, S, A, normalise_batch(adv), normalise_batch(cadv),
                                    returns, creturns, tab.logp, nu, cfg, rng)
            extra_row = {"nu": nu, "avg_cost": avg_cost, "epochs_run": epochs}
        elif not (cfg.kind in SELLF_KINDS and it == 0):
            c = fm.renyi_weights(groups_of[S], A, a_k_tab[S], Yt, cfg.measure) if cfg.kind in SELLF_KINDS else None
            _ppo_update(torch, nets, opt, obs_all, S, A, adv, returns, logp_old, D_obs, D_prev, a_k_tab,
                        groups_of, c, cfg, rng)
        if cfg.censor > 0:
            extra_row = {"censored_share": float((tab.accept[S] < cfg.censor).mean())}
        curve.append({"iteration": it, "steps": (it + 1) * n, "reward": float(R.sum()),
                      "delta_obs": float(D_obs.mean()), "delta_true": float(D_true.mean()),
                      "accept_rate": float(A.mean()), "residual": float(residual), "predictor_loss": pred_loss,
                      "episodes": len(episode_resources),
                      "last_resource": float(episode_resources[-1]) if episode_resources else float("nan"),
                      **extra_row})
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


def _elbert_update(torch, nets, opt, obs_all, S, A, adv, returns, logp_old, adv_f, ret_f, z_u, z_b, cfg,
                   rng) -> None:
    """ELBERT-PO: cfg.epochs passes of PPO-clip on the fair advantage (elbert_advantage, the benefit
    rates z from the whole rollout) with loss L_clip + vf_coef·(L_V + Σ_g L_V_U_g + Σ_g L_V_B_g).

    adv_f, ret_f: (4, n) advantages / λ-returns of the streams r_U_0, r_U_1, r_B_0, r_B_1."""
    policy, heads = nets["policy"], nets["extra"]
    params = [*policy.parameters(), *heads.parameters()]
    n = len(S)
    b = n // cfg.batch_size
    for _ in range(cfg.epochs):
        perm = rng.permutation(n)[:b * cfg.batch_size].reshape(b, cfg.batch_size)
        a_hat = torch.from_numpy(elbert_advantage(cfg, adv[perm], adv_f[:2][:, perm], adv_f[2:][:, perm], z_u, z_b))
        obs_e = obs_all[torch.from_numpy(S[perm])]
        act_e = torch.from_numpy(A[perm])
        ret_e = torch.from_numpy(returns[perm].astype(np.float32))
        ret_fe = torch.from_numpy(ret_f[:, perm].astype(np.float32))        # (4, b, m)
        logp_e = torch.from_numpy(logp_old[perm])
        for row in range(b):
            obs = obs_e[row]
            logits, value = policy(obs)
            logp = torch.log_softmax(logits, dim=-1).gather(1, act_e[row][:, None]).squeeze(1).double()
            ratio = torch.exp(logp - logp_e[row])
            l_clip = -torch.minimum(ratio * a_hat[row],
                                    torch.clamp(ratio, 1 - cfg.clip, 1 + cfg.clip) * a_hat[row]).mean()
            l_v = torch.nn.functional.mse_loss(value, ret_e[row])
            fair_v = heads(obs)                                                # (m, 4)
            l_v = l_v + sum(torch.nn.functional.mse_loss(fair_v[:, j], ret_fe[j, row]) for j in range(4))
            loss = l_clip + cfg.vf_coef * l_v
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm)      # joint over all five critics (SB3)
            opt.step()


def _focops_update(torch, nets, opt, obs_all, S, A, adv_n, cadv_n, returns, creturns, logp_old_tab, nu, cfg,
                   rng) -> int:
    """FOCOPS: up to cfg.epochs passes over shuffled minibatches; on each, the reward critic and
    the cost critic take an MSE (+ L2 focops_l2·Σθ²) step and the actor a focops_loss step (its
    gradient clipped to norm focops_max_grad_norm); after an epoch, stop when the mean KL(π‖π_old)
    over the rollout exceeds focops_kl_stop. The actor and the critic share stacked tensors
    (actor_critic_module), so one Adam step on the summed losses is the reference's separate
    steps (element-wise Adam, disjoint gradients) and the clip is applied to the actor slice
    only. Returns the number of epochs run."""
    policy, cost_v = nets["policy"], nets["extra"]
    n = len(S)
    b = n // cfg.batch_size
    logp_old_all = torch.from_numpy(logp_old_tab)                        # (S, 2) of π_old
    S_t, A_t = torch.from_numpy(S), torch.from_numpy(A)
    adv_t, cadv_t = torch.from_numpy(adv_n), torch.from_numpy(cadv_n)
    ret_t = torch.from_numpy(returns.astype(np.float32))
    cret_t = torch.from_numpy(creturns.astype(np.float32))
    epochs = 0
    for _ in range(cfg.epochs):
        epochs += 1
        perm = torch.from_numpy(rng.permutation(n)[:b * cfg.batch_size].reshape(b, cfg.batch_size))
        for row in range(b):
            idx = perm[row]
            obs = obs_all[S_t[idx]]
            logits, value = policy(obs)
            l_v = torch.nn.functional.mse_loss(value, ret_t[idx])
            l_v = l_v + cfg.focops_l2 * sum((w[1] ** 2).sum() for w in (*policy.weights, *policy.biases))
            l_c = torch.nn.functional.mse_loss(cost_v(obs)[:, 0], cret_t[idx])
            l_c = l_c + cfg.focops_l2 * sum((w ** 2).sum() for w in cost_v.parameters())
            l_pi = focops_loss(torch, logits, logp_old_all[S_t[idx]], A_t[idx], adv_t[idx], cadv_t[idx], nu,
                               cfg.focops_lam, cfg.focops_eta).mean()
            opt.zero_grad()
            (l_pi + l_v + l_c).backward()
            actor = [p.grad[0] for p in (*policy.weights, *policy.biases)]
            norm = torch.sqrt(sum((g ** 2).sum() for g in actor))
            coef = cfg.focops_max_grad_norm / (float(norm) + 1e-6)
            if coef < 1.0:
                for g in actor:
                    g.mul_(coef)
            opt.step()
        with torch.no_grad():
            logp_new = torch.log_softmax(policy(obs_all)[0], dim=-1).double()
            kl_state = (logp_new.exp() * (logp_new - logp_old_all)).sum(-1)
            if float(kl_state[S_t].mean()) > cfg.focops_kl_stop:
                break
    return epochs
