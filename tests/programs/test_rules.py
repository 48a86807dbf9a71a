"""``heron.programs.rules`` and ``heron.programs.table``: one program's entry, and the
built-in table written in it (applied by ``heron.programs.policy``; its security
promises are in tests/security/test_programs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from heron.programs import ProgramRefused, load_policy
from heron.programs.policy import UNKNOWN
from heron.programs.rules import Option, Program
from heron.programs.table import BUILTIN


def test_an_option_written_as_its_kind_is_short_for_the_option() -> None:
    program = Program(options={"--stat": "optional", "-n": {"kind": "value", "match": r"\d+"}})
    assert program.options["--stat"] == Option(kind="optional")
    assert program.options["-n"] == Option(kind="value", match=r"\d+")


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({"options": {"stat": "flag"}}, "is not an option name"),
        ({"match": "("}, "is not a regular expression"),
        ({"options": {"--x": {"kind": "flag", "match": "["}}}, "is not a regular expression"),
        ({"positional": True}, "Extra inputs are not permitted"),
    ],
)
def test_a_bad_entry_says_what_is_wrong(entry: dict, problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        Program.model_validate(entry)


def test_every_built_in_entry_is_a_program() -> None:
    assert "git" in BUILTIN and all(isinstance(p, Program) for p in BUILTIN.values())
    assert BUILTIN["git"].subcommands and "log" in BUILTIN["git"].subcommands


def test_a_program_the_table_does_not_know_takes_plain_positionals_only(tmp_path: Path) -> None:
    policy = load_policy()
    assert policy.program("no-such-program") is UNKNOWN
    policy.check(["no-such-program", "notes.txt"], tmp_path)
    with pytest.raises(ProgramRefused):
        policy.check(["no-such-program", "if=/etc/shadow"], tmp_path)
