"""A page's readable text, extracted in a process of its own so that its cost has a bound.

trafilatura (through lxml) takes time and memory in proportion to the page's elements,
not its bytes: 1.6 MB of two-letter paragraphs took 6.7 s and 365 MB here (22 to 32 s
on the attack run's machine), all of it after ``fetch_url``'s deadline had passed, in
the server's own process. ``extract`` runs it in a child of the server instead, given
``MAX_PARSE`` bytes of HTML at most, under an address-space limit (``MEMORY``), and
kills it at the call's deadline.

The child is this file run as a script by the same interpreter in isolated mode
(``python -I extraction.py URL``): it imports nothing of Heron (whose packages take
0.4 s to import), reads the HTML on stdin and writes ``{"markdown", "title"}`` as JSON.
"""

from __future__ import annotations

import json
import re
import sys
from html import unescape

#: HTML bytes handed to the extractor at most; the rest is cut (``truncated``). The worst
#: page measured (two-letter paragraphs) takes 3.9 s of CPU and 246 MB at this size, an
#: ordinary 30 KB article 0.26 s and 57 MB; a model reads ``fetch.MAX_TEXT`` characters
#: anyway.
MAX_PARSE = 1 << 20
#: Address space of the extracting process, bytes: the interpreter with lxml and
#: trafilatura takes 170 MiB of it before reading a page; a page past it is a clear
#: error, not a server out of memory.
MEMORY = 768 << 20
#: Exit status of a child that could not import trafilatura (the ``web`` extra).
NO_EXTRACTOR = 3
#: Exit status of a child that ran out of its memory.
NO_MEMORY = 4


def title_of(html: str) -> str:
    """The page's own ``<title>``. Bounded repeats: a page of ``<title<title...`` must
    not cost time in the square of its length."""
    found = re.search(r"<title[^<>]{0,200}>([^<]{0,2000})</title>", html, re.IGNORECASE)
    return " ".join(unescape(found.group(1)).split()) if found else ""


def to_markdown(html: str, url: str) -> tuple[str, str]:
    """The readable text of ``html`` as Markdown (trafilatura's), and its title."""
    import trafilatura

    text = trafilatura.extract(
        html,
        url=url,
        output_format="markdown",
        include_links=True,
        include_tables=True,
        include_comments=False,
        favor_recall=True,
    )
    title = title_of(html)  # the page's own; trafilatura's guess (og:title, h1) without one
    if not title:
        metadata = trafilatura.extract_metadata(html, default_url=url)
        title = metadata.title if metadata and metadata.title else ""
    return text or "", title


def main() -> int:
    """The child: ``argv[1]`` the page's URL; the HTML (UTF-8) on stdin."""
    try:
        import resource  # POSIX only: elsewhere the deadline is the one bound
    except ImportError:
        pass
    else:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
    try:
        import trafilatura  # noqa: F401 (its absence is reported by its own status)
    except ImportError:
        return NO_EXTRACTOR
    html = sys.stdin.buffer.read(MAX_PARSE).decode("utf-8", "replace")
    try:
        text, title = to_markdown(html, sys.argv[1])
    except MemoryError:
        return NO_MEMORY
    sys.stdout.write(json.dumps({"markdown": text, "title": title}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
