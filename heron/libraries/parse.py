"""Reading one Markdown page: front matter, shortcodes and comments out, line numbers kept.

``parse_page("---\\ntitle: Volumes\\n---\\n# Intro\\n...", "concepts/volumes")`` gives a
``Page`` whose ``lines`` are the file's lines with front matter, HTML comments and
Hugo/Jekyll shortcode tags blanked out, so line ``n`` of ``lines`` is line ``n`` of the
file and citations can point at the source. Paired shortcodes keep their inner text
(``{{< note >}}Back up first.{{< /note >}}`` reads ``Back up first.``); a glossary
tooltip keeps its visible text; a ``{{% heading "whatsnext" %}}`` becomes
``What's next``.

A file of another format (PDF, Word, HTML ...) is read as Markdown by its reader
(``heron.libraries.readers``) and made a ``Page`` by ``document_page``: Heron wrote that
Markdown, so nothing in it is front matter or a shortcode; a paged format's ``pages``
give the page each line is on.

``content_hash`` is the SHA-256 of ``indexed_text()``, the exact text the indexer
chunks: the shipped Q&A cache (``heron.libraries.enrich``) is keyed by it.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass, field
from typing import Any

import yaml

from heron import yamlsafe
from heron.libraries.markdown import outline
from heron.libraries.readers import Document

_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
# {{< name args >}}, {{% name args %}}, {{< /name >}}.
_HUGO = re.compile(r"\{\{([<%])\s*(/?)\s*([\w./-]*)(.*?)[>%]\}\}", re.DOTALL)
# Jekyll/Liquid tags: {% include x.html %}, {%- raw -%}.
_LIQUID = re.compile(r"\{%-?.*?-?%\}", re.DOTALL)
_TEXT_ARG = re.compile(r"""\btext\s*=\s*["']([^"']*)["']""")
_FIRST_ARG = re.compile(r"""^\s*["']?([^"'\s]+)""")
#: Hugo's i18n strings behind {{% heading "..." %}}, as the Kubernetes site renders them.
HEADINGS = {
    "whatsnext": "What's next",
    "prerequisites": "Before you begin",
    "objectives": "Objectives",
    "cleanup": "Clean up",
    "synopsis": "Synopsis",
    "options": "Options",
    "seealso": "See also",
    "options_from_parent": "Options inherited from parent commands",
}


@dataclass
class Page:
    """A parsed page. ``lines[i]`` is line ``i + 1`` of the file, cleaned (of a
    document, of the Markdown its reader made); ``pages[i]`` the document's page of that
    line (a PDF's page, a slide), empty for an unpaged format; ``scanned`` the pages
    with an image and no text, of which nothing is indexed."""

    id: str
    title: str
    description: str = ""
    tags: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    pages: list[int] = field(default_factory=list)
    scanned: list[int] = field(default_factory=list)

    def page_range(self, first: int, last: int) -> tuple[int, int] | None:
        """The document's pages that lines ``first``-``last`` (1-based) are on."""
        if not self.pages:
            return None
        return self.pages[max(first, 1) - 1], self.pages[min(last, len(self.pages)) - 1]

    def indexed_text(self) -> str:
        head = [self.title, self.description, ", ".join(self.tags)]
        return "\n".join(head) + "\n\n" + "\n".join(self.lines)

    @property
    def content_hash(self) -> str:
        return hashlib.sha256(self.indexed_text().encode("utf-8")).hexdigest()


def _blank(match: re.Match[str], keep: str = "") -> str:
    """``keep`` plus the newlines of the match, so later lines keep their numbers."""
    return keep + "\n" * match.group(0).count("\n")


def _shortcode(match: re.Match[str]) -> str:
    closing, name, args = match.group(2), match.group(3), match.group(4)
    keep = ""
    if not closing and name == "glossary_tooltip":
        found = _TEXT_ARG.search(args)
        keep = found.group(1) if found else ""
    elif not closing and name == "heading":
        found = _FIRST_ARG.search(args)
        key = found.group(1) if found else ""
        keep = HEADINGS.get(key, key.replace("_", " ").capitalize())
    return _blank(match, keep)


def strip_markup(text: str) -> str:
    """HTML comments and shortcode tags out; the number of lines unchanged."""
    text = _HTML_COMMENT.sub(_blank, text)
    text = _HUGO.sub(_shortcode, text)
    return _LIQUID.sub(_blank, text)


def _front_matter(lines: list[str]) -> tuple[dict[str, Any], int, str | None]:
    """``(fields, lines it spans, warning)``; YAML between ``---``, TOML between ``+++``.

    Pages come from anyone's repository: YAML is read with ``heron.yamlsafe`` (no
    aliases, at most 64 KiB), and refused front matter is a warning, like broken."""
    if not lines or lines[0].strip() not in ("---", "+++"):
        return {}, 0, None
    fence = lines[0].strip()
    ends = ("---", "...") if fence == "---" else ("+++",)
    for end in range(1, len(lines)):
        if lines[end].strip() in ends:
            break
    else:
        return {}, 0, f"front matter opened with {fence} is never closed; read as text"
    raw = "\n".join(lines[1:end])
    try:
        data = yamlsafe.load(raw) if fence == "---" else tomllib.loads(raw)
    except (yaml.YAMLError, tomllib.TOMLDecodeError, yamlsafe.YAMLRefused, RecursionError) as exc:
        reason = str(exc).splitlines()[0]
        return {}, end + 1, f"broken front matter ({reason}); title taken from the page"
    if data is None:
        data = {}
    if not isinstance(data, dict):
        return {}, end + 1, "front matter is not a mapping; title taken from the page"
    return data, end + 1, None


def _as_text(value: Any) -> str:
    return " ".join(str(value).split()) if value is not None else ""


def _tags(data: dict[str, Any]) -> list[str]:
    value = data.get("tags") or data.get("keywords") or []
    if isinstance(value, str):
        value = [t for t in re.split(r"[,\s]+", value) if t]
    return [_as_text(v) for v in value] if isinstance(value, list) else []


def _first_h1(lines: list[str]) -> str | None:
    """The first level-1 heading, ATX or setext, never a ``# comment`` in a code fence."""
    return next((h.text for h in outline(lines).headings if h.level == 1), None)


def _fallback_title(page_id: str) -> str:
    return page_id.rsplit("/", 1)[-1].replace("-", " ").replace("_", " ").strip().capitalize()


def document_page(doc: Document, page_id: str) -> Page:
    """A document's Markdown as a page: titled by the document's own title, else its
    first level-1 heading, else its file's name."""
    lines = [line.rstrip() for line in doc.lines]
    return Page(
        id=page_id,
        title=doc.title or _first_h1(lines) or _fallback_title(page_id),
        lines=lines,
        warnings=list(doc.warnings),
        pages=list(doc.pages),
        scanned=list(doc.scanned),
    )


def parse_page(text: str, page_id: str) -> Page:
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    data, span, warning = _front_matter(lines)
    body = [""] * span + strip_markup("\n".join(lines[span:])).split("\n")
    title = _as_text(data.get("title")) or _first_h1(body) or _fallback_title(page_id)
    return Page(
        id=page_id,
        title=title,
        description=_as_text(data.get("description") or data.get("summary")),
        tags=_tags(data),
        lines=[line.rstrip() for line in body],
        warnings=[warning] if warning else [],
    )
