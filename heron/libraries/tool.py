"""``search_docs``: library search as an agent tool, its JSON schema and its call.

``docs_tool(search)`` is the tool to register (``heron.wiring`` does, over
``search_docs`` on the store it shares): the schema below with any ``search`` behind it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from heron.core.tools import Handler, Tool, argument
from heron.errors import InputError
from heron.libraries.search import search
from heron.settings import Settings
from heron.store import Store

SEARCH_DOCS: dict[str, Any] = {
    "name": "search_docs",
    "description": (
        "Search the indexed documentation libraries. Returns the pages that answer the "
        "query, each with the section, a snippet, a citation '(library, collection/page)' "
        "and the source with line numbers. Cite the citation when you use a result."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "A question or keywords."},
            "library": {"type": "string", "description": "Only this library."},
            "collection": {"type": "string", "description": "Only this collection."},
            "top_k": {"type": "integer", "minimum": 1, "maximum": 50, "default": 5},
        },
        "required": ["query"],
        "additionalProperties": False,
    },
}


#: ``search(arguments)`` for ``search_docs``: the call's arguments in, results out.
DocsSearch = Callable[[dict[str, Any]], list[dict[str, Any]]]


def docs_tool(search: DocsSearch) -> tuple[Tool, Handler]:
    """``search_docs`` with this module's schema, answered by ``search``."""

    def handler(a: dict[str, Any]) -> list[dict[str, Any]]:
        argument(a, "query")  # the one required argument, checked whatever the backend
        return search(a)

    tool = Tool(
        SEARCH_DOCS["name"],
        SEARCH_DOCS["description"],
        SEARCH_DOCS["input_schema"],
        tags=("docs",),
    )
    return tool, handler


def search_docs(arguments: dict[str, Any], store: Store, settings: Settings) -> dict[str, Any]:
    """Run the tool: ``{"query": "..."}`` -> ``{"results": [{...}, ...]}``."""
    unknown = set(arguments) - set(SEARCH_DOCS["input_schema"]["properties"])
    if unknown:
        raise InputError(f"search_docs got unknown arguments: {', '.join(sorted(unknown))}.")
    query = arguments.get("query")
    if not isinstance(query, str) or not query.strip():
        raise InputError("search_docs needs a non-empty 'query' string.")
    results = search(
        query,
        store,
        library=arguments.get("library"),
        collection=arguments.get("collection"),
        top_k=int(arguments.get("top_k", 5)),
        settings=settings,
    )
    return {"results": [r.to_dict() for r in results]}
