"""The cpu/device parity and timing pieces the device checks of limix, pfn_causal, viar, dream_mpc,
ts_layers, lari, vcot and logit_distill share (issue 49) — no Dagster, no model code: every model,
loss and batch comes from the paper's own assets.

    out = step_parity(torch, model, device, forward, loss, batch, to_device, optimizer)

`model` is built (seeded) on the CPU; a deep copy goes to `device`. On each side: `forward(m, b)`
(a tensor or a tuple/dict of tensors), then `loss(m, b)` and its gradient, then one step of
`optimizer(params)` and the loss of the updated model on the same batch. Returned, CPU vs device:

- forward_max_rel: max |Δ output| / max |output| (over every output tensor);
- loss_rel_diff, grad_max_rel (max |Δ g| / max |g|), grad_max_abs (the CPU gradient's max, > 0);
- step_l2_rel_diff: ‖Δθ_cpu − Δθ_device‖ / ‖Δθ_cpu‖ of the optimizer step (L2: a few near-zero
  gradient entries may flip Adam's sign and move by 2·lr; the norm is not fooled by them);
- after_step_loss_rel_diff: the loss of the updated models on the same batch.

Dropout is switched off on both copies (`p = 0` on every nn.Dropout, `model.train()` kept) because
the device's random stream cannot match the CPU's; the global torch seed is reset to `seed` before
every call, so randomness a model draws on the CPU (limix's training-mode feature ids) matches.
On `--device cpu` every number is exactly 0.
"""
from __future__ import annotations

import copy
import time
from collections.abc import Callable
from typing import Any


def _tensors(out: Any) -> list:
    import torch

    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict):
        return [t for v in out.values() for t in _tensors(v)]
    if isinstance(out, (tuple, list)):
        return [t for v in out for t in _tensors(v)]
    if hasattr(out, "__dataclass_fields__"):
        return [t for k in out.__dataclass_fields__ for t in _tensors(getattr(out, k))]
    return []


def no_dropout(model) -> int:
    """Set p = 0 on every dropout module of `model`; the number of modules changed."""
    from torch import nn

    n = 0
    for m in model.modules():
        if isinstance(m, nn.modules.dropout._DropoutNd):
            m.p = 0.0
            n += 1
    return n


def _rel(a, b) -> float:
    scale = float(a.abs().max()) if a.numel() else 0.0
    return float((a - b).abs().max()) / max(scale, 1e-30) if a.numel() else 0.0


def step_parity(torch, model, device: str, forward: Callable, loss: Callable, batch: Any,
                to_device: Callable[[Any, str], Any], optimizer: Callable, clip: float = 0.0,
                train_mode: bool = True, seed: int = 0) -> dict:
    """CPU vs `device`: forward, loss, gradient and one optimizer step (module docstring)."""
    no_dropout(model)
    models = {"cpu": model, "dev": copy.deepcopy(model).to(device)}
    batches = {"cpu": batch, "dev": to_device(batch, device)}
    side: dict[str, dict] = {}
    for k, m in models.items():
        m.train(train_mode)
        b = batches[k]
        torch.manual_seed(seed)
        with torch.no_grad():
            outs = [t.detach().float().cpu() for t in _tensors(forward(m, b))]
        params = [q for q in m.parameters() if q.requires_grad]
        opt = optimizer(params)
        opt.zero_grad(set_to_none=True)
        torch.manual_seed(seed)
        value = loss(m, b)
        value.backward()
        grad = torch.cat([q.grad.reshape(-1) for q in params if q.grad is not None]).cpu()
        if clip:
            torch.nn.utils.clip_grad_norm_(params, clip)
        before = torch.cat([q.detach().reshape(-1) for q in params]).cpu().clone()
        opt.step()
        after = torch.cat([q.detach().reshape(-1) for q in params]).cpu()
        torch.manual_seed(seed)
        with torch.no_grad():
            post = float(loss(m, b))
        side[k] = {"outs": outs, "loss": float(value.detach()), "grad": grad, "step": after - before, "post": post}
    a, b = side["cpu"], side["dev"]
    step_norm = float(a["step"].norm())
    return {
        "forward_max_rel": max((_rel(x, y) for x, y in zip(a["outs"], b["outs"], strict=True)), default=0.0),
        "loss_rel_diff": abs(a["loss"] - b["loss"]) / max(abs(a["loss"]), 1e-30),
        "grad_max_abs": float(a["grad"].abs().max()),
        "grad_max_rel": _rel(a["grad"], b["grad"]),
        "step_l2_rel_diff": float((a["step"] - b["step"]).norm()) / max(step_norm, 1e-30),
        "after_step_loss_rel_diff": abs(a["post"] - b["post"]) / max(abs(a["post"]), 1e-30),
        "n_parameters": int(sum(q.numel() for q in model.parameters())),
    }


def judged(out: dict, forward_tol: float, grad_tol: float, step_tol: float, loss_tol: float) -> bool:
    """True when a step_parity result is within the stated tolerances (and the gradient is not 0)."""
    return bool(out["forward_max_rel"] <= forward_tol and out["loss_rel_diff"] <= loss_tol
                and out["grad_max_abs"] > 0 and out["grad_max_rel"] <= grad_tol
                and out["step_l2_rel_diff"] <= step_tol and out["after_step_loss_rel_diff"] <= loss_tol)


def seconds_per_call(fn: Callable[[], Any], calls: int, sync: Callable[[], None], warmup: int = 1) -> float:
    """Median-free mean wall seconds of `fn()` over `calls` calls after `warmup` untimed ones."""
    for _ in range(warmup):
        fn()
    sync()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    sync()
    return (time.perf_counter() - start) / max(1, calls)


def move(batch: Any, device: str) -> Any:
    """A batch (tensors, nested in dicts / tuples / lists; other values kept) on `device`."""
    import torch

    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: move(v, device) for k, v in batch.items()}
    if isinstance(batch, tuple):
        return tuple(move(v, device) for v in batch)
    if isinstance(batch, list):
        return [move(v, device) for v in batch]
    return batch
