"""The LimiX in-context classifier — torch only, no Dagster.

`LimiX(config)`: TokenEncoder (tokens.py) → the shared InContextTransformer
(assets/common/pfn/model.py) with cell tokens, `arch` "snf" (LimiX's S→N→F) or "fsn"
(TabPFN-v2's F→S→N) over one parameter set, post-norm without LayerNorm affine, bias-free
(the released block) → readout of the query rows' y token (or, with `pool`, a one-query
attention pool over the row's tokens) → MLP → logits (B, n_query, MAX_CLASSES).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from assets.common.pfn.model import InContextTransformer, PFNConfig, count_parameters
from assets.limix.tokens import EMBEDDINGS, MAX_CLASSES, TokenEncoder


@dataclass(frozen=True)
class LimiXConfig:
    embedding: str = "rabel"
    arch: str = "snf"
    d_model: int = 32
    n_layers: int = 3
    n_heads: int = 4
    k: int = 16
    sigma: float = 0.5
    features_per_group: int = 2
    feature_ids: str = "subortho"
    pool: bool = False
    max_features: int = 64

    def __post_init__(self):
        if self.embedding not in EMBEDDINGS:
            raise ValueError(f"embedding {self.embedding!r} not in {EMBEDDINGS}")
        if self.arch not in ("snf", "fsn"):
            raise ValueError(f"arch must be snf or fsn, got {self.arch!r}")

    def backbone(self) -> PFNConfig:
        return PFNConfig(d_model=self.d_model, n_heads=self.n_heads, n_layers=self.n_layers, arch=self.arch,
                         norm="post", norm_affine=False, bias=False)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class AttentionPool(nn.Module):
    """One learned query attending over the tokens (N, C, d) of a row → (N, d)."""

    def __init__(self, d: int):
        super().__init__()
        self.query = nn.Parameter(torch.randn(d) / d ** 0.5)
        self.key = nn.Linear(d, d, bias=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        scores = self.key(tokens) @ self.query / tokens.shape[-1] ** 0.5
        return (torch.softmax(scores, -1).unsqueeze(-1) * tokens).sum(-2)


class LimiX(nn.Module):
    def __init__(self, config: LimiXConfig):
        super().__init__()
        self.config = config
        d = config.d_model
        self.encoder = TokenEncoder(d, config.embedding, config.k, config.sigma, config.features_per_group,
                                    config.feature_ids, max_groups=config.max_features)
        self.backbone = InContextTransformer(config.backbone())
        self.pool = AttentionPool(d) if config.pool else None
        self.decoder = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, MAX_CLASSES))

    def forward(self, x: torch.Tensor, y_context: torch.Tensor, n_context: int, return_attention: bool = False,
                return_hidden: bool = False):
        """x (B, R, D) raw features (first n_context rows context), y_context (B, n_context)
        labels in [0, 10) → logits (B, R − n_context, 10); with return_attention /
        return_hidden also the backbone's PFNOutput."""
        if x.shape[-1] > self.config.max_features:
            raise ValueError(f"{x.shape[-1]} features, the model takes at most {self.config.max_features}")
        tokens = self.encoder(x, y_context, n_context)
        out = self.backbone(tokens, n_context, return_attention=return_attention, return_hidden=return_hidden)
        query = out.hidden[:, n_context:]
        row = self.pool(query) if self.pool is not None else query[:, :, -1]
        logits = self.decoder(row)
        if return_attention or return_hidden:
            return logits, out
        return logits


def task_loss(model: LimiX, batch: dict[str, Any]) -> torch.Tensor:
    """Cross-entropy on the query labels over the batch's first n_classes logits."""
    n = batch["n_context"]
    logits = model(batch["x"], batch["y"][:, :n], n)[..., : batch["n_classes"]]
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch["y"][:, n:].reshape(-1))


@torch.no_grad()
def predict_proba(model: LimiX, x: torch.Tensor, y_context: torch.Tensor, n_context: int, n_classes: int
                  ) -> torch.Tensor:
    model.eval()
    return torch.softmax(model(x, y_context, n_context)[..., :n_classes], -1)


__all__ = ["LimiX", "LimiXConfig", "AttentionPool", "task_loss", "predict_proba", "count_parameters"]
