"""A PDF in a library, on the page: its result says its page, its passage has a row for
the document's pages, and the source link opens the original PDF at that page."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from heron.libraries import add_library, index_library
from heron.settings import Settings
from heron.store import open_store
from tests.libraries.conftest import write_pages
from tests.libraries.test_readers import MANUAL
from tests.web.conftest import web_env


@pytest.fixture(scope="module")
def documents_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("web-documents")
    with pytest.MonkeyPatch.context() as mp:
        for name in ("HERON_CONFIG", "HERON_API_TOKEN"):  # the build reads the settings
            mp.delenv(name, raising=False)
        for name, value in web_env(tmp).items():
            mp.setenv(name, value)
        settings = Settings()
        add_library(
            "documents", str(write_pages(tmp / "documents", {"manual.pdf": MANUAL})), settings
        )
        store = open_store(settings)
        try:
            assert index_library("documents", store, settings=settings).error is None
        finally:
            store.close()
    return tmp


def test_a_pdf_result_shows_its_page_and_opens_the_original_there(  # type: ignore[no-untyped-def]
    documents_home: Path, serve, page, shoot
) -> None:
    heron = serve(documents_home)
    page.goto(f"{heron.url}/libraries")
    page.fill("#q", "run setup with sudo")
    page.locator("#search button[type=submit]").click()
    first = page.locator(".results li").first
    first.wait_for()
    assert "documents / manual, p. 2" in first.inner_text()
    first.get_by_role("button", name="Open passage").click()
    page.locator(".p-pages").wait_for()
    assert page.locator(".p-pages").inner_text() == "p. 2"
    href = page.locator(".p-source a").get_attribute("href") or ""
    assert href == f"{heron.url}/source/file?library=documents&page=manual#page=2"
    shoot("pdf-passage")
    original = httpx.get(href.split("#")[0])
    assert original.headers["content-type"] == "application/pdf" and original.content == MANUAL
    assert not page.errors, page.errors
