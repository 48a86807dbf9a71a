"""What a finished job found, in a few sentences: ``result.summary``.

``facts(steps)`` is built from the steps' outputs alone, so it is the same for the same
outputs and cannot invent anything. For ``git status --short --branch`` printing
``## main...origin/main [ahead 2]``, `` M README.md`` and ``?? notes.txt``, ``git diff
--stat`` ending in ``1 file changed, 2 insertions(+), 1 deletion(-)`` and pytest in
``1 failed, 2 passed in 0.12s``, it reads::

    On branch main (2 ahead of origin/main): 1 file changed (README.md), 2 insertions,
    1 deletion; 1 untracked file (notes.txt). Tests: 1 failed, 2 passed in 0.12s.

What each step gives: ``git_status`` the branch and its distance from its upstream
(``git status --short --branch``'s first line) and the staged and untracked files;
``git_diff`` the files changed with the diff stat (``git diff --stat``'s last line);
``test`` pytest's last summary line when there is one (``12 passed, 1 failed in 3.2s``),
else the exit code; ``search_docs`` the number of hits and the best page;
``store_counts`` the namespaces and records; ``remote`` whether the remote answered and
its branches; ``typecheck`` its verdict. A step that could not run says why.

``written(...)``: with a capable model (``capabilities.answers == "generative"``, not the
bundled local model), the broker writes a short summary from the prompt and the outputs,
each claim cited to its step (``[git_diff]``). It must cite only steps that ran, at least
one; otherwise, or on any model error, ``SummaryRefused`` says why and the caller keeps
``facts``. The broker is handed in (``heron.llm.Broker``, wired by ``heron.wiring``):
the jobs depend on the chat value types (``heron.core.chat``), not on ``heron.llm``.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from heron.core.chat import ChatRequest, Completion, Message
from heron.errors import HeronError
from heron.redact import redact

#: Files named in a summary, at most; the rest are counted.
MAX_FILES = 5
#: Characters of each step's output the model reads (head and tail kept).
MODEL_OUTPUT_CHARS = 4000
MODEL_MAX_TOKENS = 300

_BRANCH = re.compile(r"^## (?P<local>.+?)(?:\.\.\.(?P<upstream>\S+))?(?: \[(?P<track>[^\]]+)\])?$")
_STAT_FILE = re.compile(r"^ (?P<name>.+?)\s+\|\s+(?:\d+|Bin\b)")
_STAT_TOTAL = re.compile(
    r"^\s*(?P<files>\d+) files? changed"
    r"(?:, (?P<ins>\d+) insertions?\(\+\))?(?:, (?P<dels>\d+) deletions?\(-\))?\s*$"
)
_PYTEST_WORDS = (
    "failed|passed|skipped|deselected|xfailed|xpassed|errors?|warnings?|rerun|no tests ran"
)
_PYTEST = re.compile(rf"^=*\s*(?P<line>(?:\d+ )?(?:{_PYTEST_WORDS})\b.*? in [\d.]+s\b.*?)\s*=*$")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_CITED = re.compile(r"\[([a-z_]+)\]")


class SummaryRefused(HeronError):
    """The model's summary is not usable (an error, or no citation to a step that ran)."""


class ChatBroker(Protocol):
    """What a summary needs of a chat broker; ``heron.llm.Broker`` is one. ``table.chain()``
    lists the default alias's models (its fallbacks included), each with its ``alias`` and
    ``capabilities.answers``; ``complete`` raises a ``HeronError`` when a model fails."""

    table: Any

    def capabilities(self, model: str | None = None) -> Any: ...

    def complete(
        self, request: ChatRequest, *, model: str | None, timeout: float | None, fallbacks: bool
    ) -> Completion: ...

    def close(self) -> None: ...


def facts(steps: Sequence[Mapping[str, Any]]) -> str:
    """The deterministic summary of ``steps`` (``{"step", "ok", **detail}`` each, with the
    command's ``exit_code``/``stdout``/``stderr``, or ``results``, ``namespaces``, or the
    ``error`` that kept it from running)."""
    by = {s["step"]: s for s in steps}
    parts = []
    repo = _repository(by.get("git_status"), by.get("git_diff"))
    if repo:
        parts.append(repo)
    if "search_docs" in by and "error" not in by["search_docs"]:
        parts.append(_docs(by["search_docs"]))
    if "remote" in by and "error" not in by["remote"]:
        parts.append(_remote(by["remote"]))
    if "store_counts" in by and "error" not in by["store_counts"]:
        parts.append(_store(by["store_counts"]))
    if "typecheck" in by and "error" not in by["typecheck"]:
        parts.append(_verdict("Typecheck", "the typecheck command", by["typecheck"]))
    if "test" in by and "error" not in by["test"]:
        parts.append(_tests(by["test"]))
    broken = [s for s in steps if "error" in s]
    for step in broken:
        parts.append(f"{step['step']} could not run: {_sentence(str(step['error']))}")
    if not parts:
        return "No checks ran."
    return redact(" ".join(_sentence(p) for p in parts))


# -- git -------------------------------------------------------------------------------


def branch(status: str) -> str | None:
    """``On branch main (2 ahead of origin/main)`` from ``git status --short --branch``.

    >>> branch("## main...origin/main [ahead 2, behind 1]\\n")
    'On branch main (2 ahead, 1 behind origin/main)'
    >>> branch("## main...origin/main [ahead 2]\\n")
    'On branch main (2 ahead of origin/main)'
    >>> branch("## No commits yet on main\\n")
    'On branch main (no commits yet)'
    """
    first = status.splitlines()[0] if status.strip() else ""
    if first.startswith(("## No commits yet on ", "## Initial commit on ")):
        return f"On branch {first.rsplit(' on ', 1)[1]} (no commits yet)"
    if first.startswith("## HEAD (no branch)"):
        return "On a detached HEAD (no branch)"
    found = _BRANCH.match(first)
    if not found:
        return None
    local, upstream, track = found["local"], found["upstream"], found["track"]
    if not upstream:
        return f"On branch {local}"
    if track == "gone":
        return f"On branch {local} (its upstream {upstream} is gone)"
    if not track:
        return f"On branch {local} (up to date with {upstream})"
    # git writes "ahead 2, behind 1"; a person reads "2 ahead, 1 behind origin/main".
    distance = ", ".join(" ".join(reversed(part.split())) for part in track.split(", "))
    return f"On branch {local} ({distance}{' of' if distance.endswith('ahead') else ''} {upstream})"


def _entries(status: str) -> list[tuple[str, str]]:
    """``(XY, path)`` per file of ``git status --short`` (a rename: its new path)."""
    out = []
    for line in status.splitlines():
        if line.startswith("## ") or len(line) < 4:
            continue
        path = line[3:]
        out.append((line[:2], path.split(" -> ", 1)[-1].strip('"')))
    return out


def _repository(status_step: Mapping[str, Any] | None, diff_step: Mapping[str, Any] | None) -> str:
    status = _output(status_step) if status_step and "error" not in status_step else None
    diff = _output(diff_step) if diff_step and "error" not in diff_step else None
    if status is None and diff is None:
        return ""
    entries = _entries(status or "")
    head = (branch(status) if status else None) or ""
    changes = []
    if diff is not None:
        changes.append(_diff(diff, [p for _, p in entries]))
    staged = [p for xy, p in entries if xy[0] not in " ?"]
    unstaged = {p for xy, p in entries if xy[1] not in " ?"}
    untracked = [p for xy, p in entries if xy == "??"]
    if staged:
        changes.append(f"{_count(len(staged), 'staged file')} ({_names(staged)})")
    if untracked:
        changes.append(f"{_count(len(untracked), 'untracked file')} ({_names(untracked)})")
    if diff is None and unstaged:
        changes.append(f"{_count(len(unstaged), 'changed file')} ({_names(sorted(unstaged))})")
    if status is not None and not entries and (diff is None or not diff.strip()):
        changes = ["no uncommitted changes"]
    text = "; ".join(c for c in changes if c)
    if head and text:
        return f"{head}: {text}"
    return head or text[:1].upper() + text[1:]


def _diff(stat: str, known: list[str]) -> str:
    """``3 files changed (a, b, c), 10 insertions, 2 deletions`` from ``git diff --stat``;
    names git shortened (``.../x.py``) are completed from the status's full paths."""
    names, total = [], None
    for line in stat.splitlines():
        found = _STAT_FILE.match(line)
        if found:
            names.append(_complete(found["name"].strip(), known))
        elif _STAT_TOTAL.match(line):
            total = _STAT_TOTAL.match(line)
    if total is None:
        return "no unstaged changes" if not names else f"{_count(len(names), 'file')} changed"
    text = f"{_count(int(total['files']), 'file')} changed"
    if names:
        text += f" ({_names(names, int(total['files']))})"
    text += f", {_count(int(total['ins'] or 0), 'insertion')}"
    return text + f", {_count(int(total['dels'] or 0), 'deletion')}"


def _complete(name: str, known: list[str]) -> str:
    if name.startswith(".../"):
        tail = name[3:]
        return next((k for k in known if k.endswith(tail)), name)
    return name


# -- the other steps -------------------------------------------------------------------


def _tests(step: Mapping[str, Any]) -> str:
    line = pytest_line(_output(step) or "") or pytest_line(str(step.get("stderr", "")))
    if line:
        return f"Tests: {line}"
    return _verdict("Tests", "the test command", step)


def _verdict(what: str, default: str, step: Mapping[str, Any]) -> str:
    command = shlex.join(step.get("argv") or []) or default
    code = step.get("exit_code")
    verdict = "passed" if code == 0 else "failed"
    return f"{what} ({command}): {verdict}, exit code {code}"


def _remote(step: Mapping[str, Any]) -> str:
    argv = step.get("argv") or []
    name = argv[-1] if argv else "the remote"
    if step.get("exit_code") != 0:
        return f"Remote {name}: not reachable (git ls-remote exit code {step.get('exit_code')})"
    heads = [ln for ln in (_output(step) or "").splitlines() if "\trefs/heads/" in ln]
    return f"Remote {name}: reachable, {_count(len(heads), 'branch', 'branches')}"


def pytest_line(output: str) -> str | None:
    """pytest's last summary line, without its ``=`` rule.

    >>> pytest_line("F.\\n==== 1 failed, 1 passed in 0.03s ====\\n")
    '1 failed, 1 passed in 0.03s'
    """
    for raw in reversed(_ANSI.sub("", output).splitlines()):
        found = _PYTEST.match(raw.strip())
        if found:
            return found["line"]
    return None


def _docs(step: Mapping[str, Any]) -> str:
    results = step.get("results") or []
    if not results:
        return "Docs: no library passage matched"
    best = results[0]
    pages = {(r.get("library"), r.get("page")) for r in results}
    return (
        f"Docs: {_count(len(results), 'result')} on {_count(len(pages), 'page')} "
        f"(best: {best.get('library')}/{best.get('page')})"
    )


def _store(step: Mapping[str, Any]) -> str:
    spaces = step.get("namespaces") or []
    records = sum(int(n.get("records") or 0) for n in spaces)
    return f"Store: {_count(len(spaces), 'namespace')}, {_count(records, 'record')}"


# -- the model's summary ---------------------------------------------------------------


def written(
    broker: ChatBroker,
    prompt: str,
    success_criteria: str,
    steps: Sequence[Mapping[str, Any]],
    deterministic: str,
    *,
    timeout: float,
) -> tuple[str, str]:
    """``(summary, alias)``: a short summary by the first capable model of the default
    alias's chain (its ``fallbacks`` included, weak models skipped), cited to the steps.

    Raises ``SummaryRefused`` when no capable model is configured, every one fails, or
    the text cites no step or one that did not run."""
    chain = [s for s in broker.table.chain() if s.capabilities.answers == "generative"]
    if not chain:
        raise SummaryRefused("no capable model is configured (answers: generative)")
    names = [str(s["step"]) for s in steps]
    outputs = "\n\n".join(_for_model(s) for s in steps)
    request = ChatRequest(
        (
            Message(
                "system",
                "You summarise what a background job found in a repository, for the person "
                "who asked. Use only the step outputs given. Write two to four plain "
                "sentences: the branch, what changed, the test outcome, anything that "
                "failed. After each claim cite the step it comes from in square brackets, "
                f"one of: {', '.join(f'[{n}]' for n in names)}.",
            ),
            Message(
                "user",
                f"The request: {redact(prompt)}\n"
                + (f"Success criteria: {redact(success_criteria)}\n" if success_criteria else "")
                + f"\nFacts already extracted: {deterministic}\n\n{outputs}",
            ),
        ),
        max_tokens=MODEL_MAX_TOKENS,
        temperature=0.0,
    )
    errors = []
    for spec in chain:
        try:
            done = broker.complete(request, model=spec.alias, timeout=timeout, fallbacks=False)
        except HeronError as exc:  # heron.llm's ProviderError: this model failed
            errors.append(str(exc))
            continue
        text = done.text.strip()
        cited = set(_CITED.findall(text))
        if not text or not cited:
            errors.append(f"{spec.alias} wrote a summary that cites no step")
            continue
        unknown = sorted(cited - set(names))
        if unknown:
            errors.append(f"{spec.alias} cited steps that did not run: {', '.join(unknown)}")
            continue
        return redact(text), spec.alias
    raise SummaryRefused("; ".join(errors))


def _for_model(step: Mapping[str, Any]) -> str:
    name = step["step"]
    if "error" in step:
        return f"[{name}] could not run: {step['error']}"
    if "results" in step:
        hits = step["results"]
        lines = [f"- {r.get('library')}/{r.get('page')}: {r.get('heading')}" for r in hits]
        return f"[{name}] {len(lines)} results\n" + "\n".join(lines)
    if "namespaces" in step:
        return f"[{name}] namespaces: {step['namespaces']}"
    out = _output(step) or ""
    err = str(step.get("stderr") or "")
    body = _cut(out) + (f"\nstderr:\n{_cut(err)}" if err.strip() else "")
    return f"[{name}] exit code {step.get('exit_code')}\n{redact(body)}"


# -- small helpers ---------------------------------------------------------------------


def _output(step: Mapping[str, Any] | None) -> str | None:
    return None if step is None else str(step.get("stdout") or "")


def _cut(text: str, most: int = MODEL_OUTPUT_CHARS) -> str:
    if len(text) <= most:
        return text
    return text[: most // 2] + "\n...\n" + text[-most // 2 :]


def _count(n: int, noun: str, nouns: str = "") -> str:
    return f"{n:,} {noun if n == 1 else nouns or noun + 's'}"


def _names(names: list[str], total: int | None = None) -> str:
    total = len(names) if total is None else total
    shown = ", ".join(names[:MAX_FILES])
    rest = total - min(len(names), MAX_FILES)
    return shown + (f" and {rest} more" if rest > 0 else "")


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "!", "?")) else text + "."
