"""Verification conditions of MiniVerus programs by symbolic execution (SSA), Verus-style.

Every `assert`, lemma-call precondition, loop invariant on entry and on preservation,
postcondition and exec-code array bounds check is one *obligation*: a path condition (the
assumptions, in program order) and a goal; the query is path ∧ ¬goal, unsat = verified.
After an obligation is checked its goal becomes an assumption (Verus semantics). Loops are
isolated as in Verus: the body and the code after the loop see only the invariants (plus
type facts) about the variables, the modified ones havocked. `assert P by {B}` proves P in a
sub-context holding B's facts; only P leaks out. `assert forall|k| P implies Q by {B}`
proves Q for a fresh k under P and then assumes the quantified fact.

Encoding: `int` ↦ Int, `bool` ↦ Bool, arrays ↦ (Array Int Int) with `len : Array → Int`.
SSA constants are named `<var>@<version>` (`a@0` is the entry value, i.e. `old(a)`).
Spec fns are uninterpreted functions with a definitional axiom and a trigger; a recursive
one takes a fuel argument as Verus does: source calls are f(succ(zero), …), the axiom
∀fuel,x̄ {f(succ fuel, x̄)}. f(succ fuel, x̄) = body[f ↦ f(fuel, ·)] unfolds one level, and
∀fuel,x̄ {f(succ fuel, x̄)}. f(succ fuel, x̄) = f(fuel, x̄) links a later mention; so e-matching
cannot chain unfoldings and a two-step unfolding needs the middle term asserted.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import z3

from assets.vcot import lang as L
from assets.vcot.lang import MiniVerusError

INT_TYPES = ("int", "nat")


@dataclass
class Obligation:
    """One verification query.

    oid: stable id "<fn>/<k>:<kind>"; kind ∈ assert, assert_by, assert_forall, call_requires,
    inv_entry, inv_preserve, post, bounds; label: human description with line; slot: where
    lifted steps for it go — (list id, index) of the statement list position in front of the
    obligation's point; assumptions / tags: the path condition and each fact's origin
    (requires, def, cond, inv, fact, step, type, havoc); goal: z3 bool; scope: SSA constant
    name → source text visible at the point; step: the lifted-step id when the obligation is
    a lifted step's own check (its `assert` has pos ("step", id)).
    """

    oid: str
    fn: str
    kind: str
    label: str
    slot: tuple
    assumptions: list
    tags: list
    goal: Any
    scope: dict
    step: str | None = None
    line: int | None = None
    goal_src: Any = None      # the source expression of the goal (None for bounds / generated)
    trail: list = field(default_factory=list)   # dominating slots: [(slot, env, assumptions, tags)]

    def query(self) -> list:
        """The query's assertions: path ∧ ¬goal (axioms are added by the caller)."""
        return [*self.assumptions, z3.Not(self.goal)]


@dataclass
class VCs:
    """Everything a program's verification needs in one z3 context."""

    ctx: Any
    axioms: list
    obligations: list[Obligation]
    spec_funcs: dict = field(default_factory=dict)
    gen: Any = None           # the VCGen (re-encodes source expressions in this context; loop_heads)
    definitional: list = field(default_factory=list)   # the axioms of the non-recursive spec fns

    def assertions(self, ob: Obligation, axioms: bool = True) -> list:
        return [*(self.axioms if axioms else []), *ob.query()]


@dataclass
class State:
    env: dict            # var -> z3 term (current SSA version)
    types: dict          # var -> "int" | "bool" | "seq"
    assumptions: list
    tags: list
    alive: bool = True
    trail: list = field(default_factory=list)   # [(slot, env, assumptions, tags)] on this path

    def copy(self) -> "State":
        return State(dict(self.env), dict(self.types), list(self.assumptions), list(self.tags), self.alive,
                     list(self.trail))

    def assume(self, fact: Any, tag: str) -> None:
        self.assumptions.append(fact)
        self.tags.append(tag)


def _kind(t: str) -> str:
    return "seq" if t in L.SEQ_TYPES else ("bool" if t == "bool" else "int")


class VCGen:
    """Symbolic executor of one program (see the module docstring)."""

    def __init__(self, program: L.Program, ctx: z3.Context | None = None, track: bool = False):
        self.program = program
        self.track = track
        self.ctx = ctx or z3.Context()
        c = self.ctx
        self.IntS, self.BoolS = z3.IntSort(c), z3.BoolSort(c)
        self.ArrS = z3.ArraySort(self.IntS, self.IntS)
        self.FuelS = z3.DeclareSort("Fuel", c)
        self.zero = z3.Const("zero", self.FuelS)
        self.succ = z3.Function("succ", self.FuelS, self.FuelS)
        self.len = z3.Function("len", self.ArrS, self.IntS)
        self.specs = program.spec_fns
        self.lemmas = program.lemmas
        self.recursive = {n: _calls(f.body, n) for n, f in self.specs.items()}
        self.funcs = {}
        for name, f in self.specs.items():
            sorts = [self._sort(t) for _, t in f.params] + [self._sort(f.ret)]
            if self.recursive[name]:
                sorts = [self.FuelS] + sorts
            self.funcs[name] = z3.Function(name, *sorts)
        self.versions: dict[str, int] = {}
        self.obligations: list[Obligation] = []
        self.fresh = 0
        self.fn = ""
        self.entry: dict[str, Any] = {}
        self.counter = 0
        self.loop_heads: dict[tuple, tuple] = {}   # while slot -> (head env, head assumptions)

    # ------------------------------------------------------------------ basics
    def _sort(self, t: str) -> Any:
        k = _kind(t)
        return self.ArrS if k == "seq" else (self.BoolS if k == "bool" else self.IntS)

    def new_version(self, name: str, kind: str) -> Any:
        v = self.versions.get(name, -1) + 1
        self.versions[name] = v
        sort = self.ArrS if kind == "seq" else (self.BoolS if kind == "bool" else self.IntS)
        return z3.Const(f"{name}@{v}", sort)

    def type_facts(self, name: str, kind: str, term: Any, declared: str | None = None) -> list:
        if kind == "seq":
            return [self.len(term) >= 0]
        if declared == "nat":
            return [term >= 0]
        return []

    # ------------------------------------------------------------------ expressions
    def enc(self, e: Any, env: dict, fuel: Any = None) -> Any:
        """z3 term of a source expression; `fuel` set = inside a recursive spec fn's axiom.
        Ill-typed expressions raise MiniVerusError."""
        try:
            return self._enc(e, env, fuel)
        except (AttributeError, TypeError, z3.Z3Exception) as err:
            raise MiniVerusError(f"{_where(e)}: ill-typed expression {L.pexpr(e)!r} ({err})") from None

    def _enc(self, e: Any, env: dict, fuel: Any = None) -> Any:
        c = self.ctx
        if isinstance(e, L.IntLit):
            return z3.IntVal(e.value, c)
        if isinstance(e, L.BoolLit):
            return z3.BoolVal(e.value, c)
        if isinstance(e, L.Var):
            if e.name not in env:
                raise MiniVerusError(f"{_where(e)}: unknown name {e.name!r}")
            return env[e.name]
        if isinstance(e, L.Old):
            if ("old", e.name) not in env:
                raise MiniVerusError(f"{_where(e)}: old({e.name}) outside an exec fn with that &mut parameter")
            return env[("old", e.name)]
        if isinstance(e, L.Index):
            return z3.Select(self.enc(e.seq, env, fuel), self.enc(e.index, env, fuel))
        if isinstance(e, L.Len):
            return self.len(self.enc(e.seq, env, fuel))
        if isinstance(e, L.Call):
            if e.name not in self.funcs:
                raise MiniVerusError(f"{_where(e)}: unknown spec fn {e.name!r}")
            args = [self.enc(a, env, fuel) for a in e.args]
            if self.recursive[e.name]:
                f_arg = fuel if fuel is not None else self.succ(self.zero)
                return self.funcs[e.name](f_arg, *args)
            return self.funcs[e.name](*args)
        if isinstance(e, L.Unary):
            x = self.enc(e.operand, env, fuel)
            return z3.Not(x) if e.op == "!" else -x
        if isinstance(e, L.Binary):
            a, b = self.enc(e.left, env, fuel), self.enc(e.right, env, fuel)
            op = e.op
            if op == "&&":
                return z3.And(a, b)
            if op == "||":
                return z3.Or(a, b)
            if op == "==>":
                return z3.Implies(a, b)
            if op == "+":
                return a + b
            if op == "-":
                return a - b
            if op == "*":
                return a * b
            if op in ("/", "%"):
                if not isinstance(e.right, L.IntLit) or e.right.value == 0:
                    raise MiniVerusError(f"{_where(e)}: '{op}' only by a non-zero integer constant")
                return a / b if op == "/" else a % b
            raise MiniVerusError(f"{_where(e)}: unknown operator {op}")
        if isinstance(e, L.Cmp):
            terms = [self.enc(a, env, fuel) for a in e.args]
            parts = [_cmp(op, x, y) for op, x, y in zip(e.ops, terms, terms[1:])]
            return parts[0] if len(parts) == 1 else z3.And(*parts)
        if isinstance(e, L.Ite):
            return z3.If(self.enc(e.cond, env, fuel), self.enc(e.then, env, fuel), self.enc(e.els, env, fuel))
        if isinstance(e, L.Quant):
            inner = dict(env)
            bound = []
            for name, t in e.binders:
                self.fresh += 1
                const = z3.Const(f"{name}!b{self.fresh}", self._sort(t))
                inner[name] = const
                bound.append(const)
            body = self.enc(e.body, inner, fuel)
            if any(t == "nat" for _, t in e.binders):
                guard = [b >= 0 for b, (_, t) in zip(bound, e.binders) if t == "nat"]
                body = z3.Implies(z3.And(*guard), body) if e.kind == "forall" else z3.And(*guard, body)
            groups = source_triggers(e)
            patterns = [self.enc(g[0], inner, fuel) if len(g) == 1 else
                        z3.MultiPattern(*(self.enc(x, inner, fuel) for x in g)) for g in groups]
            if not patterns:
                raise MiniVerusError(f"{_where(e)}: cannot infer a trigger for this {e.kind} (a term such as "
                                     f"a[k] or f(k) must mention every bound variable)")
            make = z3.ForAll if e.kind == "forall" else z3.Exists
            return make(bound, body, patterns=patterns)
        raise MiniVerusError(f"not an expression: {e!r}")

    # ------------------------------------------------------------------ axioms
    def axioms(self) -> list:
        out = []
        self.nonrec = []
        for name, f in self.specs.items():
            params = [z3.Const(f"{p}!ax", self._sort(t)) for p, t in f.params]
            env = {p: c for (p, _), c in zip(f.params, params)}
            func = self.funcs[name]
            if self.recursive[name]:
                fuel = z3.Const("fuel!ax", self.FuelS)
                head = func(self.succ(fuel), *params)
                body = self.enc(f.body, env, fuel=fuel)
                out.append(z3.ForAll([fuel, *params], head == body, patterns=[head]))
                out.append(z3.ForAll([fuel, *params], head == func(fuel, *params), patterns=[head]))
            else:
                head = func(*params)
                body = self.enc(f.body, env, fuel=None)
                out.append(z3.ForAll(params, head == body, patterns=[head]) if params else head == body)
                self.nonrec.append(out[-1])
        return out

    # ------------------------------------------------------------------ obligations
    def scope_of(self, state: State) -> dict:
        return scope_of(state.env)

    def oblige(self, state: State, goal: Any, kind: str, label: str, slot: tuple, node: Any = None,
               goal_src: Any = None) -> None:
        if not state.alive:
            return
        pos = getattr(node, "pos", None)
        step = pos[1] if isinstance(pos, tuple) and len(pos) == 2 and pos[0] == "step" else None
        line = pos[0] if isinstance(pos, tuple) and isinstance(pos[0], int) else None
        oid = f"{self.fn}/{self.counter}:{kind}"
        self.counter += 1
        self.obligations.append(Obligation(oid, self.fn, kind, label + (f" (line {line})" if line else ""),
                                           slot, list(state.assumptions), list(state.tags), goal,
                                           self.scope_of(state), step, line, goal_src, list(state.trail)))

    def bounds(self, e: Any, state: State, slot: tuple, node: Any) -> None:
        """Exec-code array reads must be in bounds (Verus checks indexing)."""
        for sub in L.walk_expr(e):
            if isinstance(sub, L.Quant):
                return
            if isinstance(sub, L.Index):
                seq, idx = self.enc(sub.seq, state.env), self.enc(sub.index, state.env)
                self.oblige(state, z3.And(0 <= idx, idx < self.len(seq)), "bounds",
                            f"index {L.pexpr(sub)} in bounds", slot, node)

    # ------------------------------------------------------------------ functions
    def run(self) -> VCs:
        for k, it in enumerate(self.program.items):
            if isinstance(it, L.ExecFn):
                self.function(k, it, ghost=False)
            elif isinstance(it, L.ProofFn):
                self.function(k, it, ghost=True)
        axioms = self.axioms()
        return VCs(self.ctx, axioms, self.obligations, self.funcs, self, list(self.nonrec))

    def function(self, k: int, fn: Any, ghost: bool) -> None:
        self.fn, self.versions, self.counter = fn.name, {}, 0
        state = State({}, {}, [], [])
        for name, t in fn.params:
            kind = _kind(t)
            term = self.new_version(name, kind)
            state.env[name] = term
            state.types[name] = kind
            if t == "&mut Vec<int>":
                state.env[("old", name)] = term
            for fact in self.type_facts(name, kind, term, t):
                state.assume(fact, "type")
        for r in fn.requires:
            state.assume(self.enc(r, state.env), "requires")
        self.post = (fn, ghost)
        end = self.block(fn.body, state, (k, "body"), ghost)
        if end.alive:
            if isinstance(fn, L.ExecFn) and fn.ret:
                raise MiniVerusError(f"{_where(fn)}: fn {fn.name} must end with `return`")
            self.postcondition(end, None, ((k, "body"), len(fn.body)), fn)

    def postcondition(self, state: State, value: Any, slot: tuple, node: Any) -> None:
        fn, _ = self.post
        env = dict(state.env)
        if isinstance(fn, L.ExecFn) and fn.ret:
            env[fn.ret[0]] = value
        for e in fn.ensures:
            self.oblige(state, self.enc(e, env), "post", f"postcondition `{L.pexpr(e)}`", slot, node, goal_src=e)

    # ------------------------------------------------------------------ statements
    def block(self, body: tuple, state: State, list_id: tuple, ghost: bool) -> State:
        for i, s in enumerate(body):
            if not state.alive:
                break
            self.mark(state, (list_id, i))
            state = self.stmt(s, state, list_id, i, ghost)
        if state.alive:
            self.mark(state, (list_id, len(body)))
        return state

    def mark(self, state: State, slot: tuple) -> None:
        """Record a slot on the path (where lifted steps could go) with its scope and facts."""
        if self.track:
            state.trail.append((slot, dict(state.env), tuple(state.assumptions), tuple(state.tags)))

    def stmt(self, s: Any, state: State, list_id: tuple, i: int, ghost: bool) -> State:
        slot = (list_id, i)
        here = list_id + (i,)   # this statement's path; its nested lists are here + (field,)
        if isinstance(s, L.Let):
            if not ghost:
                self.bounds(s.value, state, slot, s)
            value = self.enc(s.value, state.env)
            kind = _kind(s.type) if s.type else ("bool" if z3.is_bool(value) else
                                                 "seq" if z3.is_array(value) else "int")
            term = self.new_version(s.name, kind)
            state.env[s.name] = term
            state.types[s.name] = kind
            state.assume(term == value, "def")
            for fact in self.type_facts(s.name, kind, term, s.type):
                state.assume(fact, "type")
            return state
        if isinstance(s, L.Assign):
            self.bounds(s.value, state, slot, s)
            value = self.enc(s.value, state.env)
            term = self.new_version(s.name, state.types[s.name])
            state.env[s.name] = term
            state.assume(term == value, "def")
            return state
        if isinstance(s, L.SetIndex):
            arr = state.env[s.name]
            idx, val = self.enc(s.index, state.env), self.enc(s.value, state.env)
            self.bounds(s.value, state, slot, s)
            self.oblige(state, z3.And(0 <= idx, idx < self.len(arr)), "bounds",
                        f"index {L.pexpr(s.index)} of {s.name}.set in bounds", slot, s)
            term = self.new_version(s.name, "seq")
            state.env[s.name] = term
            state.assume(term == z3.Store(arr, idx, val), "def")
            state.assume(self.len(term) == self.len(arr), "def")
            return state
        if isinstance(s, L.If):
            if not ghost:
                self.bounds(s.cond, state, slot, s)
            cond = self.enc(s.cond, state.env)
            then_state = state.copy()
            then_state.assume(cond, "cond")
            then_state = self.block(s.then, then_state, here + ("then",), ghost)
            else_state = state.copy()
            else_state.assume(z3.Not(cond), "cond")
            if s.els is not None:
                else_state = self.block(s.els, else_state, here + ("els",), ghost)
            return self.merge(state, cond, then_state, else_state)
        if isinstance(s, L.While):
            return self.loop(s, state, slot, here, ghost)
        if isinstance(s, L.Return):
            if not ghost:
                self.bounds(s.value, state, slot, s)
            self.postcondition(state, self.enc(s.value, state.env), slot, s)
            state.alive = False
            return state
        if isinstance(s, L.ProofBlock):
            return self.block(s.body, state, here + ("body",), True)
        if isinstance(s, L.Assert):
            if s.by is None:
                goal = self.enc(s.expr, state.env)
                self.oblige(state, goal, "assert", f"assert `{L.pexpr(s.expr)}`", slot, s, goal_src=s.expr)
            else:
                inner = self.block(s.by, state.copy(), here + ("by",), True)
                goal = self.enc(s.expr, state.env)
                self.oblige(inner, goal, "assert_by", f"assert `{L.pexpr(s.expr)}` by {{…}}",
                            (here + ("by",), len(s.by)), s, goal_src=s.expr)
            state.assume(goal, _fact_tag(s))
            return state
        if isinstance(s, L.AssertForall):
            inner = state.copy()
            bound = []
            for name, t in s.binders:
                self.fresh += 1
                const = z3.Const(f"{name}@f{self.fresh}", self._sort(t))
                inner.env[name] = const
                inner.types[name] = _kind(t)
                bound.append(const)
            inner.assume(self.enc(s.lhs, inner.env), "cond")
            inner = self.block(s.by, inner, here + ("by",), True)
            self.oblige(inner, self.enc(s.rhs, inner.env), "assert_forall",
                        f"assert forall … implies `{L.pexpr(s.rhs)}`", (here + ("by",), len(s.by)), s,
                        goal_src=s.rhs)
            fact = self.enc(L.Quant("forall", s.binders, L.Binary("==>", s.lhs, s.rhs), s.pos), state.env)
            state.assume(fact, _fact_tag(s))
            return state
        if isinstance(s, L.LemmaCall):
            lemma = self.lemmas.get(s.name)
            if lemma is None:
                raise MiniVerusError(f"{_where(s)}: unknown lemma {s.name!r}")
            args = [self.enc(a, state.env) for a in s.args]
            env = {p: a for (p, _), a in zip(lemma.params, args)}
            for r in lemma.requires:
                self.oblige(state, self.enc(r, env), "call_requires",
                            f"precondition `{L.pexpr(r)}` of {s.name}", slot, s)
            for e in lemma.ensures:
                state.assume(self.enc(e, env), "fact")
            return state
        if isinstance(s, L.Assume):
            state.assume(self.enc(s.expr, state.env), "assume")
            return state
        if isinstance(s, L.Admit):
            state.alive = False
            return state
        raise MiniVerusError(f"not a statement: {s!r}")

    def merge(self, before: State, cond: Any, a: State, b: State) -> State:
        if not a.alive and not b.alive:
            a.alive = False
            return a
        if not a.alive:
            return b
        if not b.alive:
            return a
        n = len(before.assumptions)
        out = State(dict(before.env), dict(before.types), list(before.assumptions), list(before.tags), True,
                    list(before.trail))
        fa, fb = a.assumptions[n + 1:], b.assumptions[n + 1:]   # branch facts after the condition
        if fa:
            out.assume(z3.Implies(cond, z3.And(*fa)), "branch")
        if fb:
            out.assume(z3.Implies(z3.Not(cond), z3.And(*fb)), "branch")
        for name in sorted(set(a.env) | set(b.env), key=str):
            if isinstance(name, tuple) or name not in before.env:
                continue
            ta, tb = a.env.get(name), b.env.get(name)
            if ta is not None and tb is not None and not ta.eq(tb):
                term = self.new_version(name, before.types[name])
                out.env[name] = term
                out.assume(term == z3.If(cond, ta, tb), "def")
        return out

    def loop(self, s: L.While, state: State, slot: tuple, here: tuple, ghost: bool) -> State:
        if not ghost:
            self.bounds(s.cond, state, slot, s)
        for inv in s.invariants:
            self.oblige(state, self.enc(inv, state.env), "inv_entry",
                        f"invariant `{L.pexpr(inv)}` on entry", slot, s, goal_src=inv)
        modified = sorted({x.name for x in L.walk_stmts(s.body) if isinstance(x, (L.Assign, L.SetIndex))})
        head = State(dict(state.env), dict(state.types), [], [], True, list(state.trail))
        for name in modified:
            head.env[name] = self.new_version(name, state.types[name])
        for name, term in sorted(head.env.items(), key=lambda kv: str(kv[0])):
            if not isinstance(name, tuple):
                for fact in self.type_facts(name, head.types.get(name, "int"), term):
                    head.assume(fact, "type")
        self.loop_heads[slot] = (dict(head.env), list(head.assumptions))
        invs = [self.enc(inv, head.env) for inv in s.invariants]
        for inv in invs:
            head.assume(inv, "inv")
        cond = self.enc(s.cond, head.env)
        body = head.copy()
        body.assume(cond, "cond")
        body = self.block(s.body, body, here + ("body",), ghost)
        for inv in s.invariants:
            self.oblige(body, self.enc(inv, body.env), "inv_preserve",
                        f"invariant `{L.pexpr(inv)}` preserved", (here + ("body",), len(s.body)), s, goal_src=inv)
        after = State(dict(head.env), dict(head.types), list(state.assumptions), list(state.tags), True,
                      list(state.trail))
        for name in modified:
            for fact in self.type_facts(name, head.types[name], head.env[name]):
                after.assume(fact, "type")
        for inv in invs:
            after.assume(inv, "inv")
        after.assume(z3.Not(cond), "cond")
        return after


def scope_of(env: dict) -> dict:
    """SSA constant name → source text ("i", "old(a)") of an environment."""
    scope = {}
    for name, term in env.items():
        const = term.decl().name()
        if isinstance(name, tuple):          # ("old", a)
            scope.setdefault(const, f"old({name[1]})")
        else:
            scope[const] = name
    return scope


def _cmp(op: str, x: Any, y: Any) -> Any:
    return {"<": lambda: x < y, "<=": lambda: x <= y, ">": lambda: x > y, ">=": lambda: x >= y,
            "==": lambda: x == y, "!=": lambda: x != y}[op]()


def _is_step(s: Any) -> bool:
    pos = getattr(s, "pos", None)
    return isinstance(pos, tuple) and len(pos) == 2 and pos[0] == "step"


def _fact_tag(s: Any) -> str:
    """Origin tag of a checked goal turned fact: "step:<id>" for a lifted step."""
    return f"step:{s.pos[1]}" if _is_step(s) else "fact"


def _where(node: Any) -> str:
    pos = getattr(node, "pos", None)
    return f"line {pos[0]}:{pos[1]}" if isinstance(pos, tuple) and isinstance(pos[0], int) else "(generated)"


def _calls(e: Any, name: str) -> bool:
    return any(isinstance(x, L.Call) and x.name == name for x in L.walk_expr(e))


@lru_cache(maxsize=4096)
def source_triggers(q: L.Quant) -> tuple[tuple, ...]:
    """Verus-style automatic triggers of a source quantifier: the minimal array reads and
    spec-fn applications of its body that mention every bound variable, each alone a
    pattern; when no single term does, one multi-pattern of minimal terms covering them
    together (e.g. {a[i], a[j]}). Returns pattern groups of source expressions."""
    names = {n for n, _ in q.binders}
    cands = []
    for sub in L.walk_expr(q.body):
        if isinstance(sub, L.Quant):
            continue
        if isinstance(sub, (L.Index, L.Call)):
            mentioned = L.free_vars(sub) & names
            if mentioned:
                cands.append((sub, frozenset(mentioned)))
    unique = []
    for c in cands:
        if all(L.pexpr(c[0]) != L.pexpr(u[0]) for u in unique):
            unique.append(c)

    def minimal(pool):
        return [(t, m) for t, m in pool
                if not any(o is not t and L.pexpr(o) != L.pexpr(t) and _sub_of(o, t) for o, _ in pool)]

    full = [(t, m) for t, m in unique if m == names]
    if full:
        return tuple((t,) for t, _ in sorted(minimal(full), key=lambda tm: L.pexpr(tm[0])))
    pool = sorted(minimal(unique), key=lambda tm: (-len(tm[1]), L.pexpr(tm[0])))
    covered: set = set()
    picked = []
    for t, m in pool:
        if not m <= covered:
            picked.append(t)
            covered |= m
    return (tuple(picked),) if covered == names else ()


def _sub_of(inner: Any, outer: Any) -> bool:
    """inner is a proper sub-expression of outer."""
    return any(x is not outer and x == inner for x in L.walk_expr(outer))


def triggers(body: Any, bound: list) -> list:
    """Verus-style automatic triggers: the smallest array reads / spec-fn applications of the
    body that mention every bound variable (each alone is a pattern); when no single term
    does, one multi-pattern of minimal terms that together cover them (e.g. {a[i], a[j]})."""
    ids = {b.get_id() for b in bound}
    memo: dict[int, frozenset] = {}        # term id -> bound variables it mentions
    inside: dict[int, set] = {}            # term id -> ids of candidate terms strictly inside it
    candidates: dict[int, tuple[Any, frozenset]] = {}
    stack: list[tuple[Any, bool]] = [(body, False)]
    while stack:
        t, done = stack.pop()
        tid = t.get_id()
        if tid in memo:
            continue
        if not z3.is_app(t):
            memo[tid], inside[tid] = frozenset(), set()
            continue
        kids = t.children()
        if not done:
            stack.append((t, True))
            stack.extend((k, False) for k in kids if k.get_id() not in memo)
            continue
        mentioned = frozenset({tid}) if tid in ids else frozenset()
        nested: set = set()
        for k in kids:
            kid = k.get_id()
            mentioned |= memo[kid]
            nested |= inside[kid]
            if kid in candidates:
                nested.add(kid)
        memo[tid], inside[tid] = mentioned, nested
        kind = t.decl().kind()
        if (kind == z3.Z3_OP_SELECT or kind == z3.Z3_OP_UNINTERPRETED) and kids and mentioned:
            candidates[tid] = (t, mentioned)
    full = {cid: t for cid, (t, m) in candidates.items() if m == ids}
    if full:
        chosen = [t for cid, t in full.items() if not (inside[cid] & full.keys())]
        return sorted(chosen, key=lambda t: t.sexpr())
    # multi-pattern: greedy cover with minimal terms, largest coverage first, then by text
    minimal = [(t, m) for cid, (t, m) in candidates.items() if not (inside[cid] & candidates.keys())]
    minimal.sort(key=lambda tm: (-len(tm[1]), tm[0].sexpr()))
    covered: set = set()
    picked = []
    for t, m in minimal:
        if not m <= covered:
            picked.append(t)
            covered |= m
    if covered != ids:
        return []
    return [z3.MultiPattern(*picked)]


def generate(program: L.Program, ctx: z3.Context | None = None, track: bool = False) -> VCs:
    """All obligations (and spec-fn axioms) of a program, in source order per function;
    track=True records each obligation's trail of dominating slots (for the lift)."""
    return VCGen(program, ctx, track).run()


def has_quantifier(t: Any) -> bool:
    stack, seen = [t], set()
    while stack:
        x = stack.pop()
        if x.get_id() in seen:
            continue
        seen.add(x.get_id())
        if z3.is_quantifier(x):
            return True
        if z3.is_app(x):
            stack.extend(x.children())
    return False


def verify(program: L.Program, rlimit: int, mode: str = "verus", seed: int = 0,
           vcs: VCs | None = None) -> list[tuple[Obligation, Any]]:
    """Check every obligation of a program; [(obligation, smt.Verdict)] in order."""
    from assets.vcot import smt

    vcs = vcs or generate(program)
    out = []
    for ob in vcs.obligations:
        out.append((ob, smt.prove([*vcs.axioms, *ob.assumptions], ob.goal, vcs.ctx, mode, rlimit, seed)))
    return out
