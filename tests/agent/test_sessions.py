"""Sessions in real SQLite: history, turns, bad ids, and a failed save that writes nothing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from heron.agent import Sessions
from heron.agent.sessions import check_session_id
from heron.core.chat import Message
from heron.errors import InputError, StoreError


def record(answer: str) -> dict:
    return {"answer": answer, "citations": []}


def test_turns_come_back_in_order_and_history_keeps_the_last(tmp_path: Path) -> None:
    sessions = Sessions(tmp_path / "agent.db")
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
    assert Sessions(tmp_path / "agent.db").history("s2") == [
        Message("user", "other"),
        Message("assistant", "other answer"),
    ]


def test_a_failed_save_leaves_the_session_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "agent.db"
    sessions = Sessions(path)
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
        Sessions(path)
    assert str(path) in str(raised.value) and "a new one starts" in str(raised.value)
