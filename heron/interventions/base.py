"""``InterventionStore``: where interventions, their deliveries and outcomes live.

This Protocol is the specification; ``heron.interventions.sql.SQLInterventionStore`` is
its one implementation in SQL, over either of ``heron.db``'s databases (SQLite,
PostgreSQL). The tests of ``tests/interventions/test_contract.py`` hold every backend to
it.

Promises every method keeps (each method's docstring adds its own):

- **One call, one transaction.** A call that raises has written nothing.
- **The decision is the database's.** ``raise_`` reads the room's cooldown and the key's
  active intervention, decides (``heron.interventions.guard.decide``) and writes the
  intervention in one write transaction that holds the room: on PostgreSQL its row in
  the rooms table is locked (``FOR UPDATE``), on SQLite the whole file is
  (``BEGIN IMMEDIATE``). However many threads, processes or servers raise the same
  condition at once, exactly one is ``delivered`` and every other is counted as
  suppressed: none is lost, none is sent twice.
- **Delivered conditions are stored** with their words; **suppressed ones are counted**
  (per room, key and reason: how many, and when the last came), not stored one row a
  raise, so that ``stats`` counts what was held back and a storm costs one row a key.
  A suppressed raise answers with id 0.
- **Bounded by retention.** ``prune`` removes what is older than a time, and what lies
  beyond the newest ``keep_per_room`` of each room (its deliveries and guard with it).
- **Contexts.** A room is named by its context and its name (``Condition.context``, the
  ``context`` arguments): a room of one context shares nothing with the room of that
  name in another (cooldown, guard, learning, cards). Reads given no context read
  every context's.
- **Ids** are integers that grow in the order of the transactions that hold a room, so a
  stream of one room's cards resumes after the last id it gave (``cards``).
- **Threads and processes.** One store may be shared by the threads of a process; any
  number of stores may open one database at once.
- **Errors.** An unknown id, an unknown room, or a key with nothing active raises
  ``heron.errors.NotFound`` naming what to list; an outcome that cannot be given (twice,
  or for an intervention that was never shown) ``heron.errors.InputError``. Everything
  the database reports becomes a ``StoreError`` naming the database and what to do.
- **Times** are Unix seconds (``time.time()`` of the writing process).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from heron.core.contexts import DEFAULT
from heron.interventions.learn import Learning
from heron.interventions.model import (
    Condition,
    Delivery,
    Intervention,
    KindStats,
    Learned,
    Member,
    Outcome,
    PolicyChange,
    Pruned,
    Rendered,
)


class InterventionStore(Protocol):
    def raise_(
        self,
        condition: Condition,
        render: Callable[[int], Rendered],
        *,
        cooldown: float,
        learning: Learning | None = None,
    ) -> Intervention:
        """Store ``condition`` as an intervention, decided as ``guard.decide`` says.

        ``render(seen_before)`` is called once inside the transaction, for a delivered
        one, with the number of interventions of this key delivered in this room before,
        and gives its words. A delivered one becomes the key's active intervention and,
        when ``cooldown`` is above 0, starts the room's cooldown (0: a kind exempt from
        it). With ``learning`` (a kind that learns), the kind's learned step in the room
        multiplies the cooldown (``Learning.cooldown``) and is recorded as the
        intervention's ``step``. ``condition`` is stored as given
        (``Interventions.raise_`` checks, trims and redacts it first).
        """
        ...

    def resolve(self, room: str, key: str, *, context: str = DEFAULT) -> Intervention:
        """End the active intervention of ``key`` in ``room`` (of ``context``): it gets
        ``resolved_at``, the key is re-armed, and if it started the room's cooldown the
        cooldown ends.
        Returns it. ``NotFound`` for a room with no interventions, or a key with none
        active there."""
        ...

    def deliver(
        self, intervention_id: int, delivery: Delivery, *, audio_url: str | None = None
    ) -> None:
        """Record one channel's outcome (and the audio's URL when given). ``NotFound``
        for an unknown id."""
        ...

    def outcome(
        self,
        intervention_id: int,
        outcome: Outcome,
        by: str,
        *,
        learning: Learning | None = None,
    ) -> Intervention:
        """Record what the person did with a delivered intervention, once, with who and
        when. ``NotFound`` for an unknown id; ``InputError`` when it already has an
        outcome (naming it) or was never delivered. With ``learning``, the outcome counts
        in its kind's block in its room, and a full block is decided in the same
        transaction (``heron.interventions.learn``), a change recorded with its reason."""
        ...

    def reset(self, room: str, kind: str, by: str, *, context: str = DEFAULT) -> Learned:
        """Put ``kind`` in ``room`` back at its policy (step 0, a new block), recorded as
        a change by ``by`` when it had moved. ``NotFound`` when nothing was learned."""
        ...

    def learned(self, room: str | None = None, *, context: str | None = None) -> list[Learned]:
        """Each kind's learned state per room (only ``room``'s, ``context``'s when given)."""
        ...

    def changes(
        self, room: str | None = None, limit: int = 100, *, context: str | None = None
    ) -> list[PolicyChange]:
        """The policy changes, newest first (only ``room``'s, ``context``'s when given)."""
        ...

    def prune(
        self, *, before: float, keep_per_room: int, keep_total: int | None = None
    ) -> tuple[Pruned, list[str]]:
        """Remove interventions created before ``before``, beyond the newest
        ``keep_per_room`` of their room or beyond the newest ``keep_total`` of all
        (default: 100 rooms' worth), active ones too (their guard goes with them);
        suppressed counts and policy changes by the same rules; and rooms and learning
        nothing is left of. Returns the counts and the removed ones' audio URLs."""
        ...

    def get_many(self, ids: list[int]) -> list[Intervention]:
        """Those of ``ids`` that exist (without deliveries), by id: where a stream's
        open cards stand now."""
        ...

    def get(self, intervention_id: int) -> Intervention:
        """One intervention with its deliveries. ``NotFound`` if there is none."""
        ...

    def list(
        self,
        room: str | None = None,
        *,
        limit: int = 100,
        active_only: bool = False,
        context: str | None = None,
    ) -> list[Intervention]:
        """At most ``limit``, newest first (by id); only ``room``'s and ``context``'s when
        given; only the active ones (delivered, not resolved) with ``active_only``."""
        ...

    def cards(
        self, room: str, after: int = 0, limit: int = 1000, *, context: str = DEFAULT
    ) -> list[Intervention]:
        """The delivered interventions of ``room`` (of ``context``) with ``id > after``,
        oldest first: what a stream resuming after ``after`` replays."""
        ...

    def join(self, member: Member, *, context: str = DEFAULT) -> Member:
        """Put ``member`` in its room's roster (in place of that person's entry there)."""
        ...

    def leave(self, room: str, person: str, *, context: str = DEFAULT) -> bool:
        """Take ``person`` out of ``room``'s roster; whether they were in it."""
        ...

    def roster(self, room: str, *, context: str = DEFAULT) -> list[Member]:
        """The people of ``room``, by name."""
        ...

    def stats(self, *, context: str | None = None) -> list[KindStats]:
        """Per kind (sorted by name), of ``context`` when given: raised, delivered,
        suppressed by cooldown and by the guard, accepted and dismissed. SQL aggregates
        over an index."""
        ...

    def close(self) -> None:
        """Release the connection or pool; idempotent. Afterwards every other method
        raises ``StoreError``."""
        ...
