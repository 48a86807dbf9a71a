"""``heron.skills.dirs`` and the skills settings: which directories, in which order."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from heron.errors import ConfigError
from heron.settings import Settings
from heron.skills.dirs import hermes_home, skill_dirs


def dirs(tmp_path: Path, extra: list[Path] | None = None, **environ: str) -> list[tuple[str, str]]:
    found = skill_dirs(
        extra or [], tmp_path / "heron", environ=environ, windows=False, user_home=tmp_path / "u"
    )
    return [(str(d.path.relative_to(tmp_path)), d.source) for d in found]


def test_default_order(tmp_path: Path) -> None:
    assert dirs(tmp_path) == [
        ("heron/skills", "heron"),
        ("u/.hermes/skills", "hermes"),
        ("u/.claude/skills", "claude"),
    ]


def test_extra_dirs_come_first_and_repeats_are_dropped(tmp_path: Path) -> None:
    (tmp_path / "heron" / "skills").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "heron" / "skills")
    extra = [tmp_path / "mine", tmp_path / "mine", tmp_path / "link"]
    assert dirs(tmp_path, extra)[:3] == [
        ("mine", "HERON_SKILLS_DIRS"),
        ("link", "HERON_SKILLS_DIRS"),
        ("u/.hermes/skills", "hermes"),
    ]


def test_relative_paths_are_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    found = skill_dirs([Path("mine")], Path("home"), environ={}, user_home=tmp_path)
    assert [d.path for d in found[:2]] == [tmp_path / "mine", tmp_path / "home" / "skills"]


def test_hermes_base_then_every_profile(tmp_path: Path) -> None:
    for profile in ("work", "alpha"):
        (tmp_path / "h" / "profiles" / profile).mkdir(parents=True)
    assert dirs(tmp_path, HERMES_HOME=str(tmp_path / "h"))[1:4] == [
        ("h/skills", "hermes"),
        ("h/profiles/alpha/skills", "hermes profile alpha"),
        ("h/profiles/work/skills", "hermes profile work"),
    ]


def test_hermes_home_pointing_at_a_profile_gets_no_suffix_twice(tmp_path: Path) -> None:
    for profile in ("work", "alpha"):
        (tmp_path / "h" / "profiles" / profile).mkdir(parents=True)
    found = dirs(tmp_path, HERMES_HOME=str(tmp_path / "h" / "profiles" / "work"))
    assert found[1:4] == [
        ("h/profiles/work/skills", "hermes profile work (HERMES_HOME)"),
        ("h/skills", "hermes"),
        ("h/profiles/alpha/skills", "hermes profile alpha"),
    ]
    assert not any("profiles/work/profiles" in path for path, _ in found)


def test_hermes_home_pointing_at_its_skills_folder(tmp_path: Path) -> None:
    assert hermes_home({"HERMES_HOME": str(tmp_path / "h" / "skills")}) == tmp_path / "h"


def test_hermes_home_by_platform(tmp_path: Path) -> None:
    home = tmp_path / "u"
    assert hermes_home({}, windows=False, user_home=home) == home / ".hermes"
    assert (
        hermes_home({"LOCALAPPDATA": r"C:\Users\a\AppData\Local"}, windows=True)
        == Path(r"C:\Users\a\AppData\Local") / "hermes"
    )
    assert hermes_home({}, windows=True, user_home=home) == home / "AppData/Local/hermes"


def test_settings_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERON_SKILLS_DIRS", os.pathsep.join([str(tmp_path / "a"), "", "~/b"]))
    monkeypatch.setenv("HERON_SKILLS_MIN_REL", "0.7")
    settings = Settings()
    assert settings.skills.extra_dirs == [tmp_path / "a", Path.home() / "b"]
    assert settings.skills.min_rel == 0.7


def test_a_bad_setting_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERON_SKILLS_MIN_REL", "2")
    with pytest.raises(ConfigError, match="HERON_SKILLS_MIN_REL"):
        Settings()
