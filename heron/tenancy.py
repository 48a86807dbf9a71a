"""What a context owns, and what a caller sees of the others: one policy below the doors.

A context (``heron.core.contexts``) owns its names, and a name another context uses is
refused, never shared:

- its **libraries**: a library's name is its store namespace and one library list's
  (``heron.libraries.config``: ``add_library`` refuses a name another list holds);
- the **examples** its tools learned from its requests (``heron.tools.usage``);
- its **jobs, rooms, cards and their audio** (``Jobs.within``, ``Interventions.within``,
  ``heron.server.features.interventions``), and its **conversations** (``heron.agent.sessions``).

What the server says about itself is cut to what the caller's context owns
(``namespaces_seen``): ``/metrics`` (index sizes by namespace, usage by key:
``heron.server.features.metrics``), ``/ready`` (the libraries indexed) and a job's store counts
(``heron.jobs.runner``). Only the server's administrator sees everything
(``sees_everything``). What no context owns is shared, because every context is served
from it: the store's tool index (``tools``: the imported definitions and the MCP
servers of ``mcp.json``), the models table, the server's skill directories for contexts
without their own.
"""

from __future__ import annotations

from collections.abc import Iterable

from heron.keys import ADMIN, Key
from heron.libraries.config import read_libraries
from heron.settings import Settings
from heron.skills.index import skills_namespace
from heron.tools.router import NAMESPACE as TOOLS_NAMESPACE


def sees_everything(key: Key | None) -> bool:
    """Whether a caller with ``key`` may see every context's names: no key (the
    machine's user, on a loopback server without a token, or the CLI), or an ``admin``
    key bound to no context (``HERON_API_TOKEN`` is one). An admin key bound to a
    context is that context's administrator, and sees it alone."""
    return key is None or (key.allows(ADMIN) and key.context is None)


def namespaces_seen(settings: Settings) -> frozenset[str]:
    """The store namespaces the settings' context may see: its libraries', its skills'
    (``skills``, or ``skills.CONTEXT`` for one with skill directories of its own) and
    the tool index every context is offered."""
    libraries = {library.name for library in read_libraries(settings)}
    return frozenset({*libraries, skills_namespace(settings), TOOLS_NAMESPACE})


def seen_by(settings: Settings, key: Key | None, names: Iterable[str]) -> list[str]:
    """``names`` (store namespaces) a caller with ``key`` in the settings' context may
    see, in their order: all of them for ``sees_everything``."""
    if sees_everything(key):
        return list(names)
    mine = namespaces_seen(settings)
    return [name for name in names if name in mine]
