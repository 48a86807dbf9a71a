"""What the commands print: unwrapped lines and whole table cells off a terminal, folded
(never cut) cells on one, and a status line on stderr as a long step begins."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

from heron.cli.output import HeronConsole, table
from tests.libraries.conftest import write_pages
from tests.run_heron import run_heron

#: Longer than any terminal: a name that 80 columns would break.
LONG_NAME = "company-handbook-for-the-platform-engineering-and-it-operations-teams"
LONG_MODEL = "a-deployment-of-gpt-4o-mini-2024-07-18-with-a-long-name-nobody-shortened"
SENTENCE = (
    "The VPN password rotates every ninety days, and the helpdesk portal sends a "
    "reminder to the address on file a week before the old password stops working."
)


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from tests.server.conftest import heron_env

    for name, value in heron_env(tmp_path).items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("HERON_CONFIG", raising=False)
    monkeypatch.setenv("COLUMNS", "80")  # what a narrow terminal, or none, made rich use
    return tmp_path


def test_a_pipe_gets_whole_lines() -> None:
    out = io.StringIO()
    HeronConsole(file=out).print(SENTENCE * 3)
    assert out.getvalue() == SENTENCE * 3 + "\n"


def test_a_terminal_still_wraps_and_an_explicit_width_is_kept() -> None:
    for console in (
        HeronConsole(file=io.StringIO(), force_terminal=True, width=40),
        HeronConsole(file=io.StringIO(), width=40),
    ):
        console.print(SENTENCE)
        lines = console.file.getvalue().splitlines()  # type: ignore[attr-defined]
        assert len(lines) > 1 and all(len(line) <= 40 for line in lines)
        assert " ".join(line.strip() for line in lines) == SENTENCE


def test_table_cells_fold_on_a_terminal_and_are_never_cut() -> None:
    console = Console(file=io.StringIO(), force_terminal=False, width=40)
    grid = table("alias", "model")
    grid.add_row("fast", LONG_MODEL)
    console.print(grid)
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "…" not in text
    cells = [line.split("│")[2].strip() for line in text.splitlines() if line.count("│") == 3]
    assert "".join(cells).endswith(LONG_MODEL)
    assert all(len(line) <= 40 for line in text.splitlines())


def test_piped_commands_print_whole_lines(env: Path) -> None:
    docs = write_pages(
        env / "docs",
        {"it/vpn.md": f"---\ntitle: VPN access for remote staff\n---\n{SENTENCE}\n"},
    )
    added = run_heron("library", "add", LONG_NAME, str(docs)).stdout
    assert added == f"added {LONG_NAME} ({docs}); now run: heron index {LONG_NAME}\n"

    summary = run_heron("index", LONG_NAME).stdout.splitlines()
    assert len(summary) == 1 and summary[0].startswith(f"{LONG_NAME}: 1 pages (1 added, ")
    assert summary[0].endswith(" s") and " embedded, " in summary[0]

    found = run_heron("search", "how often does the VPN password rotate", "-k", "1").stdout
    title, snippet, source, searched = found.splitlines()
    assert searched == f"searched {LONG_NAME}"  # which libraries, on one line too
    assert title.startswith("  1. VPN access for remote staff") and title.endswith(
        tuple("0123456789")
    )
    assert f"({LONG_NAME}, it/vpn)" in title
    assert snippet == f"     {SENTENCE}"
    assert re.fullmatch(rf"     {re.escape(str(docs / 'it' / 'vpn.md'))}:\d+-4", source)

    status = run_heron("library", "status").stdout.splitlines()
    assert status[0].startswith(LONG_NAME) and status[0].endswith(" UTC")


def test_models_list_never_truncates_a_name(env: Path) -> None:
    builtin = json.loads(run_heron("models", "list", "--json").stdout)["models"]
    shown = run_heron("models", "list").stdout
    assert "…" not in shown
    assert any(builtin[0]["model"] in line for line in shown.splitlines())

    models = env / "home" / "models.yml"
    models.parent.mkdir(parents=True, exist_ok=True)
    models.write_text(
        "default: fast\nmodels:\n  fast:\n    provider: openai\n"
        f"    model: {LONG_MODEL}\n    base_url: http://127.0.0.1:9/v1\n"
        "    api_key_env: HERON_TEST_UNSET_KEY\n    fallbacks: [local]\n"
    )
    shown = run_heron("models", "list").stdout
    assert "…" not in shown
    (row,) = [line for line in shown.splitlines() if line.startswith("│ fast *")]
    assert LONG_MODEL in row and "HERON_TEST_UNSET_KEY (not set)" in row and "local" in row


def test_a_long_command_says_what_it_does_before_it_is_done(env: Path) -> None:
    """``heron demo`` without a terminal: its first status line comes at once, while
    the demo still has its models to open and its docs to index."""
    began = time.monotonic()
    demo = subprocess.Popen(
        [sys.executable, "-m", "heron", "demo", "--root", str(env), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert demo.stderr is not None
        first = demo.stderr.readline()
        spent = time.monotonic() - began
        running = demo.poll() is None
    finally:
        demo.kill()
        demo.communicate()
    assert first == "opening the libraries, tools and models ...\n"
    assert running, "the status line came only at the end"
    assert spent < 30  # Python and Heron's imports only: far from the demo's minutes
