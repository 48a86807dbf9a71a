"""Speed a person feels (issue 48): ``python -m bench speed``.

**Commands from the shell.** Each row of ``COMMANDS`` is the real ``heron`` run in a
subprocess, as a person types it, ``REPEATS`` rounds after one unmeasured round (the
files it reads are then in the page cache, as on a machine in use), each round every
command each way in turn: in-process and through ``heron serve`` running on the same
home, side by side in one run (median wall time). ``heron search`` and ``heron ask``
go through the server when they may (``heron.cli.remote``; the table shows the path
``paths.json`` recorded); the in-process column has a variable that is no setting in
its environment, so the command does not take the server (``ASIDE``). ``--version`` and
``--help`` never use it (the same figure twice, as a check of the noise).

Setup: a fresh HERON_HOME, the embedding profile HERON_EMBEDDER names (unset: the
default, as a person has it), Heron's built-in docs off and
a library of ``PAGES`` of Heron's own docs pages, indexed before the timings.

With ``HERON_BENCH_BASELINE=/path/to/an/older/tree`` (e.g. ``git archive`` of a commit
unpacked there) every command is also timed with that tree's ``heron`` (its folder
first on ``PYTHONPATH``), in the same run: the "before" column.

``SECTIONS`` lists what the benchmark prints, one table each, in one run: the commands
above, then ``bench.embed_speed``'s tables of the same issue (called, not copied): a new
home's first answer about Heron per profile, and the same ``INDEX_PAGES`` Kubernetes pages
indexed under ``minilm`` and the default profile, each with MiniLM's graph before and now
(about 20 minutes on 2 loaded cores: ``HERON_BENCH_SPEED_INDEX=0`` leaves that table out).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench import embed_speed
from bench.common import serve, table

REPO = Path(__file__).resolve().parents[1]
#: Runs measured per command and path (after one that is not).
REPEATS = 5
#: Heron's docs pages in the library searched.
PAGES = 8
QUESTION = "How does Heron pick the tools it offers?"
#: A variable that is no setting: the command's environment is then not the server's,
#: so it runs in-process beside the running server (``heron.discovery.fingerprint``).
ASIDE = {"HERON_BENCH_ASIDE": "1"}
#: The ways each command is timed: the extra environment, and the tree it runs from
#: (``None``: this checkout).
WAYS: dict[str, tuple[dict[str, str], Path | None]] = {
    "in-process (s)": (ASIDE, None),
    "through heron serve (s)": ({}, None),
}


@dataclass(frozen=True)
class Command:
    """One command as typed in a shell, and the issue's target for it."""

    label: str
    argv: tuple[str, ...]
    target: str
    #: The command whose path ``paths.json`` records ("search", "ask"), if any.
    records: str | None = None


START, SEARCH, ASK = "<= 0.3 s", "<= 1 s with a server", "<= 2 s with a server"
COMMANDS = (
    Command("heron --version", ("--version",), START),
    Command("heron --help", ("--help",), START),
    Command("heron search --help", ("search", "--help"), START),
    Command("heron search QUESTION", ("search", QUESTION, "-k", "3"), SEARCH, "search"),
    Command("heron search QUESTION --json", ("search", QUESTION, "--json"), SEARCH, "search"),
    Command("heron ask QUESTION", ("ask", QUESTION), ASK, "ask"),
)


def _heron(env: dict[str, str], *argv: str, tree: Path | None = None) -> float:
    """Seconds one ``heron ARGV`` takes from the shell (``python -m heron``)."""
    environ = {**os.environ, **env}
    if tree is not None:
        environ["PYTHONPATH"] = f"{tree}{os.pathsep}{environ.get('PYTHONPATH', '')}"
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "heron", *argv],
        cwd=Path(env["HERON_HOME"]).parent,  # not the checkout: python -m puts it first
        env=environ,
        capture_output=True,
        text=True,
        timeout=600,
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"heron {' '.join(argv)} failed: {done.stderr[-2000:]}")
    return seconds


def _path_taken(home: Path, command: Command) -> str:
    if command.records is None:
        return "-"
    return json.loads((home / "paths.json").read_text())[command.records]["path"]


def _home(root: Path) -> dict[str, str]:
    """A fresh home with ``PAGES`` of Heron's docs as the library ``heron-docs``."""
    docs = root / "docs"
    docs.mkdir()
    for page in sorted((REPO / "docs").glob("*.md"))[:PAGES]:
        shutil.copy(page, docs / page.name)
    env = {"HERON_HOME": str(root / "home"), "HERON_LIBRARY_DEFAULT_DOCS": "false"}
    _heron(env, "library", "add", "heron-docs", str(docs))
    _heron(env, "index", "heron-docs")
    return env


def commands() -> str:
    """The table of ``COMMANDS``: median seconds of each way, with the path taken."""
    baseline = os.environ.get("HERON_BENCH_BASELINE")
    ways = dict(WAYS)
    if baseline:
        ways = {"before (s)": (ASIDE, Path(baseline).resolve()), **ways}
    with tempfile.TemporaryDirectory(prefix="heron-speed-") as tmp:
        root = Path(tmp)
        env = _home(root)
        home = Path(env["HERON_HOME"])
        server, _ = serve({**os.environ, **env}, root / "serve.log", until="/ready")
        seconds: dict[tuple[Command, str], list[float]] = {}
        paths: dict[tuple[Command, str], str] = {}
        try:
            # Round by round, each command each way in turn: the machine's load, which
            # drifts over minutes, weighs on every column alike. Round 0 is not counted.
            for round_ in range(REPEATS + 1):
                for command in COMMANDS:
                    for way, (extra, tree) in ways.items():
                        took = _heron({**env, **extra}, *command.argv, tree=tree)
                        if round_:
                            seconds.setdefault((command, way), []).append(took)
                        if way in WAYS:  # an older tree records no path
                            paths[command, way] = _path_taken(home, command)
        finally:
            server.terminate()
            server.wait(60)
    header = ["command", *ways, "path taken", "target"]
    rows = [
        [
            c.label,
            *(statistics.median(seconds[c, way]) for way in ways),
            " / ".join(dict.fromkeys(paths[c, way] for way in WAYS)),
            c.target,
        ]
        for c in COMMANDS
    ]
    profile = os.environ.get("HERON_EMBEDDER", "default")
    title = f"Commands from the shell (median of {REPEATS}; {PAGES} docs pages, {profile} profile)"
    return table(title, header, rows)


#: What ``python -m bench speed`` prints, one table each.
SECTIONS: tuple[Callable[[], str], ...] = (
    commands,
    embed_speed.first_answer,
    embed_speed.indexing,
)


def run() -> str:
    index = os.environ.get("HERON_BENCH_SPEED_INDEX") != "0"
    return "\n".join(s() for s in SECTIONS if index or s is not embed_speed.indexing)
