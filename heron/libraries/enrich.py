"""Questions a page answers, generated once by a model and shipped with the library.

The cache is one TOML file per page, ``<library>/.ai/<page id>.toml``::

    # Questions this page answers; regenerated when content_hash no longer matches.
    content_hash = "9f2c..."   # SHA-256 of the text the indexer reads (Page.content_hash)
    model = "gpt-4o-mini"

    [[qa]]
    question = "How do I grow a PersistentVolumeClaim?"
    answer = "Edit the claim's spec.resources.requests.storage; the class must allow it."
    anchor = "expanding-persistent-volumes-claims"   # optional: the section that answers

A cache entry is used only when its ``content_hash`` equals the page's, so a library that
ships its ``.ai/`` folder is indexed with no model calls, and an edited page is asked
again. The hash is taken on the parsed text (``Page.indexed_text``), the same
representation the index stores: hashing the raw file instead would re-run the model
for every front-matter or whitespace edit that changes nothing indexed.
"""

from __future__ import annotations

import json
import logging
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from heron.errors import HeronError
from heron.libraries.parse import Page

log = logging.getLogger("heron.libraries")
CACHE_DIR = ".ai"


@dataclass(frozen=True)
class QA:
    question: str
    answer: str = ""
    anchor: str = ""


@runtime_checkable
class Enricher(Protocol):
    """Turns a page into the questions it answers (the LLM broker implements this).

    ``questions(page)`` returns a few ``QA`` pairs for ``page``, reading only
    ``page.indexed_text()``; it may return ``[]``. ``model_id`` names the model, and is
    written to the cache. Errors should be ``heron.errors.HeronError``s: the indexer
    logs them and indexes the page without questions.
    """

    model_id: str

    def questions(self, page: Page) -> list[QA]: ...


def cache_path(root: Path, page_id: str) -> Path:
    return root / CACHE_DIR / f"{page_id}.toml"


def read_cache(root: Path, page: Page) -> list[QA] | None:
    """The cached pairs if the cache file is there, readable and for this exact text."""
    path = cache_path(root, page.id)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        log.warning("ignoring the Q&A cache %s: %s", path, exc)
        return None
    if data.get("content_hash") != page.content_hash:
        return None
    pairs = data.get("qa", [])
    if not isinstance(pairs, list):
        return None
    return [
        QA(str(p["question"]), str(p.get("answer", "")), str(p.get("anchor", "")))
        for p in pairs
        if isinstance(p, dict) and str(p.get("question", "")).strip()
    ]


def _toml_string(value: str) -> str:
    # A JSON string is a valid TOML basic string once non-ASCII stays as is.
    return json.dumps(value, ensure_ascii=False)


def write_cache(root: Path, page: Page, pairs: list[QA], model_id: str) -> None:
    lines = [
        "# Questions this page answers; regenerated when content_hash no longer matches.",
        f"content_hash = {_toml_string(page.content_hash)}",
        f"model = {_toml_string(model_id)}",
    ]
    for pair in pairs:
        lines += ["", "[[qa]]", f"question = {_toml_string(pair.question)}"]
        lines += [f"answer = {_toml_string(pair.answer)}"] if pair.answer else []
        lines += [f"anchor = {_toml_string(pair.anchor)}"] if pair.anchor else []
    path = cache_path(root, page.id)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def page_questions(root: Path, page: Page, enricher: Enricher | None) -> tuple[list[QA], int]:
    """``(pairs, model calls)``: from the cache when it matches, else from ``enricher``."""
    cached = read_cache(root, page)
    if cached is not None or enricher is None:
        return cached or [], 0
    try:
        pairs = enricher.questions(page)
    except HeronError as exc:
        log.warning("no questions for %s: %s", page.id, exc)
        return [], 1
    try:
        write_cache(root, page, pairs, enricher.model_id)
    except OSError as exc:  # a read-only checkout still gets its questions indexed
        log.warning("cannot write the Q&A cache for %s: %s", page.id, exc)
    return pairs, 1
