"""``heron.skills.scan``: a deterministic walk that accounts for every file."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from heron.skills.dirs import SkillDir
from heron.skills.parser import SkillFileError, parse_skill
from heron.skills.scan import Skipped, scan, walk_skill_files


def skill(root: Path, folder: str, name: str | None = None, description: str = "Does it.") -> Path:
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nname: {name or Path(folder).name}\ndescription: {description}\n---\n")
    return path


def test_walk_is_sorted_and_depth_first(tmp_path: Path) -> None:
    for folder in ("b", "a/z", "a", "C", "a/y/deep"):  # created out of order on purpose
        skill(tmp_path, folder, name=folder.replace("/", "-"))
    report = scan([SkillDir(tmp_path, "test")])
    assert [s.name for s in report.skills] == ["C", "a", "a-y-deep", "a-z", "b"]
    assert [s.name for s in scan([SkillDir(tmp_path, "test")]).skills] == [
        s.name for s in report.skills
    ]


def test_first_directory_wins_and_every_duplicate_is_reported(tmp_path: Path) -> None:
    high, low = tmp_path / "high", tmp_path / "low"
    kept = skill(high, "pdf", "pdf-tools")
    shadowed = skill(low, "pdf", "PDF-Tools")
    also = skill(low, "other", "pdf-tools")
    skill(low, "unique", "unique")
    report = scan([SkillDir(high, "a"), SkillDir(low, "b"), SkillDir(tmp_path / "none", "c")])
    assert [s.name for s in report.skills] == ["pdf-tools", "unique"]
    assert report.skills[0].path == kept
    assert [(s.kept, s.shadowed) for s in report.shadowed] == [(kept, also), (kept, shadowed)]
    assert [(d.exists, d.files) for d in report.dirs] == [(True, 1), (True, 3), (False, 0)]
    assert report.files == len(report.parsed) == 4


def test_failures_and_recoveries_are_all_accounted_for(tmp_path: Path) -> None:
    skill(tmp_path, "good")
    (tmp_path / "binary").mkdir()
    (tmp_path / "binary" / "SKILL.md").write_bytes(b"\x00\x01")
    (tmp_path / "unclosed").mkdir()
    (tmp_path / "unclosed" / "SKILL.md").write_text("---\nname: u\ndescription: d\n")
    report = scan([SkillDir(tmp_path, "test")])
    assert report.files == 3 == len(report.parsed) + len(report.failures)
    assert [f.path.parent.name for f in report.failures] == ["binary"]
    assert [s.name for s in report.recovered] == ["u"]
    data = report.to_dict()
    assert data["failed"][0]["reason"].startswith("binary content")
    assert data["recovered"][0]["diagnostics"][0].startswith("unclosed-front-matter")


def test_symlink_loop_is_reported_and_ends(tmp_path: Path) -> None:
    skill(tmp_path, "a")
    (tmp_path / "a" / "loop").symlink_to(tmp_path)
    report = scan([SkillDir(tmp_path, "test")])
    assert [s.name for s in report.skills] == ["a"]
    assert report.skipped == [Skipped(tmp_path / "a" / "loop", f"symlink loop back to {tmp_path}")]


def test_linked_skills_are_followed_once_when_allowed(tmp_path: Path) -> None:
    outside = tmp_path / "checkout"
    skill(outside, "linked")
    root = tmp_path / "skills"
    root.mkdir()
    (root / "one").symlink_to(outside / "linked")
    (root / "two").symlink_to(outside / "linked")
    report = scan([SkillDir(root, "test")], follow_symlinks=True)
    assert [s.path for s in report.skills] == [root / "one" / "SKILL.md"]
    assert report.skipped == [Skipped(root / "two", f"same directory as {root / 'one'}")]
    again = scan([SkillDir(root, "a"), SkillDir(outside, "b")], follow_symlinks=True)
    assert [s.reason for s in again.skipped][-1] == f"same directory as {root / 'one'}"


def test_links_leaving_the_root_are_skipped_by_default(tmp_path: Path) -> None:
    outside = tmp_path / "checkout"
    skill(outside, "linked")
    root = tmp_path / "skills"
    skill(root, "inner")
    (root / "one").symlink_to(outside / "linked")
    (root / "alias").symlink_to(root / "inner")  # stays inside: followed
    report = scan([SkillDir(root, "test")])
    assert [s.path.parent.name for s in report.skills] == ["alias"]
    assert [s.path.name for s in report.skipped] == ["one", "inner"]
    assert report.skipped[0].reason.startswith("symlink outside its directory")
    assert len(scan([SkillDir(root, "test")], follow_symlinks=True).skills) == 2


def test_hidden_directories_are_not_searched_but_listed(tmp_path: Path) -> None:
    skill(tmp_path, "ok")
    skill(tmp_path, ".hub/quarantined")
    skill(tmp_path, "ok/node_modules/dep")
    report = scan([SkillDir(tmp_path, "test")])
    assert [s.name for s in report.skills] == ["ok"]
    assert sorted(s.path.name for s in report.skipped) == [".hub", "node_modules"]


def test_a_root_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    report = scan([SkillDir(tmp_path / "file", "test")])
    assert report.dirs[0].exists is False
    assert report.skipped == [Skipped(tmp_path / "file", "not a directory")]


def test_a_directory_vanishing_mid_scan(tmp_path: Path) -> None:
    first = skill(tmp_path, "a")
    skill(tmp_path, "b/inner")
    skipped: list[Skipped] = []
    walk = walk_skill_files(tmp_path, skipped)
    assert next(walk) == first
    shutil.rmtree(tmp_path / "b")  # listed by the walk, gone before it is entered
    assert list(walk) == []
    assert skipped == [Skipped(tmp_path / "b", "vanished during the scan")]


def test_a_file_vanishing_mid_scan_is_a_failure_not_a_crash(tmp_path: Path) -> None:
    skill(tmp_path, "a")
    gone = skill(tmp_path, "b")
    walk = walk_skill_files(tmp_path, [])
    next(walk)
    path = next(walk)
    gone.unlink()
    with pytest.raises(SkillFileError, match="disappeared during the scan"):
        parse_skill(path)


#: Root reads and lists whatever the modes say: the case runs without that power.
UNPRIVILEGED = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]


def test_an_unreadable_directory(tmp_path: Path) -> None:
    skill(tmp_path, "locked/inner")
    (tmp_path / "locked").chmod(0)
    code = (
        "import sys; from pathlib import Path; from heron.skills.dirs import SkillDir; "
        "from heron.skills.scan import scan; "
        "print(scan([SkillDir(Path(sys.argv[1]), 'test')]).skipped[0].reason)"
    )
    prefix = UNPRIVILEGED if os.geteuid() == 0 else []
    try:
        done = subprocess.run(
            [*prefix, sys.executable, "-c", code, str(tmp_path)],
            capture_output=True,
            text=True,
            check=True,
        )
    finally:
        (tmp_path / "locked").chmod(0o755)
    assert done.stdout.startswith("permission denied"), done
