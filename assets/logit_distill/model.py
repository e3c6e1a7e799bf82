"""Models of the family p(y|x) = softmax(f(x)ᵀ g(y)), distillation objectives, training.

Torch only (imported by the caller through compute.torch(seed) so threads and determinism
are set); no Dagster. Shapes: N inputs of D features, k classes, d = representation dim.
Two encoders f share the bias-free heads: an MLP (vectors) and a small CNN (images, passed
flattened row-major as D = channels · image_size² features so every data path is the same).
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from typing import Callable

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

OBJECTIVES = ("kl", "l1", "l2", "ce")


ENCODERS = ("mlp", "cnn")


@dataclass(frozen=True)
class ModelConfig:
    """Architecture of the encoder f, then bias-free heads (a bias would leave the f(x)ᵀg(y)
    family).

    mlp: D → hidden (× depth, ReLU, dropout) → rep_dim.
    cnn: (channels, image_size, image_size) → depth blocks of [3×3 conv, stride 2, ReLU] with
         conv_width·2^b channels in block b → flatten → hidden (ReLU, dropout) → rep_dim.
         Strided convolutions instead of max-pooling: deterministic backward on CUDA.
    """

    input_dim: int
    rep_dim: int
    n_classes: int
    n_concepts: int = 0            # > 0: a concept head (concept-bottleneck teacher)
    hidden: int = 128
    depth: int = 3
    dropout: float = 0.1
    encoder: str = "mlp"           # "mlp" | "cnn"
    image_size: int = 0            # cnn only: side of the square input image [pixels]
    channels: int = 1              # cnn only
    conv_width: int = 16           # cnn only: channels of the first conv block

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class TrainConfig:
    """Adam; lr × warmup_factor for the first warmup_epochs epochs, then lr·γ^(e − warmup)."""

    epochs: int
    batch_size: int = 512
    lr: float = 1e-3
    gamma: float = 0.995
    warmup_epochs: int = 20
    warmup_factor: float = 1e-3

    def as_dict(self) -> dict:
        return asdict(self)


def learning_rate(config: TrainConfig, epoch: int) -> float:
    """Learning rate of 0-based epoch `epoch` (constant-factor phase, then exponential)."""
    if epoch < config.warmup_epochs:
        return config.lr * config.warmup_factor
    return config.lr * config.gamma ** (epoch - config.warmup_epochs)


class EmbeddingNet(nn.Module):
    """f: encoder to R^d; g: rows of `head.weight` (k, d); optional concept head (c, d)."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        if config.rep_dim >= config.n_classes - 1:
            raise ValueError(f"representation dimension d={config.rep_dim} must be < "
                             f"number of classes − 1 = {config.n_classes - 1} (diversity condition)")
        if config.encoder not in ENCODERS:
            raise ValueError(f"unknown encoder {config.encoder!r}; choose one of {ENCODERS}")
        self.config = config
        self.encoder = _mlp(config) if config.encoder == "mlp" else ConvEncoder(config)
        self.head = nn.Linear(config.rep_dim, config.n_classes, bias=False)
        nn.init.xavier_uniform_(self.head.weight)
        self.concept_head = None
        if config.n_concepts:
            self.concept_head = nn.Linear(config.rep_dim, config.n_concepts, bias=False)
            nn.init.xavier_uniform_(self.concept_head.weight)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """(embedding (N, d), class logits (N, k), concept logits (N, c) or None)."""
        f = self.encoder(x)
        concept = self.concept_head(f) if self.concept_head is not None else None
        return f, self.head(f), concept


def _mlp(config: ModelConfig) -> nn.Sequential:
    layers, width = [], config.input_dim
    for _ in range(config.depth):
        layers += [nn.Linear(width, config.hidden), nn.ReLU(), nn.Dropout(config.dropout)]
        width = config.hidden
    layers.append(nn.Linear(width, config.rep_dim))
    return nn.Sequential(*layers)


def conv_output_size(image_size: int, blocks: int) -> int:
    """Side of the feature map after `blocks` 3×3 convs with stride 2 and padding 1."""
    for _ in range(blocks):
        image_size = (image_size - 1) // 2 + 1
    return image_size


class ConvEncoder(nn.Module):
    """f for images: input (N, channels·S²) flattened row-major → (N, rep_dim)."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        if config.input_dim != config.channels * config.image_size ** 2 or config.image_size < 1:
            raise ValueError(f"cnn encoder: input_dim {config.input_dim} ≠ channels {config.channels} × "
                             f"image_size² {config.image_size}²")
        self.shape = (config.channels, config.image_size, config.image_size)
        layers, width = [], config.channels
        for block in range(config.depth):
            out = config.conv_width * 2 ** block
            layers += [nn.Conv2d(width, out, kernel_size=3, stride=2, padding=1), nn.ReLU()]
            width = out
        self.features = nn.Sequential(*layers)
        side = conv_output_size(config.image_size, config.depth)
        self.project = nn.Sequential(nn.Flatten(), nn.Linear(width * side * side, config.hidden), nn.ReLU(),
                                     nn.Dropout(config.dropout), nn.Linear(config.hidden, config.rep_dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.project(self.features(x.reshape(x.shape[0], *self.shape)))


# ----------------------------------------------------------------------------- objectives
def distillation_loss(objective: str, student_logits: torch.Tensor, teacher_logits: torch.Tensor,
                      labels: torch.Tensor) -> torch.Tensor:
    """Per-batch loss of one objective; no label term in the three distillation losses.

    kl: KL(teacher ‖ student) at temperature 1, averaged over the batch (nats);
    l1: mean |z_s − z_t| over batch and classes, on raw logits;
    l2: Σ (z_s − z_t)² / batch size, on raw logits;
    ce: cross-entropy to the true labels (the control that never sees the teacher).
    """
    if objective == "kl":
        return F.kl_div(F.log_softmax(student_logits, dim=1), F.log_softmax(teacher_logits, dim=1),
                        reduction="batchmean", log_target=True)
    if objective == "l1":
        return F.l1_loss(student_logits, teacher_logits, reduction="mean")
    if objective == "l2":
        return ((student_logits - teacher_logits) ** 2).sum() / student_logits.shape[0]
    if objective == "ce":
        return F.cross_entropy(student_logits, labels)
    raise ValueError(f"unknown objective {objective!r}; choose one of {OBJECTIVES}")


def teacher_loss(logits: torch.Tensor, concept_logits: torch.Tensor | None, labels: torch.Tensor,
                 concepts: torch.Tensor | None) -> torch.Tensor:
    """CE(class) (+ CE(concept) for a concept-bottleneck teacher)."""
    loss = F.cross_entropy(logits, labels)
    if concept_logits is not None and concepts is not None:
        loss = loss + F.cross_entropy(concept_logits, concepts)
    return loss


# ----------------------------------------------------------------------------- training
@dataclass
class TrainResult:
    seconds: float
    samples_per_second: float
    final_loss: float
    losses: list[float] = field(default_factory=list)   # mean loss per epoch


def train(model: EmbeddingNet, inputs: torch.Tensor, batch_loss: Callable[[EmbeddingNet, torch.Tensor], torch.Tensor],
          config: TrainConfig, seed: int, log: Callable[[str], None] | None = None,
          log_every: int = 0) -> TrainResult:
    """Minibatch Adam over `inputs` (N, D), already on the model's device.

    batch_loss(model, index) returns the loss of the rows `index` (a LongTensor), so targets
    (labels, teacher logits) stay on the device and are sliced there; no DataLoader.
    """
    generator = torch.Generator(device="cpu").manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate(config, 0))
    n = inputs.shape[0]
    steps = math.ceil(n / config.batch_size)
    losses = []
    model.train()
    start = time.perf_counter()
    for epoch in range(config.epochs):
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(config, epoch)
        order = torch.randperm(n, generator=generator).to(inputs.device)
        total = torch.zeros((), device=inputs.device)
        for step in range(steps):
            index = order[step * config.batch_size:(step + 1) * config.batch_size]
            loss = batch_loss(model, index)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            total += loss.detach()
        losses.append(float(total) / steps)
        if log and log_every and (epoch + 1) % log_every == 0:
            log(f"epoch {epoch + 1}/{config.epochs}: loss {losses[-1]:.4g}, lr {learning_rate(config, epoch):.2g}")
    if inputs.device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    model.eval()
    return TrainResult(seconds, config.epochs * n / max(seconds, 1e-9), losses[-1] if losses else float("nan"), losses)


def bare_loop(model: nn.Module, inputs: torch.Tensor, batch_loss: Callable[[nn.Module, torch.Tensor], torch.Tensor],
              batch_size: int, epochs: int, lr: float, seed: int) -> float:
    """The reference loop, nothing but randperm → slice → loss → zero_grad → backward → Adam
    step at a constant lr; returns samples/s (N·epochs / seconds)."""
    generator = torch.Generator(device="cpu").manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    n = inputs.shape[0]
    model.train()
    start = time.perf_counter()
    for _ in range(epochs):
        order = torch.randperm(n, generator=generator).to(inputs.device)
        for i in range(0, n, batch_size):
            loss = batch_loss(model, order[i:i + batch_size])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
    if inputs.device.type == "cuda":
        torch.cuda.synchronize()
    model.eval()
    return epochs * n / max(time.perf_counter() - start, 1e-9)


def loop_throughput(make_model: Callable[[], nn.Module], inputs: torch.Tensor,
                    batch_loss: Callable[[nn.Module, torch.Tensor], torch.Tensor], config: TrainConfig,
                    epochs: int, seed: int, repeats: int = 2) -> dict[str, float]:
    """samples/s of `train` (our loop: schedule, loss bookkeeping) and of `bare_loop` on fresh
    models from make_model(), the same inputs, loss and batch size, `epochs` epochs each;
    interleaved `repeats` times, best of each (least disturbed by other processes).
    Returns {"ours", "bare", "ratio" = ours / bare}."""
    short = TrainConfig(**{**config.as_dict(), "epochs": epochs, "warmup_epochs": 0})
    ours, bare = [], []
    for _ in range(repeats):
        torch.manual_seed(seed)
        bare.append(bare_loop(make_model(), inputs, batch_loss, short.batch_size, epochs, short.lr, seed))
        torch.manual_seed(seed)
        ours.append(train(make_model(), inputs, batch_loss, short, seed).samples_per_second)
    return {"ours": max(ours), "bare": max(bare), "ratio": max(ours) / max(bare)}


@torch.no_grad()
def forward_numpy(model: EmbeddingNet, inputs: torch.Tensor, batch_size: int = 4096) -> dict[str, np.ndarray]:
    """Eval-mode outputs as float64 numpy: F (N, d), logits (N, k), concept_logits (N, c)|absent,
    and the unembeddings G (k, d)."""
    model.eval()
    parts: dict[str, list] = {"F": [], "logits": [], "concept_logits": []}
    for i in range(0, inputs.shape[0], batch_size):
        f, z, c = model(inputs[i:i + batch_size])
        parts["F"].append(f.double().cpu().numpy())
        parts["logits"].append(z.double().cpu().numpy())
        if c is not None:
            parts["concept_logits"].append(c.double().cpu().numpy())
    out = {k: np.concatenate(v) for k, v in parts.items() if v}
    out["G"] = model.head.weight.detach().double().cpu().numpy()
    return out


def state_dict_is_finite(state: dict[str, torch.Tensor]) -> list[str]:
    """Names of tensors in a state_dict that hold NaN or ±inf."""
    return [name for name, t in state.items() if t.is_floating_point() and not bool(torch.isfinite(t).all())]
