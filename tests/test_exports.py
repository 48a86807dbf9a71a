"""Each package's ``__all__`` lists what it exports, and every name in it exists."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest


@pytest.mark.parametrize(
    "package",
    [
        "heron",
        "heron.libraries",
        "heron.embed",
        "heron.store",
        "heron.skills",
        "heron.tools",
        "heron.core",
        "heron.cli",
        "heron.interventions",
        "heron.ops.watchdog",
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
        ("heron.libraries", "IndexReport", "LibraryIndexReport"),
        ("heron.libraries.index", "IndexReport", "LibraryIndexReport"),
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


def test_heron_books_is_the_old_name_of_heron_libraries() -> None:
    import subprocess
    import sys

    # A fresh interpreter: this one may have imported heron.books already.
    code = (
        "import warnings; warnings.simplefilter('error')\n"
        "try:\n    import heron.books\nexcept DeprecationWarning as w: print(w)\n"
        "warnings.simplefilter('ignore')\n"
        "import heron.books, heron.libraries\n"
        "from heron.books.search import search\n"
        "from heron.libraries.search import search as new\n"
        "print(heron.books is heron.libraries, search is new)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == [
        "heron.books is deprecated: use heron.libraries; the old name goes in the next release.",
        "True True",
    ]


def test_books_settings_keep_their_old_names_for_one_release(
    monkeypatch: pytest.MonkeyPatch, home: Path
) -> None:
    from heron.settings import Settings

    home.mkdir(parents=True, exist_ok=True)
    (home / "heron.toml").write_text("books_candidates = 5\n")
    with pytest.warns(DeprecationWarning, match="heron.toml key books_candidates"):
        assert Settings().library_candidates == 5

    monkeypatch.setenv("HERON_BOOKS_CANDIDATES", "7")
    with pytest.warns(DeprecationWarning, match="use HERON_LIBRARY_CANDIDATES"):
        assert Settings().library_candidates == 7
    monkeypatch.setenv("HERON_LIBRARY_CANDIDATES", "9")  # the new name wins
    assert Settings().library_candidates == 9
    with pytest.warns(DeprecationWarning, match="use library_reranker"):
        assert Settings(books_reranker="none").library_reranker == "none"
