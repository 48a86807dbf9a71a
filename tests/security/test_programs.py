"""Allowlisted programs cannot be turned into "run anything": each attack below would
create the marker file ``pwned`` (most do, against plain git or the old name-only
allowlist; ``test_the_attacks_are_real`` shows it for a few), and the marker must never
appear, whether the command comes through ``Workspace.run_command``, ``tools.call`` on the
real server, ``heron tools call`` or a job's steps."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from heron.core.errors import ToolInputError
from heron.core.workspace import Workspace
from heron.errors import ConfigError
from heron.jobs import JobRunner, open_jobs
from heron.programs import load_policy
from heron.settings import Settings
from tests.run_heron import run_heron
from tests.security.served import Served, git, make_repo, serve

ALLOWED = ["git", "pytest", "make", "npm", "ls", "cat", "printenv", "touch", "python3", "sh"]
ALLOWED += ["env", "xargs", "awk", "timeout", "npx", "dd", "tar", "crontab", "cp"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "pwned"


@pytest.fixture
def ws(repo: Path) -> Workspace:
    return Workspace(repo, commands=ALLOWED, timeout=20, policy=load_policy(None))


def git_escapes(m: Path, tmp: Path) -> list[list[str]]:
    """Each is a git command line that runs ``touch m`` (or writes or reads outside)."""
    t = f"touch {m}"
    evil = tmp / "exec-path"
    return [
        ["git", "-c", f"alias.x=!{t}", "x"],
        ["git", f"-calias.x=!{t}", "x"],
        ["git", "--config-env=alias.x=HERON_EVIL", "x"],
        ["git", "-c", f"core.fsmonitor={t}", "status"],
        ["git", "-c", f"core.pager={t}", "-p", "log"],
        ["git", "--paginate", "log"],
        ["git", "-c", f"core.sshCommand={t}", "fetch", "ssh://example.com/x"],
        ["git", "-c", "protocol.ext.allow=always", "ls-remote", f"ext::sh -c touch% {m}"],
        ["git", "ls-remote", f"ext::sh -c touch% {m}"],
        ["git", "fetch", f"ext::sh -c touch% {m}"],
        ["git", "fetch", f"--upload-pack={t}", "origin"],
        ["git", "fetch", f"--upload-p={t}", "origin"],  # git accepts unambiguous prefixes
        ["git", "fetch", "--upload-pack", t, "origin"],
        ["git", "pull", "-u", t, "origin"],
        ["git", "clone", "-u", t, ".", "copy"],
        ["git", "ls-remote", f"--upload-pack={t}", "."],
        ["git", "push", f"--receive-pack={t}", "origin"],
        ["git", "push", f"--exec={t}", "origin"],
        ["git", "log", f"--output={m}"],
        ["git", "diff", f"--output={m}"],
        ["git", "log", "--", f"--output={m}"],
        ["git", f"--git-dir={tmp}/elsewhere/.git", "status"],
        ["git", "--work-tree=/", "status"],
        ["git", "-C", "/", "status"],
        ["git", "--namespace=x", "log"],
        ["git", f"--exec-path={evil}", "pwn"],
        ["git", "difftool", f"--extcmd={t}", "HEAD"],
        ["git", "diff", "--ext-diff"],
        ["git", "filter-branch", "--tree-filter", t, "HEAD"],
        ["git", "submodule", "foreach", t],
        ["git", "bisect", "run", "touch", str(m)],
        ["git", "rebase", f"--exec={t}", "HEAD~1"],
        ["git", "rebase", "-x", t, "HEAD~1"],
        ["git", "grep", f"--open-files-in-pager={t}", "first"],
        ["git", "grep", f"-O{t}", "first"],
        ["git", "archive", f"--exec={t}", "--remote=.", "HEAD"],
        ["git", "config", "alias.x", f"!{t}"],
        ["git", "config", "core.fsmonitor", t],
        ["git", "diff", "--no-index", "/etc/hostname", "notes.txt"],
        ["git", "status", "--ignore-submodules=none"],
        ["git", "log", "-n", f"--output={m}"],
    ]


def other_escapes(m: Path, tmp: Path) -> list[list[str]]:
    """pytest, make, npm, interpreters, launchers and plain programs."""
    t = f"touch {m}"
    elsewhere = tmp / "elsewhere"
    return [
        ["pytest", "-p", "evil_plugin"],
        ["pytest", f"--rootdir={elsewhere}"],
        ["pytest", "-c", f"{elsewhere}/pytest.ini"],
        ["pytest", f"--basetemp={elsewhere}"],
        ["pytest", "-o", "addopts=-p evil_plugin"],
        ["pytest", "--pdbcls=evil_plugin:Pdb", "--pdb"],
        ["pytest", "-W", "error::evil_plugin.Warning"],
        ["pytest", "--pyargs", "evil_plugin"],
        ["pytest", f"--junitxml={elsewhere}/report.xml"],
        ["pytest", "--rootd=/"],  # argparse, too, takes prefixes
        ["make", f"--eval=$(shell {t})"],
        ["make", "-E", f"$(shell {t})"],
        ["make", "all", f"CC={t}"],
        ["make", f"SHELL=/bin/sh -c '{t}'"],
        ["make", "-f", f"{elsewhere}/Makefile"],
        ["make", "-C", str(elsewhere)],
        ["make", f"-I{elsewhere}"],
        ["npm", "exec", "--", "touch", str(m)],
        ["npm", "x", "touch", str(m)],
        ["npm", "test", f"--script-shell={elsewhere}/shell.sh"],
        ["npm", f"--prefix={elsewhere}", "test"],
        ["npm", "install", "evil-package"],
        ["npm", "run-script", "-c", t],
        ["npx", "touch", str(m)],
        ["python3", "-c", f"open({str(m)!r}, 'w')"],
        ["python3", "evil.py"],
        ["sh", "-c", t],
        ["env", "touch", str(m)],
        ["xargs", "touch", str(m)],
        ["timeout", "5", "touch", str(m)],
        ["awk", f'BEGIN {{ system("{t}") }}'],
        ["touch", str(m)],
        ["touch", "../pwned"],
        ["dd", "if=/etc/hostname", f"of={m}"],
        ["tar", "xfI", "a.tar", t],
        ["crontab", "evil.cron"],
        ["cp", "notes.txt", f"x=/{m}"],
        ["cat", "/etc/passwd"],
        ["ls", "-L", "."],
        ["ls", "/"],
    ]


def plant_helpers(tmp: Path, repo: Path, marker: Path) -> None:
    """What the attacks above would use if they got through."""
    evil = tmp / "exec-path"
    evil.mkdir()
    (evil / "git-pwn").write_text(f"#!/bin/sh\ntouch {marker}\n")
    (evil / "git-pwn").chmod(0o755)
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "Makefile").write_text(f"all:\n\ttouch {marker}\n")
    (elsewhere / "keep.txt").write_text("must survive\n")
    (repo / "Makefile").write_text("all:\n\t$(CC) hello.c\n")
    (repo / "evil_plugin.py").write_text(f"open({str(marker)!r}, 'w')\n")
    (repo / "evil.py").write_text(f"open({str(marker)!r}, 'w')\n")


def ids(attacks: list[list[str]]) -> list[str]:
    return [shlex.join(a)[:60] for a in attacks]


SAMPLE = Path("/m")
GIT_ATTACKS = git_escapes(SAMPLE, Path("/t"))
OTHER_ATTACKS = other_escapes(SAMPLE, Path("/t"))


def materialise(attack: list[str], marker: Path, tmp: Path) -> list[str]:
    """The attack with the sample paths made this test's."""
    return [a.replace(str(SAMPLE), str(marker)).replace("/t/", f"{tmp}/") for a in attack]


ATTACKS = GIT_ATTACKS + OTHER_ATTACKS


@pytest.mark.parametrize("attack", ATTACKS, ids=ids(ATTACKS))
def test_run_command_refuses_the_escape(
    ws: Workspace, repo: Path, marker: Path, tmp_path: Path, attack: list[str]
) -> None:
    plant_helpers(tmp_path, repo, marker)
    argv = materialise(attack, marker, tmp_path)
    with pytest.raises(ToolInputError) as refused:
        ws.run_command(argv)
    assert "Traceback" not in str(refused.value)
    with pytest.raises(ToolInputError):
        ws.run_command(shlex.join(argv))  # the same as one string, as a model sends it
    assert not marker.exists()
    assert (tmp_path / "elsewhere" / "keep.txt").exists()
    assert not (tmp_path / "elsewhere" / "report.xml").exists()


@pytest.mark.parametrize(
    "attack",
    [
        ["git", "-c", "alias.x=!touch {m}", "x"],
        ["git", "-c", "core.fsmonitor=touch {m}", "status"],
        ["git", "--exec-path={tmp}/exec-path", "pwn"],
        ["git", "ls-remote", "--upload-pack=touch {m}", "."],
        ["make", "all", "CC=touch {m}"],
    ],
)
def test_the_attacks_are_real(repo: Path, marker: Path, tmp_path: Path, attack: list[str]) -> None:
    """Run without Heron, a sample of the attacks does create the marker: the tests above
    would fail if the policy let them through."""
    plant_helpers(tmp_path, repo, marker)
    argv = [a.format(m=marker, tmp=tmp_path) for a in attack]
    subprocess.run(argv, cwd=repo, capture_output=True, timeout=30, check=False)
    assert marker.exists()


def test_everyday_commands_still_run(
    ws: Workspace, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    assert "notes.txt" in ws.run_command("git status")["stdout"]
    assert "notes.txt | 1 +" in ws.run_command("git diff --stat")["stdout"]
    log = ws.run_command("git log --oneline -5")["stdout"].splitlines()
    assert [line.split(" ", 1)[1] for line in log] == ["second", "first"]
    assert "+second" in ws.run_command("git show HEAD")["stdout"]
    assert ws.run_command("git status --short --branch")["stdout"].startswith("## main")
    assert "+second" in ws.run_command("git log -p -1 --format=%s -- notes.txt")["stdout"]
    assert "notes.txt" in ws.run_command("ls -l")["stdout"]
    (repo / "test_ok.py").write_text("def test_ok():\n    assert True\n")
    tested = ws.run_command("pytest -q -p no:cacheprovider test_ok.py")
    assert tested["exit_code"] == 0, tested
    assert "1 passed" in tested["stdout"]


def test_a_planted_repository_config_runs_nothing(ws: Workspace, repo: Path, marker: Path) -> None:
    """A ``.git/config`` written behind Heron's back (by a build, a test, a person): the
    keys git's overrides neutralise are harmless, the ones they cannot reach stop git."""
    t = f"touch {marker}"
    git(repo, "config", "core.fsmonitor", t)
    git(repo, "config", "core.pager", t)
    git(repo, "config", "pager.log", t)
    git(repo, "config", "alias.st", f"!{t}")
    git(repo, "config", "core.sshCommand", t)
    git(repo, "config", "core.hooksPath", ".git/hooks")
    git(repo, "config", "user.name", "t")
    git(repo, "config", "user.email", "t@example.com")
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\n{t}\n")
    hook.chmod(0o755)
    assert ws.run_command("git status")["exit_code"] == 0
    assert ws.run_command("git diff")["exit_code"] == 0
    assert ws.run_command("git log -p")["exit_code"] == 0
    assert ws.run_command("git commit -qam third")["exit_code"] == 0
    with pytest.raises(ToolInputError, match="subcommand 'st' is not allowed"):
        ws.run_command("git st")
    assert not marker.exists()
    # A remote that would run a program: the transport is not allowed.
    git(repo, "remote", "add", "origin", f"ext::sh -c touch% {marker}")
    fetched = ws.run_command("git fetch origin")
    assert fetched["exit_code"] != 0 and "not allowed" in fetched["stderr"]
    git(repo, "remote", "set-url", "origin", "ssh://127.0.0.1:1/x")
    assert ws.run_command("git fetch origin")["exit_code"] != 0
    assert not marker.exists()


@pytest.mark.parametrize(
    ("key", "value", "command"),
    [
        ("diff.evil.textconv", "sh -c 'touch {m}; cat \"$1\"' -", "git diff"),
        ("diff.evil.textconv", "sh -c 'touch {m}; cat \"$1\"' -", "git log -p"),
        ("diff.evil.textconv", "sh -c 'touch {m}; cat \"$1\"' -", "git show HEAD"),
        ("filter.evil.clean", "sh -c 'touch {m}; cat'", "git status"),
        ("filter.evil.clean", "sh -c 'touch {m}; cat'", "git diff"),
        ("diff.external", "touch {m}", "git diff"),
        ("core.worktree", "/", "git status"),
        ("remote.origin.uploadpack", "touch {m}", "git fetch origin"),
        ("gpg.program", "touch {m}", "git log --oneline"),
        ("credential.helper", "!touch {m}", "git fetch origin"),
        ("merge.evil.driver", "touch {m}", "git status"),
    ],
)
def test_repository_config_that_names_a_program_stops_git(
    ws: Workspace, repo: Path, marker: Path, key: str, value: str, command: str
) -> None:
    (repo / ".gitattributes").write_text("* diff=evil filter=evil merge=evil\n")
    git(repo, "add", ".gitattributes")
    git(repo, "commit", "-qm", "attributes")
    (repo / "notes.txt").write_text("changed\n")
    git(repo, "remote", "add", "origin", str(repo))
    git(repo, "config", key, value.format(m=marker))
    with pytest.raises(ToolInputError, match=rf"sets {key}.*git config --unset {key}"):
        ws.run_command(command)
    assert not marker.exists()


def test_included_config_is_checked_too(
    ws: Workspace, repo: Path, marker: Path, tmp_path: Path
) -> None:
    included = tmp_path / "included.cfg"
    included.write_text(f"[diff]\n\texternal = touch {marker}\n")
    git(repo, "config", "include.path", str(included))
    with pytest.raises(ToolInputError, match=r"sets diff\.external"):
        ws.run_command("git diff")
    assert not marker.exists()


def test_a_repository_above_the_root_is_not_used(tmp_path: Path, repo: Path) -> None:
    """A workspace inside a repository must not reach the files around it through git."""
    inner = repo / "inner"
    inner.mkdir()
    ws = Workspace(inner, commands=["git"], policy=load_policy(None))
    status = ws.run_command("git status")
    assert status["exit_code"] != 0 and "not a git repository" in status["stderr"]


def test_a_program_found_inside_the_workspace_is_not_run(
    ws: Workspace, repo: Path, marker: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = repo / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").write_text(f"#!/bin/sh\ntouch {marker}\n")
    (bin_dir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(ToolInputError, match="inside the workspace"):
        ws.run_command("git status")
    (repo / "git").write_text((bin_dir / "git").read_text())
    (repo / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f".{os.pathsep}bin{os.pathsep}/usr/bin{os.pathsep}/bin")
    assert ws.run_command("git status")["exit_code"] == 0  # relative PATH entries dropped
    assert not marker.exists()


def test_programs_get_no_secrets_from_the_environment(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    secrets = {
        "HERON_API_TOKEN": "heron-token-123-0123456789abcdefghij",
        "OPENAI_API_KEY": "sk-secret-456",
        "AWS_SECRET_ACCESS_KEY": "aws-secret-789",
        "GIT_DIR": "/srv/elsewhere/.git",
        "PYTEST_ADDOPTS": "-p evil_plugin",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    printed = ws.run_command("printenv")["stdout"]
    for value in secrets.values():
        assert value not in printed
    assert "PATH=" in printed and "GIT_CONFIG_GLOBAL=/dev/null" in printed
    policy = tmp_path / "policy.yml"
    policy.write_text("environment: [OPENAI_API_KEY]\n")
    opted = Workspace(ws.root, commands=["printenv"], policy=load_policy(policy))
    # The variable reaches the program; its value is masked in the output Heron returns.
    assert "OPENAI_API_KEY=[REDACTED]" in opted.run_command("printenv")["stdout"]


def test_the_policy_file_extends_the_table(
    repo: Path, tmp_path: Path, marker: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = tmp_path / "policy.yml"
    policy.write_text(
        "programs:\n"
        "  echo:\n"
        "    options: {-n: flag}\n"
        "  python3:\n"
        "    any_arguments: true   # the explicit opt-in: python3 may run any code\n"
        "protected_paths: [deploy/*.sh]\n"
    )
    monkeypatch.setenv("HERON_TOOLS_POLICY", str(policy))
    ws = Workspace(
        repo, commands=["echo", "python3", "git"], policy=load_policy(Settings().tools.policy)
    )
    assert ws.policy.source == policy
    assert ws.run_command("echo -n hi")["stdout"] == "hi"
    with pytest.raises(ToolInputError, match="option '-e' is not allowed"):
        ws.run_command("echo -e hi")
    ws.run_command(["python3", "-c", f"open({str(marker)!r}, 'w')"])
    assert marker.exists()
    with pytest.raises(ToolInputError, match=r"deploy/\*\.sh"):
        ws.write_file("deploy/release.sh", "echo hi\n")
    assert "--oneline" in ws.policy.programs["git"].subcommands["log"].options  # type: ignore[index]


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("programs:\n  echo:\n    options: {-n: sometimes}\n", r"programs\.echo\.options\.-n"),
        ("programs:\n  echo:\n    optoins: {}\n", r"programs\.echo\.optoins"),
        ("programs:\n  echo:\n    options: {n: flag}\n", "not an option name"),
        ("programs:\n  echo:\n    match: '('\n", "not a regular expression"),
        ("environment: ['BAD NAME']\n", "not an environment variable name"),
        ("programs: [echo]\n", r"programs: Input should be a valid dictionary"),
        ("- just a list\n", "must be a mapping"),
        ("programs: {echo: [\n", "not valid YAML"),
    ],
)
def test_a_bad_policy_file_says_where(tmp_path: Path, text: str, match: str) -> None:
    policy = tmp_path / "policy.yml"
    policy.write_text(text)
    with pytest.raises(ConfigError, match=match) as bad:
        load_policy(policy)
    assert str(policy) in str(bad.value) and "HERON_TOOLS_POLICY" in str(bad.value)
    with pytest.raises(ConfigError, match="does not exist"):
        load_policy(tmp_path / "missing.yml")


def test_a_job_runs_git_hardened(
    home: Path, repo: Path, marker: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The job runner's own ``git status`` / ``git diff --stat`` steps in a repository
    with planted config: overridden keys do nothing, unreachable ones fail the step."""
    monkeypatch.setenv("HERON_TOOLS_ROOT", str(repo))
    monkeypatch.setenv("HERON_TOOLS_COMMANDS", '["git"]')
    git(repo, "config", "core.fsmonitor", f"touch {marker}")
    git(repo, "config", "core.pager", f"touch {marker}")
    jobs = open_jobs(Settings())
    try:
        job = jobs.create("what changed?")
        asyncio.run(JobRunner(jobs).run_until_idle())
        done = jobs.get(job.id)
        assert done.result is not None and done.result["ok"] is True, done.result
        assert not marker.exists()
        (repo / ".gitattributes").write_text("* filter=evil\n")
        git(repo, "config", "filter.evil.clean", f"sh -c 'touch {marker}; cat'")
        job = jobs.create("what changed?")
        asyncio.run(JobRunner(jobs).run_until_idle())
        failed = [e.payload for e in jobs.events(job.id) if e.kind == "step_failed"]
        assert [f["step"] for f in failed] == ["git_status", "git_diff"]
        assert "sets filter.evil.clean" in failed[0]["error"]
        assert not marker.exists()
    finally:
        jobs.close()


# -- the same attacks from outside the process ------------------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, Path]]:
    """The real server with a git workspace and git allowlisted, as in the issue."""
    tmp = tmp_path_factory.mktemp("programs")
    repo = make_repo(tmp / "repo")
    env = {"HERON_TOOLS_ROOT": str(repo), "HERON_TOOLS_COMMANDS": '["git", "ls"]'}
    with serve(tmp, env) as server:
        yield server, tmp


@pytest.mark.parametrize(
    "attack",
    [
        "git -c alias.x='!touch {m}' x",
        "git -calias.x='!touch {m}' x",
        "git -c core.fsmonitor='touch {m}' status",
        "git fetch --upload-pack='touch {m}' origin",
        "git ls-remote 'ext::sh -c touch% {m}'",
        "git log --output={m}",
        "git --exec-path={tmp} pwn",
        "git grep --open-files-in-pager='touch {m}' first",
    ],
)
def test_tools_call_over_the_server_refuses_the_escape(
    served: tuple[Served, Path], attack: str
) -> None:
    server, tmp = served
    marker = tmp / "pwned"
    command = attack.format(m=marker, tmp=tmp)
    reply = server.rpc("tools.call", {"name": "run_command", "arguments": {"command": command}})
    assert reply["error"]["code"] == -32001, reply
    assert "Nothing was run" in reply["error"]["message"]
    assert not marker.exists()


def test_tools_call_over_the_server_with_planted_config(served: tuple[Served, Path]) -> None:
    server, tmp = served
    marker, repo = tmp / "pwned", tmp / "repo"
    git(repo, "config", "core.fsmonitor", f"touch {marker}")
    try:
        call = {"name": "run_command", "arguments": {"command": "git status"}}
        assert server.rpc("tools.call", call)["result"]["result"]["exit_code"] == 0
        git(repo, "config", "diff.external", f"touch {marker}")
        call["arguments"]["command"] = "git diff"
        error = server.rpc("tools.call", call)["error"]
        assert error["code"] == -32001 and "sets diff.external" in error["message"]
    finally:
        git(repo, "config", "--unset", "core.fsmonitor")
        git(repo, "config", "--unset-all", "diff.external")
    assert not marker.exists()
    legit = {"name": "run_command", "arguments": {"command": "git log --oneline -5"}}
    assert "second" in server.rpc("tools.call", legit)["result"]["result"]["stdout"]


def test_heron_tools_call_refuses_the_escape(repo: Path, marker: Path, home: Path) -> None:
    arguments = json.dumps({"command": f"git -c alias.x='!touch {marker}' x"})
    done = run_heron(
        "tools", "call", "run_command", "--root", str(repo), "--allow", "git",
        "--args", arguments, ok=False,
    )  # fmt: skip
    assert done.returncode == 1
    assert "option '-c' is not allowed" in done.stderr and "Traceback" not in done.stderr
    assert not marker.exists()
