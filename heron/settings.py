"""One typed settings object, read from ``HERON_*`` variables and an optional ``heron.toml``.

Precedence, highest first: keyword arguments, environment (``HERON_HOME``,
``HERON_EMBEDDER`` ...), ``$HERON_HOME/heron.toml`` (or the file named by
``HERON_CONFIG``), then the defaults below.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)


def _xdg(var: str, fallback: str) -> Path:
    return Path(os.environ.get(var) or Path.home() / fallback)


def default_home() -> Path:
    return _xdg("XDG_DATA_HOME", ".local/share") / "heron"


def default_models_dir() -> Path:
    # Models are shared by every HERON_HOME on the machine, like any download cache.
    return _xdg("XDG_CACHE_HOME", ".cache") / "heron" / "models"


def _config_file() -> Path:
    explicit = os.environ.get("HERON_CONFIG")
    if explicit:
        return Path(explicit)
    home = os.environ.get("HERON_HOME")
    return (Path(home) if home else default_home()) / "heron.toml"


class Settings(BaseSettings):
    """Everything Heron can be configured with, in one place."""

    model_config = SettingsConfigDict(env_prefix="HERON_", extra="ignore")

    home: Path = Field(default_factory=default_home, description="Data directory.")
    models_dir: Path = Field(
        default_factory=default_models_dir, description="Where fetched model files live."
    )
    database_url: str | None = Field(
        default=None, description="Store location; default: SQLite at $HERON_HOME/heron.db."
    )
    embedder: Literal["minilm", "remote"] = "minilm"
    embed_batch_size: int = Field(default=32, ge=1)
    embed_threads: int = Field(default=0, ge=0, description="ONNX threads; 0 = all cores.")
    embed_cache: bool = True
    remote_embed_url: str | None = Field(
        default=None,
        description="Base URL of an OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1",
    )
    remote_embed_model: str | None = None
    remote_embed_api_key: str | None = None
    remote_embed_timeout: float = 30.0
    skills_dirs: str = Field(
        default="", description="Extra skill directories, os.pathsep-separated, highest first."
    )
    skills_min_rel: float = Field(
        default=0.5, ge=0.0, le=1.0, description="context_for keeps score >= min_rel * top."
    )

    mcp_config: Path | None = Field(
        default=None, description="MCP servers (Claude Desktop format); default: HOME/mcp.json."
    )
    mcp_timeout: float = Field(default=30.0, gt=0, description="Seconds per MCP server call.")
    tools_root: Path | None = Field(
        default=None, description="Workspace root of the file and command tools; none: off."
    )
    tools_commands: list[str] = Field(
        default_factory=list, description='Programs run_command may run, e.g. ["git", "ls"].'
    )

    # -- llm (heron.llm, heron.agent) --

    # -- server (heron.server) --

    # -- jobs (heron.jobs) --

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as exc:
            from heron.errors import ConfigError

            problems = "; ".join(
                f"HERON_{'_'.join(str(p) for p in err['loc']).upper()}: {err['msg']}"
                for err in exc.errors()
            )
            raise ConfigError(
                f"Bad setting ({problems}). Fix the variable or heron.toml, or unset it for "
                "the default."
            ) from exc

    @property
    def skills_extra_dirs(self) -> list[Path]:
        return [Path(p).expanduser() for p in self.skills_dirs.split(os.pathsep) if p.strip()]

    @model_validator(mode="after")
    def _check_remote(self) -> Settings:
        if self.embedder == "remote" and not (self.remote_embed_url and self.remote_embed_model):
            from heron.errors import ConfigError

            raise ConfigError(
                "HERON_EMBEDDER=remote needs HERON_REMOTE_EMBED_URL and HERON_REMOTE_EMBED_MODEL; "
                "set both, or unset HERON_EMBEDDER to use the bundled model."
            )
        return self

    @property
    def db_path(self) -> Path:
        url = self.database_url
        if url is None:
            return self.home / "heron.db"
        if url.startswith("sqlite:///"):
            return Path(url.removeprefix("sqlite:///"))
        from heron.errors import ConfigError

        raise ConfigError(
            f"Unsupported HERON_DATABASE_URL {url!r}. Use sqlite:///PATH, or unset it for "
            f"the default {self.home / 'heron.db'}."
        )

    @property
    def embed_cache_path(self) -> Path:
        return self.home / "embeddings.db"

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml = TomlConfigSettingsSource(settings_cls, toml_file=_config_file())
        return (init_settings, env_settings, toml)

    def public(self) -> dict[str, Any]:
        """Settings as plain JSON-able values, secrets masked."""
        data = self.model_dump(mode="json")
        for key in data:
            if "key" in key and data[key]:
                data[key] = "***"
        return data
