"""RegTrace, FlowTracer's generated dataset: register programs with a step-by-step gold trace —
pure Python/numpy/pandas, no Dagster.

A problem sets three registers A, B, C to digits 0–9, applies `n_ops` ∈ [min_ops, max_ops] ops,
each uniformly one of

    X+   add 1 (mod 10)        X-   subtract 1 (mod 10)        X=d  assign the digit d

(X uniform in A–C), then asks for one register with `?X`. The gold trace has one step per op —
the register letter and its new value, each step followed by `;` — then `#` and the answer:

    prompt   A=2;B=9;C=1;A-;B-;C-;A+;B+;B-;?B
    trace    A1;B8;C0;A2;B9;B8;#8                      answer 8
    sequence <bos>A=2;B=9;C=1;A-;B-;C-;A+;B+;B-;?BA1;B8;C0;A2;B9;B8;#8<eos>

The queried register is drawn uniformly among the registers that at least one op touches (so
every trace has a step to attribute the answer to; `query="uniform"` draws among all three).
A sequence is at most MAX_TOKENS tokens (8 ops of `X=d` give 74).

Tokens (VOCAB, fixed order): `<pad>` `<bos>` `<eos>`, then the single characters
`A B C 0–9 + - = ; ? #`. Text is character-level except the specials, written as themselves.

Per trace character, two annotation strings of the trace's length:

    labels  R relevant: a step (letter and digit) of the queried register at or after its last
              `=` op (every step of that register when it has no `=` op)
            D distractor: any other step's letter and digit
            S the separator `;`     H the `#`     A the answer digit
    kinds   L register letter   C digit copied by an `=` op   P digit of a `+` / `-` op
            S separator         H `#`                         A answer digit

    trace   A1;B8;C0;A2;B9;B8;#8
    labels  DDSRRSDDSDDSRRSRRSHA
    kinds   LPSLPSLPSLPSLPSLPSHA
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

PAD, BOS, EOS = "<pad>", "<bos>", "<eos>"
SPECIALS = (PAD, BOS, EOS)
REGISTERS = ("A", "B", "C")
DIGITS = tuple("0123456789")
SYMBOLS = ("+", "-", "=", ";", "?", "#")
VOCAB = [*SPECIALS, *REGISTERS, *DIGITS, *SYMBOLS]
TOKEN_ID = {t: i for i, t in enumerate(VOCAB)}
PAD_ID, BOS_ID, EOS_ID = range(len(SPECIALS))   # every task's vocabulary starts with SPECIALS
CHARACTERS = frozenset(t for t in VOCAB if t not in SPECIALS)   # the characters a prompt or trace may hold
NAME = "RegTrace"
STRUCTURAL_KINDS = frozenset("LS")   # hubs: register letters and separators
STEP_CHARS = 2                       # a step's characters before its `;` (letter, digit)
MAX_TOKENS = 80
DEFAULT_MIN_OPS, DEFAULT_MAX_OPS = 4, 8
OPS = ("+", "-", "=")
LABELS = {"R": "relevant step", "D": "distractor step", "S": "separator `;`", "H": "`#`", "A": "answer digit"}
KINDS = {"L": "register letter", "C": "copy digit of an = op", "P": "digit of a + / - op", "S": "separator `;`",
         "H": "`#`", "A": "answer digit"}
COLUMNS = ("problem_id", "prompt", "trace", "answer", "query", "n_ops", "n_tokens", "labels", "kinds")
SPLITS = ("train", "val", "test", "rl", "rl_eval")


def vocab_md5(vocab: Sequence[str] = VOCAB) -> str:
    """md5 of a vocabulary (tokens joined by newlines), saved with checkpoints."""
    return hashlib.md5("\n".join(vocab).encode()).hexdigest()


def encode(text: str, token_id: Mapping[str, int] = TOKEN_ID) -> list[int]:
    """Token ids of `text`: `<pad>` `<bos>` `<eos>` as written, every other character one token
    (ids from `token_id`, RegTrace's by default).

    >>> encode("<bos>A=2;?A2<eos>")
    [1, 3, 18, 8, 19, 20, 3, 8, 2]
    """
    ids, i = [], 0
    while i < len(text):
        if text[i] == "<":
            special = next((s for s in SPECIALS if text.startswith(s, i)), None)
            if special is None:
                raise ValueError(f"unknown token at position {i} of {text!r}: '<' opens no special token {SPECIALS}")
            ids.append(token_id[special])
            i += len(special)
            continue
        if text[i] not in token_id:         # specials are several characters long: no clash
            raise ValueError(f"unknown character {text[i]!r} at position {i} of {text!r}")
        ids.append(token_id[text[i]])
        i += 1
    return ids


def decode(ids: Sequence[int], vocab: Sequence[str] = VOCAB) -> str:
    """Text of token ids, specials written as themselves (`<pad>`, `<bos>`, `<eos>`); raises on an
    id outside the vocabulary (RegTrace's by default)."""
    out = []
    for i in ids:
        i = int(i)
        if not 0 <= i < len(vocab):
            raise ValueError(f"token id {i} is outside the vocabulary of {len(vocab)}")
        out.append(vocab[i])
    return "".join(out)


def sequence(prompt: str, trace: str) -> str:
    """The training text `<bos>` + prompt + trace + `<eos>`."""
    return f"{BOS}{prompt}{trace}{EOS}"


def sequence_ids(prompt: str, trace: str, token_id: Mapping[str, int] = TOKEN_ID) -> list[int]:
    return encode(sequence(prompt, trace), token_id)


def trace_start(prompt: str) -> int:
    """Token index of the trace's first character in `sequence_ids(prompt, trace)`."""
    return 1 + len(prompt)


def n_tokens(prompt: str, trace: str) -> int:
    return len(prompt) + len(trace) + 2


def _problem(rng: np.random.Generator, min_ops: int, max_ops: int, query: str) -> dict:
    """One problem with its trace and annotations, computed forward (the generator's own logic;
    `interpret` / `annotate` recompute them from the prompt text)."""
    values = [int(v) for v in rng.integers(0, 10, size=3)]
    n = int(rng.integers(min_ops, max_ops + 1))
    kinds = rng.integers(0, 3, size=n)
    regs = rng.integers(0, 3, size=n)
    digits = rng.integers(0, 10, size=n)
    if query == "touched":
        touched = sorted({int(r) for r in regs})
        q = touched[int(rng.integers(len(touched)))] if touched else int(rng.integers(3))
    elif query == "uniform":
        q = int(rng.integers(3))
    else:
        raise ValueError(f"query must be 'touched' or 'uniform', not {query!r}")
    prompt = [f"{REGISTERS[r]}={v};" for r, v in enumerate(values)]
    steps = []                             # (register index, new value, op)
    for k, r, d in zip(kinds, regs, digits):
        op, r = OPS[int(k)], int(r)
        if op == "=":
            values[r] = int(d)
            prompt.append(f"{REGISTERS[r]}={int(d)};")
        else:
            values[r] = (values[r] + (1 if op == "+" else -1)) % 10
            prompt.append(f"{REGISTERS[r]}{op};")
        steps.append((r, values[r], op))
    prompt.append(f"?{REGISTERS[q]}")
    last_assign = max((i for i, (r, _, op) in enumerate(steps) if r == q and op == "="), default=-1)
    trace, labels, kind = [], [], []
    for i, (r, v, op) in enumerate(steps):
        trace.append(f"{REGISTERS[r]}{v};")
        label = "R" if r == q and i >= last_assign else "D"
        labels.append(label * 2 + "S")
        kind.append("L" + ("C" if op == "=" else "P") + "S")
    answer = values[q]
    trace.append(f"#{answer}")
    labels.append("HA")
    kind.append("HA")
    prompt_text, trace_text = "".join(prompt), "".join(trace)
    length = n_tokens(prompt_text, trace_text)
    assert length <= MAX_TOKENS, f"{length} tokens > {MAX_TOKENS} ({n} ops): lower max_ops"
    return {"prompt": prompt_text, "trace": trace_text, "answer": answer, "query": REGISTERS[q], "n_ops": n,
            "n_tokens": length, "labels": "".join(labels), "kinds": "".join(kind)}


def _check_bounds(min_ops: int, max_ops: int) -> None:
    if not 0 <= min_ops <= max_ops:
        raise ValueError(f"need 0 ≤ min_ops ≤ max_ops, got min_ops={min_ops}, max_ops={max_ops}")


def _frame(rows: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=[c for c in COLUMNS if c != "problem_id"])
    frame.insert(0, "problem_id", np.arange(len(frame), dtype=np.int64))
    for column in ("answer", "n_ops", "n_tokens"):
        frame[column] = frame[column].astype(np.int64)
    return frame


def generate(rng: np.random.Generator, n: int, min_ops: int = DEFAULT_MIN_OPS, max_ops: int = DEFAULT_MAX_OPS,
             query: str = "touched") -> pd.DataFrame:
    """`n` problems (duplicates possible; `splits` removes them). Columns: problem_id (0..n-1),
    prompt, trace, answer (int), query (register letter), n_ops, n_tokens (of the full sequence),
    labels and kinds (strings of the trace's length; see the module docstring)."""
    _check_bounds(min_ops, max_ops)
    return _frame([_problem(rng, min_ops, max_ops, query) for _ in range(n)])


def splits(rng: np.random.Generator, sizes: Mapping[str, int], min_ops: int = DEFAULT_MIN_OPS,
           max_ops: int = DEFAULT_MAX_OPS, query: str = "touched") -> pd.DataFrame:
    """Disjoint splits by prompt text: each split is filled in `sizes` order with prompts seen in
    no split before (nor earlier in its own). Columns: split, then those of `generate`
    (problem_id running over the whole frame)."""
    _check_bounds(min_ops, max_ops)
    return disjoint_splits(lambda split: _problem(rng, min_ops, max_ops, query), sizes,
                           f"widen min_ops–max_ops ({min_ops}–{max_ops})")


def disjoint_splits(draw: Callable[[str], dict], sizes: Mapping[str, int], hint: str) -> pd.DataFrame:
    """Splits filled in `sizes` order by `draw(split)` (a problem row), skipping a prompt drawn
    before in any split; raises (with `hint`) when a split cannot be filled in 10 · size + 1000
    draws. Columns: split, then COLUMNS (problem_id running over the whole frame)."""
    rows, seen = [], set()
    for split, size in sizes.items():
        drawn, tries = 0, 0
        while drawn < size:
            tries += 1
            if tries > 10 * size + 1000:
                raise ValueError(f"split {split}: only {drawn} of {size} distinct prompts in {tries} draws; {hint}")
            row = draw(split)
            if row["prompt"] in seen:
                continue
            seen.add(row["prompt"])
            rows.append({"split": split, **row})
            drawn += 1
    frame = _frame([{k: v for k, v in r.items() if k != "split"} for r in rows])
    frame.insert(0, "split", [r["split"] for r in rows])
    return frame


def parse_prompt(prompt: str) -> tuple[list[int], list[tuple[str, str, int | None]], str]:
    """(initial values of A, B, C; ops as (register, '+' | '-' | '=', digit or None); queried
    register). Raises ValueError naming the first part that does not parse."""
    if not isinstance(prompt, str):
        raise ValueError(f"a prompt is a string, not {type(prompt).__name__}")
    parts = prompt.split(";")
    expected = "'A=d;B=d;C=d;', then ops 'X+;' 'X-;' 'X=d;' (X in A–C, d a digit), then '?X'"
    if len(parts) < 4:
        raise ValueError(f"unparsable prompt {prompt!r}: {len(parts) - 1} ';'-separated parts, expected {expected}")
    initial = []
    for r, part in zip(REGISTERS, parts[:3]):
        if len(part) != 3 or part[0] != r or part[1] != "=" or part[2] not in DIGITS:
            raise ValueError(f"unparsable prompt {prompt!r}: initial part {part!r} is not '{r}=d'; expected {expected}")
        initial.append(int(part[2]))
    ops = []
    for index, part in enumerate(parts[3:-1]):
        if len(part) == 2 and part[0] in REGISTERS and part[1] in "+-":
            ops.append((part[0], part[1], None))
        elif len(part) == 3 and part[0] in REGISTERS and part[1] == "=" and part[2] in DIGITS:
            ops.append((part[0], "=", int(part[2])))
        else:
            raise ValueError(f"unparsable prompt {prompt!r}: op {index + 1} {part!r} is not 'X+', 'X-' or 'X=d'")
    last = parts[-1]
    if len(last) != 2 or last[0] != "?" or last[1] not in REGISTERS:
        raise ValueError(f"unparsable prompt {prompt!r}: the query {last!r} is not '?X' with X in A–C")
    return initial, ops, last[1]


def interpret(prompt: str) -> tuple[str, int]:
    """(gold trace, answer) of a prompt, recomputed from its text alone.

    >>> interpret("A=2;B=9;C=1;A-;B-;C-;A+;B+;B-;?B")
    ('A1;B8;C0;A2;B9;B8;#8', 8)
    """
    initial, ops, query = parse_prompt(prompt)
    state = dict(zip(REGISTERS, initial))
    steps = []
    for register, op, digit in ops:
        if op == "=":
            state[register] = digit
        elif op == "+":
            state[register] = (state[register] + 1) % 10
        else:
            state[register] = (state[register] + 9) % 10
        steps.append(f"{register}{state[register]};")
    return "".join(steps) + f"#{state[query]}", state[query]


def annotate(prompt: str) -> tuple[str, str]:
    """(labels, kinds) of the gold trace of a prompt, recomputed from its text alone: the steps
    from the queried register's last `=` op on are R (all its steps if it has none)."""
    _, ops, query = parse_prompt(prompt)
    assigns = [i for i, (r, op, _) in enumerate(ops) if r == query and op == "="]
    start = assigns[-1] if assigns else 0
    labels = "".join(("RRS" if r == query and i >= start else "DDS") for i, (r, _, _) in enumerate(ops))
    kinds = "".join(("LCS" if op == "=" else "LPS") for _, op, _ in ops)
    return labels + "HA", kinds + "HA"


def parse_trace(trace: str) -> tuple[list[tuple[str, int]], int]:
    """(steps as (register, value), answer) of a trace `Xd;Xd;…;#d`. Raises ValueError on anything
    else (no `#`, a step not a register letter and a digit, text after the answer digit, …).

    >>> parse_trace("A1;B8;#8")
    ([('A', 1), ('B', 8)], 8)
    """
    def step(part: str) -> tuple[str, int] | None:
        return (part[0], int(part[1])) if len(part) == 2 and part[0] in REGISTERS and part[1] in DIGITS else None

    return parse_steps(trace, step, "a register and a digit")


def parse_steps(trace: str, step: Callable[[str], tuple | None], what: str) -> tuple[list[tuple], int]:
    """(steps, answer) of a trace `step;step;…;#d`, each step parsed by `step` (None: not a step,
    which raises naming `what` a step should be); raises ValueError on anything else."""
    if not isinstance(trace, str):
        raise ValueError(f"a trace is a string, not {type(trace).__name__}")
    if trace.count("#") != 1:
        raise ValueError(f"unparsable trace {trace!r}: {trace.count('#')} '#' marks, expected exactly one")
    body, answer = trace.split("#")
    if len(answer) != 1 or answer not in DIGITS:
        raise ValueError(f"unparsable trace {trace!r}: the answer {answer!r} after '#' is not one digit")
    if body and not body.endswith(";"):
        raise ValueError(f"unparsable trace {trace!r}: the steps before '#' do not end with ';'")
    steps = []
    for index, part in enumerate(body.split(";")[:-1] if body else []):
        parsed = step(part)
        if parsed is None:
            raise ValueError(f"unparsable trace {trace!r}: step {index + 1} {part!r} is not {what}")
        steps.append(parsed)
    return steps, int(answer)


def reward(prompt_answer: int, generated_text: str, parse: Callable[[str], tuple] | None = None) -> float:
    """1.0 iff the generated trace parses and its answer is the gold answer, else 0.0. The text
    is what follows the prompt; it is cut at the first `<eos>` (which it need not contain), and
    `<pad>` tokens after that are ignored with it; anything else unparsable scores 0. parse: the
    task's trace parser returning (steps, answer) (RegTrace's `parse_trace` by default)."""
    text = generated_text.split(EOS, 1)[0]
    try:
        _, answer = (parse or parse_trace)(text)
    except ValueError:
        return 0.0
    return 1.0 if answer == int(prompt_answer) else 0.0


def facts(prompt: str) -> dict:
    """What the interpreter recomputes from a prompt's text alone, by dataset column: trace,
    answer, query, n_ops, labels, kinds. Raises ValueError when the prompt does not parse."""
    _, ops, query = parse_prompt(prompt)
    trace, answer = interpret(prompt)
    labels, kinds = annotate(prompt)
    return {"trace": trace, "answer": answer, "query": query, "n_ops": len(ops), "labels": labels, "kinds": kinds}


def max_new(max_ops: int) -> int:
    """Response budget: the longest gold trace (3 tokens per op: letter, digit, `;`; then `#` and
    the answer) plus `<eos>`."""
    return 3 * max_ops + 3
