"""TD-MPC2-lite: a latent world model with a policy prior, in torch (no Dagster import).

Components (TD-MPC2, Hansen et al. 2024, shapes for a batch of B rows):
    encoder    h(s):      (B, obs_dim)            -> (B, latent)        SimNorm latent
    dynamics   d(z, a):   (B, latent + act_dim)   -> (B, latent)        SimNorm latent
    reward     R(z, a):   (B, latent + act_dim)   -> (B, num_bins)      two-hot logits
    Q heads    Q_k(z, a): (B, latent + act_dim)   -> (K, B, num_bins)   K = num_q, dropout in layer 1
    policy     π(z):      (B, latent)             -> tanh-squashed Gaussian on [-1, 1]^act_dim

Scalars (rewards, values) are predicted as distributions over `num_bins` bins of the symlog
transform on [vmin, vmax] and read back as expectations (`two_hot_inv`).

Every call of `next` adds its batch size to `dynamics_evaluations`; planners read that
counter, so "model evaluations per decision" is measured, never assumed.
"""
from __future__ import annotations

import copy
import math
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

# ------------------------------------------------------------------------------ allocator
_ALLOCATOR_TUNED = False


def tune_allocator() -> bool:
    """Keep freed heap memory in this process (glibc mallopt; a no-op elsewhere).

    Planning allocates many 1–13 MB tensors per decision (MPPI: 5 Q heads × 5,120 rows).
    glibc serves such blocks by mmap, or trims them back to the OS on free, so every new
    tensor page-faults its pages in again: `ln * w + b` on a (5, 5120, 128) tensor took 13 ms
    instead of 1 ms (measured). A fixed mmap threshold of 32 MiB (glibc's maximum) and a 1 GiB
    trim threshold make those blocks reuse the heap. Results are unchanged (allocation only).
    Returns whether the settings were applied."""
    global _ALLOCATOR_TUNED
    if _ALLOCATOR_TUNED:
        return True
    try:
        import ctypes
        import ctypes.util

        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        m_trim_threshold, m_mmap_threshold = -1, -3
        ok = bool(libc.mallopt(m_mmap_threshold, 32 * 1024 * 1024)) and bool(libc.mallopt(m_trim_threshold, 1 << 30))
    except (OSError, AttributeError):
        ok = False
    _ALLOCATOR_TUNED = ok
    return ok


# ------------------------------------------------------------------------------ transforms
def symlog(x: torch.Tensor) -> torch.Tensor:
    """sign(x) log(1 + |x|)."""
    return torch.sign(x) * torch.log1p(x.abs())


def symexp(x: torch.Tensor) -> torch.Tensor:
    """Inverse of symlog: sign(x) (exp|x| − 1)."""
    return torch.sign(x) * torch.expm1(x.abs())


def bin_centres(num_bins: int, vmin: float, vmax: float) -> torch.Tensor:
    """(num_bins,) equally spaced centres in symlog space."""
    return torch.linspace(vmin, vmax, num_bins)


def two_hot(x: torch.Tensor, num_bins: int, vmin: float, vmax: float) -> torch.Tensor:
    """Scalars (B,) or (B, 1) -> (B, num_bins) two-hot encoding of symlog(x).

    The mass is split between the two bins around symlog(x) so that the expectation over
    bin centres equals clamp(symlog(x), vmin, vmax) exactly.
    """
    x = symlog(x.reshape(-1)).clamp(vmin, vmax)
    bin_size = (vmax - vmin) / (num_bins - 1)
    pos = (x - vmin) / bin_size
    low = pos.floor().long().clamp(0, num_bins - 1)
    offset = (pos - low.float()).unsqueeze(-1)
    high = (low + 1).clamp(max=num_bins - 1)
    out = torch.zeros(x.shape[0], num_bins, dtype=x.dtype, device=x.device)
    out.scatter_(1, low.unsqueeze(-1), 1 - offset)
    out.scatter_add_(1, high.unsqueeze(-1), offset)
    return out


def two_hot_inv(logits: torch.Tensor, vmin: float, vmax: float) -> torch.Tensor:
    """Logits (..., num_bins) -> expected scalar (..., 1) in the original (symexp) space."""
    centres = torch.linspace(vmin, vmax, logits.shape[-1], device=logits.device, dtype=logits.dtype)
    return symexp((F.softmax(logits, dim=-1) * centres).sum(-1, keepdim=True))


def soft_ce(logits: torch.Tensor, target: torch.Tensor, num_bins: int, vmin: float,
            vmax: float) -> torch.Tensor:
    """Cross-entropy (B, 1) between logits (B, num_bins) and two-hot(target (B, 1))."""
    return -(two_hot(target, num_bins, vmin, vmax) * F.log_softmax(logits, dim=-1)).sum(-1, keepdim=True)


class SimNorm(nn.Module):
    """Simplicial normalisation: softmax over consecutive groups of `dim` features."""

    def __init__(self, dim: int = 8):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # the softmax written out: F.softmax over rows of 8 is ~4x slower on CPU (measured)
        shape = x.shape
        v = x.view(*shape[:-1], -1, self.dim)
        e = (v - v.amax(-1, keepdim=True)).exp()
        return (e / e.sum(-1, keepdim=True)).view(shape)


class NormedLinear(nn.Linear):
    """Linear -> (dropout) -> LayerNorm -> activation (Mish by default)."""

    def __init__(self, in_features: int, out_features: int, dropout: float = 0.0,
                 act: nn.Module | None = None):
        super().__init__(in_features, out_features)
        self.ln = nn.LayerNorm(out_features)
        self.act = act if act is not None else nn.Mish()
        self.dropout = nn.Dropout(dropout) if dropout else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = super().forward(x)
        if self.dropout is not None:
            x = self.dropout(x)
        return self.act(self.ln(x))


ACTIVATIONS = {"mish": nn.Mish, "silu": nn.SiLU}


def mlp(in_dim: int, hidden: list[int], out_dim: int, act: nn.Module | None = None,
        dropout: float = 0.0, activation: str = "mish") -> nn.Sequential:
    """NormedLinear hidden layers (dropout on the first only), then a plain or normed output.

    activation: "mish" (TD-MPC2) or "silu" (nearly the same curve, ~8x cheaper on CPU)."""
    dims = [in_dim, *hidden]
    layers: list[nn.Module] = [NormedLinear(dims[i], dims[i + 1], dropout=dropout * (i == 0),
                                            act=ACTIVATIONS[activation]())
                               for i in range(len(dims) - 1)]
    layers.append(NormedLinear(dims[-1], out_dim, act=act) if act is not None else nn.Linear(dims[-1], out_dim))
    return nn.Sequential(*layers)


class EnsembleMLP(nn.Module):
    """K independent MLPs evaluated as batched matmuls (TD-MPC2 vectorises its Q ensemble).

    Each head: hidden NormedLinear layers (Linear → dropout on layer 1 → LayerNorm with the
    head's own affine → Mish), then a plain Linear. Input (B, in) or (K, B, in) → (K, B, out).
    """

    def __init__(self, heads: int, in_dim: int, hidden: list[int], out_dim: int, dropout: float = 0.0,
                 activation: str = "mish"):
        super().__init__()
        self.act = {"mish": F.mish, "silu": F.silu}[activation]
        dims = [in_dim, *hidden, out_dim]
        self.heads, self.dropout = heads, dropout
        self.weights = nn.ParameterList()
        self.biases = nn.ParameterList()
        self.ln_weights = nn.ParameterList()
        self.ln_biases = nn.ParameterList()
        for i in range(len(dims) - 1):
            layers = [nn.Linear(dims[i], dims[i + 1]) for _ in range(heads)]  # default init per head
            self.weights.append(nn.Parameter(torch.stack([l.weight.detach().T for l in layers])))
            self.biases.append(nn.Parameter(torch.stack([l.bias.detach() for l in layers]).unsqueeze(1)))
            if i < len(dims) - 2:
                self.ln_weights.append(nn.Parameter(torch.ones(heads, 1, dims[i + 1])))
                self.ln_biases.append(nn.Parameter(torch.zeros(heads, 1, dims[i + 1])))

    def zero_last_layer(self) -> None:
        nn.init.zeros_(self.weights[-1])
        nn.init.zeros_(self.biases[-1])

    def forward(self, x: torch.Tensor, heads: torch.Tensor | None = None) -> torch.Tensor:
        """`heads` (index tensor): evaluate only those heads, (len(heads), B, out); each head
        is independent, so their outputs equal the same rows of the full ensemble's."""
        def pick(p: torch.Tensor) -> torch.Tensor:
            return p if heads is None else p[heads]

        k = self.heads if heads is None else int(heads.numel())
        if x.dim() == 2:
            x = x.unsqueeze(0).expand(k, -1, -1)
        last = len(self.weights) - 1
        for i, (w, b) in enumerate(zip(self.weights, self.biases)):
            x = torch.baddbmm(pick(b), x, pick(w))
            if i < last:
                if i == 0 and self.dropout and self.training:
                    x = F.dropout(x, self.dropout, training=True)
                # per-head affine as one fused op (mul + add allocate twice: slower on CPU)
                x = torch.addcmul(pick(self.ln_biases[i]), F.layer_norm(x, x.shape[-1:]), pick(self.ln_weights[i]))
                x = self.act(x)
        return x


# ------------------------------------------------------------------------------ config
@dataclass(frozen=True)
class ModelConfig:
    """Architecture and loss coefficients (TD-MPC2 defaults unless the profile scales them)."""

    obs_dim: int
    act_dim: int
    latent_dim: int = 64
    mlp_dim: int = 128
    enc_dim: int = 128
    simnorm_dim: int = 8
    num_q: int = 5
    dropout: float = 0.01
    num_bins: int = 101
    vmin: float = -10.0
    vmax: float = 10.0
    log_std_min: float = -10.0
    log_std_max: float = 2.0
    entropy_coef: float = 1e-4
    horizon: int = 3
    rho: float = 0.5
    consistency_coef: float = 20.0
    reward_coef: float = 0.1
    value_coef: float = 0.1
    lr: float = 3e-4
    enc_lr_scale: float = 0.3
    grad_clip_norm: float = 20.0
    tau: float = 0.01
    discount: float = 0.99
    activation: str = "mish"

    def to_dict(self) -> dict:
        return asdict(self)


def discount_from_episode_length(decisions_per_episode: int, denom: float = 5.0,
                                 low: float = 0.95, high: float = 0.995) -> float:
    """TD-MPC2's heuristic γ = (L/denom − 1)/(L/denom), clipped to [low, high]."""
    frac = decisions_per_episode / denom
    return float(min(max((frac - 1) / frac, low), high))


# ------------------------------------------------------------------------------ model
class WorldModel(nn.Module):
    """Encoder, latent dynamics, reward, Q ensemble (+ EMA target) and policy prior."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        za = cfg.latent_dim + cfg.act_dim
        act = cfg.activation
        self.encoder = mlp(cfg.obs_dim, [cfg.enc_dim], cfg.latent_dim, act=SimNorm(cfg.simnorm_dim), activation=act)
        self.dynamics = mlp(za, [cfg.mlp_dim, cfg.mlp_dim], cfg.latent_dim, act=SimNorm(cfg.simnorm_dim),
                            activation=act)
        self.reward_head = mlp(za, [cfg.mlp_dim, cfg.mlp_dim], cfg.num_bins, activation=act)
        self.q_heads = EnsembleMLP(cfg.num_q, za, [cfg.mlp_dim, cfg.mlp_dim], cfg.num_bins, dropout=cfg.dropout,
                                   activation=act)
        self.policy = mlp(cfg.latent_dim, [cfg.mlp_dim, cfg.mlp_dim], 2 * cfg.act_dim, activation=act)
        # TD-MPC2 zero-initialises the last layer of the reward and Q heads (predict 0 at start)
        nn.init.zeros_(self.reward_head[-1].weight)
        nn.init.zeros_(self.reward_head[-1].bias)
        self.q_heads.zero_last_layer()
        self.target_q_heads = copy.deepcopy(self.q_heads).requires_grad_(False)
        self.dynamics_evaluations = 0

    # -- components ---------------------------------------------------------------------
    def encode(self, obs: torch.Tensor) -> torch.Tensor:
        """(B, obs_dim) -> (B, latent)."""
        return self.encoder(obs)

    def next(self, z: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
        """d(z, a): (B, latent), (B, act) -> (B, latent); counts B model evaluations."""
        self.dynamics_evaluations += int(z.shape[0])
        return self.dynamics(torch.cat([z, a], dim=-1))

    def reward_logits(self, z: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
        return self.reward_head(torch.cat([z, a], dim=-1))

    def reward(self, z: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
        """Expected reward (B, 1)."""
        return two_hot_inv(self.reward_logits(z, a), self.cfg.vmin, self.cfg.vmax)

    def q_logits(self, z: torch.Tensor, a: torch.Tensor, target: bool = False,
                 heads: torch.Tensor | None = None) -> torch.Tensor:
        """(K, B, num_bins) logits of every Q head (online or EMA target), or of `heads` only."""
        za = torch.cat([z, a], dim=-1)
        ensemble = self.target_q_heads if target else self.q_heads
        return ensemble(za, heads)

    def q_all(self, z: torch.Tensor, a: torch.Tensor, target: bool = False,
              heads: torch.Tensor | None = None) -> torch.Tensor:
        """(K, B, 1) expected Q value of every head (the ensemble used for uncertainty), or
        (len(heads), B, 1) of the selected heads."""
        return two_hot_inv(self.q_logits(z, a, target, heads), self.cfg.vmin, self.cfg.vmax)

    def pi(self, z: torch.Tensor, generator: torch.Generator | None = None):
        """Policy prior. Returns (mean action, sampled action, log π(sample), entropy proxy).

        Both actions are tanh-squashed to [-1, 1]^act_dim; log π includes the tanh Jacobian.
        """
        mu, log_std = self.policy(z).chunk(2, dim=-1)
        log_std = self.cfg.log_std_min + 0.5 * (self.cfg.log_std_max - self.cfg.log_std_min) * (torch.tanh(log_std) + 1)
        eps = torch.randn(mu.shape, generator=generator, device=mu.device, dtype=mu.dtype)
        pre = mu + eps * log_std.exp()
        log_prob = (-0.5 * eps.pow(2) - log_std - 0.5 * math.log(2 * math.pi)).sum(-1, keepdim=True)
        action = torch.tanh(pre)
        log_prob = log_prob - torch.log(F.relu(1 - action.pow(2)) + 1e-6).sum(-1, keepdim=True)
        return torch.tanh(mu), action, log_prob

    # -- planning helpers ---------------------------------------------------------------
    def freeze(self) -> "WorldModel":
        """Eval mode (dropout off) and parameters without gradients, for planning."""
        self.eval()
        self.requires_grad_(False)
        return self

    def parameter_count(self) -> int:
        return sum(p.numel() for n, p in self.named_parameters() if not n.startswith("target_"))


# ------------------------------------------------------------------------------ training
class RunningScale:
    """TD-MPC2's running scale of Q values: EMA of the 5–95 % percentile range (≥ 1)."""

    def __init__(self, tau: float):
        self.tau = tau
        self.value = 1.0
        self.initialised = False

    def update(self, q: torch.Tensor) -> None:
        q = q.detach().float().reshape(-1)
        spread = float(torch.quantile(q, 0.95) - torch.quantile(q, 0.05))
        if not self.initialised:
            self.value, self.initialised = spread, True
        else:
            self.value += self.tau * (spread - self.value)

    def scale(self, q: torch.Tensor) -> torch.Tensor:
        return q / max(1.0, self.value)


class Learner:
    """TD-MPC2 update on (H+1)-step segments: world model + Q loss, then policy loss."""

    def __init__(self, model: WorldModel, generator: torch.Generator):
        self.model = model
        cfg = model.cfg
        self.gen = generator
        wm_params = [
            {"params": model.encoder.parameters(), "lr": cfg.lr * cfg.enc_lr_scale},
            {"params": model.dynamics.parameters()},
            {"params": model.reward_head.parameters()},
            {"params": model.q_heads.parameters()},
        ]
        self.optim = torch.optim.Adam(wm_params, lr=cfg.lr, foreach=True)   # one kernel per op, not per tensor
        self.pi_optim = torch.optim.Adam(model.policy.parameters(), lr=cfg.lr, eps=1e-5, foreach=True)
        self.scale = RunningScale(cfg.tau)

    def _two_random_heads(self) -> torch.Tensor:
        return torch.randperm(self.model.cfg.num_q, generator=self.gen, device=self.gen.device)[:2]

    def update(self, obs: torch.Tensor, action: torch.Tensor, reward: torch.Tensor) -> dict:
        """One gradient step.

        obs (H+1, B, obs_dim), action (H, B, act_dim), reward (H, B, 1) — consecutive
        decisions of the same episode. Returns the losses as floats.
        """
        m, cfg = self.model, self.model.cfg
        H = action.shape[0]
        m.train()
        with torch.no_grad():
            next_z = m.encode(obs[1:].reshape(-1, obs.shape[-1])).view(H, -1, cfg.latent_dim)
            _, pi_next, _ = m.pi(next_z.reshape(-1, cfg.latent_dim), self.gen)
            # min over 2 random target heads: only those two are evaluated (TD-MPC2's target)
            q_next = m.q_all(next_z.reshape(-1, cfg.latent_dim), pi_next, target=True,
                             heads=self._two_random_heads())
            q_next = q_next.min(0).values.view(H, -1, 1)
            td_target = reward + cfg.discount * q_next
        z = m.encode(obs[0])
        zs = [z]
        consistency = 0.0
        for t in range(H):
            z = m.dynamics(torch.cat([z, action[t]], dim=-1))  # training: not counted as planning
            consistency = consistency + cfg.rho ** t * F.mse_loss(z, next_z[t])
            zs.append(z)
        z_in = torch.stack(zs[:-1])                                     # (H, B, latent)
        za = torch.cat([z_in, action], dim=-1).reshape(H * z_in.shape[1], -1)
        reward_logits = m.reward_head(za).view(H, -1, cfg.num_bins)
        q_logits = m.q_heads(za).view(cfg.num_q, H, -1, cfg.num_bins)
        rho = torch.tensor([cfg.rho ** t for t in range(H)], device=obs.device).view(H, 1)
        reward_target = two_hot(reward, cfg.num_bins, cfg.vmin, cfg.vmax).view(H, -1, cfg.num_bins)
        value_target = two_hot(td_target, cfg.num_bins, cfg.vmin, cfg.vmax).view(H, -1, cfg.num_bins)
        reward_ce = -(reward_target * F.log_softmax(reward_logits, -1)).sum(-1)        # (H, B)
        value_ce = -(value_target * F.log_softmax(q_logits, -1)).sum(-1)               # (K, H, B)
        reward_loss = (rho * reward_ce).mean(-1).sum()
        value_loss = (rho * value_ce).mean(-1).sum()
        consistency, reward_loss = consistency / H, reward_loss / H
        value_loss = value_loss / (H * cfg.num_q)
        total = cfg.consistency_coef * consistency + cfg.reward_coef * reward_loss + cfg.value_coef * value_loss
        self.optim.zero_grad(set_to_none=True)
        total.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(
            [p for g in self.optim.param_groups for p in g["params"]], cfg.grad_clip_norm)
        self.optim.step()

        # policy: maximise scaled Q of 2 random heads (Q not updated) + entropy
        zs_pi = torch.stack(zs).detach().reshape(-1, cfg.latent_dim)
        _, a_pi, log_pi = m.pi(zs_pi, self.gen)
        m.q_heads.requires_grad_(False)
        q_pi = m.q_all(zs_pi, a_pi, heads=self._two_random_heads()).mean(0)   # only the 2 heads used
        m.q_heads.requires_grad_(True)
        self.scale.update(q_pi[: obs.shape[1]])
        weights = (torch.tensor([cfg.rho ** t for t in range(H + 1)], device=obs.device)
                   .repeat_interleave(obs.shape[1]).unsqueeze(-1))
        pi_loss = ((cfg.entropy_coef * log_pi - self.scale.scale(q_pi)) * weights).mean()
        self.pi_optim.zero_grad(set_to_none=True)
        pi_loss.backward()
        torch.nn.utils.clip_grad_norm_(m.policy.parameters(), cfg.grad_clip_norm)
        self.pi_optim.step()

        with torch.no_grad():  # EMA target Q
            for p, tp in zip(m.q_heads.parameters(), m.target_q_heads.parameters()):
                tp.lerp_(p, cfg.tau)
        return {"consistency": float(consistency.detach()), "reward_loss": float(reward_loss.detach()),
                "value_loss": float(value_loss.detach()), "pi_loss": float(pi_loss.detach()),
                "grad_norm": float(grad_norm)}


def state_dict_for_checkpoint(model: WorldModel) -> dict[str, torch.Tensor]:
    """A CPU copy of the weights (checkpoints are device-independent)."""
    return {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}


def make_generator(seed: int, device: str | torch.device = "cpu") -> torch.Generator:
    """A seeded torch.Generator on `device`: every random draw of the model, learner and
    planners uses the generator of the device its tensors live on (CUDA on the gpu profile)."""
    return torch.Generator(device=device).manual_seed(int(seed))


def model_device(model) -> torch.device:
    """Device of a model's parameters (CPU for parameter-free models such as the synthetic LQ system)."""
    params = getattr(model, "parameters", None)
    first = next(iter(params()), None) if callable(params) else None
    return first.device if first is not None else torch.device("cpu")


def model_from_state(state: dict[str, torch.Tensor], cfg: ModelConfig,
                     device: str | torch.device = "cpu") -> WorldModel:
    """Rebuild a frozen model on `device` from a checkpoint; raises ValueError naming
    mismatched tensors or non-finite weights."""
    model = WorldModel(cfg)
    expected = model.state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    wrong = [k for k in expected if k in state and tuple(state[k].shape) != tuple(expected[k].shape)]
    if missing or unexpected or wrong:
        raise ValueError(f"checkpoint does not fit ModelConfig(obs_dim={cfg.obs_dim}, act_dim={cfg.act_dim}, "
                         f"latent={cfg.latent_dim}, mlp={cfg.mlp_dim}): missing {missing[:3]}, "
                         f"unexpected {unexpected[:3]}, wrong shapes {wrong[:3]}")
    model.load_state_dict(state)
    bad = [k for k, v in state.items() if v.is_floating_point() and not torch.isfinite(v).all()]
    if bad:
        raise ValueError(f"checkpoint has non-finite weights in {bad[:5]}")
    return model.to(device).freeze()
