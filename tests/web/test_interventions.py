"""Interventions in the page: a raised card appears live and is accepted there; a job's
card turns resolved, without its actions, when the job is confirmed elsewhere, and
confirming it in one page resolves it in every other open page; a stream
the server cuts resumes from the last card, none lost and none repeated."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from shutil import copytree

import pytest

from tests.web.conftest import Heron


def room_of(name: str) -> str:
    return f"web-{name}-{int(time.time() * 1000)}"


def test_a_raised_intervention_appears_live_and_is_accepted(heron: Heron, page, shoot) -> None:  # type: ignore[no-untyped-def]
    room = room_of("accept")
    page.goto(f"{heron.url}/interventions?room={room}")
    page.locator("#watching[data-state=open]").wait_for()
    page.locator("#cards .empty").wait_for()  # a neutral empty state first
    page.fill("#by", "carol")
    heron.rpc("interventions.raise", kind="notice", key="web-test", room=room, severity="critical",
              facts={"message": "The <b>build</b> on main is red."})  # fmt: skip
    card = page.locator("#cards article.card").first
    card.wait_for()
    assert card.locator(".card-text").inner_text() == "The <b>build</b> on main is red."
    assert "sev-critical" in card.get_attribute("class")
    assert card.locator(".sev-name").inner_text() == "Critical"
    shoot("interventions-card")
    card.get_by_role("button", name="Accept").focus()
    page.keyboard.press("Enter")
    page.locator("#cards article[data-outcome=accept]").wait_for()
    assert "Accepted by carol" in card.locator(".card-out").inner_text()
    assert card.locator("button").count() == 0  # decided: nothing more to do on it
    stored = heron.rpc("interventions.list", room=room)
    assert [(i["outcome"], i["outcome_by"]) for i in stored] == [("accept", "carol")]  # type: ignore[index, union-attr]
    page.reload()  # replayed as decided, not with its buttons again
    page.locator("#cards article[data-outcome=accept]").wait_for()
    assert page.locator("#cards article button").count() == 0
    assert not page.errors, page.errors


def test_a_job_card_turns_resolved_when_the_job_is_confirmed_elsewhere(
    heron: Heron, page, shoot
) -> None:  # type: ignore[no-untyped-def]
    prompt = f"deploy the web release {int(time.time() * 1000)}"
    page.goto(f"{heron.url}/interventions?room=default")
    page.locator("#watching[data-state=open]").wait_for()
    job = heron.rpc(
        "jobs.create", prompt=prompt, risk_level="deploy_allowed", requires_confirmation=True
    )
    card = page.locator("#cards article.card", has_text=prompt)
    card.wait_for(timeout=30_000)
    assert (
        card.get_attribute("data-state") == "active"
        and card.locator(".card-actions button").count() >= 2
    )
    heron.rpc("jobs.confirm", id=job["id"], by="dave")  # type: ignore[index]
    page.locator("#cards article.card[data-state=resolved]", has_text=prompt).wait_for(
        timeout=30_000
    )
    assert card.locator(".card-actions").count() == 0
    shoot("interventions-resolved")
    assert not page.errors, page.errors


def test_confirming_a_job_in_one_page_resolves_its_card_in_every_other(heron: Heron, page) -> None:  # type: ignore[no-untyped-def]
    prompt = f"deploy the confirmed release {int(time.time() * 1000)}"
    other = page.context.new_page()
    for tab in (page, other):
        tab.goto(f"{heron.url}/interventions?room=default")
        tab.locator("#watching[data-state=open]").wait_for()
    job = heron.rpc(
        "jobs.create", prompt=prompt, risk_level="deploy_allowed", requires_confirmation=True
    )
    cards = [tab.locator("#cards article.card", has_text=prompt) for tab in (page, other)]
    for card in cards:
        card.wait_for(timeout=30_000)
    page.fill("#by", "erin")
    cards[0].get_by_role("button", name="Confirm").click()
    for tab in (page, other):
        tab.locator("#cards article.card[data-state=resolved]", has_text=prompt).wait_for(
            timeout=30_000
        )
    assert [card.locator(".card-actions").count() for card in cards] == [0, 0]
    assert heron.rpc("jobs.get", id=job["id"])["confirmed_by"] == "erin"  # type: ignore[index]
    (stored,) = [i for i in heron.rpc("interventions.list", room="default")  # type: ignore[union-attr]
                 if i["facts"].get("job_id") == job["id"]]  # type: ignore[index]  # fmt: skip
    assert (stored["outcome"], stored["outcome_by"]) == ("accept", "erin")
    assert not page.errors, page.errors


@pytest.fixture
def own(web_home: Path, serve, tmp_path_factory: pytest.TempPathFactory) -> Heron:  # type: ignore[no-untyped-def]
    """A server of this test's own, over a copy of the shared home: it is killed."""
    root = tmp_path_factory.mktemp("web-cut")
    copytree(web_home, root, dirs_exist_ok=True, ignore=lambda *_: ["serve-*.log"])
    return serve(root)


def test_a_stream_the_server_cuts_resumes_with_no_card_lost_or_repeated(
    own: Heron, serve, page, shoot
) -> None:  # type: ignore[no-untyped-def]
    room = room_of("cut")
    page.goto(f"{own.url}/interventions?room={room}")
    page.locator("#watching[data-state=open]").wait_for()
    # Each more severe than the last, so the room's cooldown lets every one out.
    for n, severity in ((1, "info"), (2, "warning")):
        own.rpc("interventions.raise", kind="notice", key=f"cut-{n}", room=room, severity=severity,
                facts={"message": f"card {n}"})  # fmt: skip
    page.locator("#cards article.card").nth(1).wait_for()
    own.proc.send_signal(signal.SIGKILL)  # the connection drops mid-stream
    own.proc.wait()
    page.locator("#watching[data-state=retrying]").wait_for()
    again = serve(own.root, port=int(own.url.rsplit(":", 1)[1]))
    again.rpc("interventions.raise", kind="notice", key="cut-3", room=room, severity="critical",
              facts={"message": "card 3"})  # fmt: skip
    page.locator("#cards article.card", has_text="card 3").wait_for(timeout=30_000)
    assert page.locator("#watching").get_attribute("data-state") == "open"
    texts = page.locator("#cards .card-text").all_inner_texts()
    assert sorted(texts) == ["card 1", "card 2", "card 3"]
    assert page.locator("#cards").get_attribute("data-received") == "3"  # no card sent twice
    shoot("interventions-resumed")
    assert not [e for e in page.errors if "ERR_" not in e and "Failed to load" not in e], (
        page.errors
    )
