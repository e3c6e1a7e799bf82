"""Z3 terms back to MiniVerus expressions (the "lift" direction of VCoT-Lift).

A proof conclusion is translatable at a program point when every constant in it is an SSA
version visible there (`scope`: constant name → source text such as "i" or "old(a)"),
array reads and lengths map back to `a[t]` / `a.len()`, spec-fn applications (with or
without their fuel argument) to calls, and bound variables to fresh binder names. Skolem
constants, stores, fuel terms and Z3's internal names are not source terms: the translation
returns None for them.
"""
from __future__ import annotations

from typing import Any

import z3

from assets.vcot import lang as L

_CMP = {z3.Z3_OP_LE: "<=", z3.Z3_OP_LT: "<", z3.Z3_OP_GE: ">=", z3.Z3_OP_GT: ">"}
_NEG_CMP = {"<=": ">", "<": ">=", ">=": "<", ">": "<=", "==": "!=", "!=": "=="}


class Untranslatable(Exception):
    pass


def to_source(term: Any, scope: dict[str, str], specs: set[str], fresh: dict[str, str] | None = None,
              defs: dict[str, Any] | None = None) -> Any:
    """The MiniVerus expression of a z3 term, or None when it is not expressible here.

    scope: SSA constant name → source text ("i", "old(a)"); specs: spec-fn names;
    fresh: extra constant names (Skolem constants of a goal's binder) → binder name;
    defs: SSA constants defined later on the path → their defining z3 term (`i@2 ↦ i@1 + 1`),
    so a later version reads as an expression over the versions visible here (`i + 1`).
    """
    try:
        return _tr(term, scope, specs, fresh or {}, [], defs or {})
    except (Untranslatable, RecursionError):
        return None


def _tr(t: Any, scope: dict, specs: set, fresh: dict, binders: list, defs: dict | None = None) -> Any:
    defs = defs or {}
    if z3.is_var(t):
        idx = z3.get_var_index(t)
        if idx >= len(binders):
            raise Untranslatable("free de Bruijn variable")
        return L.Var(binders[len(binders) - 1 - idx])
    if z3.is_quantifier(t):
        if t.is_lambda():
            raise Untranslatable("lambda")
        names = []
        taken = set(scope.values()) | set(binders)
        for i in range(t.num_vars()):
            if t.var_sort(i) != z3.IntSort(t.ctx):
                raise Untranslatable("non-int binder")
            base = t.var_name(i).split("!")[0] or "k"
            name, n = base, 1
            while name in taken or name in names:
                name, n = f"{base}{n}", n + 1
            names.append(name)
        body = _tr(t.body(), scope, specs, fresh, binders + names, defs)
        return L.Quant("forall" if t.is_forall() else "exists", tuple((n, "int") for n in names), body)
    if not z3.is_app(t):
        raise Untranslatable("not an application")
    if z3.is_int_value(t):
        return L.IntLit(t.as_long())
    if z3.is_true(t):
        return L.BoolLit(True)
    if z3.is_false(t):
        return L.BoolLit(False)
    k = t.decl().kind()
    args = t.children()
    rec = [lambda a=a: _tr(a, scope, specs, fresh, binders, defs) for a in args]
    if k == z3.Z3_OP_UNINTERPRETED:
        name = t.decl().name()
        if not args:
            if name in scope:
                return _source_name(scope[name])
            if name in fresh:
                return L.Var(fresh[name])
            if name in defs:
                return _tr(defs[name], scope, specs, fresh, binders, defs)
            raise Untranslatable(f"constant {name} not in scope")
        if name == "len" and len(args) == 1:
            return L.Len(rec[0]())
        if name in specs:
            rest = args
            if args and args[0].sort().name() == "Fuel":
                if not _is_fuel(args[0]):
                    raise Untranslatable("fuel term")
                rest = args[1:]
            return L.Call(name, tuple(_tr(a, scope, specs, fresh, binders, defs) for a in rest))
        raise Untranslatable(f"function {name}")
    if k == z3.Z3_OP_SELECT:
        return L.Index(rec[0](), rec[1]())
    if k == z3.Z3_OP_ADD:
        out = rec[0]()
        for r, a in zip(rec[1:], args[1:]):
            neg = _negated_term(a, scope, specs, fresh, binders, defs)
            out = L.Binary("-", out, neg) if neg is not None else L.Binary("+", out, r())
        return out
    if k == z3.Z3_OP_SUB:
        out = rec[0]()
        for r in rec[1:]:
            out = L.Binary("-", out, r())
        return out
    if k == z3.Z3_OP_MUL:
        out = rec[0]()
        for r in rec[1:]:
            out = L.Binary("*", out, r())
        return out
    if k == z3.Z3_OP_UMINUS:
        inner = rec[0]()
        return L.IntLit(-inner.value) if isinstance(inner, L.IntLit) else L.Unary("-", inner)
    if k in (z3.Z3_OP_IDIV, z3.Z3_OP_DIV, z3.Z3_OP_MOD):
        if not z3.is_int_value(args[1]) or args[1].as_long() == 0:
            raise Untranslatable("division by a non-constant")
        return L.Binary("/" if k != z3.Z3_OP_MOD else "%", rec[0](), rec[1]())
    if k in _CMP:
        return L.Cmp((_CMP[k],), (rec[0](), rec[1]()))
    if k == z3.Z3_OP_EQ:
        if args[0].sort() == z3.BoolSort(t.ctx):
            return L.Cmp(("==",), (rec[0](), rec[1]()))
        return L.Cmp(("==",), (rec[0](), rec[1]()))
    if k == z3.Z3_OP_DISTINCT and len(args) == 2:
        return L.Cmp(("!=",), (rec[0](), rec[1]()))
    if k == z3.Z3_OP_NOT:
        inner = rec[0]()
        if isinstance(inner, L.Cmp) and len(inner.ops) == 1:
            return L.Cmp((_NEG_CMP[inner.ops[0]],), inner.args)
        return L.Unary("!", inner)
    if k == z3.Z3_OP_AND:
        return _fold("&&", [r() for r in rec])
    if k == z3.Z3_OP_OR:
        return clause([(a, r) for a, r in zip(args, rec)], scope, specs, fresh, binders, defs)
    if k == z3.Z3_OP_IMPLIES:
        return L.Binary("==>", rec[0](), rec[1]())
    if k == z3.Z3_OP_ITE:
        return L.Ite(rec[0](), rec[1](), rec[2]())
    raise Untranslatable(f"operator {t.decl().name()}")


def _negated_term(a: Any, scope, specs, fresh, binders, defs) -> Any:
    """For `x + -1*y` return y (so it prints as x - y); None otherwise."""
    if z3.is_app(a) and a.decl().kind() == z3.Z3_OP_MUL and a.num_args() == 2 and z3.is_int_value(a.arg(0)) \
            and a.arg(0).as_long() == -1:
        return _tr(a.arg(1), scope, specs, fresh, binders, defs)
    return None


def clause(parts: list, scope, specs, fresh, binders, defs=None) -> Any:
    """A disjunction as an implication: ¬a ∨ ¬b ∨ c ↦ a && b ==> c."""
    neg, pos = [], []
    for a, r in parts:
        if z3.is_not(a):
            neg.append(_tr(a.arg(0), scope, specs, fresh, binders, defs))
        else:
            pos.append(r())
    if neg and pos:
        return L.Binary("==>", _fold("&&", neg), _fold("||", pos))
    if neg:
        return L.Unary("!", _fold("&&", neg)) if len(neg) > 1 else _negate(neg[0])
    return _fold("||", pos)


def _negate(e: Any) -> Any:
    if isinstance(e, L.Cmp) and len(e.ops) == 1:
        return L.Cmp((_NEG_CMP[e.ops[0]],), e.args)
    return L.Unary("!", e)


def _fold(op: str, items: list) -> Any:
    out = items[0]
    for x in items[1:]:
        out = L.Binary(op, out, x)
    return out


def _is_fuel(t: Any) -> bool:
    name = t.decl().name() if z3.is_app(t) else ""
    if name == "zero":
        return True
    return name == "succ" and _is_fuel(t.arg(0))


def _source_name(text: str) -> Any:
    if text.startswith("old(") and text.endswith(")"):
        return L.Old(text[4:-1])
    return L.Var(text)


def constants(term: Any) -> set[str]:
    """Names of the uninterpreted constants in a term."""
    out, stack, seen = set(), [term], set()
    while stack:
        x = stack.pop()
        if x.get_id() in seen:
            continue
        seen.add(x.get_id())
        if z3.is_quantifier(x):
            stack.append(x.body())
        elif z3.is_app(x):
            if x.num_args() == 0 and x.decl().kind() == z3.Z3_OP_UNINTERPRETED:
                out.add(x.decl().name())
            stack.extend(x.children())
    return out
