"""The PAC router (torch, CPU; no Dagster): route each item to one of M AI models, learn an
uncertainty score, then PAC-label the routed predictions.

Re-implemented from the spec (papers/pac_labels.md, "Extensions"):

- weighter: linear softmax over the M models from the item's features, w(x) ∈ Δ_M (weights
  start at zero = uniform);
- uncertainty model: Linear(d', d') → ReLU → Linear(d', 1) on
  [x, Σ_j w_j conf_j (detached), Σ_j w_j onehot(ŷ_j)], d' = d + 1 + C (last layer starts at 0);
  its output s is the uncertainty score (a logit, unbounded);
- on a calibration split (its expert labels are bought through the oracle) minimise the
  expected cost  mean_i Σ_j w_ij (c_j + (c_expert − c_j) σ(a (s_i − û))),  a = 0.1,
  where û solves the smoothed error constraint
      G(û) = mean_i Σ_j w_ij err_ij (1 − σ(a (s_i − û))) − ε = 0
  (items with s ≥ û go to the expert, items below keep the AI label and may be wrong); û is
  found by root bracketing on [min s − 10/a, max s + 10/a] (where the gate saturates to 4.5e-5;
  the reference's [−100, 100] at a = 0.1) and differentiated implicitly:
  dû/dθ = −(∂G/∂θ)/(∂G/∂û);
- updates: sign of the gradient, AdamW (lr 0.1, weight decay 1e-3), `epochs` passes in
  mini-batches of 50.

Deviations (documented):
- the authors' smoothed surrogate weights the *error* term with σ(a(s − û)), the same factor
  as the expert cost, while their exact threshold counts errors of items on the other side; we
  use the consistent complementary factor 1 − σ(a(s − û));
- scale of the gate: the authors' uncertainty model ends in a sigmoid, s ∈ (0, 1), and then
  gates with σ(0.1 (s − û)): across items the gate moves by at most σ'(·) · 0.1 ≤ 0.025, so the
  surrogate is almost linear in s and barely rewards ranking. We keep the spec's gate
  σ(0.1 (u − û)) and its ±100 bracket, and let u be the head's logit (the scale that bracket and
  0.1 fit; PAC labeling orders items by this logit anyway). `head="sigmoid"` (optionally with
  another gate_scale) restores the authors' parameterisation for the ablation.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SIGMOID_SCALE = 0.1
SATURATION = 10.0                       # a · (s − û) beyond ±10: the gate is 0 or 1 to 4.5e-5
HEADS = ("logit", "sigmoid")


@dataclass(frozen=True)
class RouterConfig:
    costs: tuple[float, ...]            # per-model annotation cost (expert = expert_cost)
    expert_cost: float = 1.0
    epsilon: float = 0.05
    epochs: int = 50
    batch_size: int = 50
    lr: float = 0.1
    weight_decay: float = 1e-3
    head: str = "logit"                 # uncertainty score: the head's logit, or σ(logit) (authors')
    gate_scale: float = SIGMOID_SCALE   # a in σ(a (s − û))

    def __post_init__(self):
        if self.head not in HEADS:
            raise ValueError(f"head must be one of {HEADS}, got {self.head!r}")
        if not self.gate_scale > 0:
            raise ValueError(f"gate_scale must be > 0, got {self.gate_scale}")


def gate(scores, u_hat, scale: float):
    """σ(a (s − û)) in numpy (float64): the probability the smoothed rule sends an item to the expert."""
    return 1.0 / (1.0 + np.exp(-scale * (np.asarray(scores, dtype=np.float64) - u_hat)))


def _modules(torch, n_features: int, n_models: int, n_classes: int):
    weighter = torch.nn.Linear(n_features, n_models)
    torch.nn.init.zeros_(weighter.weight)
    width = n_features + 1 + n_classes
    uncertainty = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU(),
                                      torch.nn.Linear(width, 1))
    torch.nn.init.zeros_(uncertainty[2].weight)
    return weighter, uncertainty


def _uncertainty_input(torch, X, weights, conf, onehot):
    """[x, Σ_j w_j conf_j (detached), Σ_j w_j onehot_j]: (B, d + 1 + C)."""
    agg_conf = (weights * conf).sum(dim=1, keepdim=True).detach()
    agg_pred = (weights[..., None] * onehot).sum(dim=1)
    return torch.cat([X, agg_conf, agg_pred], dim=1)


def bracket(scores, scale: float = SIGMOID_SCALE) -> tuple[float, float]:
    """Search interval of û: the gate saturates at both ends, [min s − 10/a, max s + 10/a]."""
    scores = np.asarray(scores, dtype=np.float64)
    return float(scores.min() - SATURATION / scale), float(scores.max() + SATURATION / scale)


def _solve_threshold(weights, errors, scores, epsilon: float, scale: float = SIGMOID_SCALE) -> float | None:
    """Root û of G(û) = mean Σ_j w err (1 − σ(a (s − û))) − ε, or None when G has no sign
    change on the bracket (the weighted error is ≤ ε everywhere: no expert needed)."""
    from scipy.optimize import brentq

    w_err = (weights * errors).sum(axis=1)

    def G(u: float) -> float:
        return float(np.mean(w_err * (1.0 - gate(scores, u, scale)))) - epsilon

    lo, hi = bracket(scores, scale)
    if G(lo) * G(hi) > 0:
        return None
    return float(brentq(G, lo, hi, xtol=1e-8))


def train_router(torch, X: np.ndarray, yhats: np.ndarray, confs: np.ndarray, y: np.ndarray,
                 n_classes: int, config: RouterConfig, seed: int, log=None,
                 history: list | None = None) -> dict[str, np.ndarray]:
    """Train the weighter and uncertainty model on a calibration split.

    X: (m, d) features; yhats, confs: (m, M) each model's class code and confidence; y: (m,)
    bought expert labels. Returns the state_dict (name → numpy array) of both modules.
    history (optional): one dict per epoch is appended — smoothed cost, mean û, and the gate's
    spread max_i σ(a (s_i − û)) − min_i σ(a (s_i − û)) averaged over the batches whose
    constraint binds (how much the surrogate can tell items apart); None in an epoch where no
    batch's constraint binds.
    """
    torch.manual_seed(seed)
    n, M = yhats.shape
    weighter, uncertainty = _modules(torch, X.shape[1], M, n_classes)
    params = [*weighter.parameters(), *uncertainty.parameters()]
    optimizer = torch.optim.AdamW(params, lr=config.lr, weight_decay=config.weight_decay)
    Xt = torch.tensor(X, dtype=torch.float32)
    conf_t = torch.tensor(confs, dtype=torch.float32)
    onehot = torch.nn.functional.one_hot(torch.tensor(yhats, dtype=torch.long), n_classes).float()
    errors = torch.tensor((yhats != y[:, None]).astype(np.float32))
    costs = torch.tensor(config.costs, dtype=torch.float32)
    extra = config.expert_cost - costs
    generator = np.random.default_rng(seed)
    for epoch in range(config.epochs):
        order = generator.permutation(n)
        epoch_cost, spreads, thresholds = [], [], []
        for start in range(0, n, config.batch_size):
            rows = torch.tensor(order[start:start + config.batch_size])
            weights = torch.softmax(weighter(Xt[rows]), dim=1)
            scores = uncertainty(_uncertainty_input(torch, Xt[rows], weights, conf_t[rows], onehot[rows])).squeeze(1)
            if config.head == "sigmoid":
                scores = torch.sigmoid(scores)
            a = config.gate_scale
            u0 = _solve_threshold(weights.detach().numpy(), errors[rows].numpy(), scores.detach().numpy(),
                                  config.epsilon, a)
            if u0 is None:   # the constraint never binds: nothing goes to the expert
                u_hat = torch.tensor(bracket(scores.detach().numpy(), a)[1])
            else:
                u_leaf = torch.tensor(u0)
                g = torch.sigmoid(a * (scores - u_leaf))
                G = ((weights * errors[rows]).sum(dim=1) * (1 - g)).mean() - config.epsilon
                dG_du = ((weights * errors[rows]).sum(dim=1) * a * g * (1 - g)).mean().detach()
                # implicit function theorem: û(θ) ≈ u0 − (G(θ, u0) − G(θ₀, u0)) / ∂G/∂û
                u_hat = u_leaf - (G - G.detach()) / dG_du.clamp_min(1e-12)
            expert_prob = torch.sigmoid(a * (scores - u_hat))
            if u0 is not None:
                g_now = gate(scores.detach().numpy(), u0, a)
                spreads.append(float(g_now.max() - g_now.min()))
                thresholds.append(u0)
            cost = (weights * (costs + extra * expert_prob[:, None])).sum(dim=1).mean()
            optimizer.zero_grad()
            cost.backward()
            for p in params:                          # sign-SGD: keep only the gradient's sign
                if p.grad is not None:
                    p.grad = torch.sign(p.grad)
            optimizer.step()
            epoch_cost.append(float(cost.detach()))
        if history is not None:
            history.append({"epoch": epoch + 1, "cost": float(np.mean(epoch_cost)),
                            "u_hat": float(np.mean(thresholds)) if thresholds else None,
                            "gate_spread": float(np.mean(spreads)) if spreads else None})
        if log is not None and (epoch + 1) % max(1, config.epochs // 5) == 0:
            log(f"router epoch {epoch + 1}/{config.epochs}: smoothed cost {np.mean(epoch_cost):.4f}")
    state = {f"weighter.{k}": v.detach().numpy().copy() for k, v in weighter.state_dict().items()}
    state.update({f"uncertainty.{k}": v.detach().numpy().copy() for k, v in uncertainty.state_dict().items()})
    return state


def route(torch, state: dict[str, np.ndarray], X: np.ndarray, yhats: np.ndarray, confs: np.ndarray,
          n_classes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Apply a trained router: (model index (n,), routed ŷ (n,), uncertainty logit (n,)).

    The uncertainty is returned as the pre-sigmoid logit (float64): PAC labeling uses only the
    ordering of U, and the float32 sigmoid saturates (sign-SGD drives logits to −100s), which
    would erase that ordering. σ(logit) is the model's s ∈ (0, 1).
    """
    n, M = yhats.shape
    weighter, uncertainty = _modules(torch, X.shape[1], M, n_classes)
    weighter.load_state_dict({k.split(".", 1)[1]: torch.tensor(v) for k, v in state.items()
                              if k.startswith("weighter.")})
    uncertainty.load_state_dict({k.split(".", 1)[1]: torch.tensor(v) for k, v in state.items()
                                 if k.startswith("uncertainty.")})
    with torch.no_grad():
        Xt = torch.tensor(X, dtype=torch.float32)
        weights = torch.softmax(weighter(Xt), dim=1)
        choice = weights.argmax(dim=1)
        # the routed item is annotated by one model: aggregate with a one-hot weight on it
        hard = torch.nn.functional.one_hot(choice, M).float()
        onehot = torch.nn.functional.one_hot(torch.tensor(yhats, dtype=torch.long), n_classes).float()
        logits = uncertainty(_uncertainty_input(torch, Xt, hard, torch.tensor(confs, dtype=torch.float32),
                                                onehot)).squeeze(1)
    model = choice.numpy()
    return model, yhats[np.arange(n), model].astype(float), logits.numpy().astype(np.float64)


def sigmoid(logits: np.ndarray) -> np.ndarray:
    """σ in float64 (for the routed confidence 1 − σ(logit))."""
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(logits, dtype=np.float64)))
