"""Answers as HTML the page may insert: Markdown parsed by markdown-it-py with raw HTML
off (markup in the text comes out escaped), then cleaned by nh3 (ammonia) against an
allowlist, so nothing an answer holds can become script, style, a frame or a remote
load. The two are independent: either alone would keep ``<img src=x onerror=...>`` and
``[x](javascript:...)`` inert.

Citation markers ``[n]`` and ``[n, m]`` (``n`` from 1 to the answer's citation count)
become links the page opens beside the answer; other brackets stay text. Headings move
down two levels, under the page's own ``h1`` and ``h2``::

    >>> render("<b>See</b> [1].", citations=1).split(" rel=")[0]
    '<p>&lt;b&gt;See&lt;/b&gt; <a class="cite" href="#cite-1" data-cite="1"'
"""

from __future__ import annotations

import re
from typing import Any

import nh3
from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline

#: What an answer may hold, and no more: text structure, links, code, tables.
TAGS = {"p", "br", "hr", "h3", "h4", "h5", "h6", "ul", "ol", "li", "blockquote", "pre",
        "code", "em", "strong", "del", "s", "a", "table", "thead", "tbody", "tr", "th",
        "td"}  # fmt: skip
ATTRIBUTES = {"a": {"href", "class", "data-cite", "title"}, "code": {"class"}, "ol": {"start"}}
#: A link to elsewhere; relative links stay on this server.
SCHEMES = {"http", "https", "mailto"}
_MARKER = re.compile(r"\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]")


def _citations(state: StateInline, silent: bool) -> bool:
    """The inline rule for ``[n]``: before markdown-it's links, so ``[1](url)`` stays a
    link and ``[1]`` with no such link becomes a marker when ``n`` is cited."""
    if state.src[state.pos] != "[":
        return False
    found = _MARKER.match(state.src, state.pos)
    if found is None or state.src[found.end() : found.end() + 1] == "(":
        return False
    numbers = [int(n) for n in found.group(1).split(",")]
    if not all(1 <= n <= state.env.get("citations", 0) for n in numbers):
        return False
    if not silent:
        for i, n in enumerate(numbers):
            if i:
                state.push("text", "", 0).content = " "
            token = state.push("cite", "a", 0)
            token.meta = {"n": n}
    state.pos = found.end()
    return True


def _render_cite(self: Any, tokens: list, idx: int, options: Any, env: Any) -> str:
    n = tokens[idx].meta["n"]
    return f'<a class="cite" href="#cite-{n}" data-cite="{n}">[{n}]</a>'


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.inline.ruler.before("link", "citation", _citations)
    md.add_render_rule("cite", _render_cite)
    return md


_MD = _parser()


def render(text: str, citations: int = 0) -> str:
    """``text`` (Markdown) as clean HTML; ``citations``: how many the answer has."""
    env = {"citations": citations}
    tokens = _MD.parse(text, env)
    for token in tokens:
        if token.type in ("heading_open", "heading_close"):
            token.tag = f"h{min(6, int(token.tag[1]) + 2)}"
    html = _MD.renderer.render(tokens, _MD.options, env)
    return nh3.clean(
        html,
        tags=TAGS,
        attributes=ATTRIBUTES,
        url_schemes=SCHEMES,
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )


def with_html(answer: dict[str, Any]) -> dict[str, Any]:
    """An ``Answer.to_dict()`` with ``html``, its text rendered (``render``)."""
    return answer | {"html": render(answer["answer"], len(answer.get("citations") or []))}
