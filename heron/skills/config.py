"""Settings of the skill index, read from ``HERON_SKILLS_*`` environment variables.

``HERON_SKILLS_DIRS``: extra skill directories, ``os.pathsep``-separated (``:`` on POSIX,
``;`` on Windows), searched before every other directory. ``HERON_SKILLS_MIN_REL``: the
relative-relevance cut of ``context_for`` (a skill is injected when its score is at least
``min_rel`` times the top score).
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from heron.errors import ConfigError


class SkillsSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="HERON_SKILLS_", extra="ignore")

    dirs: str = Field(
        default="", description="Extra skill directories, os.pathsep-separated, highest first."
    )
    min_rel: float = Field(
        default=0.5, ge=0.0, le=1.0, description="context_for keeps score >= min_rel * top."
    )

    @property
    def extra_dirs(self) -> list[Path]:
        return [Path(p).expanduser() for p in self.dirs.split(os.pathsep) if p.strip()]


def load_skills_settings() -> SkillsSettings:
    """``SkillsSettings()`` with a bad value reported as a ``ConfigError`` that names it."""
    try:
        return SkillsSettings()
    except ValidationError as exc:
        problems = "; ".join(
            f"HERON_SKILLS_{'_'.join(str(p) for p in err['loc']).upper()}: {err['msg']}"
            for err in exc.errors()
        )
        raise ConfigError(
            f"Bad skills setting ({problems}). Fix the variable or unset it for the default."
        ) from exc
