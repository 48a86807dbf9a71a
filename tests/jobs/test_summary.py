"""``heron.jobs.summary``: golden summaries of real command outputs (real git in a
repository with real changes and an upstream, real pytest runs passing and failing)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from heron.jobs.summary import branch, facts, pytest_line
from tests.jobs.conftest import git


def _run(root: Path, *argv: str) -> dict[str, object]:
    proc = subprocess.run(argv, cwd=root, capture_output=True, text=True, check=False)
    return {"exit_code": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr}


def _git_steps(root: Path) -> list[dict[str, object]]:
    return [
        {"step": "git_status", "ok": True} | _run(root, "git", "status", "--short", "--branch"),
        {"step": "git_diff", "ok": True} | _run(root, "git", "diff", "--stat"),
    ]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A clone two commits ahead of its origin, three tracked files edited, one staged
    new file and one untracked file."""
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    root = tmp_path / "work"
    git(tmp_path, "clone", "-q", str(origin), str(root))
    (root / "heron").mkdir()
    (root / "tests").mkdir()
    (root / "README.md").write_text("# X\n\nOld line.\n")
    (root / "heron" / "x.py").write_text("A = 1\nB = 2\n")
    (root / "tests" / "t.py").write_text("def test_a():\n    assert True\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "one")
    git(root, "push", "-q", "origin", "main")
    for n in (2, 3):
        (root / f"log{n}.txt").write_text(f"{n}\n")
        git(root, "add", f"log{n}.txt")
        git(root, "commit", "-q", "-m", f"commit {n}")
    (root / "README.md").write_text("# X\n\nNew line.\nAnother.\n")  # +2 -1
    (root / "heron" / "x.py").write_text("A = 1\nB = 3\nC = 4\nD = 5\n")  # +3 -1
    (root / "tests" / "t.py").write_text("def test_a():\n    assert 1\n")  # +1 -1
    (root / "staged.py").write_text("S = 1\n")
    git(root, "add", "staged.py")
    (root / "notes.txt").write_text("todo\n")
    return root


def test_real_git_changes_give_branch_files_and_stat(repo: Path) -> None:
    assert facts(_git_steps(repo)) == (
        "On branch main (2 ahead of origin/main): 3 files changed (README.md, heron/x.py, "
        "tests/t.py), 6 insertions, 3 deletions; 1 staged file (staged.py); 1 untracked "
        "file (notes.txt)."
    )


def test_a_clean_checkout_says_so(repo: Path) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "all")
    git(repo, "push", "-q", "origin", "main")
    assert facts(_git_steps(repo)) == (
        "On branch main (up to date with origin/main): no uncommitted changes."
    )


def test_a_new_repository_and_one_behind(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    git(tmp_path, "init", "-q", "-b", "trunk", str(fresh))
    assert facts(_git_steps(fresh)) == "On branch trunk (no commits yet): no uncommitted changes."
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    ahead, behind = tmp_path / "a", tmp_path / "b"
    git(tmp_path, "clone", "-q", str(origin), str(ahead))
    for n in (1, 2):
        (ahead / "f.txt").write_text(f"{n}\n")
        git(ahead, "add", "f.txt")
        git(ahead, "commit", "-q", "-m", str(n))
        git(ahead, "push", "-q", "origin", "main")
        if n == 1:
            git(tmp_path, "clone", "-q", str(origin), str(behind))
    git(behind, "fetch", "-q")
    assert branch(str(_git_steps(behind)[0]["stdout"])) == "On branch main (1 behind origin/main)"


def test_many_files_are_counted_beyond_five(tmp_path: Path) -> None:
    root = tmp_path / "many"
    git(tmp_path, "init", "-q", "-b", "main", str(root))
    for n in range(8):
        (root / f"f{n}.txt").write_text("a\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "eight")
    for n in range(8):
        (root / f"f{n}.txt").write_text("b\n")
    assert facts(_git_steps(root)) == (
        "On branch main: 8 files changed (f0.txt, f1.txt, f2.txt, f3.txt, f4.txt and 3 more), "
        "8 insertions, 8 deletions."
    )


PROJECT = {
    "test_ok.py": "def test_one():\n    assert 1\n\ndef test_two():\n    assert 2\n",
    "test_bad.py": "def test_three():\n    assert 1 == 2\n",
}


@pytest.mark.parametrize("failing", [False, True])
def test_real_pytest_runs_give_their_last_line(tmp_path: Path, failing: bool) -> None:
    for name, text in PROJECT.items():
        if failing or name != "test_bad.py":
            (tmp_path / name).write_text(text)
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
    out = _run(tmp_path, *argv)
    step = {"step": "test", "ok": out["exit_code"] == 0, "argv": argv} | out
    summary = facts([step])
    if failing:
        assert out["exit_code"] == 1
        assert summary.startswith("Tests: 1 failed, 2 passed in ")
    else:
        assert out["exit_code"] == 0
        assert summary.startswith("Tests: 2 passed in ")
    assert summary.endswith("s.")


def test_pytest_lines_verbose_and_empty() -> None:
    assert pytest_line("x\n\x1b[31m===== 3 failed, 1 error in 9.10s =====\x1b[0m\n") == (
        "3 failed, 1 error in 9.10s"
    )
    assert pytest_line("\n=== no tests ran in 0.01s ===\n") == "no tests ran in 0.01s"
    assert pytest_line("make: *** [check] Error 2\n") is None


def test_other_steps_and_steps_that_could_not_run() -> None:
    steps = [
        {
            "step": "test",
            "ok": False,
            "argv": ["make", "check"],
            "exit_code": 2,
            "stdout": "",
            "stderr": "make: *** [check] Error 2\n",
        },
        {
            "step": "search_docs",
            "ok": True,
            "results": [
                {"library": "kubernetes", "page": "concepts/storage/volumes"},
                {"library": "kubernetes", "page": "concepts/storage/volumes"},
                {"library": "heron", "page": "jobs"},
            ],
        },
        {
            "step": "store_counts",
            "ok": True,
            "namespaces": [{"name": "a", "records": 1200}, {"name": "b", "records": 34}],
        },
        {"step": "git_status", "ok": False, "error": "Command 'git' is not allowed. Allowed: sh"},
    ]
    assert facts(steps) == (
        "Docs: 3 results on 2 pages (best: kubernetes/concepts/storage/volumes). "
        "Store: 2 namespaces, 1,234 records. Tests (make check): failed, exit code 2. "
        "git_status could not run: Command 'git' is not allowed. Allowed: sh."
    )
    assert facts([]) == "No checks ran."


def test_a_secret_in_a_branch_name_does_not_reach_the_summary() -> None:
    token = "ghp_" + "A1b2" * 9
    status = {"step": "git_status", "ok": True, "exit_code": 0, "stdout": f"## {token}\n"}
    assert token not in facts([status])
