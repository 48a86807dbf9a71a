"""The built-in tools that are off unless a setting turns them on, one row each
(``OPTIONAL_TOOLS``), read by everything that lists them: the toolbox that builds them
(``heron.tools.builtin``: one builder a row), ``about`` and ``heron info`` (which are
on), the extras (``heron.extras``: what needs each), the doctor (the extra or the program
each one turned on needs).

Adding one is a row here, its builder in ``heron.tools.builtin.BUILDERS`` (a test checks
that every row has one) and its setting in ``heron.settings``:

>>> [tool.env for tool in OPTIONAL_TOOLS]
['HERON_TOOLS_FETCH_URL', 'HERON_TOOLS_PYTHON_EXEC']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class OptionalTool:
    """An optional built-in: ``name`` as a model calls it, turned on by the boolean field
    ``setting`` of the settings' tools section (``settings.tools``); the Heron ``extra``
    whose packages it imports (``heron.extras``), or the ``program`` it runs (from the
    Debian ``package``)."""

    name: str
    setting: str
    extra: str | None = None
    program: str | None = None
    package: str | None = None

    @property
    def env(self) -> str:
        """The variable that turns it on: the tools section's flat name for ``setting``."""
        return f"HERON_TOOLS_{self.setting.upper()}"

    def on(self, settings: Any) -> bool:
        """Whether ``settings`` (a ``heron.settings.Settings``, which the foundation's
        core may not import: settings reads core's contexts) turn it on."""
        return bool(getattr(settings.tools, self.setting))


OPTIONAL_TOOLS: tuple[OptionalTool, ...] = (
    # The network: web pages as Markdown.
    OptionalTool("fetch_url", "fetch_url", extra="web"),
    # Code in a bubblewrap sandbox.
    OptionalTool("python_exec", "python_exec", program="bwrap", package="bubblewrap"),
)
