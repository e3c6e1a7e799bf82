"""Next-scale autoregressive transformers: VAR (explicit deep stack) and VIAR (pre-blocks,
one implicit equilibrium block, post-blocks). Pure torch; no Dagster import.

Notation (shapes): B batch, K scales (p_1..p_K), L = Σ p_k² tokens, C width, V codebook size,
Cvae latent channels. Token order: scale by scale, row-major inside a scale.

VAR (spec "Background: VAR"):
    x = [sos = class_emb(y) + pos_start, word_embed(teacher-forcing inputs)] + pos + lvl_embed
    x ← AdaLN blocks under the block-causal mask (a token attends to its own and earlier scales)
    logits = head(AdaLN-before-head(x)),   CE averaged uniformly over the L tokens.
VIAR (spec "VIAR modifications"): p pre-blocks → x (the injection); z⁰ = x;
    z^{t+1} = f_imp(Proj([z^t, x]), c), Proj = Linear(2C,2C) → GELU(tanh) → Linear(2C,C),
    f_imp one AdaLN block; post-blocks consume z*. Training: S-JFB (n ~ U{0..N} detached
    iterations, then m ~ U{1..M} with gradient; same count for every scale). Inference: a
    per-scale iteration schedule c_k with a KV cache of the implicit block grouped by iteration.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class ARConfig:
    kind: str                       # "var" | "viar"
    vocab: int
    cvae: int
    scales: tuple[int, ...]
    num_classes: int
    width: int = 64
    heads: int = 4
    depth: int = 8                  # VAR: number of blocks
    pre: int = 1                    # VIAR: pre-blocks
    post: int = 1                   # VIAR: post-blocks
    mlp_ratio: float = 4.0
    gamma_init: float = 1e-5        # AdaLN γ init: blocks start near identity
    damping: float = 1.0            # VIAR: z ← (1−α) z + α f(z); 1.0 = the paper (no damping)

    def __post_init__(self):
        if self.kind not in ("var", "viar"):
            raise ValueError(f"kind must be 'var' or 'viar', got {self.kind!r}")
        if self.width % self.heads:
            raise ValueError(f"width {self.width} is not divisible by heads {self.heads}")

    @property
    def tokens(self) -> int:
        return int(sum(p * p for p in self.scales))

    @property
    def name(self) -> str:
        return f"VAR-d{self.depth}" if self.kind == "var" else f"VIAR-p{self.pre}"

    def to_dict(self) -> dict:
        d = asdict(self)
        d["scales"] = list(self.scales)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "ARConfig":
        return cls(**{**d, "scales": tuple(d["scales"])})


def level_ids(scales: Sequence[int]) -> torch.Tensor:
    """(L,) scale index of every token."""
    return torch.cat([torch.full((p * p,), k, dtype=torch.long) for k, p in enumerate(scales)])


def block_causal_mask(scales: Sequence[int]) -> torch.Tensor:
    """(L, L) bool, True where query i may attend key j: level(j) ≤ level(i)."""
    lv = level_ids(scales)
    return lv[None, :] <= lv[:, None]


class Attention(nn.Module):
    """Multi-head attention with L2-normalised q, k and a learnable per-head logit scale."""

    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.log_scale = nn.Parameter(torch.full((1, heads, 1, 1), math.log(4.0)))

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None,
                past: tuple[torch.Tensor, torch.Tensor] | None = None):
        """x (B, T, C) → (out (B, T, C), (k, v) of these T tokens, each (B, H, T, C/H)).
        `past` (k, v) of earlier tokens are prepended to the keys/values (KV cache)."""
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        q = F.normalize(q, dim=-1) * self.log_scale.clamp(max=math.log(100.0)).exp()
        k = F.normalize(k, dim=-1)
        new_kv = (k, v)
        if past is not None:
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=1.0)
        return self.proj(out.transpose(1, 2).reshape(B, T, C)), new_kv


class AdaLNBlock(nn.Module):
    """x += γ1·Attn(LN(x)(1+s1)+b1); x += γ2·FFN(LN(x)(1+s2)+b2), (γ, s, b) = Linear(SiLU(c))."""

    def __init__(self, width: int, heads: int, mlp_ratio: float, gamma_init: float):
        super().__init__()
        self.width = width
        self.ln1 = nn.LayerNorm(width, elementwise_affine=False, eps=1e-6)
        self.ln2 = nn.LayerNorm(width, elementwise_affine=False, eps=1e-6)
        self.attn = Attention(width, heads)
        hidden = int(round(width * mlp_ratio))
        self.ffn = nn.Sequential(nn.Linear(width, hidden), nn.GELU(approximate="tanh"), nn.Linear(hidden, width))
        self.ada = nn.Sequential(nn.SiLU(), nn.Linear(width, 6 * width))
        with torch.no_grad():
            self.ada[-1].weight[: 2 * width].mul_(gamma_init)     # γ1, γ2 ≈ 0: near identity
            self.ada[-1].weight[2 * width:].mul_(0.5)
            self.ada[-1].bias.zero_()

    def forward(self, x, cond, mask=None, past=None):
        g1, g2, s1, s2, b1, b2 = self.ada(cond).view(-1, 1, 6, self.width).unbind(2)
        a, kv = self.attn(self.ln1(x) * (1 + s1) + b1, mask, past)
        x = x + g1 * a
        x = x + g2 * self.ffn(self.ln2(x) * (1 + s2) + b2)
        return x, kv


class NextScaleAR(nn.Module):
    def __init__(self, cfg: ARConfig):
        super().__init__()
        self.cfg = cfg
        C = cfg.width
        self.first_l = cfg.scales[0] ** 2
        self.class_emb = nn.Embedding(cfg.num_classes + 1, C)      # index num_classes = unconditional
        self.pos_start = nn.Parameter(torch.empty(1, self.first_l, C))
        self.word_embed = nn.Linear(cfg.cvae, C)
        self.pos = nn.Parameter(torch.empty(1, cfg.tokens, C))
        self.lvl_embed = nn.Embedding(len(cfg.scales), C)
        for t in (self.pos_start, self.pos, self.lvl_embed.weight):
            nn.init.trunc_normal_(t, std=0.02)
        nn.init.trunc_normal_(self.class_emb.weight, std=0.02)
        self.register_buffer("levels", level_ids(cfg.scales), persistent=False)
        self.register_buffer("mask", block_causal_mask(cfg.scales), persistent=False)

        def block():
            return AdaLNBlock(C, cfg.heads, cfg.mlp_ratio, cfg.gamma_init)

        if cfg.kind == "var":
            self.blocks = nn.ModuleList(block() for _ in range(cfg.depth))
        else:
            self.pre = nn.ModuleList(block() for _ in range(cfg.pre))
            self.implicit = block()
            self.proj = nn.Sequential(nn.Linear(2 * C, 2 * C), nn.GELU(approximate="tanh"), nn.Linear(2 * C, C))
            self.post = nn.ModuleList(block() for _ in range(cfg.post))
        self.head_ada = nn.Sequential(nn.SiLU(), nn.Linear(C, 2 * C))
        self.head_ln = nn.LayerNorm(C, elementwise_affine=False, eps=1e-6)
        self.head = nn.Linear(C, cfg.vocab)

    # -------------------------------------------------------------------- pieces
    def check_labels(self, labels: torch.Tensor, allow_unconditional: bool = False) -> None:
        top = self.cfg.num_classes + (1 if allow_unconditional else 0)
        if labels.numel() and (int(labels.min()) < 0 or int(labels.max()) >= top):
            raise ValueError(f"class label outside the conditioning set: range [{int(labels.min())}, "
                             f"{int(labels.max())}], expected 0..{self.cfg.num_classes - 1}")

    def embed(self, tf_inputs: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        """tf_inputs (B, L − p_1², Cvae), cond (B, C) → x (B, L, C)."""
        B = tf_inputs.shape[0]
        sos = cond[:, None, :].expand(B, self.first_l, -1) + self.pos_start
        x = torch.cat([sos, self.word_embed(tf_inputs)], dim=1)
        return x + self.pos + self.lvl_embed(self.levels)[None]

    def head_logits(self, x, cond):
        scale, shift = self.head_ada(cond).view(-1, 1, 2, self.cfg.width).unbind(2)
        return self.head(self.head_ln(x) * (1 + scale) + shift)

    def implicit_step(self, z, inj, cond, mask=None, past=None):
        """One fixed-point iteration z ↦ f_imp(Proj([z, x]), c) (damped if damping < 1)."""
        out, kv = self.implicit(self.proj(torch.cat([z, inj], dim=-1)), cond, mask, past)
        if self.cfg.damping < 1.0:
            out = (1 - self.cfg.damping) * z + self.cfg.damping * out
        return out, kv

    # -------------------------------------------------------------------- training forward
    def forward(self, tf_inputs: torch.Tensor, labels: torch.Tensor, n_nograd: int = 0,
                m_grad: int = 1) -> torch.Tensor:
        """Teacher-forced logits (B, L, V). labels (B,) may include num_classes (dropped label).

        VIAR: n_nograd detached iterations (no graph kept), then m_grad iterations with
        gradient, the injection not detached in the second phase (S-JFB)."""
        self.check_labels(labels, allow_unconditional=True)
        cond = self.class_emb(labels)
        x = self.embed(tf_inputs, cond)
        if self.cfg.kind == "var":
            for blk in self.blocks:
                x, _ = blk(x, cond, self.mask)
            return self.head_logits(x, cond)
        for blk in self.pre:
            x, _ = blk(x, cond, self.mask)
        inj, z = x, x
        if n_nograd > 0:
            with torch.no_grad():
                zd, injd, condd = z.detach(), inj.detach(), cond.detach()
                for _ in range(n_nograd):
                    zd, _ = self.implicit_step(zd, injd, condd, self.mask)
            z = zd.detach()
        for _ in range(m_grad):
            z, _ = self.implicit_step(z, inj, cond, self.mask)
        for blk in self.post:
            z, _ = blk(z, cond, self.mask)
        return self.head_logits(z, cond)

    @torch.no_grad()
    def fixed_point_trace(self, tf_inputs: torch.Tensor, labels: torch.Tensor, iterations: int) -> dict:
        """Teacher-forced fixed-point iteration over the whole sequence (training semantics).

        Returns {"relative_residual": (iterations, K) ‖z^{t+1} − z^t‖/‖z^t‖ per scale,
                 "cosine": (iterations, K) mean per-sample cosine of successive iterates}."""
        if self.cfg.kind != "viar":
            raise ValueError("fixed_point_trace needs a VIAR model")
        cond = self.class_emb(labels)
        x = self.embed(tf_inputs, cond)
        for blk in self.pre:
            x, _ = blk(x, cond, self.mask)
        z = x
        res, cos = [], []
        for _ in range(iterations):
            z_new, _ = self.implicit_step(z, x, cond, self.mask)
            r_row, c_row = [], []
            for k in range(len(self.cfg.scales)):
                sel = self.levels == k
                r, c = _residual_stats(z[:, sel], z_new[:, sel])
                r_row.append(r)
                c_row.append(c)
            res.append(r_row)
            cos.append(c_row)
            z = z_new
        return {"relative_residual": np.asarray(res), "cosine": np.asarray(cos)}


def _residual_stats(z_old: torch.Tensor, z_new: torch.Tensor) -> tuple[float, float]:
    """(‖Δ‖/‖z_old‖ over the whole block, mean per-sample cosine) for tensors (B, T, C)."""
    rel = float((z_new - z_old).norm() / z_old.norm().clamp_min(1e-12))
    cos = float(F.cosine_similarity(z_new.flatten(1), z_old.flatten(1), dim=1).mean())
    return rel, cos


# ------------------------------------------------------------------------ schedules
def parse_schedule(name: str, num_scales: int) -> list[int]:
    """'con8' → [8]*K; 'dec8-2' → np.linspace(8, 2, K, dtype=int) (coarsest → finest);
    'cal:4,4,3,2' → the explicit list. Validated by validate_schedule."""
    if name.startswith("con"):
        sched = [int(name[3:])] * num_scales
    elif name.startswith("dec"):
        a, b = (int(v) for v in name[3:].split("-"))
        sched = np.linspace(a, b, num_scales, dtype=int).tolist()
    elif name.startswith("cal:"):
        sched = [int(v) for v in name[4:].split(",")]
    else:
        raise ValueError(f"unknown schedule {name!r}: use conC, decA-B or cal:c1,...,cK")
    validate_schedule(sched, num_scales)
    return sched


def validate_schedule(schedule: Sequence[int], num_scales: int) -> None:
    if len(schedule) != num_scales:
        raise ValueError(f"iteration schedule {list(schedule)} has length {len(schedule)}, "
                         f"the model has {num_scales} scales")
    if any(int(c) != c or c < 1 for c in schedule):
        raise ValueError(f"iteration schedule {list(schedule)} must hold integers ≥ 1")


# ------------------------------------------------------------------------ sampling
def top_p_sample(logits: torch.Tensor, top_p: float, top_k: int, generator: torch.Generator) -> torch.Tensor:
    """Nucleus (and optional top-k) sampling of logits (B, T, V) → ids (B, T)."""
    B, T, V = logits.shape
    if 0 < top_k < V:
        kth = logits.topk(top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = logits.softmax(-1)
    sorted_p, order = probs.sort(dim=-1, descending=True)
    if top_p < 1.0:
        drop = sorted_p.cumsum(-1) - sorted_p > top_p       # always keeps the most likely token
        sorted_p = sorted_p.masked_fill(drop, 0.0)
    choice = torch.multinomial(sorted_p.reshape(-1, V), 1, generator=generator)
    return order.reshape(-1, V).gather(1, choice).reshape(B, T)


@torch.no_grad()
def generate(model: NextScaleAR, tokenizer, labels: torch.Tensor, schedule: Sequence[int] | None,
             cfg_scale: float, top_p: float, top_k: int, generator: torch.Generator,
             teacher_tokens: torch.Tensor | None = None, record: bool = False) -> dict:
    """Scale-by-scale generation with a KV cache and classifier-free guidance.

    labels (B,) in 0..num_classes−1; schedule: per-scale implicit iterations (VIAR; None for
    VAR). CFG ramp t_k = cfg·k/(K−1), logits = (1+t)·cond − t·uncond. The implicit block's
    cache is grouped by iteration: iteration `it` at scale k attends to the K/V that iteration
    `it` produced at earlier scales (training semantics); an iteration beyond what earlier
    scales ran sees only the scales that ran it. teacher_tokens (B, L) force the chosen ids
    (used to test train/test consistency). With cfg_scale = 0 the guided logits are the
    conditional ones, so the unconditional stream is not run (half the work; the calibration's
    teacher-forced NLL). Returns {"images" (B, C, H, W), "tokens" (B, L),
    "logits" (B, L, V) guided logits, "trace": [(scale k, t, ‖z^{t+1} − z^t‖/‖z^t‖, cosine)] with
    z⁰ = x the injection (conditional half of the batch; only when record=True)}.
    """
    cfg = model.cfg
    K = len(cfg.scales)
    model.check_labels(labels)
    if cfg.kind == "viar":
        if schedule is None:
            raise ValueError("VIAR generation needs a per-scale iteration schedule")
        validate_schedule(schedule, K)
    B = labels.shape[0]
    guided_cfg = cfg_scale != 0.0                       # two streams (cond, uncond) only when guiding
    streams = torch.cat([labels, torch.full_like(labels, cfg.num_classes)]) if guided_cfg else labels
    cond = model.class_emb(streams)
    next_x = cond[:, None, :].expand(len(streams), model.first_l, -1) + model.pos_start
    f_hat = None
    caches: dict = {}
    tokens, all_logits, trace = [], [], []
    start = 0
    for k, p in enumerate(cfg.scales):
        l = p * p
        x = next_x + model.pos[:, start:start + l] + model.lvl_embed.weight[k]
        if cfg.kind == "var":
            for i, blk in enumerate(model.blocks):
                x, kv = blk(x, cond, None, caches.get(("b", i)))
                caches[("b", i)] = _append(caches.get(("b", i)), kv)
        else:
            for i, blk in enumerate(model.pre):
                x, kv = blk(x, cond, None, caches.get(("pre", i)))
                caches[("pre", i)] = _append(caches.get(("pre", i)), kv)
            z = x
            for it in range(int(schedule[k])):
                z_new, kv = model.implicit_step(z, x, cond, None, caches.get(("imp", it)))
                caches[("imp", it)] = _append(caches.get(("imp", it)), kv)
                if record:
                    trace.append((k, it, *_residual_stats(z[:B], z_new[:B])))
                z = z_new
            x = z
            for i, blk in enumerate(model.post):
                x, kv = blk(x, cond, None, caches.get(("post", i)))
                caches[("post", i)] = _append(caches.get(("post", i)), kv)
        logits = model.head_logits(x, cond)
        t = cfg_scale * k / max(K - 1, 1)
        guided = (1 + t) * logits[:B] - t * logits[B:] if guided_cfg else logits
        if teacher_tokens is not None:
            ids = teacher_tokens[:, start:start + l]
        else:
            ids = top_p_sample(guided, top_p, top_k, generator)
        tokens.append(ids)
        all_logits.append(guided)
        h = tokenizer.scale_contribution(k, ids)
        f_hat = h if f_hat is None else f_hat + h
        if k < K - 1:
            nxt = F.interpolate(f_hat, size=(cfg.scales[k + 1],) * 2, mode="area") \
                if cfg.scales[k + 1] != f_hat.shape[-1] else f_hat
            emb = model.word_embed(nxt.flatten(2).transpose(1, 2))
            next_x = torch.cat([emb, emb], dim=0) if guided_cfg else emb
        start += l
    return {"images": tokenizer.decode_latent(f_hat), "tokens": torch.cat(tokens, 1),
            "logits": torch.cat(all_logits, 1), "trace": trace}


def _append(cache, kv):
    if cache is None:
        return kv
    return torch.cat([cache[0], kv[0]], dim=2), torch.cat([cache[1], kv[1]], dim=2)


# ------------------------------------------------------------------------ training
def cosine_lr(step: int, total: int, warmup: int, base: float, final_fraction: float = 0.01) -> float:
    if step < warmup:
        return base * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return base * (final_fraction + (1 - final_fraction) * 0.5 * (1 + math.cos(math.pi * progress)))


def train_ar(model: NextScaleAR, tf_inputs: np.ndarray, tokens: np.ndarray, labels: np.ndarray,
             steps: int, batch: int, lr: float, weight_decay: float, warmup: int, clip: float,
             label_drop: float, seed: int, jfb: tuple[int, int] | None = None,
             log: Callable[[str], None] = lambda m: None, device: str = "cpu") -> dict:
    """Teacher-forced next-scale training: AdamW(0.9, 0.95), linear warm-up + cosine to 1% of
    lr, grad clip, label dropout (replaced by the unconditional class). VIAR: jfb = (N, M),
    n ~ U{0..N}, m ~ U{1..M} resampled every step (same for all scales).
    tf_inputs (n, L−p1², Cvae) float32; tokens (n, L) int64; labels (n,) int64.
    Returns {"losses", "n_iters", "m_iters", "seconds", "steps_per_second"}."""
    import time

    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    model.check_labels(torch.from_numpy(labels))
    if model.cfg.kind == "viar" and jfb is None:
        raise ValueError("VIAR training needs jfb=(N, M)")
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2 and "pos" not in n and "emb" not in n]
    no_decay = [p for n, p in model.named_parameters() if not (p.ndim >= 2 and "pos" not in n and "emb" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=lr, betas=(0.9, 0.95))
    model.to(device)
    x_all, t_all = torch.from_numpy(tf_inputs).to(device), torch.from_numpy(tokens).to(device)
    y_all = torch.from_numpy(labels)
    losses, n_hist, m_hist = [], [], []
    model.train()
    start = time.perf_counter()
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = cosine_lr(step, steps, warmup, lr)
        idx = torch.randint(0, len(y_all), (batch,), generator=gen)
        y = y_all[idx].clone()
        y[torch.rand(batch, generator=gen) < label_drop] = model.cfg.num_classes
        n, m = (int(rng.integers(0, jfb[0] + 1)), int(rng.integers(1, jfb[1] + 1))) if jfb else (0, 1)
        dev_idx = idx.to(device)
        logits = model(x_all[dev_idx], y.to(device), n_nograd=n, m_grad=m)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), t_all[dev_idx].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        losses.append(float(loss.detach()))
        n_hist.append(n)
        m_hist.append(m)
        if (step + 1) % max(1, steps // 4) == 0:
            log(f"{model.cfg.name} step {step + 1}/{steps}: CE {np.mean(losses[-10:]):.3f} "
                f"({(step + 1) / (time.perf_counter() - start):.2f} steps/s)")
    if device != "cpu":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    model.eval()
    return {"losses": losses, "n_iters": n_hist, "m_iters": m_hist, "seconds": seconds,
            "steps_per_second": steps / max(seconds, 1e-9)}


# ------------------------------------------------------------------------ accounting
def count_parameters(model: nn.Module) -> int:
    return int(sum(p.numel() for p in model.parameters()))


def sampling_flops(cfg: ARConfig, schedule: Sequence[int] | None) -> float:
    """Analytic FLOPs (2 × multiply-adds) to generate ONE image with CFG (two streams) and a
    KV cache, tokenizer excluded. Per block call on l query tokens with P visible keys:
    qkv+proj 4C²l, FFN 2rC²l, attention 2lPC, AdaLN 6C²; the implicit iteration adds
    Proj 6C²l; head 2C² + CVl; word embedding Cvae·C·l."""
    C, r, V = cfg.width, cfg.mlp_ratio, cfg.vocab
    K = len(cfg.scales)
    if cfg.kind == "viar":
        if schedule is None:
            raise ValueError("VIAR FLOPs need a schedule")
        validate_schedule(schedule, K)
    macs, seen = 0.0, 0
    for k, p in enumerate(cfg.scales):
        l = p * p
        seen += l
        block = 4 * C * C * l + 2 * r * C * C * l + 2 * l * seen * C + 6 * C * C
        if cfg.kind == "var":
            macs += cfg.depth * block
        else:
            macs += (cfg.pre + cfg.post) * block + int(schedule[k]) * (block + 6 * C * C * l)
        macs += 2 * C * C + C * V * l + cfg.cvae * C * l
    return float(2 * 2 * macs)


class DevicePeak:
    """Peak device memory of the code run inside `with DevicePeak(device) as peak:`.

    On CUDA: the peak statistics are reset on entry and `peak.bytes` is
    torch.cuda.max_memory_allocated() on exit (bytes; synchronised both ways), source
    "cuda_max_memory_allocated". On any other device there is no allocator peak to read
    (RSS is meaningless for this): `peak.bytes` stays NaN and `source` says that the
    deterministic measure is the saved-tensor bytes (saved_activation_bytes)."""

    def __init__(self, device: str):
        self.device = str(device)
        self.bytes = float("nan")

    @property
    def on_cuda(self) -> bool:
        return self.device.startswith("cuda")

    @property
    def source(self) -> str:
        return "cuda_max_memory_allocated" if self.on_cuda else "saved_tensor_bytes"

    def __enter__(self) -> "DevicePeak":
        if self.on_cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        return self

    def __exit__(self, *exc) -> bool:
        if self.on_cuda:
            torch.cuda.synchronize()
            self.bytes = float(torch.cuda.max_memory_allocated())
        return False


def saved_activation_bytes(model: NextScaleAR, tf_inputs: torch.Tensor, tokens: torch.Tensor,
                           labels: torch.Tensor, n_nograd: int = 0, m_grad: int = 1) -> int:
    """Bytes of activation storage kept for backward in one training step (deterministic).

    Every tensor packed by autograd's saved-tensor hooks during the forward pass is recorded
    by its storage (parameters and buffers excluded, shared storages counted once); the sum of
    those storages' sizes is the activation memory backward needs. No-grad iterations save
    nothing by construction; this measures it rather than assuming it."""
    exclude = {t.untyped_storage().data_ptr() for t in [*model.parameters(), *model.buffers()]}
    storages: dict[int, int] = {}

    def pack(t):
        s = t.untyped_storage()
        if s.data_ptr() not in exclude:
            storages[s.data_ptr()] = s.nbytes()
        return t

    model.train()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        logits = model(tf_inputs, labels, n_nograd=n_nograd, m_grad=m_grad)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens.reshape(-1))
    loss.backward()
    model.zero_grad(set_to_none=True)
    model.eval()
    return int(sum(storages.values()))


# ------------------------------------------------------------------------ calibration
@torch.no_grad()
def teacher_forced_scale_nll(model: NextScaleAR, tokenizer, tokens: torch.Tensor, labels: torch.Tensor,
                             schedule: Sequence[int] | None) -> np.ndarray:
    """(K,) mean NLL (nats/token) of each scale's held-out tokens under the given per-scale
    schedule, with the KV-cached inference path (so iteration counts act exactly as at sampling
    time) and no guidance."""
    out = generate(model, tokenizer, labels, schedule, cfg_scale=0.0, top_p=1.0, top_k=0,
                   generator=torch.Generator(device=labels.device), teacher_tokens=tokens)
    nll = F.cross_entropy(out["logits"].reshape(-1, model.cfg.vocab), tokens.reshape(-1),
                          reduction="none").reshape(tokens.shape)
    levels = model.levels
    return np.array([float(nll[:, levels == k].mean()) for k in range(len(model.cfg.scales))])


def calibrate_schedule(model: NextScaleAR, tokenizer, tokens: torch.Tensor, labels: torch.Tensor,
                       candidates: Sequence[int], converged: int, tolerance: float) -> dict:
    """The fewest per-scale iterations whose held-out quality is within `tolerance` of the
    converged schedule (all scales at `converged` iterations).

    Greedy from the coarsest scale: c_k = the smallest candidate such that the mean over all
    scales of the teacher-forced NLL, with scales < k at their calibrated counts and scales > k
    at `converged`, is ≤ (1 + tolerance) × the converged schedule's mean. Later scales are
    probed at `converged` because a coarse scale run with few iterations also degrades the
    scales that attend to it (its KV cache). Each accepted step leaves a schedule that meets
    the tolerance, and the last step's probe is the returned schedule, so the result meets it
    by induction (the all-converged schedule is the fallback at every scale). Returns
    {"schedule", "nll_converged" (K,), "nll_calibrated" (K,), "probes": [(k, c, mean nll)]}."""
    K = len(model.cfg.scales)
    reference = teacher_forced_scale_nll(model, tokenizer, tokens, labels, [converged] * K)
    budget = float(reference.mean()) * (1 + tolerance)
    chosen: list[int] = []
    probes = []
    for k in range(K):
        pick = converged
        for c in sorted(set(int(c) for c in candidates if c < converged)):
            trial = chosen + [c] + [converged] * (K - k - 1)
            mean_nll = float(teacher_forced_scale_nll(model, tokenizer, tokens, labels, trial).mean())
            probes.append((k, c, mean_nll))
            if mean_nll <= budget:
                pick = c
                break
        chosen.append(pick)
    final = teacher_forced_scale_nll(model, tokenizer, tokens, labels, chosen)
    return {"schedule": chosen, "nll_converged": reference, "nll_calibrated": final, "probes": probes}
