"""Generated attacks on ``/rpc`` and ``/v1``: arbitrary bytes, JSON values, deep nesting,
batches past the limit, non-finite and huge numbers, odd content types; and on every
route, its query parameters, headers and ids, with numbers of every shape. Every reply must
be strict JSON (no bare ``NaN``/``Infinity``), never a 5xx, and JSON-RPC answers never an
internal error; the server must still be alive afterwards.

Methods that write (``library.add``, ``tools.call`` ...) stay out, and no body reaches the
model: ``/v1`` bodies name models that do not exist, or fail validation first.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.security.test_http import ROUTES
from tests.server import conftest as server
from tests.server.conftest import Served

# The real server over an indexed HERON_HOME, as tests/server use it (module fixtures).
heron_home = server.heron_home
served = server.served

#: Read-only methods, and one that does not exist.
READ_ONLY = ["search.query", "library.list", "library.status", "skills.search", "skills.show",
             "skills.status", "tools.list", "tools.route", "rpc.discover", "jobs.list",
             "jobs.get", "no.such"]  # fmt: skip
#: Number spellings a JSON parser may choke on or turn into ``inf``.
NUMBERS = ["NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1e-400", "-0", "0.0e0",
           "1" * 400, "-" + "9" * 4299, "1" * 4301, "1.5e308", "2e308"]  # fmt: skip
CONTENT_TYPES = ["application/json", "application/json; charset=utf-8", "text/plain",
                 "application/x-www-form-urlencoded", "multipart/form-data; boundary=b",
                 "application/json; charset=latin-1", "application/jsonp", "", "*/*",
                 "APPLICATION/JSON;CHARSET=UTF-8", "application/json;;", "text/json"]  # fmt: skip
JSON = "application/json"
EXAMPLES = settings(
    deadline=None,
    database=None,  # nothing written into the checkout
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(10**300), max_value=10**300)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
requests = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "1.0", 2]) | json_values,
        "id": st.integers() | st.text(max_size=5) | json_values,
        "method": st.sampled_from(READ_ONLY) | json_values,
        "params": json_values,
    },
)


def batch(calls: int) -> str:
    return json.dumps([{"jsonrpc": "2.0", "id": i, "method": "library.list"} for i in range(calls)])


def nest(levels: int, inner: str, opener: str) -> str:
    """``inner`` wrapped ``levels`` deep in arrays (``[``) or objects (``{``)."""
    if opener == "[":
        return "[" * levels + inner + "]" * levels
    return '{"a":' * levels + inner + "}" * levels


deep_bodies = st.builds(
    nest,
    st.integers(min_value=1, max_value=20_000),
    st.sampled_from(["1", '{"jsonrpc": "2.0", "id": 1, "method": "rpc.discover"}', ""]),
    st.sampled_from(["[", "{"]),
)
odd_numbers = st.builds(
    lambda n, where: {
        "id": f'{{"jsonrpc": "2.0", "id": {n}, "method": "library.list"}}',
        "params": f'{{"jsonrpc": "2.0", "id": 1, "method": "search.query", "params": [{n}]}}',
        "batch": f'[{{"jsonrpc": "2.0", "id": {n}, "method": "library.list"}}]',
    }[where],
    st.sampled_from(NUMBERS),
    st.sampled_from(["id", "params", "batch"]),
)
rpc_bodies = (
    st.binary(max_size=200)
    | json_values.map(json.dumps)
    | requests.map(json.dumps)
    | st.lists(requests, max_size=4).map(json.dumps)
    | st.integers(min_value=99, max_value=102).map(batch)  # around the batch limit
    | deep_bodies
    | odd_numbers
)


def not_json(name: str) -> None:
    raise AssertionError(f"a bare {name} in a reply: not JSON")


def check(response: httpx.Response) -> Any:
    """Strict JSON, no 5xx; the parsed body (``None`` for 204)."""
    assert response.status_code < 500, response.text
    if response.status_code == 204 or response.is_redirect:  # e.g. /v1/models/. -> /v1/models
        assert not response.content
        return None
    assert response.headers["content-type"].startswith("application/json"), response.text
    return json.loads(response.content, parse_constant=not_json)


def check_rpc(response: httpx.Response) -> None:
    body = check(response)
    for answer in body if isinstance(body, list) else [] if body is None else [body]:
        assert answer["jsonrpc"] == "2.0"
        assert ("result" in answer) != ("error" in answer)
        if "error" in answer:
            assert answer["error"]["code"] != -32603, answer  # no internal errors either


def send(client: httpx.Client, method: str, path: str, body: Any, content_type: str) -> Any:
    content = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
    headers = {"content-type": content_type} if content_type else {}
    return client.request(method, path, content=content, headers=headers)


def test_rpc_bodies(served: Served) -> None:
    with served.client() as client:

        @settings(EXAMPLES, max_examples=2500)
        @given(rpc_bodies)
        def run(body: str | bytes) -> None:
            check_rpc(send(client, "POST", "/rpc", body, JSON))

        run()
        assert client.get("/health").status_code == 200


def test_rpc_content_types(served: Served) -> None:
    with served.client() as client:

        @settings(EXAMPLES, max_examples=400)
        @given(st.sampled_from(CONTENT_TYPES) | st.text(max_size=30), requests.map(json.dumps))
        def run(content_type: str, body: str) -> None:
            try:
                response = send(client, "POST", "/rpc", body, content_type)
            except (httpx.LocalProtocolError, UnicodeEncodeError):
                return  # a header httpx itself will not send
            check_rpc(response)

        run()


messages = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            "role": st.sampled_from(["user", "system", "assistant", "tool"]) | json_values,
            "content": st.text(max_size=30)
            | st.lists(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "type": st.sampled_from(["text", "image_url"]) | json_values,
                        "text": json_values,
                    },
                ),
                max_size=3,
            )
            | json_values,
        },
    ),
    max_size=3,
)
#: Models that do not exist (no alias starts so): a body that passes validation is
#: refused before any model runs. An empty name would mean the default model.
no_models = st.text(max_size=12).map(lambda name: f"no-such-{name}")
completions = st.fixed_dictionaries(
    {"model": no_models},
    optional={
        "messages": messages | json_values,
        "stream": st.booleans() | json_values,
        "session_id": st.text(max_size=10) | json_values,
        "library": st.sampled_from(["tiny", "nope"]) | json_values,
        "max_tokens": st.just(1) | json_values,
        "temperature": st.floats(allow_nan=False, allow_infinity=False) | json_values,
        "tools": json_values,
    },
)
v1_bodies = (
    completions.map(json.dumps)
    | json_values.map(json.dumps)
    | st.binary(max_size=100)
    | deep_bodies
    | st.builds(
        lambda n: f'{{"model": "gpt-9", "temperature": {n}, "messages": []}}',
        st.sampled_from(NUMBERS),
    )
)


def test_v1_chat_completions(served: Served) -> None:
    with served.client() as client:

        @settings(EXAMPLES, max_examples=1200)
        @given(v1_bodies, st.sampled_from([JSON, JSON, JSON, "text/plain", ""]))
        def run(body: str | bytes, content_type: str) -> None:
            response = send(client, "POST", "/v1/chat/completions", body, content_type)
            answer = check(response)
            assert response.status_code >= 400 and answer["error"]["message"]

        run()
        assert client.get("/health").status_code == 200


def test_v1_models(served: Served) -> None:
    with served.client() as client:

        @settings(EXAMPLES, max_examples=400)
        @given(st.text(max_size=20), st.sampled_from(["GET", "POST", "PUT", "DELETE"]))
        def run(name: str, method: str) -> None:
            path = f"/v1/models/{quote(name, safe='')}" if name else "/v1/models"
            answer = check(send(client, method, path, b"{}", JSON))
            assert answer is None or "data" in answer or "id" in answer or answer["error"]

        run()


#: Every route (``tests/security/test_http.ROUTES``) but ``POST /doctor``, whose online
#: checks would call the models, with a body that starts nothing (``{}``).
FUZZED = sorted(
    {(method, path.split("?")[0]) for method, path, _ in ROUTES} - {("POST", "/doctor")}
)
#: Query parameters the routes read, and any other name.
PARAMS = ["after", "room", "check", "offline", "next", "library", "page", "v", "first",
          "last", "model", "cursor", "limit"]  # fmt: skip
#: Headers the server reads, each with numbers in it where it takes one.
HEADERS = ["last-event-id", "x-request-id", "accept-language", "cookie", "authorization",
           "if-none-match", "sec-fetch-site", "sec-fetch-mode", "sec-fetch-dest",
           "mcp-session-id", "mcp-protocol-version"]  # fmt: skip
#: What a number from a client may look like: digits Python's int() also takes (other
#: scripts, underscores, signs, blanks), ones str.isdigit() passes and int() does not
#: (superscripts), past 64 bits, past int()'s 4,300 digits, and not numbers at all.
numberish = st.sampled_from(
    ["0", "-1", "1e3", "\u00b2", "\u0661\u0662", "1_000", " 7", "+7", "0x10", "NaN", "inf",
     "9" * 30, "9" * 5000, "18446744073709551616", "9223372036854775808", "abc:1",
     "s:\u00b2", "x:" + "9" * 5000, ""]
) | st.integers().map(str)  # fmt: skip
#: A path segment in place of an id: a number as above, or text.
segments = numberish.filter(bool).map(lambda s: quote(s, safe="")) | st.text(
    st.characters(min_codepoint=48, max_codepoint=122), min_size=1, max_size=8
)


#: The routes with an id in their path, the id's place marked.
WITH_IDS = {
    "/interventions/1/outcome": "/interventions/{}/outcome",
    "/interventions/audio/1.wav": "/interventions/audio/{}",
    "/jobs/abc/events/stream": "/jobs/{}/events/stream",
    "/chat/stream/abc": "/chat/stream/{}",
    "/v1/models/local": "/v1/models/{}",
}


def fill(path: str, segment: str) -> str:
    return WITH_IDS[path].format(segment) if path in WITH_IDS else path


def test_every_routes_query_and_headers(served: Served) -> None:
    # Streams answer their headers at once; nothing is read past the status line there.
    with served.client() as client:

        @settings(EXAMPLES, max_examples=600)
        @given(
            st.sampled_from(FUZZED),
            st.dictionaries(st.sampled_from(PARAMS) | st.text(max_size=6), numberish, max_size=3),
            st.dictionaries(st.sampled_from(HEADERS), numberish, max_size=3),
            segments,
        )
        def run(
            route: tuple[str, str], query: dict[str, str], headers: dict[str, str], segment: str
        ) -> None:
            method, path = route
            body = b"{}" if method == "POST" else None
            try:
                request = client.build_request(
                    method, fill(path, segment), params=query, headers=headers, content=body
                )
                request.headers["content-type"] = JSON
                response = client.send(request, stream=True)
            except (httpx.LocalProtocolError, UnicodeEncodeError, httpx.InvalidURL):
                return  # a request httpx itself will not send
            try:
                if path in ("/doctor", "/ready") and response.status_code == 503:
                    return  # the report of a failing check: the probes' own meaning of 503
                assert response.status_code < 500, (route, query, headers, response.read())
            finally:
                response.close()

        run()
        assert client.get("/health").status_code == 200
