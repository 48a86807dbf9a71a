"""Nothing secret is shown, nothing unbounded is counted: every setting value is redacted
before the doctor, ``heron info`` or ``ops.doctor`` shows it (passwords inside URLs too),
and a metric label only takes values from a bounded set (a tool name a model invented is
``unknown``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from heron.about import about
from heron.agent.answer import Answer, ToolUse
from heron.agent.triage import Triage
from heron.core.chat import Usage
from heron.ops.doctor import doctor
from heron.redact import redact
from heron.server.features.metrics import UNKNOWN, Metrics
from heron.settings import Settings

#: Each secret in a setting of its own, in every form a URL or a list can carry one.
SECRETS = {
    "interventions_tts_url": ("https://tts:pw-tts-4821@tts.example/v1", "pw-tts-4821"),
    "library_rerank_url": ("http://:pw-rerank-9913@rerank.lan:8080", "pw-rerank-9913"),
    "remote_embed_url": ("https://embed.example/v1?api_key=k-embed-7730", "k-embed-7730"),
    "database_url": ("postgresql://heron:pw-db-5512@db.lan/heron", "pw-db-5512"),
    "remote_embed_api_key": ("plain-key-6604", "plain-key-6604"),
    "library_rerank_api_key": ("rerank-key-3319", "rerank-key-3319"),
    "api_token": ("token-value-for-the-test-0123456789", "token-value-for-the-test-0123456789"),
    "interventions_alert_urls": (["tgram://bot-token-2281/chat"], "bot-token-2281"),
    "tools_commands": (["git", "deploy --password=pw-cmd-1177"], "pw-cmd-1177"),
}


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("HERON_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HERON_CONFIG", raising=False)
    for name, (value, _) in SECRETS.items():  # as a deployment sets them
        shown = value if isinstance(value, str) else json.dumps(value)
        monkeypatch.setenv(f"HERON_{name.upper()}", shown)
    return Settings()


def test_no_setting_shows_its_secret(settings: Settings) -> None:
    public = json.dumps(settings.public())
    report = json.dumps(doctor(settings, checks=["settings"], offline=True).to_dict())
    # heron info also opens the store: on a PostgreSQL URL, one that is reachable.
    info = json.dumps(about(settings.model_copy(update={"database_url": None})))
    for name, (_, secret) in SECRETS.items():
        for shown in (public, report, info):
            assert secret not in shown, name
    # What is not secret stays readable: the host, the user, the scheme.
    table = settings.public()
    assert table["interventions_tts_url"] == "https://tts:[REDACTED]@tts.example/v1"
    assert table["database_url"] == "postgresql://heron:[REDACTED]@db.lan/heron"
    assert table["tools_commands"][0] == "git"


def test_a_url_without_a_user_name_is_masked_too() -> None:
    assert redact("http://:pw-only@host:8080/x") == "http://:[REDACTED]@host:8080/x"


def answer(*tools: str, model: str) -> Answer:
    uses = [ToolUse(id=f"c{n}", name=name, arguments={}, ok=True) for n, name in enumerate(tools)]
    return Answer(
        answer="",
        citations=[],
        tools=uses,
        skills=[],
        usage=Usage(1, 1),
        timings={},
        session_id="s",
        model=model,
        triage=Triage("chat", True, "test"),
    )


def series(metrics: Metrics, family: str) -> list[dict[str, str]]:
    text = metrics.render().decode()
    found = next(f for f in text_string_to_metric_families(text) if f.name == family)
    return [s.labels for s in found.samples if s.name.endswith("_total")]


def test_metric_labels_come_from_bounded_sets() -> None:
    metrics = Metrics(tools=lambda: {"search_docs"}, models=lambda: {"gpt"})
    invented = [f"tool_{n}_the_model_made_up" for n in range(50)]
    metrics.observe_answer(answer("search_docs", *invented, model="gpt"), 0.1)
    metrics.observe_answer(answer(model="a-model-a-client-named"), 0.1)
    metrics.observe_broker("retry", "another-unknown-model")
    tools = series(metrics, "heron_tool_calls")
    assert {s["tool"] for s in tools} == {"search_docs", UNKNOWN}
    assert next(s for s in tools if s["tool"] == UNKNOWN) == {"tool": UNKNOWN, "outcome": "ok"}
    models = {s["model"] for s in series(metrics, "heron_model_tokens")}
    assert models == {"gpt", UNKNOWN}
    assert {s["model"] for s in series(metrics, "heron_model_retries")} == {UNKNOWN}
