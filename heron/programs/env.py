"""The environment every program Heron starts runs in, and git's hardening.

**Minimal environment.** A program gets ``PASSED`` from Heron's environment (``PATH``
with its relative entries dropped, ``HOME``, ``USER``, locale, ``TMPDIR``, ``TERM``,
``SSH_AUTH_SOCK`` so ssh remotes keep working, git's author variables) plus the names the
policy file lists under ``environment``; nothing else. API keys, ``HERON_API_TOKEN``,
``AWS_*``, ``GIT_DIR``, ``PYTEST_ADDOPTS``, ``MAKEFLAGS``, ``npm_config_*`` ... stay behind.

**Git.** Every program gets (its own git calls too, a Makefile's or a test's):

- ``GIT_CONFIG_NOSYSTEM=1`` and ``GIT_CONFIG_GLOBAL=/dev/null``: no system or user config;
- ``GIT_CONFIG_COUNT`` overrides (``GIT_OVERRIDES``), which win over the repository's own
  config: ``core.fsmonitor=false``, ``core.hooksPath=/dev/null``, ``core.pager=cat``,
  editors ``:`` (git's "do not launch"), no credential helper, no signing, no submodule
  recursion, ``safe.bareRepository=explicit``, no automatic gc;
- ``GIT_ALLOW_PROTOCOL``: only the network transports (never ``ext::``, ``fd::``, and
  ``file://`` only where a library's own URL is one); ``GIT_TERMINAL_PROMPT=0``,
  ``GIT_ASKPASS=true``, ``GIT_SSH_COMMAND`` in batch mode, ``GIT_PAGER=cat``;
- in a workspace, ``GIT_CEILING_DIRECTORIES`` set to the root's parent, so git finds no
  repository above the root.

The repository's config can still name programs that no override reaches (a filter's
``clean``, a diff driver's ``textconv``, ``diff.external``, ``core.worktree`` ...);
``check_git_config`` reads it before each git command and refuses to run git while it
holds one of those (``GIT_DANGEROUS``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from heron.programs.policy import ProgramRefused

PASSED = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TERM",
    "TMPDIR",
    "SSH_AUTH_SOCK",
    "VIRTUAL_ENV",
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
)
#: Transports a workspace's git and a library sync may use; none runs a local program.
WORKSPACE_PROTOCOLS = ("https", "http", "ssh", "git")
GIT_OVERRIDES = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.editor", ":"),
    ("sequence.editor", ":"),
    ("credential.helper", ""),  # an empty value clears the list of helpers
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("push.gpgSign", "false"),
    ("log.showSignature", "false"),
    ("submodule.recurse", "false"),
    ("diff.ignoreSubmodules", "all"),  # a submodule's own config is not checked: skip it
    ("status.submoduleSummary", "false"),
    ("fetch.recurseSubmodules", "false"),
    ("push.recurseSubmodules", "no"),
    ("safe.bareRepository", "explicit"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
)
#: Repository config keys (lower case, as ``git config --list`` prints them) that name a
#: program no override can neutralise; git does not run while one is set.
GIT_DANGEROUS = re.compile(
    r"filter\..+\.(clean|smudge|process)"
    r"|diff\..+\.(textconv|command)|diff\.external"
    r"|merge\..+\.driver"
    r"|core\.(worktree|gitproxy|alternaterefscommand)"
    r"|gpg\.(.+\.)?program|gpg\.ssh\.defaultkeycommand"
    r"|credential\.(.+\.)?helper"
    r"|remote\..+\.(uploadpack|receivepack|vcs)"
    r"|trailer\..+\.(command|cmd)"
    r"|uploadpack\.packobjectshook"
)


def clean_path(path: str | None) -> str:
    """``PATH`` without empty or relative entries (``.`` would run the workspace's own
    ``git``); the system default when nothing is left."""
    kept = [entry for entry in (path or "").split(os.pathsep) if os.path.isabs(entry)]
    return os.pathsep.join(kept) or os.defpath


def program_environment(
    *,
    extra: Iterable[str] = (),
    protocols: Sequence[str] = WORKSPACE_PROTOCOLS,
    ceiling: Path | None = None,
    source: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment of one program: the minimal one, then git's hardening."""
    source = os.environ if source is None else source
    names = {*PASSED, *extra, *(name for name in source if name.startswith("LC_"))}
    env = {name: source[name] for name in names if name in source}
    env["PATH"] = clean_path(source.get("PATH"))
    env["PAGER"] = "cat"
    env.update(git_environment(protocols=protocols, ceiling=ceiling))
    return env


def git_environment(
    *, protocols: Sequence[str] = WORKSPACE_PROTOCOLS, ceiling: Path | None = None
) -> dict[str, str]:
    """The ``GIT_*`` variables described above."""
    env = {
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "true",
        "GIT_SSH_COMMAND": "ssh -o BatchMode=yes",
        "GIT_PAGER": "cat",
        "GIT_EDITOR": ":",
        "GIT_SEQUENCE_EDITOR": ":",
        "GIT_ALLOW_PROTOCOL": ":".join(protocols),
        "GIT_CONFIG_COUNT": str(len(GIT_OVERRIDES)),
    }
    for n, (key, value) in enumerate(GIT_OVERRIDES):
        env[f"GIT_CONFIG_KEY_{n}"] = key
        env[f"GIT_CONFIG_VALUE_{n}"] = value
    if ceiling is not None:
        env["GIT_CEILING_DIRECTORIES"] = str(ceiling)
    return env


def check_git_config(root: Path, env: Mapping[str, str], timeout: float = 10.0) -> None:
    """Raise ``ProgramRefused`` when the repository at ``root`` (as git finds it with
    ``env``) has config that would make git run a program (``GIT_DANGEROUS``)."""
    git = shutil.which("git", path=env.get("PATH"))
    if git is None:
        return  # the command itself reports that git is missing
    argv = [git, "config", "--list", "--show-scope", "--show-origin", "--includes", "-z"]
    try:
        done = subprocess.run(
            argv,
            cwd=root,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ProgramRefused(
            f"git: cannot read the repository's config to check it ({exc}); git was not run."
        ) from exc
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip()
        raise ProgramRefused(
            f"git: cannot read the repository's config to check it ({detail}); fix the "
            "config (git config --list shows the problem); git was not run."
        )
    fields = done.stdout.decode("utf-8", "replace").split("\0")
    for scope, origin, entry in zip(fields[0::3], fields[1::3], fields[2::3], strict=False):
        key = entry.partition("\n")[0]
        if scope != "command" and GIT_DANGEROUS.fullmatch(key.lower()):
            where = origin.removeprefix("file:")
            raise ProgramRefused(
                f"git: the repository's config ({where}) sets {key}, which makes git run a "
                "program; Heron runs no git command in this workspace while it is set. If you "
                f"trust it, remove it yourself: git config --unset {key}"
            )
