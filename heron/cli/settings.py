"""The settings a command acts with: built once per run, in its ``--context``.

The ``heron`` group starts each run (``start_run``) with its ``--context``; the first part
of the command that asks (``command_settings()``) builds ``Settings(context=NAME)`` (a
keyword, so it wins over ``HERON_CONTEXT``) and keeps it for the rest of the run, so
everything the command calls gets that one object and nothing is written to the
environment. Built on first use: a command that reads no settings (``heron token``)
never builds them. The run ends when the group's context closes.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import typer

    from heron.settings import Settings

#: The context a command acts in when ``--context`` is not given.
CONTEXT_VARIABLE = "HERON_CONTEXT"
#: This process's running command: ``context`` (its ``--context``, if given), ``settings``
#: (once built); empty outside a run (a test calling a command's function directly).
_run: dict[str, Any] = {}


def start_run(ctx: typer.Context, context: str | None) -> None:
    """Begin a run of the ``heron`` group in ``context`` (``--context``; ``None``: not
    given), ended when ``ctx`` closes."""
    _run.clear()
    _run["context"] = context
    ctx.call_on_close(_run.clear)


def chosen_context() -> str | None:
    """The context this run acts in: ``--context``, else ``HERON_CONTEXT``, else
    ``None`` (the default context). Read without building the settings."""
    return _run.get("context") or os.environ.get(CONTEXT_VARIABLE) or None


def command_settings() -> Settings:
    """This run's settings, built on first use in its ``--context`` and kept for the
    rest of the run; outside a run, built afresh from the environment."""
    from heron.settings import Settings

    if not _run:
        return Settings()
    if "settings" not in _run:
        name = _run["context"]
        _run["settings"] = Settings(context=name) if name else Settings()
    return _run["settings"]
