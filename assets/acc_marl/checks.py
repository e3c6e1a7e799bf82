"""Blocking data-quality predicates of acc_marl — pure, no Dagster import.

Each returns the list of problems (empty = pass) or a Finding (assets.common.findings)."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from assets.acc_marl import benchmark, runs
from assets.acc_marl import dfa as dfa_mod
from assets.acc_marl import layouts as lay_mod
from assets.common.findings import finding

ROOT_ROLES = ("train", "test", "ood", "scenario")
NEXT_ID_SPOT = 200          # progressions re-derived by minimisation (a deterministic subset)


def layouts_valid(table: pd.DataFrame):
    """Every layout parses (rectangular, known cells, each door has a button and vice versa,
    agents on free cells) and every token is reachable on the torus with the doors open."""
    problems = []
    for r in table.itertuples():
        try:
            lay = lay_mod.parse(r.text, r.layout)
        except lay_mod.LayoutError as err:
            problems.append(str(err))
            continue
        reach = lay_mod.reachable(lay, doors_open=True)
        bad = sorted({int(t) for t in lay.token[(lay.token >= 0) & ~reach]})
        if bad:
            problems.append(f"{r.layout}: tokens {bad} unreachable even with every door open")
        if json.loads(r.unreachable_tokens) != bad:
            problems.append(f"{r.layout}: stored unreachable_tokens disagree with the layout")
    return finding(problems, ok=f"{len(table)} layouts valid")


def pool_valid(pool: pd.DataFrame, layouts: pd.DataFrame, params=None):
    """Every DFA minimal and canonical (re-minimising is the identity); roots satisfiable in
    every layout (an accepting word over tokens present) and non-trivial; in-distribution
    roots ≤ max size, OOD roots above it; test languages disjoint from training ones (hash);
    next_id closed (ids in range; a subset re-derived by advance + minimise)."""
    problems = []
    uniq = pool.drop_duplicates("id").sort_values("id")
    n = len(uniq)
    tables = {int(r.id): (np.array(json.loads(r.trans), dtype=np.int64), np.array(json.loads(r.accept), dtype=bool))
              for r in uniq.itertuples()}
    not_canon = [i for i, (t, a) in tables.items() if not dfa_mod.is_canonical(t, a)]
    if not_canon:
        problems.append(f"{len(not_canon)} DFA(s) not minimal/canonical, e.g. id {not_canon[0]}")
    tokens = {r.layout: set(json.loads(r.tokens)) for r in layouts.itertuples()}
    roots = pool[pool["role"].isin(ROOT_ROLES)]
    unsat = [(int(r.id), name) for r in roots.itertuples() for name, toks in tokens.items()
             if dfa_mod.accepting_word(*tables[int(r.id)], allowed=toks) is None]
    if unsat:
        problems.append(f"{len(unsat)} root DFA(s) unsatisfiable in a layout, e.g. id {unsat[0][0]} in {unsat[0][1]}")
    trivial_roots = roots[roots["n_states"] <= 1]
    if len(trivial_roots):
        problems.append(f"{len(trivial_roots)} root DFA(s) are already done (≤ 1 state)")
    if params is not None:
        mx = params.pool.max_size
        big = pool[pool["role"].isin(("train", "test")) & (pool["n_states"] > mx)]
        if len(big):
            problems.append(f"{len(big)} in-distribution DFA(s) larger than max size {mx}")
        small = pool[(pool["role"] == "ood") & (pool["n_states"] <= mx)]
        if len(small):
            problems.append(f"{len(small)} OOD DFA(s) not above the in-distribution max {mx} states")
    train = set(pool.loc[pool["role"] == "train", "hash"])
    leak = pool[(pool["role"] == "test") & pool["hash"].isin(train)]
    if len(leak):
        problems.append(f"test ∩ train ≠ ∅: {len(leak)} test DFA(s) share a language with training DFAs")
    nxt = np.array([json.loads(s) for s in uniq["next_id"]], dtype=np.int64)
    if nxt.min() < 0 or nxt.max() >= n:
        problems.append(f"next_id not closed: ids outside 0..{n - 1}")
    else:
        index = {dfa_mod.key(*tables[i]): i for i in tables}
        step = max(1, n // NEXT_ID_SPOT)
        wrong = [(i, tok) for i in range(0, n, step) for tok in range(nxt.shape[1])
                 if index.get(dfa_mod.key(*dfa_mod.advance(*tables[i], tok))) != nxt[i, tok]]
        if wrong:
            problems.append(f"next_id wrong on {len(wrong)} (id, token) pair(s), e.g. {wrong[0]}")
    counts = pool.groupby(["role", "sampler"]).size().to_dict()
    return finding(problems, ok=f"{n} DFAs closed under progression; roots {dict(sorted(counts.items()))}",
                   n_dfas=n)


def policy_valid(table: pd.DataFrame):
    """Finite weights and training log, final entropy > 0."""
    problems = []
    for r in table.itertuples():
        log = pd.DataFrame(json.loads(r.log))
        numeric = log.drop(columns=["success", "length", "team_return"]).to_numpy(dtype=float)
        if not np.isfinite(numeric).all():
            problems.append(f"{r.layout}/{r.variant}/seed {r.seed}: non-finite training log")
        if not r.finite_weights:
            problems.append(f"{r.layout}/{r.variant}/seed {r.seed}: non-finite weights")
        if not r.final_entropy > 0:
            problems.append(f"{r.layout}/{r.variant}/seed {r.seed}: final entropy {r.final_entropy:.3g} ≤ 0")
    return finding(problems, ok=f"{len(table)} policies finite, min final entropy "
                   f"{table['final_entropy'].min():.3f}")


def eval_valid(table: pd.DataFrame, params=None):
    """Grid complete (every policy × its sampler × split × assignment cell has the episodes)
    and success only when all agents accept (never with a rejecting DFA)."""
    problems = []
    bad = table[table["success"] & (~table["all_accept"] | table["any_reject"])]
    if len(bad):
        problems.append(f"{len(bad)} episode(s) count success although some DFA did not accept")
    if params is not None:
        counts = table.groupby(["layout", "variant", "seed", "sampler", "split", "assignment"]).size()
        for name in params.layouts:
            for v in (*params.variants, "random"):
                for s in params.seeds:
                    for cell in runs.eval_cells(params, v):
                        got = int(counts.get((name, v, s, *cell), 0))
                        if got != params.eval.episodes:
                            problems.append(f"{name}/{v}/seed {s}/{'/'.join(cell)}: {got} episodes, "
                                            f"expected {params.eval.episodes}")
    gaps = trained_gap(table)
    ok = f"{len(table)} episodes in a complete grid" + ("; " + "; ".join(gaps.values()) if gaps else "")
    return finding(problems[:20] + ([f"... {len(problems) - 20} more"] if len(problems) > 20 else []),
                   ok=ok, trained_minus_random=gaps)


def trained_gap(table: pd.DataFrame) -> dict[str, str]:
    """Per layout, the premise of claims 1–4 as measured: trained ACC-MARL − random-policy success
    on the in-distribution cell (RAD, random assignment), paired CI over seeds, and whether its
    lower bound clears 0. Reported, not blocking: a failed premise makes the claims inconclusive."""
    if not {"pbrs", "random"} <= set(table["variant"]):
        return {}
    cells = benchmark.cell_table(table)
    out = {}
    for name, prem in zip(sorted(table["layout"].unique()), benchmark.trained_premise(cells, sorted(
            table["layout"].unique()))):
        out[name] = f"{name} trained − random {prem.measured} ({'beats random' if prem.met else 'NOT above random'})"
    return out
