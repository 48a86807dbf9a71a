"""Bringing a library's files to this machine: git for URLs, local folders read in place.

A git library is a shallow clone under ``$HERON_HOME/libraries/NAME``. The first clone
goes to a temporary folder and is renamed into place only when it succeeded; an update
fetches the library's ``branch`` (the remote's default branch without one) at depth 1
and resets to it, so a force-pushed history is followed like any other change. A
failing remote raises ``SyncError`` and leaves the previous checkout (and so the
previous index) as it was.

Git runs as the workspace's does (``heron.programs.env``): a minimal environment, no
system or user config, the repository-config overrides, and only the network transports
(``file://`` too when the library's own URL is one; never ``ext::``). A URL or path is
always passed after ``--``, so a source cannot be read as an option; ``check_source``
(``heron.libraries.config``) refuses the sources that would be one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from heron.errors import HeronError, InputError
from heron.libraries.config import Library, check_git_source, url_scheme
from heron.private import private_dir
from heron.programs import (
    WORKSPACE_PROTOCOLS,
    ProgramRefused,
    check_git_config,
    program_environment,
)
from heron.settings import Settings


class SyncError(HeronError):
    """A library's source could not be read or fetched; its previous index is kept."""


@dataclass(frozen=True)
class Checkout:
    """Where a library's pages are, and for git the commit they came from."""

    root: Path
    revision: str | None = None
    url: str | None = None


def checkout_dir(library: Library, settings: Settings) -> Path:
    return settings.home / "libraries" / library.name


def qa_fallback_dir(library: Library, settings: Settings) -> Path:
    """Where the Q&A caches of a library whose own folder cannot be written are kept."""
    return settings.home / "libraries" / f".{library.name}.ai"


def _git(
    args: list[str],
    cwd: Path | None,
    timeout: float,
    protocols: tuple[str, ...] = WORKSPACE_PROTOCOLS,
) -> str:
    env = program_environment(protocols=protocols)
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            check=False,
        )
    except FileNotFoundError as exc:
        raise SyncError("git is not installed; install it to sync git libraries.") from exc
    except subprocess.TimeoutExpired as exc:
        raise SyncError(
            f"git {args[0]} took over {timeout:.0f} s; raise HERON_LIBRARY_GIT_TIMEOUT."
        ) from exc
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()
        raise SyncError(f"git {args[0]} failed: {' '.join(detail[-2:]) or done.returncode}")
    return done.stdout.strip()


def _protocols(url: str) -> tuple[str, ...]:
    """The transports a sync of ``url`` may use: the network ones, and ``file`` for a
    ``file://`` URL (which only the local user, or an API allowed to, can configure)."""
    return (*WORKSPACE_PROTOCOLS, "file") if url_scheme(url) == "file" else WORKSPACE_PROTOCOLS


def _clone(url: str, branch: str | None, target: Path, timeout: float) -> None:
    tmp = target.with_name(f".{target.name}.cloning")
    shutil.rmtree(tmp, ignore_errors=True)
    private_dir(target.parent)
    try:
        # ``branch`` is checked by heron.libraries.config: it cannot start with "-".
        picked = ["--branch", branch] if branch else []
        args = ["clone", "--depth", "1", "--quiet", *picked, "--", url, str(tmp)]
        _git(args, target.parent, timeout, _protocols(url))
    except SyncError:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    os.replace(tmp, target)


def _update(url: str, branch: str | None, target: Path, timeout: float) -> None:
    protocols = _protocols(url)
    try:  # a checkout's config edited to name a program (a filter, a diff driver) stops here
        check_git_config(target, program_environment(protocols=protocols))
    except ProgramRefused as exc:
        raise SyncError(str(exc)) from None
    # The URL may have changed in libraries.txt; the checkout follows it.
    _git(["remote", "set-url", "--", "origin", url], target, timeout, protocols)
    fetch = ["fetch", "--depth", "1", "--quiet", "--", "origin", branch or "HEAD"]
    _git(fetch, target, timeout, protocols)
    _git(["reset", "--hard", "--quiet", "FETCH_HEAD", "--"], target, timeout, protocols)
    # -e keeps the Q&A cache an enricher wrote into the checkout (heron.libraries.enrich).
    _git(["clean", "-fdxq", "-e", "/.ai/"], target, timeout, protocols)


def sync(library: Library, settings: Settings, *, timeout: float = 300.0) -> Checkout:
    """Fetch (git) or check (local) a library's files; raises ``SyncError`` on failure."""
    if not library.is_git:
        root = Path(library.source)
        if not root.is_dir():
            raise SyncError(
                f"Library {library.name!r}: the folder {root} does not exist. Restore it, or "
                f"point the library elsewhere: heron library remove {library.name} && "
                f"heron library add {library.name} NEW_SOURCE"
            )
        return Checkout(root)
    try:
        # libraries.txt may have been edited by hand since heron library add checked it.
        check_git_source(library.source)
    except InputError as exc:
        raise SyncError(f"Library {library.name!r}: {exc}") from None
    target = checkout_dir(library, settings)
    try:
        if (target / ".git").is_dir():
            _update(library.source, library.branch, target, timeout)
        else:
            shutil.rmtree(target, ignore_errors=True)
            _clone(library.source, library.branch, target, timeout)
    except SyncError as exc:
        raise SyncError(
            f"Library {library.name!r}: cannot fetch {library.source}: {exc}. The previous "
            "index stays searchable; check the URL and your access, then run heron index again."
        ) from exc
    return Checkout(target, _git(["rev-parse", "HEAD"], target, timeout), library.source)


def last_checkout(library: Library, settings: Settings) -> Checkout | None:
    """The checkout a failed sync left in place, if there is one."""
    if not library.is_git:
        root = Path(library.source)
        return Checkout(root) if root.is_dir() else None
    target = checkout_dir(library, settings)
    return Checkout(target, None, library.source) if (target / ".git").is_dir() else None
