"""The learning loop for real (``heron.interventions.learn``): dismissed ``collision``
cards in a room step the kind's channels down and its cooldown up, accepted ones step it
back, every change is recorded with its reason, and an operator's reset undoes it; the
research-overlap card carries its ``ping_teammate`` action."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from heron.errors import NotFound
from heron.interventions import Intervention, Interventions
from heron.notify import Channels
from tests.interventions.conftest import COLLISION
from tests.interventions.test_service import listener  # noqa: F401 (a webhook on loopback)


def channels_of(service: Interventions, item: Intervention) -> list[str]:
    service.wait()
    return sorted({d.channel for d in service.get(item.id).deliveries})


def decide(service: Interventions, n: int, outcome: str, room: str = "team") -> Intervention:
    """``n`` collision cards in ``room``, each given ``outcome`` and then resolved."""
    for i in range(n):
        sent = service.raise_("collision", f"collision:{outcome}{i}.py", room, facts=COLLISION)
        assert sent.delivered, sent
        service.outcome(sent.id, outcome, "alice")
        service.resolve(room, sent.key)
    return sent


def test_dismissals_step_a_kind_down_and_accepts_step_it_back(
    make_service: Callable[..., Interventions],
    listener: str,  # noqa: F811
) -> None:
    hook = Channels.parse([f"json://{listener}/hook"])
    service = make_service(interventions={"cooldown": 1.0}, channels=hook)
    first = decide(service, 1, "dismiss")
    assert channels_of(service, first) == ["card", "message"]  # a warning: card and message

    decide(service, 19, "dismiss")  # 20 dismissed: two full blocks of 10
    (learned,) = service.learned("team")
    assert (learned.kind, learned.step, learned.accepted, learned.dismissed) == (
        "collision",
        2,
        0,
        0,
    )
    changes = service.changes("team")
    assert [(c.from_step, c.to_step, c.by) for c in changes] == [
        (1, 2, "learning"),
        (0, 1, "learning"),
    ]
    assert changes[0].reason == (
        "10 of the last 10 outcomes were dismissals (at least 80%): one step down"
    )
    stepped = service.raise_("collision", "collision:now.py", "team", facts=COLLISION)
    assert stepped.step == 2 and channels_of(service, stepped) == ["card"]  # no message now
    # The kind's cooldown grew: 1 s at the policy, 4 s two steps down.
    time.sleep(1.2)
    held = service.raise_("collision", "collision:later.py", "team", facts=COLLISION)
    assert held.status == "suppressed_cooldown"
    # Other rooms and other kinds learned nothing.
    elsewhere = service.raise_("collision", "collision:x.py", "other", facts=COLLISION)
    assert elsewhere.step == 0 and channels_of(service, elsewhere) == ["card", "message"]
    service.resolve("team", stepped.key)

    decide(service, 20, "accept")  # two blocks of accepts: back at the policy
    assert service.learned("team")[0].step == 0
    back = service.raise_("collision", "collision:back.py", "team", facts=COLLISION)
    assert back.step == 0 and channels_of(service, back) == ["card", "message"]
    assert [c.to_step for c in service.changes("team")][:2] == [0, 1]
    service.resolve("team", back.key)

    # Reversible by the operator, and recorded so.
    decide(service, 10, "dismiss")
    assert service.learned("team")[0].step == 1
    reset = service.reset("team", "collision", "ops")
    assert reset.step == 0
    latest = service.changes("team")[0]
    assert (latest.from_step, latest.to_step, latest.by) == (1, 0, "ops")
    assert latest.reason == "reset by ops to the policy as written"


def test_what_a_person_asked_for_never_learns(service: Interventions) -> None:
    for i in range(10):
        sent = service.raise_("notice", f"n{i}", "team", "critical", {"message": "hi"})
        service.outcome(sent.id, "dismiss", "bob")
        service.resolve("team", sent.key)
    assert service.learned("team")[0].step == 1  # a notice learns
    for i in range(10):
        sent = service.raise_(
            "watchdog_incident", f"watchdog:c{i}", "team", facts={"check": "c", "detail": "d"}
        )
        service.outcome(sent.id, "dismiss", "bob")
    assert {item.kind for item in service.learned("team")} == {"notice"}  # the watchdog does not


def test_the_research_overlap_card_offers_to_ping_the_teammate(service: Interventions) -> None:
    facts = {
        "researcher": "bob",
        "topic": "LiveKit agents",
        "source": "docs.livekit.io",
        "editor": "alice",
        "file": "livekit.py",
    }
    card = service.raise_("research_overlap", "research_overlap:bob:alice", "team", "info", facts)
    (ping,) = card.actions
    assert (ping.label, ping.method, ping.params) == (
        "Ping bob",
        "interventions.ping_teammate",
        {"teammate": "bob", "about": "livekit.py"},
    )
    with pytest.raises(NotFound, match="not in room 'team'"):
        service.ping("team", "alice", "bob", "livekit.py")  # nobody to deliver it to yet
    service.join("team", "bob")  # the page: the card is the ping
    sent = service.ping("team", "alice", "bob", "livekit.py")
    assert (sent.kind, sent.status, sent.text) == (
        "ping",
        "delivered",
        "alice asks bob to sync up on livekit.py.",
    )
