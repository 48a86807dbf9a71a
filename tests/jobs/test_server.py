"""Jobs through a real ``heron serve`` on loopback: JSON-RPC, the confirmation gate, SSE
with ``Last-Event-ID`` resume, and a server killed with -9 in the middle of a job."""

from __future__ import annotations

import json
import signal
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.jobs.conftest import Server, alive, wait_for


def state_of(server: Server, job_id: str, *states: str) -> bool:
    return server.result("jobs.get", id=job_id)["state"] in states  # type: ignore[index]


def sse(server: Server, job_id: str, headers: dict[str, str] | None = None) -> list[dict]:
    """Every event of the stream, parsed, until the server ends it (the job finished)."""
    events, fields = [], {}
    url = f"{server.url}/jobs/{job_id}/events/stream"
    with httpx.stream("GET", url, headers=headers or {}, timeout=30) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if not line:
                events.append(fields | {"data": json.loads(fields["data"])})
                fields = {}
            else:
                key, _, value = line.partition(": ")
                fields[key] = value
    return events


def test_confirmation_gate_end_to_end_over_jsonrpc(serve: Callable[[], Server]) -> None:
    server = serve()
    job = server.result(
        "jobs.create",
        prompt="deploy the fix once main builds",
        success_criteria="tests pass",
        risk_level="deploy_allowed",
        requires_confirmation=True,
    )
    assert job["state"] == "queued" and job["id"]  # type: ignore[index]
    job_id = job["id"]  # type: ignore[index]
    wait_for(lambda: state_of(server, job_id, "waiting_for_confirmation"), 30, "the gate")
    kinds = [e["kind"] for e in server.result("jobs.events", id=job_id)]  # type: ignore[union-attr]
    assert "step_started" not in kinds
    early = server.rpc("jobs.deny", id="0" * 16)
    assert early["error"]["code"] == -32004 and "heron jobs list" in early["error"]["message"]
    confirmed = server.result("jobs.confirm", id=job_id, by="alice")
    assert confirmed["confirmed_by"] == "alice"  # type: ignore[index]
    wait_for(lambda: state_of(server, job_id, "completed"), 30, "the confirmed job to finish")
    events = server.result("jobs.events", id=job_id)
    decided = next(e for e in events if e["kind"] == "confirmed")  # type: ignore[union-attr]
    assert decided["payload"]["by"] == "alice" and decided["time"]
    assert server.result("jobs.get", id=job_id)["result"]["ok"] is True  # type: ignore[index]
    again = server.rpc("jobs.confirm", id=job_id)
    assert (
        again["error"]["code"] == -32001
        and "is completed, not waiting" in again["error"]["message"]
    )

    other = server.result("jobs.create", prompt="deploy it again", risk_level="deploy_allowed")
    wait_for(lambda: state_of(server, other["id"], "waiting_for_confirmation"), 30)  # type: ignore[index]
    denied = server.result("jobs.deny", id=other["id"], by="bob")  # type: ignore[index]
    assert denied["state"] == "aborted"  # type: ignore[index]
    bad = server.rpc("jobs.create", prompt="x", risk_level="root")
    assert bad["error"]["code"] == -32602
    listed = server.result("jobs.list", state=["aborted"])
    assert [j["id"] for j in listed] == [other["id"]]  # type: ignore[union-attr, index]


def test_sse_replays_history_and_resumes_after_last_event_id(serve: Callable[[], Server]) -> None:
    server = serve()
    job_id = server.result("jobs.create", prompt="is the build broken?")["id"]  # type: ignore[index]
    events = sse(server, job_id)  # live from the start until the job finished
    seqs = [int(e["id"]) for e in events]
    assert seqs == list(range(1, len(seqs) + 1))
    assert events[0]["event"] == "created" and events[-1]["event"] == "completed"
    assert all(e["data"]["seq"] == int(e["id"]) for e in events)
    resumed = sse(server, job_id, {"Last-Event-ID": "3"})
    assert [int(e["id"]) for e in resumed] == seqs[3:]
    assert resumed == events[3:]
    gone = httpx.get(f"{server.url}/jobs/nope/events/stream")
    assert gone.status_code == 404 and "heron jobs list" in gone.json()["error"]["message"]
    bad = httpx.get(f"{server.url}/jobs/{job_id}/events/stream", headers={"Last-Event-ID": "x"})
    assert bad.status_code == 400


def test_server_killed_mid_job_restarts_consistent(
    serve: Callable[[], Server], configured: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERON_JOBS_TEST_COMMAND", "sh -c 'sleep 60 & wait'")
    server = serve()
    build = server.result("jobs.create", prompt="is the build broken?")["id"]  # type: ignore[index]

    def test_pid() -> int | None:
        events = server.result("jobs.events", id=build)
        return next(
            (e["payload"]["pid"] for e in events if e["payload"].get("step") == "test"), None
        )  # type: ignore[union-attr]

    pid = int(wait_for(test_pid, 60, "the build to start"))  # type: ignore[arg-type]
    read_only = server.result("jobs.create", prompt="what changed this week?")["id"]  # type: ignore[index]
    server.proc.send_signal(signal.SIGKILL)
    server.proc.wait()
    restarted = serve()
    wait_for(lambda: state_of(restarted, build, "failed"), 30, "recovery of the build job")
    wait_for(lambda: state_of(restarted, read_only, "completed"), 30, "the queued job")
    events = restarted.result("jobs.events", id=build)
    assert [e["kind"] for e in events][-2:] == ["step_killed", "failed"]  # type: ignore[union-attr]
    assert "is gone" in events[-1]["payload"]["reason"]  # type: ignore[index]
    assert not alive(pid)
    assert [j["state"] for j in restarted.result("jobs.list")] == ["completed", "failed"]  # type: ignore[union-attr]
