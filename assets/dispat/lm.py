"""The tabular LM: SFT (AnoLLM), f-divergence self-play (DiSPaT), schema-constrained sampling and
the permutation-averaged NLL score — on the shared tiny transformer (assets/common/tiny_lm), no
Dagster.

Shapes: N rows, C columns (schema order), L tokens, V vocabulary.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from assets.common.tiny_lm import TinyLM, TinyLMConfig, token_logprobs
from assets.common.tiny_lm.sampling import generate
from assets.dispat import method as M
from assets.dispat.data import CATEGORICAL, NUMERIC, TEXT
from assets.dispat.serialize import Encoded, Vocab, decode_tokens, pad_encoded, parse, permutations

Log = Callable[[str], None]


def build_model(vocab_size: int, d_model: int, n_heads: int, n_layers: int, context: int) -> TinyLM:
    return TinyLM(TinyLMConfig(vocab_size=vocab_size, d_model=d_model, n_heads=n_heads, n_layers=n_layers,
                               context=context))


# ------------------------------------------------------------------------------ token rows
class TokenRows:
    """Pre-tokenised values of formatted rows: values[r][c] = token ids of row r, column c;
    `encode` assembles sequences under any column orders without re-tokenising."""

    def __init__(self, rows: list[dict[str, str]], vocab: Vocab):
        self.vocab = vocab
        names = vocab.schema.names
        cache: dict[tuple[int, str], list[int]] = {}
        self.values = []
        for row in rows:
            vals = []
            for c, n in enumerate(names):
                key = (c, row[n])
                if key not in cache:
                    cache[key] = vocab.encode_value(row[n])
                vals.append(cache[key])
            self.values.append(vals)
        self.col_ids = vocab.column_ids()

    def __len__(self) -> int:
        return len(self.values)

    def encode(self, index: np.ndarray, orders: np.ndarray) -> Encoded:
        v = self.vocab
        seqs, spans = [], []
        for r, order in zip(index, orders):
            seq, span = [v.bos], [-1]
            for k, c in enumerate(order):
                if k:
                    seq.append(v.sep)
                    span.append(-1)
                vals = self.values[int(r)][int(c)]
                seq += [self.col_ids[c], v.is_, *vals]
                span += [-1, -1] + [int(c)] * len(vals)
            seq.append(v.eos)
            span.append(-1)
            seqs.append(seq)
            spans.append(span)
        return pad_encoded(seqs, spans, v.pad)

    def batch(self, rng: np.random.Generator, size: int, index: np.ndarray | None = None) -> Encoded:
        """`size` rows drawn with replacement, each with a fresh random column order."""
        pool = np.arange(len(self)) if index is None else index
        pick = pool[rng.integers(0, len(pool), size=size)]
        return self.encode(pick, permutations(size, len(self.col_ids), rng))


def _pad_to(x: torch.Tensor, width: int, value) -> torch.Tensor:
    if x.shape[1] == width:
        return x
    return torch.nn.functional.pad(x, (0, width - x.shape[1]), value=value)


def tensors(enc: Encoded, device: torch.device | str = "cpu"
            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(tokens, mask, value_mask, span) of an Encoded batch as tensors on `device`."""
    return tuple(torch.from_numpy(a).to(device) for a in (enc.tokens, enc.mask, enc.value_mask, enc.span))


def device_of(model: torch.nn.Module) -> torch.device:
    """The device a model's parameters live on (every LM function computes there)."""
    return next(model.parameters()).device


# ------------------------------------------------------------------------------ training
@dataclass(frozen=True)
class Optim:
    lr: float
    warmup: int
    grad_clip: float                # AnoLLM's max_grad_norm = 0.7
    weight_decay: float


def _optimizer(model: TinyLM, o: Optim, steps: int):
    opt = torch.optim.AdamW(model.parameters(), lr=o.lr, weight_decay=o.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / max(1, o.warmup)) * (0.1 + 0.9 * 0.5 * (1 + np.cos(np.pi * s / steps))))
    return opt, sched


def train_sft(model: TinyLM, rows: TokenRows, steps: int, batch: int, o: Optim, rng: np.random.Generator
              ) -> list[float]:
    """`steps` AdamW steps of next-token NLL on random-order serialisations; the loss per step."""
    model.train()
    dev = device_of(model)
    opt, sched = _optimizer(model, o, steps)
    curve = []
    for _ in range(steps):
        tokens, mask, _, _ = tensors(rows.batch(rng, batch), dev)
        loss = M.sft_loss(model, tokens, mask)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), o.grad_clip)
        opt.step()
        sched.step()
        curve.append(loss.item())
    model.eval()
    return curve


def _policy_logprobs(model: TinyLM, rows: TokenRows, d_tokens: torch.Tensor, d_values: torch.Tensor,
                     g_tokens: torch.Tensor, g_values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, int]:
    """One forward pass of the policy over [data; samples], both (B, ·) right-padded to one width W
    (right padding does not change the real positions' log-probabilities under the causal mask).
    Returns token log-probs (2B, W − 1), their sums over each row's value tokens (2B,), and W."""
    width = max(d_tokens.shape[1], g_tokens.shape[1])
    both = torch.cat([_pad_to(d_tokens, width, rows.vocab.pad), _pad_to(g_tokens, width, rows.vocab.pad)])
    values = torch.cat([_pad_to(d_values, width, False), _pad_to(g_values, width, False)])
    logp = token_logprobs(model, both)
    return logp, (logp * values[:, 1:].float()).sum(dim=1), width


def _step_with_sft(model: TinyLM, opt, sched, loss: torch.Tensor, logp: torch.Tensor, d_mask: torch.Tensor,
                   width: int, gamma: float, grad_clip: float) -> torch.Tensor:
    """loss + γ·SFT (the data half's mean token NLL under its mask; skipped when γ = 0), then one
    clipped AdamW step and a scheduler step. Returns the total loss."""
    if gamma:
        m = _pad_to(d_mask, width, False)[:, 1:].float()
        loss = loss + gamma * (-(logp[:len(d_mask)] * m).sum() / m.sum().clamp(min=1))
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    opt.step()
    sched.step()
    return loss


def allowed_token_logprobs(model: TinyLM, tokens: torch.Tensor, allowed: torch.Tensor
                           ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One forward pass over rows (B, L) with the constrained decoder's allowed sets (B, L − 1, V):
    per target token (B, L − 1) the unconstrained log p, the log q renormalised over the allowed
    set, and log P(allowed) (method.allowed_logprobs)."""
    out = model(tokens[:, :-1])
    log_probs = torch.log_softmax(out.logits, dim=-1)
    targets = tokens[:, 1:]
    q, mass = M.allowed_logprobs(log_probs, targets, allowed)
    return log_probs.gather(-1, targets[..., None]).squeeze(-1), q, mass


def _pad_allowed(allowed: torch.Tensor, width: int) -> torch.Tensor:
    """Allowed sets (B, W − 1, V) padded to (B, width − 1, V) with every token allowed (those
    positions are past the row and outside every value span)."""
    extra = width - 1 - allowed.shape[1]
    return allowed if extra <= 0 else torch.nn.functional.pad(allowed, (0, 0, 0, extra), value=True)


@torch.no_grad()
def allowed_mass(model: TinyLM, enc: Encoded, allowed: torch.Tensor, batch: int = 256) -> float:
    """Mean over the value tokens of `enc` of log P_θ(allowed set | prefix): how much of the
    model's mass the constrained decoder keeps (0 = all of it)."""
    dev = device_of(model)
    tokens, _, values, _ = tensors(enc, dev)
    total, count = 0.0, 0
    for i in range(0, len(tokens), batch):
        _, _, mass = allowed_token_logprobs(model, tokens[i:i + batch], allowed[i:i + batch].to(dev))
        m = values[i:i + batch, 1:]
        total += float(mass[m].sum())
        count += int(m.sum())
    return total / max(1, count)


def _row_logprobs(model: TinyLM, tokens: torch.Tensor, values: torch.Tensor, allowed: torch.Tensor | None,
                  batch: int = 256) -> torch.Tensor:
    """Σ over value tokens of log p_θ (allowed None) or of log q_θ renormalised over the allowed sets."""
    if allowed is None:
        return torch.cat([M.sequence_logprobs(model, tokens[i:i + batch], values[i:i + batch])
                          for i in range(0, len(tokens), batch)])
    parts = []
    for i in range(0, len(tokens), batch):
        _, q, _ = allowed_token_logprobs(model, tokens[i:i + batch], allowed[i:i + batch])
        parts.append((q * values[i:i + batch, 1:].float()).sum(dim=1))
    return torch.cat(parts)


def train_self_play_round(model: TinyLM, reference: TinyLM, rows: TokenRows, generated: Encoded, f: str,
                          beta: float, gamma: float, steps: int, batch: int, o: Optim, rng: np.random.Generator,
                          constraint: SchemaConstraint | None = None, generated_allowed: torch.Tensor | None = None
                          ) -> dict[str, list[float]]:
    """K steps of L_f(θ; θt) + γ·SFT: each step takes `batch` data rows (fresh orders) and
    `batch` generated rows of θt. Returns per-step curves: loss, f-loss, the variational
    estimate D̂_f = −L_f, mean u on data and on samples.

    With `constraint` (and `generated_allowed`, its replay over `generated`) the log-ratio uses
    log-probabilities renormalised over the constrained decoder's allowed set at each value
    token, for θ and θt, on samples and data alike: r = q_θ/q_θt, the ratio of the densities of
    the distribution the samples come from. Without it (the unconstrained ablation) r = p_θ/p_θt,
    whose sample term has expected gradient ∝ ∇log P_θ(allowed) ≠ 0 at θ = θt. γ·SFT is always
    the unconstrained next-token NLL (the AnoLLM model that scores rows)."""
    model.train()
    dev = device_of(model)
    opt, sched = _optimizer(model, o, steps)
    g_tokens, _, g_values, _ = tensors(generated, dev)
    renorm = constraint is not None
    g_allowed = generated_allowed.to(dev) if renorm else None
    with torch.no_grad():
        ref_gen_all = _row_logprobs(reference, g_tokens, g_values, g_allowed)
    curves = {"loss": [], "f_loss": [], "divergence": [], "u_data": [], "u_gen": []}
    for _ in range(steps):
        enc = rows.batch(rng, batch)
        d_tokens, d_mask, d_values, _ = tensors(enc, dev)
        pick = torch.from_numpy(rng.integers(0, len(g_tokens), size=batch)).to(dev)
        if renorm:
            d_allowed = constraint.replay(enc.tokens).to(dev)
            with torch.no_grad():
                ref_data = _row_logprobs(reference, d_tokens, d_values, d_allowed)
            width = max(d_tokens.shape[1], g_tokens.shape[1])
            both = torch.cat([_pad_to(d_tokens, width, rows.vocab.pad), _pad_to(g_tokens[pick], width, rows.vocab.pad)])
            values = torch.cat([_pad_to(d_values, width, False), _pad_to(g_values[pick], width, False)])
            allowed = torch.cat([_pad_allowed(d_allowed, width), _pad_allowed(g_allowed[pick], width)])
            logp, q, _ = allowed_token_logprobs(model, both, allowed)
            seq = (q * values[:, 1:].float()).sum(dim=1)
        else:
            with torch.no_grad():
                ref_data = M.sequence_logprobs(reference, d_tokens, d_values)
            logp, seq, width = _policy_logprobs(model, rows, d_tokens, d_values, g_tokens[pick], g_values[pick])
        lf, u_d, u_g = M.self_play_loss(f, beta, seq[:batch], ref_data, seq[batch:], ref_gen_all[pick])
        loss = _step_with_sft(model, opt, sched, lf, logp, d_mask, width, gamma, o.grad_clip)
        curves["loss"].append(loss.item())
        curves["f_loss"].append(lf.item())
        curves["divergence"].append(-lf.item())
        curves["u_data"].append(float(u_d.mean()))
        curves["u_gen"].append(float(u_g.mean()))
    model.eval()
    return curves


# ------------------------------------------------------------------------------ explicit critic (option B)
@torch.no_grad()
def row_features(model: TinyLM, tokens: torch.Tensor, mask: torch.Tensor, values: torch.Tensor
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """One forward pass of a frozen policy over whole rows: (Σ log p over value tokens (B,), features
    (B, 2d) = [mean of the final hidden states over the row's real tokens, the final hidden state at
    its last real token (EOS)]). tokens, mask, values (B, L), right-padded."""
    out = model(tokens)
    logp = torch.log_softmax(out.logits[:, :-1], dim=-1).gather(-1, tokens[:, 1:, None]).squeeze(-1)
    seq = (logp * values[:, 1:].float()).sum(dim=1)
    m = mask.float()[..., None]
    mean = (out.hidden * m).sum(dim=1) / m.sum(dim=1).clamp(min=1)
    last = out.hidden[torch.arange(len(tokens), device=tokens.device), mask.long().sum(dim=1).clamp(min=1) - 1]
    return seq, torch.cat([mean, last], dim=-1)


def _chunked_features(model: TinyLM, tokens, mask, values, size: int = 256) -> tuple[torch.Tensor, torch.Tensor]:
    parts = [row_features(model, tokens[i:i + size], mask[i:i + size], values[i:i + size])
             for i in range(0, len(tokens), size)]
    return torch.cat([a for a, _ in parts]), torch.cat([b for _, b in parts])


def train_critic_round(model: TinyLM, reference: TinyLM, rows: TokenRows, generated: Encoded, f: str, beta: float,
                       gamma: float, steps: int, batch: int, o: Optim, rng: np.random.Generator, critic_cfg
                       ) -> tuple[dict[str, list[float]], dict]:
    """One round of option B: fit a fresh critic D_φ (critic.Critic, `critic_cfg`: hidden, steps,
    batch, lr, weight_decay, real_share) on θt-features of every train row (one random column order
    each) vs the round's generated rows, freeze it, then K steps of β·(policy-gradient surrogate with
    D_φ: importance weights on `batch` real rows + penalty on `batch` generated rows) + γ·SFT.
    Returns (per-step curves: loss, pg_loss, divergence (the critic's D̂_f, constant over the
    policy steps), critic (D̂_f per critic step), u_data / u_gen (mean v_φ on the batches);
    the critic's state dict on the CPU)."""
    from assets.dispat import critic as C

    dev = device_of(model)
    g_tokens, g_mask, g_values, _ = tensors(generated, dev)
    ref_gen_all, gen_feats = _chunked_features(reference, g_tokens, g_mask, g_values)
    enc = rows.encode(np.arange(len(rows)), permutations(len(rows), len(rows.col_ids), rng))
    d_all, m_all, v_all, _ = tensors(enc, dev)
    _, data_feats = _chunked_features(reference, d_all, m_all, v_all)
    torch.manual_seed(int(rng.integers(2 ** 31)))
    critic = C.Critic(data_feats.shape[1], critic_cfg.hidden).to(dev)
    critic_curve = C.train_critic(critic, data_feats, gen_feats, f, critic_cfg.steps, critic_cfg.batch,
                                  critic_cfg.lr, critic_cfg.weight_decay, rng)
    critic.requires_grad_(False)
    with torch.no_grad():
        v_gen_all = critic(gen_feats)
        baseline = float(C.reward(f, v_gen_all).mean())
    tail = max(1, critic_cfg.steps // 5)
    estimate = float(np.mean(critic_curve[-tail:]))
    model.train()
    opt, sched = _optimizer(model, o, steps)
    curves = {"loss": [], "pg_loss": [], "divergence": [], "u_data": [], "u_gen": [], "critic": critic_curve}
    for _ in range(steps):
        d_tokens, d_mask, d_values, _ = tensors(rows.batch(rng, batch), dev)
        pick = torch.from_numpy(rng.integers(0, len(g_tokens), size=batch)).to(dev)
        ref_data, feats = row_features(reference, d_tokens, d_mask, d_values)
        with torch.no_grad():
            v_data = critic(feats)
        logp, seq, width = _policy_logprobs(model, rows, d_tokens, d_values, g_tokens[pick], g_values[pick])
        pg, _ = C.pg_surrogate(f, seq[:batch], ref_data, v_data, seq[batch:], ref_gen_all[pick], v_gen_all[pick],
                               baseline, critic_cfg.real_share)
        loss = _step_with_sft(model, opt, sched, beta * pg, logp, d_mask, width, gamma, o.grad_clip)
        curves["loss"].append(loss.item())
        curves["pg_loss"].append(pg.item())
        curves["divergence"].append(estimate)
        curves["u_data"].append(float(v_data.mean()))
        curves["u_gen"].append(float(v_gen_all[pick].mean()))
    model.eval()
    return curves, {k: v.detach().cpu().clone() for k, v in critic.state_dict().items()}


# ------------------------------------------------------------------------------ constrained decoding
class SchemaConstraint:
    """A logits hook for tiny_lm.sampling.generate: column names and separators are forced, and
    only value tokens that keep the value valid are allowed —

    - numeric: optional '-' (when the train column has negatives), 1..max_int digits, then '.'
      and exactly `decimals` digits (none when decimals = 0);
    - categorical: a prefix of a train level's tokens (a trie), ending only on a whole level;
    - text: the column's train value tokens, 1..max_tokens of them.

    Each row takes its own random column order (`orders`, (B, C)). The last column ends with
    EOS, the others with SEP, so every completed row parses."""

    def __init__(self, vocab: Vocab, train_rows: TokenRows, orders: np.ndarray, negatives: dict[str, bool]):
        self.v = vocab
        self.orders = orders
        self.b, self.c = orders.shape
        V = vocab.size
        self.V = V
        schema = vocab.schema
        self.kinds = [c.kind for c in schema.columns]
        self.decimals = [c.decimals for c in schema.columns]
        self.col_ids = vocab.column_ids()
        text_of = {i: vocab.token_text(i) for i in range(V)}
        self.digit_ids = [i for i, t in text_of.items() if len(t) == 1 and t.isdigit()]
        self.dot = vocab.id(".") if vocab.tokenizer.token_to_id(".") is not None else None
        self.minus = vocab.id("-") if vocab.tokenizer.token_to_id("-") is not None else None
        self.negatives = [negatives.get(c.name, False) for c in schema.columns]
        values = train_rows.values
        self.max_int = []
        self.tries: list[dict[tuple, set[int]]] = []
        self.complete: list[set[tuple]] = []
        self.text_masks: list[torch.Tensor | None] = []
        self.max_tokens = []
        for ci, col in enumerate(schema.columns):
            col_vals = [tuple(v[ci]) for v in values]
            self.max_tokens.append(max((len(t) for t in col_vals), default=1))
            if col.kind == NUMERIC:
                texts = [vocab.decode_value(list(t)) for t in set(col_vals)]
                self.max_int.append(max(len(t.lstrip("-").partition(".")[0]) for t in texts) + 1)
            else:
                self.max_int.append(0)
            trie: dict[tuple, set[int]] = {}
            for t in set(col_vals):
                for k in range(len(t)):
                    trie.setdefault(t[:k], set()).add(t[k])
            self.tries.append(trie)
            self.complete.append(set(col_vals))
            if col.kind == TEXT:
                m = torch.zeros(V, dtype=torch.bool)
                ids = sorted({i for t in col_vals for i in t if "," not in text_of[i]})
                m[ids] = True
                self.text_masks.append(m)
            else:
                self.text_masks.append(None)
        self._masks: dict[tuple, torch.Tensor] = {}      # value mask per (column, value prefix, last column)
        self.reset(orders)

    def reset(self, orders: np.ndarray) -> None:
        """Start fresh rows with these column orders (B, C); the schema tables are kept."""
        self.orders = orders
        self.b, self.c = orders.shape
        self.k = np.zeros(self.b, np.int64)            # column pointer into the row's order
        self.phase = np.zeros(self.b, np.int64)        # 0 column name, 1 " is ", 2 value, 3 done
        self.value: list[list[int]] = [[] for _ in range(self.b)]
        self.steps = 0

    def _update(self, last: np.ndarray) -> None:
        v = self.v
        for i, t in enumerate(last):
            ph = self.phase[i]
            if ph == 0:
                self.phase[i] = 1
            elif ph == 1:
                self.phase[i] = 2
                self.value[i] = []
            elif ph == 2:
                if t == v.sep:
                    self.k[i] += 1
                    self.phase[i] = 0
                elif t == v.eos:
                    self.phase[i] = 3
                else:
                    self.value[i].append(int(t))

    def _value_mask(self, i: int) -> torch.Tensor:
        """The allowed next tokens inside row i's current value (memoised: a function of the column,
        the value so far and whether it is the row's last column; callers must not modify it)."""
        col = int(self.orders[i, self.k[i]])
        last_col = bool(self.k[i] == self.c - 1)
        vals = self.value[i]
        kind = self.kinds[col]
        if kind == NUMERIC:          # the mask depends on the value's shape only, not on its digits
            body = vals[1:] if vals and vals[0] == self.minus else vals
            dot = body.index(self.dot) if self.dot is not None and self.dot in body else -1
            key = (col, last_col, len(vals), len(body), dot)
        elif kind == TEXT:
            key = (col, last_col, len(vals))
        else:
            key = (col, last_col, tuple(vals))
        if key not in self._masks:
            self._masks[key] = self._build_value_mask(col, self.value[i], last_col)
        return self._masks[key]

    def _build_value_mask(self, col: int, vals: list[int], last_col: bool) -> torch.Tensor:
        term = self.v.eos if last_col else self.v.sep
        m = torch.zeros(self.V, dtype=torch.bool)
        kind = self.kinds[col]
        if kind == NUMERIC:
            d = self.decimals[col]
            body = vals[1:] if vals and vals[0] == self.minus else vals
            has_dot = self.dot is not None and self.dot in body
            n_int = body.index(self.dot) if has_dot else len(body)
            n_frac = len(body) - n_int - 1 if has_dot else 0
            if not has_dot:
                if n_int < self.max_int[col]:
                    m[self.digit_ids] = True
                if not vals and self.negatives[col] and self.minus is not None:
                    m[self.minus] = True
                if n_int >= 1 and d > 0 and self.dot is not None:
                    m[self.dot] = True
                if n_int >= 1 and d == 0:
                    m[term] = True
            elif n_frac < d:
                m[self.digit_ids] = True
            else:
                m[term] = True
        elif kind == CATEGORICAL:
            key = tuple(vals)
            nxt = self.tries[col].get(key, set())
            if nxt:
                m[list(nxt)] = True
            if key in self.complete[col]:
                m[term] = True
        else:
            if len(vals) < self.max_tokens[col]:
                m |= self.text_masks[col]
            if vals or not m.any():
                m[term] = True
        if not m.any():
            m[term] = True
        return m

    def __call__(self, logits: torch.Tensor, generated: torch.Tensor) -> torch.Tensor:
        if generated.shape[1]:
            self._update(generated[:, -1].cpu().numpy())
        allowed = self._allowed()                                      # built on the CPU, moved once
        return logits.masked_fill(~allowed.to(logits.device), float("-inf"))

    def orders_of(self, tokens: np.ndarray) -> np.ndarray:
        """The column order of each serialised row (B, L) read from its column-name tokens
        (rows must name every column once)."""
        col_index = {int(t): c for c, t in enumerate(self.col_ids)}
        orders = [[col_index[int(t)] for t in row if int(t) in col_index] for row in tokens]
        if any(sorted(o) != list(range(len(self.col_ids))) for o in orders):
            raise ValueError("replay needs complete rows that name every column once")
        return np.array(orders, dtype=np.int64)

    def replay(self, tokens: np.ndarray) -> torch.Tensor:
        """The allowed sets the constrained decoder would use along given rows (B, L), BOS first,
        right-padded: (B, L − 1, V) bool on the CPU, entry j = the set for token j + 1 (the
        teacher-forced trace of `__call__`; after EOS only PAD)."""
        tokens = np.asarray(tokens)
        self.reset(self.orders_of(tokens))
        out = torch.zeros((self.b, tokens.shape[1] - 1, self.V), dtype=torch.bool)
        for j in range(tokens.shape[1] - 1):
            if j:
                self._update(tokens[:, j])
            out[:, j] = self._allowed()
        return out

    def _allowed(self) -> torch.Tensor:
        allowed = torch.zeros((self.b, self.V), dtype=torch.bool)
        for i in range(self.b):
            ph = self.phase[i]
            if ph == 0:
                allowed[i, self.col_ids[int(self.orders[i, self.k[i]])]] = True
            elif ph == 1:
                allowed[i, self.v.is_] = True
            elif ph == 2:
                allowed[i] = self._value_mask(i)
            else:
                allowed[i, self.v.pad] = True
        return allowed


def sample_rows(model: TinyLM, vocab: Vocab, train_rows: TokenRows, n: int, rng: np.random.Generator,
                negatives: dict[str, bool], batch: int = 256, greedy: bool = False, use_cache: bool = True,
                constrained: bool = True) -> tuple[list[dict[str, str] | None], list[list[int]]]:
    """n rows from the model by schema-constrained sampling (random column order per row).
    Returns (parsed rows, None where a row does not parse; token ids of every row)."""
    model.eval()
    dev = device_of(model)
    context = model.config.context
    parsed, token_lists = [], []
    gen = torch.Generator(device=dev).manual_seed(int(rng.integers(2 ** 31)))
    for start in range(0, n, batch):
        b = min(batch, n - start)
        orders = permutations(b, len(vocab.schema.names), rng)
        hook = SchemaConstraint(vocab, train_rows, orders, negatives) if constrained else None
        prompt = torch.full((b, 1), vocab.bos, dtype=torch.long, device=dev)
        out = generate(model, prompt, torch.ones_like(prompt, dtype=torch.bool), context - 1, eos=vocab.eos,
                       pad=vocab.pad, greedy=greedy, generator=gen, logits_hook=hook, use_cache=use_cache,
                       stop_when_done=True)
        for seq, m in zip(out.tokens.cpu(), out.mask.cpu()):
            ids = seq[m].tolist()
            token_lists.append(ids)
            complete = vocab.eos in ids
            try:
                parsed.append(parse(decode_tokens(ids, vocab), vocab.schema) if complete else None)
            except ValueError:
                parsed.append(None)
    return parsed, token_lists


def encode_sampled(token_lists: list[list[int]], vocab: Vocab) -> Encoded:
    """Generated token rows as an Encoded batch (value tokens = tokens after IS up to SEP/EOS)."""
    col_index = {i: c for c, i in enumerate(vocab.column_ids())}
    width = max(len(t) for t in token_lists)
    tokens = np.full((len(token_lists), width), vocab.pad, np.int64)
    span = np.full((len(token_lists), width), -1, np.int64)
    for r, ids in enumerate(token_lists):
        tokens[r, :len(ids)] = ids
        current, in_value = -1, False
        for j, t in enumerate(ids):
            if t in col_index:
                current, in_value = col_index[t], False
            elif t == vocab.is_:
                in_value = True
            elif t in (vocab.sep, vocab.eos, vocab.bos, vocab.pad):
                in_value = False
            elif in_value:
                span[r, j] = current
    lengths = np.array([len(t) for t in token_lists])
    mask = np.arange(width)[None, :] < lengths[:, None]
    return Encoded(tokens, mask, span >= 0, span, lengths)


# ------------------------------------------------------------------------------ scoring
@torch.no_grad()
def score_rows(model: TinyLM, rows: TokenRows, n_perm: int, seed: int, batch: int = 256
               ) -> tuple[np.ndarray, np.ndarray]:
    """AnoLLM score: per row, the mean over `n_perm` column orders (seeded by `seed`, the same
    for every model) of Σ_columns value-span NLL (text spans per token). Returns (scores (N,),
    attributions (N, C): per-column span NLL averaged over the orders)."""
    model.eval()
    dev = device_of(model)
    n, c = len(rows), len(rows.col_ids)
    text_cols = [i for i, k in enumerate(rows.vocab.schema.columns) if k.kind == TEXT]
    rng = np.random.default_rng(seed)
    orders = np.stack([permutations(n, c, rng) for _ in range(n_perm)], axis=1)   # (N, P, C)
    flat_rows = np.repeat(np.arange(n), n_perm)
    flat_orders = orders.reshape(n * n_perm, c)
    per_col = np.zeros((n * n_perm, c))
    for s in range(0, n * n_perm, batch):
        enc = rows.encode(flat_rows[s:s + batch], flat_orders[s:s + batch])
        tokens, _, _, span = tensors(enc, dev)
        per_col[s:s + batch] = M.span_nll(model, tokens, span, c, text_cols).cpu().numpy()
    attributions = per_col.reshape(n, n_perm, c).mean(axis=1)
    return attributions.sum(axis=1), attributions


@torch.no_grad()
def validation_nll(model: TinyLM, rows: TokenRows, seed: int, batch: int = 256) -> float:
    """Mean over rows of the value-token NLL under one fixed column order per row (seeded):
    the no-collapse / round-acceptance statistic."""
    rng = np.random.default_rng(seed)
    enc = rows.encode(np.arange(len(rows)), permutations(len(rows), len(rows.col_ids), rng))
    tokens, _, values, _ = tensors(enc, device_of(model))
    total = torch.cat([M.sequence_logprobs(model, tokens[i:i + batch], values[i:i + batch])
                       for i in range(0, len(tokens), batch)])
    return float(-total.mean())


@torch.no_grad()
def constrained_validation_nll(model: TinyLM, rows: TokenRows, seed: int, constraint: SchemaConstraint,
                               batch: int = 256) -> float:
    """validation_nll (the same rows and column orders) under the constrained decoder's distribution:
    value-token log-probabilities renormalised over the allowed sets (a value the constraint would not
    generate counts as allowed). validation_nll − this = the mass lost off the allowed sets."""
    rng = np.random.default_rng(seed)
    enc = rows.encode(np.arange(len(rows)), permutations(len(rows), len(rows.col_ids), rng))
    dev = device_of(model)
    tokens, _, values, _ = tensors(enc, dev)
    allowed = constraint.replay(enc.tokens).to(dev)
    return float(-_row_logprobs(model, tokens, values, allowed, batch).mean())


# ------------------------------------------------------------------------------ self-play loop
def self_play(theta0: TinyLM, rows: TokenRows, val_rows: TokenRows, vocab: Vocab, round0: Encoded, *, f: str,
              beta: float, gamma: float, rounds: int, steps: int, batch: int, n_gen: int, o: Optim,
              max_val_rise: float, negatives: dict[str, bool], rng: np.random.Generator, val_seed: int,
              log: Log = lambda s: None, critic=None, critic_states: list | None = None, renormalise: bool = True
              ) -> tuple[TinyLM, list[dict], list[list[dict | None]]]:
    """T rounds: samples of θt (round 0: `round0`, θ0's) → K steps of L_f(θ; θt) + γ SFT from θt →
    θt+1, kept only if the validation NLL rises by ≤ max_val_rise (relative) over θt's.
    With `critic` (params Critic: option B) each round instead fits an explicit critic and takes K
    steps of train_critic_round; its D̂_f and mean v_φ fill the records' divergence / u columns and
    each round's critic state is appended to `critic_states`. Everything runs on θ0's device.
    `renormalise` (the implicit critic only): the log-ratio over the constrained decoder's allowed
    sets (train_self_play_round); False is the unconstrained ablation. Each record also holds the
    mean log P(allowed) per value token of the round's samples under θt and under the round's θ, and
    the validation NLL under the constrained distribution (constrained_validation_nll) before / after.
    Returns (θ_T, per-round records, parsed generated rows of rounds ≥ 1)."""
    dev = device_of(theta0)
    current = build_model(**_config_kwargs(theta0)).to(dev)
    current.load_state_dict(theta0.state_dict())
    current.eval()
    val_nll = validation_nll(current, val_rows, val_seed)
    records, generated_rows = [], []
    samples = round0
    constraint = SchemaConstraint(vocab, rows, np.zeros((0, len(vocab.schema.names)), np.int64), negatives)
    val_q = constrained_validation_nll(current, val_rows, val_seed, constraint)
    for t in range(rounds):
        started = time.perf_counter()
        parsed = None
        if t > 0:
            parsed, ids = sample_rows(current, vocab, rows, n_gen, rng, negatives)
            keep = [i for i, p in enumerate(parsed) if p is not None]
            samples = encode_sampled([ids[i] for i in keep], vocab)
            generated_rows.append(parsed)
        policy = build_model(**_config_kwargs(theta0)).to(dev)
        policy.load_state_dict(current.state_dict())
        g_allowed = constraint.replay(samples.tokens)
        mass_before = allowed_mass(current, samples, g_allowed)
        if critic is None:
            curves = train_self_play_round(policy, current, rows, samples, f, beta, gamma, steps, batch, o, rng,
                                           constraint if renormalise else None, g_allowed)
        else:
            curves, state = train_critic_round(policy, current, rows, samples, f, beta, gamma, steps, batch, o, rng,
                                               critic)
            if critic_states is not None:
                critic_states.append(state)
        new_nll = validation_nll(policy, val_rows, val_seed)
        mass_after = allowed_mass(policy, samples, g_allowed)
        new_q = constrained_validation_nll(policy, val_rows, val_seed, constraint)
        accepted = new_nll <= val_nll * (1 + max_val_rise)
        tail = max(1, steps // 5)
        records.append({"round": t, "f": f, "val_nll_before": val_nll, "val_nll_after": new_nll,
                        "accepted": bool(accepted), "divergence": float(np.mean(curves["divergence"][-tail:])),
                        "divergence_first": float(np.mean(curves["divergence"][:tail] if critic is None
                                                          else curves["critic"][:max(1, critic.steps // 5)])),
                        "u_data": float(np.mean(curves["u_data"][-tail:])),
                        "u_gen": float(np.mean(curves["u_gen"][-tail:])),
                        "log_p_allowed_before": mass_before, "log_p_allowed_after": mass_after,
                        "val_nll_q_before": val_q, "val_nll_q_after": new_q,
                        "n_samples": int(len(samples.tokens)),
                        "parse_rate": (float(np.mean([p is not None for p in parsed])) if parsed is not None
                                       else float("nan")),
                        "seconds": time.perf_counter() - started})
        log(f"round {t} ({f}): D̂_f {records[-1]['divergence']:.4f}, val NLL {val_nll:.3f} → {new_nll:.3f}"
            f"{'' if accepted else ' (rejected)'}, log P(allowed) {mass_before:.4f} → {mass_after:.4f}")
        if accepted:
            current, val_nll, val_q = policy, new_nll, new_q
    return current, records, generated_rows


def _config_kwargs(model: TinyLM) -> dict:
    c = model.config
    return {"vocab_size": c.vocab_size, "d_model": c.d_model, "n_heads": c.n_heads, "n_layers": c.n_layers,
            "context": c.context}
