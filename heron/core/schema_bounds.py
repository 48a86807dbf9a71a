"""Bounds on a JSON schema a client sends, measured before anything is built from it.

A schema is small to send and can be large to use: ``{"type": "string", "minLength":
20000000}`` is 40 bytes, and the local model's grammar for it (``heron.llm.local``) is
20 million repetitions of one rule, about 700 MB. Every schema a request carries (a
``response_format``, each tool's parameters) is walked once, with one ``SchemaCheck``
per request, and refused above these bounds, the error naming the field at fault:

- every counted repetition (``minLength``/``maxLength``, ``minItems``/``maxItems``,
  ``minProperties``/``maxProperties``, ``minContains``/``maxContains``, and each
  ``{n,m}`` of a ``pattern``, nested ones multiplied) at most ``max_repeat``;
- nesting at most ``max_depth`` schemas deep;
- each schema at most ``MAX_SCHEMA_BYTES`` of JSON (as a tool's, ``heron.core.tools``);
- ``max_properties`` properties and ``max_enum`` enum values, all schemas together;
- ``max_size``: what building a grammar from all of them costs, estimated in grammar
  characters (``SchemaCheck.size``, below), all schemas together.

>>> try:
...     SchemaCheck(SchemaBounds()).check({"type": "string", "minLength": 20000000}, "s")
... except SchemaTooLarge as exc:
...     print(exc.param)
s.minLength
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from heron.core.tools import MAX_SCHEMA_BYTES
from heron.errors import InputError

#: Keywords whose value is one schema (``items`` may be a list of them too).
SCHEMA_KEYS = frozenset(
    {
        "items",
        "additionalItems",
        "contains",
        "additionalProperties",
        "unevaluatedItems",
        "unevaluatedProperties",
        "propertyNames",
        "not",
        "if",
        "then",
        "else",
    }
)
#: Keywords whose value is a list of schemas.
SCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
#: Keywords whose value maps names to schemas.
SCHEMA_MAPS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
)
#: Keywords whose value is a count of repetitions, and the ones among them that repeat
#: a rule (an item, a property) rather than one character.
REPEATS = (
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "minContains",
    "maxContains",
)
#: ``{n}``, ``{n,}``, ``{n,m}`` in a regular expression.
_QUANTIFIER = re.compile(r"\{\s*(\d*)\s*(,?)\s*(\d*)\s*\}")
#: Grammar characters one schema costs besides what it repeats: its rule's name and
#: punctuation, in llama.cpp's converter (``llama_cpp.llama_grammar``).
_RULE = 24


class SchemaTooLarge(InputError):
    """A schema over a bound; ``param`` names the field (``tools[0].function.parameters
    .properties.body.maxLength``), as OpenAI's error object does."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(f"{param}: {message}")
        self.param = param


@dataclass(frozen=True)
class SchemaBounds:
    """The bounds of one request's schemas (see the module)."""

    max_repeat: int = 10_000
    max_size: int = 1_000_000
    max_depth: int = 20
    max_properties: int = 1_000
    max_enum: int = 1_000


@dataclass
class _Pattern:
    """A regular expression as far as its cost goes: the characters it spells once its
    counted quantifiers are expanded, and the largest product of nested quantifiers."""

    size: int = 0
    repeat: int = 1


def pattern_cost(pattern: str) -> _Pattern:
    """``pattern``'s expanded size and nested repetition.

    >>> pattern_cost("^(ab{3}){2}$")
    _Pattern(size=10, repeat=6)
    """
    groups: list[_Pattern] = [_Pattern()]
    last: list[_Pattern | None] = [None]  # per open group: the atom a quantifier repeats
    i = 0
    while i < len(pattern):
        c = pattern[i]
        atom: _Pattern | None = None
        if c == "\\":
            atom, i = _Pattern(1, 1), i + 2
        elif c == "[":
            end = i + 1 + (pattern[i + 1 : i + 2] in ("]", "^"))
            while end < len(pattern) and pattern[end] != "]":
                end += 2 if pattern[end] == "\\" else 1
            atom, i = _Pattern(1, 1), end + 1
        elif c == "(":
            groups.append(_Pattern())
            last.append(None)
            i += 1
            continue
        elif c == ")" and len(groups) > 1:
            atom, i = groups.pop(), i + 1
            last.pop()
        elif c == "{" and (m := _QUANTIFIER.match(pattern, i)) and (m[1] or m[3]):
            low = int(m[1] or 0)
            times = max(low + 1 if m[2] and not m[3] else int(m[3] or low), 1)
            i = m.end()
            repeated = last[-1]
            if repeated is not None:
                group = groups[-1]
                group.size += repeated.size * (times - 1)
                repeated.size *= times
                repeated.repeat *= times
                group.repeat = max(group.repeat, repeated.repeat)
            continue
        else:
            atom, i = _Pattern(1, 1), i + 1
        group = groups[-1]
        group.size += atom.size
        group.repeat = max(group.repeat, atom.repeat)
        last[-1] = atom
    while len(groups) > 1:  # unbalanced: the converter refuses it; cost it all the same
        inner = groups.pop()
        groups[-1].size += inner.size
        groups[-1].repeat = max(groups[-1].repeat, inner.repeat)
    return groups[0]


class SchemaCheck:
    """Every schema of one request, walked against one set of ``SchemaBounds``: the
    totals (properties, enum values, ``size``) add up across ``check`` calls.

    ``size`` estimates the characters of the grammar llama.cpp's converter writes:
    each schema's rule (its name, about the length of its path, and some punctuation);
    each repetition of a string's character (8), of an array's item or an object's
    property (the item's rule name); each character of a pattern with its quantifiers
    expanded (a rule name each); and, for an object with ``k`` optional properties,
    ``8 k²``, for the converter spends time quadratic in them."""

    def __init__(self, bounds: SchemaBounds) -> None:
        self.bounds = bounds
        self.properties = 0
        self.enum = 0
        self.size = 0

    def check(self, schema: Any, param: str) -> None:
        """Raise ``SchemaTooLarge`` for ``schema`` (at ``param`` in the request) over a
        bound."""
        size = len(json.dumps(schema, ensure_ascii=False, default=str).encode())
        if size > MAX_SCHEMA_BYTES:
            raise SchemaTooLarge(
                param, f"the schema is {size:,} bytes, over the {MAX_SCHEMA_BYTES:,} accepted."
            )
        self._visit(schema, param, 1, len("root"))

    def _visit(self, schema: Any, where: str, depth: int, name: int) -> None:
        if isinstance(schema, list):  # draft 4's tuple ``items``
            for i, item in enumerate(schema):
                self._visit(item, f"{where}[{i}]", depth, name + 8)
            return
        if not isinstance(schema, dict):
            return  # true, false, or what the converter refuses with its own message
        bounds = self.bounds
        if depth > bounds.max_depth:
            raise SchemaTooLarge(
                where, f"schemas nest {depth} deep here, over the {bounds.max_depth} accepted."
            )
        self._add(where, name + _RULE)
        for key in REPEATS:
            if key in schema:
                times = self._repeat(schema[key], f"{where}.{key}")
                per = 8 if key.endswith("Length") else name + 16
                self._add(f"{where}.{key}", times * per)
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            self._pattern(pattern, f"{where}.pattern", name)
        for key in ("enum", "const"):
            if key in schema:
                values = schema[key] if key == "enum" and isinstance(schema[key], list) else [0]
                self.enum += len(values)
                if self.enum > bounds.max_enum:
                    raise SchemaTooLarge(
                        f"{where}.{key}",
                        f"the schemas hold {self.enum:,} enum values, over the "
                        f"{bounds.max_enum:,} accepted.",
                    )
                self._add(f"{where}.{key}", 2 * len(json.dumps(schema[key], default=str)))
        for key in SCHEMA_KEYS & schema.keys():
            self._visit(schema[key], f"{where}.{key}", depth + 1, name + len(key) + 1)
        for key in SCHEMA_LISTS & schema.keys():
            if isinstance(schema[key], list):
                for i, item in enumerate(schema[key]):
                    self._visit(item, f"{where}.{key}[{i}]", depth + 1, name + 8)
        for key in SCHEMA_MAPS & schema.keys():
            if isinstance(schema[key], dict):
                self._map(schema, key, where, depth, name)

    def _map(self, schema: dict[str, Any], key: str, where: str, depth: int, name: int) -> None:
        members: dict[str, Any] = schema[key]
        if key == "properties":
            self.properties += len(members)
            if self.properties > self.bounds.max_properties:
                raise SchemaTooLarge(
                    f"{where}.properties",
                    f"the schemas declare {self.properties:,} properties, over the "
                    f"{self.bounds.max_properties:,} accepted.",
                )
            required = schema.get("required")
            needed = set(required) if isinstance(required, list) else set()
            optional = sum(1 for member in members if member not in needed)
            self._add(f"{where}.properties", 8 * optional * optional)
        for member, sub in members.items():
            here = f"{where}.{key}.{member}"
            if key == "patternProperties":
                self._pattern(member, here, name)
            own = len(member) + 1 if key in ("properties", "dependentSchemas") else 0
            self._add(here, 2 * len(member))  # the property's name, as a literal
            self._visit(sub, here, depth + 1, (name + own) if own else len(member) + 1)

    def _repeat(self, value: Any, where: str) -> int:
        limit = self.bounds.max_repeat
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise SchemaTooLarge(where, f"must be a whole number from 0 to {limit}; got {value!r}.")
        if value > limit:
            raise SchemaTooLarge(
                where,
                f"{value} is over the {limit} repetitions a schema may ask for; send a "
                "smaller bound (or none).",
            )
        return value

    def _pattern(self, pattern: str, where: str, name: int) -> None:
        cost = pattern_cost(pattern)
        if cost.repeat > self.bounds.max_repeat:
            raise SchemaTooLarge(
                where,
                f"its quantifiers repeat {cost.repeat:,} times (nested ones multiplied), "
                f"over the {self.bounds.max_repeat:,} a schema may ask for.",
            )
        self._add(where, cost.size * (name + 8))

    def _add(self, where: str, size: int) -> None:
        self.size += size
        if self.size > self.bounds.max_size:
            raise SchemaTooLarge(
                where,
                f"the schemas of this request would take a grammar of about "
                f"{self.size:,} characters, over the {self.bounds.max_size:,} accepted; "
                "send smaller bounds or fewer of them.",
            )
