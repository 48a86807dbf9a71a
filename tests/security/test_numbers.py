"""Every number from a request is parsed one strict way (ASCII digits, in range) and a bad
one is a 400 naming the field, never a 500: ``?after=``, ``Last-Event-ID`` (the jobs', the
interventions' and the chat streams'), an intervention's id, the sign-in form."""

from __future__ import annotations

import httpx
import pytest

from heron.errors import InputError
from heron.server.http.numbers import MAX_ID, whole
from tests.security.served import bare_home
from tests.server import conftest as server
from tests.server.conftest import Served

#: The edge needs a server, not data: a home with nothing indexed.
heron_home = bare_home
served = server.served

#: Each was a 500: int() refuses superscripts str.isdigit() passes, takes other scripts'
#: digits, stops at 4,300 digits; SQLite overflows past 64 bits.
BAD = ["\u00b2", "\u0661\u0662", "9" * 5000, str(MAX_ID + 1), "-1", "+1", " 1", "1_0", "", "x"]


@pytest.mark.parametrize("text", BAD)
def test_whole_takes_ascii_digits_in_range_only(text: str) -> None:
    with pytest.raises(InputError, match="after must be a whole number"):
        whole(text, "after")


def test_whole_reads_what_it_should() -> None:
    assert whole("0", "n") == 0 and whole(str(MAX_ID), "n") == MAX_ID
    assert whole("007", "n") == 7
    with pytest.raises(InputError, match="from 1 to"):
        whole("0", "n", low=1)


def refused(response: httpx.Response) -> str:
    assert response.status_code == 400, (response.status_code, response.text[:300])
    return response.json()["error"]["message"]


def header(text: str) -> dict[str, bytes]:
    """``Last-Event-ID: text``, sent as UTF-8 bytes (httpx sends str headers as ASCII)."""
    return {"last-event-id": text.encode()}


@pytest.mark.parametrize("text", [b for b in BAD if b])
def test_stream_positions_are_400s(served: Served, text: str) -> None:
    with served.client() as client:
        job = client.get("/jobs/no-such-job/events/stream", params={"after": text})
        assert "after" in refused(job)
        cards = client.get("/interventions/stream", params={"room": "team", "after": text})
        assert "after" in refused(cards)
        if text != text.strip():
            return  # HTTP trims a header's blanks: " 1" arrives as "1"
        cards = client.get("/interventions/stream?room=team", headers=header(text))
        assert "Last-Event-ID" in refused(cards)
        job = client.get("/jobs/no-such-job/events/stream", headers=header(text))
        assert "Last-Event-ID" in refused(job)


def test_a_chat_streams_position_is_a_400(served: Served) -> None:
    with served.client() as client:
        started = client.post("/chat/stream", json={"message": ""})  # refused: no question
        assert started.status_code == 400
        # A stream that exists is needed for the number to be read: start one cheaply.
        with client.stream(
            "POST", "/chat/stream", json={"message": "hi", "answer": "extractive"}
        ) as live:
            sid = next(line for line in live.iter_lines() if line.startswith("id: "))[4:]
            sid = sid.partition(":")[0]
        for text in ("\u00b2", "9" * 5000, "-1"):
            resumed = client.get(f"/chat/stream/{sid}", headers=header(f"{sid}:{text}"))
            assert "Last-Event-ID" in refused(resumed)


@pytest.mark.parametrize("card", ["\u00b2", "9" * 30, str(MAX_ID + 1), "0", "-3"])
def test_an_intervention_id_is_a_400(served: Served, card: str) -> None:
    body = {"outcome": "accept", "by": "alice"}
    with served.client() as client:
        response = client.post(f"/interventions/{card}/outcome", json=body)
    assert "intervention id" in refused(response)


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("interventions.outcome", {"id": MAX_ID + 1, "outcome": "accept", "by": "alice"}),
        ("jobs.events", {"id": "no-such-job", "after": 10**30}),
        ("library.passage", {"library": "tiny", "page": "p", "first": 1, "last": 10**30}),
    ],
)
def test_a_json_rpc_number_past_the_stores_range_is_invalid_params(
    served: Served, method: str, params: dict[str, object]
) -> None:
    # Was an internal error: SQLite's OverflowError past 64 bits.
    error = served.rpc(method, params)["error"]
    assert error["code"] == -32602, error
