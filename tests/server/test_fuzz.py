"""Malformed JSON-RPC bodies, generated: the server answers each with JSON-RPC (never a
500) and is still alive afterwards."""

from __future__ import annotations

import json

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.server.conftest import Served

#: Read-only methods; the ones that write (library.add, tools.call ...) stay out of fuzzing.
READ_ONLY = ["search.query", "library.list", "library.status", "skills.search", "skills.show",
             "skills.status", "tools.list", "tools.route", "rpc.discover", "no.such"]  # fmt: skip

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
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
bodies = (
    st.binary(max_size=200)
    | json_values.map(lambda v: json.dumps(v).encode())
    | requests.map(lambda r: json.dumps(r).encode())
    | st.lists(requests, max_size=4).map(lambda r: json.dumps(r).encode())
)


def check_answer(response: httpx.Response) -> None:
    assert response.status_code in (200, 204), response.text
    if response.status_code == 204:
        return
    answers = response.json()
    for answer in answers if isinstance(answers, list) else [answers]:
        assert answer["jsonrpc"] == "2.0"
        assert ("result" in answer) != ("error" in answer)
        if "error" in answer:
            assert answer["error"]["code"] != -32603, answer  # no internal errors either


def test_malformed_bodies_never_get_a_500(served: Served) -> None:
    with served.client() as client:

        @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(bodies)
        def run(body: bytes) -> None:
            check_answer(
                client.post("/rpc", content=body, headers={"content-type": "application/json"})
            )

        run()
        assert client.get("/health").status_code == 200
