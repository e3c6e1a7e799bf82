"""The causal PFN: row tokens, the shared in-context transformer, a Gaussian (or bar) head —
torch only, no Dagster.

    context row j  → token  W_c [x_j (d), y_j]              (standardised on D_obs)
    query q        → token  W_q [m_q (d), v_q (d)]          (mask channel separate from values:
                                                              v = 0 with m = 1 ≠ not intervened)
    tokens → InContextTransformer(arch "sn": queries attend to context only)
    query token → head → (mean, log variance) of y | do(X_S = v)      [Gaussian, cpu profile]
                       → K logits of a bar distribution                 [gpu profile]

Shapes: B tasks, N context rows (padding marked by ctx_valid), Q queries, d covariates (the
model's fixed width; fewer columns are zero-padded by the caller), D = d_model.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch import nn

from assets.common.pfn.heads import BarDistribution
from assets.common.pfn.model import InContextTransformer, PFNConfig

LOG_VAR_RANGE = (-9.0, 4.0)          # clamp of the Gaussian head's log variance (standardised units)


@dataclass(frozen=True)
class CausalPFNConfig:
    n_covariates: int = 4
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 4
    d_ff: int = 0
    head: str = "gaussian"           # "gaussian" | "bar"
    bins: int = 0                    # bar head only

    def __post_init__(self):
        if self.head not in ("gaussian", "bar"):
            raise ValueError(f"head must be 'gaussian' or 'bar', got {self.head!r}")
        if self.head == "bar" and self.bins < 2:
            raise ValueError("the bar head needs bins ≥ 2")

    def backbone(self) -> PFNConfig:
        return PFNConfig(d_model=self.d_model, n_heads=self.n_heads, n_layers=self.n_layers, d_ff=self.d_ff,
                         arch="sn", norm="pre")

    def to_dict(self) -> dict:
        return asdict(self)


class CausalPFN(nn.Module):
    """See the module docstring. `borders` (bins + 1,) are required for the bar head."""

    def __init__(self, config: CausalPFNConfig, borders: np.ndarray | None = None):
        super().__init__()
        self.config = config
        d, D = config.n_covariates, config.d_model
        self.context_encoder = nn.Linear(d + 1, D)
        self.query_encoder = nn.Linear(2 * d, D)
        self.backbone = InContextTransformer(config.backbone())
        out = 2 if config.head == "gaussian" else config.bins
        self.head = nn.Sequential(nn.Linear(D, D), nn.GELU(), nn.Linear(D, out))
        if config.head == "bar":
            if borders is None or len(borders) != config.bins + 1:
                raise ValueError(f"the bar head needs {config.bins + 1} borders")
            self.register_buffer("borders", torch.as_tensor(np.asarray(borders, dtype=np.float32)))

    @property
    def bar(self) -> BarDistribution | None:
        return BarDistribution(self.borders.cpu()) if self.config.head == "bar" else None

    def forward(self, ctx_x: torch.Tensor, ctx_y: torch.Tensor, ctx_valid: torch.Tensor, q_mask: torch.Tensor,
                q_val: torch.Tensor) -> torch.Tensor:
        """ctx_x (B, N, d), ctx_y (B, N), ctx_valid (B, N) bool, q_mask (B, Q, d), q_val (B, Q, d)
        → head outputs (B, Q, 2) [mean, log variance] or (B, Q, K) logits."""
        ctx = self.context_encoder(torch.cat([ctx_x, ctx_y.unsqueeze(-1)], dim=-1))
        qry = self.query_encoder(torch.cat([q_mask.to(q_val.dtype), q_val], dim=-1))
        n = ctx.shape[1]
        hidden = self.backbone(torch.cat([ctx, qry], dim=1), n_context=n, context_mask=ctx_valid.bool()).hidden
        return self.head(hidden[:, n:])

    def nll(self, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Per-query negative log-likelihood (B, Q) of standardised targets y (B, Q)."""
        if self.config.head == "gaussian":
            mean, log_var = out[..., 0], out[..., 1].clamp(*LOG_VAR_RANGE)
            return 0.5 * (math.log(2 * math.pi) + log_var + (y - mean) ** 2 / log_var.exp())
        return self.bar.nll(out, y)

    def moments(self, out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(predicted mean, predicted variance) (B, Q) in standardised units."""
        if self.config.head == "gaussian":
            return out[..., 0], out[..., 1].clamp(*LOG_VAR_RANGE).exp()
        bar = self.bar
        return bar.mean(out), bar.variance(out)


def tensors(batch, device: str = "cpu") -> dict[str, torch.Tensor]:
    """A prior.TaskBatch as float32 tensors on `device`."""
    f = lambda a: torch.as_tensor(np.asarray(a, dtype=np.float32), device=device)  # noqa: E731
    return {"ctx_x": f(batch.ctx_x), "ctx_y": f(batch.ctx_y),
            "ctx_valid": torch.as_tensor(batch.ctx_valid, device=device),
            "q_mask": torch.as_tensor(batch.q_mask, device=device), "q_val": f(batch.q_val), "y": f(batch.y)}


def batch_loss(model: CausalPFN, batch, device: str = "cpu") -> torch.Tensor:
    """Mean NLL over every query of a prior.TaskBatch."""
    t = tensors(batch, device)
    out = model(t["ctx_x"], t["ctx_y"], t["ctx_valid"], t["q_mask"], t["q_val"])
    return model.nll(out, t["y"]).mean()


@torch.no_grad()
def predict(model: CausalPFN, batch, device: str = "cpu", chunk: int = 256) -> dict[str, np.ndarray]:
    """Predictions for a prior.TaskBatch in node units: mean, var (B, Q); and the standardised
    NLL (B, Q) where targets exist. Tasks go through in chunks of `chunk`."""
    model.eval()
    means, variances, nlls = [], [], []
    B = batch.ctx_x.shape[0]
    t_all = tensors(batch, "cpu")
    for start in range(0, B, chunk):
        t = {k: v[start:start + chunk].to(device) for k, v in t_all.items()}
        out = model(t["ctx_x"], t["ctx_y"], t["ctx_valid"], t["q_mask"], t["q_val"])
        mean, var = model.moments(out)
        means.append(mean.cpu().numpy())
        variances.append(var.cpu().numpy())
        y = t["y"]
        nll = model.nll(out, torch.nan_to_num(y)).cpu().numpy()
        nlls.append(np.where(np.isfinite(y.cpu().numpy()), nll, np.nan))
    mean = np.concatenate(means).astype(np.float64)
    var = np.concatenate(variances).astype(np.float64)
    return {"mean": batch.to_raw(mean), "var": var * batch.y_sd[:, None] ** 2, "nll": np.concatenate(nlls)}


def build_model(config: CausalPFNConfig, seed: int, borders: np.ndarray | None = None) -> CausalPFN:
    torch.manual_seed(int(seed))
    return CausalPFN(config, borders)
