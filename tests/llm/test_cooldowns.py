"""Cooldowns through the broker, against the loopback replay: a hung primary costs one
timeout, the requests after it go straight to the fallback, and after the cooldown the
primary is probed once."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from heron.llm import Broker, ChatRequest, CoolingDown, Message, NoModelAvailable
from heron.llm.broker import cooldowns_file
from heron.llm.config import parse_table
from heron.llm.cooldowns import Cooldowns
from heron.settings import Settings
from tests.llm.conftest import MODELS
from tests.llm_servers import ChatServer
from tests.postgres import pg_server, pg_url  # noqa: F401 (fixtures of the PostgreSQL side)

MakeBroker = Callable[..., Broker]
HELLO = ChatRequest((Message("user", "hello there"),))
TIMEOUT, COOLDOWN = 0.3, 0.6


def sent(chat: ChatServer, model: str) -> int:
    return sum(1 for r in chat.requests if r["body"].get("model") == model)


def timed(broker: Broker) -> tuple[str, float]:
    started = time.monotonic()
    done = broker.complete(HELLO)
    return done.model, time.monotonic() - started


def test_a_hung_primary_costs_one_timeout_then_is_probed_once(
    make_broker: MakeBroker, chat: ChatServer
) -> None:
    chat.delay = 3.0  # far past the timeout: the primary hangs
    chat.fail("gpt-test", "slow", times=2)  # the first request, and the probe
    events: list[tuple[str, str]] = []
    broker = make_broker(llm={"timeout": TIMEOUT, "cooldown": COOLDOWN, "retries": 2})
    broker.observer = lambda event, alias: events.append((event, alias))

    first = timed(broker)
    assert first[0] == "claude" and first[1] >= TIMEOUT
    assert sent(chat, "gpt-test") == 1  # one timeout, not 1 + llm_retries
    cooled = time.monotonic()
    following = [timed(broker) for _ in range(3)]
    assert all(model == "claude" for model, _ in following)
    assert sent(chat, "gpt-test") == 1  # skipped while it cools down
    print(
        f"\nhung primary: first request {first[1]:.3f} s, the next ones "
        + ", ".join(f"{s:.3f}" for _, s in following)
        + " s"
    )
    assert max(s for _, s in following) < TIMEOUT / 2

    time.sleep(max(0.0, COOLDOWN - (time.monotonic() - cooled)) + 0.05)
    # The probe hangs; a request meanwhile still skips the primary rather than queue on it.
    probe: list[tuple[str, float]] = []
    prober = threading.Thread(target=lambda: probe.append(timed(broker)))
    prober.start()
    time.sleep(TIMEOUT / 3)
    assert timed(broker)[0] == "claude"
    prober.join()
    assert probe[0][0] == "claude" and probe[0][1] >= TIMEOUT
    assert sent(chat, "gpt-test") == 2  # probed exactly once
    assert ("probe", "gpt") in events and events.count(("cooldown", "gpt")) == 2

    time.sleep(COOLDOWN + 0.05)
    assert timed(broker)[0] == "gpt"  # the probe answers: the primary is back
    assert sent(chat, "gpt-test") == 3
    (row,) = [r for r in broker.health() if r["alias"] == "gpt"]
    assert row["cooling"] is False and row["cooldowns"] == 2


def test_5xx_cool_a_model_after_allowed_fails(make_broker: MakeBroker, chat: ChatServer) -> None:
    chat.fail("gpt-test", 500, times=9)
    broker = make_broker(llm={"retries": 0, "allowed_fails": 2, "cooldown": 60})
    for _ in range(3):  # three failures a minute: the third is over allowed_fails
        assert broker.complete(HELLO).model == "claude"
    assert sent(chat, "gpt-test") == 3
    assert broker.complete(HELLO).model == "claude"
    assert sent(chat, "gpt-test") == 3
    (row,) = [r for r in broker.health() if r["alias"] == "gpt"]
    assert row["cooling"] and row["reason"] == "ProviderDown" and row["failures"] == 3
    saved = cooldowns_file(broker.settings.home).read_text()
    assert '"alias": "gpt"' in saved and '"cooling": true' in saved


def test_every_model_cooling_fails_at_once_with_the_wait(
    make_broker: MakeBroker, chat: ChatServer
) -> None:
    chat.fail("gpt-test", 429, **{"retry-after": "30"})
    chat.fail("claude-test", 429, **{"retry-after": "20"})
    broker = make_broker(llm={"max_wait": 0.1})
    with pytest.raises(NoModelAvailable) as caught:
        broker.complete(HELLO)
    assert caught.value.http_status == 429 and caught.value.retry_after == 20
    started = time.monotonic()
    with pytest.raises(NoModelAvailable) as cooling:
        broker.complete(HELLO)
    assert time.monotonic() - started < 0.1 and len(chat.requests) == 2
    assert all(isinstance(e, CoolingDown) for e in cooling.value.errors)
    assert cooling.value.http_status == 429 and 19 < (cooling.value.retry_after or 0) <= 20


def test_a_check_probes_a_cooling_model(make_broker: MakeBroker, chat: ChatServer) -> None:
    chat.fail("gpt-test", 429, **{"retry-after": "600"})
    broker = make_broker(llm={"max_wait": 0.1})
    assert broker.complete(HELLO).model == "claude"
    assert broker.check("gpt")["ok"]  # heron models check calls it all the same
    assert broker.complete(HELLO).model == "gpt"  # and its answer ended the cooldown


def test_the_record_is_shared_by_the_brokers_of_a_process(chat: ChatServer) -> None:
    """A reload's new broker, or a job's, skips what the old one found cooling."""
    from heron.settings import Settings
    from tests.llm.conftest import MODELS

    shared = Cooldowns()
    table = parse_table(MODELS.format(url=chat.url))
    settings = Settings(llm={"max_wait": 0.1})
    chat.fail("gpt-test", 429, **{"retry-after": "600"})
    assert Broker(table, settings, cooldowns=shared).complete(HELLO).model == "claude"
    assert Broker(table, settings, cooldowns=shared).complete(HELLO).model == "claude"
    assert sent(chat, "gpt-test") == 1
    assert Broker(table, settings, cooldowns=Cooldowns()).complete(HELLO).model == "gpt"


def test_a_cooldown_of_zero_turns_cooling_off(make_broker: MakeBroker, chat: ChatServer) -> None:
    chat.fail("gpt-test", 429, times=2, **{"retry-after": "600"})
    broker = make_broker(llm={"max_wait": 0.1, "cooldown": 0})
    assert broker.complete(HELLO).model == "claude"
    assert broker.complete(HELLO).model == "claude"
    assert sent(chat, "gpt-test") == 2  # asked each time


def test_replicas_share_a_cooldown_and_claim_one_probe(
    chat: ChatServer,
    home: Path,
    pg_url: str,  # noqa: F811
) -> None:
    """Two replicas (two brokers, each with its own process record) on one PostgreSQL
    (issue 47): the primary hangs on a; b's first request skips it at once; when the
    cooldown ends, requests on both at the same moment probe it once; once the probe
    answers, both use it again."""
    chat.delay = 3.0
    chat.fail("gpt-test", "slow", times=2)  # a's first request, and the one probe
    settings = Settings(
        database_url=pg_url,
        llm={
            "backoff": 0.01,
            "max_wait": 0.3,
            "timeout": TIMEOUT,
            "cooldown": COOLDOWN,
            "retries": 2,
        },
    )
    table = parse_table(MODELS.format(url=chat.url))
    a, b = (Broker(table, settings, cooldowns=Cooldowns()) for _ in range(2))
    first = timed(a)
    assert first[0] == "claude" and first[1] >= TIMEOUT
    cooled = time.monotonic()
    model, took = timed(b)
    assert model == "claude" and took < TIMEOUT, took  # b never waited the timeout
    assert sent(chat, "gpt-test") == 1

    time.sleep(max(0.0, COOLDOWN - (time.monotonic() - cooled)) + 0.05)
    answers: list[tuple[str, float]] = []
    racing = [threading.Thread(target=lambda s=s: answers.append(timed(s))) for s in (a, b)]
    for thread in racing:
        thread.start()
    for thread in racing:
        thread.join()
    assert [m for m, _ in answers] == ["claude", "claude"]
    assert sent(chat, "gpt-test") == 2  # one probe among both replicas (it hung)

    time.sleep(COOLDOWN + 1.1)  # past the second cooldown and b's cached read
    assert timed(b)[0] == "gpt"  # the probe answers: the primary is back
    assert timed(a)[0] == "gpt"
    assert sent(chat, "gpt-test") in (3, 4)
    a.close()
    b.close()
