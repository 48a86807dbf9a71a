"""``heron ask`` and ``heron demo`` through the real command, with the real local model."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from heron.libraries import index_library
from heron.settings import Settings
from heron.store import open_store
from tests.run_heron import run_heron


def test_ask_json_has_the_answer_and_its_grounding(
    garden: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store(Settings())
    index_library("garden", store, settings=Settings())
    store.close()
    monkeypatch.setenv("HERON_AGENT_MAX_TOKENS", "32")
    done = run_heron("ask", "How often should I water my tomato plants?", "--json")
    data = json.loads(done.stdout)
    assert {"answer", "citations", "tools", "skills", "usage", "timings", "mode"} <= set(data)
    # The bundled model's answers are quoted from the passages: no model call.
    assert data["mode"] == "extractive" and data["model"] == "local"
    assert data["answer"].startswith("Water tomato plants deeply twice a week")
    assert data["usage"] == {"prompt_tokens": 0, "completion_tokens": 0}
    assert data["timings"]["model"] == 0 and data["fallback"] is None
    assert data["citations"][0] == {
        "library": "garden",
        "collection": "garden",
        "page": "garden/watering",
        "heading": data["citations"][0]["heading"],
        "url_or_path": str(garden / "garden" / "watering.md"),
        "line_range": data["citations"][0]["line_range"],
        "pages": None,  # a PDF's or a deck's pages (issue 46): a Markdown page has none
        "job": None,  # a passage, not a delegated job's result (issue 49)
    }
    again = run_heron(
        "ask",
        "And in a heat wave?",
        "--session",
        data["session_id"],
        "--answer",
        "generative",
        "--json",
    )
    written = json.loads(again.stdout)
    assert written["session_id"] == data["session_id"] and written["usage"]["completion_tokens"] > 0
    assert written["mode"] in ("generative", "extractive")  # extractive: the guard stopped it
    assert written["timings"]["total"] >= written["timings"]["model"] > 0


def test_ask_says_which_model_answered_and_how(garden: Path) -> None:
    store = open_store(Settings())
    index_library("garden", store, settings=Settings())
    store.close()
    done = run_heron("ask", "When should I prune roses?")
    lines = done.stdout.splitlines()
    assert lines[0] == (
        "Prune roses in late winter, just before the buds open. [1] Cut above an outward "
        "bud at an angle of 45 degrees and remove dead canes first. [1]"
    )
    assert lines[1].startswith("[1] (garden, garden/pruning)")
    words = " ".join(done.stdout.split())  # the console wraps long lines
    assert (
        "extractive: quoted from the passages, no model call "
        "(local (SmolLM2-135M-Instruct) not used); triage docs"
    ) in words


def test_ask_on_an_empty_home_quotes_only_heron_s_own_docs_and_says_how_close(
    home: Path,
) -> None:
    # A new home knows Heron's docs (shipped with their vectors, issue 48) and nothing
    # else: a question they do not answer is refused, or quoted with the caveat.
    done = run_heron("ask", "What is a Pod?", "--json")
    data = json.loads(done.stdout)
    assert {c["library"] for c in data["citations"]} <= {"heron"}
    assert data["answer"].startswith("I found nothing about this in heron") or (
        "These are the closest passages I found" in data["answer"]
    )


def test_ask_refuses_an_empty_message_or_an_unknown_mode_with_a_clear_error(home: Path) -> None:
    done = run_heron("ask", "  ", ok=False)
    assert done.returncode == 1
    # the status lines ("opening the libraries ...") come first, the error last
    assert done.stderr.splitlines()[-1].startswith("error: The message is empty")
    done = run_heron("ask", "What is a Pod?", "--answer", "poetic", ok=False)
    assert done.returncode == 1 and "Unknown answer mode 'poetic'" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_demo_on_a_fresh_home(home: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "plan-for-the-heron-demo.txt").write_text("hi\n")
    done = run_heron("demo", "--root", str(workspace), "--json", timeout=900)
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [a["question"] for a in answers] == [
        "What is Heron?",
        "How does Heron pick tools?",
        "List the files in my workspace",
        "Summarize Heron's skills index",
    ]
    what, tools, files, skills = answers
    for grounded in (what, tools, skills):
        assert grounded["triage"]["kind"] == "docs" and grounded["citations"]
        assert all(c["library"] == "heron" for c in grounded["citations"])
        assert grounded["mode"] == "extractive" and re.search(r"\[\d\]$", grounded["answer"])
    assert "tools" in {c["page"] for c in tools["citations"]}
    assert "skills" in {c["page"] for c in skills["citations"]}
    listing = files["tools"][-1]  # after a refused invented path, the tool's defaults
    assert {t["name"] for t in files["tools"]} == {"list_files"} and listing["forced"]
    assert listing["result"] == ["plan-for-the-heron-demo.txt"]


def test_chat_streams_an_answer_and_names_its_session(
    garden: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store(Settings())
    index_library("garden", store, settings=Settings())
    store.close()
    monkeypatch.setenv("HERON_AGENT_MAX_TOKENS", "32")
    done = subprocess.run(
        [sys.executable, "-m", "heron", "chat"],
        input="How often should I water my tomato plants?\n\n/exit\n",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "(garden, garden/watering)" in done.stdout
    assert re.search(r"heron chat --session\s+[0-9a-f]{32}", done.stdout)
    assert "you>" not in done.stdout  # no prompt for piped questions
    assert "opening the libraries" in done.stderr  # said as it begins, without a terminal
