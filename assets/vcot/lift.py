"""Deterministic VCoT-Lift: Z3 proofs → explicit, checked, pruned, repaired verification steps.

The LLM stages of VCoT-Lift become solver-checked procedures (spec §4):

1. proofs — every obligation's query (path ∧ ¬goal) in a proof context; its proof DAG
   histogrammed by the 36 rule names and three tiers;
2. transform — every high-tier node whose conclusion is a fact of the context (it rests
   neither on the negated goal nor on an undischarged hypothesis) is translated to source
   terms at the latest slot on the obligation's path where all its constants are visible
   (quant-inst: the instance; clauses: implications), and kept as a candidate step when it is
   *non-trivial* (not provable locally: no e-matching, no spec-fn axioms, small rlimit);
   candidates go in front of their slot in proof-DAG (chain) order, each with provenance
   (query id, proof node id, rule);
3. check — the program with the steps is verified (each step is an obligation); coverage
   per category (Lemma, Mp, Quant, ThLemma, UnitRes) = kept / candidates; a dropped step is
   retried with its translatable premises in front of it, for ≤ max_rounds rounds, until every
   category reaches the coverage target;
4. prune — a step is removed when trivial at its point or redundant (entailed locally by the
   path and the earlier kept steps, which covers syntactic duplicates); duplicate invariants
   of a loop are removed;
5. repair — the whole program is verified; a failing step is dropped, a failing original
   obligation drops steps on its path by delta debugging; ≤ max_repair rounds, else the
   program is excluded (LiftFailure names the obligations).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import z3

from assets.vcot import lang as L
from assets.vcot import smt, vc
from assets.vcot import translate as T


class LiftFailure(RuntimeError):
    """A program could not be lifted (does not verify, or repair failed)."""


@dataclass(frozen=True)
class LiftConfig:
    rlimit: int                 # per-query cap (solver_budget)
    trivial_rlimit: int         # the restricted solver's small budget
    coverage_target: float = 0.9
    max_rounds: int = 5
    max_repair: int = 10
    seed: int = 0


@dataclass
class Step:
    sid: str
    expr: Any
    text: str
    slot: tuple
    rule: str
    category: str
    provenance: list            # [(obligation id, proof node id, rule)]
    status: str = "kept"        # kept | dropped | pruned_trivial | pruned_redundant | repair_dropped
    round: int = 1
    node: Any = None            # the ProofNode (during the lift only)
    assumptions: tuple = ()     # facts at the slot in the original program (during the lift)

    def row(self) -> dict:
        return {"step_id": self.sid, "text": self.text, "slot": repr(self.slot), "rule": self.rule,
                "category": self.category, "status": self.status, "round": self.round,
                "provenance": ";".join(f"{o}#{n}:{r}" for o, n, r in self.provenance)}


@dataclass
class LiftResult:
    program: L.Program
    text: str
    steps: list[Step]
    coverage: dict[str, float]
    candidates: dict[str, int]
    histogram: dict[str, int]
    rounds: int
    repair_rounds: int
    queries: int
    proof_lines_before: int
    proof_lines_after: int
    trivial_conclusions: int
    untranslatable: int
    repair_log: list[str] = field(default_factory=list)

    @property
    def kept(self) -> list[Step]:
        return [s for s in self.steps if s.status == "kept"]


# ----------------------------------------------------------------------------- AST edits

def insert_steps(program: L.Program, inserts: dict[tuple, list]) -> L.Program:
    """The program with statements inserted in front of slots ((list id, index) → stmts) of
    the *original* program's statement lists (index len(list) = at the end)."""
    def rebuild(stmts: tuple, list_id: tuple) -> tuple:
        out: list = []
        for i, s in enumerate(stmts):
            out.extend(inserts.get((list_id, i), ()))
            out.append(stmt(s, list_id + (i,)))
        out.extend(inserts.get((list_id, len(stmts)), ()))
        return tuple(out)

    def stmt(s: Any, path: tuple) -> Any:
        if isinstance(s, L.If):
            return replace(s, then=rebuild(s.then, path + ("then",)),
                           els=None if s.els is None else rebuild(s.els, path + ("els",)))
        if isinstance(s, (L.While, L.ProofBlock)):
            return replace(s, body=rebuild(s.body, path + ("body",)))
        if isinstance(s, L.Assert) and s.by is not None:
            return replace(s, by=rebuild(s.by, path + ("by",)))
        if isinstance(s, L.AssertForall):
            return replace(s, by=rebuild(s.by, path + ("by",)))
        return s

    items = []
    for k, it in enumerate(program.items):
        if isinstance(it, (L.ExecFn, L.ProofFn)):
            it = replace(it, body=rebuild(it.body, (k, "body")))
        items.append(it)
    return L.Program(tuple(items))


def proof_lines(program: L.Program) -> int:
    """Lines of proof text: assertion, invariant and lemma blocks (+ each lemma's signature)."""
    printed = L.render(program)
    lines = sum(end - start for _, start, end in printed.blocks.values())
    return lines + sum(1 for kind, _, _ in printed.blocks.values() if kind == "lemma")


def dedupe_invariants(program: L.Program) -> tuple[L.Program, int]:
    """Remove repeated invariants (same text) of each loop; returns (program, removed)."""
    removed = 0

    def body(stmts: tuple) -> tuple:
        nonlocal removed
        out = []
        for s in stmts:
            if isinstance(s, L.While):
                seen, invs = set(), []
                for inv in s.invariants:
                    text = L.pexpr(inv)
                    if text in seen:
                        removed += 1
                        continue
                    seen.add(text)
                    invs.append(inv)
                s = replace(s, invariants=tuple(invs), body=body(s.body))
            elif isinstance(s, L.If):
                s = replace(s, then=body(s.then), els=None if s.els is None else body(s.els))
            out.append(s)
        return tuple(out)

    items = tuple(replace(it, body=body(it.body)) if isinstance(it, L.ExecFn) else it for it in program.items)
    return L.Program(items), removed


# ----------------------------------------------------------------------------- verification

def failing(program: L.Program, rlimit: int, seed: int = 0, mode: str = "verus") -> list[vc.Obligation]:
    """The obligations that do not verify (empty = the program verifies)."""
    return [ob for ob, v in vc.verify(program, rlimit, mode, seed) if not v.proved]


def require_verifies(program: L.Program, rlimit: int, seed: int = 0) -> None:
    bad = failing(program, rlimit, seed)
    if bad:
        raise LiftFailure("the program does not verify: " + "; ".join(f"{ob.fn}: {ob.label}" for ob in bad[:5]))


def _conclusion(node: smt.ProofNode) -> Any:
    c = node.conclusion
    if node.rule == "quant-inst" and z3.is_or(c) and c.num_args() == 2 and z3.is_not(c.arg(0)) \
            and z3.is_quantifier(c.arg(0).arg(0)):
        return c.arg(1)
    return c


def _usable(node: smt.ProofNode, goal_quants: set = frozenset()) -> bool:
    """A high-tier node whose conclusion is a fact of the context: it rests neither on the
    negated goal nor on an open hypothesis, and (quant-inst) the quantifier it instantiates
    is not one derived from the negated goal."""
    if (node.conclusion is None or node.depends_on_goal or node.hypotheses
            or smt.RULE_TIER.get(node.rule) != "high" or z3.is_true(node.conclusion)
            or z3.is_false(node.conclusion)):
        return False
    if node.rule == "quant-inst":
        c = node.conclusion
        if z3.is_or(c) and z3.is_not(c.arg(0)) and c.arg(0).arg(0).get_id() in goal_quants:
            return False
    return True


def goal_quantifiers(nodes: list) -> set:
    """Ids of quantified conclusions derived from the negated goal."""
    return {n.conclusion.get_id() for n in nodes
            if n.depends_on_goal and n.conclusion is not None and z3.is_quantifier(n.conclusion)}


def _place(concl: Any, ob: vc.Obligation, specs: set) -> tuple[Any, tuple, dict, tuple] | None:
    """(expression, slot, env, assumptions) at the latest slot on the path where the
    conclusion is expressible; None if nowhere."""
    names = T.constants(concl)
    defs = definitions(ob)
    for slot, env, assumptions, _tags in reversed(ob.trail):
        scope = vc.scope_of(env)
        if not names <= scope.keys() | defs.keys():
            continue
        expr = T.to_source(concl, scope, specs, defs=defs)
        if expr is not None:
            return expr, slot, env, assumptions
    return None


def definitions(ob: vc.Obligation) -> dict[str, Any]:
    """SSA definitions `x@k == e` on the obligation's path (scalars only): constant → e."""
    out: dict[str, Any] = {}
    backward: dict[str, Any] = {}
    for fact, tag in zip(ob.assumptions, ob.tags):
        if tag == "def" and z3.is_eq(fact) and z3.is_const(fact.arg(0)) \
                and fact.arg(0).decl().kind() == z3.Z3_OP_UNINTERPRETED and not z3.is_array(fact.arg(0)):
            lhs, rhs = fact.arg(0), fact.arg(1)
            out[lhs.decl().name()] = rhs
            # x@k == x@j + c also reads backwards: x@j is x@k - c (the loop counter before `i = i + 1`)
            if z3.is_add(rhs) and rhs.num_args() == 2:
                for var, const in ((rhs.arg(0), rhs.arg(1)), (rhs.arg(1), rhs.arg(0))):
                    if z3.is_int_value(const) and z3.is_const(var) and \
                            var.decl().kind() == z3.Z3_OP_UNINTERPRETED:
                        backward.setdefault(var.decl().name(), lhs - const)
    for name, term in backward.items():
        out.setdefault(name, term)
    return out


def tautological(expr: Any) -> bool:
    """`x == x` (a fuel-link equation in source terms), or an equivalence of two quantified
    formulas (a rewrite under binders: quant-intro's normalization)."""
    if isinstance(expr, L.Cmp) and len(expr.ops) == 1 and expr.ops[0] in ("==", "<=", ">="):
        if L.pexpr(expr.args[0]) == L.pexpr(expr.args[1]):
            return True
        return expr.ops[0] == "==" and all(isinstance(a, L.Quant) for a in expr.args)
    return isinstance(expr, L.BoolLit) and expr.value


def _restricted(assumptions: Any, goal: Any, ctx: Any, cfg: LiftConfig, definitional: list = ()) -> bool:
    """Is `goal` local at this point? A ground goal: provable without e-matching and without
    spec-fn axioms within the small rlimit. A quantified goal is a restatement (normalization)
    when it is provable by instantiating the context's quantifiers and the non-recursive
    definitions, without recursive unfolding, within the query cap."""
    if vc.has_quantifier(goal):
        return smt.prove([*definitional, *assumptions], goal, ctx, "verus", cfg.rlimit, cfg.seed).proved
    return smt.prove(list(assumptions), goal, ctx, "restricted", cfg.trivial_rlimit, cfg.seed).proved


def lift(program: L.Program, cfg: LiftConfig, log: Any = None) -> LiftResult:
    """Lift one verified program (see the module docstring)."""
    log = log or (lambda msg: None)
    require_verifies(program, cfg.rlimit, cfg.seed)
    specs = set(program.spec_fns)
    ctx = smt.proof_context()
    vcs = vc.generate(program, ctx, track=True)
    histogram: dict[str, int] = {}
    steps: list[Step] = []
    by_key: dict[tuple, Step] = {}
    trivial = untranslatable = 0
    nodes_of: dict[int, smt.ProofNode] = {}
    counter = 0
    for ob in vcs.obligations:
        assertions = vcs.assertions(ob)
        verdict, proof = smt.prove_with_proof(assertions, ctx, cfg.rlimit, cfg.seed)
        if proof is None:
            raise LiftFailure(f"{ob.fn}: {ob.label}: no proof ({verdict.status}, {verdict.reason})")
        nodes = smt.proof_dag(proof, assertions[-1])
        for rule, n in smt.rule_histogram(nodes).items():
            histogram[rule] = histogram.get(rule, 0) + n
        goal_quants = goal_quantifiers(nodes)
        for node in nodes:
            nodes_of[node.nid] = node
            if not _usable(node, goal_quants):
                continue
            concl = z3.simplify(_conclusion(node))
            if z3.is_true(concl) or z3.is_false(concl):
                continue
            placed = _place(concl, ob, specs)
            if placed is None:
                untranslatable += 1
                continue
            expr, slot, env, assumptions = placed
            if tautological(expr):
                trivial += 1
                continue
            text = L.pexpr(expr)
            key = (slot, text)
            if key in by_key:
                by_key[key].provenance.append((ob.oid, node.nid, node.rule))
                continue
            ground = list(assumptions)
            if _restricted(ground, vcs.gen.enc(expr, env), ctx, cfg, vcs.definitional):
                trivial += 1
                by_key[key] = Step("", expr, text, slot, node.rule, smt.CATEGORY_OF[node.rule],
                                   [(ob.oid, node.nid, node.rule)], status="trivial")
                continue
            counter += 1
            step = Step(f"s{counter}", expr, text, slot, node.rule, smt.CATEGORY_OF[node.rule],
                        [(ob.oid, node.nid, node.rule)], node=node, assumptions=tuple(ground))
            by_key[key] = step
            steps.append(step)
        if z3.is_quantifier(ob.goal) and ob.goal.is_forall() and isinstance(ob.goal_src, L.Quant) \
                and ob.goal_src.kind == "forall" and ob.trail:
            counter, made = _forall_step(ob, nodes, vcs, ctx, cfg, specs, counter, goal_quants)
            if made is not None:
                steps.append(made)
                by_key[(made.slot, made.text)] = made
    log(f"{len(vcs.obligations)} queries, {len(steps)} candidate steps ({trivial} trivial, "
        f"{untranslatable} untranslatable conclusions)")

    # transform → check rounds
    rounds = 0
    for rounds in range(1, cfg.max_rounds + 1):
        lifted = _with_steps(program, [s for s in steps if s.status == "kept"])
        bad = {ob.step.split(".")[0] for ob in failing(lifted, cfg.rlimit, cfg.seed) if ob.step}
        for s in steps:
            if s.status == "kept" and s.sid in bad:
                s.status = "dropped"
        cov = _coverage(steps)
        if all(v >= cfg.coverage_target for v in cov.values()):
            break
        retried = 0
        for s in [s for s in steps if s.status == "dropped" and s.round == rounds]:
            support = []
            for pid in s.node.premises if s.node else ():
                pn = nodes_of.get(pid)
                if pn is None or pn.conclusion is None or pn.depends_on_goal or pn.hypotheses:
                    continue
                expr = T.to_source(z3.simplify(pn.conclusion), vc.scope_of(_env_at(vcs, s.slot)), specs)
                if expr is None or tautological(expr) or (s.slot, L.pexpr(expr)) in by_key:
                    continue
                counter += 1
                sup = Step(f"s{counter}", expr, L.pexpr(expr), s.slot, pn.rule,
                           smt.CATEGORY_OF.get(pn.rule, "support"), [(s.provenance[0][0], pn.nid, pn.rule)],
                           round=rounds + 1, node=pn, assumptions=s.assumptions)
                by_key[(s.slot, sup.text)] = sup
                support.append(sup)
            if support:
                idx = steps.index(s)
                steps[idx:idx] = support
                s.status, s.round = "kept", rounds + 1
                retried += 1
        if not retried:
            break

    # prune
    kept = [s for s in steps if s.status == "kept"]
    lifted = _with_steps(program, kept)
    pruned_ids = _prune(lifted, cfg)
    for s in kept:
        if isinstance(s.expr, L.AssertForall):
            inner = tuple(x for x in s.expr.by if x.pos[1] not in pruned_ids)
            if not inner:
                s.status = "pruned_redundant"
            elif len(inner) < len(s.expr.by):
                s.expr = replace(s.expr, by=inner)
                s.text = L.print_stmts((s.expr,), 0)
        elif s.sid in pruned_ids:
            s.status = pruned_ids[s.sid]
    program_dedup, _ = dedupe_invariants(program)

    # repair
    repair_rounds, repair_log = 0, []
    for repair_rounds in range(0, cfg.max_repair + 1):
        kept = [s for s in steps if s.status == "kept"]
        lifted = _with_steps(program_dedup, kept)
        bad = failing(lifted, cfg.rlimit, cfg.seed)
        if not bad:
            break
        if repair_rounds == cfg.max_repair:
            raise LiftFailure(f"repair failed after {cfg.max_repair} rounds: "
                              + "; ".join(f"{ob.fn}: {ob.label}" for ob in bad[:5]))
        step_bad = {ob.step.split(".")[0] for ob in bad if ob.step}
        if step_bad:
            for s in kept:
                if s.sid in step_bad:
                    s.status = "repair_dropped"
            repair_log.append(f"round {repair_rounds + 1}: dropped failing steps {sorted(step_bad)}")
            continue
        # an original obligation fails with the steps: delta-debug the steps of its function
        ob = bad[0]
        fn_steps = [s for s in kept if _fn_of(program, s.slot) == ob.fn]
        culprit = _ddmin(program_dedup, kept, fn_steps, ob, cfg)
        for s in culprit:
            s.status = "repair_dropped"
        repair_log.append(f"round {repair_rounds + 1}: {ob.fn}: {ob.label} failed; dropped {[s.sid for s in culprit]}")
    final = _with_steps(program_dedup, [s for s in steps if s.status == "kept"])
    for s in steps:
        s.node, s.assumptions = None, ()
    return LiftResult(final, L.print_program(final), steps, _coverage(steps), _candidates(steps), histogram,
                      rounds, repair_rounds, len(vcs.obligations), proof_lines(program), proof_lines(final),
                      trivial, untranslatable, repair_log)


def _forall_step(ob: vc.Obligation, nodes: list, vcs: vc.VCs, ctx: Any, cfg: LiftConfig, specs: set,
                 counter: int, goal_quants: set) -> tuple[int, Step | None]:
    """For a goal ∀k. A(k) ⇒ B(k): the proof's facts about the Skolem constant of k (those
    that do not rest on the negated goal) become `assert forall|k| A implies B by { … }`
    with one inner assert per non-trivial fact, at the obligation's own slot."""
    src: L.Quant = ob.goal_src
    slot, env, assumptions, _ = ob.trail[-1]
    scope = vc.scope_of(env)
    if not L.free_vars(src) <= {k for k in env if isinstance(k, str)}:
        return counter, None
    prefixes = {f"{ob.goal.var_name(i)}!": name for i, (name, _) in enumerate(src.binders)}
    defs = definitions(ob)
    inner_env = dict(env)
    fresh_consts = []
    for name, _ in src.binders:
        c = z3.Const(f"{name}@lift", z3.IntSort(ctx))
        inner_env[name] = c
        fresh_consts.append(c)
    texts, inner, prov, rules = set(), [], [], []
    for node in nodes:
        if not _usable(node, goal_quants):
            continue
        concl = z3.simplify(_conclusion(node))
        names = T.constants(concl)
        fresh = {n: prefixes[p] for n in names for p in prefixes if n.startswith(p)}
        if not fresh:
            continue
        expr = T.to_source(concl, scope, specs, fresh=fresh, defs=defs)
        if expr is None or tautological(expr) or vc.has_quantifier(concl):
            continue
        text = L.pexpr(expr)
        if text in texts:
            continue
        texts.add(text)
        if _restricted(list(assumptions), vcs.gen.enc(expr, inner_env), ctx, cfg, vcs.definitional):
            continue
        inner.append(expr)
        prov.append((ob.oid, node.nid, node.rule))
        rules.append(node.rule)
    if not inner:
        return counter, None
    counter += 1
    sid = f"s{counter}"
    body = src.body
    lhs, rhs = (body.left, body.right) if isinstance(body, L.Binary) and body.op == "==>" else (L.BoolLit(True), body)
    stmt = L.AssertForall(src.binders, lhs, rhs, tuple(L.Assert(e, None, pos=("step", f"{sid}.{j}"))
                                                       for j, e in enumerate(inner, 1)), pos=("step", sid))
    text = L.print_stmts((stmt,), 0)
    rule = rules[0]
    return counter, Step(sid, stmt, text, slot, rule, smt.CATEGORY_OF[rule], prov, assumptions=tuple(assumptions))


def _env_at(vcs: vc.VCs, slot: tuple) -> dict:
    for ob in vcs.obligations:
        for s, env, _, _ in ob.trail:
            if s == slot:
                return env
    return {}


def _fn_of(program: L.Program, slot: tuple) -> str:
    return program.items[slot[0][0]].name


def _with_steps(program: L.Program, steps: list[Step]) -> L.Program:
    inserts: dict[tuple, list] = {}
    for s in steps:
        stmt = s.expr if isinstance(s.expr, L.AssertForall) else L.Assert(s.expr, None, pos=("step", s.sid))
        inserts.setdefault(s.slot, []).append(stmt)
    return insert_steps(program, inserts)


def _coverage(steps: list[Step]) -> dict[str, float]:
    out = {}
    for cat in smt.CATEGORIES:
        mine = [s for s in steps if s.category == cat and s.status != "trivial"]
        covered = [s for s in mine if s.status in ("kept", "pruned_trivial", "pruned_redundant")]
        out[cat] = len(covered) / len(mine) if mine else 1.0
    return out


def _candidates(steps: list[Step]) -> dict[str, int]:
    return {cat: sum(1 for s in steps if s.category == cat and s.status != "trivial") for cat in smt.CATEGORIES}


def _prune(lifted: L.Program, cfg: LiftConfig) -> dict[str, str]:
    """{step id: pruned_trivial | pruned_redundant} for the steps of a lifted program, in
    program order (a pruned step's fact is no longer available to later steps)."""
    vcs = vc.generate(lifted)
    removed: dict[str, str] = {}
    for ob in vcs.obligations:
        if not ob.step or ob.kind == "assert_forall":   # a forall step is judged by its inner asserts
            continue
        facts = [a for a, t in zip(ob.assumptions, ob.tags)
                 if not (t.startswith("step:") and t[5:] in removed)]
        ground = [a for a, t in zip(ob.assumptions, ob.tags) if not t.startswith("step:")]
        if _restricted(ground, ob.goal, vcs.ctx, cfg, vcs.definitional):
            removed[ob.step] = "pruned_trivial"
        elif _restricted(facts, ob.goal, vcs.ctx, cfg, vcs.definitional):
            removed[ob.step] = "pruned_redundant"
    return removed


def _ddmin(program: L.Program, kept: list[Step], suspects: list[Step], ob: vc.Obligation,
           cfg: LiftConfig) -> list[Step]:
    """A small set of suspect steps whose removal makes obligation `ob` verify again."""
    def passes(removed: list[Step]) -> bool:
        gone = {s.sid for s in removed}
        trial = _with_steps(program, [s for s in kept if s.sid not in gone])
        return not any(o.fn == ob.fn and o.label == ob.label for o in failing(trial, cfg.rlimit, cfg.seed))

    current = list(suspects)
    if not current or not passes(current):
        return current
    while len(current) > 1:
        half = len(current) // 2
        first, second = current[:half], current[half:]
        if passes(first):
            current = first
        elif passes(second):
            current = second
        else:
            break
    return current
