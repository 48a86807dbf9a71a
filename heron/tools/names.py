"""Provider-safe tool names, now in ``heron.core.names`` (``heron.llm`` encodes with them
too); this module re-exports them so ``from heron.tools.names import NameCodec`` keeps
working."""

from __future__ import annotations

from heron.core import names
from heron.core.names import *  # noqa: F403 -- the whole of heron.core.names, re-exported

__all__ = names.__all__
