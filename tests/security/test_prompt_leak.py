"""No prompt text ever leaves Heron, through any door (issue 44).

SmolLM2-135M, the bundled model, often gives its prompt back: ``/v1`` answered a client
with ``[1] (acme, it/vpn) lines 9-13 ...`` and Heron's closing instruction. Every
``tool_choice`` form and answer mode goes through ``/v1`` (the OpenAI SDK, plain and
streamed), JSON-RPC ``agent.chat``, MCP's ``ask`` (the MCP SDK) and the page's
``/chat/stream``, against a real ``heron serve`` on loopback, twice: with a model that
gives back everything it was sent, every time (the OpenAI replay server,
tests/llm_servers.py), and with the bundled model itself. Whatever comes back, answers,
tool calls, notes, errors, stream events, holds no sentence of Heron's instructions and
no passage header."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import openai
import pytest
from mcp.client.client import Client

from heron.agent.followup import REWRITE_SYSTEM
from heron.agent.prompt import LEAD, RULES, WITH_PASSAGES, WITH_TOOLS
from heron.libraries import add_library, index_library
from heron.settings import Settings
from heron.store import open_store
from tests import llm_servers
from tests.llm_servers import KEY, ONE_MODEL
from tests.security.served import serve
from tests.server.conftest import Served, heron_env

PAGES = {
    "it/vpn.md": (
        "# VPN\n\nThe company VPN connects your laptop to the office network from anywhere.\n\n"
        "## Connecting\n\nInstall the GlobalProtect client from the self-service portal. Sign "
        "in with your company email and your password, then approve the push notification "
        "on your phone.\n\n## Troubleshooting\n\nIf the VPN does not connect, restart the "
        "GlobalProtect client and check your internet connection. When it still fails, "
        "open a ticket with the IT help desk and include the error code.\n"
    ),
    "it/laptop.md": (
        "# Laptops\n\nEvery new employee gets a laptop on their first day. Laptops are "
        "replaced every three years.\n\n## Lost laptop\n\nReport a lost or stolen laptop to "
        "the IT help desk at once, so it can be locked remotely.\n"
    ),
}
QUESTION = "I lost my laptop and the VPN does not connect, what do I do?"
#: A follow-up, for the rewrite into a standalone question (``heron.agent.followup``):
#: long enough that a rewrite the length of its instructions would be taken.
FOLLOW_UP = [
    {"role": "user", "content": "How do I connect to the VPN from the office network?"},
    {"role": "assistant", "content": "Install the GlobalProtect client. [1]"},
    {
        "role": "user",
        "content": "And what should I do when that one still does not connect after I "
        "restart the client and check the connection?",
    },
]
TICKET = {
    "type": "function",
    "function": {
        "name": "create_ticket",
        "description": "Open a ticket with the IT help desk.",
        "parameters": {
            "type": "object",
            "properties": {"summary": {"type": "string", "maxLength": 60}},
            "required": ["summary"],
        },
    },
}
#: ``tool_choice`` as a client sends it: no tools at all, tools and no choice, each form.
CHOICES: dict[str, dict[str, Any]] = {
    "no tools": {},
    "absent": {"tools": [TICKET]},
    "auto": {"tools": [TICKET], "tool_choice": "auto"},
    "none": {"tools": [TICKET], "tool_choice": "none"},
    "required": {"tools": [TICKET], "tool_choice": "required"},
    "named": {
        "tools": [TICKET],
        "tool_choice": {"type": "function", "function": {"name": "create_ticket"}},
    },
}
MODES = ["extractive", "generative"]

#: Heron's own instructions, sentence by sentence: its rules, the extractive answer's lead
#: line and a follow-up's rewrite (a capable model's calls).
INSTRUCTIONS = (RULES, WITH_TOOLS, WITH_PASSAGES, LEAD, REWRITE_SYSTEM)
SENTENCES = [s for text in INSTRUCTIONS for s in re.split(r"(?<=[.:])\s+", text)]
#: A passage header, written independently of the guard's own pattern: ``(library,
#: page) lines a-b``, with or without its ``[n]``.
HEADER = re.compile(r"\([^()\n]+,[^()\n]+\)\s*lines?\s+\d+\s*[-\u2013]\s*\d+", re.IGNORECASE)


def _squeeze(text: str) -> str:
    return re.sub(r"\W+", "", text.lower())


def leaks(text: str) -> list[str]:
    """The prompt text Heron wrote that ``text`` holds."""
    squeezed = _squeeze(text)
    return [s for s in SENTENCES if _squeeze(s) in squeezed] + HEADER.findall(text)


def strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value, keys too."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def verbatim(body: dict[str, Any], api: bool) -> tuple[str, list]:
    """The replay giving back everything it was sent: as its text, and as the
    arguments of a call it is made to make."""
    sent = "\n\n".join(str(m.get("content") or "") for m in body["messages"])
    _, calls = ANSWER_FOR(body, api)
    return ("", [(c, name, {"summary": sent}) for c, name, _ in calls]) if calls else (sent, [])


ANSWER_FOR = llm_servers._answer


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A HERON_HOME with the library ``acme`` indexed."""
    tmp = tmp_path_factory.mktemp("leak")
    for name, text in PAGES.items():
        (tmp / "docs" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / "docs" / name).write_text(text)
    with pytest.MonkeyPatch.context() as mp:
        for name, value in heron_env(tmp).items():
            mp.setenv(name, value)
        settings = Settings()
        add_library("acme", str(tmp / "docs"), settings)
        with open_store(settings) as store:
            assert index_library("acme", store, settings=settings).error is None
    yield tmp


@pytest.fixture(scope="module", params=["replay", "bundled"])
def served(request: pytest.FixtureRequest, home: Path) -> Iterator[Served]:
    """``heron serve`` with the replay server giving its prompt back, then with the
    bundled model (HERON_AGENT_MAX_TOKENS 48: room for an echo, and a forced call)."""
    env = {"HERON_AGENT_MAX_TOKENS": "48", "HERON_LLM_RETRIES": "0"}
    if request.param == "bundled":
        with serve(home, env) as server:
            yield server
        return
    with llm_servers.serve() as chat, pytest.MonkeyPatch.context() as mp:
        mp.setattr(llm_servers, "_answer", verbatim)
        models = home / "replay-models.yml"
        models.write_text(ONE_MODEL.format(url=chat.url))
        with serve(home, {**env, "HERON_MODELS_FILE": str(models), "TEST_OPENAI_KEY": KEY}) as s:
            yield s


def v1(served: Served, choice: str, mode: str, *, stream: bool) -> tuple[str, dict]:
    """Everything ``/v1`` gave back, as text, and the answer's Heron fields."""
    client = openai.OpenAI(base_url=f"{served.url}/v1", api_key="unused", max_retries=0)
    request = {
        "model": "default",
        "messages": [{"role": "user", "content": QUESTION}],
        "extra_body": {"answer": mode},
        **CHOICES[choice],
    }
    try:
        if not stream:
            done = client.chat.completions.create(**request)
            return "\n".join(strings(done.model_dump())), done.model_extra or {}
        chunks = list(client.chat.completions.create(stream=True, **request))
    except openai.APIError as exc:  # a refusal (400), a model that would not (502)
        return f"{exc}\n" + "\n".join(strings(exc.body)), {}
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    dumped = "\n".join(s for c in chunks for s in strings(c.model_dump()))
    return f"{text}\n{dumped}", chunks[-1].model_extra or {}


def rpc(served: Served, mode: str) -> tuple[str, dict]:
    reply = served.rpc("agent.chat", {"message": QUESTION, "answer": mode})
    return "\n".join(strings(reply)), reply.get("result") or {}


def page(served: Served, mode: str) -> tuple[str, dict]:
    """The page's stream: every event's data, and the tokens joined as the page shows them."""
    body = {"message": QUESTION, "answer": mode}
    with served.client() as http:
        lines = http.post("/chat/stream", json=body).text.splitlines()
    events = [json.loads(line[5:]) for line in lines if line.startswith("data:")]
    tokens = "".join(e["text"] for e in events if set(e) == {"text"})
    final = next((e for e in events if "answer" in e and "mode" in e), {})
    return tokens + "\n" + "\n".join(s for e in events for s in strings(e)), final


async def _mcp(url: str) -> list[tuple[str, dict]]:
    seen = []
    async with Client(url) as client:
        for mode in MODES:
            result = await client.call_tool("ask", {"message": QUESTION, "answer": mode})
            texts = [c.text for c in result.content if c.type == "text"]
            structured = result.structured_content or {}
            seen.append(("\n".join([*texts, *strings(structured)]), structured))
    return seen


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("choice", list(CHOICES))
def test_v1_gives_back_no_prompt_text(served: Served, choice: str, mode: str, stream: bool) -> None:
    text, _ = v1(served, choice, mode, stream=stream)
    assert leaks(text) == [], text


def test_a_follow_up_gives_back_no_prompt_text(served: Served) -> None:
    client = openai.OpenAI(base_url=f"{served.url}/v1", api_key="unused", max_retries=0)
    done = client.chat.completions.create(model="default", messages=FOLLOW_UP)
    text = "\n".join(strings(done.model_dump()))
    assert leaks(text) == [], text


def test_json_rpc_mcp_and_the_page_give_back_no_prompt_text(served: Served) -> None:
    answers = [rpc(served, mode) for mode in MODES] + [page(served, mode) for mode in MODES]
    answers += anyio.run(_mcp, f"{served.url}/mcp")
    for text, answer in answers:
        assert leaks(text) == [], text
        assert answer.get("answer"), answer  # an answer came, not an error


# The replay alone: it gives its prompt back every time, the bundled model only sometimes.
@pytest.mark.parametrize("served", ["replay"], indirect=True)
def test_the_replay_s_echo_is_replaced_by_the_quotes_at_every_door(served: Served) -> None:
    """The replay gives its prompt back every time: each generated answer was one the
    guard withheld, and the quotes stand in its place (what the doors gave back is
    checked above)."""
    answers = [rpc(served, "generative")[1], page(served, "generative")[1]]
    for answer in answers:
        assert (answer["mode"], answer["fallback"]) == ("extractive", "echoed_prompt"), answer
        assert any("echoing" in note for note in answer["notes"]), answer["notes"]
    for stream in (False, True):  # /v1 says it beside choices: mode and finish_detail
        answer = v1(served, "auto", "generative", stream=stream)[1]
        assert (answer["mode"], answer["finish_detail"]) == ("extractive", "echoed_prompt")
    text, _ = v1(served, "required", "generative", stream=False)
    assert "gave back Heron's own prompt in the arguments of its call" in text
