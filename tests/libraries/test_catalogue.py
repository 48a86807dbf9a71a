"""The library catalogue on each backend (issue 47): files on one machine, one list in
PostgreSQL for every replica (``heron.libraries.catalogue``), each with a home of its own."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
import pytest

from heron.errors import InputError
from heron.libraries.config import (
    NameTaken,
    add_library,
    get_library,
    read_libraries,
    remove_library,
)
from heron.settings import Settings
from tests.postgres import pg_server, pg_url  # noqa: F401 (fixtures of the PostgreSQL side)


@pytest.fixture(params=["files", "postgres"])
def replica(request: pytest.FixtureRequest, tmp_path: Path, home: Path) -> Settings:
    """One replica's settings: its own home; on ``postgres``, the test's database."""
    url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    return Settings(home=tmp_path / "a", database_url=url, library={"default_docs": False})


def other(replica: Settings, tmp_path: Path) -> Settings:
    """A second replica beside ``replica``: the same database, another home."""
    return replica.model_copy(update={"home": tmp_path / "b"})


def test_add_options_list_remove(replica: Settings, tmp_path: Path) -> None:
    add_library(
        "k8s",
        "https://example.com/k8s.git",
        replica,
        branch="main",
        include=["content/en/**"],
        enrich=True,
    )
    library = get_library("k8s", replica)
    assert (library.branch, library.include, library.enrich) == ("main", ("content/en/**",), True)
    with pytest.raises(InputError, match="exists"):
        add_library("k8s", "https://example.com/other.git", replica)
    assert remove_library("k8s", replica).name == "k8s"
    assert read_libraries(replica) == []


def test_racing_adds_of_one_name_have_one_winner(replica: Settings, tmp_path: Path) -> None:
    """Eight adds of one name at once (two replicas' worth on PostgreSQL): one lands."""
    sides = [replica, other(replica, tmp_path)] if replica.postgres_url else [replica]

    def add(n: int) -> str:
        try:
            add_library("team", f"https://example.com/{n}.git", sides[n % len(sides)])
        except InputError as exc:
            return str(exc)
        return "added"

    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(add, range(8)))
    assert outcomes.count("added") == 1, outcomes
    assert [lib.name for lib in read_libraries(replica)] == ["team"]


def test_replicas_share_one_catalogue(pg_url: str, tmp_path: Path) -> None:  # noqa: F811
    """Homes of their own, one database: a library added on a is b's, b's removal is a's,
    and a's own libraries.txt stands for the list until the first change writes it."""
    a = Settings(home=tmp_path / "a", database_url=pg_url, library={"default_docs": False})
    b = a.model_copy(update={"home": tmp_path / "b"})
    a.home.mkdir()
    (a.home / "libraries.txt").write_text("old https://example.com/old.git\n")
    assert [lib.name for lib in read_libraries(a)] == ["old"]
    assert read_libraries(b) == []  # nothing in the database yet
    add_library("teamdocs", "https://example.com/team.git", a, include=["docs/**"])
    assert [lib.name for lib in read_libraries(b)] == ["old", "teamdocs"]
    assert get_library("teamdocs", b).include == ("docs/**",)
    remove_library("old", b)
    (a.home / "libraries.txt").write_text("stale https://example.com/x.git\n")
    assert [lib.name for lib in read_libraries(a)] == ["teamdocs"]  # the database's list
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute("SELECT key, body FROM heron_library_lists").fetchall()
    assert rows == [("libraries.txt", "teamdocs https://example.com/team.git include=docs/**\n")]


def test_a_name_stays_one_contexts_across_replicas(pg_url: str, tmp_path: Path) -> None:  # noqa: F811
    """A context's own list is keyed by its path in heron.toml: another context's
    replica cannot take a name it holds (issue 45's rule, kept across replicas)."""
    alpha_list = tmp_path / "alpha-libraries.txt"
    a = Settings(
        home=tmp_path / "a",
        database_url=pg_url,
        library={"default_docs": False},
        contexts={"alpha": {"libraries_file": str(alpha_list)}},
    )
    alpha = a.in_context("alpha")
    add_library("alpha-docs", "https://example.com/alpha.git", alpha)
    assert not alpha_list.exists()  # the list is the database's
    b = a.model_copy(update={"home": tmp_path / "b"})
    with pytest.raises(NameTaken, match="taken by another context"):
        add_library("alpha-docs", "https://example.com/mine.git", b)
    assert [lib.name for lib in read_libraries(b.in_context("alpha"))] == ["alpha-docs"]
    assert read_libraries(b) == []
