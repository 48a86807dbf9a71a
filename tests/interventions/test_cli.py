"""The real ``heron interventions`` command: raise, resolve, outcome, list, stats."""

from __future__ import annotations

import json
from pathlib import Path

from tests.run_heron import run_heron


def heron(*args: str, ok: bool = True) -> object:
    done = run_heron("interventions", *args, ok=ok)
    return done if not ok else json.loads(done.stdout) if "--json" in args else done.stdout


def test_raise_resolve_outcome_list_stats(home: Path) -> None:
    facts = json.dumps({"actors": ["alice", "bob"], "file": "app.py", "state": "uncommitted"})
    sent = heron(
        "raise", "collision", "collision:app.py", "--room", "team", "--facts", facts, "--json"
    )
    assert sent["status"] == "delivered" and sent["actor"]  # type: ignore[index]
    held = heron(
        "raise", "collision", "collision:app.py", "--room", "team", "--facts", facts, "--json"
    )
    assert held["status"] == "suppressed_guard"  # type: ignore[index]
    note = heron("raise", "notice", "n1", "--room", "team", "--fact", "message=Deploying", "--json")
    assert note["status"] == "suppressed_cooldown"  # type: ignore[index]
    assert (
        heron("outcome", str(sent["id"]), "accept", "--by", "alice", "--json")["outcome"]
        == "accept"
    )  # type: ignore[index]
    twice = heron("outcome", str(sent["id"]), "dismiss", ok=False)
    assert twice.returncode == 1 and "already has its outcome" in twice.stderr  # type: ignore[attr-defined]
    assert "Traceback" not in twice.stderr  # type: ignore[attr-defined]
    listed = heron("list", "--room", "team", "--active", "--json")
    assert [i["id"] for i in listed] == [sent["id"]]  # type: ignore[index, union-attr]
    heron("resolve", "collision:app.py", "--room", "team")
    unknown = heron("resolve", "collision:app.py", "--room", "team", ok=False)
    assert "Nothing is active for 'collision:app.py'" in unknown.stderr  # type: ignore[attr-defined]
    stats = {s["kind"]: s for s in heron("stats", "--json")["kinds"]}  # type: ignore[index]
    assert stats["collision"]["raised"] == 2 and stats["collision"]["accept_rate"] == 1.0
    assert stats["notice"]["suppressed_cooldown"] == 1
    assert "collision" in heron("stats")  # type: ignore[operator]
    bad = heron("raise", "collision", "k", "--fact", "file", ok=False)
    assert "--fact takes NAME=VALUE" in bad.stderr  # type: ignore[attr-defined]
