"""What the flow says about an SFT checkpoint, on teacher-forced gold traces — torch only, no
Dagster: token scores (τ and the point-wise baselines), the masking causal check, relevance
AUROC and hub enrichment.

For a test problem the model reads `<bos> prompt gold-trace-through-#` and greedily answers at
`#`; the answer region A is `#` and that answer token, Q the prompt tokens (no `<bos>` when
drop_bos). Scores cover the trace tokens before `#` (the maskable set).

Masking (the paper's causal check): replace the top round(fraction · n) trace tokens by a rule
with `<pad>` and hide them from attention (key mask), keep every other token and position,
re-read the answer at `#`. answer_changed = the greedy answer differs from the unmasked one;
flipped = its correctness differs.
"""
from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType

import numpy as np
import pandas as pd
import torch

from assets.common.tiny_lm.model import TinyLM
from assets.flowtracer import data as D
from assets.flowtracer import flow as FL
from assets.flowtracer.method import top_fraction_mask

SCORE_RULES = ("flow", "random", "bottom", "one_hop", "rollout", "recency", "attention")


def band_name(layers: Sequence[int]) -> str:
    """A layer band's name in the tables: its layers joined by `-` ((1, 2) → "1-2")."""
    return "-".join(map(str, layers))


def _batch(problems: pd.DataFrame, task: ModuleType) -> tuple[torch.Tensor, torch.Tensor, list[int], list[int]]:
    """Right-padded `<bos> prompt trace-through-#` (N, T), key mask, trace start and `#` index."""
    seqs, starts, hashes = [], [], []
    for r in problems.itertuples():
        head = r.trace[:r.trace.index("#") + 1]
        seqs.append([D.BOS_ID] + task.encode(r.prompt + head))
        starts.append(D.trace_start(r.prompt))
        hashes.append(len(seqs[-1]) - 1)
    width = max(map(len, seqs)) + 1               # room for the answer token
    tokens = torch.full((len(seqs), width), D.PAD_ID, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.bool)
    for i, s in enumerate(seqs):
        tokens[i, :len(s)] = torch.tensor(s)
        mask[i, :len(s)] = True
    return tokens, mask, starts, hashes


@torch.no_grad()
def answers_at_hash(model: TinyLM, tokens: torch.Tensor, key_mask: torch.Tensor, hashes: Sequence[int]) -> torch.Tensor:
    """Greedy answer token id at each row's `#` position (N,), on the tokens' device."""
    logits = model(tokens, key_mask=key_mask).logits
    rows = torch.arange(len(hashes), device=tokens.device)
    return logits[rows, torch.tensor(hashes, device=tokens.device)].argmax(-1)


@torch.no_grad()
def score_tokens(model: TinyLM, problems: pd.DataFrame, layers: Sequence[int], drop_bos: bool,
                 generator: torch.Generator, task: ModuleType = D) -> dict:
    """Scores (N, T) float64 per rule in SCORE_RULES over each row's trace tokens before `#`
    (other positions NaN), with the tokens, masks, answers and layout they were computed on.
    problems: the task's dataset rows (RegTrace by default). Everything on the model's device
    (the random scores drawn on the CPU stream)."""
    device = next(model.parameters()).device
    tokens, key_mask, starts, hashes = _batch(problems, task)
    tokens, key_mask = tokens.to(device), key_mask.to(device)
    answers = answers_at_hash(model, tokens, key_mask, hashes)
    rows = torch.arange(len(hashes), device=device)
    tokens[rows, torch.tensor(hashes, device=device) + 1] = answers
    key_mask[rows, torch.tensor(hashes, device=device) + 1] = True
    out = model(tokens, key_mask=key_mask, return_attention=True)
    attn = torch.stack(out.attentions, dim=1)                       # (N, L, H, T, T)
    n, t = tokens.shape
    question = torch.zeros((n, t), dtype=torch.bool, device=device)
    answer = torch.zeros_like(question)
    trace = torch.zeros_like(question)
    for i, (s, h) in enumerate(zip(starts, hashes, strict=True)):
        question[i, (1 if drop_bos else 0):s] = True
        answer[i, h:h + 2] = True
        trace[i, s:h] = True
    sinks = (0,) if drop_bos else ()
    flow = FL.trace_flow_batch(attn, key_mask, question, answer, layers, drop_sink_columns=sinks)
    W = flow.W
    scores = {
        "flow": flow.tau,
        "random": torch.rand((n, t), generator=generator, dtype=torch.float64).to(device),
        "bottom": -flow.tau,
        "one_hop": FL.one_hop(W, answer),
        "rollout": FL.rollout(attn, answer),
        "recency": torch.arange(t, dtype=torch.float64, device=device).expand(n, t).clone(),
        "attention": FL.max_received(W),
    }
    scores = {k: torch.where(trace, v.double(), torch.full_like(v.double(), torch.nan)) for k, v in scores.items()}
    return {"scores": scores, "tokens": tokens, "key_mask": key_mask, "trace": trace, "hashes": hashes,
            "answers": answers, "conservation_error": flow.conservation_error, "absorbed_mass": flow.absorbed_mass}


@torch.no_grad()
def masking(model: TinyLM, problems: pd.DataFrame, scored: dict, fraction: float, rules: Sequence[str],
            generator: torch.Generator, task: ModuleType = D) -> pd.DataFrame:
    """One row per (problem, rule): answer_changed, flipped (0/1), masked tokens."""
    tokens, key_mask, trace, hashes = scored["tokens"], scored["key_mask"], scored["trace"], scored["hashes"]
    base = scored["answers"]
    gold = torch.tensor([task.TOKEN_ID[str(a)] for a in problems["answer"]], device=tokens.device)
    rows = []
    for rule in rules:
        top = top_fraction_mask(torch.nan_to_num(scored["scores"][rule], nan=-np.inf), trace, fraction, generator)
        masked = torch.where(top, torch.full_like(tokens, D.PAD_ID), tokens)
        after = answers_at_hash(model, masked, key_mask & ~top, hashes)
        changed = (after != base).long().cpu()
        flipped = ((after == gold) != (base == gold)).long().cpu()
        top, correct = top.cpu(), (base == gold).cpu()
        for i in range(len(hashes)):
            rows.append({"problem": i, "rule": rule, "answer_changed": int(changed[i]), "flipped": int(flipped[i]),
                         "masked": int(top[i].sum()), "base_correct": int(correct[i])})
    return pd.DataFrame(rows)


def token_table(problems: pd.DataFrame, scored: dict) -> pd.DataFrame:
    """Long table of every trace token before `#`: problem, position, char, label (R / D / S),
    kind, and each rule's score."""
    scores = {rule: s.cpu() for rule, s in scored["scores"].items()}
    rows = []
    for i, r in enumerate(problems.itertuples()):
        start = D.trace_start(r.prompt)
        head = r.trace.index("#")
        for j in range(head):
            row = {"problem": i, "position": start + j, "char": r.trace[j], "label": r.labels[j], "kind": r.kinds[j]}
            for rule, s in scores.items():
                row[rule] = float(s[i, start + j])
            rows.append(row)
    return pd.DataFrame(rows)


def auroc(scores: np.ndarray, positive: np.ndarray) -> float:
    """Mann–Whitney AUROC of `scores` for positive vs negative (ties count one half)."""
    scores, positive = np.asarray(scores, float), np.asarray(positive, bool)
    pos, neg = scores[positive], scores[~positive]
    if not len(pos) or not len(neg):
        return float("nan")
    values, inverse, counts = np.unique(np.concatenate([pos, neg]), return_inverse=True, return_counts=True)
    ranks = (np.cumsum(counts) - (counts - 1) / 2)[inverse]          # average ranks, 1-based, ties shared
    return float((ranks[:len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def relevance_auroc(tokens: pd.DataFrame, rule: str) -> float:
    """AUROC of a rule's score for relevant (R) vs distractor (D) step tokens (letters, digits).
    tokens: anything whose tokens[column] gives that column's values (a DataFrame, benchmark.Rows)."""
    label = np.asarray(tokens["label"])
    relevant, distractor = label == "R", label == "D"
    steps = relevant | distractor
    return auroc(np.asarray(tokens[rule])[steps], relevant[steps])


def hub_top(tokens: pd.DataFrame, fraction: float, keys: Sequence[str] = ("problem",)) -> np.ndarray:
    """Whether each row is among its problem's top max(1, round(fraction · n)) trace tokens by τ
    (ties in row order). keys: the columns that identify a problem (add "seed" for several seeds)."""
    order = tokens.reset_index(drop=True).sort_values([*keys, "flow"], ascending=[True] * len(keys) + [False],
                                                      kind="stable")
    group = order.groupby(list(keys), sort=False)
    rank = group.cumcount().to_numpy()
    size = group["flow"].transform("size").to_numpy()
    top = np.zeros(len(order), dtype=bool)
    top[order.index.to_numpy()] = rank < np.maximum(1, np.round(fraction * size))
    return top


def odds_ratio(top: np.ndarray, structural: np.ndarray) -> float:
    """Odds ratio of structural among top against the rest, 0.5 added to every cell."""
    top, structural = np.asarray(top, bool), np.asarray(structural, bool)
    a = (top & structural).sum() + 0.5
    b = (top & ~structural).sum() + 0.5
    c = (~top & structural).sum() + 0.5
    d = (~top & ~structural).sum() + 0.5
    return float((a / b) / (c / d))


def structural(tokens: pd.DataFrame, task: ModuleType = D) -> np.ndarray:
    """Whether each token_table row is a structural token, by kind: a separator or a register
    letter in RegTrace; a separator, variable letter or `=` in ArithChain (task.STRUCTURAL_KINDS)."""
    return tokens["kind"].isin(task.STRUCTURAL_KINDS).to_numpy()


def hub_odds_ratio(tokens: pd.DataFrame, fraction: float, task: ModuleType = D) -> float:
    """Odds ratio of a structural token among each problem's top `fraction` trace tokens by τ
    against the rest (0.5 added to every cell)."""
    return odds_ratio(hub_top(tokens, fraction), structural(tokens, task))


def answer_source(tokens: pd.DataFrame, step_chars: int = D.STEP_CHARS) -> np.ndarray:
    """Whether each row is a character of its problem's last relevant step (its step_chars
    characters before `;`: task.STEP_CHARS): the write the teacher-forced answer copies (its value
    is the answer). A problem whose queried register is never written in the trace has no source
    row. tokens: token_table rows of one seed or with a seed column (then grouped by seed and
    problem)."""
    keys = ["seed", "problem"] if "seed" in tokens else ["problem"]
    tokens = tokens.reset_index(drop=True)
    relevant = tokens["label"] == "R"
    last = tokens["position"].where(relevant).groupby([tokens[k] for k in keys]).transform("max")
    return (relevant & (tokens["position"] >= last - (step_chars - 1))).to_numpy()


def source_auroc(tokens: pd.DataFrame, rule: str, step_chars: int = D.STEP_CHARS) -> float:
    """AUROC of a rule's score for the answer-source step tokens against every other step token
    (a step's characters before `;`; relevant or not)."""
    steps = tokens[tokens["label"].isin(["R", "D"])]
    return auroc(steps[rule].to_numpy(), answer_source(steps, step_chars))
