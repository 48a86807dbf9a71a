"""``InterventionStore`` on PostgreSQL: one history, one guard, for every server.

``raise_`` locks the room's row (``SELECT ... FOR UPDATE``) before it reads the cooldown
and the key's guard, so servers raising the same condition at once take turns on that
room, and exactly one of them sends it; rooms do not wait on one another.
"""

from __future__ import annotations

from heron.interventions.sql import Dialect, SQLInterventionStore
from heron.store.database import PostgresDatabase

MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE heron_interventions (
        id bigserial PRIMARY KEY,
        kind text NOT NULL,
        key text NOT NULL,
        room text NOT NULL,
        severity text NOT NULL CHECK (severity IN ('info', 'warning', 'critical')),
        facts text NOT NULL,
        actor text NOT NULL DEFAULT '',
        status text NOT NULL
            CHECK (status IN ('delivered', 'suppressed_cooldown', 'suppressed_guard')),
        text text NOT NULL,
        spoken text NOT NULL,
        actions text NOT NULL,
        seen_before integer NOT NULL,
        created_at double precision NOT NULL,
        resolved_at double precision,
        audio_url text,
        outcome text CHECK (outcome IN ('accept', 'dismiss')),
        outcome_by text,
        outcome_at double precision
    );
    CREATE INDEX heron_interventions_by_room ON heron_interventions (room, status, id);
    CREATE INDEX heron_interventions_by_key ON heron_interventions (room, key, status);
    CREATE INDEX heron_interventions_by_kind ON heron_interventions (kind, status, outcome);
    CREATE TABLE heron_intervention_deliveries (
        id bigserial PRIMARY KEY,
        intervention_id bigint NOT NULL
            REFERENCES heron_interventions (id) ON DELETE CASCADE,
        channel text NOT NULL,
        target text NOT NULL,
        ok boolean NOT NULL,
        attempts integer NOT NULL,
        error text,
        at double precision NOT NULL
    );
    CREATE INDEX heron_intervention_deliveries_of
        ON heron_intervention_deliveries (intervention_id);
    CREATE TABLE heron_intervention_rooms (
        room text PRIMARY KEY,
        last_id bigint,
        last_delivered_at double precision,
        last_severity text
    );
    CREATE TABLE heron_intervention_active (
        room text NOT NULL,
        key text NOT NULL,
        intervention_id bigint NOT NULL REFERENCES heron_interventions (id),
        PRIMARY KEY (room, key)
    );
    """,
)


class PostgresInterventionStore(SQLInterventionStore):
    """Interventions in PostgreSQL; safe to share between threads, processes and servers."""

    dialect = Dialect(param="%s", prefix="heron_", lock_row=" FOR UPDATE")

    def __init__(self, url: str, *, pool_size: int = 4, timeout: float = 30) -> None:
        database = PostgresDatabase(
            url,
            what="the intervention store",
            advice="then raise the condition again (nothing was written)",
            name="heron-interventions",
            migrations=MIGRATIONS,
            table="heron_intervention_migrations",
            pool_size=pool_size,
            timeout=timeout,
        )
        self.where = database.where
        super().__init__(database, f"the intervention store at {self.where}")
