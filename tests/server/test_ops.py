"""``/health``, ``/ready``, ``/metrics`` and the request id, on the real server."""

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


def test_metrics_count_methods_and_report_index_sizes(served: Served) -> None:
    served.rpc("search.query", {"query": "pods", "library": "tiny"})
    served.rpc("search.query", {"query": "pods", "library": "nope"})
    with served.client() as client:
        text = client.get("/metrics").text
    pattern = r'heron_requests_total\{kind="rpc",name="search.query",outcome="(\w+)"\} (\d+)'
    counts = dict(re.findall(pattern, text))
    assert int(counts["ok"]) >= 1 and int(counts["error"]) >= 1
    assert 'heron_request_seconds_bucket{kind="rpc",name="search.query",le="+Inf"}' in text
    assert re.search(r'heron_index_records\{namespace="tiny"\} \d+', text)
    assert "# TYPE heron_model_call_seconds histogram" in text


def test_request_id_is_echoed_or_made(served: Served) -> None:
    with served.client() as client:
        given = client.get("/health", headers={"x-request-id": "abc-123"})
        made = client.get("/health", headers={"x-request-id": "bad id with spaces"})
    assert given.headers["x-request-id"] == "abc-123"
    assert re.fullmatch(r"[0-9a-f]{16}", made.headers["x-request-id"])


def test_metric_labels_are_known_prefixes_only() -> None:
    from heron.server.middleware import path_label

    assert path_label("/jobs/abc123/events/stream") == "/jobs"
    assert path_label("/v1/models/local") == "/v1/models"
    assert path_label("/jobsfoo") == path_label("/etc/passwd") == "other"
