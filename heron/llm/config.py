"""The routing table: ``models.yml`` aliases -> provider, model, endpoint, key, capabilities.

Read from ``HERON_MODELS_FILE`` or ``$HERON_HOME/models.yml``; with neither there is one
alias, ``local`` (the bundled SmolLM2), which needs no key and no network::

    default: fast            # HERON_MODEL overrides it
    models:
      fast:
        provider: openai     # openai (any OpenAI-compatible server), anthropic, local
        model: gpt-4o-mini
        base_url: https://api.openai.com/v1
        api_key_env: OPENAI_API_KEY
        fallbacks: [claude, local]
        context_window_fallbacks: [claude]   # first when a prompt is over its window
      claude:
        provider: anthropic
        model: claude-sonnet-4-5
        api_key_env: ANTHROPIC_API_KEY
        max_output_tokens: 4096

Capabilities default per provider (``PROVIDER_DEFAULTS``) and can be set per alias:
``tool_calling``, ``max_tools``, ``name_profile`` (openai, anthropic, gemini, strict),
``context_window`` (tokens), ``answers`` (generative, extractive).

The file may instead (or as well) be a LiteLLM proxy config: its ``model_list`` entries
become aliases (``heron.llm.litellm_format``), and its ``router_settings`` /
``litellm_settings`` give fallbacks, context-window fallbacks, retries, the timeout and the
cooldown (``RoutingTable.policy``; in either kind of file). Unknown keys anywhere are an
error naming the key, the closest allowed one and all of them; what is tolerated but
ignored (LiteLLM's ``general_settings``, a router's ``routing_strategy``...) is listed in
``RoutingTable.notes`` and logged once.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import yaml

from heron.core.names import PROFILES
from heron.errors import ConfigError, HeronError
from heron.keys import check_duration
from heron.llm.litellm_format import (
    IGNORED_SECTIONS,
    MONEY_KEYS,
    ROUTER_SECTIONS,
    STRATEGIES,
    Routing,
    convert,
    ignored_notes,
    routing,
    unknown_keys,
)
from heron.llm.prices import FREE, Price, default_price
from heron.settings import Settings

log = logging.getLogger("heron.llm")

LOCAL_ALIAS = "local"
#: The GGUF the local provider runs when an alias names no file.
BUNDLED_MODEL = "SmolLM2-135M-Instruct"


@dataclass(frozen=True)
class Capabilities:
    """What a model accepts. ``max_tools`` ``None``: no documented limit. ``answers``:
    how grounded answers are made by default: ``generative`` (the model writes them) or
    ``extractive`` (composed from the cited passages, for models too weak to write one)."""

    tool_calling: bool = True
    max_tools: int | None = 128
    name_profile: str = "openai"
    context_window: int = 128_000
    answers: Literal["generative", "extractive"] = "generative"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


#: Per provider: its capabilities when models.yml says nothing, its usual endpoint and
#: the variable holding that endpoint's key (another base_url names its own, if any).
PROVIDER_DEFAULTS: dict[str, tuple[Capabilities, str | None, str | None]] = {
    "openai": (
        Capabilities(True, 128, "openai", 128_000),
        "https://api.openai.com/v1",
        "OPENAI_API_KEY",
    ),
    "anthropic": (
        Capabilities(True, None, "anthropic", 200_000),
        "https://api.anthropic.com",
        "ANTHROPIC_API_KEY",
    ),
    # SmolLM2 was trained on 8k tokens; a few tools' schemas already fill a good part.
    # It loops when it writes a grounded answer itself: its answers are extractive.
    "local": (Capabilities(True, 16, "strict", 8192, "extractive"), None, None),
    # espeak-ng on this machine: a speech model only (mode: audio_speech).
    "espeak": (Capabilities(False, 0, "strict", 8192, "extractive"), None, None),
}
#: What an alias serves: chat (the default), text to speech, speech to text (LiteLLM's
#: ``model_info.mode`` values).
MODES = ("chat", "audio_speech", "audio_transcription")
_SPEC_KEYS = {
    "provider",
    "model",
    "base_url",
    "api_key_env",
    "fallbacks",
    "context_window_fallbacks",
    "max_output_tokens",
    "temperature",
    "rpm",
    "tpm",
    "weight",
    "mode",
    "voice",
    *MONEY_KEYS,
}
#: The keys of a pool (an alias with ``deployments``).
_POOL_KEYS = {"deployments", "routing_strategy", "fallbacks", "context_window_fallbacks"}
_CAP_KEYS = set(Capabilities.__dataclass_fields__)
_TOP_KEYS = {"default", "models", "model_list", *IGNORED_SECTIONS, *ROUTER_SECTIONS}


@dataclass(frozen=True)
class ModelSpec:
    """One alias of the routing table."""

    alias: str
    provider: str
    model: str
    base_url: str | None = None
    api_key_env: str | None = None
    capabilities: Capabilities = field(default_factory=Capabilities)
    fallbacks: tuple[str, ...] = ()
    #: Tried first, before ``fallbacks``, when a prompt is over this model's window.
    context_fallbacks: tuple[str, ...] = ()
    max_output_tokens: int | None = None
    #: The sampling temperature when a request sets none (LiteLLM's litellm_params).
    temperature: float | None = None
    #: What its tokens cost (``heron.llm.prices``): the file's, else the shipped price.
    price: Price = FREE
    #: Dollars every caller together may spend on it per ``budget_duration`` (LiteLLM's
    #: deployment budget); past it the alias is skipped like a cooling one.
    max_budget: float | None = None
    budget_duration: str | None = None
    #: A pool's deployments (other aliases; its provider is its first one's), tried in the order
    #: of ``routing_strategy`` (``heron.llm.routing``).
    deployments: tuple[str, ...] = ()
    routing_strategy: str | None = None
    #: A deployment's requests and tokens a minute, at most, and its share of a shuffle.
    rpm: int | None = None
    tpm: int | None = None
    weight: float | None = None
    #: Every variable holding a key, ``api_key_env`` first: rotated on 401 and 429.
    key_envs: tuple[str, ...] = ()
    #: ``chat``, or a speech model (``audio_speech``, ``audio_transcription``;
    #: ``heron.llm.speech``), with its default ``voice``.
    mode: str = "chat"
    voice: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "alias": self.alias,
            "provider": self.provider,
            "model": self.model,
            "base_url": self.base_url,
            "api_key_env": self.api_key_env,
            "fallbacks": list(self.fallbacks),
            "context_window_fallbacks": list(self.context_fallbacks),
            "max_output_tokens": self.max_output_tokens,
            "temperature": self.temperature,
            "input_cost_per_token": self.price.input_cost_per_token,
            "output_cost_per_token": self.price.output_cost_per_token,
            "max_budget": self.max_budget,
            "budget_duration": self.budget_duration,
            "deployments": list(self.deployments),
            "routing_strategy": self.routing_strategy,
            "rpm": self.rpm,
            "tpm": self.tpm,
            "weight": self.weight,
            "api_key_envs": list(self.key_envs),
            "mode": self.mode,
            "voice": self.voice,
            **self.capabilities.to_dict(),
        }


LOCAL_SPEC = ModelSpec(
    LOCAL_ALIAS, "local", BUNDLED_MODEL, capabilities=PROVIDER_DEFAULTS["local"][0]
)


#: The model name that means "the table's default" unless an alias is called so.
DEFAULT_NAME = "default"


@dataclass(frozen=True)
class Policy:
    """How the broker treats the table's models, where the file says (LiteLLM's
    ``router_settings``); ``None``: the settings' value (``llm_retries``, ``llm_timeout``,
    ``llm_allowed_fails``, ``llm_cooldown``)."""

    retries: int | None = None
    timeout: float | None = None
    allowed_fails: int | None = None
    cooldown: float | None = None
    #: How a pool's deployments are tried when the pool says not (``simple-shuffle``).
    strategy: str | None = None
    #: The response cache (``heron.llm.cache``): seconds an answer is kept, how many.
    cache_ttl: float | None = None
    cache_size: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class RoutingTable:
    """Aliases in file order, the default alias, where they came from, and ``notes``:
    what the file holds that Heron reads past (LiteLLM's own settings)."""

    models: dict[str, ModelSpec]
    default: str
    source: Path | None = None
    notes: tuple[str, ...] = ()
    policy: Policy = field(default_factory=Policy)

    def spec(self, alias: str | None = None) -> ModelSpec:
        """The alias's spec; ``None``, or ``"default"`` when no alias is called that
        (what OpenAI clients send when a person picked no model), is the default's."""
        name = alias or self.default
        if name == DEFAULT_NAME and name not in self.models:
            name = self.default
        try:
            return self.models[name]
        except KeyError:
            raise ConfigError(
                f"Unknown model {name!r}. Choose from: {', '.join(self.models)} "
                f"({self.source or 'built-in table'}), or add it to models.yml."
            ) from None

    def chain(self, alias: str | None = None) -> list[ModelSpec]:
        """``alias`` then its fallbacks, in order, each once."""
        first = self.spec(alias)
        names = dict.fromkeys([first.alias, *first.fallbacks])
        return [self.spec(n) for n in names]

    def strategy(self, pool: ModelSpec) -> str:
        """How ``pool``'s deployments are tried: its own, the file's, else shuffled."""
        return pool.routing_strategy or self.policy.strategy or STRATEGIES[0]


def models_file(settings: Settings) -> Path:
    return settings.llm.models_file or settings.home / "models.yml"


def load_table(settings: Settings) -> RoutingTable:
    """The routing table the settings point to (``local`` alone when there is no file)."""
    path = models_file(settings)
    if not path.exists():
        if settings.llm.models_file:
            raise ConfigError(
                f"HERON_MODELS_FILE names {path}, which does not exist. Create it or unset it."
            )
        table = RoutingTable({LOCAL_ALIAS: LOCAL_SPEC}, LOCAL_ALIAS)
    else:
        table = parse_table(_read(path), path)
        for note in table.notes:
            if note not in _noted:  # once per process, not at every broker a server opens
                _noted.add(note)
                log.warning("%s", note)
    default = settings.llm.model or table.default
    table = replace(table, default=default)
    table.spec(default)  # an unknown HERON_MODEL fails now, not at the first call
    return table


_noted: set[str] = set()


def _read(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[: exc.start].count(b"\n") + 1
        raise ConfigError(
            f"{path}, line {line}: not UTF-8 text ({exc.reason} at byte {exc.start}). "
            "Save the file as UTF-8."
        ) from None
    except OSError as exc:
        raise ConfigError(
            f"Cannot read {path}: {exc.strerror}. Fix its permissions, or point "
            "HERON_MODELS_FILE at another file."
        ) from None


def parse_table(text: str, path: Path | None = None) -> RoutingTable:
    """Parse the YAML text of a models.yml; errors name ``path`` and the line."""
    where = str(path or "models.yml")
    root, data = _load(text, where)
    read, notes = routing(data, where)
    notes += ignored_notes(data, where)
    entries, more = _entries(data, root, where)
    notes += more
    models: dict[str, ModelSpec] = {}
    for alias, entry, at in entries:
        models[alias] = _spec(alias, entry, at)
    models.setdefault(LOCAL_ALIAS, LOCAL_SPEC)
    _join_pools(models, where)
    _add_fallbacks(models, read, where)
    chat = [alias for alias, spec in models.items() if spec.mode == "chat"]
    default = str(data.get("default") or chat[0])
    if default not in models:
        raise ConfigError(
            f"{where}: default {default!r} is not defined. Choose from: {', '.join(models)}."
        )
    policy = Policy(
        read.retries,
        read.timeout,
        read.allowed_fails,
        read.cooldown,
        read.strategy,
        read.cache_ttl,
        read.cache_size,
    )
    return RoutingTable(models, default, path, tuple(notes), policy)


def _load(text: str, where: str) -> tuple[yaml.Node | None, Mapping[str, Any]]:
    """The file's node tree (for lines) and its data, a mapping of known top-level keys."""
    try:
        root = yaml.compose(text)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        # The context mark is where the broken construct starts, usually the line to fix.
        mark = getattr(exc, "context_mark", None) or getattr(exc, "problem_mark", None)
        line = f", line {mark.line + 1}" if mark else ""
        detail = str(exc).replace('"<unicode string>"', where)
        raise ConfigError(f"{where}{line}: not valid YAML ({detail}). Fix the file.") from None
    if data is None:
        data = {}
    if not isinstance(data, Mapping) or not isinstance(data.get("models") or {}, Mapping):
        raise ConfigError(
            f"{where}: expected a mapping with 'models:' (alias -> settings) or LiteLLM's "
            "'model_list:'."
        )
    unknown_keys(data, _TOP_KEYS, where, "top-level key(s)")
    if not isinstance(data.get("default") or "", str):
        raise ConfigError(f"{where}: default must be the name of a model, got {data['default']!r}.")
    return root, data


def _entries(
    data: Mapping[str, Any], root: yaml.Node | None, where: str
) -> tuple[list[tuple[str, Any, str]], list[str]]:
    """Each model of ``models:`` then of LiteLLM's ``model_list:`` as (alias, entry,
    where it is), and the notes of the conversion."""
    lines = _alias_lines(root)
    entries: list[tuple[str, Any, str]] = [
        (str(alias), entry, f"{where}, line {lines.get(str(alias), 0)}, model {alias!r}")
        for alias, entry in (data.get("models") or {}).items()
    ]
    if "model_list" not in data:
        return entries, []
    converted, notes = convert(data, where, _list_lines(root))
    for alias, entry in converted.items():
        if any(alias == a for a, _, _ in entries):
            raise ConfigError(
                f"{where}: {alias!r} is both in models: and in model_list:. Rename one."
            )
        entries.append((alias, entry, f"{where}, model_list model {alias!r}"))
    return entries, notes


def _add_fallbacks(models: dict[str, ModelSpec], read: Routing, where: str) -> None:
    """Give each model the fallbacks of ``router_settings`` after its own (the default
    fallbacks where it has none), in place; every name checked."""
    for model in [*read.fallbacks, *read.context_window_fallbacks]:
        if model not in models:
            raise ConfigError(
                f"{where}: router_settings names fallbacks for {model!r}, which is not "
                f"defined. Choose from: {', '.join(models)}."
            )
    for alias, spec in models.items():
        fallbacks = [*spec.fallbacks, *read.fallbacks.get(alias, [])]
        if not fallbacks:
            fallbacks = [f for f in read.default_fallbacks if f != alias]
        context = [*spec.context_fallbacks, *read.context_window_fallbacks.get(alias, [])]
        models[alias] = replace(
            spec,
            fallbacks=tuple(dict.fromkeys(fallbacks)),
            context_fallbacks=tuple(dict.fromkeys(context)),
        )
    for spec in models.values():
        for name in (*spec.fallbacks, *spec.context_fallbacks):
            if name not in models:
                raise ConfigError(
                    f"{where}: model {spec.alias!r} falls back to {name!r}, which is not "
                    f"defined. Choose from: {', '.join(models)}."
                )


def _alias_lines(root: yaml.Node | None) -> dict[str, int]:
    """Alias -> 1-based line in the file, for error messages."""
    if not isinstance(root, yaml.MappingNode):
        return {}
    for key, value in root.value:
        if key.value == "models" and isinstance(value, yaml.MappingNode):
            return {k.value: k.start_mark.line + 1 for k, _ in value.value}
    return {}


def _list_lines(root: yaml.Node | None) -> list[int]:
    """Each ``model_list`` entry's 1-based line, in order."""
    if not isinstance(root, yaml.MappingNode):
        return []
    for key, value in root.value:
        if key.value == "model_list" and isinstance(value, yaml.SequenceNode):
            return [item.start_mark.line + 1 for item in value.value]
    return []


def _join_pools(models: dict[str, ModelSpec], where: str) -> None:
    """Check each pool's deployments and give it the first one's capabilities (what a
    caller of the pool may send), provider and model, in place."""
    for alias, spec in list(models.items()):
        if not spec.deployments:
            continue
        for name in spec.deployments:
            member = models.get(name)
            if member is None or member.deployments:
                raise ConfigError(
                    f"{where}: pool {alias!r} lists deployment {name!r}, which is "
                    f"{'a pool itself' if member else 'not defined'}. A deployment is an "
                    f"alias with a provider; choose from: "
                    f"{', '.join(a for a, s in models.items() if not s.deployments)}."
                )
        first = models[spec.deployments[0]]
        # Its first deployment's provider and model too, for what callers tell by them
        # (a local model's penalties, a provider without JSON mode).
        models[alias] = replace(
            spec, capabilities=first.capabilities, model=first.model, provider=first.provider
        )


def _pool(alias: str, entry: Mapping[str, Any], at: str) -> ModelSpec:
    unknown_keys(entry, _POOL_KEYS, f"{at} (a pool: it has deployments)")
    names = entry.get("deployments")
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise ConfigError(f"{at}: deployments must be a list of aliases, got {names!r}.")
    strategy = entry.get("routing_strategy")
    if strategy is not None and strategy not in STRATEGIES:
        raise ConfigError(
            f"{at}: routing_strategy {strategy!r} is not one of {', '.join(STRATEGIES)}."
        )
    lists = {}
    for name in ("fallbacks", "context_window_fallbacks"):
        found = entry.get(name) or []
        if not isinstance(found, list) or not all(isinstance(f, str) for f in found):
            raise ConfigError(f"{at}: {name} must be a list of model names, got {found!r}.")
        lists[name] = tuple(found)
    return ModelSpec(
        alias=alias,
        provider="pool",
        model=alias,
        deployments=tuple(dict.fromkeys(names)),
        routing_strategy=strategy,
        fallbacks=lists["fallbacks"],
        context_fallbacks=lists["context_window_fallbacks"],
    )


def _key_envs(entry: Mapping[str, Any], at: str) -> tuple[str, ...]:
    """``api_key_env`` as a list of variable names (one name, or a list of them)."""
    names = entry.get("api_key_env")
    if names is None:
        return ()
    names = [names] if isinstance(names, str) else names
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
        raise ConfigError(
            f"{at}: api_key_env must name a variable, or a list of them (rotated on 401 "
            f"and 429), got {entry['api_key_env']!r}."
        )
    return tuple(dict.fromkeys(names))


def _spec(alias: str, entry: Any, at: str) -> ModelSpec:
    """One alias of models.yml as a ``ModelSpec`` (a pool's as ``_pool``), each key
    checked in turn; errors name ``at``."""
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{at}: expected a mapping with at least 'provider:'.")
    if "deployments" in entry:
        return _pool(alias, entry, at)
    unknown_keys(entry, _SPEC_KEYS | _CAP_KEYS, at)
    key_envs = _key_envs(entry, at)
    entry = {**entry, "api_key_env": key_envs[0] if key_envs else None}
    provider = _provider_name(entry, at)
    caps, default_url, default_env = PROVIDER_DEFAULTS[provider]
    base_url = entry.get("base_url") or default_url
    key_env = entry.get("api_key_env") or (default_env if base_url == default_url else None)
    overrides = {k: entry[k] for k in _CAP_KEYS & set(entry)}
    profile = overrides.get("name_profile", caps.name_profile)
    if profile not in PROFILES:
        raise ConfigError(
            f"{at}: unknown name_profile {profile!r}. Choose from: {', '.join(PROFILES)}."
        )
    lists = _fallback_lists(entry, at)
    model = entry.get("model") or {"local": BUNDLED_MODEL, "espeak": "espeak-ng"}.get(provider)
    if not model:
        raise ConfigError(f"{at}: 'model:' is required (the provider's model name).")
    _check_overrides(overrides, at)
    temperature = _check_sizes(entry, at)
    money = _money(entry, provider, str(model), at)
    weight = _check_rates(entry, at)
    envs = key_envs if entry.get("api_key_env") else ((key_env,) if key_env else ())
    mode = _mode(entry, provider, at)
    voice = entry.get("voice")
    if voice is not None and not isinstance(voice, str):
        raise ConfigError(f"{at}: voice must be a voice's name, got {voice!r}.")
    return ModelSpec(
        alias=alias,
        provider=provider,
        model=str(model),
        base_url=base_url,
        api_key_env=key_env,
        capabilities=replace(caps, **overrides),
        fallbacks=lists["fallbacks"],
        context_fallbacks=lists["context_window_fallbacks"],
        max_output_tokens=entry.get("max_output_tokens"),
        temperature=None if temperature is None else float(temperature),
        rpm=entry.get("rpm"),
        tpm=entry.get("tpm"),
        weight=None if weight is None else float(weight),
        key_envs=envs,
        mode=mode,
        voice=voice,
        **money,
    )


def _provider_name(entry: Mapping[str, Any], at: str) -> str:
    """The entry's provider, one of ``PROVIDER_DEFAULTS``, once its string keys are
    strings."""
    for name in ("provider", "model", "base_url", "api_key_env"):
        if entry.get(name) is not None and not isinstance(entry[name], str):
            raise ConfigError(f"{at}: {name} must be a string, got {entry[name]!r}.")
    provider = entry.get("provider")
    if provider not in PROVIDER_DEFAULTS:
        raise ConfigError(
            f"{at}: unknown provider {provider!r}. Choose from: {', '.join(PROVIDER_DEFAULTS)}."
        )
    return provider


def _fallback_lists(entry: Mapping[str, Any], at: str) -> dict[str, tuple[str, ...]]:
    """``fallbacks`` and ``context_window_fallbacks``, each a list of names (one name
    alone too)."""
    lists = {}
    for name in ("fallbacks", "context_window_fallbacks"):
        names = entry.get(name) or []
        if isinstance(names, str):
            names = [names]
        if not isinstance(names, list) or not all(isinstance(f, str) for f in names):
            raise ConfigError(f"{at}: {name} must be a list of model names, got {names!r}.")
        lists[name] = tuple(names)
    return lists


def _check_overrides(overrides: Mapping[str, Any], at: str) -> None:
    """The capability keys' types: ``tool_calling``, ``name_profile``, ``answers``."""
    for name, kind in (("tool_calling", bool), ("name_profile", str)):
        if name in overrides and not isinstance(overrides[name], kind):
            raise ConfigError(f"{at}: {name} must be a {kind.__name__}, got {overrides[name]!r}.")
    if overrides.get("answers", "generative") not in ("generative", "extractive"):
        raise ConfigError(
            f"{at}: answers must be generative or extractive, got {overrides['answers']!r}."
        )


def _check_sizes(entry: Mapping[str, Any], at: str) -> Any:
    """Check the token counts (``max_tools``, ``context_window``, ``max_output_tokens``)
    and return the ``temperature``, checked: None, or a number from 0 to 2."""
    for name in ("max_tools", "context_window", "max_output_tokens"):
        value = entry.get(name, 1)
        nullable = name != "context_window"  # max_tools null: no limit
        if not (value is None and nullable) and (
            not isinstance(value, int) or isinstance(value, bool) or value <= 0
        ):
            raise ConfigError(f"{at}: {name} must be a positive integer, got {value!r}.")
    temperature = entry.get("temperature")
    if temperature is not None and (
        isinstance(temperature, bool)
        or not isinstance(temperature, int | float)
        or not 0 <= temperature <= 2
    ):
        raise ConfigError(f"{at}: temperature must be a number from 0 to 2, got {temperature!r}.")
    return temperature


def _check_rates(entry: Mapping[str, Any], at: str) -> Any:
    """Check ``rpm`` and ``tpm`` (whole numbers, 1 or more) and return the ``weight``,
    checked: None, or a number above 0."""
    for name in ("rpm", "tpm"):
        value = entry.get(name)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 1
        ):
            raise ConfigError(f"{at}: {name} must be a whole number, 1 or more, got {value!r}.")
    weight = entry.get("weight")
    if weight is not None and (
        isinstance(weight, bool) or not isinstance(weight, int | float) or not weight > 0
    ):
        raise ConfigError(f"{at}: weight must be a number above 0, got {weight!r}.")
    return weight


def _mode(entry: Mapping[str, Any], provider: str, at: str) -> str:
    """The entry's ``mode`` (``chat`` unless it says), one its provider can serve."""
    mode = entry.get("mode", "chat")
    if mode not in MODES:
        raise ConfigError(f"{at}: mode must be one of {', '.join(MODES)}, got {mode!r}.")
    if (provider == "espeak" and mode != "audio_speech") or (
        mode == "audio_transcription" and provider != "openai"
    ):
        raise ConfigError(
            f"{at}: provider {provider} cannot serve mode {mode}: espeak speaks "
            "(audio_speech) only, and transcription needs provider: openai."
        )
    if mode != "chat" and provider == "local":
        raise ConfigError(f"{at}: the local model is a chat model; speech needs espeak or openai.")
    return mode


def _money(entry: Mapping[str, Any], provider: str, model: str, at: str) -> dict[str, Any]:
    """The alias's price (the file's, else the shipped one) and budget, checked."""
    for name in ("input_cost_per_token", "output_cost_per_token", "max_budget"):
        value = entry.get(name)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0
        ):
            raise ConfigError(f"{at}: {name} must be dollars, 0 or more, got {value!r}.")
    duration = entry.get("budget_duration")
    try:
        check_duration(None if duration is None else str(duration))
    except HeronError as exc:
        raise ConfigError(f"{at}: {exc}") from None
    price = default_price(provider, model)
    if "input_cost_per_token" in entry or "output_cost_per_token" in entry:
        price = Price(
            float(entry.get("input_cost_per_token") or 0.0),
            float(entry.get("output_cost_per_token") or 0.0),
        )
    budget = entry.get("max_budget")
    return {
        "price": price,
        "max_budget": None if budget is None else float(budget),
        "budget_duration": None if duration is None else str(duration),
    }
