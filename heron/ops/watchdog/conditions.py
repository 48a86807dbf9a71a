"""Conditions on what a check saw, in the manner of Gatus: ``[STATUS] == 200``.

A condition is ``LEFT OPERATOR RIGHT``; each side is a placeholder with an optional path
into it, a literal, or ``len(...)`` of either. Parsed by a small tokenizer, never
``eval``, and parsed when the configuration is loaded, so a typo is an error naming the
condition before any check runs.

>>> Condition.parse("[BODY].checks[0].ok == true").evaluate({"BODY": {"checks": [{"ok": True}]}})
(True, '[BODY].checks[0].ok (true) == true')
>>> Condition.parse("len([BODY].items) > 0").evaluate({"BODY": {"items": []}})
(False, 'len([BODY].items) (0) > 0')

Placeholders (which a check kind fills, see ``heron.ops.watchdog.checks``):
``[STATUS]`` (HTTP status), ``[RESPONSE_TIME]`` (milliseconds), ``[BODY]`` (the JSON body,
else its text), ``[CONNECTED]``, ``[RESULT]`` and ``[ERROR]`` (JSON-RPC), ``[EXIT]`` and
``[OUTPUT]`` (a command). Literals: numbers, ``true``, ``false``, ``null``, quoted
strings, and bare words as strings (``[BODY].status == UP``). Operators: ``==``, ``!=``,
``<``, ``<=``, ``>``, ``>=``; ordering compares numbers only.
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from heron.errors import ConfigError

PLACEHOLDERS = ("STATUS", "RESPONSE_TIME", "BODY", "CONNECTED", "RESULT", "ERROR", "EXIT", "OUTPUT")
OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<=": operator.le,
    ">=": operator.ge,
    "<": operator.lt,
    ">": operator.gt,
}
_TOKEN = re.compile(
    r"""\s*(?:
      (?P<placeholder>\[[A-Z_]+\])
    | (?P<op>==|!=|<=|>=|<|>)
    | (?P<string>"(?:[^"\\]|\\.)*"|'[^']*')
    | (?P<number>-?\d+(?:\.\d+)?(?![\w.]))
    | (?P<punct>[().\[\]])
    | (?P<word>[A-Za-z_][\w-]*)
    )""",
    re.VERBOSE,
)
_MISSING = object()
_WANTED = {"op": "an operator", "number": "a number", "punct": "more"}


class ConditionError(ConfigError):
    """A condition that does not parse; the message quotes it and says what was expected."""


@dataclass(frozen=True)
class Operand:
    """A placeholder with a path (``[BODY].a[0]``), or a literal; ``length`` wraps ``len()``."""

    text: str
    placeholder: str | None = None
    path: tuple[str | int, ...] = ()
    value: Any = None
    length: bool = False

    def resolve(self, seen: Mapping[str, Any]) -> Any:
        if self.placeholder is None:
            value = self.value
        else:
            value = seen.get(self.placeholder, _MISSING)
            for step in self.path:
                value = _step(value, step)
        if self.length and value is not _MISSING:
            return len(value) if isinstance(value, (str, list, dict)) else _MISSING
        return value


def _step(value: Any, step: str | int) -> Any:
    if isinstance(step, int):
        ok = isinstance(value, list) and -len(value) <= step < len(value)
        return value[step] if ok else _MISSING
    return value.get(step, _MISSING) if isinstance(value, dict) else _MISSING


@dataclass(frozen=True)
class Condition:
    text: str
    left: Operand
    op: str
    right: Operand

    @classmethod
    def parse(cls, text: str) -> Condition:
        """The condition ``text``; ``ConditionError`` saying what is wrong and where."""
        return _Parser(text).condition()

    def evaluate(self, seen: Mapping[str, Any]) -> tuple[bool, str]:
        """``(holds, detail)``: the detail shows the value found, for the report."""
        left, right = self.left.resolve(seen), self.right.resolve(seen)
        shown = "missing" if left is _MISSING else json.dumps(left, default=str)[:120]
        detail = f"{self.left.text} ({shown}) {self.op} {self.right.text}"
        if left is _MISSING or right is _MISSING:
            return False, detail
        if self.op in ("==", "!="):
            left, right = _comparable(left, right)
            return OPERATORS[self.op](left, right), detail
        if not all(_number(v) for v in (left, right)):
            return False, f"{detail}: not numbers"
        return OPERATORS[self.op](left, right), detail


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


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
            found = _TOKEN.match(stripped, at)
            if found is None or found.end() == at:
                rest = stripped[at:].lstrip()
                self.fail(f"unexpected {rest[:10]!r}", len(stripped) - len(rest))
            assert found is not None and found.lastgroup is not None
            kind = found.lastgroup
            self.tokens.append((kind, found.group(kind), found.start(kind)))
            at = found.end()
        self.i = 0

    def fail(self, message: str, at: int | None = None) -> None:
        where = f" at column {at + 1}" if at is not None else ""
        raise ConditionError(
            f"Condition {self.text!r}: {message}{where}. Write LEFT OPERATOR RIGHT, e.g. "
            "'[STATUS] == 200', '[RESPONSE_TIME] < 500', '[BODY].ready == true' or "
            "'len([BODY].items) > 0'; operators: " + ", ".join(OPERATORS) + "."
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
        op = self.take("op")[1]
        right = self.operand()
        extra = self.peek()
        if extra is not None:
            self.fail(f"unexpected {extra[1]!r} after the condition", extra[2])
        return Condition(self.text, left, op, right)

    def operand(self) -> Operand:
        token = self.peek()
        if token is not None and token[0] == "word" and token[1] == "len":
            after = self.tokens[self.i + 1] if self.i + 1 < len(self.tokens) else None
            if after is not None and after[1] == "(":
                self.i += 2
                inner = self.operand()
                self.take("punct", ")")
                return Operand(
                    f"len({inner.text})", inner.placeholder, inner.path, inner.value, True
                )
        kind, value, at = self.take()
        if kind == "placeholder":
            name = value[1:-1]
            if name not in PLACEHOLDERS:
                self.fail(f"unknown placeholder {value}; known: {', '.join(PLACEHOLDERS)}", at)
            return self.path(name, value)
        if kind == "number":
            return Operand(value, value=float(value) if "." in value else int(value))
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
