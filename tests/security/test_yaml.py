"""Attacks by skill and page authors: YAML bombs, symlinks out of the skill, FIFOs, huge
files. Each attack runs in a forked child with a deadline (``tests.security.deadline``),
so code that hangs on it fails the test instead of hanging the suite."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from heron.libraries.parse import parse_page
from heron.settings import Settings
from heron.skills import SkillIndex, open_skills
from heron.skills.dirs import SkillDir
from heron.skills.parser import MAX_BYTES, parse_skill
from heron.skills.scan import scan
from tests.conftest import sqlite_store
from tests.security.deadline import within

#: Nine levels of nine aliases: 387,420,489 strings once expanded, in 600 bytes.
BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
    for p, c in zip("abcdefgh", "bcdefghi", strict=True)
)
SECRET = "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzz"


def skill(root: Path, folder: str, text: str) -> Path:
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def failures(root: Path, **options: Any) -> dict[str, str]:
    report = scan([SkillDir(root, "test")], **options)
    return {f.path.parent.name: f.reason for f in report.failures}


# -- the alias bomb -------------------------------------------------------------------


def test_an_alias_bomb_skill_is_refused_at_once(tmp_path: Path) -> None:
    skill(tmp_path, "bomb", f"---\nname: bomb\n{BOMB}description: *i\ntags: *i\n---\nBody\n")
    skill(tmp_path, "good", "---\nname: good\ndescription: Does good things.\n---\n")

    def attack() -> tuple[list[str], dict[str, str]]:
        report = scan([SkillDir(tmp_path, "test")])
        return [s.name for s in report.skills], {
            f.path.parent.name: f.reason for f in report.failures
        }

    (names, failed), elapsed = within(10, attack)
    assert elapsed < 1
    assert names == ["good"]
    assert failed["bomb"].startswith("front matter refused: YAML aliases (*name) are not accepted")


def test_an_alias_bomb_in_one_entry_is_refused_too(tmp_path: Path) -> None:
    # The parser loads entry by entry after a YAML error; a bomb inside one entry must not
    # slip through that recovery.
    nested = "x: {" + ", ".join(line.replace(": ", ": ", 1) for line in BOMB.splitlines()) + "}"
    path = skill(tmp_path, "b", f"---\nname: b\ndescription: [unclosed\n{nested}\n---\n")
    reason, elapsed = within(10, lambda: _failure(path))
    assert elapsed < 1 and "aliases" in reason


def _failure(path: Path) -> str:
    try:
        parse_skill(path)
    except Exception as exc:
        return str(getattr(exc, "reason", exc))
    return "parsed"


def test_an_alias_bomb_page_is_read_without_its_front_matter() -> None:
    text = f"---\n{BOMB}title: *i\ntags: *i\n---\n# Real title\nBody.\n"
    page, elapsed = within(10, lambda: parse_page(text, "docs/bomb"))
    assert elapsed < 1
    assert page.title == "Real title" and page.tags == []
    assert "aliases" in page.warnings[0]


def test_front_matter_over_the_cap_is_refused(tmp_path: Path) -> None:
    filler = "".join(f"k{i}: {'v' * 60}\n" for i in range(1200))  # about 80 KiB
    path = skill(tmp_path, "big", f"---\nname: big\ndescription: d\n{filler}---\n")
    reason, elapsed = within(10, lambda: _failure(path))
    assert elapsed < 1 and reason.startswith("front matter refused: the YAML is")


# -- symlinks, FIFOs, huge files ------------------------------------------------------


@pytest.fixture
def secret_file(tmp_path: Path) -> Path:
    """A file outside every skill directory that a SKILL.md symlink points at."""
    path = tmp_path / "home" / ".aws" / "credentials"
    path.parent.mkdir(parents=True)
    path.write_text(f"---\nname: creds\ndescription: not a skill\n---\n{SECRET}\n")
    return path


def test_a_skill_file_linked_from_outside_is_skipped_and_never_indexed(
    tmp_path: Path, secret_file: Path, embedder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HERON_SKILLS_FOLLOW_SYMLINKS", raising=False)
    root = tmp_path / "skills"
    skill(root, "good", "---\nname: good\ndescription: Does good things.\n---\n")
    (root / "creds").mkdir()
    (root / "creds" / "SKILL.md").symlink_to(secret_file)
    (root / "linked-dir").symlink_to(secret_file.parent)  # a skill directory leaving the root
    (secret_file.parent / "SKILL.md").symlink_to(secret_file)
    store = sqlite_store(tmp_path / "heron.db", embedder)
    try:
        report = SkillIndex(store, [SkillDir(root, "test")]).index().scan
    finally:
        store.close()
    assert [s.name for s in report.skills] == ["good"]
    (failure,) = report.failures
    assert failure.path == root / "creds" / "SKILL.md"
    assert failure.reason.startswith(f"symlink outside its directory (to {secret_file})")
    assert [(s.path.name, s.reason.split(" (")[0]) for s in report.skipped] == [
        ("linked-dir", "symlink outside its directory")
    ]
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("heron.db*"))
    assert b"wJalrXUtnFEMI" not in stored
    # The documented escape hatch: skills linked in from a checkout.
    followed = scan([SkillDir(root, "test")], follow_symlinks=True)
    assert {s.name for s in followed.skills} == {"good", "creds"}


@pytest.mark.parametrize("follow", [False, True])
def test_the_setting_reaches_the_scan(tmp_path: Path, secret_file: Path, follow: bool) -> None:
    root = tmp_path / "skills"
    (root / "creds").mkdir(parents=True)
    (root / "creds" / "SKILL.md").symlink_to(secret_file)
    found = {"dirs": str(root), "follow_symlinks": follow}
    settings = Settings(home=tmp_path / "home", skills=found)
    skills = open_skills(settings)
    try:
        names = {s.name for s in skills.scan().skills}
    finally:
        skills.close()
    assert ("creds" in names) is follow


def test_a_link_inside_the_skill_is_followed(tmp_path: Path) -> None:
    real = tmp_path / "skills" / "docs" / "real.md"
    real.parent.mkdir(parents=True)
    real.write_text("---\nname: docs\ndescription: Linked inside its folder.\n---\n")
    (real.parent / "SKILL.md").symlink_to("real.md")
    assert [s.name for s in scan([SkillDir(tmp_path / "skills", "t")]).skills] == ["docs"]


def test_a_fifo_skill_is_skipped_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe" / "SKILL.md"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    skill(tmp_path, "good", "---\nname: good\ndescription: d\n---\n")
    failed, elapsed = within(10, lambda: failures(tmp_path))
    assert elapsed < 1
    assert failed == {"pipe": "is not a regular file (a FIFO, socket or device)"}


def test_a_device_linked_as_a_skill_is_skipped_at_once(tmp_path: Path) -> None:
    path = tmp_path / "zero" / "SKILL.md"
    path.parent.mkdir()
    path.symlink_to("/dev/zero")
    failed, elapsed = within(10, lambda: failures(tmp_path, follow_symlinks=True))
    assert elapsed < 1 and failed["zero"].startswith("is not a regular file")


def test_a_huge_skill_is_read_only_to_its_bound(tmp_path: Path) -> None:
    body = "A line of the body.\n" * (MAX_BYTES // 20 + 1000)
    path = skill(tmp_path, "huge", f"---\nname: huge\ndescription: Big.\n---\n{body}")
    with path.open("a") as handle:
        # Sparse to 4 GiB: reading past the bound would take long and meet NUL bytes.
        handle.truncate(4 << 30)
    parsed, elapsed = within(10, lambda: parse_skill(path))
    assert elapsed < 1
    assert parsed.name == "huge" and len(parsed.body) < MAX_BYTES
    assert parsed.diagnostics[0].code == "truncated"
