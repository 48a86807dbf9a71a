"""The argument policy of allowlisted programs: which subcommands and options each may be
given, checked before anything runs.

Allowlisting a program (``HERON_TOOLS_COMMANDS``) lets it run; its entry in the policy
table (``heron.programs.table``, extended by the YAML file ``HERON_TOOLS_POLICY``) says
with which arguments. The rules, for every program:

- an option must be listed, **exactly** as written: no abbreviations (git and argparse
  accept ``--upload-p`` for ``--upload-pack``; a prefix is simply not on the list), no
  ``=value`` on a flag, short flags bundled (``-la``) only when each letter is listed;
- an option's value is given glued (``--format=%H``, ``-n5``) or as the next argument,
  which then may not start with ``-``; a ``path`` value must stay inside the root;
- a positional argument never starts with ``-`` (not even after ``--``), is no absolute
  path, does not climb out of the root (symlinks resolved), is no URL or ``X::`` git
  transport, and matches the entry's ``first``/``match`` patterns;
- a program with ``subcommands`` takes one of them as its first positional, then that
  subcommand's own rules apply (git's global options, ``-c`` and ``-C`` among them, are
  not on git's list, so they are refused);
- a program missing from the table gets the default entry: no options at all,
  positional arguments only, none of the form ``KEY=VALUE``;
- interpreters, launchers and a few programs whose operands act as options (``python``,
  ``sh``, ``env``, ``xargs``, ``dd``, ``tar``, ``crontab`` ...) are refused even when
  allowlisted: their arguments are code or name any file. Declaring them in the policy
  file (for instance ``python3: {any_arguments: true}``) is the explicit opt-in.

>>> policy = load_policy(settings.tools_policy)  # HERON_TOOLS_POLICY, or the table alone
>>> policy.check(["git", "log", "--oneline", "-5"], Path("/srv/repo"))
>>> policy.check(["git", "-c", "alias.x=!sh", "x"], Path("/srv/repo"))
Traceback (most recent call last):
...
heron.programs.policy.ProgramRefused: git: option '-c' is not allowed...
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from heron.errors import ConfigError, InputError
from heron.programs.rules import Option, Program
from heron.programs.table import BUILTIN, EXECUTABLE_CONFIG

#: A URL, or git's ``<transport>::<address>`` syntax (``ext::sh -c ...`` runs a program).
URL = re.compile(r"://|^[A-Za-z][A-Za-z0-9+.-]*::")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: How many allowed options an error lists before it says "...".
SHOWN = 14


class ProgramRefused(InputError):
    """A command line the policy does not allow; nothing was run."""


class PolicyFile(BaseModel):
    """The YAML file ``HERON_TOOLS_POLICY`` names. An entry in ``programs`` replaces the
    built-in entry of that name whole; ``protected_paths`` adds globs the file tools do
    not write; ``environment`` adds variables passed to programs."""

    model_config = ConfigDict(extra="forbid")

    programs: dict[str, Program] = {}
    protected_paths: list[str] = []
    environment: list[str] = []

    @field_validator("environment")
    @classmethod
    def _env_names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not ENV_NAME.match(name):
                raise ValueError(f"{name!r} is not an environment variable name")
        return value


#: A program the table does not know: positional arguments only, none of them a
#: ``KEY=VALUE`` (the form ``dd if=/etc/shadow`` and variable overrides take).
UNKNOWN = Program(about="not in the policy table: positional arguments only", match=r"[^=]*")


@dataclass(frozen=True)
class Policy:
    """The table in force: built-in entries, then the policy file's."""

    programs: Mapping[str, Program]
    protected: tuple[str, ...] = ()
    environment: tuple[str, ...] = ()
    source: Path | None = None

    def program(self, name: str) -> Program:
        """The entry for ``name`` (``/usr/bin/git`` is ``git``; ``python3.12`` falls back
        to the refused ``python3`` family)."""
        base = os.path.basename(name)
        if base in self.programs:
            return self.programs[base]
        family = self.programs.get(re.sub(r"[0-9.]+$", "", base))
        if family is not None and family.refuse:
            return family
        return UNKNOWN

    def check(self, argv: Sequence[str], root: Path) -> None:
        """Raise ``ProgramRefused`` unless ``argv`` keeps to its program's rules."""
        name = os.path.basename(argv[0])
        spec = self.program(argv[0])
        if spec.any_arguments:
            return
        if spec.refuse:
            raise ProgramRefused(
                f"{name}: {spec.refuse} Heron refuses it even when HERON_TOOLS_COMMANDS "
                f"lists it; to allow it anyway, declare '{name}' in the tools policy file "
                "(HERON_TOOLS_POLICY; e.g. 'any_arguments: true'), see docs/tools.md."
            )
        _Check(name, spec, Path(root), self.source).run(list(argv[1:]))

    def protected_rule(self, parts: Sequence[str]) -> str | None:
        """The rule that keeps the file tools from writing the path ``parts`` (relative
        to the root, normalised), or None when it may be written. A pattern without a
        ``/`` matches a file or folder of that name at any depth, one with a ``/`` the
        path from the root; either protects everything below what it matches. Case is
        ignored (``.GIT`` is ``.git`` on a case-insensitive filesystem)."""
        low = [part.lower() for part in parts]
        rules = [*EXECUTABLE_CONFIG, *((p, "listed in the tools policy") for p in self.protected)]
        for pattern, why in rules:
            glob = pattern.lower().strip("/")
            if "/" in glob:
                hit = any(
                    fnmatch.fnmatchcase("/".join(low[: i + 1]), glob) for i in range(len(low))
                )
            else:
                hit = any(fnmatch.fnmatchcase(part, glob) for part in low)
            if hit:
                return f"{pattern}: {why}"
        return None


class _Check:
    """One command line against one entry; ``where`` names it in errors (``git log``)."""

    def __init__(self, where: str, spec: Program, root: Path, source: Path | None) -> None:
        self.where = where
        self.spec = spec
        self.root = root
        self.source = source

    def refuse(self, message: str, *, declarable: bool = True) -> ProgramRefused:
        """The error for ``message``; ``declarable``: the policy file could allow it."""
        hint = ""
        if declarable:
            where = f", now {self.source}" if self.source else ""
            hint = (
                " To allow it, declare it in the tools policy file (HERON_TOOLS_POLICY"
                f"{where}); see docs/tools.md, 'Program policy'."
            )
        return ProgramRefused(f"{self.where}: {message} Nothing was run.{hint}")

    def run(self, args: list[str]) -> None:
        for arg in args:
            if "\x00" in arg:
                raise self.refuse("an argument holds a NUL character.", declarable=False)
        spec = self.spec
        operands: list[str] = []
        pattern_given = False
        dashdash = False
        i = 0
        while i < len(args):
            arg = args[i]
            i += 1
            if not dashdash and arg == "--":
                if spec.subcommands is not None:
                    raise self.refuse("'--' cannot come before the subcommand.")
                dashdash = True
                continue
            if arg.startswith("-") and arg != "-":
                if dashdash:
                    raise self.refuse(
                        f"{arg!r} comes after '--' but starts with '-'; Heron passes no "
                        "argument that a program could read as an option.",
                        declarable=False,
                    )
                given, i = self.option(arg, args, i)
                pattern_given = pattern_given or given
                continue
            if spec.subcommands is not None:
                sub = spec.subcommands.get(arg)
                if sub is None:
                    raise self.refuse(
                        f"the subcommand {arg!r} is not allowed. Allowed: "
                        f"{_listing(spec.subcommands)}."
                    )
                if sub.refuse:
                    raise self.refuse(f"{arg}: {sub.refuse}")
                _Check(f"{self.where} {arg}", sub, self.root, self.source).run(args[i:])
                return
            operands.append(arg)
        self.operands(operands, pattern_given)

    def option(self, arg: str, args: list[str], i: int) -> tuple[bool, int]:
        """Check the option ``arg`` (its value may be ``args[i]``); returns whether it gave
        the pattern and the index after it."""
        spec = self.spec
        options = spec.options
        if arg.startswith("--") or arg in options:
            name, eq, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
            opt = options.get(name)
            if opt is None:
                raise self.refuse(f"option {name!r} is not allowed. Allowed: {_listing(options)}.")
            if opt.kind == "flag":
                if eq:
                    raise self.refuse(f"option {name!r} takes no value.")
                return opt.pattern, i
            if opt.kind == "optional":
                if eq:
                    self.value(name, opt, value)
                return opt.pattern, i
            if not eq:
                value, i = self.next_value(name, args, i)
            self.value(name, opt, value)
            return opt.pattern, i
        if spec.numeric and re.fullmatch(r"-\d+", arg):
            return False, i
        if len(arg) > 2 and not spec.bundling:
            raise self.refuse(f"option {arg!r} is not allowed. Allowed: {_listing(options)}.")
        pattern = False
        for j, letter in enumerate(arg[1:], 1):
            name = "-" + letter
            opt = options.get(name)
            if opt is None:
                inside = f" (in {arg!r})" if len(arg) > 2 else ""
                raise self.refuse(
                    f"option {name!r}{inside} is not allowed. Allowed: {_listing(options)}."
                )
            pattern = pattern or opt.pattern
            if opt.kind == "flag":
                continue
            glued = arg[j + 1 :]
            if glued:
                self.value(name, opt, glued)
            elif opt.kind in ("value", "path"):
                value, i = self.next_value(name, args, i)
                self.value(name, opt, value)
            break
        return pattern, i

    def next_value(self, name: str, args: list[str], i: int) -> tuple[str, int]:
        if i >= len(args):
            raise self.refuse(f"option {name!r} needs a value.")
        value = args[i]
        if value.startswith("-"):
            glue = f"{name}=VALUE" if name.startswith("--") else f"{name}VALUE"
            raise self.refuse(
                f"the value {value!r} of {name!r} starts with '-'; glue it on: {glue}."
            )
        return value, i + 1

    def value(self, name: str, opt: Option, value: str) -> None:
        if opt.match is not None and not re.fullmatch(opt.match, value):
            raise self.refuse(f"{value!r} is not a value {name!r} may take here ({opt.match}).")
        if opt.kind == "path":
            self.inside(value, f"the value of {name!r}")

    def operands(self, operands: list[str], pattern_given: bool) -> None:
        spec = self.spec
        if operands and not spec.positionals:
            raise self.refuse(f"takes no positional arguments (got {operands[0]!r}).")
        if spec.max_positionals is not None and len(operands) > spec.max_positionals:
            raise self.refuse(
                f"takes at most {spec.max_positionals} positional argument(s), got {len(operands)}."
            )
        for n, arg in enumerate(operands):
            if n == 0 and spec.first is not None and not re.fullmatch(spec.first, arg):
                raise self.refuse(f"{arg!r} is not allowed here (it must match {spec.first}).")
            if spec.match is not None and not re.fullmatch(spec.match, arg):
                raise self.refuse(f"{arg!r} is not allowed here (it must match {spec.match}).")
            if n == 0 and spec.pattern_first and not pattern_given:
                continue  # the search pattern: text, not a path
            if arg != "-":
                self.inside(arg, repr(arg))

    def inside(self, arg: str, what: str) -> None:
        if URL.search(arg):
            raise self.refuse(
                f"{what} is a URL or a git transport ('X::'); commands reach no other "
                "machine or transport from the command line.",
                declarable=False,
            )
        if arg.startswith(("/", "~")):
            raise self.refuse(
                f"{what} is an absolute path; give a path inside the workspace.",
                declarable=False,
            )
        root = os.path.realpath(self.root)
        real = os.path.realpath(os.path.join(root, arg))
        if real != root and not real.startswith(root.rstrip(os.sep) + os.sep):
            raise self.refuse(f"{what} leads outside the workspace (to {real}).", declarable=False)


def _listing(names: Mapping[str, Any]) -> str:
    shown = sorted(names)
    if not shown:
        return "none"
    more = ", ..." if len(shown) > SHOWN else ""
    return ", ".join(shown[:SHOWN]) + more


def load_policy(path: Path | None = None) -> Policy:
    """The built-in table, extended by the YAML file at ``path`` when one is given;
    ``ConfigError`` names the file and the field when the file is wrong."""
    if path is None:
        return Policy(BUILTIN)
    path = Path(path).expanduser()
    hint = "Fix the file, or unset HERON_TOOLS_POLICY to use the built-in table."
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(
            f"HERON_TOOLS_POLICY names {path}, which does not exist. Create it (see "
            "docs/tools.md, 'Program policy') or unset HERON_TOOLS_POLICY."
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"Cannot read the tools policy {path}: {exc}. {hint}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"The tools policy {path} is not valid YAML: {exc}. {hint}") from exc
    if document is None:
        document = {}
    if not isinstance(document, dict):
        raise ConfigError(
            f"The tools policy {path} must be a mapping with 'programs', "
            f"'protected_paths' or 'environment'; it is a {type(document).__name__}. {hint}"
        )
    try:
        parsed = PolicyFile.model_validate(document)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc']) or 'top level'}: {error['msg']}"
            for error in exc.errors()[:5]
        )
        raise ConfigError(f"The tools policy {path} is wrong: {problems}. {hint}") from None
    return Policy(
        {**BUILTIN, **parsed.programs},
        tuple(parsed.protected_paths),
        tuple(parsed.environment),
        path,
    )
