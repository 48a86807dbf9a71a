"""The ``InterventionStore`` contract (``heron/interventions/base.py``), on every backend.

Each test runs once per backend of the ``backend`` fixture: a SQLite file and a database
on a real PostgreSQL. The storm tests open two stores on one database (two pools, or two
connections, with no Python lock in common), as two server processes would.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from heron.errors import InputError, NotFound, StoreError
from heron.interventions import Condition, Delivery, InterventionStore, Rendered
from heron.interventions.learn import Learning

COOLDOWN = 180.0


def words(seen: int) -> Rendered:
    return Rendered(f"text ({seen} before)", f"spoken ({seen} before)")


def condition(
    key: str = "collision:README.md", room: str = "team", severity: str = "warning"
) -> Condition:
    return Condition("collision", key, room, severity, {"file": "README.md"}, "alice")  # type: ignore[arg-type]


def test_guard_cooldown_resolve_and_seen_before(stores: Callable[[], InterventionStore]) -> None:
    store = stores()
    first = store.raise_(condition(), words, cooldown=COOLDOWN)
    assert (first.status, first.seen_before, first.text) == ("delivered", 0, "text (0 before)")
    assert first.facts == {"file": "README.md"} and first.actor == "alice"
    again = store.raise_(condition(), words, cooldown=COOLDOWN)
    assert again.status == "suppressed_guard" and again.id == 0  # counted, not stored
    other = store.raise_(condition("collision:app.py"), words, cooldown=COOLDOWN)
    assert other.status == "suppressed_cooldown"  # the room was just told something
    elsewhere = store.raise_(condition(room="other-team"), words, cooldown=COOLDOWN)
    assert elsewhere.status == "delivered"  # rooms do not share a cooldown
    assert [i.id for i in store.list("team", active_only=True)] == [first.id]

    resolved = store.resolve("team", "collision:README.md")
    assert resolved.id == first.id and resolved.resolved_at is not None
    assert store.list("team", active_only=True) == []
    back = store.raise_(condition(), words, cooldown=COOLDOWN)  # re-armed, cooldown lifted
    assert (back.status, back.seen_before, back.text) == ("delivered", 1, "text (1 before)")
    # A kind exempt from the cooldown (cooldown 0) goes out in a cooling room and starts none.
    exempt = store.raise_(condition("job_waiting:1"), words, cooldown=0)
    assert exempt.status == "delivered"
    assert store.raise_(condition("x"), words, cooldown=COOLDOWN).status == "suppressed_cooldown"
    # More severe than what started the cooldown: not held back by it, and it restarts it.
    escalated = store.raise_(condition("y", severity="critical"), words, cooldown=COOLDOWN)
    assert escalated.status == "delivered"
    assert store.raise_(condition("z", severity="critical"), words, cooldown=COOLDOWN).status == (
        "suppressed_cooldown"
    )

    with pytest.raises(NotFound, match="No interventions in room 'nowhere'"):
        store.resolve("nowhere", "collision:README.md")
    with pytest.raises(NotFound, match=r"Nothing is active for 'collision:app\.py'"):
        store.resolve("team", "collision:app.py")
    assert [i.id for i in store.list(limit=3)] == sorted(
        (i.id for i in store.list()), reverse=True
    )[:3]


def test_outcome_is_given_once_with_who_and_when(stores: Callable[[], InterventionStore]) -> None:
    store = stores()
    sent = store.raise_(condition(), words, cooldown=COOLDOWN)
    held = store.raise_(condition(), words, cooldown=COOLDOWN)
    before = time.time()
    done = store.outcome(sent.id, "accept", "alice")
    assert (done.outcome, done.outcome_by) == ("accept", "alice")
    assert done.outcome_at is not None and done.outcome_at >= before - 1
    with pytest.raises(InputError, match="already has its outcome: accept by alice"):
        store.outcome(sent.id, "dismiss", "bob")
    assert held.id == 0  # a suppressed raise is counted, not stored: nothing to decide
    with pytest.raises(NotFound, match="No intervention 999999"):
        store.outcome(999_999, "accept", "bob")
    with pytest.raises(NotFound):
        store.get(999_999)
    assert store.get(sent.id).outcome == "accept"


def test_deliveries_and_audio_are_recorded(stores: Callable[[], InterventionStore]) -> None:
    store = stores()
    sent = store.raise_(condition(), words, cooldown=COOLDOWN)
    store.deliver(sent.id, Delivery("card", "room:team", True))
    store.deliver(sent.id, Delivery("voice", "1.wav", True), audio_url="/interventions/audio/1.wav")
    store.deliver(sent.id, Delivery("message", "json://127.0.0.1/", False, 3, "refused"))
    got = store.get(sent.id)
    assert [(d.channel, d.ok, d.attempts) for d in got.deliveries] == [
        ("card", True, 1),
        ("voice", True, 1),
        ("message", False, 3),
    ]
    assert got.audio_url == "/interventions/audio/1.wav" and got.deliveries[2].error == "refused"
    assert store.list()[0].deliveries == got.deliveries
    with pytest.raises(NotFound):
        store.deliver(999_999, Delivery("card", "room:team", True))


def test_cards_replay_a_room_in_id_order(stores: Callable[[], InterventionStore]) -> None:
    store = stores()
    ids = [store.raise_(condition(f"k{i}"), words, cooldown=0).id for i in range(5)]
    store.raise_(condition("k0"), words, cooldown=0)  # suppressed: no card
    store.raise_(condition("k9", room="other"), words, cooldown=0)
    assert [c.id for c in store.cards("team")] == ids
    assert [c.id for c in store.cards("team", after=ids[1])] == ids[2:]
    assert [c.id for c in store.cards("team", after=ids[1], limit=2)] == ids[2:4]


def test_a_storm_from_two_stores_and_20_threads_sends_exactly_one(
    stores: Callable[[], InterventionStore],
) -> None:
    pair = [stores(), stores()]  # as two server processes on one database

    def raise_one(n: int) -> str:
        return pair[n % 2].raise_(condition(), words, cooldown=COOLDOWN).status

    with ThreadPoolExecutor(20) as pool:
        statuses = Counter(pool.map(raise_one, range(1000)))
    assert statuses == {"delivered": 1, "suppressed_guard": 999}
    assert len(pair[1].list(limit=2000)) == 1  # the one sent; the others are counted
    stats = {s.kind: s for s in pair[0].stats()}["collision"]  # none lost
    assert (stats.raised, stats.delivered, stats.suppressed_guard) == (1000, 1, 999)
    pair[1].resolve("team", "collision:README.md")
    assert pair[0].raise_(condition(), words, cooldown=COOLDOWN).status == "delivered"


def test_stats_count_per_kind(stores: Callable[[], InterventionStore]) -> None:
    store = stores()
    a = store.raise_(condition(), words, cooldown=COOLDOWN)
    store.raise_(condition(), words, cooldown=COOLDOWN)
    store.raise_(condition("b"), words, cooldown=COOLDOWN)
    notice = Condition("notice", "n", "elsewhere", "info", {"message": "hi"})
    n = store.raise_(notice, words, cooldown=COOLDOWN)
    store.outcome(a.id, "accept", "alice")
    store.outcome(n.id, "dismiss", "bob")
    got = {s.kind: s.to_dict() for s in store.stats()}
    assert got["collision"] | {} == {
        "kind": "collision",
        "raised": 3,
        "delivered": 1,
        "suppressed_cooldown": 1,
        "suppressed_guard": 1,
        "accepted": 1,
        "dismissed": 0,
        "accept_rate": 1.0,
        "dismiss_rate": 0.0,
    }
    assert got["notice"]["dismiss_rate"] == 1.0 and list(got) == ["collision", "notice"]


def test_a_closed_store_refuses_use(stores: Callable[[], InterventionStore]) -> None:
    store = stores()
    store.close()
    store.close()  # idempotent
    with pytest.raises(StoreError, match="was closed"):
        store.list()


def test_learning_moves_a_kind_in_its_room_in_the_outcomes_transaction(
    stores: Callable[[], InterventionStore],
) -> None:
    store, rule = stores(), Learning(outcomes=2, dismiss_rate=0.8, accept_rate=0.5)
    with pytest.raises(NotFound, match="Nothing was learned for 'collision'"):
        store.reset("team", "collision", "ops")
    for key in ("a", "b"):
        sent = store.raise_(condition(key), words, cooldown=COOLDOWN, learning=rule)
        store.outcome(sent.id, "dismiss", "bob", learning=rule)
        store.resolve("team", key)
    (learned,) = store.learned()
    assert (learned.room, learned.kind, learned.step) == ("team", "collision", 1)
    stepped = store.raise_(condition("c"), words, cooldown=COOLDOWN, learning=rule)
    assert stepped.step == 1 and store.get(stepped.id).step == 1
    (change,) = store.changes("team")
    assert (change.from_step, change.to_step, change.by) == (0, 1, "learning")
    assert store.reset("team", "collision", "ops").step == 0
    assert [c.by for c in store.changes()] == ["ops", "learning"]


def test_prune_keeps_the_newest_of_each_room_and_nothing_older(
    stores: Callable[[], InterventionStore],
) -> None:
    store = stores()
    kept = [store.raise_(condition(f"k{i}"), words, cooldown=0).id for i in range(6)]
    store.raise_(condition("k5"), words, cooldown=0)  # counted as suppressed
    store.raise_(condition("o", room="other"), words, cooldown=0)
    store.deliver(kept[0], Delivery("voice", "1.wav", True), audio_url="/interventions/audio/1.wav")
    pruned, audio = store.prune(before=0.0, keep_per_room=4)
    assert (pruned.interventions, pruned.suppressed, audio) == (
        2,
        0,
        ["/interventions/audio/1.wav"],
    )
    assert [i.id for i in store.list("team")] == kept[:1:-1]
    assert store.raise_(condition("k0"), words, cooldown=0).status == "delivered"  # re-armed
    pruned, _ = store.prune(before=time.time() + 1, keep_per_room=4)
    assert (pruned.interventions, pruned.suppressed) == (6, 1) and store.list() == []
