"""One typed settings object in sections, read from ``HERON_*`` variables and an optional
``heron.toml``.

Each capability reads its own section: ``settings.library.chunk_tokens``,
``settings.server.port``, ``settings.jobs.concurrency`` (``SECTIONS`` lists them); what
belongs to all of Heron (``home``, ``models_dir``, ``database_url``, ``replica``, the
contexts) sits on ``Settings`` itself. Outside Heron every setting keeps its one flat
name, its section's prefix and its field: ``HERON_LIBRARY_CHUNK_TOKENS`` and
``library_chunk_tokens = 64`` in heron.toml; a few keep an older name of their own
(``HERON_EMBEDDER``, ``HERON_API_TOKEN``, ``HERON_MODEL``), written beside the field.
``setting_names`` maps each flat name to where it lives.

Precedence, highest first: keyword arguments (by section: ``Settings(home=h,
library={"chunk_tokens": 64})``), environment (``HERON_HOME``, ``HERON_EMBEDDER`` ...),
``$HERON_HOME/heron.toml`` (or the file named by ``HERON_CONFIG``), then the defaults
below. A key of heron.toml that is no setting is an error naming it and the closest
setting (``skills_dir``: did you mean ``skills_dirs``?).
"""

from __future__ import annotations

import difflib
import ipaddress
import json
import os
import re
import socket
import tomllib
import typing
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    AliasGenerator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
    TomlConfigSettingsSource,
)

from heron import extras
from heron.core.contexts import DEFAULT, ContextSpec, check_context_name

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


def _default_config() -> Path:
    home = os.environ.get("HERON_HOME")
    return (Path(home) if home else default_home()) / "heron.toml"


def _config_file() -> Path:
    explicit = os.environ.get("HERON_CONFIG")
    return Path(explicit) if explicit else _default_config()


def _refuse_empty_path(fields: dict[str, FieldInfo], value: Any, info: ValidationInfo) -> Any:
    # Path("") is ".": an empty HERON_TOOLS_ROOT would open the current directory.
    if isinstance(value, str) and not value.strip() and info.field_name is not None:
        annotation = fields[info.field_name].annotation
        if annotation is Path or Path in typing.get_args(annotation):
            raise ValueError("must not be empty (an empty path means the current directory)")
    return value


def _flat(prefix: str) -> AliasGenerator:
    """A section's fields named as outside Heron: ``prefix`` + field (``chunk_tokens`` is
    ``library_chunk_tokens``), kept as each field's serialization alias; a field that
    sets its own (``embedder``) keeps that."""
    return AliasGenerator(serialization_alias=lambda field: prefix + field)


class Section(BaseModel):
    """A group of settings read by one capability; built by name (``chunk_tokens``),
    written outside Heron under its flat name (``model_dump(by_alias=True)``)."""

    # Each section names its prefix as a class keyword: ``alias_generator=_flat("jobs_")``.
    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="before")
    @classmethod
    def _no_empty_paths(cls, value: Any, info: ValidationInfo) -> Any:
        return _refuse_empty_path(cls.model_fields, value, info)


class EmbedSettings(Section, alias_generator=_flat("embed_")):
    """The embedding model (``heron.embed``): which profile, its batches, threads and
    cache, or a remote server."""

    embedder: Literal["auto", "multilingual", "minilm", "e5", "remote"] = Field(
        serialization_alias="embedder",
        default="auto",
        description="Embedding profile: multilingual (MiniLM for English queries, e5 for "
        "every other language; indexing runs both), minilm (bundled, fastest, English "
        "only), e5 (multilingual-e5-small, int8), remote; auto: multilingual when the e5 "
        "extra is installed, else minilm. A namespace keeps its model: switching means "
        "re-indexing.",
    )
    batch_size: int = Field(
        default=1,
        ge=1,
        description="Texts per MiniLM run (e5 runs one at a time): one is fastest on the int8 "
        "graph, and only then is a text's vector independent of the texts beside it.",
    )
    threads: int = Field(default=0, ge=0, description="Model threads; 0 = all cores.")
    cache: bool = True
    remote_url: str | None = Field(
        serialization_alias="remote_embed_url",
        default=None,
        description="Base URL of an OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1",
    )
    remote_model: str | None = Field(default=None, serialization_alias="remote_embed_model")
    remote_api_key: str | None = Field(default=None, serialization_alias="remote_embed_api_key")
    remote_timeout: float = Field(default=30.0, serialization_alias="remote_embed_timeout")

    @property
    def profile(self) -> Literal["multilingual", "minilm", "e5", "remote"]:
        """The profile ``embedder`` resolves to: ``auto`` is ``multilingual`` where the e5
        extra is installed (``scripts/setup`` installs it), else ``minilm``."""
        if self.embedder != "auto":
            return self.embedder
        return "multilingual" if extras.installed("e5") else "minilm"

    @model_validator(mode="after")
    def _check_remote(self) -> EmbedSettings:
        if self.embedder == "remote" and not (self.remote_url and self.remote_model):
            from heron.errors import ConfigError

            raise ConfigError(
                "HERON_EMBEDDER=remote needs HERON_REMOTE_EMBED_URL and HERON_REMOTE_EMBED_MODEL; "
                "set both, or unset HERON_EMBEDDER to use the bundled model."
            )
        return self


class SkillsSettings(Section, alias_generator=_flat("skills_")):
    """Where skills are found and how many of them a query keeps (``heron.skills``)."""

    dirs: str = Field(
        default="", description="Extra skill directories, os.pathsep-separated, highest first."
    )
    min_rel: float = Field(
        default=0.5, ge=0.0, le=1.0, description="context_for keeps score >= min_rel * top."
    )

    follow_symlinks: bool = Field(
        default=False,
        description="Index a SKILL.md that is a symlink leaving its skill directory.",
    )

    @property
    def extra_dirs(self) -> list[Path]:
        return [Path(p).expanduser() for p in self.dirs.split(os.pathsep) if p.strip()]


class ToolsSettings(Section, alias_generator=_flat("tools_")):
    """The workspace tools, MCP servers, fetch_url and python_exec (``heron.tools``)."""

    mcp_config: Path | None = Field(
        serialization_alias="mcp_config",
        default=None,
        description="MCP servers (Claude Desktop format); default: HOME/mcp.json.",
    )
    mcp_timeout: float = Field(
        serialization_alias="mcp_timeout",
        default=30.0,
        gt=0,
        description="Seconds per MCP server call.",
    )
    root: Path | None = Field(
        default=None, description="Workspace root of the file and command tools; none: off."
    )
    commands: list[str] = Field(
        default_factory=list, description='Programs run_command may run, e.g. ["git", "ls"].'
    )
    policy: Path | None = Field(
        default=None,
        description="Extra per-program argument policies (YAML); default: the built-in table.",
    )

    fetch_url: bool = Field(
        default=False, description="Offer fetch_url (web pages as Markdown); off: no network."
    )
    fetch_allowed_networks: list[str] = Field(
        default_factory=list,
        description="Non-public networks fetch_url may reach anyway (CIDR), e.g. "
        '["10.1.0.0/16"]; none: public internet only.',
    )
    fetch_max_bytes: int = Field(
        default=5_000_000, ge=1024, description="Largest page body fetch_url reads, in bytes."
    )
    fetch_timeout: float = Field(
        default=20.0, gt=0, description="Seconds one fetch_url call may take, redirects included."
    )
    fetch_max_redirects: int = Field(default=5, ge=0, description="Redirects followed.")
    fetch_chromium: str = Field(
        default="chromium", description="Browser that renders pages needing JavaScript."
    )
    python_exec: bool = Field(
        default=False, description="Offer python_exec (snippets in a bubblewrap sandbox)."
    )
    python_timeout: float = Field(
        default=10.0, gt=0, le=600, description="Seconds a python_exec snippet may run."
    )
    python_memory_mb: int = Field(
        default=512, ge=32, description="Address space of a python_exec snippet, in MiB."
    )
    python_max_output: int = Field(
        default=64_000, ge=1024, description="Bytes of stdout and of stderr kept per snippet."
    )

    @field_validator("fetch_allowed_networks")
    @classmethod
    def _networks(cls, value: list[str]) -> list[str]:
        for cidr in value:
            try:
                ipaddress.ip_network(cidr.strip(), strict=False)
            except ValueError:
                raise ValueError(
                    f"{cidr!r} is no network; write CIDR blocks, e.g. "
                    '["10.1.0.0/16", "192.168.4.7/32"]'
                ) from None
        return value


class AgentSettings(Section, alias_generator=_flat("agent_")):
    """How the agent routes tools, grounds answers and spends its steps (``heron.agent``)."""

    routing_mode: Literal["pattern", "semantic", "hybrid"] = Field(
        default="hybrid",
        description="How the agent picks the tools it offers: pattern (all, up to the "
        "provider's limit), semantic (cosine) or hybrid (cosine and BM25).",
    )
    routing_top_k: int = Field(
        default=10, ge=1, description="Tools offered per request, at most (and the model's cap)."
    )
    routing_threshold: float | None = Field(
        default=None,
        description="Cosine from which a routed tool is offered; default: the embedder "
        "profile's (heron.embed.calibration; MiniLM 0.25).",
    )
    routing_always_include: list[str] = Field(
        default_factory=list,
        description='Tools offered on every request (within top_k), e.g. ["search_docs"].',
    )
    docs_threshold: float | None = Field(
        default=None,
        description="Best library cosine from which passages join the prompt; default: the "
        "embedder profile's (heron.embed.calibration; MiniLM 0.45).",
    )
    tool_threshold: float | None = Field(
        default=None,
        description="Top tool cosine from which the first turn forces that tool; default: the "
        "embedder profile's (heron.embed.calibration; MiniLM 0.5).",
    )
    keywords: list[str] = Field(
        default_factory=list, description='Words that send a message to the docs, e.g. ["acme"].'
    )
    max_steps: int = Field(default=4, ge=1, description="Model calls per answer, at most.")
    tool_timeout: float = Field(default=30.0, gt=0, description="Seconds per tool call.")
    tool_workers: int = Field(
        default=8, ge=1, description="Tool calls an agent runs at once; more wait their turn."
    )
    tool_safety: Literal["read", "write", "execute"] = Field(
        default="read", description="Most harmful tool the agent may call unasked."
    )
    delegate: bool = Field(
        default=False,
        description="Let the agent hand tasks to background jobs (delegate_job) whatever "
        "agent_tool_safety, without any other execute tool: a read_only job runs, one that "
        "may write or deploy waits for a person; a named key's turns need its jobs scope.",
    )
    passages: int = Field(default=3, ge=1, description="Library passages in the prompt.")
    max_tokens: int = Field(default=512, ge=1, description="Answer tokens per model call.")


class LibrarySettings(Section, alias_generator=_flat("library_")):
    """Indexing, reading, re-ranking and uploads of the libraries (``heron.libraries``)."""

    default_docs: bool = Field(
        default=True, description="Index Heron's own docs/ as the library 'heron'."
    )
    chunk_tokens: int | None = Field(
        default=None, ge=32, description="Chunk cap in tokens; default: the embedder's maximum."
    )
    chunk_overlap: int | None = Field(default=None, ge=0)
    max_page_bytes: int = Field(
        default=4_000_000, ge=1, description="Larger pages are skipped with a warning."
    )
    max_document_bytes: int = Field(
        default=64_000_000,
        ge=1,
        description="Larger PDF, Word, PowerPoint and Excel files are skipped with a warning "
        "(their size is mostly images; their text is read page by page).",
    )
    ocr: bool = Field(
        default=False,
        description="Read scanned PDF pages (an image, no text) with Debian's tesseract "
        "(apt-get install tesseract-ocr); off, they are reported and left unread.",
    )
    ocr_languages: str = Field(
        default="eng",
        pattern=r"^[a-z_]+(\+[a-z_]+)*$",
        description="Tesseract's languages for OCR, e.g. eng+por (each needs its "
        "tesseract-ocr-LANG package).",
    )
    translate: bool = Field(
        default=True,
        description="Search a Portuguese or Spanish query over pages in another language in "
        "English too, translated by Debian's Apertium (apt-get install apertium "
        "apertium-eng-spa apertium-es-pt); without it, the query as written.",
    )
    candidates: int = Field(default=100, ge=1, description="Chunks re-ranked per library.")
    reranker: str = Field(default="default", description="default, none, onnx or remote.")
    rerank_model: Path | None = Field(default=None, description="ONNX cross-encoder file.")
    rerank_url: str | None = Field(default=None, description="Base URL of a /rerank server.")
    rerank_model_name: str | None = None
    rerank_api_key: str | None = None
    rerank_timeout: float = 30.0
    git_timeout: float = Field(default=300.0, description="Seconds a clone or fetch may take.")
    roots: list[Path] = Field(
        default_factory=list,
        description="Folders under which library.add over the API may name a local path; "
        "none: no local paths over the API (the CLI may name any).",
    )
    allow_file_urls: bool = Field(
        default=False, description="Let library.add over the API take file:// git URLs."
    )
    upload_max_file_bytes: int = Field(
        default=20_000_000,
        ge=1,
        description="Largest file added to a library (heron library add-files, the page, "
        "the API); HERON_LIBRARY_MAX_PAGE_BYTES bounds it too.",
    )
    upload_max_files: int = Field(
        default=50, ge=1, description="Files added to a library at once, at most."
    )
    upload_max_bytes: int = Field(
        default=64_000_000,
        ge=1,
        description="Bytes of the files added to a library at once, at most (an upload "
        "over HTTP may carry this much, whatever HERON_SERVER_MAX_BODY).",
    )
    enrich_model: str | None = Field(
        default=None,
        description="models.yml alias that writes a page's questions at index time "
        "(heron index --enrich, enrich=yes); default: the default alias.",
    )
    enrich_questions: int = Field(
        default=5, ge=1, le=20, description="Questions asked of the model per page."
    )
    enrich_max_chars: int | None = Field(
        default=None,
        ge=1000,
        description="Page characters sent to the model, at most (also cut to its context); "
        "default 12,000, or 3,000 for the local model (its CPU time grows with the page).",
    )


class LlmSettings(Section, alias_generator=_flat("llm_")):
    """The model broker (``heron.llm``): the default alias, models.yml, timeouts,
    retries, cooldowns."""

    model: str | None = Field(
        serialization_alias="model",
        default=None,
        description="Default model alias; default: models.yml's, else local.",
    )
    models_file: Path | None = Field(
        serialization_alias="models_file",
        default=None,
        description="Model routing table; default: HOME/models.yml.",
    )
    timeout: float = Field(default=120.0, gt=0, description="Seconds per model call.")
    retries: int = Field(default=2, ge=0, description="Retries per model on 429/5xx/timeout.")
    backoff: float = Field(default=1.0, ge=0, description="First retry wait; doubles, +jitter.")
    max_wait: float = Field(
        default=5.0,
        ge=0,
        description="Longest wait before a retry; a 429 asking longer goes to the caller.",
    )
    allowed_fails: int = Field(
        default=3, ge=0, description="5xx/429s a minute a model may have before a cooldown."
    )
    cooldown: float = Field(
        default=60.0, ge=0, description="Seconds a failing model is skipped; 0: never."
    )


class ServerSettings(Section, alias_generator=_flat("server_")):
    """heron serve (``heron.server``): its address, token, streams, sign-in limits, and
    what one request to a door (/v1, MCP, /v1/embeddings, named keys) may cost."""

    api_token: SecretStr | None = Field(
        serialization_alias="api_token",
        default=None,
        description=f"Bearer token of heron serve, at least {MIN_TOKEN} characters; required "
        "off loopback.",
    )
    host: str = Field(default="127.0.0.1", description="Address heron serve binds.")
    port: int = Field(default=8765, ge=0, le=65535)
    stream_ttl: float = Field(
        default=300.0, gt=0, description="Seconds a finished /chat/stream stays resumable."
    )
    stream_grace: float = Field(
        default=10.0,
        ge=0,
        description="Seconds a /chat/stream answer goes on with no client following it "
        "(one that dropped resumes within them); then the agent stops at its next token.",
    )
    # > 0: sse-starlette's ping loop would spin without a pause at 0.
    sse_ping: float = Field(
        default=15.0, gt=0, description="Seconds between keep-alive comments on an event stream."
    )
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Host header values served besides loopback names and the bound address.",
    )
    allowed_origins: list[str] = Field(
        default_factory=list,
        description='Origins whose pages may call the API, e.g. ["https://app.example"].',
    )
    session_ttl: float = Field(
        default=7 * 24 * 3600.0, gt=0, description="Seconds a web page sign-in lasts."
    )
    auth_failures: int = Field(
        default=10,
        ge=1,
        description="Wrong tokens a client may send per window; then 429 until it has room.",
    )
    auth_window: int = Field(
        default=60, ge=1, description="Seconds over which wrong tokens are counted."
    )
    auth_delay: float = Field(
        default=0.5, ge=0, description="Seconds a wrong token (bearer or sign-in) waits."
    )
    allow_same_site: bool = Field(
        default=False,
        description="Let pages of the same site (another port of this host) call the API; "
        "cross-site pages never may (Fetch Metadata, heron.server.http.origins).",
    )
    max_body: int = Field(
        default=8 * 1024 * 1024, ge=1024, description="Largest request body read, in bytes."
    )
    max_batch: int = Field(default=100, ge=1, description="Calls in one JSON-RPC batch, at most.")
    keys_window: int = Field(
        serialization_alias="keys_window",
        default=60,
        ge=1,
        description="Seconds of a named API key's per-minute limits (rpm, tpm); 60 is a minute.",
    )
    keys_flush: float = Field(
        serialization_alias="keys_flush",
        default=5.0,
        gt=0,
        description="Seconds between writes of the keys' usage counts.",
    )
    mcp_tool_safety: Literal["read", "write", "execute"] = Field(
        serialization_alias="mcp_tool_safety",
        default="read",
        description="Most harmful tool an MCP client of heron serve or heron mcp may run: "
        "through call_tool, the jobs and interventions tools it is offered and the agent its "
        "ask runs; also a key without admin through tools.call (heron.tools.ceiling).",
    )
    openai_tool_safety: Literal["read", "write", "execute"] = Field(
        serialization_alias="openai_tool_safety",
        default="read",
        description="Most harmful of Heron's own tools a /v1 request may run (it replaces "
        "agent_tool_safety there): read never writes a file, creates a job or runs a program.",
    )
    openai_max_messages: int = Field(
        serialization_alias="openai_max_messages",
        default=2048,
        ge=1,
        description="Messages in one /v1/chat/completions request, at most.",
    )
    openai_max_input_tokens: int = Field(
        serialization_alias="openai_max_input_tokens",
        default=200_000,
        ge=1,
        description="Estimated tokens (3 characters each) of a /v1 request's messages and "
        "tools together, at most.",
    )
    openai_schema_max_repeat: int = Field(
        serialization_alias="openai_schema_max_repeat",
        default=10_000,
        ge=1,
        description="Largest minLength, maxLength, minItems, maxItems (...) or pattern "
        "{n,m} of a /v1 request's JSON schemas (nested quantifiers multiplied).",
    )
    openai_schema_max_size: int = Field(
        serialization_alias="openai_schema_max_size",
        default=1_000_000,
        ge=1,
        description="Estimated grammar characters of all of a /v1 request's JSON schemas.",
    )
    embeddings_max_tokens: int = Field(
        serialization_alias="embeddings_max_tokens",
        default=8192,
        ge=1,
        description="Estimated tokens (3 characters each) of one /v1/embeddings request.",
    )
    embeddings_concurrency: int = Field(
        serialization_alias="embeddings_concurrency",
        default=2,
        ge=1,
        description="/v1/embeddings requests served at once; more are 429.",
    )

    @field_validator("api_token")
    @classmethod
    def _long_token(cls, value: SecretStr | None) -> SecretStr | None:
        # Blank is unset (``bearer_token``); a short one can be guessed.
        if value is not None and 0 < len(value.get_secret_value().strip()) < MIN_TOKEN:
            raise ValueError(
                f"is shorter than {MIN_TOKEN} characters, short enough to guess. Make one: "
                f"{MAKE_TOKEN}"
            )
        return value

    @property
    def bearer_token(self) -> str | None:
        """HERON_API_TOKEN, ``None`` when unset or blank (a blank one must not pass as set)."""
        secret = self.api_token
        return (secret.get_secret_value().strip() or None) if secret else None


class JobsSettings(Section, alias_generator=_flat("jobs_")):
    """Background jobs: how many at once, their commands and heartbeats (``heron.jobs``)."""

    concurrency: int = Field(default=2, ge=1, description="Jobs run at once per server.")
    event_max_bytes: int = Field(
        default=16_000, ge=512, description="A job event's JSON payload is cut to this size."
    )
    test_command: str = Field(
        default="pytest -q", description="What a job runs to check a build (tools_commands)."
    )
    command_timeout: float = Field(
        default=600.0, gt=0, description="Seconds before a job's command is killed."
    )
    typecheck_command: str = Field(
        default="", description="What a job runs to typecheck (tools_commands); none if empty."
    )
    remote: str = Field(
        default="origin",
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$",
        description="The git remote (by name) whose reachability a job checks (git ls-remote).",
    )
    visibility_timeout: float = Field(
        default=20.0,
        ge=6.0,
        description="Seconds without a heartbeat (every 2 s while a job runs) after which any "
        "runner on the database takes the job over from its worker as dead: re-queued if "
        "read-only, else failed with the reason. Runners look every quarter of it.",
    )


class InterventionsSettings(Section, alias_generator=_flat("interventions_")):
    """Interventions (``heron.interventions``): cooldowns, alerts, speech, retention and
    the learning rule."""

    cooldown: float = Field(
        default=180.0, ge=0, description="Seconds a room waits between two interventions."
    )
    alert_urls: list[SecretStr] = Field(
        default_factory=list, description="apprise URLs that warning and critical ones go to."
    )
    tts_program: str = Field(
        default="espeak-ng", description="Program that speaks critical interventions."
    )
    tts_url: str | None = Field(
        default=None, description="OpenAI-compatible /v1/audio/speech base URL, over the program."
    )
    room: str = Field(
        default="default", description="The room of the cards Heron raises itself (jobs)."
    )
    scan_interval: float = Field(
        default=60.0, gt=0, description="Seconds between scans of library health and skill misses."
    )
    keep_days: float = Field(
        default=30.0, gt=0, description="Days an intervention (and its audio) is kept."
    )
    keep_per_room: int = Field(
        default=1000, ge=1, description="Interventions kept per room, newest first."
    )
    keep_total: int = Field(
        default=100_000, ge=1, description="Interventions kept in all rooms, newest first."
    )
    audio_keep: int = Field(default=100, ge=1, description="Spoken audio files kept, newest first.")
    learn_outcomes: int = Field(
        default=10, ge=1, description="Outcomes per block the learning rule decides on."
    )
    learn_dismiss_rate: float = Field(
        default=0.8, gt=0, le=1, description="Dismissed share of a block that steps a kind down."
    )
    learn_accept_rate: float = Field(
        default=0.5, gt=0, le=1, description="Accepted share of a block that steps it back up."
    )
    learn_cooldown_factor: float = Field(
        default=2.0, ge=1, le=100, description="A kind's cooldown is multiplied by this per step."
    )


class OpsSettings(Section, alias_generator=_flat("")):
    """Backup, restore and the watchdog (``heron.ops``)."""

    restore_max_bytes: int = Field(
        default=64 * 1024**3,
        ge=0,
        description="Largest backup heron restore takes, in bytes (all its files together).",
    )

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
    watchdog_deploy_interval: float = Field(
        default=120.0,
        gt=0,
        description="Seconds between runs of a deploy check without its own interval.",
    )


class Settings(BaseSettings):
    """Everything Heron can be configured with: what belongs to all of Heron here, each
    capability's settings in its section (``SECTIONS``)."""

    model_config = SettingsConfigDict(extra="forbid")
    #: The default context's settings, when these are another context's (``in_context``).
    _base: Settings | None = PrivateAttr(default=None)

    home: Path = Field(default_factory=default_home, description="Data directory.")
    models_dir: Path = Field(
        default_factory=default_models_dir, description="Where fetched model files live."
    )
    database_url: str | None = Field(
        default=None, description="Store location; default: SQLite at $HERON_HOME/heron.db."
    )
    replica: str = Field(
        default_factory=socket.gethostname,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$",
        description="This server's name among the replicas sharing HERON_DATABASE_URL (its "
        "job workers' first part; heron doctor lists the live ones); default: the host name. "
        "Give each container its own.",
    )

    contexts: dict[str, ContextSpec] = Field(
        default_factory=dict,
        description="Named contexts ([contexts.NAME] tables): each one's libraries, "
        "workspace and skill directories; the default context is everything configured.",
    )
    context: str = Field(
        default=DEFAULT,
        description="The context a command acts in (heron --context); heron serve picks "
        "one per request (X-Heron-Context, or the key's).",
    )

    embed: EmbedSettings = Field(default_factory=EmbedSettings)
    skills: SkillsSettings = Field(default_factory=SkillsSettings)
    tools: ToolsSettings = Field(default_factory=ToolsSettings)
    agent: AgentSettings = Field(default_factory=AgentSettings)
    library: LibrarySettings = Field(default_factory=LibrarySettings)
    llm: LlmSettings = Field(default_factory=LlmSettings)
    server: ServerSettings = Field(default_factory=ServerSettings)
    jobs: JobsSettings = Field(default_factory=JobsSettings)
    interventions: InterventionsSettings = Field(default_factory=InterventionsSettings)
    ops: OpsSettings = Field(default_factory=OpsSettings)

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
        return _refuse_empty_path(cls.model_fields, value, info)

    @model_validator(mode="after")
    def _check_contexts(self) -> Settings:
        from heron.errors import ConfigError, HeronError

        for name in self.contexts:
            try:
                check_context_name(name)
            except HeronError as exc:
                raise ConfigError(f"[contexts.{name}] in heron.toml: {exc}") from None
        if DEFAULT in self.contexts:
            raise ConfigError(
                f"[contexts.{DEFAULT}] in heron.toml: the default context is the server as "
                "configured (libraries.txt, tools_root, skills_dirs); give yours another name."
            )
        if self.context != DEFAULT:
            try:
                spec = self.context_spec
            except HeronError as exc:  # HERON_CONTEXT or --context naming none
                raise ConfigError(str(exc)) from None
            assert spec is not None
            if self._base is None:  # kept before the context's values replace the server's
                self._base = self.model_copy(update={"context": DEFAULT})
            # New sections, not fields set in place: the default context's settings share
            # these sections (model_copy is shallow) and must keep the server's values.
            tools: dict[str, Any] = {"root": spec.workspace}
            if spec.mcp_config is not None:
                tools["mcp_config"] = spec.mcp_config
            self.tools = self.tools.model_copy(update=tools)
            if spec.skills_dirs is not None:
                dirs = os.pathsep.join(str(p) for p in spec.skills_dirs)
                self.skills = self.skills.model_copy(update={"dirs": dirs})
        return self

    @property
    def context_spec(self) -> ContextSpec | None:
        """The definition of ``context``; ``None`` in the default context. ``NotFound``
        naming the defined ones for a context heron.toml does not define."""
        if self.context == DEFAULT:
            return None
        spec = self.contexts.get(self.context)
        if spec is None:
            from heron.errors import NotFound

            known = ", ".join([DEFAULT, *sorted(self.contexts)])
            raise NotFound(
                f"No context {self.context[:80]!r} (contexts: {known}). Define it as "
                f"[contexts.{self.context[:80]}] in heron.toml, or name one of these."
            )
        return spec

    def use_contexts(self, contexts: dict[str, ContextSpec]) -> None:
        """Serve ``contexts`` from now on: a running server's reload of heron.toml
        (``heron.server.features.reload``). Set in place, here and in the default context's
        settings these were made from, so every holder of this object (the request
        middleware, ``in_context``, the job runner) sees them at once."""
        self.contexts = dict(contexts)
        if self._base is not None:
            self._base.contexts = self.contexts

    def in_context(self, name: str) -> Settings:
        """These settings as context ``name`` sees them: its workspace as ``tools.root``,
        its skill directories as ``skills.dirs``, its libraries (``heron.libraries``
        reads ``context_spec``). Taken from the default context's settings, whichever
        context these are in; ``NotFound`` for an undefined context."""
        check_context_name(name)
        if name == self.context:
            return self
        base = self._base if self._base is not None else self
        if name == DEFAULT:
            return base
        scoped = base.model_copy(update={"context": name})
        scoped._check_contexts()  # applies the context's workspace and skill directories
        scoped._base = base
        return scoped

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
        _check_named_config()
        toml = _CheckedToml(settings_cls, toml_file=_config_file())
        return (init_settings, _FlatEnv(settings_cls), toml)

    def public(self) -> dict[str, Any]:
        """Settings by their flat names (``library_chunk_tokens``) as plain JSON-able
        values, every one redacted as a log line is (``heron.redact.redact_value``): a
        value under a secret-sounding name masked whole, a password in a URL
        (``https://user:[REDACTED]@host``), a key in a query string or any token-shaped
        text masked in place. The doctor, ``heron info`` and ``ops.doctor`` show nothing
        else."""
        from heron.redact import redact_value

        data = self.model_dump(mode="json", exclude=set(SECTIONS))
        for section in SECTIONS:
            data |= getattr(self, section).model_dump(mode="json", by_alias=True)
        return {key: redact_value(value, key) for key, value in data.items()}


#: The sections of ``Settings``, by attribute, each read by its own capability.
SECTIONS: tuple[str, ...] = (
    "embed",
    "skills",
    "tools",
    "agent",
    "library",
    "llm",
    "server",
    "jobs",
    "interventions",
    "ops",
)


@cache
def setting_names() -> dict[str, tuple[str | None, str]]:
    """Every setting's flat name (its variable without ``HERON_``, its heron.toml key)
    and where it lives: ``{"library_chunk_tokens": ("library", "chunk_tokens"),
    "home": (None, "home"), ...}``, ``None`` for a field of ``Settings`` itself."""
    names: dict[str, tuple[str | None, str]] = {}
    for name in Settings.model_fields:
        if name not in SECTIONS:
            names[name] = (None, name)
            continue
        section = Settings.model_fields[name].annotation
        assert isinstance(section, type) and issubclass(section, Section)
        for field, info in section.model_fields.items():
            assert info.serialization_alias is not None  # every section has _flat(prefix)
            names[info.serialization_alias] = (name, field)
    return names


def locate(settings: Settings, name: str) -> tuple[BaseModel, str]:
    """The object holding setting ``name`` (by its flat name) and its field there:
    ``getattr(*locate(settings, "server_port"))`` is ``settings.server.port``."""
    section, field = setting_names()[name]
    return (settings if section is None else getattr(settings, section)), field


def _field_info(name: str) -> FieldInfo:
    holder, field = setting_names()[name]
    model = Settings if holder is None else Settings.model_fields[holder].annotation
    assert model is not None
    return typing.cast(type[BaseModel], model).model_fields[field]


def _nest(flat: dict[str, Any]) -> dict[str, Any]:
    """Flat settings (a variable's or a heron.toml key's name) put in their sections:
    ``{"library_ocr": True}`` is ``{"library": {"ocr": True}}``."""
    names = setting_names()
    nested: dict[str, Any] = {}
    for name, value in flat.items():
        section, field = names[name]
        if section is None:
            nested[field] = value
        else:
            nested.setdefault(section, {})[field] = value
    return nested


def _is_complex(name: str) -> bool:
    """Lists and tables, which a variable holds as JSON (as pydantic-settings reads them)."""
    annotation = _field_info(name).annotation
    return typing.get_origin(annotation) in (list, dict)


class _FlatEnv(PydanticBaseSettingsSource):
    """The ``HERON_*`` variables, each under its flat name (``HERON_LIBRARY_OCR``, not
    case-sensitive), put in their sections; lists and tables are JSON."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        # Unused: __call__ reads every variable at once, by flat name.
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        environ = {key.upper(): value for key, value in os.environ.items()}
        found: dict[str, Any] = {}
        for name in setting_names():
            raw = environ.get(_variable(name))
            if raw is None:
                continue
            if _is_complex(name):
                try:
                    found[name] = json.loads(raw)
                except ValueError as exc:
                    raise SettingsError(
                        f'error parsing value for field "{name}" from source "EnvSettingsSource"'
                    ) from exc
            else:
                found[name] = raw
        return _nest(found)


class _CheckedToml(TomlConfigSettingsSource):
    """heron.toml, refusing keys that are no setting: ignored, a misspelt key would leave
    its setting at the default with nothing to say so. Its keys are flat names, put in
    their sections."""

    def __init__(self, settings_cls: type[BaseSettings], toml_file: Path) -> None:
        super().__init__(settings_cls, toml_file=toml_file)
        fields = sorted(setting_names())
        unknown = sorted(set(map(str, self.toml_data)) - set(fields))
        if unknown:
            from heron.errors import ConfigError

            raise ConfigError(_unknown_keys(toml_file, unknown, fields))

    def __call__(self) -> dict[str, Any]:
        return _nest(dict(self.toml_data))


# -- error messages: what was wrong, where it was set, and what to do ---------------------


def _check_named_config() -> None:
    """A file ``HERON_CONFIG`` names must be there: a missing default heron.toml sets
    nothing, but a named one that is missing (a typo, a file not yet deployed) would
    leave every setting in it at its default with nothing to say so."""
    named = os.environ.get("HERON_CONFIG")
    if not named or Path(named).is_file():
        return
    from heron.errors import ConfigError

    path = Path(named)
    what = "is not a file" if path.exists() else "does not exist"
    raise ConfigError(
        f"HERON_CONFIG names {path}, which {what}. Create it there, set HERON_CONFIG to "
        f"the file you meant, or unset HERON_CONFIG to read {_default_config()} (optional)."
    )


def _unknown_keys(path: Path, unknown: list[str], fields: list[str]) -> str:
    named = []
    for key in unknown:
        close = difflib.get_close_matches(key, fields, n=1, cutoff=0.6)
        named.append(f"{key} (did you mean {close[0]}?)" if close else key)
    return (
        f"{path}: unknown setting(s) {', '.join(named)}. Fix or remove the line(s); "
        f"the settings are: {', '.join(fields)}."
    )


def _variable(field: str) -> str:
    return ENV_PREFIX + field.upper()


def _from_env(field: str) -> str | None:
    """The value of the field's variable, if set (names are not case-sensitive)."""
    wanted = _variable(field)
    return next((v for k, v in os.environ.items() if k.upper() == wanted), None)


def _default(field: str) -> str:
    info = _field_info(field)
    if info.default is PydanticUndefined or info.default is None:
        return "the default"
    return f"the default ({json.dumps(info.default)})"


def _flat_of(loc: tuple[int | str, ...]) -> tuple[str, str, tuple[int | str, ...]]:
    """A validation error's place as (flat name, the name a keyword argument gave it,
    what lies inside): ``("library", "ocr")`` is ``("library_ocr", "library.ocr", ())``,
    ``("contexts", "ops", "workspace")`` is ``("contexts", "contexts", ("ops", "workspace"))``."""
    head = str(loc[0])
    if head in SECTIONS and len(loc) > 1:
        field = str(loc[1])
        argument = f"{head}.{field}"
        return _flat_names().get((head, field), argument), argument, loc[2:]
    return head, head, loc[1:]


@cache
def _flat_names() -> dict[tuple[str | None, str], str]:
    """``setting_names`` the other way: ``("library", "ocr")`` is ``library_ocr``."""
    return {place: name for name, place in setting_names().items()}


def _given(values: dict[str, Any], argument: str) -> bool:
    """Whether keyword ``argument`` (``home``, ``library.ocr``) was passed to Settings."""
    section, _, field = argument.rpartition(".")
    given = values.get(section) if section else values
    return isinstance(given, dict) and field in given


def _invalid(exc: ValidationError, values: dict[str, Any]) -> str:
    """One sentence per bad field: where it was set, its value, what is wrong, the fix."""
    problems = []
    names = setting_names()
    for err in exc.errors(include_url=False):
        if not err["loc"]:
            problems.append(err["msg"])
            continue
        field, argument, inside = _flat_of(err["loc"])
        secret = "key" in field or "token" in field
        shown = "" if secret else f" (got {json.dumps(err['input'], default=str)})"
        problem = f"{err['msg'].removeprefix('Value error, ')}{shown}"
        inner = ".".join(str(p) for p in inside)  # contexts.NAME.key
        problem = f"{inner}: {problem}" if inner else problem
        if _given(values, argument) or field not in names:
            problems.append(f"argument {argument}: {problem}")
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
    """Lists and tables in variables are JSON (as pydantic-settings reads them); say so,
    with the JSON."""
    found = re.search(r'field "(\w+)"', str(exc))
    if not found or found.group(1) not in setting_names():
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
