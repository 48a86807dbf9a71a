"""The steps a job runs, chosen from its prompt *and* its success criteria, and which step
verifies each criterion. All are scoped, read-mostly checks:

- always ``git status --short --branch`` and ``git diff --stat`` in the workspace;
- ``git ls-remote --heads REMOTE`` (``jobs_remote``, a remote's name, held to the program
  policy) when it names GitHub, GitLab, a remote, origin, upstream or a push;
- a search of the libraries (``heron.libraries.search``) when it asks about docs;
- the store's namespaces and record counts, and the jobs by state, when it mentions
  memory, the index, the store, telemetry or counts;
- the configured typecheck command (``jobs_typecheck_command``) when it mentions types,
  a typecheck, a build or something broken;
- the configured test command (``jobs_test_command``) when it mentions build, test or
  broken.

The last two are the operator's commands, run with the workspace's caches sent elsewhere
(``heron.jobs.runner``), but they run the workspace's code: they are not read-only for
crash recovery.

Each success criterion (the text split at line ends, ``;``, ``,`` and `` and ``) is
verified by the first step whose kind it names; one that names none, or names a step
that cannot run here (no typecheck command is configured), is *unverified*, and the job's
``result.ok`` is then ``null``, never ``true``.

>>> p = plan("is main broken?", "tests pass; the docs cover pods", test_command="pytest -q")
>>> [s.name for s in p.steps]
['git_status', 'git_diff', 'search_docs', 'test']
>>> [(c.text, c.step) for c in p.criteria]
[('tests pass', 'test'), ('the docs cover pods', 'search_docs')]
>>> plan("check", "the typecheck passes", test_command="pytest").criteria[0].why
'no typecheck command is configured (HERON_JOBS_TYPECHECK_COMMAND)'
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

DOCS = re.compile(r"(?i)\b(docs?|documentation|librar(?:y|ies)|manuals?|readme)\b")
COUNTS = re.compile(
    r"(?i)\b(memory|memories|index(?:es|ed|ing)?|store|telemetry|counts?|records?|"
    r"collections?|mongo(?:db)?|namespaces?)\b"
)
BUILD = re.compile(r"(?i)\b(build(?:s|ing)?|tests?|testing|broken|breaks?|ci)\b")
TYPES = re.compile(
    r"(?i)\b(type[- ]?check(?:s|ed|ing|er)?|types?|typing|mypy|pyright|tsc|build(?:s|ing)?|"
    r"broken|breaks?)\b"
)
REMOTE = re.compile(
    r"(?i)\b(github|gitlab|bitbucket|remotes?|origin|upstream|reachab(?:le|ility)|"
    r"push(?:ed|es)?|ls-remote)\b"
)
CLEAN = re.compile(
    r"(?i)\b(clean|uncommitted|untracked|(?:no|any) (?:local )?changes|working (?:tree|copy)|"
    r"git status|committed)\b"
)
#: Where a criterion's text is split into the criteria it holds.
SPLIT = re.compile(r"(?i)\s*(?:[\n;,]|\band\b|\s&\s)\s*")
#: How a criterion names each kind of step, most specific first: "tests pass and it
#: builds" is two criteria, but "the build's typecheck passes" is the typecheck's.
NAMED: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("typecheck", re.compile(r"(?i)\b(type[- ]?check\w*|types?|typing|mypy|pyright|tsc)\b")),
    ("test", re.compile(r"(?i)\b(tests?|testing|test suite|ci|builds?|building|broken)\b")),
    ("remote", REMOTE),
    ("search_docs", DOCS),
    ("store_counts", COUNTS),
    ("git_status", CLEAN),
)


@dataclass(frozen=True)
class Step:
    """``argv`` for a command run in the workspace; ``None`` for an in-process call.
    ``configured``: the command is the operator's own setting (``jobs_test_command``), so
    its program must be on the allowlist but its arguments are not held to the program
    policy (``heron.programs``); Heron's own git steps are."""

    name: str
    argv: tuple[str, ...] | None = None
    read_only: bool = True
    configured: bool = False

    def to_dict(self) -> dict[str, object]:
        return {"step": self.name, "argv": list(self.argv) if self.argv else None}


@dataclass(frozen=True)
class Criterion:
    """One success criterion: the step that verifies it, or (``step`` ``None``) why none
    can."""

    text: str
    step: str | None
    why: str = ""


@dataclass(frozen=True)
class Plan:
    steps: list[Step]
    criteria: list[Criterion]

    @property
    def read_only(self) -> bool:
        return all(s.read_only for s in self.steps)


def criteria_of(text: str) -> list[str]:
    """The criteria ``text`` holds, in order, each once.

    >>> criteria_of("tests pass and the remote is reachable;\\n- docs build")
    ['tests pass', 'the remote is reachable', 'docs build']
    """
    parts = (part.strip(" \t-*•.") for part in SPLIT.split(text or ""))
    return list(dict.fromkeys(part for part in parts if part))


def plan(
    prompt: str,
    success_criteria: str = "",
    *,
    test_command: str = "",
    typecheck_command: str = "",
    remote: str = "origin",
) -> Plan:
    """The steps for a job asking ``prompt`` with ``success_criteria``, given the
    configured commands (``""``: none) and the remote to check."""
    asked = f"{prompt}\n{success_criteria}"
    texts = criteria_of(success_criteria)
    named = [(text, _named(text)) for text in texts]
    wanted = {kind for _, kind in named if kind}
    steps = [
        Step("git_status", ("git", "status", "--short", "--branch")),
        Step("git_diff", ("git", "diff", "--stat")),
    ]
    if REMOTE.search(asked) or "remote" in wanted:
        steps.append(Step("remote", ("git", "ls-remote", "--heads", remote)))
    if DOCS.search(asked) or "search_docs" in wanted:
        steps.append(Step("search_docs"))
    if COUNTS.search(asked) or "store_counts" in wanted:
        steps.append(Step("store_counts"))
    if typecheck_command.strip() and (TYPES.search(asked) or "typecheck" in wanted):
        argv = tuple(shlex.split(typecheck_command))
        steps.append(Step("typecheck", argv, read_only=False, configured=True))
    if test_command.strip() and (BUILD.search(asked) or "test" in wanted):
        argv = tuple(shlex.split(test_command))
        steps.append(Step("test", argv, read_only=False, configured=True))
    ran = {s.name for s in steps}
    criteria = []
    for text, kind in named:
        if kind is None:
            criteria.append(Criterion(text, None, "no step of a job checks this"))
        elif kind not in ran:
            criteria.append(Criterion(text, None, _missing(kind)))
        else:
            criteria.append(Criterion(text, kind))
    return Plan(steps, criteria)


def _named(text: str) -> str | None:
    return next((kind for kind, pattern in NAMED if pattern.search(text)), None)


def _missing(kind: str) -> str:
    setting = "HERON_JOBS_TYPECHECK_COMMAND" if kind == "typecheck" else "HERON_JOBS_TEST_COMMAND"
    return f"no {kind} command is configured ({setting})"
