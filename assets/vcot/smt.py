"""Z3 under Verus's solver options: solver modes, rlimit checks, proof DAGs and rule tiers.

Verus's prelude options (spec §3, read from a Verus-emitted .smt2): auto_config=false,
smt.mbqi=false, smt.case_split=3, smt.qi.eager_threshold=100.0, smt.delay_units=true,
smt.arith.solver=2, smt.arith.nl=false, pi.enabled=false, rewriter.sort_disjunctions=false.
Budgets are Z3 resource limits (`rlimit`), never wall-clock timeouts, so verdicts repeat.
Proofs need `z3.Context(proof=True)` created before the solver (Z3 issue #1137).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import z3

Z3_VERSION = z3.get_version_string()

# Verus's options under the names the SMT solver object takes (module prefix "smt." dropped;
# rewriter.sort_disjunctions is the solver's sort_disjunctions); pi.enabled is global
VERUS_OPTIONS: dict[str, Any] = {
    "auto_config": False, "mbqi": False, "case_split": 3, "qi.eager_threshold": 100.0,
    "delay_units": True, "arith.solver": 2, "arith.nl": False, "sort_disjunctions": False,
}
MODES = ("verus", "restricted", "default", "judge")

# The 36 rule names of VCoT-Lift's prompt in three importance tiers (spec §Method): 8 / 12 / 16.
# The prompt's low tier lists 17 entries; "=" is the equality connective, not an inference
# rule, so it is left out (the [S] notes count 16).
HIGH_RULES = ("lemma", "th-lemma", "mp", "mp~", "unit-resolution", "quant-intro", "quant-inst", "skolemize")
MEDIUM_RULES = ("asserted", "hypothesis", "and-elim", "not-or-elim", "trans", "trans*", "monotonicity", "der",
                "rewrite", "rewrite*", "def-axiom", "apply-def")
LOW_RULES = ("true", "~", "iff-true", "iff-false", "goal", "refl", "symm", "commutativity", "pull-quant",
             "push-quant", "elim-unused", "distributivity", "nnf-pos", "nnf-neg", "iff-oeq", "def-intro")
RULE_TIER = {**{r: "high" for r in HIGH_RULES}, **{r: "medium" for r in MEDIUM_RULES},
             **{r: "low" for r in LOW_RULES}}
# Z3's own spelling of some rules in the legacy proof format
Z3_ALIASES = {"sk": "skolemize", "iff~": "iff-oeq", "true-axiom": "true", "intro-def": "def-intro"}
# binder wrappers Z3 emits around the body proofs of quant-intro / nnf (not inferences)
STRUCTURAL = ("proof-bind",)
# the checker categories of VCoT-Lift (its five checker prompts)
CATEGORIES = {"Lemma": ("lemma",), "Mp": ("mp", "mp~"), "Quant": ("quant-intro", "quant-inst", "skolemize"),
              "ThLemma": ("th-lemma",), "UnitRes": ("unit-resolution",)}
CATEGORY_OF = {r: c for c, rules in CATEGORIES.items() for r in rules}

_GLOBALS_SET = False


class SolverError(RuntimeError):
    """A query could not be decided within its budget, or a proof has an unknown rule."""


def ensure_globals() -> None:
    """Process-wide options Verus sets (pattern inference off: every quantifier carries
    explicit triggers)."""
    global _GLOBALS_SET
    if not _GLOBALS_SET:
        z3.set_param("pi.enabled", False)
        _GLOBALS_SET = True


def make_solver(ctx: z3.Context, mode: str = "verus", rlimit: int = 0, seed: int = 0) -> z3.Solver:
    """A solver in `ctx`: verus (Verus's options), restricted (verus + no e-matching: local
    reasoning only; the caller also leaves spec-fn axioms out), judge (verus + MBQI, for
    equivalence of two blocks over a quantifier-free context), default (Z3's defaults)."""
    if mode not in MODES:
        raise ValueError(f"solver mode {mode!r} not in {MODES}")
    ensure_globals()
    solver = z3.Solver(ctx=ctx)
    if mode != "default":
        for key, value in VERUS_OPTIONS.items():
            solver.set(key, value)
    if mode == "restricted":
        solver.set("ematching", False)
    if mode == "judge":
        solver.set("mbqi", True)
    solver.set("random_seed", int(seed))
    if rlimit:
        solver.set("rlimit", int(rlimit))
    return solver


@dataclass(frozen=True)
class Verdict:
    status: str          # unsat (goal proved) | sat | unknown
    rlimit: int          # resource units used
    reason: str = ""

    @property
    def proved(self) -> bool:
        return self.status == "unsat"


def rlimit_used(solver: z3.Solver) -> int:
    stats = solver.statistics()
    return int(stats.get_key_value("rlimit count")) if "rlimit count" in stats.keys() else 0


def run(solver: z3.Solver) -> Verdict:
    """Check; the rlimit used is this check's share (Z3 counts per context, cumulatively)."""
    before = rlimit_used(solver)
    result = solver.check()
    status = "unsat" if result == z3.unsat else "sat" if result == z3.sat else "unknown"
    reason = solver.reason_unknown() if status == "unknown" else ""
    return Verdict(status, rlimit_used(solver) - before, reason)


def prove(assumptions: Sequence[z3.BoolRef], goal: z3.BoolRef, ctx: z3.Context, mode: str = "verus",
          rlimit: int = 0, seed: int = 0) -> Verdict:
    """Is `goal` entailed by the assumptions? (checks assumptions ∧ ¬goal for unsat)."""
    solver = make_solver(ctx, mode, rlimit, seed)
    solver.add(z3.And(*assumptions, z3.Not(goal)))
    return run(solver)


def smt2_text(assertions: Sequence[z3.BoolRef], ctx: z3.Context) -> str:
    """SMT-LIB2 text of a query (declarations, assertions, check-sat)."""
    solver = z3.Solver(ctx=ctx)
    for a in assertions:
        solver.add(a)
    return solver.to_smt2()


def parse_smt2(text: str, ctx: z3.Context) -> list[z3.BoolRef]:
    return list(z3.parse_smt2_string(text, ctx=ctx))


# ----------------------------------------------------------------------------- proofs

@dataclass
class ProofNode:
    """One inference of a Z3 proof: its rule, premise node ids and conclusion (a z3 term)."""

    nid: int
    rule: str
    premises: tuple[int, ...]
    conclusion: Any
    depends_on_goal: bool = False
    hypotheses: frozenset = field(default_factory=frozenset)


def canonical_rule(name: str) -> str:
    """The tier-table name of a Z3 proof rule; SolverError for a rule outside the 36."""
    rule = Z3_ALIASES.get(name, name)
    if rule not in RULE_TIER and rule not in STRUCTURAL:
        raise SolverError(f"unknown proof rule {name!r} (not one of the 36 tiered rules); "
                          f"z3 {Z3_VERSION} may use a different proof format")
    return rule


def proof_dag(proof: z3.ExprRef, negated_goal: z3.BoolRef | None = None) -> list[ProofNode]:
    """The proof DAG in topological order (premises before conclusions).

    Nodes inside binder lambdas (quant-intro bodies) are included in the order but have
    conclusions with bound variables. `depends_on_goal` marks nodes that rest on the
    asserted negated goal (their conclusions are not facts of the context);
    `hypotheses` are the undischarged hypothesis conclusions (ids) they rest on.
    """
    order: list[ProofNode] = []
    index: dict[int, ProofNode] = {}
    goal_id = negated_goal.get_id() if negated_goal is not None else None
    stack: list[tuple[Any, bool]] = [(proof, False)]
    while stack:
        node, ready = stack.pop()
        nid = node.get_id()
        if nid in index:
            continue
        name = node.decl().name()
        children = node.children()
        if name in STRUCTURAL:
            lam = children[0] if children else None
            premises = [lam.body()] if lam is not None and z3.is_quantifier(lam) else []
            conclusion = None
        else:
            premises, conclusion = (children[:-1], children[-1]) if children else ([], None)
        if not ready:
            stack.append((node, True))
            stack.extend((p, False) for p in reversed(premises) if p.get_id() not in index)
            continue
        rule = canonical_rule(name)
        pre_ids = tuple(p.get_id() for p in premises)
        pre_nodes = [index[i] for i in pre_ids if i in index]
        if rule == "asserted":
            dep = goal_id is not None and conclusion is not None and conclusion.get_id() == goal_id
            hyps: frozenset = frozenset()
        elif rule == "hypothesis":
            dep, hyps = False, frozenset({conclusion.get_id()})
        else:
            dep = any(n.depends_on_goal for n in pre_nodes)
            hyps = frozenset() if rule == "lemma" or not pre_nodes else frozenset().union(
                *(n.hypotheses for n in pre_nodes))
        pn = ProofNode(nid, rule, pre_ids, conclusion, dep, hyps)
        index[nid] = pn
        order.append(pn)
    return order


def rule_histogram(nodes: Iterable[ProofNode]) -> dict[str, int]:
    out: dict[str, int] = {}
    for n in nodes:
        if n.rule in STRUCTURAL:
            continue
        out[n.rule] = out.get(n.rule, 0) + 1
    return dict(sorted(out.items()))


def tier_counts(histogram: dict[str, int]) -> dict[str, int]:
    out = {"high": 0, "medium": 0, "low": 0}
    for rule, count in histogram.items():
        out[RULE_TIER[rule]] += count
    return out


def prove_with_proof(assertions: Sequence[z3.BoolRef], ctx: z3.Context, rlimit: int,
                     seed: int = 0) -> tuple[Verdict, z3.ExprRef | None]:
    """Check the assertions (the last one is the negated goal) in a proof context; the proof
    term when unsat."""
    solver = make_solver(ctx, "verus", rlimit, seed)
    for a in assertions:
        solver.add(a)
    verdict = run(solver)
    return verdict, (solver.proof() if verdict.proved else None)


def proof_context() -> z3.Context:
    """A fresh context with proof production on (created before any solver in it)."""
    ensure_globals()
    return z3.Context(proof=True)
