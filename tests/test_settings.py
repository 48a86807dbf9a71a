from __future__ import annotations

from pathlib import Path

import pytest

from heron.errors import ConfigError
from heron.redact import MASK
from heron.settings import Settings


def test_defaults_follow_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("HERON_HOME", "HERON_MODELS_DIR", "HERON_CONFIG", "HERON_DATABASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    settings = Settings()
    assert settings.home == tmp_path / "data" / "heron"
    assert settings.models_dir == tmp_path / "cache" / "heron" / "models"
    assert settings.db_path == tmp_path / "data" / "heron" / "heron.db"


def test_environment_beats_toml_beats_defaults(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HERON_HOME", str(tmp_path))
    (tmp_path / "heron.toml").write_text("embed_batch_size = 8\nembed_threads = 1\n")
    monkeypatch.setenv("HERON_EMBED_THREADS", "2")
    settings = Settings()
    assert (settings.embed.batch_size, settings.embed.threads) == (8, 2)


def test_remote_embedder_needs_url_and_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERON_EMBEDDER", "remote")
    monkeypatch.delenv("HERON_REMOTE_EMBED_URL", raising=False)
    with pytest.raises(ConfigError, match="HERON_REMOTE_EMBED_URL"):
        Settings()


def test_unsupported_database_url_names_the_choices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERON_DATABASE_URL", "mysql://x")
    with pytest.raises(ConfigError, match="sqlite:///PATH"):
        _ = Settings().db_path


def test_secrets_are_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERON_REMOTE_EMBED_API_KEY", "sk-secret")
    assert Settings().public()["remote_embed_api_key"] == MASK


def test_tool_settings_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HERON_TOOLS_ROOT", str(tmp_path))
    monkeypatch.setenv("HERON_TOOLS_COMMANDS", '["git", "ls"]')
    monkeypatch.setenv("HERON_MCP_TIMEOUT", "5")
    settings = Settings()
    assert (settings.tools.root, settings.tools.commands, settings.tools.mcp_timeout) == (
        tmp_path,
        ["git", "ls"],
        5.0,
    )


def test_a_list_variable_that_is_not_json_names_the_json_form(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HERON_TOOLS_COMMANDS", "git, ls")
    with pytest.raises(ConfigError) as caught:
        Settings()
    assert """HERON_TOOLS_COMMANDS='["git", "ls"]'""" in str(caught.value)


def test_a_bad_toml_value_names_the_file_and_the_field(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HERON_HOME", str(tmp_path))
    monkeypatch.delenv("HERON_CONFIG", raising=False)
    monkeypatch.delenv("HERON_SERVER_PORT", raising=False)
    (tmp_path / "heron.toml").write_text('server_port = ""\n')
    with pytest.raises(ConfigError, match=r"server_port in .*heron\.toml: .* remove it for"):
        Settings()
    (tmp_path / "heron.toml").write_text("server_port =\n")
    with pytest.raises(ConfigError, match=r"heron\.toml is not valid TOML \(Invalid value"):
        Settings()


def test_an_empty_path_is_refused_not_read_as_the_current_directory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HERON_TOOLS_ROOT", "")
    with pytest.raises(ConfigError, match="HERON_TOOLS_ROOT: must not be empty"):
        Settings()


def test_an_unknown_heron_toml_key_is_an_error_naming_the_closest_setting(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``skills_dir`` (for ``skills_dirs``) used to be ignored: the skills it named were
    never indexed and nothing said why."""
    monkeypatch.setenv("HERON_HOME", str(tmp_path))
    monkeypatch.delenv("HERON_CONFIG", raising=False)
    config = tmp_path / "heron.toml"
    config.write_text('skills_dir = "/srv/skills"\nembed_batch_size = 8\n')
    with pytest.raises(ConfigError) as caught:
        Settings()
    message = str(caught.value)
    assert message.startswith(
        f"{config}: unknown setting(s) skills_dir (did you mean skills_dirs?)."
    )
    assert (
        "the settings are: agent_delegate, agent_docs_threshold," in message
        and "tools_root" in message
    )
    config.write_text('colour = "red"\n[server]\nport = 1\n')
    with pytest.raises(ConfigError, match=r"unknown setting\(s\) colour, server \(did you mean"):
        Settings()
    config.write_text('skills_dirs = "/srv/skills"\n')
    assert Settings().skills.dirs == "/srv/skills"


def test_a_heron_config_naming_no_file_is_an_error_naming_it_and_the_fix(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Issue 44: a HERON_CONFIG with a typo was read as an empty file, silently."""
    monkeypatch.setenv("HERON_HOME", str(tmp_path))
    missing = tmp_path / "nope.toml"
    monkeypatch.setenv("HERON_CONFIG", str(missing))
    with pytest.raises(ConfigError) as caught:
        Settings()
    message = str(caught.value)
    assert message.startswith(f"HERON_CONFIG names {missing}, which does not exist.")
    assert f"unset HERON_CONFIG to read {tmp_path / 'heron.toml'}" in message
    monkeypatch.setenv("HERON_CONFIG", str(tmp_path))
    with pytest.raises(ConfigError, match="which is not a file"):
        Settings()
    missing.write_text("embed_batch_size = 8\n")
    monkeypatch.setenv("HERON_CONFIG", str(missing))
    assert Settings().embed.batch_size == 8
