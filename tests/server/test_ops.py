"""``/health``, ``/ready`` and the request id, on the real server (``/metrics``:
``test_metrics.py``)."""

from __future__ import annotations

import re

from tests.server.conftest import Served


def test_health(served: Served) -> None:
    with served.client() as client:
        response = client.get("/health")
    assert response.json() == {"status": "ok"}


def test_ready_checks_store_model_and_libraries(served: Served, tmp_path) -> None:
    with served.client() as client:
        ready = client.get("/ready")
        assert ready.status_code == 200, ready.text
        checks = ready.json()["checks"]
        assert checks["libraries"]["indexed"] == ["tiny"]
        assert checks["model"]["dim"] == 384
        # A library that is configured but not indexed makes the server not ready.
        served.rpc("library.add", {"name": "later", "source": str(tmp_path)})
        try:
            not_ready = client.get("/ready")
        finally:
            served.rpc("library.remove", {"name": "later"})
    assert not_ready.status_code == 503
    assert not_ready.json()["checks"]["libraries"]["not_indexed"] == ["later"]
    assert "heron index later" in not_ready.json()["checks"]["libraries"]["fix"]


def test_request_id_is_echoed_or_made(served: Served) -> None:
    with served.client() as client:
        given = client.get("/health", headers={"x-request-id": "abc-123"})
        made = client.get("/health", headers={"x-request-id": "bad id with spaces"})
    assert given.headers["x-request-id"] == "abc-123"
    assert re.fullmatch(r"[0-9a-f]{16}", made.headers["x-request-id"])


def test_the_watchdog_report_is_served_or_its_absence_explained(served: Served) -> None:
    path = served.home / "watchdog-latest.json"
    path.unlink(missing_ok=True)
    missing = served.rpc("ops.watchdog")
    assert "heron watchdog --once" in missing["error"]["message"]
    path.write_text('{"ok": true, "checks": [{"name": "disk", "ok": true}]}')
    try:
        assert served.rpc("ops.watchdog")["result"]["checks"][0]["name"] == "disk"
    finally:
        path.unlink()
