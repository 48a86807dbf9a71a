"""Settings in sections (issue 53): every variable and heron.toml key keeps its flat name,
each reaches its section, and what is shown (heron info, the doctor) is still flat."""

from __future__ import annotations

from pathlib import Path

import pytest

from heron.core.contexts import ContextSpec
from heron.errors import ConfigError
from heron.settings import SECTIONS, Settings, locate, setting_names

#: Every variable Heron read before its settings were put in sections, without
#: ``HERON_``: a name may be added here, never dropped or renamed.
_NAMES = """
AGENT_DELEGATE AGENT_DOCS_THRESHOLD AGENT_KEYWORDS AGENT_MAX_STEPS AGENT_MAX_TOKENS
AGENT_PASSAGES AGENT_ROUTING_ALWAYS_INCLUDE AGENT_ROUTING_MODE AGENT_ROUTING_THRESHOLD
AGENT_ROUTING_TOP_K AGENT_TOOL_SAFETY AGENT_TOOL_THRESHOLD AGENT_TOOL_TIMEOUT
AGENT_TOOL_WORKERS API_TOKEN CONTEXT CONTEXTS DATABASE_URL EMBEDDER
EMBEDDINGS_CONCURRENCY EMBEDDINGS_MAX_TOKENS EMBED_BATCH_SIZE EMBED_CACHE EMBED_THREADS
HOME INTERVENTIONS_ALERT_URLS INTERVENTIONS_AUDIO_KEEP INTERVENTIONS_COOLDOWN
INTERVENTIONS_KEEP_DAYS INTERVENTIONS_KEEP_PER_ROOM INTERVENTIONS_KEEP_TOTAL
INTERVENTIONS_LEARN_ACCEPT_RATE INTERVENTIONS_LEARN_COOLDOWN_FACTOR
INTERVENTIONS_LEARN_DISMISS_RATE INTERVENTIONS_LEARN_OUTCOMES INTERVENTIONS_ROOM
INTERVENTIONS_SCAN_INTERVAL INTERVENTIONS_TTS_PROGRAM INTERVENTIONS_TTS_URL
JOBS_COMMAND_TIMEOUT JOBS_CONCURRENCY JOBS_EVENT_MAX_BYTES JOBS_REMOTE JOBS_TEST_COMMAND
JOBS_TYPECHECK_COMMAND JOBS_VISIBILITY_TIMEOUT KEYS_FLUSH KEYS_WINDOW
LIBRARY_ALLOW_FILE_URLS LIBRARY_CANDIDATES LIBRARY_CHUNK_OVERLAP LIBRARY_CHUNK_TOKENS
LIBRARY_DEFAULT_DOCS LIBRARY_ENRICH_MAX_CHARS LIBRARY_ENRICH_MODEL
LIBRARY_ENRICH_QUESTIONS LIBRARY_GIT_TIMEOUT LIBRARY_MAX_DOCUMENT_BYTES
LIBRARY_MAX_PAGE_BYTES LIBRARY_OCR LIBRARY_OCR_LANGUAGES LIBRARY_RERANKER
LIBRARY_RERANK_API_KEY LIBRARY_RERANK_MODEL LIBRARY_RERANK_MODEL_NAME
LIBRARY_RERANK_TIMEOUT LIBRARY_RERANK_URL LIBRARY_ROOTS LIBRARY_TRANSLATE LIBRARY_UPLOAD_MAX_BYTES
LIBRARY_UPLOAD_MAX_FILES LIBRARY_UPLOAD_MAX_FILE_BYTES LLM_ALLOWED_FAILS LLM_BACKOFF
LLM_COOLDOWN LLM_MAX_WAIT LLM_RETRIES LLM_TIMEOUT MCP_CONFIG MCP_TIMEOUT MCP_TOOL_SAFETY
MODEL MODELS_DIR MODELS_FILE OPENAI_MAX_INPUT_TOKENS OPENAI_MAX_MESSAGES
OPENAI_SCHEMA_MAX_REPEAT OPENAI_SCHEMA_MAX_SIZE OPENAI_TOOL_SAFETY REMOTE_EMBED_API_KEY
REMOTE_EMBED_MODEL REMOTE_EMBED_TIMEOUT REMOTE_EMBED_URL REPLICA RESTORE_MAX_BYTES
SERVER_ALLOWED_HOSTS SERVER_ALLOWED_ORIGINS SERVER_ALLOW_SAME_SITE SERVER_AUTH_DELAY
SERVER_AUTH_FAILURES SERVER_AUTH_WINDOW SERVER_HOST SERVER_MAX_BATCH SERVER_MAX_BODY
SERVER_PORT SERVER_SESSION_TTL SERVER_SSE_PING SERVER_STREAM_GRACE SERVER_STREAM_TTL
SKILLS_DIRS SKILLS_FOLLOW_SYMLINKS SKILLS_MIN_REL TOOLS_COMMANDS
TOOLS_FETCH_ALLOWED_NETWORKS TOOLS_FETCH_CHROMIUM TOOLS_FETCH_MAX_BYTES
TOOLS_FETCH_MAX_REDIRECTS TOOLS_FETCH_TIMEOUT TOOLS_FETCH_URL TOOLS_POLICY
TOOLS_PYTHON_EXEC TOOLS_PYTHON_MAX_OUTPUT TOOLS_PYTHON_MEMORY_MB TOOLS_PYTHON_TIMEOUT
TOOLS_ROOT WATCHDOG_ALERT_URLS WATCHDOG_CONFIG WATCHDOG_DEPLOY_INTERVAL
WATCHDOG_INTERVAL
"""
VARIABLES = _NAMES.split()


def test_every_variable_keeps_its_name() -> None:
    assert sorted(name.upper() for name in setting_names()) == sorted(VARIABLES)


def test_public_is_flat_under_the_same_names() -> None:
    assert set(Settings().public()) == set(setting_names())


def test_a_variable_and_a_toml_key_reach_their_section(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HERON_HOME", str(tmp_path))
    monkeypatch.delenv("HERON_CONFIG", raising=False)
    (tmp_path / "heron.toml").write_text('library_ocr = true\nmodel = "fast"\nkeys_window = 30\n')
    monkeypatch.setenv("HERON_SERVER_PORT", "9000")
    monkeypatch.setenv("HERON_API_TOKEN", "t" * 40)
    settings = Settings()
    assert settings.library.ocr and settings.llm.model == "fast"
    assert (settings.server.port, settings.server.keys_window) == (9000, 30)
    assert settings.server.bearer_token == "t" * 40
    assert getattr(*locate(settings, "server_port")) == 9000


def test_a_keyword_sets_its_fields_and_keeps_the_rest_of_the_section(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HERON_LIBRARY_CHUNK_TOKENS", "64")
    settings = Settings(home=tmp_path, library={"ocr": True})
    assert (settings.library.ocr, settings.library.chunk_tokens) == (True, 64)


def test_a_flat_keyword_is_refused_not_ignored(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="argument tools_root: Extra inputs"):
        Settings(home=tmp_path, tools_root=tmp_path)
    with pytest.raises(ConfigError, match=r"argument tools\.rooot: Extra inputs"):
        Settings(home=tmp_path, tools={"rooot": tmp_path})


def test_a_bad_value_names_its_variable_or_its_keyword(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HERON_SERVER_PORT", "port")
    with pytest.raises(ConfigError, match=r"^Bad setting: HERON_SERVER_PORT: .* \(got \"port\"\)"):
        Settings(home=tmp_path)
    monkeypatch.delenv("HERON_SERVER_PORT")
    with pytest.raises(ConfigError, match=r"^Bad setting: argument server.port: "):
        Settings(home=tmp_path, server={"port": -1})


def test_a_context_replaces_sections_leaving_the_default_context_its_own(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    spec = ContextSpec(workspace=work, skills_dirs=(tmp_path / "skills",))
    base = Settings(home=tmp_path, tools={"root": tmp_path}, contexts={"geo": spec})
    geo = base.in_context("geo")
    assert (geo.tools.root, geo.skills.extra_dirs) == (work, [tmp_path / "skills"])
    assert (base.tools.root, base.skills.dirs) == (tmp_path, "")
    assert geo.in_context("default") is base


def test_every_section_is_a_field_of_settings() -> None:
    assert {section for section, _ in setting_names().values() if section} == set(SECTIONS)
