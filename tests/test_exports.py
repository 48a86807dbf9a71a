"""Each package's ``__all__`` lists what it exports, and every name in it exists."""

from __future__ import annotations

import importlib

import pytest


@pytest.mark.parametrize(
    "package",
    [
        "heron",
        "heron.books",
        "heron.embed",
        "heron.store",
        "heron.skills",
        "heron.tools",
        "heron.cli",
    ],
)
def test_all_names_exist(package: str) -> None:
    module = importlib.import_module(package)
    for name in module.__all__:
        assert hasattr(module, name), f"{package}.{name}"


@pytest.mark.parametrize(
    ("module", "old", "new"),
    [
        ("heron.skills", "IndexReport", "SkillIndexReport"),
        ("heron.skills.index", "IndexReport", "SkillIndexReport"),
        ("heron.books", "IndexReport", "LibraryIndexReport"),
        ("heron.books.index", "IndexReport", "LibraryIndexReport"),
    ],
)
def test_renamed_classes_keep_their_old_name_for_one_release(
    module: str, old: str, new: str
) -> None:
    package = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=f"use {module}.{new}"):
        assert getattr(package, old) is getattr(package, new)
    assert old not in getattr(package, "__all__", ())
    with pytest.raises(AttributeError, match="no attribute 'Nonesuch'"):
        package.Nonesuch  # noqa: B018
