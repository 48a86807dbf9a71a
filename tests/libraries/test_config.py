from __future__ import annotations

import re
from pathlib import Path

import pytest

from heron.errors import ConfigError, InputError, NotFound
from heron.libraries.config import (
    Library,
    add_library,
    config_path,
    get_library,
    read_libraries,
    remove_library,
)
from heron.settings import Settings


def test_add_list_remove(settings: Settings, tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    add_library("local", str(tmp_path / "docs"), settings)
    add_library("remote", "https://example.com/docs.git", settings)
    assert read_libraries(settings) == [
        Library("local", str((tmp_path / "docs").resolve())),
        Library("remote", "https://example.com/docs.git"),
    ]
    assert get_library("remote", settings).is_git
    remove_library("local", settings)
    assert [lib.name for lib in read_libraries(settings)] == ["remote"]
    with pytest.raises(NotFound, match="heron library list"):
        remove_library("local", settings)


def test_file_format_comments_and_errors(settings: Settings) -> None:
    path = config_path(settings)
    path.parent.mkdir(parents=True)
    path.write_text("# libraries\n\nk8s git@github.com:k/website.git  # the docs\n")
    assert read_libraries(settings) == [Library("k8s", "git@github.com:k/website.git")]
    path.write_text("k8s\n")
    with pytest.raises(ConfigError, match="line 1: expected 'NAME SOURCE'"):
        read_libraries(settings)
    path.write_text("a /x\na /y\n")
    with pytest.raises(ConfigError, match="listed twice"):
        read_libraries(settings)


def test_bad_names_and_sources(settings: Settings, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    with pytest.raises(InputError, match="Invalid library name"):
        add_library("no spaces", str(docs), settings)
    with pytest.raises(InputError, match="is not a folder"):
        add_library("x", str(tmp_path / "missing"), settings)
    add_library("x", str(docs), settings)
    with pytest.raises(InputError, match="heron library remove x"):
        add_library("x", str(docs), settings)
    with pytest.raises(NotFound, match="heron library add nope SOURCE"):
        get_library("nope", settings)


def test_heron_docs_are_a_default_library(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings()
    (builtin,) = read_libraries(settings)
    assert (builtin.name, builtin.builtin) == ("heron", True)
    assert (Path(builtin.source) / "libraries.md").is_file()
    monkeypatch.setenv("HERON_LIBRARY_DEFAULT_DOCS", "false")
    assert read_libraries(Settings()) == []


def test_options_after_the_source(settings: Settings) -> None:
    path = config_path(settings)
    path.parent.mkdir(parents=True)
    path.write_text(
        "k8s https://github.com/k/website.git branch=release-1.31 include=content/en/**\n"
        "local /srv/my docs exclude=drafts/**,**/_*.md  # a folder with a space\n"
        "hero https://x/docs_hero.git enrich=yes collections=/docs/collections/\n"
        "manual /srv/manual language=PT\n"
    )
    assert read_libraries(settings) == [
        Library(
            "k8s",
            "https://github.com/k/website.git",
            branch="release-1.31",
            include=("content/en/**",),
        ),
        Library("local", "/srv/my docs", exclude=("drafts/**", "**/_*.md")),
        Library("hero", "https://x/docs_hero.git", enrich=True, collections="docs/collections"),
        Library("manual", "/srv/manual", language="pt"),
    ]
    assert read_libraries(settings)[-1].options() == "language=pt"


@pytest.mark.parametrize(
    ("line", "error"),
    [
        (
            "k8s https://x/k.git brnch=main",
            "line 1: unknown option 'brnch' for library 'k8s'. Known options: branch (",
        ),
        ("k8s https://x/k.git branch=a branch=b", "option 'branch' is given twice"),
        ("k8s https://x/k.git branch=--upload-pack=x", "is not a branch or tag name"),
        ("k8s https://x/k.git branch=a..b", "is not a branch or tag name"),
        ("k8s /srv/docs branch=main", "branch= is for git libraries"),
        ("k8s https://x/k.git enrich=maybe", "use enrich=yes or enrich=no"),
        ("k8s https://x/k.git collections=../up", "is not a folder path inside the library"),
        ("k8s https://x/k.git collections=/", "is not a folder path inside the library"),
        ("k8s https://x/k.git language=ja", "use language=auto (each page's own) or one of da, de"),
    ],
)
def test_bad_options_say_what_is_known(settings: Settings, line: str, error: str) -> None:
    path = config_path(settings)
    path.parent.mkdir(parents=True)
    path.write_text(line + "\n")
    with pytest.raises(ConfigError, match=re.escape(error)):
        read_libraries(settings)
