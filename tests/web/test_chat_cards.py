"""Cards in the conversation (issue 49): the chat page shows the cards raised in its
conversation's room while it is open, a job's card among them (the job made in that
room, as a turn's delegate_job makes it), with its buttons; a critical card's voice
plays once, after the person's first gesture, with its transcript shown, and not at all
once they muted it; between turns, with nobody typing, the conversation's job ends and a
detector's card (two people editing one file) arrives, and the next turn answers from
what the job found, its source a link to the job; at 1280 and 390 px, with no horizontal
scroll."""

from __future__ import annotations

import time

import pytest

from tests.web.conftest import Heron
from tests.web.test_chat import seed


def room_of(name: str) -> str:
    return f"chat-{name}-{int(time.time() * 1000)}"


def opened(heron: Heron, page, room: str) -> None:  # type: ignore[no-untyped-def]
    page.goto(f"{heron.url}/?room={room}")
    page.locator(".talk[data-cards=open]").wait_for()


@pytest.mark.parametrize("width", [1280, 390])
def test_a_job_card_raised_in_the_conversations_room_shows_in_the_chat(
    heron: Heron,
    page,
    width: int,  # type: ignore[no-untyped-def]
) -> None:
    page.set_viewport_size({"width": width, "height": 860})
    room = room_of(f"job-{width}")
    heron.rpc(
        "interventions.raise", kind="notice", key="before", room=room, facts={"message": "old"}
    )
    opened(heron, page, room)
    prompt = f"deploy the chat release {room}"
    job = heron.rpc("jobs.create", prompt=prompt, risk_level="deploy_allowed", room=room)
    card = page.locator("#log li.card-item article.card", has_text=prompt)
    card.wait_for(timeout=30_000)
    assert page.locator("#log li.card-item", has_text="old").count() == 0  # the pane's history
    assert card.get_attribute("data-state") == "active"
    card.get_by_role("button", name="Confirm").click()
    page.locator("#log article.card[data-state=resolved]", has_text=prompt).wait_for()
    assert heron.rpc("jobs.get", id=job["id"])["confirmed_by"] == "web"  # type: ignore[index]
    assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")
    assert not page.errors, page.errors


@pytest.mark.parametrize("width", [1280, 390])
def test_a_critical_card_speaks_once_after_a_gesture_unless_muted(
    heron: Heron,
    page,
    width: int,  # type: ignore[no-untyped-def]
) -> None:
    page.set_viewport_size({"width": width, "height": 860})
    room = room_of(f"voice-{width}")
    opened(heron, page, room)

    def critical(check: str) -> dict:
        return heron.rpc(  # type: ignore[return-value]
            "interventions.raise", kind="watchdog_incident", key=f"watchdog:{check}", room=room,
            severity="critical", facts={"check": check, "detail": "503 from /health"},
        )  # fmt: skip

    first = critical("api")
    assert first["audio_url"], first
    card = page.locator(f'#log article.card[data-id="{first["id"]}"]')
    card.wait_for()
    assert card.get_attribute("data-voice") == "waiting"  # no gesture yet: no sound
    transcript = card.locator(".card-transcript")
    assert transcript.is_visible() and first["spoken"] in transcript.inner_text()
    page.locator("#conversation-h").click()  # the person's first gesture
    page.locator(f'#log article.card[data-id="{first["id"]}"][data-voice=played]').wait_for()
    audio = card.locator("audio")
    assert audio.evaluate("a => a.played.length > 0 || !a.paused")  # it was heard
    page.reload()  # heard once: neither replayed in the conversation nor spoken again
    page.locator(".talk[data-cards=open]").wait_for()
    assert page.locator(f'#log article.card[data-id="{first["id"]}"]').count() == 0

    page.get_by_role("button", name="Mute voice").click()
    assert page.locator("#voice").get_attribute("aria-pressed") == "true"
    second = critical("db")
    muted = page.locator(f'#log article.card[data-id="{second["id"]}"]')
    muted.wait_for()
    page.locator("#conversation-h").click()
    assert muted.get_attribute("data-voice") == "muted"
    assert page.evaluate(
        f"document.querySelector('article.card[data-id=\"{second['id']}\"] audio').paused"
    )
    assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")
    assert not page.errors, page.errors


@pytest.mark.parametrize("width", [1280, 390])
def test_a_job_that_ends_and_a_card_raised_between_turns_reach_the_open_chat(
    heron: Heron,
    page,
    width: int,  # type: ignore[no-untyped-def]
) -> None:
    # Nobody types: the conversation's job ends and a detector raises a card in its room,
    # and the open page shows both; the next turn then answers from what the job found.
    page.set_viewport_size({"width": width, "height": 860})
    room = room_of(f"between-{width}")
    sid = seed(heron, "Is main broken?", "I'll check in a background job.")
    page.goto(f"{heron.url}/?room={room}&session={sid}")
    page.locator(".talk[data-cards=open]").wait_for()
    page.locator("li.turn[data-done=true]").wait_for()  # the conversation is open
    job: dict = heron.rpc(  # type: ignore[assignment]
        "jobs.create", prompt=f"check whether main builds ({room})", success_criteria="tests pass",
        session_id=sid, room=room, by="ana",
    )  # fmt: skip
    item = page.locator(f"li.job-item[data-job='{job['id']}'][data-state=completed]")
    item.wait_for(timeout=60_000)
    assert item.locator(".job-verdict").get_attribute("data-ok") == "true"
    edited = f"between-{width}.py"
    for person in ("alice", "bob"):  # two people edit one file, in their editors
        heron.rpc("people.activity", room=room, person=person, kind="edit", path=edited)
    page.locator("#log li.card-item article.card", has_text=edited).wait_for()

    page.fill("#message", "What did the check find?")
    page.keyboard.press("Enter")
    answer = page.locator("li.turn[data-done=true]").nth(1)
    answer.wait_for(timeout=60_000)
    assert f'The job "{job["prompt"]}" finished, and its checks passed.' in answer.inner_text()
    marker = answer.locator(f"a.cite[data-job='{job['id']}']")
    assert marker.get_attribute("href") == f"/jobs?job={job['id']}"
    assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")
    answer.locator(f"a.cite-source[data-job='{job['id']}']").click()  # opens the job
    page.wait_for_url(f"**/jobs?job={job['id']}")
    page.locator("#job-fields .f-id", has_text=job["id"]).wait_for()
    assert not page.errors, page.errors
