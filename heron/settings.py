"""One typed settings object, read from ``HERON_*`` variables and an optional ``heron.toml``.

Precedence, highest first: keyword arguments, environment (``HERON_HOME``,
``HERON_EMBEDDER`` ...), ``$HERON_HOME/heron.toml`` (or the file named by
``HERON_CONFIG``), then the defaults below. A key of heron.toml that is no setting is an
error naming it and the closest setting (``skills_dir``: did you mean ``skills_dirs``?).
"""

from __future__ import annotations

import difflib
import json
import os
import re
import tomllib
import typing
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticUndefined
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
    TomlConfigSettingsSource,
)

ENV_PREFIX = "HERON_"
#: The shortest ``HERON_API_TOKEN`` taken, and how to make a good one.
MIN_TOKEN = 32
MAKE_TOKEN = 'heron token (or: python -c "import secrets; print(secrets.token_urlsafe(32))")'


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

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore")

    home: Path = Field(default_factory=default_home, description="Data directory.")
    models_dir: Path = Field(
        default_factory=default_models_dir, description="Where fetched model files live."
    )
    database_url: str | None = Field(
        default=None, description="Store location; default: SQLite at $HERON_HOME/heron.db."
    )
    embedder: Literal["minilm", "e5", "remote"] = Field(
        default="minilm",
        description="Embedding profile: minilm (bundled, fastest, English), e5 "
        "(multilingual-e5-small, int8; ~1.5x the CPU), remote. A namespace keeps its "
        "model: switching means re-indexing.",
    )
    embed_batch_size: int = Field(
        default=8, ge=1, description="Texts per model run (MiniLM; e5 runs one at a time)."
    )
    embed_threads: int = Field(default=0, ge=0, description="Model threads; 0 = all cores.")
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
    tools_policy: Path | None = Field(
        default=None,
        description="Extra per-program argument policies (YAML); default: the built-in table.",
    )

    # -- libraries (heron.libraries; HERON_LIBRARY_*) --
    library_default_docs: bool = Field(
        default=True, description="Index Heron's own docs/ as the library 'heron'."
    )
    library_chunk_tokens: int | None = Field(
        default=None, ge=32, description="Chunk cap in tokens; default: the embedder's maximum."
    )
    library_chunk_overlap: int | None = Field(default=None, ge=0)
    library_max_page_bytes: int = Field(
        default=4_000_000, ge=1, description="Larger pages are skipped with a warning."
    )
    library_candidates: int = Field(default=100, ge=1, description="Chunks re-ranked per library.")
    library_reranker: str = Field(default="default", description="default, none, onnx or remote.")
    library_rerank_model: Path | None = Field(default=None, description="ONNX cross-encoder file.")
    library_rerank_url: str | None = Field(
        default=None, description="Base URL of a /rerank server."
    )
    library_rerank_model_name: str | None = None
    library_rerank_api_key: str | None = None
    library_rerank_timeout: float = 30.0
    library_git_timeout: float = Field(
        default=300.0, description="Seconds a clone or fetch may take."
    )
    library_roots: list[Path] = Field(
        default_factory=list,
        description="Folders under which library.add over the API may name a local path; "
        "none: no local paths over the API (the CLI may name any).",
    )
    library_allow_file_urls: bool = Field(
        default=False, description="Let library.add over the API take file:// git URLs."
    )
    skills_follow_symlinks: bool = Field(
        default=False,
        description="Index a SKILL.md that is a symlink leaving its skill directory.",
    )

    # -- llm (heron.llm, heron.agent) --
    model: str | None = Field(
        default=None, description="Default model alias; default: models.yml's, else local."
    )
    models_file: Path | None = Field(
        default=None, description="Model routing table; default: HOME/models.yml."
    )
    llm_timeout: float = Field(default=120.0, gt=0, description="Seconds per model call.")
    llm_retries: int = Field(default=2, ge=0, description="Retries per model on 429/5xx/timeout.")
    llm_backoff: float = Field(default=1.0, ge=0, description="First retry wait; doubles, +jitter.")
    llm_max_wait: float = Field(
        default=30.0, ge=0, description="Cap on one retry wait, retry-after included."
    )
    agent_docs_threshold: float | None = Field(
        default=None,
        description="Best library cosine from which passages join the prompt; default: the "
        "embedder profile's (heron.embed.calibration; MiniLM 0.45).",
    )
    agent_tool_threshold: float | None = Field(
        default=None,
        description="Top tool cosine from which the first turn forces that tool; default: the "
        "embedder profile's (heron.embed.calibration; MiniLM 0.5).",
    )
    agent_keywords: list[str] = Field(
        default_factory=list, description='Words that send a message to the docs, e.g. ["acme"].'
    )
    agent_max_steps: int = Field(default=4, ge=1, description="Model calls per answer, at most.")
    agent_tool_timeout: float = Field(default=30.0, gt=0, description="Seconds per tool call.")
    agent_tool_workers: int = Field(
        default=8, ge=1, description="Tool calls an agent runs at once; more wait their turn."
    )
    agent_tool_safety: Literal["read", "write", "execute"] = Field(
        default="read", description="Most harmful tool the agent may call unasked."
    )
    agent_passages: int = Field(default=3, ge=1, description="Library passages in the prompt.")
    agent_max_tokens: int = Field(default=512, ge=1, description="Answer tokens per model call.")

    # -- server (heron.server) --
    api_token: SecretStr | None = Field(
        default=None,
        description=f"Bearer token of heron serve, at least {MIN_TOKEN} characters; required "
        "off loopback.",
    )
    server_host: str = Field(default="127.0.0.1", description="Address heron serve binds.")
    server_port: int = Field(default=8765, ge=0, le=65535)
    server_stream_ttl: float = Field(
        default=300.0, gt=0, description="Seconds a finished /chat/stream stays resumable."
    )
    server_stream_grace: float = Field(
        default=10.0,
        ge=0,
        description="Seconds a /chat/stream answer goes on with no client following it "
        "(one that dropped resumes within them); then the agent stops at its next token.",
    )
    # > 0: sse-starlette's ping loop would spin without a pause at 0.
    server_sse_ping: float = Field(
        default=15.0, gt=0, description="Seconds between keep-alive comments on an event stream."
    )
    server_allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Host header values served besides loopback names and the bound address.",
    )
    server_allowed_origins: list[str] = Field(
        default_factory=list,
        description='Origins whose pages may call the API, e.g. ["https://app.example"].',
    )
    server_session_ttl: float = Field(
        default=7 * 24 * 3600.0, gt=0, description="Seconds a web page sign-in lasts."
    )
    server_auth_failures: int = Field(
        default=10,
        ge=1,
        description="Wrong tokens a client may send per window; then 429 until it has room.",
    )
    server_auth_window: int = Field(
        default=60, ge=1, description="Seconds over which wrong tokens are counted."
    )
    server_auth_delay: float = Field(
        default=0.5, ge=0, description="Seconds a wrong token (bearer or sign-in) waits."
    )
    server_allow_same_site: bool = Field(
        default=False,
        description="Let pages of the same site (another port of this host) call the API; "
        "cross-site pages never may (Fetch Metadata, heron.server.origins).",
    )
    server_max_body: int = Field(
        default=8 * 1024 * 1024, ge=1024, description="Largest request body read, in bytes."
    )
    server_max_batch: int = Field(
        default=100, ge=1, description="Calls in one JSON-RPC batch, at most."
    )
    openai_tool_safety: Literal["read", "write", "execute"] = Field(
        default="read",
        description="Most harmful of Heron's own tools a /v1 request may run (it replaces "
        "agent_tool_safety there): read never writes a file, creates a job or runs a program.",
    )

    # -- jobs (heron.jobs) --
    jobs_concurrency: int = Field(default=2, ge=1, description="Jobs run at once per server.")
    jobs_event_max_bytes: int = Field(
        default=16_000, ge=512, description="A job event's JSON payload is cut to this size."
    )
    jobs_test_command: str = Field(
        default="pytest -q", description="What a job runs to check a build (tools_commands)."
    )
    jobs_command_timeout: float = Field(
        default=600.0, gt=0, description="Seconds before a job's command is killed."
    )

    # -- interventions (heron.interventions) --
    interventions_cooldown: float = Field(
        default=180.0, ge=0, description="Seconds a room waits between two interventions."
    )
    interventions_alert_urls: list[SecretStr] = Field(
        default_factory=list, description="apprise URLs that warning and critical ones go to."
    )
    interventions_tts_program: str = Field(
        default="espeak-ng", description="Program that speaks critical interventions."
    )
    interventions_tts_url: str | None = Field(
        default=None, description="OpenAI-compatible /v1/audio/speech base URL, over the program."
    )
    interventions_room: str = Field(
        default="default", description="The room of the cards Heron raises itself (jobs)."
    )
    interventions_scan_interval: float = Field(
        default=60.0, gt=0, description="Seconds between scans of library health and skill misses."
    )

    # -- backup and restore (heron.ops.backup) --
    restore_max_bytes: int = Field(
        default=64 * 1024**3,
        ge=0,
        description="Largest backup heron restore takes, in bytes (all its files together).",
    )

    # -- watchdog (heron.ops.watchdog) --
    watchdog_config: Path | None = Field(
        default=None, description="The watchdog's checks (YAML); default: HOME/watchdog.yml."
    )
    watchdog_alert_urls: list[SecretStr] = Field(
        default_factory=list,
        description='apprise URLs alerts go to, besides watchdog.yml\'s, e.g. ["ntfy://ops"].',
    )
    watchdog_interval: float = Field(
        default=300.0, gt=0, description="Seconds between runs of a looping heron watchdog."
    )

    def __init__(self, **values: Any) -> None:
        from heron.errors import ConfigError

        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise ConfigError(_invalid(exc, values)) from exc
        except SettingsError as exc:  # a list or dict variable that is not JSON
            raise ConfigError(_not_json(exc)) from exc
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(_bad_toml(exc)) from exc

    @field_validator("*", mode="before")
    @classmethod
    def _no_empty_paths(cls, value: Any, info: ValidationInfo) -> Any:
        # Path("") is ".": an empty HERON_TOOLS_ROOT would open the current directory.
        if isinstance(value, str) and not value.strip() and info.field_name in _path_fields():
            raise ValueError("must not be empty (an empty path means the current directory)")
        return value

    @field_validator("api_token")
    @classmethod
    def _long_token(cls, value: SecretStr | None) -> SecretStr | None:
        # Blank is unset (heron.server.auth.api_token); a short one can be guessed.
        if value is not None and 0 < len(value.get_secret_value().strip()) < MIN_TOKEN:
            raise ValueError(
                f"is shorter than {MIN_TOKEN} characters, short enough to guess. Make one: "
                f"{MAKE_TOKEN}"
            )
        return value

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
    def postgres_url(self) -> str | None:
        """HERON_DATABASE_URL when it names a PostgreSQL database, else None."""
        url = self.database_url
        return url if url and url.startswith(("postgresql://", "postgres://")) else None

    @property
    def db_path(self) -> Path:
        """The SQLite store; with PostgreSQL (``postgres_url``) only local state lives here."""
        url = self.database_url
        if url is None or self.postgres_url:
            return self.home / "heron.db"
        if url.startswith("sqlite:///"):
            return Path(url.removeprefix("sqlite:///"))
        from heron.errors import ConfigError

        raise ConfigError(
            f"Unsupported HERON_DATABASE_URL {url!r}. Use sqlite:///PATH or "
            f"postgresql://USER:PASSWORD@HOST:PORT/DB, or unset it for the default "
            f"{self.home / 'heron.db'}."
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
        toml = _CheckedToml(settings_cls, toml_file=_config_file())
        return (init_settings, env_settings, toml)

    def public(self) -> dict[str, Any]:
        """Settings as plain JSON-able values, every one redacted as a log line is
        (``heron.redact.redact_value``): a value under a secret-sounding name masked
        whole, a password in a URL (``https://user:[REDACTED]@host``), a key in a query
        string or any token-shaped text masked in place. The doctor, ``heron info`` and
        ``ops.doctor`` show nothing else."""
        from heron.redact import redact_value

        data = self.model_dump(mode="json")
        return {key: redact_value(value, key) for key, value in data.items()}


class _CheckedToml(TomlConfigSettingsSource):
    """heron.toml, refusing keys that are no setting: ignored, a misspelt key would leave
    its setting at the default with nothing to say so."""

    def __init__(self, settings_cls: type[BaseSettings], toml_file: Path) -> None:
        super().__init__(settings_cls, toml_file=toml_file)
        fields = sorted(settings_cls.model_fields)
        unknown = sorted(set(map(str, self.toml_data)) - set(fields))
        if unknown:
            from heron.errors import ConfigError

            raise ConfigError(_unknown_keys(toml_file, unknown, fields))


# -- error messages: what was wrong, where it was set, and what to do ---------------------


def _unknown_keys(path: Path, unknown: list[str], fields: list[str]) -> str:
    named = []
    for key in unknown:
        close = difflib.get_close_matches(key, fields, n=1, cutoff=0.6)
        named.append(f"{key} (did you mean {close[0]}?)" if close else key)
    return (
        f"{path}: unknown setting(s) {', '.join(named)}. Fix or remove the line(s); "
        f"the settings are: {', '.join(fields)}."
    )


@cache
def _path_fields() -> frozenset[str]:
    """Fields holding one path (``Path`` or ``Path | None``)."""
    return frozenset(
        name
        for name, info in Settings.model_fields.items()
        if info.annotation is Path or Path in typing.get_args(info.annotation)
    )


def _variable(field: str) -> str:
    return ENV_PREFIX + field.upper()


def _from_env(field: str) -> str | None:
    """The value of the field's variable, if set (names are not case-sensitive)."""
    wanted = _variable(field)
    return next((v for k, v in os.environ.items() if k.upper() == wanted), None)


def _default(field: str) -> str:
    info = Settings.model_fields[field]
    if info.default is PydanticUndefined or info.default is None:
        return "the default"
    return f"the default ({json.dumps(info.default)})"


def _invalid(exc: ValidationError, values: dict[str, Any]) -> str:
    """One sentence per bad field: where it was set, its value, what is wrong, the fix."""
    problems = []
    for err in exc.errors(include_url=False):
        if not err["loc"]:
            problems.append(err["msg"])
            continue
        field = str(err["loc"][0])
        secret = "key" in field or "token" in field
        shown = "" if secret else f" (got {json.dumps(err['input'], default=str)})"
        problem = f"{err['msg'].removeprefix('Value error, ')}{shown}"
        if field in values:
            problems.append(f"argument {field}: {problem}")
        elif _from_env(field) is not None:
            problems.append(
                f"{_variable(field)}: {problem}. Fix the variable, or unset it for "
                f"{_default(field)}"
            )
        else:
            problems.append(
                f"{field} in {_config_file()}: {problem}. Fix that line, or remove it for "
                f"{_default(field)}"
            )
    return "Bad setting: " + "; ".join(problems) + "."


def _not_json(exc: SettingsError) -> str:
    """pydantic-settings reads list and dict variables as JSON; say so, with the JSON."""
    found = re.search(r'field "(\w+)"', str(exc))
    if not found or found.group(1) not in Settings.model_fields:
        return f"Bad setting: {exc}. Lists and tables in variables are JSON."
    field = found.group(1)
    raw = _from_env(field)
    if raw is None:  # not from the environment; TOML has arrays of its own
        return f"Bad setting {field}: {exc}. Fix it in {_config_file()}."
    items = [item.strip().strip("\"'") for item in raw.strip("[]").split(",")]
    example = json.dumps([item for item in items if item] or ["git", "ls"])
    return (
        f"Bad setting {_variable(field)}={raw!r}: not JSON. It is a list, written as a JSON "
        f"array, e.g. {_variable(field)}='{example}'; unset it for {_default(field)}."
    )


def _bad_toml(exc: Exception) -> str:
    path = _config_file()
    if isinstance(exc, tomllib.TOMLDecodeError):
        return (
            f"{path} is not valid TOML ({exc}). Fix that line: each setting reads "
            'name = value, with a value (server_port = 8765, home = "/srv/heron"); '
            "remove the line for the default."
        )
    if isinstance(exc, UnicodeDecodeError):
        return f"{path} is not UTF-8 text ({exc}). Save it as UTF-8."
    return f"Cannot read {path}: {exc}. Fix its permissions, or set HERON_CONFIG to another file."
