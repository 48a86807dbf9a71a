"""``Workspace``: files under one root and allowlisted commands, what the workspace tools
(``heron.tools.builtin``) and the job runner (``heron.jobs``) act on.

**Files.** Every path is relative to the workspace root, and reached through
``heron.core.files``: one component at a time from a descriptor of the root
(``os.open(part, O_DIRECTORY | O_NOFOLLOW, dir_fd=parent)``), so no symlink is ever
followed and swapping a folder for a symlink between a check and a use cannot reach
outside: there is no check separate from the use. ``..`` is resolved by name and may not
climb above the root. Only regular files are read (a FIFO, socket or device is refused
at once); ``list_files`` walks folders through descriptors too and lists a symlink
without following it. ``write_file`` creates missing folders with ``mkdir(dir_fd=)``,
writes a temporary file beside the target and renames it over (``os.replace`` with
``dir_fd``s): readers see the old or the new content, the file keeps its mode (0644 when
new), a hard link in its place is replaced, never written through, and a symlink or
special file there is refused. Paths the program policy marks as executable config (anything under
``.git``, hooks folders, ``.envrc`` ...: ``heron.programs.table.EXECUTABLE_CONFIG``) are
never written; they may be read.

**Commands.** ``run_command`` runs a program whose name is on the allowlist and whose
arguments the program policy allows (``heron.programs``: per-program subcommands and
options, see docs/tools.md, "Program policy"), without a shell, in the root, with a
minimal environment and hardened git, stdin empty, in its own process group, killed
(with its children) at its timeout.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import stat
import subprocess
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from heron.core.errors import ToolCallError, ToolInputError
from heron.core.files import PathRefused, open_folder, open_regular, replace_file
from heron.programs import (
    WORKSPACE_PROTOCOLS,
    Policy,
    ProgramRefused,
    check_git_config,
    program_environment,
)
from heron.redact import redact_then_cut

#: A file read returns at most this many bytes; the rest is reported as cut.
MAX_READ = 256_000
#: ``list_files`` returns at most this many entries, and descends at most this deep.
MAX_ENTRIES = 1000
MAX_DEPTH = 64
#: Command output kept per stream.
MAX_OUTPUT = 64_000
DEFAULT_TIMEOUT = 30.0

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True)
class Command:
    """A command line the policy allowed: ``argv[0]`` is the program's absolute path."""

    argv: list[str]
    env: dict[str, str]


class Workspace:
    """Files and commands confined to ``root``; ``commands`` are the programs allowed,
    ``policy`` what they may be given: ``heron.programs.load_policy(settings.tools_policy)``, the
    built-in table plus the operator's ``tools_policy`` file."""

    def __init__(
        self,
        root: Path,
        *,
        commands: Iterable[str] = (),
        timeout: float = DEFAULT_TIMEOUT,
        policy: Policy,
    ) -> None:
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise ToolInputError(f"Workspace root {root} is not a directory; create it first.")
        self.commands = frozenset(commands)
        self.timeout = timeout
        self.policy = policy

    # -- paths ----------------------------------------------------------------------------

    def parts(self, path: object) -> list[str]:
        """``path`` as names from the root, ``..`` resolved by name, or ``ToolInputError``."""
        if not isinstance(path, str):
            raise ToolInputError(
                f'A workspace path must be a string, not {json_type_name(path)}, e.g. "src/app.py".'
            )
        if "\x00" in path:
            raise ToolInputError("A workspace path must not contain NUL characters.")
        if os.path.isabs(path):
            raise ToolInputError(
                f"{path!r} is absolute; give a path relative to the workspace root."
            )
        parts: list[str] = []
        for part in path.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                if not parts:
                    raise ToolInputError(
                        f"{path!r} leads outside the workspace; only files under the "
                        "workspace root can be used."
                    )
                parts.pop()
                continue
            parts.append(part)
        return parts

    @contextlib.contextmanager
    def _folder(self, parts: Sequence[str], path: str, *, create: bool = False) -> Iterator[int]:
        """A descriptor of the folder ``parts`` below the root, reached without following
        a symlink (``open_folder``); ``create`` makes missing folders on the way."""
        try:
            fd = open_folder(self.root, parts, create=create, path=path)
        except FileNotFoundError as exc:
            raise ToolInputError(
                f"{exc.filename!r} is not a directory in the workspace (there is no such "
                "folder); see list_files."
            ) from None
        except PathRefused as exc:
            raise _refused(exc) from None
        except OSError as exc:
            raise ToolCallError(f"Cannot use {path!r}: {exc.strerror or exc}.") from None
        try:
            yield fd
        finally:
            os.close(fd)

    def _protected(self, parts: Sequence[str], path: str) -> None:
        rule = self.policy.protected_rule(parts)
        if rule is not None:
            raise ToolInputError(
                f"{path!r} is executable configuration ({rule}); the file tools do not "
                "write it. Reading it is fine; a person can change it outside Heron."
            )

    # -- the file tools -------------------------------------------------------------------

    def list_files(self, path: str = ".", recursive: bool = False) -> list[str]:
        parts = self.parts(path)
        out: list[str] = []
        with self._folder(parts, path) as fd:
            self._list(fd, "/".join(parts), recursive, out, 0)
        return out

    def _list(self, fd: int, prefix: str, recursive: bool, out: list[str], depth: int) -> None:
        with os.scandir(fd) as scan:
            entries = sorted((e.name, e.is_dir(follow_symlinks=False)) for e in scan)
        for name, is_dir in entries:
            if len(out) >= MAX_ENTRIES:
                return
            rel = f"{prefix}/{name}" if prefix else name
            out.append(rel + "/" if is_dir else rel)
            if not (recursive and is_dir) or depth >= MAX_DEPTH:
                continue
            try:
                child = os.open(name, _DIR, dir_fd=fd)
            except OSError:
                continue  # gone or swapped for a symlink since the listing: not followed
            try:
                self._list(child, rel, True, out, depth + 1)
            finally:
                os.close(child)

    def read_file(self, path: str) -> dict[str, Any]:
        parts = self.parts(path)
        if not parts:
            raise ToolInputError(f"{path!r} is the workspace root, a folder; see list_files.")
        with self._folder(parts[:-1], path) as parent:
            try:
                fd = open_regular(parent, parts[-1], path)
            except FileNotFoundError:
                raise ToolInputError(
                    f"No file {path!r} in the workspace; see list_files."
                ) from None
            except PathRefused as exc:
                hint = "; see list_files" if exc.kind == stat.S_IFDIR else ""
                raise _refused(exc, f": read_file reads regular files{hint}.") from None
            except OSError as exc:
                raise ToolCallError(f"Cannot use {path!r}: {exc.strerror or exc}.") from None
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(MAX_READ + 1)
        return {
            "path": path,
            "content": data[:MAX_READ].decode("utf-8", "replace"),
            "truncated": len(data) > MAX_READ,
        }

    def write_file(self, path: str, content: str) -> dict[str, Any]:
        parts = self.parts(path)
        if not isinstance(content, str):
            raise ToolInputError(
                f"write_file's content must be a string, not {json_type_name(content)}."
            )
        if not parts:
            raise ToolInputError("write_file needs a file path, not the workspace root.")
        self._protected(parts, path)
        data = content.encode("utf-8")
        with self._folder(parts[:-1], path, create=True) as parent:
            try:
                replace_file(parent, parts[-1], data, path)
            except PathRefused as exc:
                raise _refused(exc, "; write_file replaces only regular files.") from None
            except OSError as exc:
                raise ToolCallError(f"Cannot write {path!r}: {exc.strerror or exc}.") from exc
        return {"path": path, "bytes": len(data)}

    # -- commands -------------------------------------------------------------------------

    def command(self, command: object, *, configured: bool = False) -> Command:
        """``command`` (a string split like a shell would, or a list of strings) ready to
        run: its program is on the allowlist, its arguments keep to the program policy
        (``configured``: the operator's own setting, such as ``jobs_test_command``, whose
        arguments are theirs to choose), it resolves to a program outside the root, and
        for git the repository's config names no program (``check_git_config``)."""
        argv = _argv(command)
        if argv[0] not in self.commands:
            allowed = ", ".join(sorted(self.commands)) or "none"
            raise ToolInputError(
                f"Command {argv[0]!r} is not allowed. Allowed: {allowed}. "
                "Add it to HERON_TOOLS_COMMANDS (the workspace's allowlist) to permit it."
            )
        try:
            if not configured:
                self.policy.check(argv, self.root)
            env = program_environment(
                extra=self.policy.environment,
                protocols=WORKSPACE_PROTOCOLS,
                ceiling=self.root.parent,
            )
            program = self._program(argv[0], env["PATH"])
            if "/" not in argv[0] and Path(program).is_relative_to(self.root):
                raise ToolInputError(
                    f"{argv[0]!r} is found at {program}, inside the workspace: a file there "
                    "is not the program that was allowed. Remove that PATH entry."
                )
            if os.path.basename(program) == "git" or os.path.basename(argv[0]) == "git":
                check_git_config(self.root, env)
        except ProgramRefused as exc:
            raise ToolInputError(str(exc)) from None
        return Command([program, *argv[1:]], env)

    def _program(self, name: str, path: str) -> str:
        """The file ``name`` runs: found on ``path``, or (a name with a ``/``, allowlisted
        as such) relative to the root, as ``exec`` in the root would take it."""
        if "/" in name:
            found = os.path.join(self.root, name)
            program = found if os.path.isfile(found) and os.access(found, os.X_OK) else None
        else:
            program = shutil.which(name, path=path)
        if program is None:
            where = "in the workspace" if "/" in name else f"on PATH ({path})"
            raise ToolCallError(f"Cannot run {name!r}: no such program {where}. Is it installed?")
        return os.path.realpath(program)

    def run_command(self, command: str | list[str], timeout: float | None = None) -> dict[str, Any]:
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
        ):
            raise ToolInputError(f"timeout must be a positive number of seconds, not {timeout!r}.")
        ready = self.command(command)
        limit = min(timeout or self.timeout, self.timeout)
        name = os.path.basename(ready.argv[0])
        try:
            proc = subprocess.Popen(
                ready.argv,
                cwd=self.root,
                env=ready.env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # its own process group: the timeout kills children too
            )
        except OSError as exc:
            raise ToolCallError(f"Cannot run {name!r}: {exc.strerror}.") from exc
        try:
            stdout, stderr = proc.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise ToolCallError(
                f"{name!r} did not finish within {limit:g} s and was killed."
            ) from None
        return {
            "exit_code": proc.returncode,
            # Redacted whole, then cut: a key cut first would lose the line marking it.
            "stdout": redact_then_cut(stdout, MAX_OUTPUT),
            "stderr": redact_then_cut(stderr, MAX_OUTPUT),
        }


def _refused(
    exc: PathRefused, special: str = "; the file tools use regular files only."
) -> Exception:
    """``exc`` with what to do: a symlink is never followed, a special file never used
    (``special`` says by which tool)."""
    if exc.symlink:
        return ToolInputError(
            f"{exc}; the file tools follow no symlinks (one could lead outside the "
            "workspace). Use the path it points to."
        )
    return ToolInputError(f"{exc}." if exc.folder else f"{exc}{special}")


def json_type_name(value: object) -> str:
    """How JSON would call ``value``'s type, for error messages."""
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string"}
    names |= {list: "an array", dict: "an object", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _argv(command: object) -> list[str]:
    if isinstance(command, str):
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise ToolInputError(
                f"Cannot split the command {command!r}: {exc}. Quote it as a shell would."
            ) from None
    elif isinstance(command, list | tuple) and all(isinstance(a, str) for a in command):
        argv = list(command)
    else:
        raise ToolInputError(
            "A command is a string such as 'ls -l' (or a list of strings), "
            f"not {json_type_name(command)}."
        )
    if not argv:
        raise ToolInputError("run_command needs a command, e.g. 'ls -l'.")
    return argv
