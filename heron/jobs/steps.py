"""The steps a job runs, chosen from its prompt. All are scoped, read-mostly checks:

- always ``git status --short --branch`` and ``git diff --stat`` in the workspace;
- a search of the libraries (``heron.libraries.search``) when the prompt asks about docs;
- the store's namespaces and sizes when it mentions memory or the index;
- the configured test command (``jobs_test_command``) when it mentions build, test or
  broken. It is the one step that is not read-only (a build writes its outputs), which
  decides crash recovery (``heron.jobs.runner``).

>>> [s.name for s in plan("is main broken? check the docs", "pytest -q")]
['git_status', 'git_diff', 'search_docs', 'test']
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

DOCS = re.compile(r"(?i)\b(docs?|documentation|librar(?:y|ies)|manuals?|readme)\b")
MEMORY = re.compile(r"(?i)\b(memory|memories|index(?:es|ed|ing)?|store)\b")
BUILD = re.compile(r"(?i)\b(build(?:s|ing)?|tests?|testing|broken|breaks?|ci)\b")


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


def plan(prompt: str, test_command: str) -> list[Step]:
    steps = [
        Step("git_status", ("git", "status", "--short", "--branch")),
        Step("git_diff", ("git", "diff", "--stat")),
    ]
    if DOCS.search(prompt):
        steps.append(Step("search_docs"))
    if MEMORY.search(prompt):
        steps.append(Step("store_stats"))
    if BUILD.search(prompt) and test_command.strip():
        argv = tuple(shlex.split(test_command))
        steps.append(Step("test", argv, read_only=False, configured=True))
    return steps
