"""Skills: find every ``SKILL.md``, read it robustly, index it, and pick the right one."""

from __future__ import annotations

from heron.skills.dirs import SkillDir, hermes_home, skill_dirs
from heron.skills.index import (
    SkillContext,
    SkillIndex,
    SkillIndexReport,
    SkillIndexStatus,
    open_skills,
)
from heron.skills.parser import Diagnostic, Skill, SkillFileError, parse_skill, parse_text
from heron.skills.scan import ScanReport, scan
from heron.skills.search import SkillHit, combine, lex_score
from heron.skills.sync import NAMESPACE, IndexResult, IndexState, PruneResult
from heron.skills.usage import KindStats, UsageLog, query_kind

__all__ = [
    "NAMESPACE",
    "Diagnostic",
    "IndexResult",
    "IndexState",
    "KindStats",
    "PruneResult",
    "ScanReport",
    "Skill",
    "SkillContext",
    "SkillDir",
    "SkillFileError",
    "SkillHit",
    "SkillIndex",
    "SkillIndexReport",
    "SkillIndexStatus",
    "UsageLog",
    "combine",
    "hermes_home",
    "lex_score",
    "open_skills",
    "parse_skill",
    "parse_text",
    "query_kind",
    "scan",
    "skill_dirs",
]
