"""Heron's own tools: the workspace (files under one root, allowlisted commands), the
skill index and the documentation search.

Every path is relative to the workspace root and must stay inside it once resolved:
``..`` that climbs out, absolute paths, and symlinks pointing outside are refused, and
files are opened with ``O_NOFOLLOW`` so a symlink swapped in after the check is refused
too. ``run_command`` runs a program whose name is on the allowlist, without a shell,
in the root, and is killed at its timeout.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from heron.tools.errors import ToolCallError, ToolInputError
from heron.tools.model import Tool
from heron.tools.registry import Handler, ToolRegistry

#: A file read returns at most this many bytes; the rest is reported as cut.
MAX_READ = 256_000
#: ``list_files`` returns at most this many entries.
MAX_ENTRIES = 1000
#: Command output kept per stream.
MAX_OUTPUT = 64_000
DEFAULT_TIMEOUT = 30.0
#: ``(query, library, top_k) -> hits as dicts``; wired to ``heron.books`` by the caller.
#: ``search(arguments)`` for ``search_docs``: the call's arguments in, results out.
DocsSearch = Callable[[dict[str, Any]], list[dict[str, Any]]]


def _schema(required: Sequence[str] = (), **props: tuple[str, str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {k: {"type": t, "description": d} for k, (t, d) in props.items()},
        "required": list(required),
    }


class Workspace:
    """Files and commands confined to ``root``; ``commands`` are the programs allowed."""

    def __init__(
        self, root: Path, *, commands: Iterable[str] = (), timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise ToolInputError(f"Workspace root {root} is not a directory; create it first.")
        self.commands = frozenset(commands)
        self.timeout = timeout

    def resolve(self, path: str) -> Path:
        """``path`` inside the root, or ``ToolInputError`` naming why not."""
        if not isinstance(path, str) or "\x00" in path:
            raise ToolInputError("A workspace path must be a string without NUL characters.")
        if os.path.isabs(path):
            raise ToolInputError(
                f"{path!r} is absolute; give a path relative to the workspace root."
            )
        target = (self.root / path).resolve()
        if target != self.root and not target.is_relative_to(self.root):
            raise ToolInputError(
                f"{path!r} leads outside the workspace (to {target}); "
                "only files under the workspace root can be used."
            )
        return target

    def list_files(self, path: str = ".", recursive: bool = False) -> list[str]:
        base = self.resolve(path)
        if not base.is_dir():
            raise ToolInputError(f"{path!r} is not a directory in the workspace.")
        entries = base.rglob("*") if recursive else base.iterdir()
        out = []
        for entry in sorted(entries):
            if len(out) >= MAX_ENTRIES:
                break
            rel = entry.relative_to(self.root).as_posix()
            out.append(rel + "/" if entry.is_dir() and not entry.is_symlink() else rel)
        return out

    def read_file(self, path: str) -> dict[str, Any]:
        target = self.resolve(path)
        try:
            fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            raise ToolInputError(f"No file {path!r} in the workspace; see list_files.") from None
        except OSError as exc:
            raise ToolCallError(f"Cannot read {path!r}: {exc.strerror}.") from exc
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(MAX_READ + 1)
        return {
            "path": path,
            "content": data[:MAX_READ].decode("utf-8", "replace"),
            "truncated": len(data) > MAX_READ,
        }

    def write_file(self, path: str, content: str) -> dict[str, Any]:
        target = self.resolve(path)
        if target == self.root:
            raise ToolInputError("write_file needs a file path, not the workspace root.")
        target.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
        try:
            fd = os.open(target, flags, 0o644)
        except OSError as exc:
            raise ToolCallError(f"Cannot write {path!r}: {exc.strerror}.") from exc
        data = content.encode("utf-8")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        return {"path": path, "bytes": len(data)}

    def allowed(self, command: str | list[str]) -> list[str]:
        """``command`` as an argument list, once its program is on the allowlist."""
        argv = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
        if not argv:
            raise ToolInputError("run_command needs a command, e.g. 'ls -l'.")
        if argv[0] not in self.commands:
            allowed = ", ".join(sorted(self.commands)) or "none"
            raise ToolInputError(
                f"Command {argv[0]!r} is not allowed. Allowed: {allowed}. "
                "Add it to HERON_TOOLS_COMMANDS (the workspace's allowlist) to permit it."
            )
        return argv

    def run_command(self, command: str | list[str], timeout: float | None = None) -> dict[str, Any]:
        argv = self.allowed(command)
        limit = min(timeout or self.timeout, self.timeout)
        try:
            done = subprocess.run(
                argv, cwd=self.root, capture_output=True, timeout=limit, check=False
            )
        except subprocess.TimeoutExpired:
            raise ToolCallError(
                f"{argv[0]!r} did not finish within {limit:g} s and was killed."
            ) from None
        except OSError as exc:
            raise ToolCallError(f"Cannot run {argv[0]!r}: {exc.strerror}.") from exc
        return {
            "exit_code": done.returncode,
            "stdout": done.stdout[:MAX_OUTPUT].decode("utf-8", "replace"),
            "stderr": done.stderr[:MAX_OUTPUT].decode("utf-8", "replace"),
        }


def workspace_tools(workspace: Workspace) -> list[tuple[Tool, Handler]]:
    ws = workspace
    return [
        (
            Tool(
                "list_files",
                "List the files and folders in a workspace directory.",
                _schema(
                    path=("string", "directory relative to the workspace root, default '.'"),
                    recursive=("boolean", "include everything below, not just the top level"),
                ),
                tags=("workspace", "files"),
            ),
            lambda a: ws.list_files(a.get("path", "."), bool(a.get("recursive", False))),
        ),
        (
            Tool(
                "read_file",
                "Read a text file from the workspace.",
                _schema(["path"], path=("string", "file path relative to the workspace root")),
                tags=("workspace", "files"),
            ),
            lambda a: ws.read_file(_arg(a, "path")),
        ),
        (
            Tool(
                "write_file",
                "Write (create or replace) a text file in the workspace.",
                _schema(
                    ["path", "content"],
                    path=("string", "file path relative to the workspace root"),
                    content=("string", "the whole new content of the file"),
                ),
                safety="write",
                tags=("workspace", "files"),
            ),
            lambda a: ws.write_file(_arg(a, "path"), _arg(a, "content")),
        ),
        (
            Tool(
                "run_command",
                "Run an allowed program in the workspace and return its exit code and "
                f"output. Allowed: {', '.join(sorted(ws.commands)) or 'none'}.",
                _schema(
                    ["command"],
                    command=("string", "the command line, e.g. 'pytest -q' (no shell)"),
                    timeout=("number", f"seconds before it is killed, at most {ws.timeout:g}"),
                ),
                safety="execute",
                tags=("workspace", "shell"),
            ),
            lambda a: ws.run_command(_arg(a, "command"), a.get("timeout")),
        ),
    ]


def _arg(arguments: dict[str, Any], name: str) -> Any:
    if name not in arguments:
        raise ToolInputError(f"Missing argument {name!r}.")
    return arguments[name]


def skill_tools(skills: Callable[[], Any]) -> list[tuple[Tool, Handler]]:
    """``search_skills`` and ``read_skill`` over ``skills()``, a ``SkillIndex`` opened on
    first use (``heron.skills.open_skills``)."""

    def search(a: dict[str, Any]) -> list[dict[str, Any]]:
        return [h.to_dict() for h in skills().search(_arg(a, "query"), int(a.get("top_k", 5)))]

    def read(a: dict[str, Any]) -> dict[str, Any]:
        skill = skills().show(_arg(a, "name"))
        return {
            "name": skill.name,
            "description": skill.description,
            "path": str(skill.path),
            "body": skill.body,
        }

    return [
        (
            Tool(
                "search_skills",
                "Find the skills (step-by-step procedures) that fit a task.",
                _schema(
                    ["query"],
                    query=("string", "what the task is"),
                    top_k=("integer", "how many skills, default 5"),
                ),
                tags=("skills",),
            ),
            search,
        ),
        (
            Tool(
                "read_skill",
                "Read one skill's full instructions by name.",
                _schema(["name"], name=("string", "the skill's name, from search_skills")),
                tags=("skills",),
            ),
            read,
        ),
    ]


def docs_tool(search: DocsSearch) -> tuple[Tool, Handler]:
    """``search_docs`` with the libraries' own schema (``heron.books.tool.SEARCH_DOCS``)."""
    from heron.books.tool import SEARCH_DOCS

    def handler(a: dict[str, Any]) -> list[dict[str, Any]]:
        _arg(a, "query")  # the one required argument, checked whatever the backend
        return search(a)

    tool = Tool(
        SEARCH_DOCS["name"],
        SEARCH_DOCS["description"],
        SEARCH_DOCS["input_schema"],
        tags=("docs",),
    )
    return tool, handler


def register_builtins(
    registry: ToolRegistry,
    *,
    root: Path | None = None,
    commands: Iterable[str] = (),
    timeout: float = DEFAULT_TIMEOUT,
    skills: Callable[[], Any] | None = None,
    docs_search: DocsSearch | None = None,
) -> list[Tool]:
    """Add the built-in tools: workspace tools when ``root`` is given, skill tools (over
    ``skills()``, default ``heron.skills.open_skills`` on first use) and ``search_docs``."""
    pairs: list[tuple[Tool, Handler]] = [docs_tool(docs_search or books_search)]
    if root is not None:
        pairs += workspace_tools(Workspace(root, commands=commands, timeout=timeout))
    pairs += skill_tools(skills or lazy(_open_skills))
    for tool, handler in pairs:
        registry.add(tool, handler)
    return [tool for tool, _ in pairs]


def books_search(arguments: dict[str, Any]) -> list[dict[str, Any]]:
    """The libraries' search (``heron.books``) on the configured store."""
    from heron.books.tool import search_docs
    from heron.store import open_store

    store = open_store()
    try:
        return search_docs(arguments, store)["results"]
    finally:
        store.close()


def lazy(open_: Callable[[], Any]) -> Callable[[], Any]:
    """``open_()``'s result, opened on the first call and kept: a tool that is never
    called never opens what it needs."""
    opened: list[Any] = []

    def get() -> Any:
        if not opened:
            opened.append(open_())
        return opened[0]

    return get


def _open_skills() -> Any:
    from heron.skills import open_skills

    return open_skills()
