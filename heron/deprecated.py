"""Old names kept for one release after a rename, each read with a ``DeprecationWarning``.

>>> __getattr__ = renamed(__name__, {"IndexReport": "SkillIndexReport"})  # doctest: +SKIP

A module sets its ``__getattr__`` this way (PEP 562): Python calls it only for names the
module does not define, so the new names cost nothing and only the old ones warn. Old
names stay out of ``__all__``.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Mapping
from typing import Any


def renamed(module: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` serving each old name in ``names`` as its new one."""

    def __getattr__(name: str) -> Any:
        new = names.get(name)
        if new is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warnings.warn(
            f"{module}.{name} is deprecated: use {module}.{new}; the old name goes in the "
            "next release.",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(sys.modules[module], new)

    return __getattr__
