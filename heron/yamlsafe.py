"""YAML from authors Heron does not trust: skill and page front matter.

PyYAML has no limit on aliases. Loading is cheap even for a "billion laughs" file (an
alias is a reference, not a copy), but whatever then walks the result (a description
joined into text, a tag list, ``json.dumps``) meets 9^9 values and never ends:

.. code-block:: yaml

    a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x"]
    b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
    ...                       # nine levels: 387,420,489 strings

Front matter never needs aliases, so ``load`` refuses any (``YAMLRefused``), and text
over ``MAX_BYTES``; nesting deeper than libyaml's limit is a ``yaml.YAMLError`` as
usual. The loader is PyYAML's safe one (the C one when built), so tags cannot build
objects.

>>> load("name: x\\ntags: [a, b]")
{'name': 'x', 'tags': ['a', 'b']}
>>> load("a: &a [x]\\nb: *a")  # doctest: +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
YAMLRefused: YAML aliases (*name) are not accepted here; write the values out
"""

from __future__ import annotations

from typing import Any

import yaml

from heron.errors import InputError

#: The most front matter read, in UTF-8 bytes: far above any real skill's or page's.
MAX_BYTES = 64 * 1024

_Base: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class YAMLRefused(InputError):
    """YAML that is well formed but refused: aliases, or too large. Not a
    ``yaml.YAMLError``, so a caller's recovery from broken YAML does not retry it."""


class NoAliasLoader(_Base):  # type: ignore[misc, valid-type]
    """The safe loader, refusing any alias before anything is constructed.

    An alias is the composer handing out a node it already built, so a node met twice
    in the composed tree is an alias: one pass over the nodes (iterative, so a deep tree
    cannot exhaust the stack) finds it. This works the same for the C composer, whose
    ``compose_node`` cannot be overridden from Python.
    """

    def get_single_node(self) -> yaml.Node | None:
        node = super().get_single_node()
        seen: set[int] = set()
        stack = [node] if node is not None else []
        while stack:
            current = stack.pop()
            if id(current) in seen:
                raise YAMLRefused(
                    "YAML aliases (*name) are not accepted here; write the values out"
                )
            seen.add(id(current))
            if isinstance(current, yaml.SequenceNode):
                stack.extend(current.value)
            elif isinstance(current, yaml.MappingNode):
                for key, value in current.value:
                    stack += (key, value)
        return node


def load(text: str, *, max_bytes: int = MAX_BYTES) -> Any:
    """``text`` as YAML, safely: ``YAMLRefused`` for aliases or text over ``max_bytes``,
    ``yaml.YAMLError`` for text that is not YAML."""
    size = len(text.encode("utf-8"))
    if size > max_bytes:
        raise YAMLRefused(
            f"the YAML is {size / 1024:.0f} KiB; at most {max_bytes // 1024} KiB is read. "
            "Move long material out of the front matter."
        )
    try:
        return yaml.load(text, Loader=NoAliasLoader)  # a SafeLoader: tags build no objects
    except RecursionError:  # the pure-Python composer on deep nesting
        raise YAMLRefused("the YAML nests too deeply") from None
