"""Scoring completions: SynAcc, SemAcc, Acc and Verified (machine-checked analogues, spec §8).

SynAcc: the completed program parses and names resolve, no `assume` / `admit`, every hole
is filled (non-empty), and the exec code and specs are unchanged (hash of the non-proof AST).
SemAcc: every hole is equivalent to its gold block *in the hole's ground context*: the
original program's path facts at the block that are quantifier-free, with spec fns left
uninterpreted (no definitional axioms) — so two blocks that are merely both provable there
do not match (our design). Assertion blocks compare the conjunction of what they establish
(assert e ↦ e, assert forall ↦ the quantified fact, a lemma call ↦ the lemma's ensures at
the arguments); invariant blocks the conjunction of the invariants over the loop-head state;
lemma blocks compare requires and ensures both ways over free parameters, and the predicted
lemma's body must verify. `unknown` from Z3 counts as not equivalent and is recorded.
Acc weights (the paper's): both 1, semantic only 0.5, syntactic only 0.25, neither 0. Our
SemAcc needs a parse, so 0.5 cannot occur. Verified (not in the paper): the whole completed
program verifies.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import z3

from assets.vcot import bench, smt, vc
from assets.vcot import lang as L


@dataclass
class HoleVerdict:
    hole_id: str
    kind: str
    equivalent: bool
    unknown: bool = False
    reason: str = ""


@dataclass
class Score:
    syn: bool
    sem: bool
    acc: float
    verified: bool | None
    parses: bool
    unknown_holes: int
    reasons: list[str] = field(default_factory=list)
    holes: list[HoleVerdict] = field(default_factory=list)


def acc_weight(syn: bool, sem: bool) -> float:
    return 1.0 if (syn and sem) else 0.5 if sem else 0.25 if syn else 0.0


class ProgramContext:
    """The original (lifted) program's contexts for its blocks, built once per program."""

    def __init__(self, text: str, rlimit: int, seed: int = 0):
        self.text = text
        self.program = L.parse(text)
        self.rlimit, self.seed = rlimit, seed
        self.vcs = vc.generate(self.program, track=True)
        self.slots = bench.block_slots(self.program)
        self.skeleton = L.skeleton_hash(self.program)
        self.block_of = {b.block_id: b for b in bench.blocks(text)}
        self._ctx_cache: dict[str, tuple[dict, list]] = {}

    @property
    def ctx(self):
        return self.vcs.ctx

    def assertion_context(self, block_id: str) -> tuple[dict, list]:
        """(env, ground facts) at the first statement of an assertion block."""
        if block_id not in self._ctx_cache:
            slot = self.slots[block_id]
            found = None
            for ob in self.vcs.obligations:
                for s, env, assumptions, _ in ob.trail:
                    if s == slot:
                        found = (env, [a for a in assumptions if not vc.has_quantifier(a)])
                        break
                if found:
                    break
            if found is None:
                raise bench.TaskError(f"no program point found for block {block_id}")
            self._ctx_cache[block_id] = found
        return self._ctx_cache[block_id]

    def loop_context(self, block_id: str) -> tuple[dict, list]:
        slot = self.slots[block_id]
        if slot not in self.vcs.gen.loop_heads:
            raise bench.TaskError(f"no loop head recorded for block {block_id}")
        env, facts = self.vcs.gen.loop_heads[slot]
        return env, [a for a in facts if not vc.has_quantifier(a)]

    def equivalent(self, facts: list, pred: Any, gold: Any) -> tuple[bool, bool]:
        """(proved, unknown) for facts ⊢ pred ⇔ gold with the judge solver (no spec axioms).
        When the context alone entails the gold block (it says nothing new there), the
        comparison is made without the context, so a vacuous prediction cannot match it."""
        if smt.prove(facts, gold, self.ctx, "judge", self.rlimit, self.seed).proved:
            facts = []
        verdict = smt.prove(facts, pred == gold, self.ctx, "judge", self.rlimit, self.seed)
        return verdict.proved, verdict.status == "unknown"


def block_facts(stmts: tuple, lemmas: dict) -> list[Any]:
    """What an assertion block establishes, as source expressions."""
    out = []
    for s in stmts:
        if isinstance(s, L.Assert):
            out.append(s.expr)
        elif isinstance(s, L.AssertForall):
            out.append(L.Quant("forall", s.binders, L.Binary("==>", s.lhs, s.rhs)))
        elif isinstance(s, L.ProofBlock):
            out.extend(block_facts(s.body, lemmas))
        elif isinstance(s, L.LemmaCall) and s.name in lemmas:
            lemma = lemmas[s.name]
            mapping = {p: a for (p, _), a in zip(lemma.params, s.args)}
            out.extend(L.substitute(e, mapping) for e in lemma.ensures)
        elif isinstance(s, L.If):
            raise bench.TaskError("an if statement in an assertion block")
    return out


def _conj(ctx: Any, terms: list) -> Any:
    return z3.And(*terms) if terms else z3.BoolVal(True, ctx)


def parse_block(kind: str, text: str, signature: str = "") -> Any:
    """Parse one hole's text: assertion → statements; invariant → expressions; lemma → the
    proof fn (requires, ensures, body) given its signature line."""
    if kind == "assertion":
        return L.parse_stmts(text)
    if kind == "invariant":
        body = text.strip()
        if not body:
            return ()
        program = L.parse(f"fn __w() {{\n while true\n{text}\n {{\n }}\n}}")
        return program.items[0].body[0].invariants
    if kind == "lemma":
        return L.parse(f"{signature}\n{text}").items[0]
    raise bench.TaskError(f"unknown block kind {kind!r}")


class Judge:
    """Scores completions of the tasks of one program (one ProgramContext)."""

    def __init__(self, context: ProgramContext, verified_cache: dict | None = None):
        self.c = context
        self.verified_cache = verified_cache if verified_cache is not None else {}

    def verified(self, program: L.Program, text: str) -> bool:
        if text not in self.verified_cache:
            try:
                results = vc.verify(program, self.c.rlimit, "verus", self.c.seed)
                self.verified_cache[text] = all(v.proved for _, v in results)
            except L.MiniVerusError:
                self.verified_cache[text] = False
        return self.verified_cache[text]

    def verified_with_stubs(self, task: dict, completion: dict[str, str]) -> bool:
        """Does the completed program verify, an empty lemma hole read as a lemma without
        contract and with an empty body (what is left when its steps are removed)?"""
        filled = dict(completion)
        for h in task["holes"]:
            if h["kind"] == "lemma" and not filled.get(h["hole_id"], "").strip():
                filled[h["hole_id"]] = "{\n}"
        text = bench.fill(task["masked"], filled, task["holes"])
        try:
            program = L.parse(text)
        except L.MiniVerusError:
            return False
        if L.check_names(program) or L.skeleton_hash(program) != self.c.skeleton:
            return False
        return self.verified(program, text)

    def score(self, task: dict, completion: dict[str, str], check_verified: bool = True) -> Score:
        holes = task["holes"]
        text = bench.fill(task["masked"], completion, holes)
        reasons: list[str] = []
        try:
            program = L.parse(text)
            parses = True
        except L.MiniVerusError as err:
            program, parses = None, False
            reasons.append(f"parse: {err}")
        syn = parses
        if program is not None:
            problems = L.check_names(program)
            if problems:
                syn = False
                reasons.append("names: " + "; ".join(problems[:3]))
            if L.skeleton_hash(program) != self.c.skeleton:
                syn = False
                reasons.append("exec code or specs changed")
        empty = [h["hole_id"] for h in holes if not completion.get(h["hole_id"], "").strip()]
        if empty:
            syn = False
            reasons.append(f"unfilled holes {empty}")
        verdicts = [self.hole(h, completion.get(h["hole_id"], ""), program) for h in holes]
        sem = parses and all(v.equivalent for v in verdicts)
        verified = None
        if check_verified:
            verified = self.verified_with_stubs(task, completion)
        return Score(syn, sem, acc_weight(syn, sem), verified, parses, sum(v.unknown for v in verdicts),
                     reasons, verdicts)

    def hole(self, hole: dict, text: str, completed: L.Program | None) -> HoleVerdict:
        kind, hid = hole["kind"], hole["hole_id"]
        try:
            if kind == "assertion":
                return self._assertion(hole, text)
            if kind == "invariant":
                return self._invariant(hole, text)
            return self._lemma(hole, text, completed)
        except (L.MiniVerusError, bench.TaskError, z3.Z3Exception) as err:
            return HoleVerdict(hid, kind, False, reason=str(err)[:200])

    def _assertion(self, hole: dict, text: str) -> HoleVerdict:
        env, facts = self.c.assertion_context(hole["block_id"])
        lemmas = self.c.program.lemmas
        gold = block_facts(parse_block("assertion", hole["gold"]), lemmas)
        pred = block_facts(parse_block("assertion", text), lemmas) if text.strip() else []
        gen, ctx = self.c.vcs.gen, self.c.ctx
        ok, unknown = self.c.equivalent(facts, _conj(ctx, [gen.enc(e, env) for e in pred]),
                                        _conj(ctx, [gen.enc(e, env) for e in gold]))
        return HoleVerdict(hole["hole_id"], "assertion", ok, unknown)

    def _invariant(self, hole: dict, text: str) -> HoleVerdict:
        env, facts = self.c.loop_context(hole["block_id"])
        gold = parse_block("invariant", hole["gold"])
        pred = parse_block("invariant", text)
        gen, ctx = self.c.vcs.gen, self.c.ctx
        ok, unknown = self.c.equivalent(facts, _conj(ctx, [gen.enc(e, env) for e in pred]),
                                        _conj(ctx, [gen.enc(e, env) for e in gold]))
        return HoleVerdict(hole["hole_id"], "invariant", ok, unknown)

    def _lemma(self, hole: dict, text: str, completed: L.Program | None) -> HoleVerdict:
        name = hole["block_id"].split(":", 1)[1]
        gold_fn = self.c.program.lemmas[name]
        signature = self.c.text.split("\n")[self.c.block_of[hole["block_id"]].start - 1]
        pred_fn = parse_block("lemma", text, signature)
        gen, ctx = self.c.vcs.gen, self.c.ctx
        env, facts = {}, []
        for p, t in gold_fn.params:
            kind = vc._kind(t)
            const = z3.Const(f"{p}@lemma", gen._sort(t))
            env[p] = const
            facts += gen.type_facts(p, kind, const, t)
        unknown = False
        for attr in ("requires", "ensures"):
            ok, unk = self.c.equivalent(facts, _conj(ctx, [gen.enc(e, env) for e in getattr(pred_fn, attr)]),
                                        _conj(ctx, [gen.enc(e, env) for e in getattr(gold_fn, attr)]))
            unknown |= unk
            if not ok:
                return HoleVerdict(hole["hole_id"], "lemma", False, unknown, f"{attr} differ")
        if completed is None or name not in completed.lemmas:
            return HoleVerdict(hole["hole_id"], "lemma", False, unknown, "no completed program")
        body_ok = lemma_verifies(completed, name, self.c.rlimit, self.c.seed)
        return HoleVerdict(hole["hole_id"], "lemma", body_ok, unknown, "" if body_ok else "body does not verify")


def lemma_verifies(program: L.Program, name: str, rlimit: int, seed: int = 0) -> bool:
    """Do all obligations of lemma `name` verify (in the context of the program's spec fns
    and the other lemmas' contracts)?"""
    lemma = program.lemmas[name]
    sub = L.Program(tuple(it for it in program.items if not isinstance(it, (L.ExecFn, L.ProofFn)) or
                          it.name == name or isinstance(it, L.ProofFn)))
    vcs = vc.generate(sub)
    return all(smt.prove([*vcs.axioms, *ob.assumptions], ob.goal, vcs.ctx, "verus", rlimit, seed).proved
               for ob in vcs.obligations if ob.fn == lemma.name)
