"""Variant B: a small transformer meta-trained for in-context recomposition — torch, no Dagster import.

An episode is (context segments, query skill verbs) → the query's re-grounding codes. Each
context segment is one token: embedding(verb id or NONE) + embeddings of its code fields
(relative x, y, z in the anchor frame, yaw mode × value, gripper bit); each query step is one
token: embedding(verb id) + a QUERY marker. Verb ids are permuted at random per episode, so the
verb → action mapping cannot be memorised in the weights and must be read from the context
[I]: with labelled contexts it can be looked up, with raw contexts (verb = NONE) it cannot.
The model predicts the five code fields of every query step (cross-entropy).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from assets.skill_recompose.method import Code
from assets.skill_recompose.tasks import VERBS

REL = 8                       # relative coordinates clipped to [-REL, REL]
N_REL = 2 * REL + 1
N_YAW = 16                    # mode ("a" / "d") × 8 bins
N_VERB = len(VERBS) + 2       # permuted verb ids, NONE, QUERY-pad
NONE = len(VERBS)


def code_fields(code: Code) -> list[int]:
    """(rel x, y, z, yaw, gripper) class indices of a code."""
    x, y, z, mode, val, g = code
    c = [int(np.clip(v, -REL, REL)) + REL for v in (x, y, z)]
    return [*c, (0 if mode == "a" else 8) + int(val) % 8, int(g)]


def fields_code(f: Sequence[int]) -> Code:
    x, y, z, yaw, g = (int(v) for v in f)
    return x - REL, y - REL, z - REL, ("a" if yaw < 8 else "d"), yaw % 8, g


def build_model(torch, layers: int, d_model: int, heads: int, max_len: int):
    nn = torch.nn

    class ICL(nn.Module):
        def __init__(self):
            super().__init__()
            self.verb = nn.Embedding(N_VERB, d_model)
            self.fields = nn.ModuleList([nn.Embedding(n, d_model) for n in (N_REL, N_REL, N_REL, N_YAW, 2)])
            self.kind = nn.Embedding(2, d_model)          # 0 context, 1 query
            self.pos = nn.Embedding(max_len, d_model)
            layer = nn.TransformerEncoderLayer(d_model, heads, 4 * d_model, dropout=0.0, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, layers)
            self.heads = nn.ModuleList([nn.Linear(d_model, n) for n in (N_REL, N_REL, N_REL, N_YAW, 2)])

        def forward(self, verbs, fields, kind, mask):
            """verbs (B, L) long; fields (B, L, 5) long (zeros on query tokens); kind (B, L) long;
            mask (B, L) bool, True = padding. Returns five (B, L, classes) logits."""
            pos = torch.arange(verbs.shape[1], device=verbs.device)[None]
            h = self.verb(verbs) + self.kind(kind) + self.pos(pos)
            ctx = (kind == 0).unsqueeze(-1).float()
            for i, emb in enumerate(self.fields):
                h = h + ctx * emb(fields[..., i])
            h = self.encoder(h, src_key_padding_mask=mask)
            return [head(h) for head in self.heads]

    return ICL()


def make_batch(torch, episodes: Sequence[tuple], labelled: bool, rng: np.random.Generator, max_len: int):
    """episodes: (context [(verb, code)], query verbs [str], query codes [code] or None).
    Returns tensors (verbs, fields, kind, mask, targets, target_mask)."""
    b = len(episodes)
    verbs = np.full((b, max_len), NONE + 1)
    fields = np.zeros((b, max_len, 5), dtype=int)
    kind = np.ones((b, max_len), dtype=int)
    mask = np.ones((b, max_len), dtype=bool)
    targets = np.zeros((b, max_len, 5), dtype=int)
    tmask = np.zeros((b, max_len), dtype=bool)
    for i, (ctx, qverbs, qcodes) in enumerate(episodes):
        perm = rng.permutation(len(VERBS))
        vid = {v: int(perm[j]) for j, v in enumerate(VERBS)}
        ctx = list(ctx)[: max(0, max_len - len(qverbs))]
        for j, (v, code) in enumerate(ctx):
            verbs[i, j] = vid[v] if (labelled and v in vid) else NONE
            fields[i, j] = code_fields(code)
            kind[i, j], mask[i, j] = 0, False
        for k, v in enumerate(qverbs[: max_len - len(ctx)]):
            j = len(ctx) + k
            verbs[i, j], mask[i, j] = vid[v], False
            if qcodes is not None:
                targets[i, j], tmask[i, j] = code_fields(qcodes[k]), True
    t = torch.as_tensor
    return (t(verbs), t(fields), t(kind), t(mask), t(targets), t(tmask))


def train(torch, episodes: Sequence[tuple], labelled: bool, seed: int, layers: int, d_model: int, heads: int,
          max_len: int, steps: int, batch: int, lr: float, log=None, device: str = "cpu"):
    """Meta-train on seen-task episodes (leave-one-seen-task-out contexts) on `device`.
    Returns (model, on `device`; losses)."""
    from assets.common.worker import to_device

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model = build_model(torch, layers, d_model, heads, max_len).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    losses = []
    for step in range(steps):
        idx = rng.integers(0, len(episodes), size=batch)
        v, f, k, m, tgt, tm = to_device(make_batch(torch, [episodes[i] for i in idx], labelled, rng, max_len),
                                        device)
        out = model(v, f, k, m)
        loss = sum(torch.nn.functional.cross_entropy(o[tm], tgt[tm][:, j]) for j, o in enumerate(out))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(float(loss.detach()))
        if log and (step + 1) % max(1, steps // 4) == 0:
            log(f"icl {'labelled' if labelled else 'raw'} seed {seed} step {step + 1}/{steps} loss {loss:.3f}")
    return model, losses


def predict(torch, model, episodes: Sequence[tuple], labelled: bool, seed: int, max_len: int) -> list[list[Code]]:
    """Greedy codes for every query step of every episode."""
    rng = np.random.default_rng(seed)
    out = []
    model.eval()
    with torch.no_grad():
        for start in range(0, len(episodes), 64):
            chunk = episodes[start:start + 64]
            v, f, k, m, _, _ = make_batch(torch, chunk, labelled, rng, max_len)
            logits = model(v, f, k, m)
            pred = np.stack([lg.argmax(-1).numpy() for lg in logits], axis=-1)
            for i, (ctx, qverbs, _) in enumerate(chunk):
                n_ctx = min(len(ctx), max(0, max_len - len(qverbs)))
                out.append([fields_code(pred[i, n_ctx + j]) for j in range(min(len(qverbs), max_len - n_ctx))])
    return out
