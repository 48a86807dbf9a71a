"""``InterventionStore`` on PostgreSQL: one history, one guard, for every server.

``raise_`` locks the room's row (``SELECT ... FOR UPDATE``) before it reads the cooldown
and the key's guard, so servers raising the same condition at once take turns on that
room, and exactly one of them sends it; rooms do not wait on one another.
"""

from __future__ import annotations

from heron.interventions.sql import Dialect, SQLInterventionStore
from heron.store.database import PostgresDatabase

DIALECT = Dialect(param="%s", prefix="heron_", lock_row=" FOR UPDATE", backend="postgresql")
#: Applied in order, each once, recorded by number in ``heron_intervention_migrations``.
MIGRATIONS: tuple[str, ...] = (DIALECT.schema(),)


class PostgresInterventionStore(SQLInterventionStore):
    """Interventions in PostgreSQL; safe to share between threads, processes and servers."""

    dialect = DIALECT

    def __init__(self, url: str, *, pool_size: int = 4, timeout: float = 30) -> None:
        database = PostgresDatabase(
            url,
            "intervention",
            MIGRATIONS,
            advice="then raise the condition again (nothing was written)",
            pool_size=pool_size,
            timeout=timeout,
        )
        self.where = database.where
        super().__init__(database, database.what)
