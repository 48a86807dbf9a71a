"""models.yml: the default table, parsing, and errors that name the file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from heron.errors import ConfigError
from heron.llm import LOCAL_ALIAS, load_broker, load_table, parse_table
from heron.settings import Settings


def test_no_file_means_the_local_model(home: Path) -> None:
    table = load_table(Settings())
    assert table.default == LOCAL_ALIAS
    assert list(table.models) == [LOCAL_ALIAS]
    caps = load_broker(Settings()).capabilities()
    assert caps.name_profile == "strict" and caps.context_window == 8192 and caps.tool_calling


def test_models_yml_in_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home.mkdir(parents=True)
    (home / "models.yml").write_text(
        "default: fast\n"
        "models:\n"
        "  fast:\n"
        "    provider: openai\n"
        "    model: gpt-4o-mini\n"
        "    fallbacks: [claude, local]\n"
        "  claude:\n"
        "    provider: anthropic\n"
        "    model: claude-sonnet-4-5\n"
        "    max_tools: 64\n"
        "  groq:\n"
        "    provider: openai\n"
        "    model: llama-3.3-70b\n"
        "    base_url: https://api.groq.com/openai/v1\n"
        "    api_key_env: GROQ_API_KEY\n"
        "    context_window: 32768\n"
    )
    table = load_table(Settings())
    assert table.default == "fast"
    assert [s.alias for s in table.chain()] == ["fast", "claude", "local"]
    fast, claude, groq = (table.spec(a) for a in ("fast", "claude", "groq"))
    assert fast.api_key_env == "OPENAI_API_KEY" and fast.base_url == "https://api.openai.com/v1"
    assert fast.capabilities.max_tools == 128 and fast.capabilities.name_profile == "openai"
    assert claude.api_key_env == "ANTHROPIC_API_KEY"
    assert claude.capabilities.max_tools == 64 and claude.capabilities.name_profile == "anthropic"
    assert groq.capabilities.context_window == 32768
    monkeypatch.setenv("HERON_MODEL", "groq")
    assert load_table(Settings()).default == "groq"
    monkeypatch.setenv("HERON_MODEL", "nope")
    with pytest.raises(ConfigError, match=r"Unknown model 'nope'\. Choose from: fast, claude"):
        load_table(Settings())


def test_models_file_setting(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "elsewhere.yml"
    monkeypatch.setenv("HERON_MODELS_FILE", str(path))
    with pytest.raises(ConfigError, match="does not exist"):
        load_table(Settings())
    path.write_text("models:\n  mine:\n    provider: local\n")
    assert load_table(Settings()).default == "mine"


def test_malformed_yaml_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "models.yml"
    with pytest.raises(ConfigError, match=r"models.yml, line 3: not valid YAML"):
        parse_table("models:\n  a:\n    provider: [openai\n", path)


def test_unknown_provider_names_line_and_choices(tmp_path: Path) -> None:
    text = "models:\n  a:\n    provider: local\n  b:\n    provider: openia\n    model: x\n"
    with pytest.raises(
        ConfigError,
        match=r"line 4, model 'b': unknown provider 'openia'. "
        r"Choose from: openai, anthropic, local",
    ):
        parse_table(text, tmp_path / "models.yml")


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("provider: openai", "'model:' is required"),
        ("provider: openai\n    model: m\n    colour: red", "unknown key"),
        ("provider: openai\n    model: m\n    max_tools: -1", "max_tools must be a positive"),
        ("provider: openai\n    model: m\n    context_window: null", "context_window must be"),
        ("provider: openai\n    model: m\n    name_profile: bing", "unknown name_profile"),
        ("provider: openai\n    model: m\n    tool_calling: maybe", "tool_calling must be"),
        ("provider: openai\n    model: m\n    fallbacks: [ghost]", "falls back to 'ghost'"),
        ("- just a list", "expected a mapping"),
    ],
)
def test_bad_entries(entry: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_table(f"models:\n  a:\n    {entry}\n")


def test_max_tools_null_means_no_limit() -> None:
    table = parse_table("models:\n  a:\n    provider: openai\n    model: m\n    max_tools: null\n")
    assert table.spec("a").capabilities.max_tools is None
