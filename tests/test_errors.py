"""Every Heron error as each door answers it: a golden table, so moving the mapping
cannot change what a client sees.

For each ``HeronError`` subclass in ``heron`` (every module imported, so every class is
found; keyed by its name, which clients see, not by its module, which may move) the test
reads, through the doors themselves: the HTTP status, OpenAI ``type`` and ``Retry-After``
of ``heron_error``; the JSON-RPC code and ``data`` of a method raising it;
the MCP code of a refused resource or prompt. Errors whose answer depends on the instance
(a provider's status, a key's wait) are pinned once per case in ``CASES``.

A new error class needs no row here: it is checked against the rules every row obeys
(``test_a_new_error_gets_a_full_row``). Add one when its row is worth pinning.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

import heron
from heron.errors import HeronError
from heron.keys import Forbidden, OverLimit
from heron.llm.budgets import OverBudget
from heron.llm.errors import BadRequest, CoolingDown, NoModelAvailable, ProviderDown, RateLimited
from heron.server.doors.mcp import _refused
from heron.server.doors.rpc import Method, Params, Registry, RpcError
from heron.server.http.replies import heron_error

#: Each class's row: HTTP status, OpenAI ``type`` and ``Retry-After`` (``heron_error``);
#: JSON-RPC code and ``data.retry_after`` (``data.type`` is always the class's name); the
#: MCP code of a refusal. ``-``: none. A key's refusal is sampled with a 7 s wait.
GOLDEN = """
AuthError         502 server_error          - -32000 - -32602
BadRequest        400 invalid_request_error - -32000 - -32602
Blocked           502 server_error          - -32000 - -32602
ConditionError    400 invalid_request_error - -32002 - -32602
ConfigError       400 invalid_request_error - -32002 - -32602
ContextTooLong    400 invalid_request_error - -32000 - -32602
CoolingDown       502 server_error          - -32000 - -32602
DatabaseBusy      502 server_error          - -32006 - -32602
DatabaseCorrupt   502 server_error          - -32006 - -32602
DatabaseReadOnly  502 server_error          - -32006 - -32602
EnrichError       502 server_error          - -32000 - -32602
Forbidden         403 permission_error      - -32010 - -32010
Gone              502 server_error          - -32000 - -32602
HeronError        502 server_error          - -32000 - -32602
IllegalTransition 400 invalid_request_error - -32001 - -32602
IndexBusy         502 server_error          - -32000 - -32602
InputError        400 invalid_request_error - -32001 - -32602
Invalid           400 invalid_request_error - -32001 - -32602
JobError          502 server_error          - -32000 - -32602
JobInputError     400 invalid_request_error - -32001 - -32602
JobNotFound       404 invalid_request_error - -32004 - -32602
LibraryRemoved    502 server_error          - -32000 - -32602
ModelError        502 server_error          - -32003 - -32602
ModelNotAllowed   403 permission_error      - -32010 - -32010
NameTaken         400 invalid_request_error - -32001 - -32602
NamespaceMismatch 502 server_error          - -32005 - -32602
NoModelAvailable  502 server_error          - -32000 - -32602
NotFound          404 invalid_request_error - -32004 - -32602
OverBudget        429 budget_exceeded       7 -32029 7 -32029
OverLimit         429 rate_limit_error      7 -32029 7 -32029
OwnTimeout        502 server_error          - -32000 - -32602
PathRefused       502 server_error          - -32000 - -32602
ProgramFailed     502 server_error          - -32000 - -32602
ProgramRefused    400 invalid_request_error - -32001 - -32602
ProviderDown      502 server_error          - -32000 - -32602
ProviderError     502 server_error          - -32000 - -32602
ProviderTimeout   502 server_error          - -32000 - -32602
RateLimited       429 rate_limit_error      - -32007 - -32602
Refused           502 server_error          - -32000 - -32602
RemoteModelError  502 server_error          - -32003 - -32602
RequestError      400 invalid_request_error - -32001 - -32602
SchemaTooLarge    400 invalid_request_error - -32001 - -32602
ServerError       502 server_error          - -32000 - -32602
SkillFileError    400 invalid_request_error - -32001 - -32602
StoreError        502 server_error          - -32006 - -32602
SummaryRefused    502 server_error          - -32000 - -32602
SyncError         502 server_error          - -32000 - -32602
ToolCallError     502 server_error          - -32000 - -32602
ToolError         502 server_error          - -32000 - -32602
ToolInputError    400 invalid_request_error - -32001 - -32602
UnknownTool       502 server_error          - -32000 - -32602
Unreadable        502 server_error          - -32000 - -32602
UploadRefused     400 invalid_request_error - -32001 - -32602
VoiceError        502 server_error          - -32000 - -32602
YAMLRefused       400 invalid_request_error - -32001 - -32602
"""


def _cases() -> dict[str, HeronError]:
    """The errors whose answer depends on the instance, not only on the class."""
    waiting, down = RateLimited("a", "429", retry_after=2.5), ProviderDown("b", "down")
    return {
        "rate_limited_waiting": waiting,
        "rate_limited": RateLimited("a", "429"),
        "cooled_by_429s": CoolingDown("a", "cooling", 3.2, rate_limited=True),
        "cooled_by_failures": CoolingDown("a", "cooling", 0.4, rate_limited=False),
        "chain_all_429": NoModelAvailable("a", [waiting, RateLimited("b", "429", 1.5)]),
        "chain_all_429_one_unknown": NoModelAvailable("a", [waiting, RateLimited("b", "x")]),
        "chain_all_refused": NoModelAvailable("a", [BadRequest("b", "no")]),
        "chain_mixed": NoModelAvailable("a", [waiting, down]),
        "key_over_rpm": OverLimit("ci", "60 requests per 60 s", 12),
        "budget_in_money": OverBudget("key:ci", "$1.00 per 1d", 3600, message="over"),
        "key_without_scope": Forbidden("ci", "jobs"),
    }


#: The rows of ``_cases``, as ``GOLDEN``'s.
CASES = """
rate_limited_waiting      429 rate_limit_error      3    -32007 2.5  -32602
rate_limited              429 rate_limit_error      -    -32007 -    -32602
cooled_by_429s            429 rate_limit_error      4    -32007 3.2  -32602
cooled_by_failures        503 service_unavailable   1    -32007 0.4  -32602
chain_all_429             429 rate_limit_error      2    -32007 1.5  -32602
chain_all_429_one_unknown 429 rate_limit_error      -    -32007 -    -32602
chain_all_refused         400 invalid_request_error -    -32000 -    -32602
chain_mixed               502 server_error          -    -32000 -    -32602
key_over_rpm              429 rate_limit_error      12   -32029 12   -32029
budget_in_money           429 budget_exceeded       3600 -32029 3600 -32029
key_without_scope         403 permission_error      -    -32010 -    -32010
"""

#: ``rpc.discover``'s ``components.errors``, in order.
OPENRPC_ERRORS = (
    '{"-32001": {"code": -32001, "message": "InputError"}, '
    '"-32002": {"code": -32002, "message": "ConfigError"}, '
    '"-32003": {"code": -32003, "message": "ModelError"}, '
    '"-32004": {"code": -32004, "message": "NotFound"}, '
    '"-32005": {"code": -32005, "message": "NamespaceMismatch"}, '
    '"-32006": {"code": -32006, "message": "StoreError"}, '
    '"-32010": {"code": -32010, "message": "Forbidden"}, '
    '"-32029": {"code": -32029, "message": "OverLimit"}, '
    '"-32000": {"code": -32000, "message": "HeronError"}}'
)


def _subclasses(cls: type[HeronError]) -> Iterator[type[HeronError]]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def heron_errors() -> dict[str, type[HeronError]]:
    """Every ``HeronError`` class of ``heron``, by its name, which clients read
    (``data.type``, OpenAI's ``code``), so no two may share it. ``__main__`` runs the CLI:
    the one module left out."""
    for found in pkgutil.walk_packages(heron.__path__, "heron."):
        if not found.name.endswith("__main__"):
            importlib.import_module(found.name)
    every = dict.fromkeys([HeronError, *_subclasses(HeronError)])  # a diamond's class once
    found = [c for c in every if c.__module__.startswith("heron.")]
    classes = {c.__name__: c for c in found}
    assert len(classes) == len(found), "two error classes share a name"
    return classes


def sample(cls: type[HeronError]) -> HeronError:
    """An instance of ``cls`` with its class's defaults: built without ``__init__``, whose
    arguments differ from class to class; a key's refusal always carries its wait."""
    exc = cls.__new__(cls)
    exc.args = ("Something went wrong; do this.",)
    if isinstance(exc, OverLimit):
        exc.retry_after = 7
    return exc


def rpc_error(exc: HeronError) -> RpcError:
    """The error a JSON-RPC method raising ``exc`` answers."""
    registry = Registry()

    def fail(_: object, rt: object) -> None:
        raise exc

    registry.add(Method("fail", fail, Params, "Fails.", reach="server"))
    with pytest.raises(RpcError) as raised:
        anyio.run(registry.call, "fail", None)
    return raised.value


def row(exc: HeronError) -> str:
    """``exc`` as each door answers it, as a row of ``GOLDEN`` (less the name); what
    every door says the same way is checked here: the message, the class name as
    OpenAI's ``code`` and JSON-RPC's ``data.type``."""
    name = type(exc).__name__
    reply = heron_error(exc)
    body = json.loads(bytes(reply.body))["error"]
    assert body == {"message": str(exc), "type": body["type"], "param": None, "code": name}
    rpc = rpc_error(exc)
    wait = rpc.data.get("retry_after", "-")
    assert rpc.message == str(exc) and rpc.data == {"type": name} | _waits(wait)
    refused = _refused(exc)
    assert refused.error.message == str(exc)
    cells = (reply.status_code, body["type"], reply.headers.get("retry-after", "-"))
    return " ".join(str(c) for c in (*cells, rpc.code, wait, refused.error.code))


def _waits(wait: Any) -> dict[str, Any]:
    return {} if wait == "-" else {"retry_after": wait}


def table(text: str) -> dict[str, str]:
    """A golden table's rows by name, their cells joined by one space."""
    rows = (line.split() for line in text.strip().splitlines())
    return {name: " ".join(cells) for name, *cells in rows}


@pytest.fixture(scope="module")
def classes() -> dict[str, type[HeronError]]:
    return heron_errors()


def test_every_error_class_answers_as_it_did(classes: dict[str, type[HeronError]]) -> None:
    golden = table(GOLDEN)
    missing = sorted(set(golden) - set(classes))
    assert not missing, f"gone or renamed: {missing}; update GOLDEN"
    assert {name: row(sample(classes[name])) for name in golden} == golden


@pytest.mark.parametrize("case", sorted(table(CASES)))
def test_errors_whose_answer_depends_on_the_instance(case: str) -> None:
    assert row(_cases()[case]) == table(CASES)[case]


def test_a_new_error_gets_a_full_row(classes: dict[str, type[HeronError]]) -> None:
    for name in sorted(set(classes) - set(table(GOLDEN))):
        status, kind, _, code, _, mcp = row(sample(classes[name])).split()
        assert 400 <= int(status) < 600 and kind, name
        assert -32099 <= int(code) <= -32000 and int(mcp) < 0, name


def test_the_openrpc_document_lists_the_application_errors() -> None:
    errors = Registry().openrpc()["components"]["errors"]
    assert json.dumps(errors) == OPENRPC_ERRORS
