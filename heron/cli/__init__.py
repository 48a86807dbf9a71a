"""The ``heron`` command. Each command parses, calls one library function and prints.

**Start-up.** A command imports, at the top of its module, only typer, rich's console
and the modules of this package; the settings, the store, numpy, httpx, the agent and
the models are imported inside the command that needs them, when it runs. So ``heron
--version``, ``heron --help`` and every ``heron COMMAND --help`` print without loading
any of them (tests/cli/test_startup.py checks ``sys.modules``), and a command loads only
its own. The vocabularies a ``--help`` lists (search modes, scopes, states) are written
out in the command's module; the same test checks they agree with the library's.

``heron search`` and ``heron ask`` go through a running ``heron serve`` of the same home
when there is one (``heron.cli.remote``), and print the same either way.
"""

from __future__ import annotations

from heron.cli.app import app

__all__ = ["app", "main"]


def main() -> None:
    app()  # ends every failure in one line and exit status 1 (heron.cli.app)
