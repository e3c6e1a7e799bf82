"""The MiniVerus corpus: programs sampled from the four template families (spec §5).

`generate_corpus(n, seed)` draws n programs round-robin over the families (and over each
family's templates), with seeded parameters; every program is parsed and printed back in
canonical form, and duplicates are redrawn. Rows: program_id, family, template, params
(JSON), text (canonical), md5.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any

import numpy as np
import pandas as pd

from assets.vcot import lang
from assets.vcot import templates as TP

COMPARISONS = ("==", "!=", "<", "<=", ">", ">=")


def _fill_affine(rng: np.random.Generator) -> tuple[str, dict]:
    p = {"K": int(rng.choice([1, 2, 3, 5])), "C": int(rng.integers(-3, 6))}
    second = bool(rng.random() < 0.6)
    text = TP.FILL_AFFINE.substitute(p, SECOND="", POST="val(k)")
    if second:
        p["T"] = int(rng.integers(4, 13))
        loop = TP.Template(TP.CLAMP_LOOP).substitute(T=p["T"])
        text = TP.CLAMP_SPEC.substitute(T=p["T"]) + TP.FILL_AFFINE.substitute(p, SECOND=loop, POST="clamp(val(k))")
    p["second_loop"] = second
    return text, p


def _pattern_set(rng: np.random.Generator) -> tuple[str, dict]:
    p0, p1 = (int(x) for x in rng.choice(np.arange(-5, 10), size=2, replace=False))
    p = {"P0": p0, "P1": p1, "LO": min(p0, p1) - int(rng.integers(0, 3)), "HI": max(p0, p1) + int(rng.integers(0, 3))}
    return TP.PATTERN_SET.substitute(p), p


def _count(rng: np.random.Generator) -> tuple[str, dict]:
    p = {"OP": str(rng.choice(COMPARISONS))}
    return TP.COUNT.substitute(p), p


def _find(rng: np.random.Generator) -> tuple[str, dict]:
    p = {"OP": str(rng.choice(COMPARISONS)), "D": int(rng.integers(1, 10))}
    return TP.FIND.substitute(p), p


def _all_bounded(rng: np.random.Generator) -> tuple[str, dict]:
    p = {"LO": int(rng.integers(-5, 1)), "HI": int(rng.integers(1, 21))}
    return TP.ALL_BOUNDED.substitute(p), p


def _pair_sum(rng: np.random.Generator) -> tuple[str, dict]:
    p = {"W": int(rng.choice([1, 2, 3]))}
    return TP.PAIR_SUM.substitute(p), p


def _copy_scale(rng: np.random.Generator) -> tuple[str, dict]:
    p = {"K": int(rng.choice([1, 2, 3, -1, -2])), "C": int(rng.integers(-4, 5))}
    second = bool(rng.random() < 0.6)
    p["second_loop"] = second
    return TP.COPY_SCALE.substitute(p, SECOND=TP.COPY_CHECK if second else ""), p


def _concat(rng: np.random.Generator) -> tuple[str, dict]:
    p = {"D": int(rng.integers(0, 6))}
    return TP.CONCAT.substitute(p), p


def _alt_sum(rng: np.random.Generator) -> tuple[str, dict]:
    p = {"M": int(rng.choice([2, 3])), "B": int(rng.integers(-2, 3))}
    return TP.ALT_SUM.substitute(p), p


def _bsearch(rng: np.random.Generator) -> tuple[str, dict]:
    p = {"DIV": int(rng.choice([2, 3, 4])), "D": int(rng.integers(0, 6)), "order": str(rng.choice(["asc", "desc"]))}
    ops = {"LE": "<=", "LT": "<", "GT": ">"} if p["order"] == "asc" else {"LE": ">=", "LT": ">", "GT": "<"}
    key = f"key + {p['D']}" if p["D"] else "key"
    return TP.BSEARCH.substitute(p, KEY=key, **ops), p


FAMILY_TEMPLATES: dict[str, dict[str, Any]] = {
    "diffy": {"fill_affine": _fill_affine, "pattern_set": _pattern_set},
    "mbpp": {"count": _count, "find_first": _find, "all_bounded": _all_bounded, "pair_sum": _pair_sum},
    "clover": {"copy_map": _copy_scale, "concat": _concat, "alt_sum": _alt_sum},
    "bsearch": {"search": _bsearch},
}


def canonical(text: str) -> str:
    """Parse and print back (the corpus stores canonical text only)."""
    program = lang.parse(text)
    lang.require_valid(program)
    return lang.print_program(program)


def md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()


def generate_corpus(n_programs: int, seed: int, families: tuple[str, ...] = TP.FAMILIES,
                    max_tries: int = 50) -> pd.DataFrame:
    """n_programs distinct programs, round-robin over families and their templates."""
    rng = np.random.default_rng(seed)
    rows, seen = [], set()
    counters = {f: 0 for f in families}
    for k in range(n_programs):
        family = families[k % len(families)]
        names = list(FAMILY_TEMPLATES[family])
        name = names[counters[family] % len(names)]
        counters[family] += 1
        for _ in range(max_tries):
            text, params = FAMILY_TEMPLATES[family][name](rng)
            text = canonical(text)
            digest = md5(text)
            if digest not in seen:
                break
        else:
            # the template's parameter space is exhausted: take another template of the family
            for other in names:
                text, params = FAMILY_TEMPLATES[family][other](rng)
                text = canonical(text)
                digest = md5(text)
                if digest not in seen:
                    name = other
                    break
            else:
                raise ValueError(f"cannot draw {n_programs} distinct programs from family {family}")
        seen.add(digest)
        rows.append({"program_id": f"{family}_{name}_{k:03d}", "family": family, "template": name,
                     "params": json.dumps(params, sort_keys=True), "text": text, "md5": digest})
    return pd.DataFrame(rows)
