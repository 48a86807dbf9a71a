"""Where skills live, in precedence order (a name found earlier shadows the same name later).

1. ``HERON_SKILLS_DIRS``, in the order given;
2. ``$HERON_HOME/skills``;
3. the Hermes agent's home: ``skills/``, then every ``profiles/*/skills/`` by profile name;
4. ``~/.claude/skills``.

The Hermes home is ``$HERMES_HOME`` when set, else ``~/.hermes`` on POSIX and
``%LOCALAPPDATA%\\hermes`` on Windows. When ``HERMES_HOME`` points at a profile
(``.../profiles/work``), that profile's skills come first, then the base and the other
profiles: the agent runs as that profile, so its own skills win. Nothing is appended to a
path that already ends with it, so ``HERMES_HOME=~/.hermes/skills`` still means
``~/.hermes``. A directory reached twice (a symlink, a repeated setting) is listed once.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class SkillDir:
    """A directory searched for ``SKILL.md`` files; ``source`` says why it is searched."""

    path: Path
    source: str


def hermes_home(
    environ: Mapping[str, str] | None = None,
    *,
    windows: bool | None = None,
    user_home: Path | None = None,
) -> Path:
    """The Hermes agent's home directory (which may not exist)."""
    environ = os.environ if environ is None else environ
    windows = os.name == "nt" if windows is None else windows
    user_home = Path.home() if user_home is None else user_home
    explicit = environ.get("HERMES_HOME", "").strip()
    if explicit:
        home = Path(explicit).expanduser()
        # Someone pointing HERMES_HOME at the skills folder means the home above it.
        return home.parent if home.name == "skills" else home
    if windows:
        local = environ.get("LOCALAPPDATA", "").strip()
        return (Path(local) if local else user_home / "AppData" / "Local") / "hermes"
    return user_home / ".hermes"


def _subdirs(path: Path) -> list[Path]:
    try:
        return sorted((p for p in path.iterdir() if p.is_dir()), key=lambda p: p.name)
    except OSError:  # no profiles/ folder (the usual case) or one we may not read
        return []


def hermes_skill_dirs(home: Path) -> list[SkillDir]:
    """``skills/`` of the Hermes home and of each of its profiles, in precedence order."""
    active = home if home.parent.name == "profiles" else None
    root = home.parent.parent if active else home
    dirs = []
    if active:
        dirs.append(SkillDir(active / "skills", f"hermes profile {active.name} (HERMES_HOME)"))
    dirs.append(SkillDir(root / "skills", "hermes"))
    for profile in _subdirs(root / "profiles"):
        if profile != active:
            dirs.append(SkillDir(profile / "skills", f"hermes profile {profile.name}"))
    return dirs


def _identity(path: Path) -> str:
    try:
        return str(path.resolve())
    except OSError:  # a symlink loop in the path itself: compare it as written
        return str(path.absolute())


def skill_dirs(
    extra: Sequence[Path],
    heron_home: Path,
    *,
    environ: Mapping[str, str] | None = None,
    windows: bool | None = None,
    user_home: Path | None = None,
) -> list[SkillDir]:
    """Every skill directory, highest precedence first, each listed once.

    >>> [d.source for d in skill_dirs([Path("/x")], Path("/h"), environ={}, windows=False,
    ...                                user_home=Path("/u"))]
    ['HERON_SKILLS_DIRS', 'heron', 'hermes', 'claude']
    """
    user_home = Path.home() if user_home is None else user_home
    candidates = [SkillDir(p, "HERON_SKILLS_DIRS") for p in extra]
    candidates.append(SkillDir(heron_home / "skills", "heron"))
    candidates += hermes_skill_dirs(hermes_home(environ, windows=windows, user_home=user_home))
    candidates.append(SkillDir(user_home / ".claude" / "skills", "claude"))
    seen: set[str] = set()
    dirs = []
    for candidate in candidates:
        key = _identity(candidate.path)
        if key not in seen:
            seen.add(key)
            # Absolute, so the paths stored in the index mean the same from any directory.
            dirs.append(SkillDir(candidate.path.absolute(), candidate.source))
    return dirs
