"""Interventions tests: ``stores`` on each database of the jobs tests' ``backend`` (a
SQLite file, a database on a real PostgreSQL) for the contract tests, and ``service``: an
``Interventions`` on a fresh SQLite store with no alert channel and espeak-ng as its
voice, in a fresh HERON_HOME."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from heron.interventions import (
    INTERVENTIONS,
    Interventions,
    InterventionStore,
    SQLInterventionStore,
    open_interventions,
)
from heron.settings import Settings
from tests.jobs import conftest as jobs_tests
from tests.jobs.conftest import configured, serve, workspace  # noqa: F401 (a real heron serve)
from tests.postgres import pg_server, pg_url  # noqa: F401 (fixtures of the PostgreSQL side)

#: The jobs tests' databases, each in turn: a SQLite file, a database on a real PostgreSQL.
backend = jobs_tests.backend

#: The facts a collision needs.
COLLISION = {"actors": ["alice", "bob"], "file": "README.md", "state": "unpushed"}


def open_store(backend: jobs_tests.Backend) -> InterventionStore:
    """A new store on ``backend``'s database, as another process or server would open it."""
    return SQLInterventionStore(backend.database(INTERVENTIONS))


@pytest.fixture
def stores(backend: jobs_tests.Backend) -> Iterator[Callable[[], InterventionStore]]:
    """Open stores on ``backend``; each is closed at the end of the test."""
    opened: list[InterventionStore] = []

    def open_() -> InterventionStore:
        opened.append(open_store(backend))
        return opened[-1]

    yield open_
    for store in opened:
        store.close()


@pytest.fixture
def settings(home: Path) -> Settings:
    return Settings()


@pytest.fixture
def make_service(settings: Settings) -> Iterator[Callable[..., Interventions]]:
    """``make_service(**settings_or_options)``: an ``Interventions`` closed at the end."""
    made: list[Interventions] = []

    def make(**values: Any) -> Interventions:
        options = {k: values.pop(k) for k in ("channels", "voice", "policy") if k in values}
        made.append(open_interventions(Settings(**values), **options))
        return made[-1]

    yield make
    for service in made:
        service.close()


@pytest.fixture
def service(make_service: Callable[..., Interventions]) -> Interventions:
    return make_service()
