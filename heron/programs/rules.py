"""One program's entry in the policy table (``Program``, its ``Option``s): what the
built-in table (``heron.programs.table``) and a policy file are written in, and what
``heron.programs.policy`` applies. The fields are described in docs/tools.md."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator

OptionKind = Literal["flag", "optional", "value", "path"]


class Option(BaseModel):
    """``flag``: no value. ``optional``: a value only glued (``--stat=80``, ``-uno``).
    ``value``: a value glued or as the next argument. ``path``: a value that must be a
    path inside the root. ``match``: a regular expression the value must match whole;
    ``pattern``: this option gives the search pattern (then no positional is one)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: OptionKind = "flag"
    match: str | None = None
    pattern: bool = False

    @field_validator("match")
    @classmethod
    def _regex(cls, value: str | None) -> str | None:
        return _compiles(value)


class Program(BaseModel):
    """One program's (or subcommand's) rules; the fields are described in docs/tools.md."""

    model_config = ConfigDict(extra="forbid")

    about: str = ""
    options: dict[str, Option] = {}
    subcommands: dict[str, Program] | None = None
    positionals: bool = True
    max_positionals: int | None = None
    first: str | None = None
    match: str | None = None
    pattern_first: bool = False
    numeric: bool = False
    bundling: bool = True
    any_arguments: bool = False
    refuse: str | None = None

    @field_validator("options", mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        # In the table and in YAML, ``--stat: optional`` is short for ``{kind: optional}``.
        if isinstance(value, Mapping):
            return {k: {"kind": v} if isinstance(v, str) else v for k, v in value.items()}
        return value

    @field_validator("options")
    @classmethod
    def _names(cls, value: dict[str, Option]) -> dict[str, Option]:
        for name in value:
            if not re.fullmatch(r"--?[A-Za-z0-9][A-Za-z0-9_-]*", name):
                raise ValueError(
                    f"{name!r} is not an option name: write it with its dashes and no "
                    "value, e.g. --format or -n"
                )
        return value

    @field_validator("first", "match")
    @classmethod
    def _regex(cls, value: str | None) -> str | None:
        return _compiles(value)


def _compiles(value: str | None) -> str | None:
    if value is not None:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"{value!r} is not a regular expression: {exc}") from exc
    return value
