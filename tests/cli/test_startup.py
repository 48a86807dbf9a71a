"""``heron --version``, ``heron --help`` and every command's ``--help`` load none of the
heavy modules (the rule in ``heron.cli``'s docstring), and the vocabularies a ``--help``
lists, written out in the command modules for that, agree with the libraries'."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer

from heron import discovery
from heron.cli import jobs, keys, libraries, skills, store, tools
from heron.cli.app import app
from heron.settings import Settings

#: What a command imports when it runs, never to print its version or its help.
HEAVY = (
    "numpy",
    "httpx",
    "pydantic_settings",
    "onnxruntime",
    "rich.progress",
    "heron.settings",
    "heron.store",
    "heron.embed",
    "heron.agent",
    "heron.libraries",
    "heron.llm",
)

#: Runs ``heron`` once per argv in one process (a process each would cost seconds), then
#: prints, last, the heavy modules loaded along the way.
PROBE = """
import json, sys
from heron.cli import main
for argv in json.loads(sys.argv[1]):
    sys.argv = ["heron", *argv]
    try:
        main()
    except SystemExit as end:
        assert end.code in (0, None), (argv, end.code)
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in ("numpy", "httpx",
    "pydantic_settings", "onnxruntime") or m in {heavy!r})))
"""


def command_paths(group: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command and group under ``group`` (typer's click group), as the words that
    name it."""
    found = []
    ctx = typer.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        found.append((*prefix, name))
        if hasattr(command, "list_commands"):  # a group
            found += command_paths(command, (*prefix, name))
    return found


def loaded_by(argvs: list[list[str]]) -> list[str]:
    code = PROBE.replace("{heavy!r}", repr(set(HEAVY)))
    done = subprocess.run(
        [sys.executable, "-c", code, json.dumps(argvs)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_version_and_help_load_nothing_heavy() -> None:
    assert loaded_by([["--version"]]) == []
    assert loaded_by([["--help"]]) == []


def test_every_commands_help_loads_nothing_heavy() -> None:
    paths = command_paths(typer.main.get_command(app))
    assert ("search",) in paths and ("library", "status") in paths and len(paths) > 60
    assert loaded_by([[*path, "--help"] for path in paths]) == []


def test_the_vocabularies_help_lists_are_the_libraries() -> None:
    from heron.cli import interventions
    from heron.core.names import PROFILES
    from heron.interventions import SEVERITIES
    from heron.jobs import RISK_LEVELS, STATES
    from heron.keys import SCOPES
    from heron.libraries import MODES
    from heron.skills.index import DEFAULT_TOP_K
    from heron.store import SEARCH_MODES
    from heron.tools import router

    assert libraries.SEARCH_MODES == MODES
    assert store.SEARCH_MODES == SEARCH_MODES
    assert (jobs.RISK_LEVELS, jobs.STATES) == (RISK_LEVELS, STATES)
    assert interventions.SEVERITIES == SEVERITIES
    assert keys.SCOPES == SCOPES
    assert skills.DEFAULT_TOP_K == DEFAULT_TOP_K
    assert tools.ROUTE_MODES == router.ROUTE_MODES
    assert (tools.DEFAULT_MODE, tools.DEFAULT_TOP_K) == (router.DEFAULT_MODE, router.DEFAULT_TOP_K)
    assert tools.DEFAULT_THRESHOLD == router.DEFAULT_THRESHOLD
    assert tuple(PROFILES) == tools.PROFILES


@pytest.mark.parametrize(
    "environ",
    [
        {"HERON_HOME": "/srv/heron"},
        {"XDG_DATA_HOME": "/srv/data"},
        {},
    ],
)
def test_the_home_a_command_looks_in_is_the_settings(
    environ: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("HERON_HOME", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HERON_CONFIG", str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text("")
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    assert discovery.home() == Settings().home
