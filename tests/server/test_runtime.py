"""``Runtime`` holds one store, one embedder and (on PostgreSQL) one pool, migrated once:
the skill index, the toolbox and the agent are handed that store, not a second one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import heron.db.postgres
import heron.store
import heron.store.postgres
from heron.db.postgres import PostgresDatabase
from heron.embed import Embedder
from heron.errors import StoreError
from heron.server.http.auth import guard
from heron.server.runtime import Runtime
from heron.settings import Settings
from heron.store.sql import SQLStore
from tests.postgres import pg_server, pg_url  # noqa: F401


class Opened:
    """Counts what the runtime opens, while the real functions do the opening."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.stores = 0
        self.embedders: list[Embedder] = []
        self.closed_embedders = 0
        self.pools = 0
        self.migrations: list[str] = []  # each migrated component's table
        self._spy(monkeypatch)

    def _spy(self, monkeypatch: pytest.MonkeyPatch) -> None:
        real_init = SQLStore.__init__
        real_load = heron.store.load_embedder
        real_pool = heron.db.postgres.open_pool
        real_migrate = heron.db.postgres.migrate

        def init(store: SQLStore, embedder: Embedder) -> None:
            self.stores += 1
            real_init(store, embedder)

        def load(settings: Settings | None = None) -> Embedder:
            embedder = real_load(settings)
            self.embedders.append(embedder)
            close = embedder.close

            def counted() -> None:
                self.closed_embedders += 1
                close()

            embedder.close = counted  # type: ignore[method-assign]
            return embedder

        def pool(*args: Any, **kwargs: Any) -> Any:
            self.pools += kwargs["name"] == "heron-store"
            return real_pool(*args, **kwargs)

        def migrate(conn: Any, migrations: Any, table: str) -> Any:
            self.migrations.append(table)
            return real_migrate(conn, migrations, table)

        monkeypatch.setattr(SQLStore, "__init__", init)
        monkeypatch.setattr(heron.store, "load_embedder", load)
        monkeypatch.setattr(heron.db.postgres, "open_pool", pool)
        monkeypatch.setattr(heron.db.postgres, "migrate", migrate)


@pytest.fixture
def opened(home: Path, monkeypatch: pytest.MonkeyPatch) -> Opened:
    return Opened(monkeypatch)


def open_everything(runtime: Runtime) -> None:
    """Open every part the runtime has, each on the runtime's one store."""
    runtime.start()
    skills, toolbox, agent = runtime.skills, runtime.toolbox, runtime.agent
    assert skills.store is runtime.store
    assert toolbox.store is runtime.store
    assert agent.store is runtime.store and agent.skills is skills and agent.toolbox is toolbox
    skills.status()  # the skill index reads the shared store


def test_on_sqlite_the_runtime_opens_one_store_and_one_embedder(opened: Opened) -> None:
    runtime = Runtime(Settings())
    open_everything(runtime)
    assert opened.stores == 1
    assert len(opened.embedders) == 1
    assert runtime.store.embedder is opened.embedders[0]
    runtime.close()
    # open_store loaded that embedder for the store it returned: closing the store
    # closes it, once.
    assert opened.closed_embedders == 1


def test_on_postgres_the_runtime_opens_one_pool_and_migrates_once(
    opened: Opened,
    pg_url: str,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HERON_DATABASE_URL", pg_url)
    runtime = Runtime(Settings())
    open_everything(runtime)
    assert isinstance(runtime.store, heron.store.postgres.PostgresStore)
    assert (opened.stores, opened.pools) == (1, 1)
    # Each component on the database (store, sessions, tools, cooldowns ...) migrated once.
    assert "heron_migrations" in opened.migrations
    assert len(opened.migrations) == len(set(opened.migrations)), opened.migrations
    assert len(opened.embedders) == 1
    runtime.close()
    assert opened.closed_embedders == 1


def test_the_runtime_holds_one_job_store_that_the_agent_shares(
    opened: Opened, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from heron.jobs.sql import SQLJobStore

    made: list[SQLJobStore] = []
    real = SQLJobStore.__init__

    def init(store: SQLJobStore, *args: Any, **kwargs: Any) -> None:
        made.append(store)
        real(store, *args, **kwargs)

    monkeypatch.setattr(SQLJobStore, "__init__", init)
    runtime = Runtime(Settings(tools={"root": tmp_path}))
    open_everything(runtime)  # with a workspace, the agent gets delegate_job
    queued = runtime.agent.toolbox.registry.call("delegate_job", {"prompt": "is main broken?"})
    assert runtime.jobs.get(queued["id"]).state == "queued"
    assert made == [runtime.jobs.store]  # the agent's tool and the server share one
    runtime.close()


def test_closing_the_runtime_closes_what_the_features_kept(
    pg_url: str,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The auth guard (made on a request's first credential check) holds two PostgreSQL
    pools, the sign-ins and the throttle's windows; nothing closed them when the server
    stopped, and each was left to the garbage collector."""
    made: list[PostgresDatabase] = []
    real = PostgresDatabase.__init__

    def init(database: PostgresDatabase, *args: Any, **kwargs: Any) -> None:
        made.append(database)
        real(database, *args, **kwargs)

    monkeypatch.setattr(PostgresDatabase, "__init__", init)
    monkeypatch.setenv("HERON_DATABASE_URL", pg_url)
    monkeypatch.setenv("HERON_API_TOKEN", "a token long enough for the replicas to share")
    runtime = Runtime(Settings())
    guard(runtime)
    assert len(made) == 2  # the sign-ins and the windows
    runtime.close()
    for database in made:
        with pytest.raises(StoreError, match="was closed"), database.connection():
            pass
