"""``ToolRegistry``: every tool an agent may call, and how to call each.

Tools come from three places: built-ins (``heron.tools.builtin``), MCP servers
(``heron.tools.mcp_client``) and definition files (``heron tools import``), which are
kept in the store's key-value table so they outlive the process. A tool without a
handler (imported definitions live elsewhere) is routed but cannot be called here.
"""

from __future__ import annotations

import difflib
import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from heron.core.errors import ToolCallError, ToolInputError, UnknownTool
from heron.core.tools import Handler, Tool, parse_tools
from heron.errors import HeronError
from heron.store.base import Store

#: The store's key-value namespace for imported definitions, one key per tool.
KV_NAMESPACE = "tools"
IMPORT_PREFIX = "import:"

log = logging.getLogger("heron.tools")


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._handlers: dict[str, Handler] = {}
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool, handler: Handler | None = None, *, replace: bool = True) -> None:
        """Register ``tool``; a tool of the same name is replaced unless ``replace`` is
        false, which raises instead."""
        if not replace and tool.name in self._tools:
            other = self._tools[tool.name].source
            raise ToolInputError(
                f"Tool {tool.name!r} from {tool.source} clashes with the one from {other}; "
                "rename one of them."
            )
        self._tools[tool.name] = tool
        if handler is None:
            self._handlers.pop(tool.name, None)
        else:
            self._handlers[tool.name] = handler

    def teach(self, examples: Mapping[str, Sequence[str]]) -> int:
        """Add example requests to the tools named in ``examples`` (unknown names are
        skipped: a tool may be gone); returns how many tools learned something."""
        taught = 0
        for name, requests in examples.items():
            tool = self._tools.get(name)
            if tool is None:
                continue
            merged = tuple(dict.fromkeys((*tool.examples, *requests)))
            if merged != tool.examples:
                self._tools[name] = replace(tool, examples=merged)
                taught += 1
        return taught

    def remove_source(self, source: str) -> int:
        """Forget every tool from ``source`` (an MCP server that went away)."""
        gone = [name for name, tool in self._tools.items() if tool.source == source]
        for name in gone:
            del self._tools[name]
            self._handlers.pop(name, None)
        return len(gone)

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def tools(self) -> list[Tool]:
        return [self._tools[name] for name in sorted(self._tools)]

    def get(self, name: str) -> Tool:
        try:
            return self._tools[name]
        except KeyError:
            close = difflib.get_close_matches(name, list(self._tools), n=3, cutoff=0.6)
            hint = f"Did you mean: {', '.join(close)}?" if close else "List them: heron tools list"
            raise UnknownTool(f"No tool named {name!r}. {hint}") from None

    def runnable(self, name: str) -> bool:
        """Whether ``name`` has a handler here (``call`` can run it); imported definitions
        that live elsewhere are routed but not runnable."""
        return name in self._handlers

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> Any:
        """Run tool ``name``; its own failures come back as ``ToolCallError``.

        A handler's unexpected exception (a bug, not a refusal) is logged with its
        traceback and raised as ``ToolCallError`` naming only its type: callers (the
        agent, JSON-RPC, MCP) show a clean message, never ``KeyError('x')``."""
        tool = self.get(name)
        handler = self._handlers.get(name)
        if handler is None:
            raise ToolCallError(
                f"Tool {name!r} ({tool.source}) has no handler here: imported definitions "
                "describe tools that run elsewhere; call it where it lives."
            )
        if arguments is not None and not isinstance(arguments, dict):
            raise ToolInputError(f"Arguments of {name!r} must be a JSON object.")
        try:
            return handler(arguments or {})
        except HeronError:
            raise
        except Exception as exc:
            log.exception("tool %s failed", name)
            raise ToolCallError(
                f"Tool {name!r} failed unexpectedly ({type(exc).__name__}); the log has the "
                "details. Try other arguments or another tool."
            ) from exc


def read_tool_file(path: Path) -> list[Tool]:
    """Tool definitions from a JSON file in OpenAI, Anthropic or MCP ``tools/list`` form."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ToolInputError(f"No tool file at {path}; give the path of a JSON file.") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ToolInputError(f"Cannot read tool definitions from {path}: {exc}") from exc
    return parse_tools(document, f"import:{Path(path).name}")


def save_imported(store: Store, tools: Iterable[Tool]) -> int:
    """Keep imported definitions in the store; returns how many were written."""
    count = 0
    for tool in tools:
        store.kv_set(KV_NAMESPACE, IMPORT_PREFIX + tool.name, json.dumps(tool.to_dict()))
        count += 1
    return count


def load_imported(store: Store) -> list[Tool]:
    items = store.kv_items(KV_NAMESPACE, IMPORT_PREFIX)
    return [Tool.from_dict(json.loads(items[key])) for key in sorted(items)]
