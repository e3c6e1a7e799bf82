"""Offline completers (none is an LLM): `complete(task) -> {hole_id: text}`.

- null: leaves every hole empty;
- oracle: the gold blocks (Acc must be 100: a pipeline check);
- trivial: `assert(true);` / `invariant true,` / `ensures true {}` (a judge check: SemAcc ≈ 0);
- retrieval: a kNN "pattern matcher" — the nearest program of *another family* (token
  Jaccard over exec code), its block of the same type at the same relative position,
  identifiers renamed by role and position (parameters, locals, spec fns, lemmas);
- solver: an ATP-like completer with a Z3 budget per task — lemma holes by abduction from
  call sites (the goal that fails without the lemma, generalised over the call's arguments;
  requires from a small grammar true at every call site), invariant holes by Houdini over a
  grammar (bounds, lengths, accumulator = spec fn(prefix), the postcondition with the bound
  replaced by the loop counter, facts of the requires), assertion holes by instantiating the
  quantified facts in scope at index terms {v, v ± 1}, unfolding spec fns at in-scope terms,
  and the next-state invariants; a candidate is kept when it is provable at the point and
  not trivial there.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

import z3

from assets.vcot import bench, smt, vc
from assets.vcot import lang as L

COMPLETERS = ("null", "oracle", "trivial", "retrieval", "solver", "learned")
TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+|\S")


def null(task: dict) -> dict[str, str]:
    return {h["hole_id"]: "" for h in task["holes"]}


def oracle(task: dict) -> dict[str, str]:
    return {h["hole_id"]: h["gold"] for h in task["holes"]}


def trivial(task: dict) -> dict[str, str]:
    out = {}
    lines = task["masked"].split("\n")
    where = bench.placeholder_lines(task["masked"])
    for h, line_no in zip(task["holes"], where):
        indent = lines[line_no][: len(lines[line_no]) - len(lines[line_no].lstrip())]
        if h["kind"] == "assertion":
            out[h["hole_id"]] = f"{indent}assert(true);"
        elif h["kind"] == "invariant":
            out[h["hole_id"]] = f"{indent}invariant\n{indent}    true,"
        else:
            out[h["hole_id"]] = f"{indent}ensures\n{indent}    true,\n{{\n}}"
    return out


# ----------------------------------------------------------------------------- retrieval

def exec_tokens(text: str) -> set[str]:
    """Tokens of the exec code and specs (the non-proof skeleton)."""
    return set(TOKEN.findall(L.print_program(L.strip_proof(L.parse(text)))))


def jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


@dataclass
class Donor:
    program_id: str
    family: str
    text: str
    tokens: set
    program: L.Program
    blocks: list


def roles(program: L.Program, fn_name: str) -> dict[str, list[str]]:
    """Identifiers of a function by role, in order: int / array parameters, locals, return
    name; and the program's spec fns and lemmas."""
    fn = program.item(fn_name)
    out = {"int_params": [n for n, t in fn.params if t not in L.SEQ_TYPES],
           "seq_params": [n for n, t in fn.params if t in L.SEQ_TYPES],
           "locals": [], "ret": [fn.ret[0]] if isinstance(fn, L.ExecFn) and fn.ret else [],
           "specs": list(program.spec_fns), "lemmas": list(program.lemmas)}
    for s in L.walk_stmts(fn.body):
        if isinstance(s, L.Let) and s.name not in out["locals"]:
            out["locals"].append(s.name)
    return out


def rename_map(donor: dict[str, list[str]], target: dict[str, list[str]]) -> dict[str, str]:
    mapping = {}
    for role in donor:
        for i, name in enumerate(donor[role]):
            if target[role]:
                mapping[name] = target[role][min(i, len(target[role]) - 1)]
    return mapping


def rename(text: str, mapping: dict[str, str]) -> str:
    if not mapping:
        return text
    pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, mapping), key=len, reverse=True)) + r")\b")
    return pattern.sub(lambda m: mapping[m.group(1)], text)


def reindent(text: str, indent: str) -> str:
    lines = text.split("\n")
    base = min((len(x) - len(x.lstrip()) for x in lines if x.strip()), default=0)
    return "\n".join((indent + x[base:]) if x.strip() else x for x in lines)


class Retrieval:
    """kNN over a pool of lifted programs; never retrieves from the task's own family."""

    def __init__(self, pool: list[dict]):
        self.pool = [Donor(p["program_id"], p["family"], p["text"], exec_tokens(p["text"]), L.parse(p["text"]),
                           bench.blocks(p["text"])) for p in pool]
        self._tokens: dict[str, set] = {}

    def donors(self, program_id: str, family: str, text: str) -> list[Donor]:
        if program_id not in self._tokens:
            self._tokens[program_id] = exec_tokens(text)
        mine = self._tokens[program_id]
        others = [d for d in self.pool if d.family != family and d.program_id != program_id]
        return sorted(others, key=lambda d: (-jaccard(mine, d.tokens), d.program_id))

    def complete(self, task: dict, org_text: str) -> dict[str, str]:
        target = L.parse(org_text)
        own_blocks = bench.blocks(org_text)
        by_kind = {k: [b for b in own_blocks if b.kind == k] for k in bench.BLOCK_TYPES}
        lines = task["masked"].split("\n")
        where = bench.placeholder_lines(task["masked"])
        ranked = self.donors(task["program_id"], task["family"], org_text)
        out = {}
        for h, line_no in zip(task["holes"], where):
            mine = by_kind[h["kind"]]
            pos = [b.block_id for b in mine].index(h["block_id"])
            rel = pos / (len(mine) - 1) if len(mine) > 1 else 0.0
            indent = lines[line_no][: len(lines[line_no]) - len(lines[line_no].lstrip())]
            own_fn = next(b.fn for b in mine if b.block_id == h["block_id"])
            out[h["hole_id"]] = ""
            for d in ranked:
                theirs = [b for b in d.blocks if b.kind == h["kind"]]
                if not theirs:
                    continue
                pick = theirs[int(round(rel * (len(theirs) - 1)))]
                text = "\n".join(d.text.split("\n")[pick.start:pick.end])
                mapping = rename_map(roles(d.program, pick.fn), roles(target, own_fn))
                out[h["hole_id"]] = reindent(rename(text, mapping), indent if h["kind"] != "lemma" else "    ")
                if h["kind"] == "lemma":
                    out[h["hole_id"]] = _lemma_layout(out[h["hole_id"]])
                break
        return out


def _lemma_layout(text: str) -> str:
    """Lemma blocks keep the printer's layout: clauses indented once, braces at column 0."""
    lines = text.split("\n")
    return "\n".join(x[4:] if x.strip() in ("{", "}") and x.startswith("    ") and not x.startswith("     ")
                     else x for x in lines)


# ----------------------------------------------------------------------------- solver-guided

class Budget:
    def __init__(self, checks: int):
        self.left = int(checks)
        self.used = 0

    def take(self) -> bool:
        if self.left <= 0:
            return False
        self.left -= 1
        self.used += 1
        return True


class SolverGuided:
    """The ATP-like completer (module docstring). One instance per program."""

    def __init__(self, org_text: str, rlimit: int, trivial_rlimit: int, budget: int, seed: int = 0):
        self.org = L.parse(org_text)
        self.rlimit, self.trivial_rlimit, self.budget, self.seed = rlimit, trivial_rlimit, budget, seed

    # -- helpers
    def _prove(self, vcs: vc.VCs, facts: list, goal: Any, mode: str, budget: Budget, axioms: bool = True) -> bool:
        if not budget.take():
            return False
        rl = self.rlimit if mode != "restricted" else self.trivial_rlimit
        return smt.prove([*(vcs.axioms if axioms else []), *facts], goal, vcs.ctx, mode, rl, self.seed).proved

    def complete(self, task: dict) -> dict[str, str]:
        budget = Budget(self.budget)
        holes = task["holes"]
        lines = task["masked"].split("\n")
        where = bench.placeholder_lines(task["masked"])
        indents = {h["hole_id"]: lines[i][: len(lines[i]) - len(lines[i].lstrip())] for h, i in zip(holes, where)}
        out = {h["hole_id"]: "" for h in holes}
        order = sorted(holes, key=lambda h: ("lemma", "invariant", "assertion").index(h["kind"]))
        for h in order:
            try:
                if h["kind"] == "lemma":
                    out[h["hole_id"]] = self._lemma(task, out, h, budget)
                elif h["kind"] == "invariant":
                    out[h["hole_id"]] = self._invariant(task, out, h, indents[h["hole_id"]], budget)
                else:
                    out[h["hole_id"]] = self._assertion(task, out, h, indents[h["hole_id"]], budget)
            except (L.MiniVerusError, bench.TaskError, z3.Z3Exception, KeyError, IndexError, ValueError):
                out[h["hole_id"]] = ""
        return out

    def _current(self, task: dict, filled: dict, override: dict | None = None) -> L.Program:
        """The task's program with the holes filled so far (empty lemma holes get a stub)."""
        completion = dict(filled)
        completion.update(override or {})
        for h in task["holes"]:
            if h["kind"] == "lemma" and not completion.get(h["hole_id"], "").strip():
                completion[h["hole_id"]] = "{\n}"
        return L.parse(bench.fill(task["masked"], completion, task["holes"]))

    # -- lemmas: abduction from call sites
    def _lemma(self, task: dict, filled: dict, hole: dict, budget: Budget) -> str:
        name = hole["block_id"].split(":", 1)[1]
        program = self._current(task, filled)
        lemma = program.lemmas[name]
        params = [p for p, _ in lemma.params]
        calls = []
        for it in program.items:
            if isinstance(it, (L.ExecFn, L.ProofFn)) and it.name != name:
                calls += [s for s in L.walk_stmts(it.body) if isinstance(s, L.LemmaCall) and s.name == name]
        ensures: list = []
        if calls:
            vcs = vc.generate(program)
            for ob in vcs.obligations:
                if len(ensures) >= 2 or ob.goal_src is None or ob.kind in ("bounds",):
                    continue
                if not any(_mentions_call_args(ob.goal_src, c) for c in calls):
                    continue
                if self._prove(vcs, ob.assumptions, ob.goal, "verus", budget):
                    continue
                for c in calls:
                    gen = generalise(ob.goal_src, c, params)
                    if gen is not None and L.free_vars(gen) <= set(params) and \
                            all(L.pexpr(gen) != L.pexpr(e) for e in ensures):
                        ensures.append(gen)
                        break
        requires = []
        ints = [p for p, t in lemma.params if t not in L.SEQ_TYPES]
        if ensures and ints:
            candidate = L.Cmp(("<=",), (L.IntLit(0), L.Var(ints[-1])))
            trial = replace(lemma, requires=(), ensures=tuple(ensures), body=())
            if not self._lemma_ok(program, trial, budget):
                requires.append(candidate)
        trial = replace(lemma, requires=tuple(requires), ensures=tuple(ensures), body=())
        return lemma_text(trial)

    def _lemma_ok(self, program: L.Program, lemma: L.ProofFn, budget: Budget) -> bool:
        items = tuple(lemma if isinstance(it, L.ProofFn) and it.name == lemma.name else it for it in program.items
                      if not isinstance(it, L.ExecFn))
        vcs = vc.generate(L.Program(items))
        return all(self._prove(vcs, ob.assumptions, ob.goal, "verus", budget)
                   for ob in vcs.obligations if ob.fn == lemma.name)

    # -- invariants: Houdini
    def _invariant(self, task: dict, filled: dict, hole: dict, indent: str, budget: Budget) -> str:
        fn_name = hole["block_id"].split(":")[1]
        k = int(hole["block_id"].split(":")[2])
        program = self._current(task, filled)
        fn = program.item(fn_name)
        loop_path, loop = _nth_loop(program, fn_name, k)
        cands = invariant_candidates(fn, loop, program)
        while cands and budget.left > 0:
            trial = _set_invariants(program, loop_path, tuple(cands))
            vcs = vc.generate(trial)
            failing = set()
            for ob in vcs.obligations:
                if ob.fn != fn_name or ob.kind not in ("inv_entry", "inv_preserve") or ob.goal_src is None:
                    continue
                if _loop_of(ob) != loop_path:
                    continue
                if L.pexpr(ob.goal_src) in failing:
                    continue
                if not self._prove(vcs, ob.assumptions, ob.goal, "verus", budget):
                    failing.add(L.pexpr(ob.goal_src))
            if not failing:
                break
            cands = [c for c in cands if L.pexpr(c) not in failing]
        if not cands:
            return ""
        return f"{indent}invariant\n" + "\n".join(f"{indent}    {L.pexpr(c)}," for c in cands)

    # -- assertions: instantiation, unfolding, next-state invariants
    def _assertion(self, task: dict, filled: dict, hole: dict, indent: str, budget: Budget) -> str:
        marker = "assert(true);"
        program = self._current(task, filled, {hole["hole_id"]: f"{indent}{marker}"})
        vcs = vc.generate(program, track=True)
        site = None
        for ob in vcs.obligations:
            if ob.kind == "assert" and ob.goal_src == L.BoolLit(True):
                site = ob
                break
        if site is None:
            return ""
        env = {k: v for k, v in site.trail[-1][1].items()} if site.trail else {}
        facts = site.assumptions
        ground = [a for a in facts if not vc.has_quantifier(a)]
        kept: list[str] = []
        calls: list[str] = []
        known: list = []
        lemmas = program.lemmas
        for cand in lemma_call_candidates(program, env) + assertion_candidates(program, site, env):
            if budget.left < 2 or len(kept) + len(calls) >= 4:
                break
            try:
                if isinstance(cand, L.LemmaCall):
                    lemma = lemmas[cand.name]
                    mapping = {p: a for (p, _), a in zip(lemma.params, cand.args)}
                    pre = [vcs.gen.enc(L.substitute(r, mapping), env) for r in lemma.requires]
                    post = [vcs.gen.enc(L.substitute(e, mapping), env) for e in lemma.ensures]
                    if not post or any(p.eq(q) for p in post for q in known):
                        continue
                    term, need = z3.And(*post), (z3.And(*pre) if pre else None)
                else:
                    term = vcs.gen.enc(cand, env)
                    need = term
            except (L.MiniVerusError, KeyError):
                continue
            if self._prove(vcs, ground + known, term, "restricted", budget, axioms=False):
                continue
            if need is None or self._prove(vcs, facts + known, need, "verus", budget):
                known.append(term)
                if isinstance(cand, L.LemmaCall):
                    calls.append(f"{L.pexpr(L.Call(cand.name, cand.args))};")
                else:
                    kept.append(f"assert({L.pexpr(cand)});")
        lines = []
        if calls:
            lines += [f"{indent}proof {{", *(f"{indent}    {c}" for c in calls), f"{indent}}}"]
        lines += [f"{indent}{x}" for x in kept]
        return "\n".join(lines)


def lemma_text(lemma: L.ProofFn) -> str:
    """A lemma block's text (requires / ensures / decreases / body) as the printer lays it out."""
    printed = L.render(L.Program((lemma,)))
    kind, start, end = printed.blocks[f"lemma:{lemma.name}"]
    return "\n".join(printed.text.split("\n")[start:end])


def _mentions_call_args(goal: Any, call: L.LemmaCall) -> bool:
    texts = {L.pexpr(a) for a in call.args}
    return any(L.pexpr(sub) in texts for sub in L.walk_expr(goal))


def generalise(goal: Any, call: L.LemmaCall, params: list[str]) -> Any:
    """The goal with the call's argument expressions replaced by the lemma's parameters
    (largest arguments first); None when nothing was replaced."""
    pairs = sorted(zip(call.args, params), key=lambda ap: -len(L.pexpr(ap[0])))
    out, changed = goal, False
    for arg, p in pairs:
        new = _replace_subexpr(out, arg, L.Var(p))
        changed |= new != out
        out = new
    return out if changed else None


def _replace_subexpr(e: Any, target: Any, new: Any) -> Any:
    if e == target:
        return new
    if isinstance(e, (L.IntLit, L.BoolLit, L.Var, L.Old)):
        return e
    changes = {}
    for f in e.__dataclass_fields__:
        if f == "pos":
            continue
        v = getattr(e, f)
        if isinstance(v, tuple):
            changes[f] = tuple(_replace_subexpr(x, target, new) if hasattr(x, "__dataclass_fields__") else x
                               for x in v)
        elif hasattr(v, "__dataclass_fields__"):
            changes[f] = _replace_subexpr(v, target, new)
    return replace(e, **changes)


def _nth_loop(program: L.Program, fn_name: str, k: int) -> tuple[tuple, L.While]:
    slots = bench.block_slots(program)
    (list_id, i) = slots[f"inv:{fn_name}:{k}"]
    node = _at(program, list_id)[i]
    return (list_id, i), node


def _at(program: L.Program, list_id: tuple) -> tuple:
    node: Any = program.items[list_id[0]]
    body = getattr(node, list_id[1])
    rest = list_id[2:]
    while rest:
        idx, fld = rest[0], rest[1]
        node = body[idx]
        body = getattr(node, fld)
        rest = rest[2:]
    return body


def _set_invariants(program: L.Program, loop_slot: tuple, invariants: tuple) -> L.Program:
    list_id, idx = loop_slot

    def rebuild(stmts: tuple, lid: tuple) -> tuple:
        out = []
        for i, s in enumerate(stmts):
            path = lid + (i,)
            if lid == list_id and i == idx:
                s = replace(s, invariants=invariants)
            if isinstance(s, L.If):
                s = replace(s, then=rebuild(s.then, path + ("then",)),
                            els=None if s.els is None else rebuild(s.els, path + ("els",)))
            elif isinstance(s, (L.While, L.ProofBlock)):
                s = replace(s, body=rebuild(s.body, path + ("body",)))
            out.append(s)
        return tuple(out)

    items = tuple(replace(it, body=rebuild(it.body, (k, "body"))) if isinstance(it, (L.ExecFn, L.ProofFn)) else it
                  for k, it in enumerate(program.items))
    return L.Program(items)


def _loop_of(ob: vc.Obligation) -> tuple:
    """The while statement an invariant obligation belongs to (entry: its slot; preservation:
    the slot of the loop whose body ends at the obligation's slot)."""
    if ob.kind == "inv_entry":
        return ob.slot
    list_id = ob.slot[0]
    return (list_id[:-2], list_id[-2])


def invariant_candidates(fn: Any, loop: L.While, program: L.Program) -> list:
    """The Houdini grammar for one loop (spec §7): bounds of the counter, array lengths,
    accumulator = spec fn(prefix), postconditions with the bound replaced by the counter,
    and the function's requires (facts about unmodified variables)."""
    out: list = []

    def add(e: Any) -> None:
        if all(L.pexpr(e) != L.pexpr(x) for x in out):
            out.append(e)

    modified = sorted({s.name for s in L.walk_stmts(loop.body) if isinstance(s, (L.Assign, L.SetIndex))})
    counter, bound = None, None
    if isinstance(loop.cond, L.Cmp) and loop.cond.ops == ("<",) and isinstance(loop.cond.args[0], L.Var):
        counter, bound = loop.cond.args[0].name, loop.cond.args[1]
        add(L.Cmp(("<=", "<="), (L.IntLit(0), L.Var(counter), bound)))
    arrays = [n for n, t in fn.params if t in L.SEQ_TYPES]
    ints = [n for n, t in fn.params if t not in L.SEQ_TYPES] + [s.name for s in L.walk_stmts(fn.body)
                                                               if isinstance(s, L.Let)]
    for a in arrays:
        for n in ints:
            if n not in modified:
                add(L.Cmp(("==",), (L.Var(n), L.Len(L.Var(a)))))
                add(L.Cmp(("==",), (L.Len(L.Var(a)), L.Var(n))))
    for r in fn.requires:
        if not (L.free_vars(r) & set(modified)):
            add(r)
    if counter is not None:
        for f in program.spec_fns.values():
            if len(f.params) >= 2 and f.params[-1][1] == "int" and f.ret == "int":
                for acc in modified:
                    if acc == counter or acc in arrays:
                        continue
                    args = [L.Var(arrays[0]) if t in L.SEQ_TYPES and arrays else None for _, t in f.params[:-1]]
                    if None in args:
                        others = [n for n in ints if n not in (counter, acc)]
                        args = [a if a is not None else (L.Var(others[0]) if others else None) for a in args]
                    if None not in args:
                        add(L.Cmp(("==",), (L.Var(acc), L.Call(f.name, tuple(args) + (L.Var(counter),)))))
        ensures = fn.ensures
        for e in ensures:
            if isinstance(e, L.Quant) and e.kind == "forall" and isinstance(e.body, L.Binary) \
                    and e.body.op == "==>" and isinstance(e.body.left, L.Cmp) and bound is not None:
                guard = e.body.left
                new_guard = replace(guard, args=guard.args[:-1] + (L.Var(counter),))
                cand = replace(e, body=replace(e.body, left=new_guard))
                if L.free_vars(cand) <= set(ints) | set(arrays) | {counter}:
                    add(cand)
    return out


def lemma_call_candidates(program: L.Program, env: dict) -> list:
    """Calls of the program's lemmas (with a contract) on in-scope arguments: arrays for
    sequence parameters, in-scope ints and their ± 1 for int parameters (≤ 3 per lemma)."""
    arrays = sorted(n for n, t in env.items() if isinstance(n, str) and z3.is_array(t))
    ints = sorted(n for n, t in env.items() if isinstance(n, str) and not z3.is_array(t) and not z3.is_bool(t))
    terms = [L.Var(v) for v in ints] + [L.Binary("+", L.Var(v), L.IntLit(1)) for v in ints]
    out = []
    for lemma in program.lemmas.values():
        if not lemma.ensures:
            continue
        slots = [[L.Var(a) for a in arrays] if t in L.SEQ_TYPES else terms for _, t in lemma.params]
        if any(not s for s in slots):
            continue
        combos = [[]]
        for options in slots:
            combos = [c + [o] for c in combos for o in options][:3 * len(slots) + 3]
        out += [L.LemmaCall(lemma.name, tuple(c)) for c in combos[:3]]
    return out


def assertion_candidates(program: L.Program, site: vc.Obligation, env: dict) -> list:
    """Instances of the quantified facts in scope at index terms {v, v + 1, v − 1} (v an
    in-scope int variable), spec-fn unfoldings at in-scope terms, next-state invariants."""
    ints = sorted(n for n, t in env.items() if isinstance(n, str) and not z3.is_array(t) and not z3.is_bool(t))
    terms = []
    for v in ints:
        terms += [L.Var(v), L.Binary("+", L.Var(v), L.IntLit(1)), L.Binary("-", L.Var(v), L.IntLit(1))]
    out: list = []

    def add(e: Any) -> None:
        if all(L.pexpr(e) != L.pexpr(x) for x in out):
            out.append(e)

    sources: list = []
    for it in program.items:
        if isinstance(it, (L.ExecFn, L.ProofFn)) and it.name == site.fn:
            sources += list(it.requires)
            for s in L.walk_stmts(it.body):
                if isinstance(s, L.While):
                    sources += list(s.invariants)
    for q in sources:
        if isinstance(q, L.Quant) and q.kind == "forall" and len(q.binders) == 1:
            for t in terms:
                inst = L.substitute(q.body, {q.binders[0][0]: t})
                if L.free_vars(inst) <= set(env):
                    add(inst.right if isinstance(inst, L.Binary) and inst.op == "==>" else inst)
    for f in program.spec_fns.values():
        if f.decreases is not None:
            for t in terms[:6]:
                arrays = [n for n, tv in env.items() if isinstance(n, str) and z3.is_array(tv)]
                if all(pt in L.SEQ_TYPES or pt == "int" for _, pt in f.params) and arrays:
                    args = tuple(L.Var(arrays[0]) if pt in L.SEQ_TYPES else t for _, pt in f.params)
                    if len([1 for _, pt in f.params if pt not in L.SEQ_TYPES]) == 1:
                        mapping = {p: a for (p, _), a in zip(f.params, args)}
                        add(L.Cmp(("==",), (L.Call(f.name, args), L.substitute(f.body, mapping))))
    return out[:24]
