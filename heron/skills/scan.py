"""Finding and reading every ``SKILL.md`` under the skill directories, the same way every time.

The walk lists each directory sorted by name (code-point order), so every run on every
machine meets the files in the same order and the same file wins a name. A symlink that
stays inside its skill directory is followed; one that leaves it (a directory linked from
outside the skills root, a ``SKILL.md`` linked from outside its skill's folder, say to
``~/.ssh/id_rsa``) is reported and not indexed, unless ``follow_symlinks``
(``HERON_SKILLS_FOLLOW_SYMLINKS``) is true, for skills linked in from a checkout. No
directory is entered twice: that is what stops a symlink loop, and it is reported. Hidden
directories (``.git``, Hermes's ``.hub`` quarantine) and ``node_modules`` are not entered
and are reported too, as is a directory that cannot be listed or that vanishes mid-scan;
the scan goes on.

Names are unique, compared case-insensitively: the first file with a name (directory
precedence, then walk order) wins, and each later one is reported in ``shadowed`` with
both paths. ``files == len(parsed) + len(failures)``: no file goes unaccounted for.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from heron.skills.dirs import SkillDir
from heron.skills.parser import Skill, SkillFileError, outside_reason, parse_skill

SKILL_FILE = "SKILL.md"
_NOT_ENTERED = frozenset({"node_modules", "__pycache__"})


@dataclass(frozen=True)
class Failure:
    path: Path
    reason: str


@dataclass(frozen=True)
class Shadowed:
    """``shadowed`` has the same name as ``kept``, which comes first in precedence."""

    name: str
    kept: Path
    shadowed: Path


@dataclass(frozen=True)
class Skipped:
    """A directory the walk did not enter, and why."""

    path: Path
    reason: str


@dataclass(frozen=True)
class DirReport:
    path: Path
    source: str
    exists: bool
    files: int


@dataclass
class ScanReport:
    """What a scan saw: the winning ``skills`` and everything else, accounted for."""

    dirs: list[DirReport] = field(default_factory=list)
    skills: list[Skill] = field(default_factory=list)
    parsed: list[Skill] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    shadowed: list[Shadowed] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    @property
    def files(self) -> int:
        return len(self.parsed) + len(self.failures)

    @property
    def recovered(self) -> list[Skill]:
        """Parsed files that needed a recovery (each has at least one diagnostic)."""
        return [s for s in self.parsed if s.diagnostics]

    def to_dict(self) -> dict[str, Any]:
        return {
            "dirs": [
                {"path": str(d.path), "source": d.source, "exists": d.exists, "files": d.files}
                for d in self.dirs
            ],
            "files": self.files,
            "parsed": len(self.parsed),
            "skills": len(self.skills),
            "recovered": [
                {
                    "name": s.name,
                    "path": str(s.path),
                    "diagnostics": [str(d) for d in s.diagnostics],
                }
                for s in self.recovered
            ],
            "failed": [{"path": str(f.path), "reason": f.reason} for f in self.failures],
            "shadowed": [
                {"name": s.name, "kept": str(s.kept), "shadowed": str(s.shadowed)}
                for s in self.shadowed
            ],
            "skipped_dirs": [{"path": str(s.path), "reason": s.reason} for s in self.skipped],
        }


def _dir_reason(exc: OSError) -> str:
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return "vanished during the scan"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied; make it readable (chmod a+rx) to include its skills"
    if exc.errno == errno.ELOOP:
        return "symlink loop"
    return f"cannot be listed ({exc.strerror or exc})"


def walk_skill_files(
    root: Path,
    skipped: list[Skipped],
    seen: dict[tuple[int, int], Path] | None = None,
    *,
    follow_symlinks: bool = False,
) -> Iterator[Path]:
    """Every ``SKILL.md`` path under ``root``, depth first, each directory sorted by name.

    Directories not entered are appended to ``skipped``: among them, unless
    ``follow_symlinks``, a symlinked directory leading outside ``root``. ``seen`` maps
    (device, inode) to the path a directory was first entered by; share it between roots
    to enter none twice.
    """
    seen = {} if seen is None else seen
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            info = os.stat(folder)
        except OSError as exc:
            skipped.append(Skipped(folder, _dir_reason(exc)))
            continue
        first = seen.setdefault((info.st_dev, info.st_ino), folder)
        if first != folder:
            loop = folder.is_relative_to(first)
            reason = f"symlink loop back to {first}" if loop else f"same directory as {first}"
            skipped.append(Skipped(folder, reason))
            continue
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError as exc:
            skipped.append(Skipped(folder, _dir_reason(exc)))
            continue
        subdirs = []
        for entry in entries:
            if entry.name == SKILL_FILE:
                yield Path(entry.path)  # even a directory or a broken link: the parser says why
                continue
            try:
                is_dir = entry.is_dir()
            except OSError as exc:
                skipped.append(Skipped(Path(entry.path), _dir_reason(exc)))
                continue
            if not is_dir:
                continue
            if entry.name.startswith(".") or entry.name in _NOT_ENTERED:
                skipped.append(Skipped(Path(entry.path), "hidden or tool directory, not searched"))
            elif (
                not follow_symlinks
                and entry.is_symlink()  # a real folder inside root is inside it
                and (reason := outside_reason(Path(entry.path), root))
            ):
                skipped.append(Skipped(Path(entry.path), reason))
            else:
                subdirs.append(Path(entry.path))
        stack.extend(reversed(subdirs))


def scan(dirs: Sequence[SkillDir], *, follow_symlinks: bool = False) -> ScanReport:
    """Walk ``dirs`` in precedence order, parse every ``SKILL.md`` and keep one per name.

    ``follow_symlinks``: index skills linked from outside their directory (see the module
    docstring; ``HERON_SKILLS_FOLLOW_SYMLINKS``, passed down by ``open_skills``)."""
    report = ScanReport()
    winners: dict[str, Skill] = {}
    seen: dict[tuple[int, int], Path] = {}
    for skill_dir in dirs:
        exists = skill_dir.path.is_dir()
        if skill_dir.path.exists() and not exists:
            report.skipped.append(Skipped(skill_dir.path, "not a directory"))
        count = 0
        walk = walk_skill_files(
            skill_dir.path, report.skipped, seen, follow_symlinks=follow_symlinks
        )
        for path in walk if exists else ():
            count += 1
            try:
                skill = parse_skill(path, within=None if follow_symlinks else path.parent)
            except SkillFileError as exc:
                report.failures.append(Failure(path, exc.reason))
                continue
            report.parsed.append(skill)
            key = skill.name.casefold()
            if key in winners:
                report.shadowed.append(Shadowed(skill.name, winners[key].path, skill.path))
            else:
                winners[key] = skill
                report.skills.append(skill)
        report.dirs.append(DirReport(skill_dir.path, skill_dir.source, exists, count))
    return report
