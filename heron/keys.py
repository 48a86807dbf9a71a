"""Named API keys: each with scopes, an optional context and limits, stored hashed.

A key is made once (``KeyStore.create``), and its token is shown that once: the store
keeps only the SHA-256 of it (the token is 256 random bits, so a fast hash is as good as
a slow one, and a leaked table opens nothing) and the first characters, to tell keys
apart in a list. A request's token is found by its hash; the row's hash is compared
again in constant time. A revoked key stays listed (and its usage kept), and opens
nothing.

>>> with open_keys(settings) as keys:                            # doctest: +SKIP
...     key, token = keys.create("ci", {"read", "jobs"}, rpm=60)
...     keys.find(token).name
'ci'

Scopes (``SCOPES``): ``read`` (searches, libraries, skills, ``/v1/models``), ``chat``
(``agent.chat``, ``/v1/chat/completions``, the page's chat), ``tools`` (routing and
calling tools), ``jobs`` (``jobs.*``) and ``admin`` (everything, the others included).

Usage (requests, tokens in and out) is kept per key and calendar month (UTC) in
``key_usage``, which ``heron keys usage`` reads and the monthly budget is checked
against. A key may also name the models it may call (``models``: aliases and
wildcards) and have a budget in money (``max_budget`` dollars per ``budget_duration``),
enforced by the broker (``heron.llm.budgets``); what every payer spent, by model and
hour, is in ``spend``. The tables live in ``keys.db`` beside ``heron.db``, or in PostgreSQL
(``heron_keys``, ``heron_key_usage``) when ``HERON_DATABASE_URL`` names one, so servers
sharing it share their keys.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import re
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from heron.db import Database, DatabaseStore, Schema, open_database
from heron.errors import HeronError, InputError, NotFound
from heron.settings import Settings

#: Every scope, narrowest first; ``admin`` holds them all.
SCOPES = ("read", "chat", "tools", "jobs", "admin")
ADMIN = "admin"
#: A key's token starts so: a reader of a log or a config file knows what it found, and
#: the server tells a named key from ``HERON_API_TOKEN`` without a lookup.
PREFIX = "hk_"
#: Characters of the token kept to tell keys apart (``hk_`` and 8 more): 48 of its 256
#: bits, far too few to guess the rest from.
SHOWN = len(PREFIX) + 8
_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
_MONTH = re.compile(r"^[0-9]{4}-(0[1-9]|1[0-2])$")


class Forbidden(HeronError):
    """The caller's key lacks the scope a request needs."""

    http_status = 403
    rpc_code = mcp_code = -32010

    def __init__(self, key: str, scope: str, *, message: str | None = None) -> None:
        super().__init__(
            message
            or f"forbidden: needs scope {scope}. The key {key!r} has no {scope!r} scope; "
            f"create one that has it (heron keys create NAME --scope {scope})."
        )
        self.scope = scope


class OverLimit(HeronError):
    """A key over one of its limits, or without room in one for what a request may spend
    (answered with ``Retry-After``). ``limit`` names it ("1000 tokens per 60
    s"), ``retry_after`` is the seconds until it resets. For a reservation refused:
    ``wanted``, the tokens the request would reserve, ``left`` and ``total``, those the
    limit has left and has in all."""

    http_status = 429
    rpc_code = mcp_code = -32029
    openai_type: str = "rate_limit_error"

    def __init__(
        self,
        key: str,
        limit: str,
        retry_after: int,
        *,
        wanted: int | None = None,
        left: int = 0,
        total: int = 0,
        message: str | None = None,
    ) -> None:
        wait = f"retry in {retry_after} s"
        if message is None and wanted is None:
            message = f"rate limited: the key {key!r} is over its {limit}; {wait}."
        elif message is None and wanted is not None and wanted > total:
            message = (
                f"rate limited: this request may spend up to {wanted:,} tokens, more than "
                f"the key {key!r} has in all ({limit}), so retrying will not help: ask "
                f"for fewer tokens (max_tokens) or send less; a smaller request may {wait}."
            )
        elif message is None:
            message = (
                f"rate limited: this request may spend up to {wanted:,} tokens and the key "
                f"{key!r} has {max(0, left):,} left of its {limit}, the rest spent or held "
                f"by its requests under way; {wait}, or ask for fewer tokens (max_tokens)."
            )
        super().__init__(message)
        self.limit = limit
        self.retry_after = retry_after
        self.wanted = wanted


@dataclass(frozen=True)
class Key:
    """A key as the server and the CLI see it: never its token.

    ``rpm``/``tpm``: requests and tokens (in and out) per minute; ``monthly_tokens``: per
    calendar month (UTC); ``None``: no limit. ``context``: the context the key is bound
    to (``None``: the request's own, or ``default``).
    """

    name: str
    scopes: frozenset[str]
    context: str | None = None
    rpm: int | None = None
    tpm: int | None = None
    monthly_tokens: int | None = None
    shown: str = ""
    created_at: float = field(default_factory=time.time)
    revoked_at: float | None = None
    #: The models it may call: aliases and wildcards (``gpt-*``, ``openai/*``); ``None``:
    #: any.
    models: tuple[str, ...] | None = None
    #: Dollars it may spend per ``budget_duration`` (``30d``, ``1mo``...; ``None``: in all).
    max_budget: float | None = None
    budget_duration: str | None = None
    #: Its requests are never answered from the response cache nor kept in it.
    no_cache: bool = False

    def allows(self, scope: str) -> bool:
        return ADMIN in self.scopes or scope in self.scopes

    def require(self, scope: str) -> None:
        """Raise ``Forbidden`` unless the key holds ``scope`` (or ``admin``)."""
        if not self.allows(scope):
            raise Forbidden(self.name, scope)

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "scopes": [s for s in SCOPES if s in self.scopes],
            "context": self.context,
            "rpm": self.rpm,
            "tpm": self.tpm,
            "monthly_tokens": self.monthly_tokens,
            "models": None if self.models is None else list(self.models),
            "max_budget": self.max_budget,
            "budget_duration": self.budget_duration,
            "no_cache": self.no_cache,
            "token_starts": self.shown,
            "created_at": _iso(self.created_at),
            "revoked_at": _iso(self.revoked_at),
        }


@dataclass(frozen=True)
class KeyUsage:
    """One key's use in one month (``YYYY-MM``, UTC)."""

    name: str
    month: str
    requests: int = 0
    tokens_in: int = 0
    tokens_out: int = 0

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "month": self.month,
            "requests": self.requests,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
        }


def _iso(stamp: float | None) -> str | None:
    return None if stamp is None else datetime.fromtimestamp(stamp, UTC).isoformat()


def month_of(stamp: float | None = None) -> str:
    """The calendar month (UTC) of ``stamp`` (default: now): ``2026-03``."""
    return datetime.fromtimestamp(time.time() if stamp is None else stamp, UTC).strftime("%Y-%m")


def seconds_to_next_month(stamp: float | None = None) -> int:
    """Whole seconds from ``stamp`` (default: now) to the next month's first second (UTC),
    when a monthly budget starts again."""
    now = datetime.fromtimestamp(time.time() if stamp is None else stamp, UTC)
    year, month = (now.year + 1, 1) if now.month == 12 else (now.year, now.month + 1)
    start = datetime(year, month, 1, tzinfo=UTC)
    return max(1, int((start - now).total_seconds()) + 1)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


def check_name(name: str) -> str:
    if not _NAME.match(name):
        raise InputError(
            f"Invalid key name {name!r}: use 1 to 64 lowercase letters, digits, '.', '_' "
            "or '-', starting with a letter or digit (e.g. ci-bot)."
        )
    return name


def check_scopes(scopes: Iterable[str]) -> frozenset[str]:
    chosen = frozenset(scopes)
    unknown = sorted(chosen - set(SCOPES))
    if unknown:
        raise InputError(
            f"Unknown scope {', '.join(map(repr, unknown))}. Choose from: {', '.join(SCOPES)}."
        )
    if not chosen:
        raise InputError(f"A key needs at least one scope: --scope {' | '.join(SCOPES)}.")
    return chosen


def _limit(name: str, value: int | None) -> int | None:
    if value is not None and value < 1:
        raise InputError(f"{name} must be at least 1 (leave it out for no limit); got {value}.")
    return value


#: ``keys.db`` on SQLite; ``heron_keys`` and ``heron_key_usage`` on PostgreSQL.
KEYS = Schema(
    name="keys",
    noun="key",
    what="the key store",
    migrations=(
        """
CREATE TABLE {new}{p}keys (
    name text PRIMARY KEY,
    hash text NOT NULL UNIQUE,
    shown text NOT NULL,
    scopes text NOT NULL,
    context text,
    rpm {bigint},
    tpm {bigint},
    monthly_tokens {bigint},
    created_at {real} NOT NULL,
    revoked_at {real}
);
CREATE TABLE {new}{p}key_usage (
    name text NOT NULL,
    month text NOT NULL,
    requests {bigint} NOT NULL DEFAULT 0,
    tokens_in {bigint} NOT NULL DEFAULT 0,
    tokens_out {bigint} NOT NULL DEFAULT 0,
    PRIMARY KEY (name, month)
){keyed};
""",
        # Issue 50: the models a key may call, its budget in money, and what every payer
        # (a key, a context, a model) spent per model and hour, in dollars.
        """
ALTER TABLE {p}keys ADD COLUMN models text;
ALTER TABLE {p}keys ADD COLUMN max_budget {real};
ALTER TABLE {p}keys ADD COLUMN budget_duration text;
CREATE TABLE {new}{p}spend (
    payer text NOT NULL,
    hour text NOT NULL,
    model text NOT NULL,
    cost {real} NOT NULL DEFAULT 0,
    PRIMARY KEY (payer, hour, model)
){keyed};
""",
        # A key whose requests bypass the response cache (heron.llm.cache).
        "ALTER TABLE {p}keys ADD COLUMN no_cache {boolean};",
    ),
    rebuild="create the keys again (heron keys create); every old token stops working",
    advice="then retry",
    reopen="heron.keys.open_keys()",
)

_COLUMNS = (
    "name, shown, scopes, context, rpm, tpm, monthly_tokens, created_at, revoked_at, models, "
    "max_budget, budget_duration, no_cache"
)
_ADD_USAGE = (
    "INSERT INTO {p}key_usage (name, month, requests, tokens_in, tokens_out) "
    "VALUES (?, ?, ?, ?, ?) ON CONFLICT (name, month) DO UPDATE SET "
    "requests = {p}key_usage.requests + excluded.requests, "
    "tokens_in = {p}key_usage.tokens_in + excluded.tokens_in, "
    "tokens_out = {p}key_usage.tokens_out + excluded.tokens_out"
)


def _key(row: Any) -> Key:
    return Key(
        name=row["name"],
        scopes=frozenset(row["scopes"].split()),
        context=row["context"],
        rpm=row["rpm"],
        tpm=row["tpm"],
        monthly_tokens=row["monthly_tokens"],
        shown=row["shown"],
        created_at=row["created_at"],
        revoked_at=row["revoked_at"],
        models=None if row["models"] is None else tuple(row["models"].split()),
        max_budget=row["max_budget"],
        budget_duration=row["budget_duration"],
        no_cache=bool(row["no_cache"]),
    )


def _usage(row: Any) -> KeyUsage:
    return KeyUsage(row["name"], row["month"], row["requests"], row["tokens_in"], row["tokens_out"])


class KeyStore(DatabaseStore):
    """The keys and their usage on a database opened with ``KEYS``; thread-safe."""

    def __init__(self, database: Database) -> None:
        super().__init__(database)

    def _sql(self, text: str) -> str:
        return self.dialect.sql(text, _COLUMNS)

    def create(
        self,
        name: str,
        scopes: Iterable[str],
        *,
        context: str | None = None,
        rpm: int | None = None,
        tpm: int | None = None,
        monthly_tokens: int | None = None,
        models: Iterable[str] | None = None,
        max_budget: float | None = None,
        budget_duration: str | None = None,
        no_cache: bool = False,
    ) -> tuple[Key, str]:
        """A new key and its token, which nothing keeps: show it once. Raises
        ``InputError`` for a bad name, scope, limit, model pattern, budget or duration,
        or a name already taken."""
        key = Key(
            name=check_name(name),
            scopes=check_scopes(scopes),
            context=context or None,
            rpm=_limit("--rpm", rpm),
            tpm=_limit("--tpm", tpm),
            monthly_tokens=_limit("--monthly-tokens", monthly_tokens),
            models=None if models is None else check_models(models),
            max_budget=check_budget(max_budget),
            budget_duration=check_duration(budget_duration),
            no_cache=no_cache,
        )
        token = PREFIX + secrets.token_urlsafe(32)
        key = dataclasses.replace(key, shown=token[:SHOWN])
        with self._tx(write=True) as db:
            taken = db.execute(self._sql("SELECT 1 FROM {p}keys WHERE name = ?"), (name,))
            if taken.fetchone() is not None:
                raise InputError(
                    f"A key named {name!r} exists already (revoked ones keep their name, so "
                    "their usage stays theirs); choose another name."
                )
            db.execute(
                self._sql(
                    "INSERT INTO {p}keys (hash, name, shown, scopes, context, rpm, tpm, "
                    "monthly_tokens, created_at, revoked_at, models, max_budget, "
                    "budget_duration, no_cache) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, ?)"
                ),
                (
                    hash_token(token),
                    key.name,
                    key.shown,
                    " ".join(s for s in SCOPES if s in key.scopes),
                    key.context,
                    key.rpm,
                    key.tpm,
                    key.monthly_tokens,
                    key.created_at,
                    None if key.models is None else " ".join(key.models),
                    key.max_budget,
                    key.budget_duration,
                    key.no_cache,
                ),
            )
        return key, token

    def find(self, token: str) -> Key | None:
        """The key whose token is ``token`` (revoked ones too: the caller says so), or
        ``None``."""
        digest = hash_token(token)
        with self._tx() as db:
            row = db.execute(
                self._sql("SELECT hash, {columns} FROM {p}keys WHERE hash = ?"), (digest,)
            ).fetchone()
        if row is None or not hmac.compare_digest(row["hash"], digest):
            return None
        return _key(row)

    def get(self, name: str) -> Key:
        with self._tx() as db:
            row = db.execute(
                self._sql("SELECT {columns} FROM {p}keys WHERE name = ?"), (name,)
            ).fetchone()
        if row is None:
            raise NotFound(f"No key {name!r}. List the keys with: heron keys list")
        return _key(row)

    def list(self) -> list[Key]:
        with self._tx() as db:
            rows = db.execute(self._sql("SELECT {columns} FROM {p}keys ORDER BY name")).fetchall()
        return [_key(row) for row in rows]

    def revoke(self, name: str) -> Key:
        """Revoke ``name`` (its token opens nothing from now on); revoking it again
        changes nothing. Raises ``NotFound``."""
        with self._tx(write=True) as db:
            db.execute(
                self._sql(
                    "UPDATE {p}keys SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL"
                ),
                (time.time(), name),
            )
        return self.get(name)

    def add_usage(self, usage: Iterable[KeyUsage]) -> None:
        """Add each ``usage`` to its key's month (what a server counted since it last
        wrote)."""
        rows = [(u.name, u.month, u.requests, u.tokens_in, u.tokens_out) for u in usage]
        if not rows:
            return
        with self._tx(write=True) as db:
            for row in rows:
                db.execute(self._sql(_ADD_USAGE), row)

    def usage(self, month: str | None = None) -> list[KeyUsage]:
        """Every key's use in ``month`` (``YYYY-MM``; default: this one), by name."""
        if month is not None and not _MONTH.match(month):
            raise InputError(f"Invalid month {month!r}: write it YYYY-MM, e.g. {month_of()}.")
        with self._tx() as db:
            rows = db.execute(
                self._sql(
                    "SELECT name, month, requests, tokens_in, tokens_out FROM {p}key_usage "
                    "WHERE month = ? ORDER BY name"
                ),
                (month or month_of(),),
            ).fetchall()
        return [_usage(row) for row in rows]

    def add_spend(self, rows: Iterable[tuple[str, str, str, float]]) -> None:
        """Add each ``(payer, hour, model, dollars)`` to what that payer spent then."""
        rows = [r for r in rows if r[3]]
        if not rows:
            return
        with self._tx(write=True) as db:
            for row in rows:
                db.execute(self._sql(_ADD_SPEND), row)

    def spent_since(self, payer: str, hour: str) -> float:
        """Dollars ``payer`` spent from ``hour`` (``YYYY-MM-DDTHH``, UTC) on."""
        with self._tx() as db:
            row = db.execute(
                self._sql("SELECT sum(cost) AS cost FROM {p}spend WHERE payer = ? AND hour >= ?"),
                (payer, hour),
            ).fetchone()
        return float(row["cost"] or 0.0)

    def spend(self, month: str | None = None) -> list[tuple[str, str, float]]:
        """``(payer, model, dollars)`` of ``month`` (``YYYY-MM``; default: this one)."""
        if month is not None and not _MONTH.match(month):
            raise InputError(f"Invalid month {month!r}: write it YYYY-MM, e.g. {month_of()}.")
        with self._tx() as db:
            rows = db.execute(
                self._sql(
                    "SELECT payer, model, sum(cost) AS cost FROM {p}spend WHERE hour >= ? "
                    "AND hour < ? GROUP BY payer, model ORDER BY payer, model"
                ),
                (f"{month or month_of()}-00", f"{month or month_of()}-99"),
            ).fetchall()
        return [(row["payer"], row["model"], float(row["cost"])) for row in rows]


_ADD_SPEND = (
    "INSERT INTO {p}spend (payer, hour, model, cost) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (payer, hour, model) DO UPDATE SET cost = {p}spend.cost + excluded.cost"
)
#: ``30s``, ``15m``, ``1h``, ``30d``, ``1mo``: LiteLLM's ``budget_duration``.
DURATION = re.compile(r"^([1-9][0-9]{0,5})(s|m|h|d|mo)$")
#: A model pattern: an alias or ``provider/model``, ``*`` and ``?`` as wildcards.
_MODEL_PATTERN = re.compile(r"^[A-Za-z0-9_.:/*?#@-]{1,200}$")


def check_models(models: Iterable[str]) -> tuple[str, ...]:
    """The model patterns a key or context may call, checked."""
    chosen = tuple(dict.fromkeys(m.strip() for m in models if m.strip()))
    for pattern in chosen:
        if not _MODEL_PATTERN.match(pattern):
            raise InputError(
                f"Invalid model pattern {pattern[:80]!r}: an alias of models.yml (fast), "
                "provider/model (openai/gpt-4o-mini) or either with * wildcards (gpt-*)."
            )
    if not chosen:
        raise InputError(
            "An empty model list allows no model; name at least one (--models fast,gpt-*) "
            "or leave it out for every model."
        )
    return chosen


def check_budget(dollars: float | None) -> float | None:
    if dollars is not None and not (dollars >= 0 and dollars < 1e12):
        raise InputError(f"--max-budget must be dollars, 0 or more; got {dollars}.")
    return dollars


def check_duration(duration: str | None) -> str | None:
    if duration is not None and not DURATION.match(duration):
        raise InputError(
            f"Invalid budget duration {duration!r}: a number and s, m, h, d or mo "
            "(LiteLLM's budget_duration), e.g. 30d or 1mo."
        )
    return duration


def open_keys(settings: Settings) -> KeyStore:
    """The keys the settings point at: PostgreSQL when ``HERON_DATABASE_URL`` names one,
    else ``$HERON_HOME/keys.db``."""
    return KeyStore(open_database(settings, KEYS))
