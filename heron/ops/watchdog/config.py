"""``watchdog.yml``: the checks, their remedies and where alerts go, validated whole.

.. code-block:: yaml

    alerts: ["json://127.0.0.1:9000/hook"]     # apprise URLs, one per channel
    repeat_interval: 4h                         # re-send while a check stays failed
    checks:
      - name: api
        kind: http
        url: http://127.0.0.1:8765/ready
        conditions: ["[STATUS] == 200", "[BODY].ready == true", "[RESPONSE_TIME] < 500"]
        failure_threshold: 2                    # failed runs in a row before acting
        success_threshold: 2                    # passed runs in a row before recovery
        remedy: {kind: systemd, unit: heron.service}
        restart_budget: 3                       # remedies per budget_window, then escalate
      - {name: disk, kind: disk, path: /srv/heron, min_free: 2GiB}

Loaded with ``heron.yamlsafe`` (no aliases, no tags); any mistake is a ``ConfigError``
naming the file, the line and the field. ``default_config`` is what runs without a file.
"""

from __future__ import annotations

import fnmatch
import re
import socket
from datetime import datetime, time, timedelta
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from heron.errors import ConfigError
from heron.ops.watchdog import durations
from heron.ops.watchdog.conditions import Condition, ConditionError
from heron.ops.watchdog.durations import human
from heron.settings import Settings
from heron.yamlsafe import NoAliasLoader, YAMLRefused, load

_SIZES = {"": 1, "b": 1, "k": 1e3, "kb": 1e3, "kib": 1024, "m": 1e6, "mb": 1e6, "mib": 1024**2,
          "g": 1e9, "gb": 1e9, "gib": 1024**3, "t": 1e12, "tb": 1e12, "tib": 1024**4}  # fmt: skip
#: What a check's name may be: it names files' entries, alerts and intervention keys.
NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"


def parse_duration(value: Any) -> float:
    """Seconds in ``value``: a number, or ``500ms``, ``30s``, ``1h30m``, ``1d``.

    >>> parse_duration("1h30m"), parse_duration(2.5)
    (5400.0, 2.5)
    """
    return durations.seconds(value)


def parse_size(value: Any) -> int:
    """Bytes in ``value``: a number, or ``500MB``, ``2GiB`` (decimal and binary units)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", str(value))
    if found is None or found.group(2).lower() not in _SIZES:
        raise ValueError(f"{value!r} is not a size; write e.g. 500MB, 2GiB or 1073741824")
    return int(float(found.group(1)) * _SIZES[found.group(2).lower()])


def _condition(value: Any) -> Condition:
    if isinstance(value, Condition):
        return value
    try:
        return Condition.parse(str(value))
    except ConditionError as exc:
        raise ValueError(str(exc)) from None


Duration = Annotated[float, BeforeValidator(parse_duration)]
Size = Annotated[int, BeforeValidator(parse_size)]
Conditions = list[Annotated[Condition, BeforeValidator(_condition)]]
Argv = Annotated[list[str], Field(min_length=1)]
#: A systemd unit name (``heron.service``, ``getty@tty1.service``); never an option.
Unit = Annotated[str, Field(pattern=r"^[A-Za-z0-9@_.:][A-Za-z0-9@_.:-]*$")]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)


# -- remedies -------------------------------------------------------------------------------


class SystemdRemedy(_Model):
    """``systemctl restart UNIT``."""

    kind: Literal["systemd"]
    unit: Unit
    timeout: Duration = 120.0


class CommandRemedy(_Model):
    """A program and its arguments (no shell); ``environment`` names variables (globs
    such as ``HERON_*`` allowed) passed on besides the minimal environment."""

    kind: Literal["command"]
    argv: Argv
    environment: list[str] = []
    cwd: Path | None = None
    timeout: Duration = 120.0


class ReindexRemedy(_Model):
    """``heron index LIBRARY``, with this Heron's settings."""

    kind: Literal["reindex"]
    library: str = Field(min_length=1)
    timeout: Duration = 1800.0


Remedy = Annotated[SystemdRemedy | CommandRemedy | ReindexRemedy, Field(discriminator="kind")]


# -- checks ---------------------------------------------------------------------------------


class CheckBase(_Model):
    """What every check has: thresholds, a remedy and its budget, how bad a failure is."""

    name: str = Field(pattern=NAME)
    failure_threshold: int = Field(default=2, ge=1)
    success_threshold: int = Field(default=1, ge=1)
    timeout: Duration = 10.0
    critical: bool = False
    remedy: Remedy | None = None
    restart_budget: int = Field(default=3, ge=0)
    budget_window: Duration = 3600.0
    alert: bool = True
    #: Checks this one needs: while one of them fails, this one's alerts and remedies wait.
    depends_on: list[str] = []
    #: Run at most this often (a timer or loop that comes sooner skips it); none: each run.
    interval: Duration | None = None


class HttpCheck(CheckBase):
    """A request and conditions on ``[STATUS]``, ``[RESPONSE_TIME]``, ``[BODY]``;
    ``token_env`` names a variable holding a Bearer token to send."""

    kind: Literal["http"]
    url: str = Field(pattern=r"^https?://")
    method: Literal["GET", "HEAD", "POST"] = "GET"
    headers: dict[str, str] = {}
    body: str | None = None
    token_env: str | None = None
    ca_file: Path | None = None
    conditions: Conditions = Field(default_factory=lambda: [_condition("[STATUS] == 200")])


class TlsCheck(CheckBase):
    """A verified TLS handshake with ``tls://HOST:PORT`` (Gatus's ``tls://``); conditions on
    ``[CONNECTED]``, ``[RESPONSE_TIME]`` and ``[CERTIFICATE_EXPIRATION]``; ``ca_file``
    trusts a private CA, ``server_name`` is the name the certificate must hold."""

    kind: Literal["tls"]
    url: str = Field(pattern=r"^tls://")
    server_name: str | None = None
    ca_file: Path | None = None
    conditions: Conditions = Field(
        default_factory=lambda: [
            _condition("[CONNECTED] == true"),
            _condition("[CERTIFICATE_EXPIRATION] > 168h"),
        ]
    )

    @field_validator("url")
    @classmethod
    def _host_and_port(cls, url: str) -> str:
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            raise ValueError(f"{url!r} is not tls://HOST:PORT ({exc})") from None
        if not parts.hostname or port is None or parts.path not in ("", "/"):
            raise ValueError(f"{url!r} is not tls://HOST:PORT, e.g. tls://example.org:443")
        return url

    def address(self) -> tuple[str, int]:
        parts = urlsplit(self.url)
        assert parts.hostname is not None and parts.port is not None  # validated
        return parts.hostname, parts.port


class HeartbeatCheck(CheckBase):
    """A push check: fails when ``POST /watchdog/heartbeat/NAME`` was not called within
    ``period`` (``heron.ops.watchdog.heartbeats``); a missed period is already the
    threshold, so one failed run fires."""

    kind: Literal["heartbeat"]
    period: Duration
    failure_threshold: int = Field(default=1, ge=1)


class RpcCheck(CheckBase):
    """A JSON-RPC call; conditions on ``[RESULT]``, ``[ERROR]``, ``[STATUS]`` ...;
    ``token_env`` names the variable holding a Bearer token (default HERON_API_TOKEN)."""

    kind: Literal["rpc"]
    url: str = Field(pattern=r"^https?://")
    method: str = Field(min_length=1)
    params: dict[str, Any] | list[Any] | None = None
    token_env: str = "HERON_API_TOKEN"
    conditions: Conditions = Field(
        default_factory=lambda: [_condition("[STATUS] == 200"), _condition("[ERROR] == null")]
    )


class DoctorCheck(CheckBase):
    """``heron doctor --offline`` (``checks``: only these of its checks; none: all)."""

    kind: Literal["doctor"]
    checks: list[str] = []
    timeout: Duration = 60.0


class ProcessCheck(CheckBase):
    """A process alive: the pid in ``pid_file``, or any process named ``name``."""

    kind: Literal["process"]
    pid_file: Path | None = None
    process: str | None = None

    @model_validator(mode="after")
    def _one(self) -> ProcessCheck:
        if (self.pid_file is None) == (self.process is None):
            raise ValueError("give exactly one of pid_file and process")
        return self


class SystemdCheck(CheckBase):
    """``systemctl is-active UNIT``."""

    kind: Literal["systemd"]
    unit: Unit


class DiskCheck(CheckBase):
    """Free space on the filesystem holding ``path`` (default: HERON_HOME)."""

    kind: Literal["disk"]
    path: Path | None = None
    min_free: Size | None = None
    min_free_percent: float | None = Field(default=None, ge=0, le=100)

    @model_validator(mode="after")
    def _a_bound(self) -> DiskCheck:
        if self.min_free is None and self.min_free_percent is None:
            return self.model_copy(update={"min_free_percent": 5.0})
        return self


class CommandCheck(CheckBase):
    """A program's exit status (``exit_code``), and conditions on ``[EXIT]``/``[OUTPUT]``."""

    kind: Literal["command"]
    argv: Argv
    exit_code: int = 0
    environment: list[str] = []
    cwd: Path | None = None
    conditions: Conditions = []


class DeployCheck(CheckBase):
    """Sync-deploy (``heron.ops.watchdog.deploy``): fast-forward the clean checkout at
    ``path`` to ``remote``/``branch``, run ``build``, restart ``units`` (or run
    ``restart``), then the checks named in ``checks``; roll back when any fails."""

    kind: Literal["deploy"]
    path: Path
    remote: str = "origin"
    branch: str = Field(default="main", pattern=r"^[A-Za-z0-9][A-Za-z0-9_./-]*$")
    build: list[str] | None = None
    units: list[Unit] = []
    restart: list[str] | None = None
    checks: list[str] = []
    environment: list[str] = []
    timeout: Duration = 600.0
    check_attempts: int = Field(default=3, ge=1)
    check_wait: Duration = 2.0
    failure_threshold: int = Field(default=1, ge=1)


Check = Annotated[
    HttpCheck
    | RpcCheck
    | DoctorCheck
    | ProcessCheck
    | SystemdCheck
    | DiskCheck
    | CommandCheck
    | TlsCheck
    | HeartbeatCheck
    | DeployCheck,
    Field(discriminator="kind"),
]
KINDS = ("http", "rpc", "doctor", "process", "systemd", "disk", "command", "tls", "heartbeat",
         "deploy")  # fmt: skip
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


class Maintenance(_Model):
    """A window of planned work, in the manner of Gatus: the checks it names (names or
    globs; none: all) run and are recorded, but send nothing and run no remedy.

    ``start`` is ``HH:MM`` (each day, or each of ``every``'s days, in ``timezone``) or a
    date and time (``2025-06-01T02:00``, once); the window lasts ``duration``."""

    start: str
    duration: Duration
    every: list[Literal[DAYS]] = []  # type: ignore[valid-type]
    timezone: str = "UTC"
    checks: list[str] = []
    reason: str = ""

    @field_validator("timezone")
    @classmethod
    def _zone(cls, name: str) -> str:
        try:
            ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"{name!r} is not a time zone; write e.g. UTC or Europe/Paris"
            ) from None
        return name

    @model_validator(mode="after")
    def _when(self) -> Maintenance:
        if self.daily() is None:
            try:
                datetime.fromisoformat(self.start)
            except ValueError:
                raise ValueError(
                    f"start {self.start!r} is neither HH:MM (e.g. 23:00) nor a date and time "
                    "(e.g. 2025-06-01T02:00)"
                ) from None
            if self.every:
                raise ValueError("every goes with a daily start (HH:MM), not with a date")
        if self.duration > 7 * 86400:
            raise ValueError("a maintenance window lasts at most 7 days")
        return self

    def daily(self) -> time | None:
        found = re.fullmatch(r"([01]?\d|2[0-3]):([0-5]\d)", self.start)
        return time(int(found.group(1)), int(found.group(2))) if found else None

    def covers(self, name: str) -> bool:
        return not self.checks or any(fnmatch.fnmatchcase(name, c) for c in self.checks)

    def active(self, now: float) -> bool:
        zone = ZoneInfo(self.timezone)
        here = datetime.fromtimestamp(now, zone)
        at = self.daily()
        if at is None:
            begins = datetime.fromisoformat(self.start)
            begins = begins if begins.tzinfo else begins.replace(tzinfo=zone)
            return 0 <= now - begins.timestamp() < self.duration
        # A window that began on an earlier day may still be open (23:00 for 2h).
        for back in range(int(self.duration // 86400) + 2):
            day = here.date() - timedelta(days=back)
            if self.every and DAYS[day.weekday()] not in self.every:
                continue
            begins = datetime.combine(day, at, zone).timestamp()
            if 0 <= now - begins < self.duration:
                return True
        return False

    def describe(self) -> str:
        days = f" on {', '.join(self.every)}" if self.every else ""
        daily = " each day" if self.daily() and not self.every else ""
        said = f": {self.reason}" if self.reason else ""
        span = human(self.duration)
        return f"maintenance from {self.start}{daily}{days} ({self.timezone}) for {span}{said}"


class WatchdogConfig(_Model):
    checks: list[Check] = []
    alerts: list[str] = []
    repeat_interval: Duration = 4 * 3600.0
    interventions_url: str | None = Field(default=None, pattern=r"^https?://")
    interventions_room: str = "ops"
    interventions_token_env: str = "HERON_API_TOKEN"
    history_max_bytes: Size = 5 * 1024 * 1024
    history_keep: int = Field(default=3, ge=1)
    maintenance: list[Maintenance] = []
    source: str = "defaults"

    @field_validator("checks")
    @classmethod
    def _names(cls, checks: list[Any]) -> list[Any]:
        names = [check.name for check in checks]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ValueError(f"check names must be unique; given twice: {', '.join(twice)}")
        for check in checks:
            if isinstance(check, DeployCheck):
                unknown = [n for n in check.checks if n not in names or n == check.name]
                if unknown:
                    raise ValueError(
                        f"deploy check {check.name!r} names checks that are not defined (or "
                        f"itself): {', '.join(unknown)}; checks: {', '.join(names)}"
                    )
            unknown = [n for n in check.depends_on if n not in names or n == check.name]
            if unknown:
                raise ValueError(
                    f"check {check.name!r} depends on checks that are not defined (or "
                    f"itself): {', '.join(unknown)}; checks: {', '.join(names)}"
                )
        _ordered(checks)  # refuses a cycle
        return checks

    def ordered(self) -> list[Any]:
        """The checks, each after those it depends on, else in the file's order."""
        return _ordered(self.checks)

    def check(self, name: str) -> Any:
        return next(check for check in self.checks if check.name == name)


def _ordered(checks: list[Any]) -> list[Any]:
    done: dict[str, Any] = {}
    visiting: list[str] = []
    by_name = {check.name: check for check in checks}

    def visit(check: Any) -> None:
        if check.name in done:
            return
        if check.name in visiting:
            cycle = [*visiting[visiting.index(check.name) :], check.name]
            raise ValueError(f"depends_on makes a cycle: {' -> '.join(cycle)}")
        visiting.append(check.name)
        for name in check.depends_on:
            visit(by_name[name])
        visiting.pop()
        done[check.name] = check

    for check in checks:
        visit(check)
    return list(done.values())


def config_path(settings: Settings) -> Path:
    return settings.ops.watchdog_config or settings.home / "watchdog.yml"


def load_config(path: Path | None, settings: Settings) -> WatchdogConfig:
    """The config in ``path``, else in ``HERON_WATCHDOG_CONFIG``: a file named so must
    exist. With neither, ``$HERON_HOME/watchdog.yml``, or ``default_config`` without it."""
    named = path or settings.ops.watchdog_config
    path = named or config_path(settings)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if named:
            raise ConfigError(
                f"The watchdog config {path} does not exist. Write it (docs/operations.md, "
                "'watchdog.yml'), or name none to run the default checks."
            ) from None
        return default_config(settings)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"Cannot read the watchdog config {path}: {exc}.") from exc
    return parse_config(text, str(path))


def parse_config(text: str, source: str) -> WatchdogConfig:
    """The config in ``text`` (``source`` names it in errors)."""
    try:
        data = load(text, max_bytes=1024 * 1024)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f", line {mark.line + 1} column {mark.column + 1}" if mark else ""
        raise ConfigError(
            f"{source}{where}: not valid YAML ({exc.problem or exc}). Fix that line; "
            "docs/operations.md shows a complete watchdog.yml."
        ) from None
    except (yaml.YAMLError, YAMLRefused) as exc:
        raise ConfigError(f"{source}: not accepted as YAML ({exc}).") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the file is a mapping with a 'checks' list, not a list.")
    try:
        return WatchdogConfig.model_validate({**data, "source": source})
    except ValidationError as exc:
        raise ConfigError(_invalid(exc, text, source, data)) from None


def _invalid(exc: ValidationError, text: str, source: str, data: dict[str, Any]) -> str:
    problems = []
    root = yaml.compose(text, Loader=NoAliasLoader)
    for err in exc.errors(include_url=False):
        # A tagged union puts the tag in the location (checks.0.http.url); YAML has none.
        loc = [p for p in err["loc"] if p not in KINDS and not str(p).startswith("function-")]
        line = _line(root, loc)
        where = f"line {line}, " if line else ""
        field = ".".join(map(str, loc)) or "the file"
        if len(loc) > 1 and loc[0] == "checks" and isinstance(loc[1], int):
            entry = (data.get("checks") or [])[loc[1]]
            name = entry.get("name") if isinstance(entry, dict) else None
            field = f"check {name or loc[1] + 1!r}" + "".join(f".{p}" for p in loc[2:])
        message = err["msg"].removeprefix("Value error, ").rstrip(".")
        if err["type"] == "union_tag_invalid":
            message = f"kind must be one of: {', '.join(KINDS)}"
        elif err["type"] == "union_tag_not_found":
            message = f"each check needs a kind: one of {', '.join(KINDS)}"
        problems.append(f"{where}{field}: {message}")
    return f"{source}: " + "; ".join(problems) + "."


def _line(node: yaml.Node | None, loc: list[str | int]) -> int | None:
    """The 1-based line of the YAML node at ``loc`` (or of its nearest parent)."""
    line = node.start_mark.line + 1 if node is not None else None
    for step in loc:
        if isinstance(node, yaml.MappingNode):
            node = next((v for k, v in node.value if k.value == step), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int):
            node = node.value[step] if step < len(node.value) else None
        else:
            node = None
        if node is None:
            break
        line = node.start_mark.line + 1
    return line


def default_config(settings: Settings) -> WatchdogConfig:
    """What runs without a watchdog.yml: ``heron doctor``, the disk under HERON_HOME, and
    the local server's ``/health`` and ``/ready`` when one answers on its port."""
    checks: list[dict[str, Any]] = [
        {"name": "doctor", "kind": "doctor"},
        {"name": "disk", "kind": "disk", "path": str(settings.home), "min_free_percent": 5},
    ]
    host = "127.0.0.1" if settings.server.host in ("0.0.0.0", "::", "") else settings.server.host
    base = f"http://{host}:{settings.server.port}"
    if _listening(host, settings.server.port):
        checks += [
            {"name": "server-health", "kind": "http", "url": f"{base}/health"},
            {
                "name": "server-ready",
                "kind": "http",
                "url": f"{base}/ready",
                "token_env": "HERON_API_TOKEN",
                "conditions": ["[STATUS] == 200", "[BODY].ready == true"],
            },
        ]
    return WatchdogConfig.model_validate({"checks": checks, "source": "defaults"})


def _listening(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False
