"""Running one check: each kind of ``heron.ops.watchdog.config`` has one function here.

The contract, for every kind: ``run(spec, context) -> Outcome``
(``heron.ops.watchdog.outcome``); it never raises for what it observes (a refused
connection, a dead process, a full disk is a failed ``Outcome`` whose ``detail`` says what
was seen), only for a bug. ``Outcome.data`` holds what a report or a condition may want
(status, milliseconds, free bytes ...).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import ssl
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from heron.ops.watchdog import config as cfg
from heron.ops.watchdog.conditions import Condition
from heron.ops.watchdog.deploy import sync_deploy
from heron.ops.watchdog.durations import human
from heron.ops.watchdog.heartbeats import last_beat
from heron.ops.watchdog.outcome import Context, Outcome
from heron.ops.watchdog.programs import environment, heron_argv, run_program, systemd_available
from heron.ops.watchdog.state import iso
from heron.programs.processes import alive
from heron.redact import redact
from heron.settings import Settings


def run(spec: Any, context: Context) -> Outcome:
    """``spec`` run by its kind's function, timed."""
    started = time.monotonic()
    outcome = KINDS[spec.kind](spec, context)
    outcome.seconds = round(time.monotonic() - started, 4)
    return outcome


def _conditions(conditions: list[Condition], seen: dict[str, Any]) -> tuple[bool, str]:
    failed, passed = [], []
    for condition in conditions:
        holds, detail = condition.evaluate(seen)
        (passed if holds else failed).append(detail)
    if failed:
        return False, "failed: " + "; ".join(failed)
    return True, "; ".join(passed) or "no conditions"


def _token(name: str | None, settings: Settings) -> str | None:
    if not name:
        return None
    token = os.environ.get(name)
    if token is None and name == "HERON_API_TOKEN" and settings.server.api_token is not None:
        token = settings.server.api_token.get_secret_value()
    return token or None


def _tls_context(ca_file: Path | None) -> ssl.SSLContext:
    """Verifying always (hostname and chain); ``ca_file`` trusts a private CA besides."""
    return ssl.create_default_context(cafile=str(ca_file) if ca_file else None)


def _time_left(ssl_object: ssl.SSLObject | ssl.SSLSocket | None) -> float | None:
    """Milliseconds until the peer's certificate expires (``[CERTIFICATE_EXPIRATION]``)."""
    if ssl_object is None:
        return None
    not_after = (ssl_object.getpeercert() or {}).get("notAfter")
    if not isinstance(not_after, str):
        return None
    return round((ssl.cert_time_to_seconds(not_after) - time.time()) * 1000)


def _request(
    method: str,
    url: str,
    timeout: float,
    headers: dict[str, str],
    token: str | None,
    ca_file: Path | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """What an HTTP exchange showed, as the placeholders conditions read."""
    if token:
        headers = {**headers, "authorization": f"Bearer {token}"}
    started = time.monotonic()
    try:
        with (
            httpx.Client(verify=_tls_context(ca_file), timeout=timeout) as client,
            client.stream(method, url, headers=headers, **kwargs) as response,
        ):
            stream = response.extensions.get("network_stream")
            left = _time_left(stream.get_extra_info("ssl_object")) if stream else None
            response.read()
    except httpx.HTTPError as exc:
        return {"CONNECTED": False, "error": redact(f"{type(exc).__name__}: {exc}")}
    millis = round((time.monotonic() - started) * 1000, 1)
    try:
        body: Any = response.json()
    except ValueError:
        body = response.text
    seen = {"CONNECTED": True, "STATUS": response.status_code, "RESPONSE_TIME": millis,
            "BODY": body}  # fmt: skip
    if left is not None:
        seen["CERTIFICATE_EXPIRATION"] = left
    return seen


_DATA = ("STATUS", "RESPONSE_TIME", "CERTIFICATE_EXPIRATION")


def _exchange(seen: dict[str, Any], conditions: list[Condition], url: str) -> Outcome:
    data = {k.lower(): seen[k] for k in _DATA if k in seen}
    if not seen["CONNECTED"]:
        # [CONNECTED] == false may be what is wanted (a port that must stay closed).
        ok, detail = _conditions(conditions, seen)
        return Outcome(ok, f"{url}: cannot connect ({seen['error']}); {detail}", data=data)
    ok, detail = _conditions(conditions, seen)
    return Outcome(ok, f"{url}: {detail}", data=data)


def http(spec: cfg.HttpCheck, context: Context) -> Outcome:
    token = _token(spec.token_env, context.settings)
    seen = _request(spec.method, spec.url, spec.timeout, dict(spec.headers), token,
                    spec.ca_file, content=spec.body)  # fmt: skip
    return _exchange(seen, spec.conditions, spec.url)


def rpc(spec: cfg.RpcCheck, context: Context) -> Outcome:
    call: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": spec.method}
    if spec.params is not None:
        call["params"] = spec.params
    token = _token(spec.token_env, context.settings)
    seen = _request("POST", spec.url, spec.timeout, {}, token, json=call)
    body = seen.get("BODY")
    if isinstance(body, dict):
        seen["RESULT"] = body.get("result")
        seen["ERROR"] = body.get("error")
    return _exchange(seen, spec.conditions, f"{spec.url} {spec.method}")


def doctor(spec: cfg.DoctorCheck, context: Context) -> Outcome:
    argv = heron_argv("doctor", "--json", "--offline")
    for name in spec.checks:
        argv += ["--check", name]
    ran = run_program(argv, timeout=spec.timeout, env=environment(heron=True))
    try:
        report = json.loads(ran.stdout)
        checks = report["checks"]
    except (ValueError, KeyError, TypeError):
        return Outcome(False, f"heron doctor gave no report: {ran.summary()}")
    failed = [c for c in checks if not c.get("ok")]
    said = [f"{c.get('name')}: {c.get('detail')} (fix: {c.get('fix')})" for c in failed]
    detail = "; ".join(said) if said else f"{len(checks)} checks passed"
    data = {"checks": {c.get("name"): c.get("status") for c in checks},
            "doctor_seconds": report.get("seconds")}  # fmt: skip
    return Outcome(bool(report.get("ok")) and not failed, detail, data=data)


def process(spec: cfg.ProcessCheck, context: Context) -> Outcome:
    if spec.pid_file is not None:
        try:
            pid = int(spec.pid_file.read_text().strip())
        except (OSError, ValueError) as exc:
            return Outcome(False, f"no pid in {spec.pid_file}: {exc}")
        running = alive(pid)
        state = "running" if running else "not running"
        return Outcome(running, f"pid {pid} (from {spec.pid_file}) is {state}", data={"pid": pid})
    pids = [pid for pid in _pids() if _named(pid, spec.process or "") and alive(pid)]
    if pids:
        return Outcome(True, f"{spec.process}: running (pid {pids[0]})", data={"pids": pids})
    return Outcome(False, f"no process named {spec.process} is running")


def _pids() -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]


def _named(pid: int, name: str) -> bool:
    try:
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
        argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
    except OSError:
        return False
    return name in (comm, os.path.basename(argv0))


def systemd(spec: cfg.SystemdCheck, context: Context) -> Outcome:
    missing = systemd_available()
    if missing:
        return Outcome(False, f"{spec.unit}: {missing}", data={"state": "unknown"})
    ran = run_program(["systemctl", "is-active", "--", spec.unit], timeout=spec.timeout)
    state = ran.stdout.strip() or "unknown"
    return Outcome(state == "active", f"{spec.unit} is {state}", data={"state": state})


def disk(spec: cfg.DiskCheck, context: Context) -> Outcome:
    path = spec.path or context.settings.home
    while not path.exists() and path != path.parent:
        path = path.parent  # HERON_HOME not made yet: the disk it will be on
    usage = shutil.disk_usage(path)
    percent = round(100 * usage.free / usage.total, 2) if usage.total else 0.0
    data = {"path": str(path), "free_bytes": usage.free, "free_percent": percent}
    short = []
    if spec.min_free is not None and usage.free < spec.min_free:
        short.append(f"under {_gib(spec.min_free)} free")
    if spec.min_free_percent is not None and percent < spec.min_free_percent:
        short.append(f"under {spec.min_free_percent:g}% free")
    detail = f"{path}: {_gib(usage.free)} free ({percent:g}%)"
    if short:
        detail += f", {' and '.join(short)}; free space or grow the disk"
    return Outcome(not short, detail, data=data)


def _gib(size: float) -> str:
    return f"{size / 1024**3:.2f} GiB"


def command(spec: cfg.CommandCheck, context: Context) -> Outcome:
    ran = run_program(spec.argv, timeout=spec.timeout, env=environment(spec.environment),
                      cwd=spec.cwd)  # fmt: skip
    data = {"exit": ran.returncode, "seconds": round(ran.seconds, 3)}
    if ran.returncode is None:
        return Outcome(False, ran.summary(), data=data)
    ok = ran.returncode == spec.exit_code
    detail = f"exit status {ran.returncode} (wanted {spec.exit_code})"
    if spec.conditions:
        seen = {"EXIT": ran.returncode, "OUTPUT": ran.stdout}
        holds, said = _conditions(spec.conditions, seen)
        ok, detail = ok and holds, f"{detail}; {said}"
    tail = ran.tail()
    return Outcome(ok, f"{detail}: {tail}" if tail and not ok else detail, data=data)


def tls(spec: cfg.TlsCheck, context: Context) -> Outcome:
    """A TLS handshake with ``host:port``, verified (hostname, chain, dates), as Gatus's
    ``tls://`` endpoints: ``[CONNECTED]``, ``[RESPONSE_TIME]``, ``[CERTIFICATE_EXPIRATION]``."""
    host, port = spec.address()
    started = time.monotonic()
    seen: dict[str, Any]
    try:
        with (
            socket.create_connection((host, port), timeout=spec.timeout) as sock,
            _tls_context(spec.ca_file).wrap_socket(
                sock, server_hostname=spec.server_name or host
            ) as wrapped,
        ):
            millis = round((time.monotonic() - started) * 1000, 1)
            seen = {"CONNECTED": True, "RESPONSE_TIME": millis,
                    "CERTIFICATE_EXPIRATION": _time_left(wrapped)}  # fmt: skip
    except (OSError, ssl.SSLError) as exc:  # refused, timed out, or not a trusted cert
        seen = {"CONNECTED": False, "error": redact(f"{type(exc).__name__}: {exc}")}
    if seen.get("CERTIFICATE_EXPIRATION") is None:
        seen.pop("CERTIFICATE_EXPIRATION", None)
    return _exchange(seen, spec.conditions, spec.url)


def heartbeat(spec: cfg.HeartbeatCheck, context: Context) -> Outcome:
    """Passes while ``POST /watchdog/heartbeat/NAME`` was called within ``period``; before
    the first beat, the period counts from the check's first run."""
    now = context.clock()
    last = last_beat(context.settings.home, spec.name)
    first = context.memory.setdefault("first_run", now)
    since = last if last is not None else first
    ago = now - since
    data = {"last_beat": iso(last) if last is not None else None, "seconds_since": round(ago, 3)}
    what = f"last beat {human(ago)} ago" if last is not None else f"no beat in {human(ago)}"
    if ago <= spec.period:
        return Outcome(True, f"{what} (period {human(spec.period)})", data=data)
    return Outcome(
        False,
        f"{what}, past its period of {human(spec.period)}; whatever should call "
        f"POST /watchdog/heartbeat/{spec.name} has not",
        data=data,
    )


KINDS: dict[str, Callable[[Any, Context], Outcome]] = {
    "http": http,
    "rpc": rpc,
    "doctor": doctor,
    "process": process,
    "systemd": systemd,
    "disk": disk,
    "command": command,
    "tls": tls,
    "heartbeat": heartbeat,
    "deploy": sync_deploy,
}
