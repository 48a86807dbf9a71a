"""models.yml: the default table, parsing, and errors that name the file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from heron.errors import ConfigError
from heron.llm import LOCAL_ALIAS, ChatRequest, Message, load_broker, load_table, parse_table
from heron.settings import Settings
from tests.llm_servers import ChatServer


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
    assert table.spec("default") == table.spec() == fast  # what clients send for "no pick"
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


# -- LiteLLM's model_list ------------------------------------------------------------------

#: A LiteLLM proxy config in the shape LiteLLM's docs give (docs.litellm.ai, "Config.yaml"):
#: deployments under one model_name, os.environ/ keys, per-deployment rpm and timeouts,
#: model_info metadata, and the proxy's own settings sections.
LITELLM_CONFIG = """\
model_list:
  - model_name: gpt-4o
    litellm_params:
      model: openai/gpt-4o
      api_key: os.environ/OPENAI_API_KEY
      rpm: 480
      timeout: 300
      stream_timeout: 60
    model_info:
      id: deployment-1
      mode: chat
      base_model: gpt-4o
  - model_name: claude
    litellm_params:
      model: anthropic/claude-3-5-sonnet-20240620
      api_key: os.environ/ANTHROPIC_API_KEY
      max_tokens: 4096
  - model_name: llama3
    litellm_params:
      model: ollama_chat/llama3.1
      api_base: http://localhost:11434
    model_info:
      max_input_tokens: 8192
      supports_function_calling: false
  - model_name: vllm-model
    litellm_params:
      model: hosted_vllm/facebook/opt-125m
      api_base: http://0.0.0.0:8000/v1
  - model_name: gpt-4o
    litellm_params:
      model: openrouter/openai/gpt-4o
      api_key: os.environ/OPENROUTER_API_KEY
      temperature: 0.2
  - model_name: mini
    litellm_params:
      model: gpt-4o-mini
litellm_settings:
  drop_params: True
  set_verbose: True
router_settings:
  routing_strategy: simple-shuffle
  num_retries: 3
general_settings:
  master_key: os.environ/LITELLM_MASTER_KEY
"""


def test_a_litellm_config_reads_unchanged(tmp_path: Path) -> None:
    table = parse_table(LITELLM_CONFIG, tmp_path / "config.yaml")
    assert list(table.models) == [
        "gpt-4o",  # a pool of the two entries named so: LiteLLM balances load between them
        "gpt-4o#1",
        "gpt-4o#2",
        "claude",
        "llama3",
        "vllm-model",
        "mini",
        LOCAL_ALIAS,
    ]
    assert table.default == "gpt-4o"
    pool, gpt, router, claude, llama, vllm, mini = (table.spec(a) for a in list(table.models)[:7])
    assert (gpt.provider, gpt.model, gpt.base_url, gpt.api_key_env) == (
        "openai",
        "gpt-4o",
        "https://api.openai.com/v1",
        "OPENAI_API_KEY",
    )
    assert (pool.provider, pool.deployments) == ("openai", ("gpt-4o#1", "gpt-4o#2"))
    assert table.strategy(pool) == "simple-shuffle"  # router_settings.routing_strategy
    assert (gpt.rpm, router.rpm) == (480, None)  # per deployment: its weight in a shuffle
    assert (claude.provider, claude.model, claude.max_output_tokens) == (
        "anthropic",
        "claude-3-5-sonnet-20240620",
        4096,
    )
    assert claude.api_key_env == "ANTHROPIC_API_KEY"
    assert (llama.provider, llama.model, llama.base_url, llama.api_key_env) == (
        "openai",
        "llama3.1",
        "http://localhost:11434/v1",
        None,
    )
    assert llama.capabilities.context_window == 8192 and not llama.capabilities.tool_calling
    assert (vllm.provider, vllm.model, vllm.base_url) == (
        "openai",
        "facebook/opt-125m",
        "http://0.0.0.0:8000/v1",
    )
    assert (router.model, router.base_url, router.api_key_env, router.temperature) == (
        "openai/gpt-4o",
        "https://openrouter.ai/api/v1",
        "OPENROUTER_API_KEY",
        0.2,
    )
    assert (mini.provider, mini.model) == ("openai", "gpt-4o-mini")
    notes = "\n".join(table.notes)
    assert "general_settings is LiteLLM's own setting; Heron ignores it" in notes
    assert "Heron ignores the LiteLLM litellm_settings key(s) drop_params, set_verbose" in notes
    assert "router_settings key(s)" not in notes  # routing_strategy is read
    assert table.policy.retries == 3  # router_settings.num_retries is read
    assert "stream_timeout, timeout" in notes


def test_a_litellm_config_answers_through_the_broker(
    chat: ChatServer, home: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The user's file, as LiteLLM would take it, drives a real call (the loopback server
    speaks OpenAI's wire format); the ignored sections are logged once."""
    home.mkdir(parents=True)
    (home / "models.yml").write_text(
        "model_list:\n"
        "  - model_name: team-gpt\n"
        "    litellm_params:\n"
        "      model: openai/gpt-test\n"
        f"      api_base: {chat.url}/v1\n"
        "      api_key: os.environ/TEST_OPENAI_KEY\n"
        "      max_tokens: 50\n"
        "router_settings:\n"
        "  routing_strategy: least-busy\n"
        "  redis_host: redis.internal\n"
    )
    with caplog.at_level("WARNING", logger="heron.llm"):
        broker = load_broker(Settings())
        load_broker(Settings())
    answer = broker.complete(ChatRequest((Message("user", "ping"),)))
    assert answer.text == "echo: ping" and answer.model == "team-gpt"
    body = chat.posted("/v1/chat/completions")[0]
    assert body["model"] == "gpt-test" and body["max_tokens"] == 50
    logged = [r.getMessage() for r in caplog.records if "router_settings" in r.getMessage()]
    assert len(logged) == 1
    broker.close()


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (
            "model: azure/gpt-4o\n      api_base: https://x.openai.azure.com\n"
            "      api_version: '2024-02-01'",
            r"azure/ models are not supported.*LiteLLM proxy in front.*openai/MODEL_NAME",
        ),
        ("model: bedrock/anthropic.claude-v2", r"provider 'bedrock' is not supported"),
        ("model: llama3", r"model 'llama3' names no provider.*openai/llama3"),
        (
            "model: openai/gpt-4o\n      api_key: sk-live-1234567890abcdef",
            r"api_key holds the key itself.*os.environ/NAME",
        ),
        ("model: hosted_vllm/opt", r"hosted_vllm/ needs api_base"),
        ("model: openai/x\n      api_bse: http://h/v1", r"api_bse \(did you mean api_base\?\)"),
        ("api_base: http://h/v1", r"litellm_params.model is required"),
    ],
)
def test_litellm_entries_heron_cannot_take_are_refused_clearly(
    tmp_path: Path, params: str, message: str
) -> None:
    text = f"model_list:\n  - model_name: m\n    litellm_params:\n      {params}\n"
    with pytest.raises(ConfigError, match=message) as caught:
        parse_table(text, tmp_path / "models.yml")
    assert "models.yml, line 2, model_list entry 1" in str(caught.value)
    assert "sk-live" not in str(caught.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "modles:\n  a: {provider: local}\n",
            r"unknown top-level key\(s\) modles \(did you mean models\?\)",
        ),
        ("model_lists: []\n", r"model_lists \(did you mean model_list\?\)"),
        (
            "models:\n  a:\n    provider: openai\n    model: m\n    fallback: [local]\n",
            r"unknown key\(s\) fallback \(did you mean fallbacks\?\)\. Allowed: answers, "
            r"api_key_env",
        ),
        (
            "model_list:\n  - model_name: m\n    litellm_param: {model: openai/x}\n",
            r"litellm_param \(did you mean litellm_params\?\)\. "
            r"Allowed: litellm_params, model_info",
        ),
    ],
)
def test_unknown_keys_name_the_closest_allowed_one(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_table(text)


ROUTED = """model_list:
  - model_name: primary
    litellm_params:
      model: openai/gpt-test
      api_base: {url}/v1
      api_key: os.environ/TEST_OPENAI_KEY
  - model_name: backup
    litellm_params:
      model: openai/other-test
      api_base: {url}/v1
      api_key: os.environ/TEST_OPENAI_KEY
  - model_name: small
    litellm_params:
      model: openai/small-test
      api_base: {url}/v1
      api_key: os.environ/TEST_OPENAI_KEY
    model_info: {{max_input_tokens: 300}}
router_settings:
  fallbacks: [{{"primary": ["backup"]}}]
  context_window_fallbacks: [{{"small": ["backup"]}}]
  num_retries: 0
  timeout: 7
  allowed_fails: 1
  cooldown_time: 45
  routing_strategy: simple-shuffle
litellm_settings:
  request_timeout: 99
  num_retries: 5
  drop_params: true
"""


def test_router_settings_fallbacks_are_used(chat: ChatServer, home: Path) -> None:
    """router_settings.fallbacks names the fallback, and the broker goes to it; the
    policy keys are read (router_settings winning over litellm_settings), the rest noted."""
    home.mkdir(parents=True)
    (home / "models.yml").write_text(ROUTED.format(url=chat.url))
    broker = load_broker(Settings())
    table = broker.table
    assert table.spec("primary").fallbacks == ("backup",)
    assert table.spec("small").context_fallbacks == ("backup",)
    assert (table.policy.retries, table.policy.timeout) == (0, 7.0)
    assert (table.policy.allowed_fails, table.policy.cooldown) == (1, 45.0)
    assert broker.limits.retries == 0 and broker.limits.cooldown == 45.0
    notes = "\n".join(table.notes)
    assert table.policy.strategy == "simple-shuffle"
    assert "litellm_settings key(s) drop_params" in notes
    chat.fail("gpt-test", 500)
    answer = broker.complete(ChatRequest((Message("user", "ping"),)))
    assert answer.model == "backup" and answer.text == "echo: ping"
    assert [b["model"] for b in chat.posted("/v1/chat/completions")] == ["gpt-test", "other-test"]
    # A prompt over small's window goes to its context-window fallback, no call to small.
    long = ChatRequest((Message("user", "word " * 400),))
    assert broker.complete(long, model="small").model == "backup"
    assert "small-test" not in [b["model"] for b in chat.posted("/v1/chat/completions")]
    broker.close()


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ("router_settings: {fallbacks: [primary]}", r"router_settings.fallbacks must be a list"),
        ("router_settings: {fallbacks: [{nope: [primary]}]}", r"fallbacks for 'nope'"),
        ("router_settings: {fallbacks: [{primary: [nope]}]}", r"falls back to 'nope'"),
        ("router_settings: {num_retries: -1}", r"num_retries must be a whole number"),
        ("litellm_settings: {request_timeout: fast}", r"request_timeout must be a number"),
        ("router_settings: [1]", r"router_settings must be a mapping"),
    ],
)
def test_bad_router_settings_name_the_key(section: str, message: str) -> None:
    text = "models:\n  primary: {provider: local}\n" + section + "\n"
    with pytest.raises(ConfigError, match=message):
        parse_table(text)


def test_a_native_models_yml_takes_context_window_fallbacks() -> None:
    table = parse_table(
        "models:\n"
        "  small: {provider: local, context_window: 512, context_window_fallbacks: [big]}\n"
        "  big: {provider: local}\n"
    )
    assert table.spec("small").context_fallbacks == ("big",)
    assert table.spec("small").to_dict()["context_window_fallbacks"] == ["big"]
