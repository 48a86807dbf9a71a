"""Conditions on what a check saw, in the manner of Gatus: ``[STATUS] == 200``.

A condition is ``LEFT OPERATOR RIGHT``; each side is a placeholder with an optional path
into it, a literal, or a function. Parsed by a small tokenizer, never ``eval``, and parsed
when the configuration is loaded, so a typo is an error naming the condition before any
check runs.

>>> Condition.parse("[BODY].checks[0].ok == true").evaluate({"BODY": {"checks": [{"ok": True}]}})
(True, '[BODY].checks[0].ok (true) == true')
>>> Condition.parse("len([BODY].items) > 0").evaluate({"BODY": {"items": []}})
(False, 'len([BODY].items) (0) > 0')

Placeholders (which a check kind fills, see ``heron.ops.watchdog.checks``):
``[STATUS]`` (HTTP status), ``[RESPONSE_TIME]`` (milliseconds), ``[BODY]`` (the JSON body,
else its text), ``[CONNECTED]``, ``[CERTIFICATE_EXPIRATION]`` (milliseconds until the
server's certificate expires), ``[RESULT]`` and ``[ERROR]`` (JSON-RPC), ``[EXIT]`` and
``[OUTPUT]`` (a command). Literals: numbers, durations (``1h30m``, ``500ms``, ``48h``),
``true``, ``false``, ``null``, quoted strings, and bare words as strings
(``[BODY].status == UP``). Operators: ``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=``.

Functions, as Gatus documents them: ``len(X)`` (the length of a string, list or
object), ``has(X)`` (``true`` when the path resolves: ``has([BODY].errors) == false``),
``pat(P)`` (a glob, ``*`` any text and ``?`` one character: ``[BODY] == pat(*<h1>*)``)
and ``any(A, B, ...)`` (one of the values: ``[STATUS] == any(200, 429)``); ``pat`` and
``any`` take their arguments as written (no quotes) and go with ``==`` or ``!=``.

Ordering compares numbers; as in Gatus, a duration on either side (a literal, or a text
the check saw such as ``"90s"``) is its milliseconds, so ``[RESPONSE_TIME] < 1s`` and
``[CERTIFICATE_EXPIRATION] > 48h`` read as they are written.
"""

from __future__ import annotations

import fnmatch
import json
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from heron.errors import ConfigError
from heron.ops.watchdog.durations import LITERAL, human, literal_seconds

PLACEHOLDERS = ("STATUS", "RESPONSE_TIME", "BODY", "CONNECTED", "CERTIFICATE_EXPIRATION",
                "RESULT", "ERROR", "EXIT", "OUTPUT")  # fmt: skip
#: Placeholders holding milliseconds of time left, shown as durations in a detail.
_TIME_LEFT = ("CERTIFICATE_EXPIRATION",)
OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<=": operator.le,
    ">=": operator.ge,
    "<": operator.lt,
    ">": operator.gt,
}
_TOKEN = re.compile(
    rf"""\s*(?:
      (?P<placeholder>\[[A-Z_]+\])
    | (?P<op>==|!=|<=|>=|<|>)
    | (?P<string>"(?:[^"\\]|\\.)*"|'[^']*')
    | (?P<duration>{LITERAL})(?![\w.])
    | (?P<number>-?\d+(?:\.\d+)?(?![\w.]))
    | (?P<punct>[().\[\]])
    | (?P<word>[A-Za-z_][\w-]*)
    )""",
    re.VERBOSE,
)
#: ``pat(`` and ``any(``: their arguments are raw text, up to the ``)`` that ends the side.
_MATCHER = re.compile(r"\s*(pat|any)\(")
_SIDE_END = re.compile(r"\s*(?:$|==|!=|<=|>=|<|>)")
_MISSING = object()
_WANTED = {"op": "an operator", "number": "a number", "punct": "more"}


class ConditionError(ConfigError):
    """A condition that does not parse; the message quotes it and says what was expected."""


@dataclass(frozen=True)
class Operand:
    """A placeholder with a path (``[BODY].a[0]``), or a literal; ``function`` is
    ``len`` or ``has`` wrapping it."""

    text: str
    placeholder: str | None = None
    path: tuple[str | int, ...] = ()
    value: Any = None
    function: str | None = None

    def resolve(self, seen: Mapping[str, Any]) -> Any:
        if self.placeholder is None:
            value = self.value
        else:
            value = seen.get(self.placeholder, _MISSING)
            for step in self.path:
                value = _step(value, step)
        if self.function == "has":
            return value is not _MISSING and value not in ("", None)
        if self.function == "len" and value is not _MISSING:
            return len(value) if isinstance(value, (str, list, dict)) else _MISSING
        return value

    def shown(self, value: Any) -> str:
        if value is _MISSING:
            return "missing"
        if self.placeholder in _TIME_LEFT and not self.function and _number(value):
            return human(value / 1000)
        return json.dumps(value, default=str)[:120]


@dataclass(frozen=True)
class Matcher:
    """``pat(GLOB)`` or ``any(A, B, ...)``: what the other side's text must match."""

    text: str
    kind: str
    pattern: str = ""
    options: tuple[str, ...] = ()

    def matches(self, value: Any) -> bool:
        text = _text(value)
        if self.kind == "any":
            return text in self.options
        # Gatus matches with Go's filepath.Match after dropping "/", so * spans anything.
        glob = self.pattern.replace("/", "").replace("[^", "[!")
        return glob == "*" or fnmatch.fnmatchcase(text.replace("/", ""), glob)


def _text(value: Any) -> str:
    """A value as Gatus compares it: text as it is, JSON for the rest."""
    return value if isinstance(value, str) else json.dumps(value)


def _step(value: Any, step: str | int) -> Any:
    if isinstance(step, int):
        ok = isinstance(value, list) and -len(value) <= step < len(value)
        return value[step] if ok else _MISSING
    return value.get(step, _MISSING) if isinstance(value, dict) else _MISSING


@dataclass(frozen=True)
class Condition:
    text: str
    left: Operand | Matcher
    op: str
    right: Operand | Matcher

    @classmethod
    def parse(cls, text: str) -> Condition:
        """The condition ``text``; ``ConditionError`` saying what is wrong and where."""
        return _Parser(text).condition()

    def evaluate(self, seen: Mapping[str, Any]) -> tuple[bool, str]:
        """``(holds, detail)``: the detail shows the value found, for the report."""
        if isinstance(self.right, Matcher) or isinstance(self.left, Matcher):
            matcher, side = (
                (self.right, self.left)
                if isinstance(self.right, Matcher)
                else (self.left, self.right)
            )
            assert isinstance(side, Operand) and isinstance(matcher, Matcher)
            value = side.resolve(seen)
            detail = f"{side.text} ({side.shown(value)}) {self.op} {matcher.text}"
            if value is _MISSING:
                return False, detail
            return matcher.matches(value) == (self.op == "=="), detail
        assert isinstance(self.left, Operand) and isinstance(self.right, Operand)
        left, right = self.left.resolve(seen), self.right.resolve(seen)
        detail = f"{self.left.text} ({self.left.shown(left)}) {self.op} {self.right.text}"
        if left is _MISSING or right is _MISSING:
            return False, detail
        if self.op in ("==", "!="):
            left, right = _comparable(left, right)
            return OPERATORS[self.op](left, right), detail
        numbers = _numeric(left), _numeric(right)
        if None in numbers:
            return False, f"{detail}: not numbers"
        return OPERATORS[self.op](*numbers), detail


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _numeric(value: Any) -> float | None:
    """A side of an ordering as a number: a number, a duration's milliseconds (Gatus),
    or a number written as text; None for anything else (a bool is no number)."""
    if _number(value):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if (found := literal_seconds(text)) is not None:
            return found * 1000
        if re.fullmatch(r"-?\d+(?:\.\d+)?", text):
            return float(text)
    return None


def _comparable(left: Any, right: Any) -> tuple[Any, Any]:
    # A bare word is a string, so [STATUS] == 200 and [BODY].code == "200" both hold,
    # as they do in Gatus; a bool never equals a number (in Python, True == 1).
    if isinstance(left, bool) != isinstance(right, bool):
        return (type(left), left), (type(right), right)
    if isinstance(left, str) != isinstance(right, str):
        return str(left), str(right)
    return left, right


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[tuple[str, str, int]] = []
        at = 0
        stripped = text.rstrip()
        while at < len(stripped):
            if matcher := _MATCHER.match(stripped, at):
                end = self.matcher_end(stripped, matcher.end())
                self.tokens.append(("matcher", stripped[matcher.start(1) : end], matcher.start(1)))
                at = end
                continue
            found = _TOKEN.match(stripped, at)
            if found is None or found.end() == at:
                rest = stripped[at:].lstrip()
                self.fail(f"unexpected {rest[:10]!r}", len(stripped) - len(rest))
            assert found is not None and found.lastgroup is not None
            kind = found.lastgroup
            self.tokens.append((kind, found.group(kind), found.start(kind)))
            at = found.end()
        self.i = 0

    def matcher_end(self, text: str, start: int) -> int:
        """Where ``pat(...)``/``any(...)`` opened at ``start`` ends: after the first ``)``
        followed by an operator or the end (a pattern may hold ``)`` and spaces)."""
        for at in range(start, len(text)):
            if text[at] == ")" and _SIDE_END.match(text, at + 1):
                return at + 1
        self.fail(f"{text[start - 4 : start]} is not closed by ')'", start - 4)
        raise AssertionError  # fail() raises

    def fail(self, message: str, at: int | None = None) -> None:
        where = f" at column {at + 1}" if at is not None else ""
        raise ConditionError(
            f"Condition {self.text!r}: {message}{where}. Write LEFT OPERATOR RIGHT, e.g. "
            "'[STATUS] == 200', '[RESPONSE_TIME] < 500', '[BODY].ready == true' or "
            "'len([BODY].items) > 0', '[STATUS] == any(200, 429)'; operators: "
            + ", ".join(OPERATORS)
            + "."
        )

    def peek(self) -> tuple[str, str, int] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self, kind: str | None = None, value: str | None = None) -> tuple[str, str, int]:
        token = self.peek()
        if token is None:
            self.fail(f"it ends early; expected {value or _WANTED.get(kind or '', 'a value')}")
        assert token is not None
        if (kind and token[0] != kind) or (value and token[1] != value):
            wanted = value or _WANTED.get(kind or "", kind)
            self.fail(f"expected {wanted} but found {token[1]!r}", token[2])
        self.i += 1
        return token

    def condition(self) -> Condition:
        if not self.tokens:
            self.fail("it is empty")
        left = self.operand()
        op_token = self.take("op")
        right = self.operand()
        extra = self.peek()
        if extra is not None:
            self.fail(f"unexpected {extra[1]!r} after the condition", extra[2])
        sides = (left, right)
        if any(isinstance(side, Matcher) for side in sides):
            if op_token[1] not in ("==", "!="):
                self.fail(f"pat() and any() go with == or !=, not {op_token[1]}", op_token[2])
            if all(isinstance(side, Matcher) for side in sides):
                self.fail("pat() or any() on both sides; one side is what the check saw")
        return Condition(self.text, left, op_token[1], right)

    def operand(self) -> Operand | Matcher:
        token = self.peek()
        if token is not None and token[0] == "matcher":
            self.i += 1
            name, inner = token[1][:3], token[1][4:-1]
            if name == "pat":
                return Matcher(token[1], "pat", pattern=inner)
            return Matcher(token[1], "any", options=tuple(o.strip() for o in inner.split(",")))
        if token is not None and token[0] == "word" and token[1] in ("len", "has"):
            after = self.tokens[self.i + 1] if self.i + 1 < len(self.tokens) else None
            if after is not None and after[1] == "(":
                self.i += 2
                inner = self.operand()
                if not isinstance(inner, Operand) or inner.function:
                    self.fail(f"{token[1]}() takes a placeholder or a value", token[2])
                assert isinstance(inner, Operand)
                self.take("punct", ")")
                return Operand(f"{token[1]}({inner.text})", inner.placeholder, inner.path,
                               inner.value, token[1])  # fmt: skip
        kind, value, at = self.take()
        if kind == "placeholder":
            name = value[1:-1]
            if name not in PLACEHOLDERS:
                self.fail(f"unknown placeholder {value}; known: {', '.join(PLACEHOLDERS)}", at)
            return self.path(name, value)
        if kind == "number":
            return Operand(value, value=float(value) if "." in value else int(value))
        if kind == "duration":
            return Operand(value, value=value)  # its milliseconds when ordered (Gatus)
        if kind == "string":
            text = json.loads(value) if value.startswith('"') else value[1:-1]
            return Operand(value, value=text)
        if kind == "word":
            literal = {"true": True, "false": False, "null": None}
            return Operand(value, value=literal.get(value, value))
        self.fail(f"expected a placeholder or a value but found {value!r}", at)
        raise AssertionError  # fail() raises

    def path(self, name: str, text: str) -> Operand:
        steps: list[str | int] = []
        while (token := self.peek()) is not None and token[1] in (".", "["):
            self.i += 1
            if token[1] == ".":
                key = self.take()
                if key[0] not in ("word", "number"):
                    self.fail(f"expected a key after '.' but found {key[1]!r}", key[2])
                steps.append(key[1])
                text += f".{key[1]}"
            else:
                index = self.take("number")
                if not re.fullmatch(r"-?\d+", index[1]):
                    self.fail(f"an index is a whole number, not {index[1]}", index[2])
                self.take("punct", "]")
                steps.append(int(index[1]))
                text += f"[{index[1]}]"
        return Operand(text, placeholder=name, path=tuple(steps))
