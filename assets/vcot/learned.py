"""The optional learned completer: a tiny conditional transformer (assets/common/tiny_lm).

A decoder-only "seq2seq": the prompt is the block kind and the text in front of the hole
(the last `prompt_tokens` tokens), then SEP; the target is the block's tokens, then EOS.
One model per held-out family is trained on the blocks of the *other* families (so a task
is never completed by a model that saw its family). Greedy decoding. Not an LLM: trained
from scratch on this corpus only.
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from assets.vcot import bench

TOKEN = re.compile(r"//[^\n]*|[A-Za-z_][A-Za-z0-9_]*|\d+|==>|==|!=|<=|>=|&&|\|\||\S|\n")
SPECIALS = ("<pad>", "<unk>", "<sep>", "<eos>", "<lemma>", "<invariant>", "<assertion>")
PAD, UNK, SEP, EOS = 0, 1, 2, 3


def tokens(text: str) -> list[str]:
    return TOKEN.findall(text)


def detokenize(toks: list[str]) -> str:
    out, line = [], []
    for t in toks:
        if t == "\n":
            out.append(" ".join(line))
            line = []
        else:
            line.append(t)
    if line:
        out.append(" ".join(line))
    return "\n".join(out)


def examples(programs: list[dict]) -> list[tuple[str, str, str]]:
    """(kind, text before the block, block text) for every block of every program."""
    out = []
    for p in programs:
        lines = p["text"].split("\n")
        for b in bench.blocks(p["text"]):
            out.append((b.kind, "\n".join(lines[:b.start]), "\n".join(lines[b.start:b.end])))
    return out


def vocabulary(programs: list[dict]) -> list[str]:
    vocab = set()
    for p in programs:
        vocab.update(tokens(p["text"]))
    return [*SPECIALS, *sorted(vocab - set(SPECIALS))]


def encode(kind: str, before: str, block: str | None, index: dict[str, int], prompt_tokens: int,
           max_new: int) -> tuple[list[int], list[int]]:
    prompt = [index.get(f"<{kind}>", UNK)] + [index.get(t, UNK) for t in tokens(before)][-prompt_tokens:] + [SEP]
    target = [] if block is None else [index.get(t, UNK) for t in tokens(block)][:max_new - 1] + [EOS]
    return prompt, target


def train(programs: list[dict], vocab: list[str], cfg: Any, torch: Any, seed: int, log: Any = None,
          device: str = "cpu"):
    """A TinyLM trained on the programs' blocks on `device`; returns (model, moved to the CPU, final loss)."""
    from assets.common.tiny_lm import TinyLM, TinyLMConfig

    index = {t: i for i, t in enumerate(vocab)}
    data = [encode(k, b, x, index, cfg.prompt_tokens, cfg.max_new) for k, b, x in examples(programs)]
    model = TinyLM(TinyLMConfig(vocab_size=len(vocab), d_model=cfg.d_model, n_heads=cfg.n_heads,
                                n_layers=cfg.n_layers, context=cfg.context)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    rng = np.random.default_rng(seed)
    loss_value = float("nan")
    for step in range(cfg.steps):
        batch = [data[i] for i in rng.integers(0, len(data), size=min(cfg.batch_size, len(data)))]
        seqs = [(p + t)[: cfg.context] for p, t in batch]
        width = max(len(s) for s in seqs)
        x = torch.full((len(seqs), width), PAD, dtype=torch.long)
        weight = torch.zeros((len(seqs), width))
        for r, ((p, _), s) in enumerate(zip(batch, seqs)):
            x[r, : len(s)] = torch.tensor(s)
            weight[r, len(p): len(s)] = 1.0          # loss on the block's tokens only
        x, weight = x.to(device), weight.to(device)
        logits = model(x[:, :-1], key_mask=(x[:, :-1] != PAD) | (torch.arange(width - 1, device=device) == 0)).logits
        nll = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1),
                                                reduction="none").reshape(len(seqs), width - 1)
        loss = (nll * weight[:, 1:]).sum() / weight[:, 1:].sum().clamp(min=1)
        opt.zero_grad()
        loss.backward()
        opt.step()
        loss_value = float(loss.detach())
        if log and (step + 1) % max(1, cfg.steps // 5) == 0:
            log(f"learned completer: step {step + 1}/{cfg.steps}, loss {loss_value:.3f}")
    return model.cpu(), loss_value


def complete(model: Any, vocab: list[str], task: dict, cfg: Any, torch: Any) -> dict[str, str]:
    """Greedy completion of every hole of a task."""
    from assets.common.tiny_lm.sampling import generate

    index = {t: i for i, t in enumerate(vocab)}
    lines = task["masked"].split("\n")
    out = {}
    for h, line_no in zip(task["holes"], bench.placeholder_lines(task["masked"])):
        prompt, _ = encode(h["kind"], "\n".join(lines[:line_no]), None, index, cfg.prompt_tokens, cfg.max_new)
        room = cfg.context - len(prompt)
        if room < 2:
            prompt = prompt[-(cfg.context - cfg.max_new):]
            room = cfg.max_new
        with torch.no_grad():
            samples = generate(model, torch.tensor([prompt]), torch.ones((1, len(prompt)), dtype=torch.bool),
                               min(cfg.max_new, room), eos=EOS, pad=PAD, greedy=True)
        ids = [int(i) for i in samples.completion[0] if int(i) not in (PAD, EOS)]
        out[h["hole_id"]] = detokenize([vocab[i] for i in ids if i > EOS])
    return out
