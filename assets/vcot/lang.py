"""MiniVerus: a Verus-flavoured toy language — grammar (lark), AST, canonical printer, name checks.

Not Rust and not Verus: a small imperative language with Verus's proof vocabulary, whose
verification conditions go to Z3 (vc.py). Items are `spec fn` (pure, possibly recursive),
`proof fn` (lemmas: requires / ensures / ghost body) and `fn` (executable, with loops and
invariants). Integers are mathematical; `Seq<int>` / `&Vec<int>` / `&mut Vec<int>` are
integer arrays with a length. The printer writes one canonical text: `print_program(parse(t))
== t` for every canonical t, and `parse(print_program(p)) == p` for every AST p (positions are
not compared). `print_program` also returns the line span of every *semantic block* (lemma,
invariant and assertion blocks, the masking units of VCoT-Bench).
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from functools import lru_cache
from typing import Any, Iterator

INDENT = "    "
SEQ_TYPES = ("Seq<int>", "&Vec<int>", "&mut Vec<int>", "Vec<int>")
TYPES = ("int", "nat", "bool", *SEQ_TYPES)


class MiniVerusError(ValueError):
    """A MiniVerus program is malformed: parse error or unknown name (with line:col)."""


# ----------------------------------------------------------------------------- AST

def _pos() -> Any:
    return field(default=None, compare=False, repr=False, hash=False)


@dataclass(frozen=True)
class IntLit:
    value: int
    pos: Any = _pos()


@dataclass(frozen=True)
class BoolLit:
    value: bool
    pos: Any = _pos()


@dataclass(frozen=True)
class Var:
    name: str
    pos: Any = _pos()


@dataclass(frozen=True)
class Old:
    """old(a): the value of array parameter a on entry to the function."""
    name: str
    pos: Any = _pos()


@dataclass(frozen=True)
class Index:
    seq: Any
    index: Any
    pos: Any = _pos()


@dataclass(frozen=True)
class Len:
    seq: Any
    pos: Any = _pos()


@dataclass(frozen=True)
class Call:
    """Spec-function application f(args) (an expression)."""
    name: str
    args: tuple
    pos: Any = _pos()


@dataclass(frozen=True)
class Unary:
    op: str          # "!" or "-"
    operand: Any
    pos: Any = _pos()


@dataclass(frozen=True)
class Binary:
    op: str          # + - * / % && || ==>
    left: Any
    right: Any
    pos: Any = _pos()


@dataclass(frozen=True)
class Cmp:
    """Chained comparison a op1 b op2 c … (Verus: `0 <= k < n`)."""
    ops: tuple
    args: tuple
    pos: Any = _pos()


@dataclass(frozen=True)
class Quant:
    kind: str        # forall | exists
    binders: tuple   # ((name, type), ...)
    body: Any
    pos: Any = _pos()


@dataclass(frozen=True)
class Ite:
    cond: Any
    then: Any
    els: Any
    pos: Any = _pos()


# statements

@dataclass(frozen=True)
class Let:
    name: str
    mutable: bool
    type: str | None
    value: Any
    pos: Any = _pos()


@dataclass(frozen=True)
class Assign:
    name: str
    value: Any
    pos: Any = _pos()


@dataclass(frozen=True)
class SetIndex:
    """a.set(i, v) on a `&mut Vec<int>` parameter or a mutable local array."""
    name: str
    index: Any
    value: Any
    pos: Any = _pos()


@dataclass(frozen=True)
class If:
    cond: Any
    then: tuple
    els: tuple | None
    pos: Any = _pos()


@dataclass(frozen=True)
class While:
    cond: Any
    invariants: tuple
    decreases: Any
    body: tuple
    pos: Any = _pos()


@dataclass(frozen=True)
class Return:
    value: Any
    pos: Any = _pos()


@dataclass(frozen=True)
class ProofBlock:
    body: tuple
    pos: Any = _pos()


@dataclass(frozen=True)
class Assert:
    expr: Any
    by: tuple | None = None      # assert(e) by { ... }: only e leaks out
    pos: Any = _pos()


@dataclass(frozen=True)
class AssertForall:
    """assert forall|k: int| lhs implies rhs by { body }."""
    binders: tuple
    lhs: Any
    rhs: Any
    by: tuple
    pos: Any = _pos()


@dataclass(frozen=True)
class LemmaCall:
    name: str
    args: tuple
    pos: Any = _pos()


@dataclass(frozen=True)
class Assume:
    expr: Any
    pos: Any = _pos()


@dataclass(frozen=True)
class Admit:
    pos: Any = _pos()


# items

@dataclass(frozen=True)
class SpecFn:
    name: str
    params: tuple        # ((name, type), ...)
    ret: str
    decreases: Any
    body: Any
    pos: Any = _pos()


@dataclass(frozen=True)
class ProofFn:
    name: str
    params: tuple
    requires: tuple
    ensures: tuple
    decreases: Any
    body: tuple
    pos: Any = _pos()


@dataclass(frozen=True)
class ExecFn:
    name: str
    params: tuple
    ret: tuple | None    # (name, type) or None
    requires: tuple
    ensures: tuple
    body: tuple
    pos: Any = _pos()


@dataclass(frozen=True)
class Program:
    items: tuple

    def item(self, name: str) -> Any:
        for it in self.items:
            if it.name == name:
                return it
        raise KeyError(name)

    @property
    def spec_fns(self) -> dict[str, SpecFn]:
        return {i.name: i for i in self.items if isinstance(i, SpecFn)}

    @property
    def lemmas(self) -> dict[str, ProofFn]:
        return {i.name: i for i in self.items if isinstance(i, ProofFn)}


GHOST_STMTS = (ProofBlock, Assert, AssertForall, LemmaCall, Assume, Admit)


def is_ghost(stmt: Any) -> bool:
    """Proof statements (the content of assertion blocks)."""
    return isinstance(stmt, GHOST_STMTS)


# ----------------------------------------------------------------------------- grammar

GRAMMAR = r"""
start: item*
?item: spec_fn | proof_fn | exec_fn
spec_fn: "spec" "fn" NAME "(" [params] ")" "->" TYPE [decreases] "{" expr "}"
proof_fn: "proof" "fn" NAME "(" [params] ")" [requires] [ensures] [decreases] block
exec_fn: "fn" NAME "(" [params] ")" [ret] [requires] [ensures] block
ret: "->" "(" NAME ":" TYPE ")"
params: param ("," param)* [","]
param: NAME ":" TYPE
requires: "requires" expr_list
ensures: "ensures" expr_list
invariant: "invariant" expr_list
decreases: "decreases" expr
expr_list: expr ("," expr)* [","]
block: "{" stmt* "}"
?stmt: let_stmt | assign | set_stmt | if_stmt | while_stmt | return_stmt | proof_block
     | assert_stmt | assert_by | assert_forall | call_stmt | assume_stmt | admit_stmt
let_stmt: "let" [MUT] NAME [":" TYPE] "=" expr ";"
assign: NAME "=" expr ";"
set_stmt: NAME "." "set" "(" expr "," expr ")" ";"
if_stmt: "if" expr block ["else" else_part]
?else_part: block | if_stmt
while_stmt: "while" expr [invariant] [decreases] block
return_stmt: "return" expr ";"
proof_block: "proof" block
assert_stmt: "assert" "(" expr ")" ";"
assert_by: "assert" "(" expr ")" "by" block
assert_forall: "assert" FORALL "|" binders "|" expr "implies" expr "by" block
call_stmt: NAME "(" [args] ")" ";"
assume_stmt: "assume" "(" expr ")" ";"
admit_stmt: "admit" "(" ")" ";"

?expr: quant | implies
quant: (FORALL | EXISTS) "|" binders "|" expr
binders: binder ("," binder)*
binder: NAME ":" TYPE
?implies: or_expr | or_expr "==>" implies_rhs -> implies_op
?implies_rhs: implies | quant
?or_expr: and_expr | or_expr "||" and_expr -> or_op
?and_expr: cmp | and_expr "&&" cmp -> and_op
?cmp: sum | sum (CMPOP sum)+ -> cmp_op
?sum: prod | sum ADDOP prod -> bin_op
?prod: unary | prod MULOP unary -> bin_op
?unary: postfix | "!" unary -> not_op | "-" unary -> neg_op
?postfix: atom | postfix "[" expr "]" -> index | postfix "." "len" "(" ")" -> length
?atom: INT -> int_lit
     | "true" -> true_lit
     | "false" -> false_lit
     | "old" "(" NAME ")" -> old
     | NAME "(" [args] ")" -> call
     | NAME -> var
     | "(" expr ")"
     | "if" expr "{" expr "}" "else" "{" expr "}" -> ite
args: expr ("," expr)*

FORALL: "forall"
EXISTS: "exists"
MUT: "mut"
TYPE.2: /&mut\s+Vec<int>/ | "&Vec<int>" | "Vec<int>" | "Seq<int>" | "int" | "nat" | "bool"
CMPOP: "<=" | ">=" | "==" | "!=" | "<" | ">"
ADDOP: "+" | "-"
MULOP: "*" | "/" | "%"
NAME: /[A-Za-z_][A-Za-z0-9_]*/
INT: /[0-9]+/
COMMENT: /\/\/[^\n]*/
%import common.WS
%ignore WS
%ignore COMMENT
"""


@lru_cache(maxsize=1)
def _parser():
    from lark import Lark

    return Lark(GRAMMAR, parser="lalr", propagate_positions=True, maybe_placeholders=True)


def _p(meta: Any) -> tuple[int, int] | None:
    return (meta.line, meta.column) if getattr(meta, "line", None) is not None else None


def _transformer():
    from lark import Transformer, v_args

    @v_args(meta=True)
    class ToAst(Transformer):
        def start(self, meta, items):
            return Program(tuple(items))

        def params(self, meta, ch):
            return tuple(c for c in ch if c is not None)

        def param(self, meta, ch):
            return (str(ch[0]), _type(ch[1]))

        def ret(self, meta, ch):
            return (str(ch[0]), _type(ch[1]))

        def expr_list(self, meta, ch):
            return tuple(c for c in ch if c is not None)

        def requires(self, meta, ch):
            return ch[0]

        ensures = invariant = requires

        def decreases(self, meta, ch):
            return ch[0]

        def block(self, meta, ch):
            return tuple(ch)

        def spec_fn(self, meta, ch):
            name, params, ret, dec, body = ch
            return SpecFn(str(name), params or (), _type(ret), dec, body, pos=_p(meta))

        def proof_fn(self, meta, ch):
            name, params, req, ens, dec, body = ch
            return ProofFn(str(name), params or (), req or (), ens or (), dec, body, pos=_p(meta))

        def exec_fn(self, meta, ch):
            name, params, ret, req, ens, body = ch
            return ExecFn(str(name), params or (), ret, req or (), ens or (), body, pos=_p(meta))

        def let_stmt(self, meta, ch):
            mut, name, typ, value = ch
            return Let(str(name), mut is not None, _type(typ) if typ is not None else None, value, pos=_p(meta))

        def assign(self, meta, ch):
            return Assign(str(ch[0]), ch[1], pos=_p(meta))

        def set_stmt(self, meta, ch):
            return SetIndex(str(ch[0]), ch[1], ch[2], pos=_p(meta))

        def if_stmt(self, meta, ch):
            cond, then, els = ch
            if isinstance(els, If):
                els = (els,)
            return If(cond, then, els, pos=_p(meta))

        def while_stmt(self, meta, ch):
            cond, inv, dec, body = ch
            return While(cond, inv or (), dec, body, pos=_p(meta))

        def return_stmt(self, meta, ch):
            return Return(ch[0], pos=_p(meta))

        def proof_block(self, meta, ch):
            return ProofBlock(ch[0], pos=_p(meta))

        def assert_stmt(self, meta, ch):
            return Assert(ch[0], None, pos=_p(meta))

        def assert_by(self, meta, ch):
            return Assert(ch[0], ch[1], pos=_p(meta))

        def assert_forall(self, meta, ch):
            return AssertForall(ch[1], ch[2], ch[3], ch[4], pos=_p(meta))

        def call_stmt(self, meta, ch):
            return LemmaCall(str(ch[0]), ch[1] or (), pos=_p(meta))

        def assume_stmt(self, meta, ch):
            return Assume(ch[0], pos=_p(meta))

        def admit_stmt(self, meta, ch):
            return Admit(pos=_p(meta))

        def quant(self, meta, ch):
            return Quant(str(ch[0]), ch[1], ch[2], pos=_p(meta))

        def binders(self, meta, ch):
            return tuple(ch)

        def binder(self, meta, ch):
            return (str(ch[0]), _type(ch[1]))

        def implies_op(self, meta, ch):
            return Binary("==>", ch[0], ch[1], pos=_p(meta))

        def or_op(self, meta, ch):
            return Binary("||", ch[0], ch[1], pos=_p(meta))

        def and_op(self, meta, ch):
            return Binary("&&", ch[0], ch[1], pos=_p(meta))

        def cmp_op(self, meta, ch):
            return Cmp(tuple(str(c) for c in ch[1::2]), tuple(ch[0::2]), pos=_p(meta))

        def bin_op(self, meta, ch):
            return Binary(str(ch[1]), ch[0], ch[2], pos=_p(meta))

        def not_op(self, meta, ch):
            return Unary("!", ch[0], pos=_p(meta))

        def neg_op(self, meta, ch):
            if isinstance(ch[0], IntLit) and ch[0].value > 0:
                return IntLit(-ch[0].value, pos=_p(meta))   # literal -n (keeps printing canonical)
            return Unary("-", ch[0], pos=_p(meta))

        def index(self, meta, ch):
            return Index(ch[0], ch[1], pos=_p(meta))

        def length(self, meta, ch):
            return Len(ch[0], pos=_p(meta))

        def int_lit(self, meta, ch):
            return IntLit(int(ch[0]), pos=_p(meta))

        def true_lit(self, meta, ch):
            return BoolLit(True, pos=_p(meta))

        def false_lit(self, meta, ch):
            return BoolLit(False, pos=_p(meta))

        def old(self, meta, ch):
            return Old(str(ch[0]), pos=_p(meta))

        def call(self, meta, ch):
            return Call(str(ch[0]), ch[1] or (), pos=_p(meta))

        def var(self, meta, ch):
            return Var(str(ch[0]), pos=_p(meta))

        def ite(self, meta, ch):
            return Ite(ch[0], ch[1], ch[2], pos=_p(meta))

        def args(self, meta, ch):
            return tuple(ch)

    return ToAst()


def _type(token: Any) -> str:
    text = " ".join(str(token).split())
    return text


def parse(text: str) -> Program:
    """Parse a MiniVerus program; a syntax error raises MiniVerusError("line L:C: ...")."""
    from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

    try:
        tree = _parser().parse(text)
    except UnexpectedToken as err:
        token = err.token
        shown = "end of input" if token.type == "$END" else repr(str(token))
        raise MiniVerusError(f"line {err.line}:{err.column}: unexpected {shown}; expected one of "
                             f"{sorted(err.expected)[:8]}") from None
    except UnexpectedCharacters as err:
        raise MiniVerusError(f"line {err.line}:{err.column}: unexpected character "
                             f"{text[err.pos_in_stream]!r}") from None
    except UnexpectedEOF as err:
        raise MiniVerusError(f"unexpected end of input; expected one of {sorted(err.expected)[:8]}") from None
    except UnexpectedInput as err:  # pragma: no cover - other lark errors
        raise MiniVerusError(f"line {err.line}:{err.column}: {err}") from None
    return _transformer().transform(tree)


def parse_expr(text: str) -> Any:
    """One expression (for tests and completers): parsed as the body of an assert."""
    program = parse(f"proof fn __e() {{ assert({text}); }}")
    return program.items[0].body[0].expr


def parse_stmts(text: str) -> tuple:
    """Proof statements (a block's content), parsed inside a lemma body."""
    return parse(f"proof fn __s() {{\n{text}\n}}").items[0].body


# ----------------------------------------------------------------------------- printer

PREC = {"==>": 1, "||": 2, "&&": 3, "cmp": 4, "+": 5, "-": 5, "*": 6, "/": 6, "%": 6, "unary": 7, "atom": 8}


def _prec(e: Any) -> int:
    if isinstance(e, (Quant, Ite)):
        return 0
    if isinstance(e, Binary):
        return PREC[e.op]
    if isinstance(e, Cmp):
        return PREC["cmp"]
    if isinstance(e, Unary) or (isinstance(e, IntLit) and e.value < 0):
        return PREC["unary"]
    return PREC["atom"]


def pexpr(e: Any, need: int = 0) -> str:
    """Canonical text of an expression; parenthesized when its precedence is below `need`."""
    text = _pexpr(e)
    return f"({text})" if _prec(e) < need else text


def _pexpr(e: Any) -> str:
    if isinstance(e, IntLit):
        return str(e.value)
    if isinstance(e, BoolLit):
        return "true" if e.value else "false"
    if isinstance(e, Var):
        return e.name
    if isinstance(e, Old):
        return f"old({e.name})"
    if isinstance(e, Index):
        return f"{pexpr(e.seq, PREC['atom'])}[{pexpr(e.index)}]"
    if isinstance(e, Len):
        return f"{pexpr(e.seq, PREC['atom'])}.len()"
    if isinstance(e, Call):
        return f"{e.name}({', '.join(pexpr(a) for a in e.args)})"
    if isinstance(e, Unary):
        return f"{e.op}{pexpr(e.operand, PREC['unary'])}"
    if isinstance(e, Binary):
        p = PREC[e.op]
        if e.op == "==>":
            right = pexpr(e.right, 1) if not isinstance(e.right, Quant) else _pexpr(e.right)
            return f"{pexpr(e.left, p + 1)} ==> {right}"
        return f"{pexpr(e.left, p)} {e.op} {pexpr(e.right, p + 1)}"
    if isinstance(e, Cmp):
        parts = [pexpr(e.args[0], PREC["+"])]
        for op, arg in zip(e.ops, e.args[1:]):
            parts += [op, pexpr(arg, PREC["+"])]
        return " ".join(parts)
    if isinstance(e, Quant):
        binders = ", ".join(f"{n}: {t}" for n, t in e.binders)
        return f"{e.kind}|{binders}| {pexpr(e.body)}"
    if isinstance(e, Ite):
        return f"if {pexpr(e.cond)} {{ {pexpr(e.then)} }} else {{ {pexpr(e.els)} }}"
    raise TypeError(f"not an expression: {e!r}")


@dataclass
class Printed:
    """Canonical text and the line spans [start, end) of every semantic block.

    blocks: {block_id: (kind, start, end)}, kind ∈ lemma / invariant / assertion; ids are
    "lemma:<fn>", "inv:<fn>:<k>" (k-th loop of the function in source order) and
    "assert:<fn>:<k>" (k-th assertion block of the function in source order).
    """

    text: str
    blocks: dict[str, tuple[str, int, int]]


class _Printer:
    def __init__(self):
        self.lines: list[str] = []
        self.blocks: dict[str, tuple[str, int, int]] = {}
        self.counters: dict[str, int] = {}

    def emit(self, depth: int, text: str) -> None:
        self.lines.append(INDENT * depth + text)

    def _next(self, kind: str, fn: str) -> str:
        key = f"{kind}:{fn}"
        k = self.counters.get(key, 0)
        self.counters[key] = k + 1
        return f"{key}:{k}"

    def clauses(self, depth: int, keyword: str, exprs: tuple) -> None:
        if exprs:
            self.emit(depth, keyword)
            for e in exprs:
                self.emit(depth + 1, pexpr(e) + ",")

    def item(self, it: Any) -> None:
        params = ", ".join(f"{n}: {t}" for n, t in it.params)
        if isinstance(it, SpecFn):
            self.emit(0, f"spec fn {it.name}({params}) -> {it.ret}")
            if it.decreases is not None:
                self.emit(1, f"decreases {pexpr(it.decreases)}")
            self.emit(0, "{")
            self.emit(1, pexpr(it.body))
            self.emit(0, "}")
        elif isinstance(it, ProofFn):
            self.emit(0, f"proof fn {it.name}({params})")
            start = len(self.lines)
            self.clauses(1, "requires", it.requires)
            self.clauses(1, "ensures", it.ensures)
            if it.decreases is not None:
                self.emit(1, f"decreases {pexpr(it.decreases)}")
            self.emit(0, "{")
            self.stmts(1, it.body, it.name, ghost=True)
            self.emit(0, "}")
            self.blocks[f"lemma:{it.name}"] = ("lemma", start, len(self.lines))
        elif isinstance(it, ExecFn):
            ret = f" -> ({it.ret[0]}: {it.ret[1]})" if it.ret else ""
            self.emit(0, f"fn {it.name}({params}){ret}")
            self.clauses(1, "requires", it.requires)
            self.clauses(1, "ensures", it.ensures)
            self.emit(0, "{")
            self.stmts(1, it.body, it.name, ghost=False)
            self.emit(0, "}")
        else:
            raise TypeError(f"not an item: {it!r}")

    def stmts(self, depth: int, body: tuple, fn: str, ghost: bool) -> None:
        """Statements; outside proof code, each maximal run of ghost statements is one block."""
        i = 0
        while i < len(body):
            if not ghost and is_ghost(body[i]):
                j = i
                while j < len(body) and is_ghost(body[j]):
                    j += 1
                block = self._next("assert", fn)
                start = len(self.lines)
                for s in body[i:j]:
                    self.stmt(depth, s, fn, ghost=True)
                self.blocks[block] = ("assertion", start, len(self.lines))
                i = j
                continue
            self.stmt(depth, body[i], fn, ghost)
            i += 1

    def stmt(self, depth: int, s: Any, fn: str, ghost: bool) -> None:
        if isinstance(s, Let):
            mut = "mut " if s.mutable else ""
            typ = f": {s.type}" if s.type else ""
            self.emit(depth, f"let {mut}{s.name}{typ} = {pexpr(s.value)};")
        elif isinstance(s, Assign):
            self.emit(depth, f"{s.name} = {pexpr(s.value)};")
        elif isinstance(s, SetIndex):
            self.emit(depth, f"{s.name}.set({pexpr(s.index)}, {pexpr(s.value)});")
        elif isinstance(s, If):
            self._if(depth, s, fn, ghost, prefix="")
        elif isinstance(s, While):
            self.emit(depth, f"while {pexpr(s.cond)}")
            block = self._next("inv", fn)
            start = len(self.lines)
            self.clauses(depth + 1, "invariant", s.invariants)
            self.blocks[block] = ("invariant", start, len(self.lines))
            if s.decreases is not None:
                self.emit(depth + 1, f"decreases {pexpr(s.decreases)}")
            self.emit(depth, "{")
            self.stmts(depth + 1, s.body, fn, ghost)
            self.emit(depth, "}")
        elif isinstance(s, Return):
            self.emit(depth, f"return {pexpr(s.value)};")
        elif isinstance(s, ProofBlock):
            self.emit(depth, "proof {")
            self.stmts(depth + 1, s.body, fn, ghost=True)
            self.emit(depth, "}")
        elif isinstance(s, Assert):
            if s.by is None:
                self.emit(depth, f"assert({pexpr(s.expr)});")
            else:
                self.emit(depth, f"assert({pexpr(s.expr)}) by {{")
                self.stmts(depth + 1, s.by, fn, ghost=True)
                self.emit(depth, "}")
        elif isinstance(s, AssertForall):
            binders = ", ".join(f"{n}: {t}" for n, t in s.binders)
            self.emit(depth, f"assert forall|{binders}| {pexpr(s.lhs)} implies {pexpr(s.rhs)} by {{")
            self.stmts(depth + 1, s.by, fn, ghost=True)
            self.emit(depth, "}")
        elif isinstance(s, LemmaCall):
            self.emit(depth, f"{s.name}({', '.join(pexpr(a) for a in s.args)});")
        elif isinstance(s, Assume):
            self.emit(depth, f"assume({pexpr(s.expr)});")
        elif isinstance(s, Admit):
            self.emit(depth, "admit();")
        else:
            raise TypeError(f"not a statement: {s!r}")

    def _if(self, depth: int, s: If, fn: str, ghost: bool, prefix: str) -> None:
        self.emit(depth, f"{prefix}if {pexpr(s.cond)} {{")
        self.stmts(depth + 1, s.then, fn, ghost)
        if s.els is None:
            self.emit(depth, "}")
        elif len(s.els) == 1 and isinstance(s.els[0], If):
            self._if_else_if(depth, s.els[0], fn, ghost)
        else:
            self.emit(depth, "} else {")
            self.stmts(depth + 1, s.els, fn, ghost)
            self.emit(depth, "}")

    def _if_else_if(self, depth: int, s: If, fn: str, ghost: bool) -> None:
        self.emit(depth, f"}} else if {pexpr(s.cond)} {{")
        self.stmts(depth + 1, s.then, fn, ghost)
        if s.els is None:
            self.emit(depth, "}")
        elif len(s.els) == 1 and isinstance(s.els[0], If):
            self._if_else_if(depth, s.els[0], fn, ghost)
        else:
            self.emit(depth, "} else {")
            self.stmts(depth + 1, s.els, fn, ghost)
            self.emit(depth, "}")


def render(program: Program) -> Printed:
    """Canonical text of a program and its semantic-block spans."""
    printer = _Printer()
    for k, it in enumerate(program.items):
        if k:
            printer.lines.append("")
        printer.item(it)
    return Printed("\n".join(printer.lines) + "\n", printer.blocks)


def print_program(program: Program) -> str:
    return render(program).text


def print_stmts(stmts: tuple, depth: int) -> str:
    """Proof statements as text at an indentation depth (completers' block text)."""
    printer = _Printer()
    for s in stmts:
        printer.stmt(depth, s, "__", ghost=True)
    return "\n".join(printer.lines)


# ----------------------------------------------------------------------------- traversal

def walk_expr(e: Any) -> Iterator[Any]:
    """Every sub-expression of e (pre-order), e included."""
    yield e
    for f in fields(e):
        if f.name == "pos":
            continue
        v = getattr(e, f.name)
        if isinstance(v, tuple):
            for x in v:
                if _is_node(x):
                    yield from walk_expr(x)
        elif _is_node(v):
            yield from walk_expr(v)


def _is_node(x: Any) -> bool:
    return isinstance(x, (IntLit, BoolLit, Var, Old, Index, Len, Call, Unary, Binary, Cmp, Quant, Ite))


def walk_stmts(body: tuple) -> Iterator[Any]:
    """Every statement of a body, nested ones included (pre-order)."""
    for s in body or ():
        yield s
        if isinstance(s, If):
            yield from walk_stmts(s.then)
            yield from walk_stmts(s.els or ())
        elif isinstance(s, While):
            yield from walk_stmts(s.body)
        elif isinstance(s, ProofBlock):
            yield from walk_stmts(s.body)
        elif isinstance(s, Assert) and s.by:
            yield from walk_stmts(s.by)
        elif isinstance(s, AssertForall):
            yield from walk_stmts(s.by)


def substitute(e: Any, mapping: dict[str, Any]) -> Any:
    """e with free variables renamed/replaced (mapping: name -> expression); binders respected."""
    if isinstance(e, Var):
        return mapping.get(e.name, e)
    if isinstance(e, Old):
        target = mapping.get(e.name)
        return Old(target.name) if isinstance(target, Var) else e
    if isinstance(e, Quant):
        inner = {k: v for k, v in mapping.items() if k not in {n for n, _ in e.binders}}
        return replace(e, body=substitute(e.body, inner))
    if isinstance(e, (IntLit, BoolLit)):
        return e
    changes = {}
    for f in fields(e):
        if f.name == "pos":
            continue
        v = getattr(e, f.name)
        if isinstance(v, tuple):
            changes[f.name] = tuple(substitute(x, mapping) if _is_node(x) else x for x in v)
        elif _is_node(v):
            changes[f.name] = substitute(v, mapping)
    return replace(e, **changes)


def free_vars(e: Any) -> set[str]:
    """Free variable names of an expression (old(a) counts as a)."""
    if isinstance(e, Var):
        return {e.name}
    if isinstance(e, Old):
        return {e.name}
    if isinstance(e, Quant):
        return free_vars(e.body) - {n for n, _ in e.binders}
    out: set[str] = set()
    for f in fields(e):
        if f.name == "pos":
            continue
        v = getattr(e, f.name)
        for x in (v if isinstance(v, tuple) else (v,)):
            if _is_node(x):
                out |= free_vars(x)
    return out


def conjuncts(e: Any) -> list[Any]:
    """Top-level && split."""
    if isinstance(e, Binary) and e.op == "&&":
        return conjuncts(e.left) + conjuncts(e.right)
    return [e]


# ----------------------------------------------------------------------------- name checks

def _where(node: Any) -> str:
    pos = getattr(node, "pos", None)
    return f"line {pos[0]}:{pos[1]}" if pos else "(generated code)"


def check_names(program: Program, allow_assume: bool = False) -> list[str]:
    """Problems with names and proof discipline (empty = fine): unknown variables, spec fns
    and lemmas (with arity), assignments to immutable or undeclared names, `.set` on a
    read-only array, lemma calls outside proof code, and `assume` / `admit` anywhere
    unless allow_assume. Each problem carries its line:col."""
    problems: list[str] = []
    specs = program.spec_fns
    lemmas = program.lemmas
    names = [it.name for it in program.items]
    problems += [f"item {n!r} is defined twice" for n in sorted({n for n in names if names.count(n) > 1})]

    def expr(e: Any, scope: dict[str, str], fn: str) -> None:
        if isinstance(e, Var):
            if e.name not in scope:
                problems.append(f"{_where(e)}: unknown name {e.name!r} in {fn}")
            return
        if isinstance(e, Old):
            if scope.get(e.name) != "&mut Vec<int>":
                problems.append(f"{_where(e)}: old({e.name}) needs a &mut Vec<int> parameter in {fn}")
            return
        if isinstance(e, Quant):
            expr(e.body, {**scope, **dict(e.binders)}, fn)
            return
        if isinstance(e, Call):
            if e.name not in specs:
                problems.append(f"{_where(e)}: unknown spec fn {e.name!r} in {fn}")
            elif len(e.args) != len(specs[e.name].params):
                problems.append(f"{_where(e)}: {e.name} takes {len(specs[e.name].params)} "
                                f"arguments, got {len(e.args)}")
        for f in fields(e):
            if f.name == "pos":
                continue
            v = getattr(e, f.name)
            for x in (v if isinstance(v, tuple) else (v,)):
                if _is_node(x):
                    expr(x, scope, fn)

    def stmts(body: tuple, scope: dict[str, str], mutable: set[str], fn: str, ghost: bool) -> None:
        scope = dict(scope)
        for s in body:
            if isinstance(s, Let):
                expr(s.value, scope, fn)
                scope[s.name] = s.type or "int"
                if s.mutable:
                    mutable.add(s.name)
            elif isinstance(s, Assign):
                expr(s.value, scope, fn)
                if s.name not in scope:
                    problems.append(f"{_where(s)}: assignment to unknown name {s.name!r} in {fn}")
                elif s.name not in mutable:
                    problems.append(f"{_where(s)}: assignment to immutable {s.name!r} in {fn}")
                if ghost:
                    problems.append(f"{_where(s)}: assignment inside proof code in {fn}")
            elif isinstance(s, SetIndex):
                expr(s.index, scope, fn)
                expr(s.value, scope, fn)
                if scope.get(s.name) != "&mut Vec<int>" and s.name not in mutable:
                    problems.append(f"{_where(s)}: {s.name}.set needs a &mut Vec<int> in {fn}")
                if ghost:
                    problems.append(f"{_where(s)}: .set inside proof code in {fn}")
            elif isinstance(s, If):
                expr(s.cond, scope, fn)
                stmts(s.then, scope, mutable, fn, ghost)
                stmts(s.els or (), scope, mutable, fn, ghost)
            elif isinstance(s, While):
                expr(s.cond, scope, fn)
                for inv in s.invariants:
                    expr(inv, scope, fn)
                if s.decreases is not None:
                    expr(s.decreases, scope, fn)
                stmts(s.body, scope, mutable, fn, ghost)
            elif isinstance(s, Return):
                expr(s.value, scope, fn)
            elif isinstance(s, ProofBlock):
                stmts(s.body, scope, set(), fn, True)
            elif isinstance(s, Assert):
                expr(s.expr, scope, fn)
                if s.by is not None:
                    stmts(s.by, scope, set(), fn, True)
            elif isinstance(s, AssertForall):
                inner = {**scope, **dict(s.binders)}
                expr(s.lhs, inner, fn)
                expr(s.rhs, inner, fn)
                stmts(s.by, inner, set(), fn, True)
            elif isinstance(s, LemmaCall):
                for a in s.args:
                    expr(a, scope, fn)
                if s.name not in lemmas:
                    problems.append(f"{_where(s)}: unknown lemma {s.name!r} in {fn}")
                elif len(s.args) != len(lemmas[s.name].params):
                    problems.append(f"{_where(s)}: {s.name} takes {len(lemmas[s.name].params)} arguments, "
                                    f"got {len(s.args)}")
                if not ghost:
                    problems.append(f"{_where(s)}: lemma call {s.name} outside proof code in {fn}")
            elif isinstance(s, (Assume, Admit)):
                if not allow_assume:
                    word = "assume" if isinstance(s, Assume) else "admit"
                    problems.append(f"{_where(s)}: {word} is not allowed (in {fn})")
                if isinstance(s, Assume):
                    expr(s.expr, scope, fn)

    for it in program.items:
        scope = dict(it.params)
        if isinstance(it, SpecFn):
            expr(it.body, scope, it.name)
            if it.decreases is not None:
                expr(it.decreases, scope, it.name)
        elif isinstance(it, ProofFn):
            for e in (*it.requires, *it.ensures):
                expr(e, scope, it.name)
            stmts(it.body, scope, set(), it.name, True)
        elif isinstance(it, ExecFn):
            for e in it.requires:
                expr(e, scope, it.name)
            post = dict(scope)
            if it.ret:
                post[it.ret[0]] = it.ret[1]
            for e in it.ensures:
                expr(e, post, it.name)
            stmts(it.body, scope, set(), it.name, False)
    return problems


def require_valid(program: Program, allow_assume: bool = False) -> Program:
    problems = check_names(program, allow_assume)
    if problems:
        raise MiniVerusError("; ".join(problems[:10]))
    return program


# ----------------------------------------------------------------------------- exec/spec skeleton

def strip_proof(program: Program) -> Program:
    """The non-proof part: spec fns, exec code and exec specs; every proof statement, loop
    invariant and decreases clause, and every lemma's requires / ensures / body removed
    (the lemma's signature stays). SynAcc compares its hash with the original's."""
    def body(stmts: tuple) -> tuple:
        out = []
        for s in stmts:
            if is_ghost(s):
                continue
            if isinstance(s, If):
                s = replace(s, then=body(s.then), els=None if s.els is None else body(s.els))
            elif isinstance(s, While):
                s = replace(s, invariants=(), decreases=None, body=body(s.body))
            out.append(s)
        return tuple(out)

    items = []
    for it in program.items:
        if isinstance(it, ProofFn):
            it = replace(it, requires=(), ensures=(), decreases=None, body=())
        elif isinstance(it, ExecFn):
            it = replace(it, body=body(it.body))
        items.append(it)
    return Program(tuple(items))


def skeleton_hash(program: Program) -> str:
    import hashlib

    return hashlib.md5(print_program(strip_proof(program)).encode()).hexdigest()
