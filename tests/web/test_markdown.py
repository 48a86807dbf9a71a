"""``heron.server.web.markdown``: answers as HTML with their structure, and nothing that runs."""

from __future__ import annotations

import re

import pytest

from heron.server.web.markdown import render

STRUCTURE = """## Steps

- roll back [1]
- check [1, 2]

| command | what |
|---|---|
| `undo` | back |

```sh
kubectl rollout undo deployment/web
```
"""


def test_lists_tables_and_code_keep_their_structure() -> None:
    html = render(STRUCTURE, citations=2)
    assert "<h4>Steps</h4>" in html  # under the page's own h1 and h2
    for tag in ("<ul>", "<table>", "<thead>", '<pre><code class="language-sh">'):
        assert tag in html, tag
    assert html.count('class="cite"') == 3 and 'data-cite="2"' in html


@pytest.mark.parametrize(
    "text",
    [
        "<img src=x onerror=alert(1)>",
        "<script>alert(1)</script>",
        "[click](javascript:alert(1))",
        "[click](JaVaScRiPt:alert(1))",
        "[click](data:text/html;base64,PHNjcmlwdD4=)",
        "![x](javascript:alert(1))",
        '<a href="javascript:alert(1)">a</a>',
        "<svg><script>alert(1)</script></svg>",
        "[x](vbscript:msgbox)",
    ],
)
def test_markup_and_script_links_are_inert(text: str) -> None:
    tags = re.findall(r"<[a-z][^>]*>", render(text).lower())  # real tags: text is escaped
    assert tags and not [t for t in tags if re.match(r"<(img|script|svg|iframe|object)", t)]
    assert not [t for t in tags if re.search(r"\son\w+=", t)], tags
    hrefs = [h for t in tags for h in re.findall(r'href="([^"]*)"', t)]
    assert all(h.startswith(("http:", "https:", "#")) for h in hrefs), hrefs


def test_a_marker_needs_a_citation_and_a_link_stays_a_link() -> None:
    html = render("[3] is not cited; [1](https://example.com) is a link; [1] is.", citations=1)
    assert "[3]" in html and html.count('class="cite"') == 1
    assert '<a href="https://example.com"' in html
