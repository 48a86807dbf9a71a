"""Old names kept for one release after a rename, each read with a ``DeprecationWarning``.

>>> __getattr__ = renamed(__name__, {"IndexReport": "SkillIndexReport"})  # doctest: +SKIP

A module sets its ``__getattr__`` this way (PEP 562): Python calls it only for names the
module does not define, so the new names cost nothing and only the old ones warn. Old
names stay out of ``__all__``. A whole package that moved is ``moved_package``.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Callable, Mapping
from types import ModuleType
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


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``OLD.x.y`` as the already-importable ``NEW.x.y`` (the same module object)."""

    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if not fullname.startswith(self.old + "."):
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(self.new + spec.name[len(self.old) :])

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module is the new one, already executed."""


def moved_package(old: str, new: str) -> ModuleType:
    """Make the package ``old`` (and every ``old.sub`` module) the package ``new``, with
    one ``DeprecationWarning``. ``old/__init__.py`` is then just::

        sys.modules[__name__] = moved_package(__name__, "heron.libraries")
    """
    warnings.warn(
        f"{old} is deprecated: use {new}; the old name goes in the next release.",
        DeprecationWarning,
        stacklevel=3,
    )
    if not any(isinstance(f, _Alias) and f.old == old for f in sys.meta_path):
        sys.meta_path.insert(0, _Alias(old, new))
    return importlib.import_module(new)


def settings_or_default(
    settings: Any, caller: str, fix: str = "pass settings=Settings() (made once, by the caller)"
) -> Any:
    """``settings``; ``None`` (the old default) reads ``Settings()`` from the environment
    and heron.toml, with a ``DeprecationWarning``: library code takes the settings it is
    given, and ``caller`` will require them in the next release. Construct ``Settings()``
    once, at the edge (a CLI command, the server, an ``open_*`` helper), and pass it."""
    if settings is not None:
        return settings
    warnings.warn(
        f"{caller} without settings is deprecated: {fix}; they will be required in the "
        "next release.",
        DeprecationWarning,
        stacklevel=3,
    )
    from heron.settings import Settings  # the old default, read only on this old path

    return Settings()
