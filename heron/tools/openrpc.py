"""A JSON-RPC service described by an OpenRPC document, as a tool source.

In mcp.json, beside MCP servers::

    {"mcpServers": {
        "osis": {"openrpc": "http://127.0.0.1:9000/rpc"},
        "billing": {"openrpc": "/srv/billing/openrpc.json", "url": "http://billing:8080/rpc"}}}

``openrpc`` is the document: a URL that answers ``rpc.discover`` (the OpenRPC service
discovery method; then the calls go to that URL too) or a JSON file (then ``url`` is the
endpoint, else the document's first ``servers`` URL). Each method becomes a tool named
``<server>.<method>``: its description the method's summary and description, its input
schema an object of the method's ``params`` (by name: each param's ``schema`` and
``description``, ``required`` where the param says so), ``$ref``s to
``components/schemas`` resolved. A call posts ``{"jsonrpc": "2.0", "method", "params"}``
with the arguments by name; a JSON-RPC error comes back as the tool's error, the result
as its structured content.

A service is untrusted like an MCP server: its tools are ``execute`` unless a method
says otherwise with ``x-safety`` (``read``, ``write``) or MCP's hints
(``x-mcp-annotations``: ``readOnlyHint``, ``destructiveHint``), and the rest of
``heron.tools.mcp_client``'s limits apply (``parse_tool``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx

from heron.core.errors import ServerError, ToolCallError

#: Nesting of ``$ref``s followed before a schema is given up as circular.
MAX_REF_DEPTH = 32
#: Bytes of an OpenRPC document read.
MAX_DOCUMENT = 4 << 20


def is_url(location: str) -> bool:
    return location.startswith(("http://", "https://"))


async def discover(
    location: str, headers: Mapping[str, str], timeout: float
) -> tuple[dict[str, Any], str | None]:
    """The OpenRPC document at ``location`` (``rpc.discover`` at a URL, or a file) and
    the endpoint it names (its first ``servers`` URL), if any."""
    if is_url(location):
        body = {"jsonrpc": "2.0", "id": 1, "method": "rpc.discover"}
        async with httpx.AsyncClient(headers=dict(headers), timeout=timeout) as http:
            answer = (await http.post(location, json=body)).raise_for_status().json()
        if not isinstance(answer, Mapping) or not isinstance(answer.get("result"), Mapping):
            raise ServerError(f"{location} answered rpc.discover without an OpenRPC document.")
        document = dict(answer["result"])
    else:
        path = Path(location)
        if path.stat().st_size > MAX_DOCUMENT:
            raise ServerError(f"{path} is over {MAX_DOCUMENT:,} bytes: not read as OpenRPC.")
        document = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(document, dict) or not isinstance(document.get("methods"), list):
        raise ServerError(f"{location} is no OpenRPC document (it has no 'methods' list).")
    servers = document.get("servers")
    first = servers[0].get("url") if isinstance(servers, list) and servers else None
    return document, first if isinstance(first, str) else None


def _resolve(schema: Any, document: Mapping[str, Any], depth: int = 0) -> Any:
    """``schema`` with its ``#/components/...`` references replaced by what they name."""
    if depth > MAX_REF_DEPTH:
        return {}
    if isinstance(schema, list):
        return [_resolve(item, document, depth + 1) for item in schema]
    if not isinstance(schema, Mapping):
        return schema
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = document
        for part in ref[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, Mapping) else {}
        return _resolve(target, document, depth + 1)
    return {k: _resolve(v, document, depth + 1) for k, v in schema.items()}


def definitions(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each method of ``document`` as an MCP tool definition (for ``parse_tool``)."""
    out = []
    for method in document.get("methods", []):
        if not isinstance(method, Mapping) or not isinstance(method.get("name"), str):
            continue
        method = _resolve(method, document)
        properties, required = {}, []
        for param in method.get("params") or []:
            if not isinstance(param, Mapping) or not isinstance(param.get("name"), str):
                continue
            schema = dict(param.get("schema") or {})
            if param.get("description") and "description" not in schema:
                schema["description"] = param["description"]
            properties[param["name"]] = schema
            if param.get("required"):
                required.append(param["name"])
        text = " ".join(str(method.get(k) or "") for k in ("summary", "description")).strip()
        out.append(
            {
                "name": method["name"],
                "description": text,
                "inputSchema": {"type": "object", "properties": properties, "required": required},
                "annotations": _annotations(method),
            }
        )
    return out


def _annotations(method: Mapping[str, Any]) -> dict[str, Any]:
    hints = method.get("x-mcp-annotations")
    if isinstance(hints, Mapping):
        return dict(hints)
    safety = method.get("x-safety")
    if safety == "read":
        return {"readOnlyHint": True}
    if safety == "write":
        return {"readOnlyHint": False, "destructiveHint": False}
    return {}


async def call(
    url: str, method: str, arguments: dict[str, Any], headers: Mapping[str, str], timeout: float
) -> dict[str, Any]:
    """``method`` at ``url`` with ``arguments`` by name: its result as an MCP tool result
    (``content`` and ``structuredContent``); its JSON-RPC error as ``ToolCallError``."""
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": arguments}
    async with httpx.AsyncClient(headers=dict(headers), timeout=timeout) as http:
        answer = (await http.post(url, json=body)).json()
    if not isinstance(answer, Mapping):
        raise ServerError(f"{url} answered {method!r} with no JSON-RPC response.")
    error = answer.get("error")
    if isinstance(error, Mapping):
        raise ToolCallError(
            f"{method!r} failed: {error.get('message', 'no message')} "
            f"(JSON-RPC error {error.get('code')})"
        )
    result = answer.get("result")
    text = json.dumps(result, ensure_ascii=False)
    out: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if isinstance(result, dict):
        out["structuredContent"] = result
    return out
