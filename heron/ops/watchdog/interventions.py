"""The optional hook into a Heron server's interventions: an incident raises one, its
recovery resolves it (JSON-RPC ``interventions.raise`` / ``interventions.resolve`` at
``interventions_url``). Best effort: an unreachable server is recorded, never fatal.
"""

from __future__ import annotations

import os
from typing import Any

import httpx

from heron.ops.watchdog.state import CheckState, iso
from heron.redact import redact


def key(name: str) -> str:
    return f"watchdog:{name}"


def raise_params(name: str, spec: Any, state: CheckState, detail: str, room: str) -> dict:
    return {
        "kind": "watchdog_incident",
        "key": key(name),
        "room": room,
        "severity": "critical" if spec.critical else "warning",
        "facts": {
            "check": name,
            "detail": detail,
            "since": iso(state.since) if state.since else None,
            "failures": state.failures,
        },
    }


def call(url: str, method: str, params: dict, token_env: str, timeout: float = 10.0) -> dict:
    """Call ``method``; the action record (``ok`` and what came back or went wrong)."""
    record: dict[str, Any] = {"action": "intervention", "method": method, "key": params["key"]}
    headers = {}
    if token := os.environ.get(token_env):
        headers["authorization"] = f"Bearer {token}"
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    try:
        response = httpx.post(url, json=body, headers=headers, timeout=timeout)
        answer = response.json()
    except (httpx.HTTPError, ValueError) as exc:
        return {**record, "ok": False, "detail": redact(f"{type(exc).__name__}: {exc}")}
    if not isinstance(answer, dict) or "error" in answer or response.status_code != 200:
        error = answer.get("error") if isinstance(answer, dict) else answer
        return {**record, "ok": False, "detail": redact(f"HTTP {response.status_code}: {error}")}
    return {**record, "ok": True, "detail": "accepted", "result": answer.get("result")}
