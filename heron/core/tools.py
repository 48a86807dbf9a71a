"""``Tool``: one callable capability as every provider and MCP describe it, and the
readers for the three definition formats people already have files in.

A value type below the capabilities: the libraries, skills and jobs define their agent
tools with it, ``heron.llm`` sends it to models, ``heron.tools`` registers and routes it.

OpenAI: ``{"type": "function", "function": {"name", "description", "parameters"}}``
(or the bare ``function`` object); Anthropic: ``{"name", "description",
"input_schema"}``; MCP ``tools/list``: ``{"tools": [{"name", "description",
"inputSchema"}]}`` (or the JSON-RPC response with it under ``result``).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from heron.core.errors import ToolInputError

__all__ = [
    "CUT",
    "DELEGATION",
    "EMPTY_SCHEMA",
    "MAX_DESCRIPTION",
    "MAX_NAME",
    "MAX_SCHEMA_BYTES",
    "MAX_STRING",
    "MAX_STRINGS",
    "SAFETY_LEVELS",
    "Handler",
    "Safety",
    "Tool",
    "ToolSink",
    "argument",
    "check_name",
    "clean_text",
    "object_schema",
    "parse_tool",
    "parse_tools",
    "safety_of",
]

#: How much harm a call can do: ``read`` looks, ``write`` changes files or data,
#: ``execute`` runs programs. An agent may ask for confirmation above ``read``.
Safety = Literal["read", "write", "execute"]
SAFETY_LEVELS: tuple[Safety, ...] = ("read", "write", "execute")
#: The tag of a tool that hands work to a person-gated background job (``delegate_job``):
#: the delegation permission (``HERON_AGENT_DELEGATE``, ``heron.tools.ceiling``) offers it
#: whatever the tool ceiling, without unlocking any other tool of its safety.
DELEGATION = "delegation"
EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}

# Definitions come from files and MCP servers Heron does not control: each part is bounded
# so one bad server cannot flood the router, the model's context or a terminal.
#: Longest name: the MCP spec's (2025-11-25) 128 characters.
MAX_NAME = 128
#: Longest description kept, in characters; the rest is cut.
MAX_DESCRIPTION = 4096
#: Largest parameter schema accepted, as JSON bytes.
MAX_SCHEMA_BYTES = 64 * 1024
#: Examples and tags kept per tool, and the longest of each.
MAX_STRINGS, MAX_STRING = 32, 200
CUT = " [...]"

#: Runs a tool with its JSON arguments and returns what it produced (JSON-able).
Handler = Callable[[dict[str, Any]], Any]


@dataclass(frozen=True)
class Tool:
    """``source`` is ``builtin``, ``mcp:<server>`` or ``import:<file name>``."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=lambda: dict(EMPTY_SCHEMA))
    source: str = "builtin"
    safety: Safety = "read"
    tags: tuple[str, ...] = ()
    #: Requests this tool serves, in users' words: the router folds them into the tool's
    #: vector and its BM25 text (see ``heron.tools.router``).
    examples: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ToolInputError(f"A tool needs a non-empty name, got {self.name!r}.")
        if self.safety not in SAFETY_LEVELS:
            raise ToolInputError(
                f"Tool {self.name!r}: unknown safety {self.safety!r}. "
                f"Choose from: {', '.join(SAFETY_LEVELS)}."
            )
        if not isinstance(self.parameters, dict):
            raise ToolInputError(f"Tool {self.name!r}: parameters must be a JSON Schema object.")

    @property
    def server(self) -> str | None:
        return self.source.removeprefix("mcp:") if self.source.startswith("mcp:") else None

    def text(self) -> str:
        """What the router embeds and indexes: the name split into words, the
        description, then each parameter's name and description.

        >>> Tool("osis.contact.list", "List contacts.",
        ...      {"properties": {"q": {"description": "filter"}}}).text()
        'osis contact list: List contacts. Parameters: q (filter)'
        """
        words = " ".join(_split_name(self.name))
        params = [
            f"{pname} ({spec.get('description', '')})".replace(" ()", "")
            for pname, spec in _properties(self.parameters).items()
        ]
        text = f"{words}: {self.description}".strip()
        return text + (f" Parameters: {', '.join(params)}" if params else "")

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
            "source": self.source,
            "safety": self.safety,
            "tags": list(self.tags),
            "examples": list(self.examples),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Tool:
        return cls(
            name=data["name"],
            description=data.get("description", ""),
            parameters=data.get("parameters") or dict(EMPTY_SCHEMA),
            source=data.get("source", "builtin"),
            safety=data.get("safety", "read"),
            tags=tuple(data.get("tags", ())),
            examples=tuple(data.get("examples", ())),
        )


def _split_name(name: str) -> list[str]:
    """``osis.contact.list`` and ``getContactList`` -> words, for matching queries."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced) if w]


def _properties(schema: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(props, Mapping):
        return {}
    return {str(k): (v if isinstance(v, dict) else {}) for k, v in props.items()}


def parse_tool(item: Any, source: str) -> Tool:
    """One definition in OpenAI, Anthropic or MCP form -> ``Tool``.

    The definition is untrusted: a name with control characters or spaces, or longer
    than ``MAX_NAME``, and a schema over ``MAX_SCHEMA_BYTES`` are refused
    (``ToolInputError``); a description loses its control characters and is cut to
    ``MAX_DESCRIPTION``. Safety follows ``safety_of`` (unannotated means ``execute``).
    """
    if not isinstance(item, Mapping):
        raise ToolInputError(f"A tool definition must be a JSON object, got {item!r:.80}.")
    if isinstance(item.get("function"), Mapping):  # OpenAI chat-completions wrapper
        item = item["function"]
    if "name" not in item:
        raise ToolInputError(
            f"Tool definition without a 'name': {dict(item)!r:.120}. Expected the OpenAI, "
            "Anthropic or MCP tools/list format."
        )
    name = check_name(item["name"])
    schema = item.get("parameters") or item.get("input_schema") or item.get("inputSchema")
    parameters = dict(schema) if isinstance(schema, Mapping) else dict(EMPTY_SCHEMA)
    size = len(json.dumps(parameters, ensure_ascii=False, default=str).encode("utf-8"))
    if size > MAX_SCHEMA_BYTES:
        raise ToolInputError(
            f"Tool {name!r}: its parameter schema is {size:,} bytes, over the "
            f"{MAX_SCHEMA_BYTES:,} accepted; ask its author for a smaller one."
        )
    annotations = item.get("annotations") if isinstance(item.get("annotations"), Mapping) else {}
    return Tool(
        name=name,
        description=clean_text(str(item.get("description") or ""), MAX_DESCRIPTION),
        parameters=parameters,
        source=source,
        safety=safety_of(annotations),
        tags=_strings(item.get("tags")),
        examples=_strings(item.get("examples")),
    )


def check_name(name: Any) -> str:
    """``name`` if it can name a tool: a string of 1 to ``MAX_NAME`` characters without
    spaces or control characters (the provider codec, ``heron.core.names``, rewrites the
    rest); else ``ToolInputError`` saying why."""
    if not isinstance(name, str) or not name:
        raise ToolInputError(f"A tool name must be a non-empty string, got {name!r:.80}.")
    if len(name) > MAX_NAME:
        raise ToolInputError(
            f"Tool name {name[:40]!r}... is {len(name):,} characters; at most {MAX_NAME}."
        )
    bad = next((c for c in name if unicodedata.category(c)[0] in "CZ"), None)
    if bad is not None:
        raise ToolInputError(
            f"Tool name {name!r} holds {unicodedata.name(bad, repr(bad))!s} "
            f"(U+{ord(bad):04X}); tool names are letters, digits, '_', '-', '.' and '/'."
        )
    return name


def clean_text(text: str, limit: int) -> str:
    """``text`` without control characters (newlines and tabs kept), at most ``limit``
    characters (cut ones end with ``[...]``): what a terminal or a prompt may be shown.

    >>> clean_text("ok\\x1b[2J\\x00 done", 100)
    'ok[2J done'
    """
    kept = "".join(
        c for c in text if c in "\n\t" or unicodedata.category(c) not in ("Cc", "Cf", "Cs")
    )
    return kept if len(kept) <= limit else kept[: limit - len(CUT)] + CUT


def _strings(value: Any) -> tuple[str, ...]:
    """The strings of an optional list field; anything else in it is ignored."""
    if not isinstance(value, list):
        return ()
    texts = (clean_text(v, MAX_STRING).strip() for v in value if isinstance(v, str))
    return tuple(t for t in texts if t)[:MAX_STRINGS]


def safety_of(annotations: Mapping[str, Any]) -> Safety:
    """MCP tool annotations (hints) -> a safety level, taking the spec's defaults for a
    missing hint (``readOnlyHint`` false, ``destructiveHint`` true):

    - ``readOnlyHint: true`` -> ``read``;
    - ``destructiveHint: false`` (and not read-only) -> ``write``: it only adds or changes;
    - otherwise, unannotated included -> ``execute``, the most harmful level: nothing
      says what the tool may do, so only an agent allowed to run programs is offered it.

    >>> safety_of({}), safety_of({"destructiveHint": False}), safety_of({"readOnlyHint": True})
    ('execute', 'write', 'read')
    """
    if annotations.get("readOnlyHint") is True:
        return "read"
    if annotations.get("destructiveHint") is False:
        return "write"
    return "execute"


def parse_tools(document: Any, source: str) -> list[Tool]:
    """Every tool in a JSON document: a list of definitions, ``{"tools": [...]}``, or an
    MCP JSON-RPC response ``{"result": {"tools": [...]}}``."""
    if isinstance(document, Mapping) and isinstance(document.get("result"), Mapping):
        document = document["result"]
    if isinstance(document, Mapping) and "tools" in document:
        document = document["tools"]
    if isinstance(document, Mapping):
        document = [document]
    if not isinstance(document, list):
        raise ToolInputError(
            "Expected a list of tool definitions or an object with 'tools' "
            "(OpenAI, Anthropic or MCP tools/list format)."
        )
    return [parse_tool(item, source) for item in document]


def object_schema(required: Sequence[str] = (), **props: tuple[str, str]) -> dict[str, Any]:
    """A tool's parameter schema from ``name=(json type, description)`` pairs.

    >>> object_schema(["q"], q=("string", "what to find"))["properties"]
    {'q': {'type': 'string', 'description': 'what to find'}}
    """
    return {
        "type": "object",
        "properties": {k: {"type": t, "description": d} for k, (t, d) in props.items()},
        "required": list(required),
    }


def argument(arguments: Mapping[str, Any], name: str) -> Any:
    """Argument ``name`` of a call, or ``ToolInputError`` saying it is missing."""
    if name not in arguments:
        raise ToolInputError(f"Missing argument {name!r}.")
    return arguments[name]


class ToolSink(Protocol):
    """Where a capability registers its tools (``heron.tools.ToolRegistry`` is one)."""

    def add(self, tool: Tool, handler: Handler | None = None, *, replace: bool = True) -> None:
        """Register ``tool`` with the ``handler`` that runs it."""
