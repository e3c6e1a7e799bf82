"""HiR's verifiable constraint bank, its conflict filter and the six instruction templates — pure
Python, no Dagster, no torch.

A constraint is `Constraint(kind, arg)`; its spec string is "kind" or "kind:arg"
("include_word:police", "min_words:6", "no_commas"). A checker maps a response — a list of
word-level tokens (words, numbers and the punctuation tokens . ! ? ,), without <eos> — to a
bool. `judge(tokens, criteria)` gives the verifier triple the reference trainer uses:

    judge_list_j = checker_j(tokens)            per constraint (bool)
    dense        = mean_j judge_list_j          constraint-level accuracy (CLA) of one response
    sparse       = 1 iff all judge_list_j       instruction-level accuracy (ILA), the binary reward

Templates type1–type6 join a question ("write about police .") and the constraint phrases, as
in the reference code's `_concat_question`, adapted to a word-level vocabulary (`<nl>` is the
newline token). `render(question, criteria, q_type)` lists exactly the given constraints, in
order; HiR's rewrite renders the same question with the same template and only the satisfied
constraints.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

PUNCT = (".", "!", "?", ",")
TERMINALS = (".", "!", "?")
NEWLINE = "<nl>"
NUMBER = "<num>"            # an out-of-vocabulary number (still a number for include_number)
TEMPLATES = ("type1", "type2", "type3", "type4", "type5", "type6")

# kind -> argument type (None: no argument)
KINDS: dict[str, type | None] = {
    "include_word": str, "exclude_word": str, "min_words": int, "max_words": int, "start_with": str,
    "end_with": str, "include_number": None, "no_commas": None, "num_sentences": int, "word_twice": str,
}
SINGLE_VALUED = ("min_words", "max_words", "start_with", "end_with", "include_number", "no_commas",
                 "num_sentences")
RULES_HEADER = ("the", "output", "must", "follow", "the", "following", "rules", ":")
TEMPLATE_WORDS = ("include", "do", "not", "say", "at", "least", "most", "words", "start", "with", "end",
                  "a", "number", "no", "commas", "write", "sentences", "twice", "about", "-", ":", *RULES_HEADER)


class ConstraintError(ValueError):
    """An unknown, malformed or conflicting constraint, or an unknown template."""


@dataclass(frozen=True, order=True)
class Constraint:
    kind: str
    arg: str | int | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ConstraintError(f"unknown constraint kind {self.kind!r}; known: {sorted(KINDS)}")
        want = KINDS[self.kind]
        if want is None and self.arg is not None:
            raise ConstraintError(f"{self.kind} takes no argument, got {self.arg!r}")
        if want is int and (not isinstance(self.arg, int) or isinstance(self.arg, bool) or self.arg < 1):
            raise ConstraintError(f"{self.kind} needs a positive integer, got {self.arg!r}")
        if want is str and (not isinstance(self.arg, str) or not self.arg or " " in self.arg):
            raise ConstraintError(f"{self.kind} needs one word, got {self.arg!r}")
        if self.kind == "end_with" and self.arg not in TERMINALS:
            raise ConstraintError(f"end_with needs one of {TERMINALS}, got {self.arg!r}")

    @property
    def spec(self) -> str:
        return self.kind if self.arg is None else f"{self.kind}:{self.arg}"

    def phrase(self) -> list[str]:
        """The constraint as instruction words (no trailing period)."""
        a = str(self.arg)
        return {
            "include_word": ["include", a], "exclude_word": ["do", "not", "say", a],
            "min_words": ["at", "least", a, "words"], "max_words": ["at", "most", a, "words"],
            "start_with": ["start", "with", a], "end_with": ["end", "with", a],
            "include_number": ["include", "a", "number"], "no_commas": ["no", "commas"],
            "num_sentences": ["write", a, "sentences"], "word_twice": ["say", a, "twice"],
        }[self.kind]

    def check(self, tokens: Sequence[str]) -> bool:
        """Does the response (word-level tokens, no <eos>) satisfy this constraint?"""
        words = [t for t in tokens if t not in PUNCT]
        k, a = self.kind, self.arg
        if k == "include_word":
            return a in words
        if k == "exclude_word":
            return a not in words
        if k == "min_words":
            return len(words) >= a
        if k == "max_words":
            return len(words) <= a
        if k == "start_with":
            return bool(tokens) and tokens[0] == a
        if k == "end_with":
            return bool(tokens) and tokens[-1] == a
        if k == "include_number":
            return any(is_number(t) for t in words)
        if k == "no_commas":
            return "," not in tokens
        if k == "num_sentences":
            return count_sentences(tokens) == a
        if k == "word_twice":
            return words.count(a) >= 2
        raise ConstraintError(k)  # unreachable: kinds are validated at construction


def is_number(token: str) -> bool:
    return token.isdigit() or token == NUMBER


def count_sentences(tokens: Sequence[str]) -> int:
    """Sentences = runs of tokens closed by . ! ? ; trailing words without one count as one more."""
    count, open_words = 0, False
    for t in tokens:
        if t in TERMINALS:
            count += open_words
            open_words = False
        elif t != ",":
            open_words = True
    return count + open_words


def parse_constraint(spec: str | Constraint) -> Constraint:
    """'include_word:police' → Constraint('include_word', 'police'); ints parsed for int kinds."""
    if isinstance(spec, Constraint):
        return spec
    kind, _, arg = str(spec).partition(":")
    if kind not in KINDS:
        raise ConstraintError(f"unknown constraint {spec!r}; known kinds: {sorted(KINDS)}")
    if KINDS[kind] is None:
        return Constraint(kind, arg or None)
    if KINDS[kind] is int:
        try:
            return Constraint(kind, int(arg))
        except ValueError:
            raise ConstraintError(f"{spec!r}: {kind} needs an integer argument") from None
    return Constraint(kind, arg)


def parse_criteria(specs: Sequence[str | Constraint]) -> list[Constraint]:
    return [parse_constraint(s) for s in specs]


def conflicts(criteria: Sequence[Constraint]) -> list[str]:
    """Why these constraints cannot (or should not) appear together; empty when compatible.

    Duplicates; two values of a single-valued kind; include/say-twice/start with w and exclude
    w; min_words > max_words; more sentences than max_words allows; say w twice with
    max_words < 2."""
    problems = []
    seen = set()
    for c in criteria:
        if c in seen:
            problems.append(f"duplicate {c.spec}")
        seen.add(c)
    by_kind: dict[str, list[Constraint]] = {}
    for c in criteria:
        by_kind.setdefault(c.kind, []).append(c)
    for kind in SINGLE_VALUED:
        if len({c.arg for c in by_kind.get(kind, [])}) > 1:
            problems.append(f"two {kind} constraints: {[c.spec for c in by_kind[kind]]}")
    excluded = {c.arg for c in by_kind.get("exclude_word", [])}
    for kind in ("include_word", "word_twice", "start_with"):
        for c in by_kind.get(kind, []):
            if c.arg in excluded:
                problems.append(f"{c.spec} contradicts exclude_word:{c.arg}")
    lows = [c.arg for c in by_kind.get("min_words", [])]
    highs = [c.arg for c in by_kind.get("max_words", [])]
    if lows and highs and max(lows) > min(highs):
        problems.append(f"min_words {max(lows)} > max_words {min(highs)}")
    if highs and any(c.arg > min(highs) for c in by_kind.get("num_sentences", [])):
        problems.append("more sentences than max_words allows")
    if highs and min(highs) < 2 and by_kind.get("word_twice"):
        problems.append("word_twice needs at least 2 words")
    return problems


def judge(tokens: Sequence[str], criteria: Sequence[Constraint]) -> tuple[list[bool], float, float]:
    """(judge_list, dense, sparse) of one response; criteria must be non-empty."""
    if not criteria:
        raise ConstraintError("a prompt needs at least one constraint")
    judged = [c.check(tokens) for c in criteria]
    dense = sum(judged) / len(judged)
    return judged, float(dense), float(all(judged))


def render(question: Sequence[str], criteria: Sequence[Constraint], q_type: str) -> list[str]:
    """The instruction tokens: question and exactly `criteria`, joined by template `q_type`.

    type1: question, then each constraint as a sentence; type2: question, newline, sentences;
    type3: question, newline, "the output must follow the following rules :", then numbered
    lines "1 . …"; type4: question, then "- …" lines; type5: the constraint sentences first,
    then the question; type6: question and every constraint on its own line."""
    if q_type not in TEMPLATES:
        raise ConstraintError(f"unknown template {q_type!r}; known: {TEMPLATES}")
    question = list(question)
    phrases = [c.phrase() for c in criteria]
    sentences = [w for p in phrases for w in (*p, ".")]
    if q_type == "type1":
        return [*question, *sentences]
    if q_type == "type2":
        return [*question, NEWLINE, *sentences] if phrases else question
    if q_type == "type3":
        if not phrases:
            return question
        lines = [w for i, p in enumerate(phrases, 1) for w in (NEWLINE, str(i), ".", *p)]
        return [*question, NEWLINE, *RULES_HEADER, *lines]
    if q_type == "type4":
        return [*question, *[w for p in phrases for w in (NEWLINE, "-", *p)]]
    if q_type == "type5":
        return [*sentences, *question]
    return [*question, *[w for p in phrases for w in (NEWLINE, *p, ".")]]


def rewrite(criteria: Sequence[Constraint], judge_list: Sequence[bool]) -> list[Constraint]:
    """HiR's hindsight instruction: the satisfied constraints only, in their order. The
    reference asserts 0 < kept < all (a full success or failure is not a replay)."""
    if len(criteria) != len(judge_list):
        raise ConstraintError(f"{len(criteria)} constraints but {len(judge_list)} judgements")
    kept = [c for c, ok in zip(criteria, judge_list) if ok]
    if not 0 < len(kept) < len(criteria):
        raise ConstraintError(f"a replay needs 0 < kept < all constraints, kept {len(kept)} of {len(criteria)}")
    return kept


# Golden cases of every checker (the constraint_bank asset re-judges them: verifier determinism).
GOLDEN: tuple[tuple[str, str, bool], ...] = (
    ("include_word:police", "the police said .", True), ("include_word:police", "the policeman said .", False),
    ("exclude_word:fire", "the fire spread .", False), ("exclude_word:fire", "the fires spread .", True),
    ("min_words:3", "one two three .", True), ("min_words:4", "one two , three !", False),
    ("max_words:3", "one two three .", True), ("max_words:2", "one two three", False),
    ("start_with:the", "the man left .", True), ("start_with:man", "the man left .", False),
    ("end_with:?", "who left ?", True), ("end_with:.", "who left ?", False),
    ("include_number", "he is 12 .", True), ("include_number", "<num> died .", True),
    ("include_number", "twelve died .", False), ("no_commas", "a , b .", False), ("no_commas", "a b .", True),
    ("num_sentences:2", "a b . c d .", True), ("num_sentences:2", "a b . c d", True),
    ("num_sentences:1", "a b . c d .", False), ("word_twice:the", "the cat and the dog", True),
    ("word_twice:the", "the cat", False),
)
