"""A library of documents over the server's doors: ``library.passage`` carries a PDF's
pages and a source at ``#page=N``; ``/source`` shows a document as the Markdown Heron read,
linking its original at the cited page; ``/source/file`` serves that original (a PDF
shown, an HTML page sandboxed, an Office file downloaded) and nothing outside the index."""

from __future__ import annotations

from pathlib import Path

import pytest

from heron.agent.answer import Citation
from heron.libraries import add_library, index_library
from heron.server.web.source import SANDBOX
from heron.store import open_store
from tests.libraries import documents
from tests.libraries.conftest import write_pages
from tests.libraries.test_readers import MANUAL
from tests.server.conftest import Served


@pytest.fixture(scope="module")
def docs(served: Served, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = write_pages(
        tmp_path_factory.mktemp("documents"),
        {"manual.pdf": MANUAL, "backups.html": documents.HTML, "guide.docx": documents.word()},
    )
    add_library("documents", str(root), served.settings)
    store = open_store(served.settings)
    try:
        assert index_library("documents", store, settings=served.settings).error is None
    finally:
        store.close()
    return root


def search_setup(served: Served) -> dict:
    query = {"query": "run setup with sudo", "library": "documents", "top_k": 1}
    (hit,) = served.rpc("search.query", query)["result"]
    return hit


def passage_on_page_2(served: Served) -> dict:
    # The Setup section's lines: the chunks that cover them are on page 2.
    first, last = search_setup(served)["lines"]
    asked = {"library": "documents", "page": "manual", "first": first, "last": last}
    return served.rpc("library.passage", asked)["result"]


def test_a_passage_of_a_pdf_carries_its_pages_and_opens_there(served: Served, docs: Path) -> None:
    hit = search_setup(served)
    assert (hit["page"], hit["pages"]) == ("manual", [2, 2])
    assert hit["source"] == f"{docs.resolve()}/manual.pdf#page=2"
    passage = passage_on_page_2(served)
    assert passage["pages"] == [2, 2]
    assert passage["source"] == f"{docs.resolve()}/manual.pdf#page=2"


def test_the_source_view_shows_the_markdown_and_links_the_original_at_its_page(
    served: Served, docs: Path
) -> None:
    passage = passage_on_page_2(served)
    first, last = passage["lines"]
    with served.client() as client:
        shown = client.get(
            "/source",
            params={"library": "documents", "page": "manual", "first": first, "last": last},
        )
    assert shown.status_code == 200
    assert "## Setup" in shown.text and 'class="cited"' in shown.text
    assert "/source/file?library=documents&amp;page=manual#page=2" in shown.text


def test_the_original_is_served_by_its_format(served: Served, docs: Path) -> None:
    with served.client() as client:
        pdf = client.get("/source/file", params={"library": "documents", "page": "manual"})
        html = client.get("/source/file", params={"library": "documents", "page": "backups"})
        word = client.get("/source/file", params={"library": "documents", "page": "guide"})
        outside = client.get(
            "/source/file", params={"library": "documents", "page": "../../etc/passwd"}
        )
        unknown = client.get("/source/file", params={"library": "nope", "page": "manual"})
    assert pdf.status_code == 200 and pdf.content == MANUAL
    assert pdf.headers["content-type"] == "application/pdf"
    assert pdf.headers["content-disposition"].startswith("inline")
    assert pdf.headers["x-content-type-options"] == "nosniff"
    assert html.status_code == 200 and html.headers["content-security-policy"] == SANDBOX
    assert word.headers["content-disposition"].startswith("attachment; filename*=UTF-8''guide.docx")
    assert outside.status_code == 404 and "root:" not in outside.text
    assert unknown.status_code == 404


def test_an_answers_citation_of_a_pdf_carries_its_pages(served: Served, docs: Path) -> None:
    # What /v1 answers, agent.chat and MCP's ask put in their citations.
    cited = Citation.from_result(search_setup(served)).to_dict()
    assert cited["pages"] == [2, 2]
    assert cited["url_or_path"] == f"{docs.resolve()}/manual.pdf#page=2"
