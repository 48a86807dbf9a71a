"""``Tool`` and its readers, now in ``heron.core.tools`` (below every capability); this
module re-exports them so ``from heron.tools.model import Tool`` keeps working."""

from __future__ import annotations

from heron.core import tools
from heron.core.tools import *  # noqa: F403 -- the whole of heron.core.tools, re-exported

__all__ = tools.__all__
