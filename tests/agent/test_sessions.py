"""Sessions in real SQLite and a real PostgreSQL: history, turns, bad ids, a failed save
that writes nothing; each session its owner's (another's is not there, an admin reaches
all), listed by door; a file from before owners migrated with its turns kept; replicas
sharing PostgreSQL continue one another's conversations."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from heron.agent import Sessions
from heron.agent.sessions import LOCAL, Asker, check_session_id, open_sessions, sessions_file
from heron.core.chat import Message
from heron.errors import InputError, NotFound, StoreError
from heron.settings import Settings
from tests.postgres import pg_server, pg_url  # noqa: F401 (fixtures of the PostgreSQL side)

#: ``opened()``: a new ``Sessions`` on the test's database (as another process opens it).
Opener = Callable[[], Sessions]


@pytest.fixture(params=["sqlite", "postgres"])
def opened(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    """Each backend in turn: ``agent.db`` in a home, or a database on a real PostgreSQL
    (``open_sessions`` picks it, as every replica of a deployment does). Every store it
    opens is closed when the test ends (closing twice is harmless), so a PostgreSQL pool
    is never left to the garbage collector."""
    made: list[Sessions] = []

    def open_one() -> Sessions:
        if request.param == "sqlite":
            sessions = Sessions(sessions_file(tmp_path / "agent.db"))
        else:
            url = request.getfixturevalue("pg_url")
            sessions = open_sessions(Settings(home=tmp_path, database_url=url))
        made.append(sessions)
        return sessions

    yield open_one
    for sessions in made:
        sessions.close()


def record(answer: str) -> dict:
    return {"answer": answer, "citations": []}


def test_turns_come_back_in_order_and_history_keeps_the_last(opened: Opener) -> None:
    sessions = opened()
    for i in range(3):
        assert sessions.save("s1", f"question {i}", record(f"answer {i}")) == i + 1
    sessions.save("s2", "other", record("other answer"))
    assert sessions.history("s1", turns=2) == [
        Message("user", "question 1"),
        Message("assistant", "answer 1"),
        Message("user", "question 2"),
        Message("assistant", "answer 2"),
    ]
    turns = sessions.turns("s1")
    assert [t["seq"] for t in turns] == [1, 2, 3]
    assert turns[0]["answer"] == record("answer 0")
    sessions.close()
    assert opened().history("s2") == [
        Message("user", "other"),
        Message("assistant", "other answer"),
    ]


def test_a_failed_save_leaves_the_session_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "agent.db"
    sessions = Sessions(sessions_file(path))
    sessions.save("s1", "first", record("kept"))
    db = sqlite3.connect(path)
    db.execute(
        "CREATE TRIGGER full AFTER INSERT ON turns WHEN NEW.message = 'boom' "
        "BEGIN SELECT RAISE(ABORT, 'disk full'); END"
    )
    db.commit()
    with pytest.raises(StoreError, match="disk full"):
        sessions.save("s1", "boom", record("lost"))
    with pytest.raises(StoreError, match="disk full"):
        sessions.save("s3", "boom", record("lost"))
    assert [t["message"] for t in sessions.turns("s1")] == ["first"]
    # The new session's row went in the same transaction as its turn, and went with it.
    assert db.execute("SELECT id FROM sessions").fetchall() == [("s1",)]
    sessions.save("s1", "again", record("works"))
    assert len(sessions.turns("s1")) == 2


@pytest.mark.parametrize("bad", ["", "../etc", "a b", "x" * 129, "-start"])
def test_bad_session_ids_are_refused(bad: str) -> None:
    with pytest.raises(InputError, match="session id"):
        check_session_id(bad)


def test_a_damaged_session_file_is_one_error_naming_it_and_the_fix(tmp_path: Path) -> None:
    from heron.errors import DatabaseCorrupt

    path = tmp_path / "agent.db"
    path.write_bytes(b"not a database, " * 512)
    with pytest.raises(DatabaseCorrupt, match="session database") as raised:
        Sessions(sessions_file(path))
    assert str(path) in str(raised.value) and "a new one starts" in str(raised.value)


# -- who and where -------------------------------------------------------------------------

ANA = Asker("ana", "page")
BEA = Asker("bea", "page")
ADMIN = Asker("root", "api", admin=True)


def listed(sessions: Sessions, asker: Asker, **options: object) -> list[str]:
    return [s["id"] for s in sessions.recent(asker=asker, **options)]  # type: ignore[arg-type]


def test_a_person_lists_and_reaches_only_their_own_sessions(opened: Opener) -> None:
    sessions = opened()
    sessions.save("ana-page", "q1", record("a1"), asker=ANA)
    sessions.save("ana-api", "q2", record("a2"), asker=Asker("ana", "api"))
    sessions.save("bea-page", "q3", record("a3"), asker=BEA)
    assert listed(sessions, ANA) == ["ana-api", "ana-page"]
    assert listed(sessions, ANA, door="page") == ["ana-page"]
    assert listed(sessions, BEA) == ["bea-page"]
    mine = sessions.recent(asker=ANA, door="page")[0]
    assert (mine["owner"], mine["door"], mine["title"], mine["turns"]) == ("ana", "page", "q1", 1)
    # Another's session is not there for her: not read, continued, renamed nor deleted.
    for act in (
        lambda: sessions.turns("ana-page", asker=BEA),
        lambda: sessions.history("ana-page", asker=BEA),
        lambda: sessions.save("ana-page", "mine now", record("x"), asker=BEA),
        lambda: sessions.rename("ana-page", "mine now", asker=BEA),
        lambda: sessions.amend("ana-page", "a1", {"generated": "x"}, asker=BEA),
    ):
        with pytest.raises(NotFound, match="ana-page"):
            act()
    assert sessions.delete("ana-page", asker=BEA) is False
    assert [t["message"] for t in sessions.turns("ana-page", asker=ANA)] == ["q1"]
    # Continued by its owner through another door, it stays where it was started.
    sessions.save("ana-page", "q4", record("a4"), asker=Asker("ana", "api"))
    assert sessions.recent(asker=ANA, door="page")[0]["turns"] == 2
    # An admin reaches everyone's, and lists them only when it asks for everyone.
    assert listed(sessions, ADMIN) == []
    assert set(listed(sessions, ADMIN, everyone=True)) == {"ana-page", "ana-api", "bea-page"}
    sessions.rename("bea-page", "seen by root", asker=ADMIN)
    with pytest.raises(InputError, match="admin"):
        sessions.recent(asker=ANA, everyone=True)
    assert sessions.delete("bea-page", asker=ADMIN) is True
    assert listed(sessions, BEA) == []


def test_a_session_made_first_is_listed_once_asked_in(tmp_path: Path) -> None:
    sessions = Sessions(sessions_file(tmp_path / "agent.db"))
    made = sessions.create(ANA)
    assert listed(sessions, ANA) == []  # nothing asked yet: no empty item in a sidebar
    with pytest.raises(NotFound):
        sessions.save(made, "taken?", record("no"), asker=BEA)
    sessions.save(made, "first question", record("answer"), asker=ANA)
    assert sessions.recent(asker=ANA, door="page")[0]["id"] == made
    # Empty ones a day old go when their owner makes another; asked-in ones stay.
    db = sqlite3.connect(tmp_path / "agent.db")
    stale = sessions.create(ANA)
    others = sessions.create(BEA)
    db.execute("UPDATE sessions SET created = created - 2 * 86400")
    db.commit()
    sessions.create(ANA)
    ids = {row[0] for row in db.execute("SELECT id FROM sessions")}
    assert made in ids and others in ids and stale not in ids


#: agent.db as Heron wrote it before sessions had owners (schema version 2).
OLD_SCHEMA = """
CREATE TABLE sessions (id TEXT PRIMARY KEY, created REAL NOT NULL, updated REAL NOT NULL,
    context TEXT NOT NULL DEFAULT 'default');
CREATE TABLE turns (session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL, message TEXT NOT NULL, answer TEXT NOT NULL, record TEXT NOT NULL,
    created REAL NOT NULL, PRIMARY KEY (session_id, seq));
CREATE TABLE titles (session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    title TEXT NOT NULL);
INSERT INTO sessions VALUES ('old', 1.0, 2.0, 'default');
INSERT INTO turns VALUES ('old', 1, 'q1', 'a1', '{"answer": "a1"}', 1.0);
INSERT INTO turns VALUES ('old', 2, 'q2', 'a2', '{"answer": "a2"}', 2.0);
INSERT INTO titles VALUES ('old', 'kept title');
PRAGMA user_version = 2;
"""


def test_an_old_file_keeps_its_turns_and_its_sessions_are_an_admins(tmp_path: Path) -> None:
    path = tmp_path / "agent.db"
    old = sqlite3.connect(path)
    old.executescript(OLD_SCHEMA)
    old.close()
    sessions = Sessions(sessions_file(path))
    assert [t["message"] for t in sessions.turns("old", asker=ADMIN)] == ["q1", "q2"]
    # Nobody recorded its owner: on no one's list, not even the machine's user's...
    assert listed(sessions, LOCAL) == [] and listed(sessions, ANA, door="page") == []
    with pytest.raises(NotFound):
        sessions.turns("old", asker=ANA)
    # ...but an admin asking for everyone's finds it whole.
    [found] = sessions.recent(asker=ADMIN, everyone=True)
    assert found == {"id": "old", "title": "kept title", "created": 1.0, "updated": 2.0,
                     "turns": 2, "owner": None, "door": None}  # fmt: skip
    sessions.close()
    version = sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0]
    assert version == 3


# -- replicas ------------------------------------------------------------------------------


def test_replicas_continue_one_conversation(pg_url: str, tmp_path: Path) -> None:  # noqa: F811
    """Two replicas (homes of their own, one database): a conversation started on a goes
    on on b with its first turns; turns saved at once from both are numbered without a
    gap or a clash; the owner's rule holds on either; new ids never collide."""
    a = open_sessions(Settings(home=tmp_path / "a", database_url=pg_url))
    b = open_sessions(Settings(home=tmp_path / "b", database_url=pg_url))
    made = a.create(ANA)
    a.save(made, "where do we deploy?", record("to the blue pool"), asker=ANA)
    assert b.history(made, asker=ANA) == [
        Message("user", "where do we deploy?"),
        Message("assistant", "to the blue pool"),
    ]
    with pytest.raises(NotFound):
        b.turns(made, asker=BEA)

    def save(side: Sessions, n: int) -> None:
        side.save(made, f"follow-up {n}", record(f"answer {n}"), asker=ANA)

    threads = [threading.Thread(target=save, args=((a, b)[n % 2], n)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    turns = a.turns(made, asker=ANA)
    assert [t["seq"] for t in turns] == list(range(1, 10))
    assert {t["message"] for t in turns[1:]} == {f"follow-up {n}" for n in range(8)}
    assert len({a.create(ANA) for _ in range(20)} | {b.create(ANA) for _ in range(20)}) == 40
    assert b.recent(asker=ANA, door="page")[0]["turns"] == 9
    a.close()
    b.close()
