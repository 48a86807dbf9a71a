"""Heron's own tools: the workspace tools (files under one root, allowlisted commands)
over a ``heron.core.workspace.Workspace``, and the argument checks every tool call gets.

The capabilities define their own tools with ``heron.core.tools.Tool``: ``search_docs``
in ``heron.libraries.tool``, ``search_skills`` and ``read_skill`` in ``heron.skills.tool``,
``delegate_job`` in ``heron.jobs.tool``; ``heron.wiring`` registers them beside
these. The file and command rules are ``Workspace``'s (see ``heron.core.workspace``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from heron.core.errors import ToolInputError
from heron.core.optional import OPTIONAL_TOOLS
from heron.core.tools import Handler, Tool, argument, object_schema
from heron.core.workspace import DEFAULT_TIMEOUT, Workspace, json_type_name
from heron.programs import Policy
from heron.settings import Settings
from heron.tools.fetch import fetch_tool
from heron.tools.pyexec import python_tool
from heron.tools.registry import ToolRegistry

__all__ = [
    "BUILDERS",
    "check_arguments",
    "optional_tools",
    "register_builtins",
    "workspace_tools",
]


#: The builder of each optional built-in, by its row's name in
#: ``heron.core.optional.OPTIONAL_TOOLS``.
BUILDERS: dict[str, Callable[[Settings], tuple[Tool, Handler]]] = {
    "fetch_url": fetch_tool,
    "python_exec": python_tool,
}


def optional_tools(settings: Settings) -> list[tuple[Tool, Handler]]:
    """The built-ins that are off unless their setting turns them on
    (``heron.core.optional.OPTIONAL_TOOLS``), in the table's order."""
    return [BUILDERS[tool.name](settings) for tool in OPTIONAL_TOOLS if tool.on(settings)]


def workspace_tools(workspace: Workspace) -> list[tuple[Tool, Handler]]:
    ws = workspace
    return [
        (
            Tool(
                "list_files",
                "List the files and folders in a workspace directory.",
                object_schema(
                    path=("string", "directory relative to the workspace root, default '.'"),
                    recursive=("boolean", "include everything below, not just the top level"),
                ),
                tags=("workspace", "files"),
            ),
            lambda a: ws.list_files(
                _typed(a, "path", str, "."), _typed(a, "recursive", bool, False)
            ),
        ),
        (
            Tool(
                "read_file",
                "Read a text file from the workspace.",
                object_schema(
                    ["path"], path=("string", "file path relative to the workspace root")
                ),
                tags=("workspace", "files"),
            ),
            lambda a: ws.read_file(_typed(a, "path", str)),
        ),
        (
            Tool(
                "write_file",
                "Write (create or replace) a text file in the workspace.",
                object_schema(
                    ["path", "content"],
                    path=("string", "file path relative to the workspace root"),
                    content=("string", "the whole new content of the file"),
                ),
                safety="write",
                tags=("workspace", "files"),
            ),
            lambda a: ws.write_file(_typed(a, "path", str), _typed(a, "content", str)),
        ),
        (
            Tool(
                "run_command",
                "Run an allowed program in the workspace and return its exit code and "
                f"output. Allowed: {', '.join(sorted(ws.commands)) or 'none'}.",
                object_schema(
                    ["command"],
                    command=("string", "the command line, e.g. 'pytest -q' (no shell)"),
                    timeout=("number", f"seconds before it is killed, at most {ws.timeout:g}"),
                ),
                safety="execute",
                tags=("workspace", "shell"),
            ),
            lambda a: ws.run_command(argument(a, "command"), _typed(a, "timeout", float, None)),
        ),
    ]


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int, float),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


def check_arguments(tool: Tool, arguments: dict[str, Any]) -> None:
    """``ToolInputError`` when ``arguments`` lack a required property of ``tool``'s
    schema or give one of the wrong JSON type (top level only: what a handler needs to
    not fail with a traceback). Used by ``tools.call`` and ``heron tools call``."""
    schema = tool.parameters if isinstance(tool.parameters, dict) else {}
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    for name in schema.get("required") or ():
        if name not in arguments:
            raise ToolInputError(f"{tool.name}: missing argument {name!r}.")
    for name, value in arguments.items():
        spec = properties.get(name)
        types = spec.get("type") if isinstance(spec, dict) else None
        if isinstance(types, str):
            types = [types]
        if not isinstance(types, list) or not all(t in _JSON_TYPES for t in types):
            continue
        if not any(_json_type(value, t) for t in types):
            raise ToolInputError(
                f"{tool.name}: argument {name!r} must be {' or '.join(types)}, "
                f"not {json_type_name(value)} ({value!r:.60})."
            )


def _json_type(value: object, name: str) -> bool:
    if isinstance(value, bool):
        return name == "boolean"  # JSON's true is no number, though Python's True is an int
    if name == "integer" and isinstance(value, float):
        return value.is_integer()  # JSON Schema: 5.0 is an integer
    return isinstance(value, _JSON_TYPES[name])


_MISSING = object()


def _typed(arguments: dict[str, Any], name: str, kind: type, default: Any = _MISSING) -> Any:
    """Argument ``name`` when it has the JSON type ``kind`` (a float may be an integer;
    a boolean is never a number); ``ToolInputError`` naming the argument otherwise."""
    if name not in arguments:
        if default is _MISSING:
            raise ToolInputError(f"Missing argument {name!r}.")
        return default
    value = arguments[name]
    if value is None and default is None:
        return None
    ok = isinstance(value, kind) and not (kind is not bool and isinstance(value, bool))
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        ok = True
    if not ok:
        want = {str: "a string", bool: "true or false", float: "a number"}.get(kind, kind.__name__)
        raise ToolInputError(
            f"Argument {name!r} must be {want}, not {json_type_name(value)} ({value!r})."
        )
    return value


def register_builtins(
    registry: ToolRegistry,
    *,
    policy: Policy,
    root: Path | None = None,
    commands: Iterable[str] = (),
    timeout: float = DEFAULT_TIMEOUT,
) -> list[Tool]:
    """Add the workspace tools when ``root`` is given (``policy``: the program policy,
    ``heron.programs.load_policy(settings.tools_policy)``; see ``Workspace``)."""
    if root is None:
        return []
    workspace = Workspace(root, commands=commands, timeout=timeout, policy=policy)
    pairs = workspace_tools(workspace)
    for tool, handler in pairs:
        registry.add(tool, handler)
    return [tool for tool, _ in pairs]
