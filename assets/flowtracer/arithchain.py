"""ArithChain, the spec's FlowTracer task (the gpu profile's): a chain of single-operation
assignments mod 10 with distractor steps, and a gold trace that evaluates every computed
variable — pure Python/numpy/pandas, no Dagster. Same module interface as RegTrace
(assets.flowtracer.data), whose generic helpers (encoding, disjoint splits, reward) it reuses.

A problem sets two literal variables to digits, then computes `depth` chain variables, each from
the previous one (the first from a literal) and a digit or a literal, and `distractors` variables
from any earlier variable (so nothing on the chain reads them: dead ends), interleaved at random;
then it asks for the last chain variable. Letters are a random draw of a–l, so a letter says
nothing about its role. Operations are `+ - *` mod 10. The gold trace writes every computed
variable in prompt order, then `#` and the answer:

    prompt   a=4;b=7;c=a+b;d=c*3;e=b-2;?d
    trace    c=1;d=3;e=5;#3                        answer 3
    sequence <bos>a=4;b=7;c=a+b;d=c*3;e=b-2;?dc=1;d=3;e=5;#3<eos>

Per trace character, two annotation strings of the trace's length:

    labels  R relevant: a step (letter, `=`, digit) computing the queried variable or one of its
              ancestors in the dependency DAG      D distractor: any other step
            S the separator `;`     H the `#`     A the answer digit
    kinds   L variable letter   E the `=`   V value digit   S separator   H `#`   A answer digit

    trace   c=1;d=3;e=5;#3
    labels  RRRSRRRSDDDSHA
    kinds   LEVSLEVSLEVSHA

`n_ops` is the chain depth: the number of relevant steps. Deviations from the spec's sketch [I]:
12 letters, not 8 (2 literals + 6 chain + 3 distractor variables need 11), so 32 tokens; and
sequences up to 104 tokens, not 64 (depth 6 with 3 distractors takes 104 in this format).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from assets.flowtracer import data as D

NAME = "ArithChain"
LETTERS = tuple("abcdefghijkl")
OPERATORS = ("+", "-", "*")
SYMBOLS = ("+", "-", "*", "=", ";", "?", "#")
VOCAB = [*D.SPECIALS, *LETTERS, *D.DIGITS, *SYMBOLS]
TOKEN_ID = {t: i for i, t in enumerate(VOCAB)}
PAD_ID, BOS_ID, EOS_ID = D.PAD_ID, D.BOS_ID, D.EOS_ID
assert [TOKEN_ID[s] for s in D.SPECIALS] == [PAD_ID, BOS_ID, EOS_ID]
CHARACTERS = frozenset(t for t in VOCAB if t not in D.SPECIALS)
LITERALS = 2
DEFAULT_MIN_OPS, DEFAULT_MAX_OPS = 3, 6          # chain depth
DEFAULT_DISTRACTORS = (1, 3)
MAX_TOKENS = 104                                  # 2 + 4·2 + 6·9 + 2 + 4·9 + 2 at depth 6 with 3 distractors
STRUCTURAL_KINDS = frozenset("LES")               # hubs: letters, `=`, separators
STEP_CHARS = 3                                    # a step's characters before its `;` (letter, `=`, digit)
LABELS = {"R": "relevant step", "D": "distractor step", "S": "separator `;`", "H": "`#`", "A": "answer digit"}
KINDS = {"L": "variable letter", "E": "`=`", "V": "value digit", "S": "separator `;`", "H": "`#`",
         "A": "answer digit"}
COLUMNS = D.COLUMNS

trace_start, n_tokens, sequence = D.trace_start, D.n_tokens, D.sequence


def vocab_md5() -> str:
    return D.vocab_md5(VOCAB)


def encode(text: str) -> list[int]:
    """Token ids of `text` in the ArithChain vocabulary.

    >>> encode("<bos>a=4;?a4<eos>")
    [1, 3, 28, 19, 29, 30, 3, 19, 2]
    """
    return D.encode(text, TOKEN_ID)


def decode(ids: Sequence[int]) -> str:
    return D.decode(ids, VOCAB)


def sequence_ids(prompt: str, trace: str) -> list[int]:
    return D.sequence_ids(prompt, trace, TOKEN_ID)


def _apply(op: str, x: int, y: int) -> int:
    return (x + y) % 10 if op == "+" else (x - y) % 10 if op == "-" else (x * y) % 10


def _problem(rng: np.random.Generator, min_depth: int, max_depth: int, distractors: tuple[int, int]) -> dict:
    """One problem drawn forward (the generator's own logic; `facts` recomputes every column from
    the prompt text)."""
    depth = int(rng.integers(min_depth, max_depth + 1))
    k = int(rng.integers(distractors[0], distractors[1] + 1))
    letters = [LETTERS[i] for i in rng.permutation(len(LETTERS))[:LITERALS + depth + k]]
    literals, computed = letters[:LITERALS], letters[LITERALS:]
    values = {v: int(rng.integers(10)) for v in literals}
    prompt = [f"{v}={values[v]};" for v in literals]
    roles = list(rng.permutation(["chain"] * depth + ["distractor"] * k))
    defined, chain = list(literals), []
    trace, labels, kinds = [], [], []
    for name, role in zip(computed, roles):
        if role == "chain":
            left = chain[-1] if chain else literals[int(rng.integers(LITERALS))]
            pool = literals                      # the chain reads literals and itself only
        else:
            left = defined[int(rng.integers(len(defined)))]
            pool = defined
        op = OPERATORS[int(rng.integers(len(OPERATORS)))]
        if rng.random() < 0.5:
            right = str(int(rng.integers(10)))
            y = int(right)
        else:
            right = pool[int(rng.integers(len(pool)))]
            y = values[right]
        values[name] = _apply(op, values[left], y)
        prompt.append(f"{name}={left}{op}{right};")
        trace.append(f"{name}={values[name]};")
        labels.append(("RRR" if role == "chain" else "DDD") + "S")
        kinds.append("LEVS")
        defined.append(name)
        if role == "chain":
            chain.append(name)
    query = chain[-1]
    prompt.append(f"?{query}")
    trace.append(f"#{values[query]}")
    prompt_text, trace_text = "".join(prompt), "".join(trace)
    length = n_tokens(prompt_text, trace_text)
    assert length <= MAX_TOKENS, f"{length} tokens > {MAX_TOKENS}: lower the depth or distractors"
    return {"prompt": prompt_text, "trace": trace_text, "answer": values[query], "query": query, "n_ops": depth,
            "n_tokens": length, "labels": "".join(labels) + "HA", "kinds": "".join(kinds) + "HA"}


def _check(ranges: Mapping[str, tuple[int, int]], distractors: tuple[int, int]) -> None:
    for split, (low, high) in ranges.items():
        if not 1 <= low <= high:
            raise ValueError(f"split {split}: need 1 ≤ min depth ≤ max depth, got {low}–{high}")
    if not 0 <= distractors[0] <= distractors[1]:
        raise ValueError(f"need 0 ≤ min distractors ≤ max distractors, got {list(distractors)}")
    longest = max(high for _, high in ranges.values()) + distractors[1]
    if LITERALS + longest > len(LETTERS):
        raise ValueError(f"{LITERALS} literals + depth + distractors = {LITERALS + longest} variables > "
                         f"{len(LETTERS)} letters")


def splits(rng: np.random.Generator, sizes: Mapping[str, int], ranges: Mapping[str, tuple[int, int]],
           distractors: tuple[int, int] = DEFAULT_DISTRACTORS) -> pd.DataFrame:
    """Disjoint splits by prompt text, in `sizes` order; split s draws its chain depth uniformly
    in ranges[s] (train shallow, held-out deep: the spec's headroom for RL) and its distractor
    count uniformly in `distractors`. Columns: split, then COLUMNS."""
    _check({s: ranges[s] for s in sizes}, distractors)
    return D.disjoint_splits(lambda split: _problem(rng, *ranges[split], distractors), sizes,
                             f"widen the depth range {list(ranges[next(iter(sizes))])} or the distractors")


def parse_prompt(prompt: str) -> tuple[dict[str, int], list[tuple[str, str, str, str]], str]:
    """(literal values, computed steps as (name, left, operator, right), queried variable). Every
    name is defined once, every operand before it is read, the query is a computed variable.
    Raises ValueError naming the first part that does not parse."""
    if not isinstance(prompt, str):
        raise ValueError(f"a prompt is a string, not {type(prompt).__name__}")
    parts = prompt.split(";")
    expected = "literals 'x=d;', then steps 'x=y○z;' (○ in + - *, z a variable or digit), then '?x'"
    literals: dict[str, int] = {}
    steps: list[tuple[str, str, str, str]] = []
    for index, part in enumerate(parts[:-1]):
        where = f"unparsable prompt {prompt!r}: part {index + 1} {part!r}"
        if len(part) < 3 or part[0] not in LETTERS or part[1] != "=":
            raise ValueError(f"{where} is not 'x=…'; expected {expected}")
        name = part[0]
        if name in literals or any(name == s[0] for s in steps):
            raise ValueError(f"{where} defines {name} a second time")
        known = set(literals) | {s[0] for s in steps}
        if len(part) == 3 and part[2] in D.DIGITS and not steps:
            literals[name] = int(part[2])
        elif len(part) == 5 and part[3] in OPERATORS and part[2] in known and (part[4] in known or
                                                                               part[4] in D.DIGITS):
            steps.append((name, part[2], part[3], part[4]))
        else:
            raise ValueError(f"{where} is neither a literal (before any step) nor a step on defined variables; "
                             f"expected {expected}")
    last = parts[-1]
    if len(last) != 2 or last[0] != "?" or last[1] not in {s[0] for s in steps}:
        raise ValueError(f"unparsable prompt {prompt!r}: the query {last!r} is not '?x' with x a computed variable")
    return literals, steps, last[1]


def interpret(prompt: str) -> tuple[str, int]:
    """(gold trace, answer) of a prompt, recomputed from its text alone.

    >>> interpret("a=4;b=7;c=a+b;d=c*3;e=b-2;?d")
    ('c=1;d=3;e=5;#3', 3)
    """
    literals, steps, query = parse_prompt(prompt)
    values = dict(literals)
    trace = []
    for name, left, op, right in steps:
        values[name] = _apply(op, values[left], int(right) if right in D.DIGITS else values[right])
        trace.append(f"{name}={values[name]};")
    return "".join(trace) + f"#{values[query]}", values[query]


def relevant_steps(prompt: str) -> list[bool]:
    """Per computed step: whether it computes the queried variable or one of its ancestors."""
    _, steps, query = parse_prompt(prompt)
    needed = {query}
    relevant = [False] * len(steps)
    for i in range(len(steps) - 1, -1, -1):
        name, left, _, right = steps[i]
        if name in needed:
            relevant[i] = True
            needed |= {left, right}
    return relevant


def annotate(prompt: str) -> tuple[str, str]:
    """(labels, kinds) of the gold trace, recomputed from the prompt's dependency DAG."""
    relevant = relevant_steps(prompt)
    labels = "".join("RRRS" if r else "DDDS" for r in relevant)
    return labels + "HA", "LEVS" * len(relevant) + "HA"


def facts(prompt: str) -> dict:
    """The dataset columns the interpreter recomputes from a prompt (see data.facts)."""
    _, _, query = parse_prompt(prompt)
    trace, answer = interpret(prompt)
    labels, kinds = annotate(prompt)
    return {"trace": trace, "answer": answer, "query": query, "n_ops": sum(relevant_steps(prompt)),
            "labels": labels, "kinds": kinds}


def parse_trace(trace: str) -> tuple[list[tuple[str, int]], int]:
    """(steps as (variable, value), answer) of a trace `x=d;…;#d`; raises ValueError otherwise.

    >>> parse_trace("c=1;d=3;#3")
    ([('c', 1), ('d', 3)], 3)
    """
    def step(part: str) -> tuple[str, int] | None:
        ok = len(part) == 3 and part[0] in LETTERS and part[1] == "=" and part[2] in D.DIGITS
        return (part[0], int(part[2])) if ok else None

    return D.parse_steps(trace, step, "'x=d'")


def reward(prompt_answer: int, generated_text: str) -> float:
    """1.0 iff the generated trace parses and its answer is the gold answer (see data.reward)."""
    return D.reward(prompt_answer, generated_text, parse_trace)


def max_new(max_steps: int) -> int:
    """Response budget: the longest gold trace (4 tokens per computed step: letter, `=`, digit,
    `;`; then `#` and the answer) plus `<eos>`. max_steps: chain depth + distractors."""
    return 4 * max_steps + 3
