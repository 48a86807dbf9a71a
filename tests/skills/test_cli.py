"""End-to-end: ``heron skills ...`` in a subprocess, on a fresh data directory."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.run_heron import run_heron

SKILLS = {
    "pdf": "---\nname: pdf-tools\ndescription: Fill, merge and split PDF forms.\ntags: [pdf]\n---\n"
    "# PDF tools\n\nUse pdftk.\n",
    "notes": "---\nname: release-notes\ndescription: Turn git commits into release notes.\n---\n",
    "gif": "---\nname: gif-maker\ndescription: Make animated GIFs for chat.\n",  # unclosed
    # an unquoted ': ' in the description
    "creator": "---\nname: skill-creator\ndescription: Create new skills: write a SKILL.md.\n---\n",
}


def heron(*args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    return run_heron("skills", *args, ok=ok)


def heron_json(*args: str) -> Any:
    return json.loads(heron(*args, "--json").stdout)


@pytest.fixture
def dirs(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """Two skill directories (a duplicate name in the second), nothing else searched."""
    first, second = tmp_path / "first", tmp_path / "second"
    for folder, text in SKILLS.items():
        (first / folder).mkdir(parents=True)
        (first / folder / "SKILL.md").write_text(text)
    (first / "broken").mkdir()
    (first / "broken" / "SKILL.md").write_bytes(b"\xff\xfe\x00\x00binary")
    (second / "pdf").mkdir(parents=True)
    (second / "pdf" / "SKILL.md").write_text(SKILLS["pdf"])
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.delenv("HERMES_HOME", raising=False)
    monkeypatch.setenv("HERON_SKILLS_DIRS", os.pathsep.join([str(first), str(second)]))
    return first, second


def test_index_status_search_show_prune(dirs: tuple[Path, Path], home: Path) -> None:
    first, second = dirs
    indexed = heron_json("index")
    assert (indexed["added"], indexed["unchanged"]) == (4, 0)
    assert heron_json("index")["embedded"] == 0

    status = heron_json("status")
    assert [(d["source"], d["exists"]) for d in status["dirs"]] == [
        ("HERON_SKILLS_DIRS", True),
        ("HERON_SKILLS_DIRS", True),
        ("heron", False),
        ("hermes", False),
        ("claude", False),
    ]
    assert (status["files"], status["parsed"], status["skills"]) == (6, 5, 4)
    assert status["failed"] == [
        {
            "path": str(first / "broken" / "SKILL.md"),
            "reason": "is UTF-16; re-encode it: iconv -f utf-16 -t utf-8",
        }
    ]
    assert [(r["name"], r["diagnostics"][0].split(":")[0]) for r in status["recovered"]] == [
        ("skill-creator", "unquoted-colon"),
        ("gif-maker", "unclosed-front-matter"),
    ]
    assert status["shadowed"] == [
        {
            "name": "pdf-tools",
            "kept": str(first / "pdf" / "SKILL.md"),
            "shadowed": str(second / "pdf" / "SKILL.md"),
        }
    ]
    assert status["index"]["records"] == status["index"]["current"] == 4
    human = heron("status").stdout
    assert "failed (1)" in human and "shadowed (1)" in human and "missing" in human

    hits = heron_json("search", "make a new skill", "-k", "2")
    assert [h["name"] for h in hits][:1] == ["skill-creator"]
    assert {"description", "path", "tags", "dense_score", "lexical_score", "score"} <= set(hits[0])
    assert "skill-creator" in heron("search", "make a new skill").stdout

    skill = heron_json("show", "PDF-tools")
    assert (skill["name"], skill["tags"], skill["body"]) == (
        "pdf-tools",
        ["pdf"],
        "# PDF tools\n\nUse pdftk.",
    )
    assert "Use pdftk." in heron("show", "pdf-tools").stdout
    missing = heron("show", "pdf-tool", ok=False)
    assert "Did you mean: pdf-tools" in missing.stderr

    (first / "notes" / "SKILL.md").unlink()
    assert heron_json("status")["index"]["orphans"] == [
        {"name": "release-notes", "path": str(first / "notes" / "SKILL.md")}
    ]
    dry = heron_json("prune")
    assert (dry["applied"], dry["deleted"], len(dry["orphans"])) == (False, 0, 1)
    assert "dry run" in heron("prune").stdout
    done = heron_json("prune", "--apply")
    assert (done["deleted"], done["kept"]) == (1, 3)
    assert heron_json("status")["index"]["orphans"] == []


def test_batch_search_one_line_per_query(dirs: tuple[Path, Path], tmp_path: Path) -> None:
    heron("index")
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": "a", "text": "merge two pdfs"}\n{"id": 2, "text": "changelog"}\n')
    lines = heron("search", "--queries", str(queries), "-k", "1").stdout.splitlines()
    out = [json.loads(line) for line in lines]
    assert [(o["id"], o["results"][0]["name"]) for o in out] == [
        ("a", "pdf-tools"),
        ("2", "release-notes"),
    ]
    assert out[0]["results"][0]["id"] == "pdf-tools"


def test_context_used_and_stats(dirs: tuple[Path, Path]) -> None:
    heron("index")
    context = heron_json("context", "create a new skill")
    assert context["skills"][0]["name"] == "skill-creator"
    assert "skill-creator: Create new skills" in context["text"]
    human = heron("context", "merge pdf files", "--min-rel", "0.99")
    assert human.stdout.count("\n- ") == 1 and "heron skills used 2" in human.stderr
    assert heron_json("used", str(context["query_id"]), "skill-creator")["rank"] == 1
    assert "rank 1" in heron("used", "2", "pdf-tools").stdout
    stats = {row["kind"]: row for row in heron_json("stats")}
    assert (stats["vague"]["queries"], stats["vague"]["hit_rate"]) == (1, 1.0)
    assert (stats["concrete"]["queries"], stats["concrete"]["top_rate"]) == (1, 1.0)
    assert "hit rate 100%" in heron("stats").stdout


def test_errors_name_the_fix(dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    assert "run: heron skills index" in heron("search", "pdf", ok=False).stderr
    assert "Give either a QUERY or --queries" in heron("search", ok=False).stderr
    assert "No skill query 5" in heron("used", "5", "x", ok=False).stderr
    monkeypatch.setenv("HERON_SKILLS_MIN_REL", "lots")
    done = heron("status", ok=False)
    assert "HERON_SKILLS_MIN_REL" in done.stderr and "Traceback" not in done.stderr
