"""LiteLLM's ``model_list`` in models.yml: a LiteLLM proxy's config.yaml read unchanged.

Each entry becomes a models.yml alias (``heron.llm.config`` then checks it like any
other)::

    model_list:
      - model_name: fast                       # the alias
        litellm_params:
          model: openai/gpt-4o-mini            # provider/model
          api_base: https://api.openai.com/v1  # -> base_url
          api_key: os.environ/OPENAI_API_KEY   # -> api_key_env: OPENAI_API_KEY
          max_tokens: 1024                     # -> max_output_tokens
          temperature: 0.2                     # -> temperature (the alias's default)
      - model_name: qwen
        litellm_params: {model: ollama_chat/qwen2.5:7b, api_base: "http://localhost:11434"}
    router_settings:                           # read: see ROUTER_KEYS
      fallbacks: [{fast: [qwen]}]              # -> fast's fallbacks
      context_window_fallbacks: [{fast: [qwen]}]
      num_retries: 1                           # -> retries per model (HERON_LLM_RETRIES)
      timeout: 30                              # -> seconds per call (HERON_LLM_TIMEOUT)
      allowed_fails: 3                         # -> failures a minute before a cooldown
      cooldown_time: 60                        # -> seconds a failing model is skipped
      routing_strategy: least-busy             # -> how a pool's deployments are tried

Providers (``PREFIXES``): ``openai/``, ``anthropic/``, ``ollama/`` and ``ollama_chat/``
(Ollama's OpenAI-compatible API at ``api_base`` + ``/v1``), ``hosted_vllm/`` (``api_base``
as given, it ends in ``/v1``), ``openrouter/``, ``groq/``, ``deepseek/``, ``mistral/``;
a bare ``gpt-...``/``o1``... is OpenAI's, ``claude-...`` Anthropic's. ``azure/`` and the
rest are refused with the way round (an OpenAI-compatible endpoint, e.g. the LiteLLM
proxy itself, under ``openai/``).

``router_settings`` and ``litellm_settings`` are read for the keys in ``ROUTER_KEYS`` (the
proxy takes ``litellm_settings.request_timeout`` for ``timeout``); where both set one,
``router_settings`` wins, as the router's own argument does in LiteLLM. Every other key
of theirs is named in a note as ignored; ``general_settings`` and the rest are ignored
whole.

Several entries with one ``model_name`` are LiteLLM's load balancing: they become the
deployments ``name#1``, ``name#2``... of the pool ``name`` (``heron.llm.routing``), tried
in the order of ``routing_strategy``, their ``rpm``, ``tpm`` and ``weight`` read. A
literal ``api_key`` is refused: keys live in the environment; a list of
``os.environ/NAME`` is several keys, rotated on 401 and 429.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from heron.errors import ConfigError

#: Top-level sections of a LiteLLM config that mean nothing to Heron: read past, noted.
IGNORED_SECTIONS = ("general_settings", "environment_variables", "credential_list")
#: Sections Heron reads the routing keys of (``ROUTER_KEYS``), the first winning.
ROUTER_SECTIONS = ("router_settings", "litellm_settings")
#: Routing keys of those sections -> ``RoutingTable.policy`` fields or per-alias lists.
ROUTER_KEYS = {
    "fallbacks": "fallbacks",
    "default_fallbacks": "default_fallbacks",
    "context_window_fallbacks": "context_window_fallbacks",
    "num_retries": "retries",
    "timeout": "timeout",
    "request_timeout": "timeout",
    "allowed_fails": "allowed_fails",
    "cooldown_time": "cooldown",
    "routing_strategy": "strategy",
    "cache": "cache",
    "cache_responses": "cache",
    "cache_params": "cache_params",
}
#: LiteLLM's ``cache_params`` keys Heron reads; ``type`` other than ``local`` is noted.
CACHE_PARAMS = ("type", "ttl", "max_size_in_memory", "default_in_memory_ttl")
#: LiteLLM's routing strategies Heron implements (``heron.llm.routing``).
STRATEGIES = (
    "simple-shuffle",
    "least-busy",
    "latency-based-routing",
    "usage-based-routing",
    "usage-based-routing-v2",
)
ENTRY_KEYS = ("model_name", "litellm_params", "model_info")
#: ``litellm_params`` Heron uses; any other LiteLLM parameter is ignored with a note.
#: The money keys (LiteLLM's names) pass through as they are, from litellm_params or
#: model_info, where LiteLLM reads them too.
MONEY_KEYS = ("input_cost_per_token", "output_cost_per_token", "max_budget", "budget_duration")
USED_PARAMS = (
    "model", "api_base", "api_key", "max_tokens", "temperature", "rpm", "tpm", "weight",
    *MONEY_KEYS,
)  # fmt: skip
#: ``model_info`` keys Heron reads: LiteLLM's context size and tool flag, and Heron's
#: own capability names (model_info is free-form metadata in LiteLLM).
INFO_KEYS = {
    "max_input_tokens": "context_window",
    "supports_function_calling": "tool_calling",
    "tool_calling": "tool_calling",
    "max_tools": "max_tools",
    "name_profile": "name_profile",
    "context_window": "context_window",
    "answers": "answers",
}
ENV_PREFIX = "os.environ/"


@dataclass(frozen=True)
class Prefix:
    """How a LiteLLM provider prefix maps onto a Heron provider."""

    provider: str
    base_url: str | None = None  # None: api_base, or the provider's default
    key_env: str | None = None  # LiteLLM's variable for the key, when none is given
    suffix: str = ""  # appended to api_base (Ollama's OpenAI-compatible API)


PREFIXES: dict[str, Prefix] = {
    "openai": Prefix("openai"),
    "anthropic": Prefix("anthropic"),
    "ollama": Prefix("openai", "http://localhost:11434", suffix="/v1"),
    "ollama_chat": Prefix("openai", "http://localhost:11434", suffix="/v1"),
    "hosted_vllm": Prefix("openai"),
    "openrouter": Prefix("openai", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "groq": Prefix("openai", "https://api.groq.com/openai/v1", "GROQ_API_KEY"),
    "deepseek": Prefix("openai", "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
    "mistral": Prefix("openai", "https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
}
#: Bare model names LiteLLM routes without a prefix.
_BARE = (("gpt-", "openai"), ("chatgpt-", "openai"), ("o1", "openai"), ("o3", "openai"))
_BARE += (("o4", "openai"), ("claude-", "anthropic"))


def unknown_keys(found: Any, allowed: Any, at: str, what: str = "key(s)") -> None:
    """Raise ``ConfigError`` naming each key of ``found`` not in ``allowed``, the closest
    allowed one where there is one (``difflib``), and every allowed key."""
    allowed = sorted(map(str, allowed))
    unknown = sorted(set(map(str, found)) - set(allowed))
    if not unknown:
        return
    named = []
    for key in unknown:
        close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
        named.append(f"{key} (did you mean {close[0]}?)" if close else key)
    raise ConfigError(f"{at}: unknown {what} {', '.join(named)}. Allowed: {', '.join(allowed)}.")


def convert(
    data: Mapping[str, Any], where: str, lines: list[int]
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """``(alias -> models.yml entry, notes)`` for the ``model_list`` of ``data``.
    ``lines`` holds each entry's 1-based line in the file, for error messages."""
    entries = data.get("model_list")
    if not isinstance(entries, list):
        raise ConfigError(
            f"{where}: model_list must be a list of entries (- model_name: ..., "
            f"litellm_params: {{model: provider/model}}), got {type(entries).__name__}."
        )
    notes: list[str] = []
    aliases: dict[str, dict[str, Any]] = {}
    groups: dict[str, list[str]] = {}
    for n, entry in enumerate(entries):
        at = f"{where}, line {lines[n] if n < len(lines) else 0}, model_list entry {n + 1}"
        name, heron, ignored = _entry(entry, at)
        group = groups.setdefault(name, [])
        alias = name if not group else f"{name}#{len(group) + 1}"
        group.append(alias)
        aliases[alias] = heron
        if ignored:
            notes.append(
                f"{at} ({name}): Heron ignores the LiteLLM parameter(s) {', '.join(ignored)}."
            )
    pooled: dict[str, dict[str, Any]] = {}
    for alias, heron in aliases.items():  # the pool where its first entry was
        members = groups.get(alias, [])
        if len(members) < 2:
            pooled.setdefault(alias, heron)
            continue
        pooled[alias] = {"deployments": [f"{alias}#{n}" for n in range(1, len(members) + 1)]}
        for n, member in enumerate(members, 1):
            pooled[f"{alias}#{n}"] = aliases[member]
    return pooled, notes


def _entry(entry: Any, at: str) -> tuple[str, dict[str, Any], list[str]]:
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{at}: expected a mapping with model_name and litellm_params.")
    unknown_keys(entry, ENTRY_KEYS, at)
    name = entry.get("model_name")
    params = entry.get("litellm_params")
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"{at}: model_name (the name clients ask for) is required.")
    if not isinstance(params, Mapping) or not isinstance(params.get("model"), str):
        raise ConfigError(
            f"{at} ({name}): litellm_params.model is required, as provider/model "
            "(e.g. openai/gpt-4o-mini, ollama_chat/qwen2.5:7b)."
        )
    ignored = sorted(str(k) for k in params if k not in USED_PARAMS)
    for key in ignored:  # a typo of a parameter Heron uses must not pass as "ignored"
        close = difflib.get_close_matches(key, USED_PARAMS, n=1, cutoff=0.8)
        if close:
            raise ConfigError(
                f"{at} ({name}): unknown litellm_params key {key} (did you mean {close[0]}?)."
            )
    heron = _provider(params, f"{at} ({name})")
    for key, value in (entry.get("model_info") or {}).items():
        if key in INFO_KEYS:
            heron[INFO_KEYS[key]] = value
        elif key in MONEY_KEYS:
            heron[key] = value
        elif key == "mode" and value in ("audio_speech", "audio_transcription"):
            heron["mode"] = value  # LiteLLM's other modes (chat, completion...) are chat
    heron.update({key: params[key] for key in MONEY_KEYS if key in params})
    if "max_tokens" in params:
        heron["max_output_tokens"] = params["max_tokens"]
    if "temperature" in params:
        heron["temperature"] = params["temperature"]
    heron.update({key: params[key] for key in ("rpm", "tpm", "weight") if key in params})
    return name, heron, ignored


def _provider(params: Mapping[str, Any], at: str) -> dict[str, Any]:
    prefix, slash, model = str(params["model"]).partition("/")
    if not slash:
        prefix, model = _bare(prefix, at), prefix
    if prefix == "azure" or prefix.startswith("azure_"):
        raise ConfigError(
            f"{at}: azure/ models are not supported: Heron speaks OpenAI's and Anthropic's "
            "APIs, not Azure's deployments and api-version. Put a LiteLLM proxy in front "
            "and name it here as openai/MODEL_NAME with api_base: http://PROXY:4000/v1."
        )
    if prefix not in PREFIXES:
        raise ConfigError(
            f"{at}: the LiteLLM provider {prefix!r} is not supported. Supported: "
            f"{', '.join(PREFIXES)}; for any OpenAI-compatible server write "
            "openai/MODEL with its api_base."
        )
    spec = PREFIXES[prefix]
    base = params.get("api_base") or spec.base_url
    if base is not None and not isinstance(base, str):
        raise ConfigError(f"{at}: api_base must be a URL, got {base!r}.")
    if base and spec.suffix and not base.rstrip("/").endswith(spec.suffix):
        base = base.rstrip("/") + spec.suffix
    heron: dict[str, Any] = {"provider": spec.provider, "model": model}
    if base:
        heron["base_url"] = base
    elif prefix == "hosted_vllm":
        raise ConfigError(f"{at}: hosted_vllm/ needs api_base (the server's URL, ending in /v1).")
    key = params.get("api_key")
    keys = key if isinstance(key, list) and key else [key]
    if key is None:
        if spec.key_env:
            heron["api_key_env"] = spec.key_env
    elif all(
        isinstance(k, str) and k.startswith(ENV_PREFIX) and k[len(ENV_PREFIX) :] for k in keys
    ):
        names = [k[len(ENV_PREFIX) :] for k in keys]
        heron["api_key_env"] = names if isinstance(key, list) else names[0]
    else:
        raise ConfigError(
            f"{at}: api_key holds the key itself; Heron reads keys only from the "
            "environment. Write api_key: os.environ/NAME and export NAME (LiteLLM reads "
            "that form too), or remove api_key for a server that needs none."
        )
    return heron


def _bare(model: str, at: str) -> str:
    for start, provider in _BARE:
        if model.startswith(start):
            return provider
    raise ConfigError(
        f"{at}: model {model!r} names no provider. Write it as provider/model, "
        f"e.g. openai/{model} or ollama_chat/{model}."
    )


def ignored_notes(data: Mapping[str, Any], where: str) -> list[str]:
    """A note for each LiteLLM section Heron reads past whole."""
    return [
        f"{where}: {section} is LiteLLM's own setting; Heron ignores it."
        for section in IGNORED_SECTIONS
        if section in data
    ]


@dataclass(frozen=True)
class Routing:
    """What ``router_settings`` / ``litellm_settings`` say: ``fallbacks`` and
    ``context_window_fallbacks`` per alias, ``default_fallbacks`` for an alias with none,
    and the policy numbers (``None``: not set, the settings' value holds)."""

    fallbacks: dict[str, list[str]]
    context_window_fallbacks: dict[str, list[str]]
    default_fallbacks: list[str]
    retries: int | None = None
    timeout: float | None = None
    allowed_fails: int | None = None
    cooldown: float | None = None
    strategy: str | None = None
    #: Seconds an identical request's answer is kept (``None``: no cache), at most how many.
    cache_ttl: float | None = None
    cache_size: int | None = None


def routing(data: Mapping[str, Any], where: str) -> tuple[Routing, list[str]]:
    """``(Routing, notes)`` from the ``ROUTER_SECTIONS`` of ``data``: each routing key
    checked (a wrong shape is a ``ConfigError`` naming the section and key), every other
    key named in a note as ignored."""
    found: dict[str, Any] = {}
    notes: list[str] = []
    for section in ROUTER_SECTIONS:
        values = data.get(section)
        if values is None:
            continue
        if not isinstance(values, Mapping):
            raise ConfigError(f"{where}: {section} must be a mapping, got {values!r:.80}.")
        ignored = sorted(str(k) for k in values if k not in ROUTER_KEYS)
        if ignored:
            notes.append(
                f"{where}: Heron ignores the LiteLLM {section} key(s) {', '.join(ignored)}."
            )
        for key, value in values.items():
            if key in ROUTER_KEYS:
                # router_settings comes first and wins; timeout and request_timeout share one.
                found.setdefault(ROUTER_KEYS[key], (f"{section}.{key}", value))
    lists = {
        name: _fallback_map(*found[name], where) if name in found else {}
        for name in ("fallbacks", "context_window_fallbacks")
    }
    defaults: list[str] = []
    if "default_fallbacks" in found:
        at, value = found["default_fallbacks"]
        defaults = _names(value, f"{where}: {at}")
    numbers: dict[str, Any] = {}
    for name, kind in (("retries", int), ("allowed_fails", int)):
        if name in found:
            numbers[name] = _number(*found[name], where, kind)
    for name in ("timeout", "cooldown"):
        if name in found:
            numbers[name] = float(_number(*found[name], where, float))
    if numbers.get("timeout") == 0:
        raise ConfigError(f"{where}: {found['timeout'][0]} must be more than 0 seconds.")
    if "strategy" in found:
        at, value = found["strategy"]
        if value not in STRATEGIES:
            raise ConfigError(
                f"{where}: {at} is {value!r:.80}; choose one of {', '.join(STRATEGIES)}."
            )
        numbers["strategy"] = value
    numbers.update(_cache(found, where, notes))
    read = Routing(lists["fallbacks"], lists["context_window_fallbacks"], defaults, **numbers)
    return read, notes


def _cache(found: Mapping[str, Any], where: str, notes: list[str]) -> dict[str, Any]:
    """``cache_ttl`` and ``cache_size`` from ``cache`` and ``cache_params``."""
    if "cache" not in found:
        return {}
    at, on = found["cache"]
    if not isinstance(on, bool):
        raise ConfigError(f"{where}: {at} must be true or false, got {on!r:.80}.")
    if not on:
        return {}
    params: Mapping[str, Any] = {}
    if "cache_params" in found:
        at, params = found["cache_params"]
        if not isinstance(params, Mapping):
            raise ConfigError(f"{where}: {at} must be a mapping (type, ttl), got {params!r:.80}.")
    kind = params.get("type", "local")
    if kind != "local":
        notes.append(
            f"{where}: cache_params.type {kind!r}: Heron's cache is exact and in memory "
            "(type local), kept per server process."
        )
    ignored = sorted(str(k) for k in params if k not in CACHE_PARAMS)
    if ignored:
        notes.append(
            f"{where}: Heron ignores the LiteLLM cache_params key(s) {', '.join(ignored)}."
        )
    ttl = params.get("ttl", params.get("default_in_memory_ttl", 600))
    size = params.get("max_size_in_memory", 1000)
    return {
        "cache_ttl": float(_number("cache_params.ttl", ttl, where, float)),
        "cache_size": max(1, int(_number("cache_params.max_size_in_memory", size, where, int))),
    }


def _number(at: str, value: Any, where: str, kind: type) -> int | float:
    types = (int,) if kind is int else (int, float)
    if isinstance(value, bool) or not isinstance(value, types) or value < 0:
        what = "a whole number" if kind is int else "a number of seconds"
        raise ConfigError(f"{where}: {at} must be {what}, 0 or more; got {value!r:.80}.")
    return value


def _names(value: Any, at: str) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{at}: expected a list of model names, got {value!r:.120}.")
    return list(value)


def _fallback_map(at: str, value: Any, where: str) -> dict[str, list[str]]:
    """LiteLLM's ``[{"model": ["fallback", ...]}, ...]`` (one mapping of several models
    is read too) as ``model -> fallbacks``."""
    shape = f'a list like [{{"fast": ["backup"]}}], got {value!r:.120}'
    if isinstance(value, Mapping):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
        raise ConfigError(f"{where}: {at} must be {shape}.")
    out: dict[str, list[str]] = {}
    for item in value:
        for model, names in item.items():
            out.setdefault(str(model), []).extend(_names(names, f"{where}: {at}.{model}"))
    return out
