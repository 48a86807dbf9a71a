"""Issue 33, deploys are exact: a failed release's untracked leftovers must not make the
watchdog refuse the next good commit as "local changes"."""

from __future__ import annotations

from pathlib import Path

from heron.settings import Settings
from tests.ops.watchdog.conftest import watchdog
from tests.ops.watchdog.test_deploy import commit, config, git, repos, settings  # noqa: F401
from tests.test_notify import Hook, hook  # noqa: F401


def test_a_failed_release_leaves_nothing_that_blocks_the_next_good_commit(
    settings: Settings,  # noqa: F811 (the fixtures imported above)
    repos: tuple[Path, Path, str],  # noqa: F811
    hook: Hook,  # noqa: F811
    tmp_path: Path,
) -> None:
    """Issue 33: the broken build writes untracked files (not ignored) and fails; the
    rollback deletes exactly those, keeps a person's own untracked file, and the next
    good commit deploys instead of being refused as "local changes"."""
    work, deployed, _ = repos
    (deployed / "build.out").write_text("yes\n")
    (deployed / "notes.txt").write_text("mine\n")  # untracked, there before: kept
    (work / "build.py").write_text(
        "import os\nos.makedirs('gen/deep', exist_ok=True)\n"
        "open('gen/deep/left.txt', 'w').write('x')\nopen('stray.txt', 'w').write('x')\n"
        "open('build.out', 'w').write(open('healthy.txt').read())\n"
    )
    commit(work, False, "broken, and litters")
    yml = config(deployed, hook, tmp_path / "r.log")
    broken = watchdog(settings, yml).run_once()["checks"][1]
    assert not broken["ok"] and "rolled back" in broken["detail"]
    [clean] = [a for a in broken["actions"] if a["action"] == "clean"]
    assert clean["ok"] and sorted(clean["removed"]) == ["gen/deep/left.txt", "stray.txt"]
    assert not (deployed / "gen").exists() and not (deployed / "stray.txt").exists()
    assert (deployed / "notes.txt").read_text() == "mine\n"

    (work / "build.py").write_text("open('build.out', 'w').write(open('healthy.txt').read())\n")
    fixed = commit(work, True, "fixed")
    report = watchdog(settings, yml).run_once()["checks"][1]
    assert report["ok"] and f"deployed {fixed[:12]}" in report["detail"], report["detail"]
    assert git(deployed, "rev-parse", "HEAD") == fixed
