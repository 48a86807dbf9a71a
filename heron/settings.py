"""One typed settings object, read from ``HERON_*`` variables and an optional ``heron.toml``.

Precedence, highest first: keyword arguments, environment (``HERON_HOME``,
``HERON_EMBEDDER`` ...), ``$HERON_HOME/heron.toml`` (or the file named by
``HERON_CONFIG``), then the defaults below. A key of heron.toml that is no setting is an
error naming it and the closest setting (``skills_dir``: did you mean ``skills_dirs``?).
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
    Field,
    PrivateAttr,
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


class Settings(BaseSettings):
    """Everything Heron can be configured with, in one place."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore")
    #: The default context's settings, when these are another context's (``in_context``).
    _base: Settings | None = PrivateAttr(default=None)

    home: Path = Field(default_factory=default_home, description="Data directory.")
    models_dir: Path = Field(
        default_factory=default_models_dir, description="Where fetched model files live."
    )
    database_url: str | None = Field(
        default=None, description="Store location; default: SQLite at $HERON_HOME/heron.db."
    )
    embedder: Literal["auto", "multilingual", "minilm", "e5", "remote"] = Field(
        default="auto",
        description="Embedding profile: multilingual (MiniLM for English queries, e5 for "
        "every other language; indexing runs both), minilm (bundled, fastest, English "
        "only), e5 (multilingual-e5-small, int8), remote; auto: multilingual when the e5 "
        "extra is installed, else minilm. A namespace keeps its model: switching means "
        "re-indexing.",
    )
    embed_batch_size: int = Field(
        default=1,
        ge=1,
        description="Texts per MiniLM run (e5 runs one at a time): one is fastest on the int8 "
        "graph, and only then is a text's vector independent of the texts beside it.",
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

    # -- agent routing, fetch_url and python_exec (heron.agent, heron.tools.fetch/pyexec) --
    agent_routing_mode: Literal["pattern", "semantic", "hybrid"] = Field(
        default="hybrid",
        description="How the agent picks the tools it offers: pattern (all, up to the "
        "provider's limit), semantic (cosine) or hybrid (cosine and BM25).",
    )
    agent_routing_top_k: int = Field(
        default=10, ge=1, description="Tools offered per request, at most (and the model's cap)."
    )
    agent_routing_threshold: float | None = Field(
        default=None,
        description="Cosine from which a routed tool is offered; default: the embedder "
        "profile's (heron.embed.calibration; MiniLM 0.25).",
    )
    agent_routing_always_include: list[str] = Field(
        default_factory=list,
        description='Tools offered on every request (within top_k), e.g. ["search_docs"].',
    )
    tools_fetch_url: bool = Field(
        default=False, description="Offer fetch_url (web pages as Markdown); off: no network."
    )
    tools_fetch_allowed_networks: list[str] = Field(
        default_factory=list,
        description="Non-public networks fetch_url may reach anyway (CIDR), e.g. "
        '["10.1.0.0/16"]; none: public internet only.',
    )
    tools_fetch_max_bytes: int = Field(
        default=5_000_000, ge=1024, description="Largest page body fetch_url reads, in bytes."
    )
    tools_fetch_timeout: float = Field(
        default=20.0, gt=0, description="Seconds one fetch_url call may take, redirects included."
    )
    tools_fetch_max_redirects: int = Field(default=5, ge=0, description="Redirects followed.")
    tools_fetch_chromium: str = Field(
        default="chromium", description="Browser that renders pages needing JavaScript."
    )
    tools_python_exec: bool = Field(
        default=False, description="Offer python_exec (snippets in a bubblewrap sandbox)."
    )
    tools_python_timeout: float = Field(
        default=10.0, gt=0, le=600, description="Seconds a python_exec snippet may run."
    )
    tools_python_memory_mb: int = Field(
        default=512, ge=32, description="Address space of a python_exec snippet, in MiB."
    )
    tools_python_max_output: int = Field(
        default=64_000, ge=1024, description="Bytes of stdout and of stderr kept per snippet."
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
    library_max_document_bytes: int = Field(
        default=64_000_000,
        ge=1,
        description="Larger PDF, Word, PowerPoint and Excel files are skipped with a warning "
        "(their size is mostly images; their text is read page by page).",
    )
    library_ocr: bool = Field(
        default=False,
        description="Read scanned PDF pages (an image, no text) with Debian's tesseract "
        "(apt-get install tesseract-ocr); off, they are reported and left unread.",
    )
    library_ocr_languages: str = Field(
        default="eng",
        pattern=r"^[a-z_]+(\+[a-z_]+)*$",
        description="Tesseract's languages for OCR, e.g. eng+por (each needs its "
        "tesseract-ocr-LANG package).",
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
    library_upload_max_file_bytes: int = Field(
        default=20_000_000,
        ge=1,
        description="Largest file added to a library (heron library add-files, the page, "
        "the API); HERON_LIBRARY_MAX_PAGE_BYTES bounds it too.",
    )
    library_upload_max_files: int = Field(
        default=50, ge=1, description="Files added to a library at once, at most."
    )
    library_upload_max_bytes: int = Field(
        default=64_000_000,
        ge=1,
        description="Bytes of the files added to a library at once, at most (an upload "
        "over HTTP may carry this much, whatever HERON_SERVER_MAX_BODY).",
    )
    library_enrich_model: str | None = Field(
        default=None,
        description="models.yml alias that writes a page's questions at index time "
        "(heron index --enrich, enrich=yes); default: the default alias.",
    )
    library_enrich_questions: int = Field(
        default=5, ge=1, le=20, description="Questions asked of the model per page."
    )
    library_enrich_max_chars: int | None = Field(
        default=None,
        ge=1000,
        description="Page characters sent to the model, at most (also cut to its context); "
        "default 12,000, or 3,000 for the local model (its CPU time grows with the page).",
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
        default=5.0,
        ge=0,
        description="Longest wait before a retry; a 429 asking longer goes to the caller.",
    )
    llm_allowed_fails: int = Field(
        default=3, ge=0, description="5xx/429s a minute a model may have before a cooldown."
    )
    llm_cooldown: float = Field(
        default=60.0, ge=0, description="Seconds a failing model is skipped; 0: never."
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
    agent_delegate: bool = Field(
        default=False,
        description="Let the agent hand tasks to background jobs (delegate_job) whatever "
        "agent_tool_safety, without any other execute tool: a read_only job runs, one that "
        "may write or deploy waits for a person; a named key's turns need its jobs scope.",
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
        "cross-site pages never may (Fetch Metadata, heron.server.http.origins).",
    )
    server_max_body: int = Field(
        default=8 * 1024 * 1024, ge=1024, description="Largest request body read, in bytes."
    )
    server_max_batch: int = Field(
        default=100, ge=1, description="Calls in one JSON-RPC batch, at most."
    )
    keys_window: int = Field(
        default=60,
        ge=1,
        description="Seconds of a named API key's per-minute limits (rpm, tpm); 60 is a minute.",
    )
    keys_flush: float = Field(
        default=5.0, gt=0, description="Seconds between writes of the keys' usage counts."
    )
    mcp_tool_safety: Literal["read", "write", "execute"] = Field(
        default="read",
        description="Most harmful tool an MCP client of heron serve or heron mcp may run: "
        "through call_tool, the jobs and interventions tools it is offered and the agent its "
        "ask runs; also a key without admin through tools.call (heron.tools.ceiling).",
    )
    openai_tool_safety: Literal["read", "write", "execute"] = Field(
        default="read",
        description="Most harmful of Heron's own tools a /v1 request may run (it replaces "
        "agent_tool_safety there): read never writes a file, creates a job or runs a program.",
    )
    # -- what one request may cost (docs/security.md, "Costs") --
    openai_max_messages: int = Field(
        default=2048, ge=1, description="Messages in one /v1/chat/completions request, at most."
    )
    openai_max_input_tokens: int = Field(
        default=200_000,
        ge=1,
        description="Estimated tokens (3 characters each) of a /v1 request's messages and "
        "tools together, at most.",
    )
    openai_schema_max_repeat: int = Field(
        default=10_000,
        ge=1,
        description="Largest minLength, maxLength, minItems, maxItems (...) or pattern "
        "{n,m} of a /v1 request's JSON schemas (nested quantifiers multiplied).",
    )
    openai_schema_max_size: int = Field(
        default=1_000_000,
        ge=1,
        description="Estimated grammar characters of all of a /v1 request's JSON schemas.",
    )
    embeddings_max_tokens: int = Field(
        default=8192,
        ge=1,
        description="Estimated tokens (3 characters each) of one /v1/embeddings request.",
    )
    embeddings_concurrency: int = Field(
        default=2, ge=1, description="/v1/embeddings requests served at once; more are 429."
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
    jobs_typecheck_command: str = Field(
        default="", description="What a job runs to typecheck (tools_commands); none if empty."
    )
    jobs_remote: str = Field(
        default="origin",
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$",
        description="The git remote (by name) whose reachability a job checks (git ls-remote).",
    )
    jobs_visibility_timeout: float = Field(
        default=20.0,
        ge=6.0,
        description="Seconds without a heartbeat (every 2 s while a job runs) after which any "
        "runner on the database takes the job over from its worker as dead: re-queued if "
        "read-only, else failed with the reason. Runners look every quarter of it.",
    )
    replica: str = Field(
        default_factory=socket.gethostname,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$",
        description="This server's name among the replicas sharing HERON_DATABASE_URL (its "
        "job workers' first part; heron doctor lists the live ones); default: the host name. "
        "Give each container its own.",
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
    interventions_keep_days: float = Field(
        default=30.0, gt=0, description="Days an intervention (and its audio) is kept."
    )
    interventions_keep_per_room: int = Field(
        default=1000, ge=1, description="Interventions kept per room, newest first."
    )
    interventions_keep_total: int = Field(
        default=100_000, ge=1, description="Interventions kept in all rooms, newest first."
    )
    interventions_audio_keep: int = Field(
        default=100, ge=1, description="Spoken audio files kept, newest first."
    )
    interventions_learn_outcomes: int = Field(
        default=10, ge=1, description="Outcomes per block the learning rule decides on."
    )
    interventions_learn_dismiss_rate: float = Field(
        default=0.8, gt=0, le=1, description="Dismissed share of a block that steps a kind down."
    )
    interventions_learn_accept_rate: float = Field(
        default=0.5, gt=0, le=1, description="Accepted share of a block that steps it back up."
    )
    interventions_learn_cooldown_factor: float = Field(
        default=2.0, ge=1, le=100, description="A kind's cooldown is multiplied by this per step."
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
    watchdog_deploy_interval: float = Field(
        default=120.0,
        gt=0,
        description="Seconds between runs of a deploy check without its own interval.",
    )

    # -- contexts (heron.core.contexts) --
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

    @field_validator("tools_fetch_allowed_networks")
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
            # Validating assignment is off: these set the fields as they are, in place.
            self.tools_root = spec.workspace
            if spec.skills_dirs is not None:
                self.skills_dirs = os.pathsep.join(str(p) for p in spec.skills_dirs)
            if spec.mcp_config is not None:
                self.mcp_config = spec.mcp_config
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
        """These settings as context ``name`` sees them: its workspace as ``tools_root``,
        its skill directories as ``skills_dirs``, its libraries (``heron.libraries``
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
    def embedder_profile(self) -> Literal["multilingual", "minilm", "e5", "remote"]:
        """The profile ``embedder`` resolves to: ``auto`` is ``multilingual`` where the e5
        extra is installed (``scripts/setup`` installs it), else ``minilm``."""
        if self.embedder != "auto":
            return self.embedder
        return "multilingual" if extras.installed("e5") else "minilm"

    @property
    def bearer_token(self) -> str | None:
        """HERON_API_TOKEN, ``None`` when unset or blank (a blank one must not pass as set)."""
        secret = self.api_token
        return (secret.get_secret_value().strip() or None) if secret else None

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
        inner = ".".join(str(p) for p in err["loc"][1:])  # contexts.NAME.key
        problem = f"{inner}: {problem}" if inner else problem
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
