"""Contexts: what a caller sees and touches, defined in ``heron.toml``.

A context names its libraries, its workspace and its skill directories; the sessions
started in it stay in it. The ``default`` context is the server as configured (every
library of ``libraries.txt``, ``tools_root``, ``skills_dirs``); each other one is a
table of ``heron.toml``::

    [contexts.geomind]
    description = "The geomind team"
    libraries = ["geomind-docs", "heron"]   # names of libraries.txt; unset: all of them
    workspace = "/srv/geomind"               # its tools' root; unset: none (no file tools)
    skills_dirs = ["/srv/geomind/skills"]    # unset: the server's skill directories

    [contexts.ops]
    libraries_file = "/srv/ops/libraries.txt"   # its own list, in libraries.txt's format
    mcp_config = "/srv/ops/mcp.json"            # its own MCP servers; unset: the server's
    models = ["fast", "openai/*"]               # the models it may call; unset: any
    max_budget = 50.0                           # dollars per budget_duration
    budget_duration = "1mo"

A request picks one with the ``X-Heron-Context`` header or by its key's context
(``heron.server.http.contexts``); a CLI command with ``--context`` (``HERON_CONTEXT``). The
resolved context travels as the ``Settings`` of it (``Settings.in_context``): one typed
object handed down, read by the libraries, skills, tools and sessions like any setting.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from heron.errors import InputError

#: The context of a request that names none: the server as configured.
DEFAULT = "default"
#: The request header naming a context (case-insensitive, as every HTTP header).
HEADER = "X-Heron-Context"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")


class ContextSpec(BaseModel):
    """One ``[contexts.NAME]`` table of ``heron.toml``; a key it does not know is an error."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    description: str = ""
    libraries: tuple[str, ...] | None = Field(
        default=None,
        description="The libraries it sees, by name; unset: every library of its file.",
    )
    libraries_file: Path | None = Field(
        default=None,
        description="Its own library list (libraries.txt's format); unset: libraries.txt.",
    )
    workspace: Path | None = Field(
        default=None, description="Root of its file and command tools; unset: none."
    )
    skills_dirs: tuple[Path, ...] | None = Field(
        default=None, description="Its skill directories only; unset: the server's."
    )
    models: tuple[str, ...] | None = Field(
        default=None,
        description="The models its requests may call: aliases of models.yml and "
        "provider/model names, * and ? as wildcards; unset: any.",
    )
    max_budget: float | None = Field(
        default=None, ge=0, description="Dollars its model calls may spend per budget_duration."
    )
    budget_duration: str | None = Field(
        default=None,
        pattern=r"^[1-9][0-9]{0,5}(s|m|h|d|mo)$",
        description="max_budget's window: 30s, 15m, 1h, 30d, 1mo (LiteLLM's); unset: for ever.",
    )
    mcp_config: Path | None = Field(
        default=None,
        description="Its own mcp.json (its MCP servers, in place of the server's); unset: "
        "the server's.",
    )


def check_context_name(name: str) -> str:
    """``name`` if it can name a context, else ``InputError`` saying what can."""
    if not _NAME.match(name):
        raise InputError(
            f"Invalid context name {name[:80]!r}: use up to 64 letters, digits, '_', '-' or "
            "'.', starting with a letter or digit, e.g. geomind."
        )
    return name
