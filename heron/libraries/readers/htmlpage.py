"""HTML (a documentation site's pages) through Beautiful Soup and markdownify.

A page's chrome goes first: navigation, site header and footer, sidebars, scripts and
forms, by their HTML5 elements and ARIA roles and by the classes the common generators
give them (DocBook's ``navheader``/``navfooter``, Sphinx's ``sphinxsidebar``/``related``,
MkDocs Material's ``md-sidebar``, Docusaurus' pagination); then the page's ``<main>``
(or ``role=main``, or ``<article>``, else the body) becomes Markdown through markdownify
(MIT): headings, lists, tables and ``<pre>`` code kept as Markdown structure.

Why not trafilatura (which ``fetch_url`` uses for pages of the open web): it guesses the
main text and may leave out what looks like boilerplate (a reference page's option
tables, short sections), and its Markdown drops the headings' ids. Here every section of
a manual is kept, and a heading keeps the page's own anchor as ``{#id}``
(``heron.libraries.markdown`` reads it), so a citation opens ``page.html#that-id``.
"""

from __future__ import annotations

import re
import warnings

from bs4 import BeautifulSoup, Tag, XMLParsedAsHTMLWarning
from markdownify import MarkdownConverter

from heron.libraries.readers.base import Document
from heron.libraries.readers.text import decode

_CHROME = ", ".join(
    (
        "script, style, noscript, template, iframe, form, button, nav, header, footer, aside",
        "[role=navigation], [role=banner], [role=contentinfo], [role=search]",
        "[role=complementary], [aria-hidden=true]",
        ".navheader, .navfooter, .sphinxsidebar, .related, .headerlink, .breadcrumbs",
        ".md-sidebar, .md-header, .md-footer, .pagination-nav, .theme-doc-sidebar-container",
        ".toc, .skip-link",
    )
)
_MAIN = "main, [role=main], article"
_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
_ID = re.compile(r"^[\w.-]+$")


def _anchor(heading: Tag) -> str | None:
    """The id a link to this heading uses: its own, an ``<a id>`` or ``<a name>`` inside
    it (DocBook), or its section's when it opens one (Sphinx's ``<section id>``)."""
    for tag in (
        heading,
        heading.find("a", attrs={"id": True}),
        heading.find("a", attrs={"name": True}),
    ):
        if isinstance(tag, Tag):
            value = tag.get("id") or tag.get("name")
            if isinstance(value, str) and _ID.match(value):
                return value
    parent = heading.parent
    if (
        isinstance(parent, Tag)
        and parent.name in ("section", "div")
        and parent.find(_HEADINGS) is heading
    ):
        value = parent.get("id")
        if isinstance(value, str) and _ID.match(value):
            return value
    return None


class _Converter(MarkdownConverter):
    """markdownify with each heading's anchor kept as ``{#id}``."""

    def convert_hN(self, n: int, el: Tag, text: str, parent_tags: set[str]) -> str:
        anchor = _anchor(el)
        text = " ".join(text.split())
        if anchor and text:
            text = f"{text} {{#{anchor}}}"
        return super().convert_hN(n, el, text, parent_tags)


# Underscores and asterisks are left as written: the text is indexed, never rendered, and
# escaping would split identifiers (``max_connections``) for the lexical index.
_CONVERT = _Converter(
    heading_style="ATX", escape_underscores=False, escape_asterisks=False, bullets="-"
)


def read(data: bytes) -> Document:
    text, warning = decode(data)
    with warnings.catch_warnings():  # XHTML (DocBook's) is read as HTML, on purpose
        warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)
        soup = BeautifulSoup(text, "html.parser")
    title = " ".join(soup.title.get_text().split()) if soup.title else ""
    for chrome in soup.select(_CHROME):
        chrome.decompose()
    main = soup.select_one(_MAIN) or soup.body or soup
    markdown = _CONVERT.convert_soup(main)
    lines = [line.rstrip() for line in re.sub(r"\n{3,}", "\n\n", markdown).strip().split("\n")]
    return Document(lines, title=title, warnings=[warning] if warning else [])
