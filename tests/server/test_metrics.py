"""``/metrics`` scraped from a real server and parsed as Prometheus parses it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from heron import __version__
from heron.jobs import STATES, open_jobs
from heron.server import create_app
from heron.server.features.metrics import Metrics
from heron.settings import Settings
from tests.llm_servers import KEY, ChatServer, serve
from tests.server.conftest import Served, running

#: Two models on the replay: ``gpt`` falls back to ``gpt2``.
MODELS = """default: gpt
models:
  gpt:
    provider: openai
    model: gpt-test
    base_url: {url}/v1
    api_key_env: TEST_OPENAI_KEY
    fallbacks: [gpt2]
  gpt2:
    provider: openai
    model: gpt-test-2
    base_url: {url}/v1
    api_key_env: TEST_OPENAI_KEY
"""


def scrape(client: httpx.Client) -> dict[str, list]:
    """Sample lists by family name, parsed by prometheus_client's own parser."""
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    families = text_string_to_metric_families(response.text)
    return {family.name: family.samples for family in families}


def value(samples: list, name: str, **labels: str) -> float:
    found = [s.value for s in samples if s.name == name and labels.items() <= s.labels.items()]
    assert found, f"no {name} with {labels}"
    return sum(found)


def test_requests_count_by_route_template_and_status(served: Served) -> None:
    with served.client() as client:
        client.get("/health")
        client.get("/no/such/path")
        client.post("/v1/chat/completions", json={"messages": "not a list"})  # 400
        served.rpc("search.query", {"query": "pods", "library": "tiny"})
        served.rpc("search.query", {"query": "pods", "library": "nope"})
        client.get("/chat/stream/nosuchstream")
        families = scrape(client)
    http = families["heron_http_requests"]
    assert value(http, "heron_http_requests_total", route="/health", status="200") >= 1
    assert value(http, "heron_http_requests_total", route="unmatched", status="404") >= 1
    # A 400 is counted as a 400, under its route, never as a success.
    assert value(http, "heron_http_requests_total", route="/v1/chat/completions", status="400")
    assert not [
        s
        for s in http
        if s.labels.get("route") == "/v1/chat/completions" and s.labels["status"] == "200"
    ]
    # The template, not the path: no stream id reaches a label.
    assert value(http, "heron_http_requests_total", route="/chat/stream/{stream_id}") >= 1
    assert not [s for s in http if "nosuchstream" in s.labels.get("route", "")]
    latency = families["heron_http_request_duration_seconds"]
    assert (
        value(latency, "heron_http_request_duration_seconds_bucket", route="/rpc", le="+Inf") >= 2
    )
    rpc = families["heron_rpc_calls"]
    assert value(rpc, "heron_rpc_calls_total", method="search.query", outcome="ok") >= 1
    assert value(rpc, "heron_rpc_calls_total", method="search.query", outcome="error") >= 1
    assert value(families["heron_search_duration_seconds"], "heron_search_duration_seconds_count")
    assert value(families["heron_index_records"], "heron_index_records", namespace="tiny") > 0


def test_build_process_and_platform_collectors(served: Served) -> None:
    with served.client() as client:
        families = scrape(client)
    (build,) = families["heron_build_info"]
    assert build.name == "heron_build_info" and build.labels["version"] == __version__
    assert build.labels["python"].count(".") == 2
    assert value(families["process_resident_memory_bytes"], "process_resident_memory_bytes") > 0
    assert families["python_info"]


def test_job_states_are_read_at_scrape_time(served: Served) -> None:
    jobs = open_jobs(served.settings)  # the server's job store (its jobs.db)
    try:  # queued past Jobs.create, which wants a workspace this home has not
        job = jobs.store.create("what changed?", "", "read_only", False)
    finally:
        jobs.close()
    with served.client() as client:
        families = scrape(client)
    states = {s.labels["state"]: s.value for s in families["heron_jobs"]}
    assert sum(states.values()) >= 1 and set(states) <= set(STATES), (job, states)


def test_watchdog_check_status_is_read_from_its_report(served: Served) -> None:
    report = served.home / "watchdog-latest.json"
    checks = [{"name": "http", "ok": True}, {"name": "disk", "ok": False}]
    report.write_text(json.dumps({"checks": checks, "ok": False}))
    try:
        with served.client() as client:
            families = scrape(client)
            report.write_text("{half written")
            broken = scrape(client)
    finally:
        report.unlink()
    status = families["heron_watchdog_check_status"]
    assert value(status, "heron_watchdog_check_status", check="http") == 1
    assert value(status, "heron_watchdog_check_status", check="disk") == 0
    assert "heron_watchdog_check_status" not in broken


@pytest.fixture(scope="module")
def chatty(heron_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A server whose models are on the replay, retrying once, without waiting; its agent
    calls the best tool on every first turn (threshold -1)."""
    models = tmp_path_factory.mktemp("metrics") / "models.yml"
    with pytest.MonkeyPatch.context() as mp, serve() as replay:
        mp.setenv("TEST_OPENAI_KEY", KEY)
        models.write_text(MODELS.format(url=replay.url))
        settings = Settings(
            llm={"models_file": models, "retries": 1, "backoff": 0}, agent={"tool_threshold": -1.0}
        )
        with running(create_app(settings)) as (url, server):
            served = Served(url, heron_home / "home", settings, server)
            served.replay = replay  # type: ignore[attr-defined]
            yield served


def test_model_tokens_retries_fallbacks_and_answer_stages(chatty: Served) -> None:
    replay: ChatServer = chatty.replay  # type: ignore[attr-defined]
    replay.fail("gpt-test", 500, times=2)  # retried once, then given up for gpt2
    message = {"role": "user", "content": "find skills that fit the task: roll back"}
    body = {"model": "gpt", "messages": [message], "max_tokens": 8}
    with chatty.client() as client:
        answer = client.post("/v1/chat/completions", json=body)
        assert answer.status_code == 200, answer.text
        families = scrape(client)
    tokens = families["heron_model_tokens"]
    # A turn's tokens (every step's) are filed under the alias that gave its answer.
    model = answer.json()["model"]
    usage = answer.json()["usage"]
    assert (
        value(tokens, "heron_model_tokens_total", model=model, direction="in")
        == (usage["prompt_tokens"])
    )
    assert (
        value(tokens, "heron_model_tokens_total", model=model, direction="out")
        == (usage["completion_tokens"])
    )
    assert value(families["heron_model_retries"], "heron_model_retries_total", model="gpt") == 1
    fallbacks = families["heron_model_fallbacks"]
    assert value(fallbacks, "heron_model_fallbacks_total", model="gpt") == 1
    tools = families["heron_tool_calls"]
    assert value(tools, "heron_tool_calls_total", tool="search_skills", outcome="ok") == 1
    stages = families["heron_answer_stage_duration_seconds"]
    assert value(stages, "heron_answer_stage_duration_seconds_count", stage="retrieval") >= 1
    answers = families["heron_model_answer_duration_seconds"]
    assert value(answers, "heron_model_answer_duration_seconds_count", model=model) == 1


def test_each_app_has_its_own_registry() -> None:
    one, two = Metrics(), Metrics()
    one.observe_http("/health", "GET", 200, 0.001)
    assert b'route="/health"' in one.render()
    assert b'route="/health"' not in two.render()
