"""Files added from the Libraries page in Chromium: chosen in the form or dropped on a
library's row, at a desktop (1280 px) and a phone (390 px) width; the progress of the
sending and the indexing, and one line per file, a refused one with its reason."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.libraries.conftest import write_pages
from tests.web.conftest import Heron

FAKE_PDF = b"%PDF-1.7\n\x00\x01 binary"
TOKEN = "upload-test-token-7c2f90-0123456789abcdef"
#: Every text the progress label shows, kept by the page itself as it changes.
WATCH_LABELS = """() => {
  window.labels = [];
  new MutationObserver((records) => {
    for (const record of records) {  // each text the label was given, however fast
      for (const node of record.addedNodes) {
        if (node.nodeType === Node.TEXT_NODE) window.labels.push(node.data);
      }
    }
  }).observe(document.getElementById("upload-progress"), {childList: true, subtree: true});
}"""
#: Files dropped on the row of a library in the list, as a user's drag from the desktop.
DROP_ON_ROW = """([library, files]) => {
  const row = [...document.querySelectorAll("#libs tbody tr")]
    .find((r) => r.querySelector("th").textContent === library);
  const data = new DataTransfer();
  for (const [name, text] of files) data.items.add(new File([text], name));
  for (const type of ["dragenter", "dragover", "drop"]) {
    row.dispatchEvent(new DragEvent(type, {dataTransfer: data, bubbles: true, cancelable: true}));
  }
}"""


def team_server(root: Path, serve: Any, token: str | None = None) -> Heron:
    """A server of its own over ``root`` with the folder library ``team`` (under
    HERON_LIBRARY_ROOTS): the shared server's libraries stay as the other pages' tests
    expect them."""
    folder = write_pages(root / "team", {"welcome.md": "# Welcome\n\nThe team's handbook.\n"})
    heron: Heron = serve(root, token=token)
    heron.rpc("library.add", name="team", source=str(folder))
    heron.rpc("library.index", name="team")
    return heron


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory, serve: Any) -> Heron:
    return team_server(tmp_path_factory.mktemp("upload-web"), serve)


def lines(page: Any) -> list[tuple[str, str]]:
    return [
        (li.get_attribute("data-ok"), li.inner_text())
        for li in page.locator("#upload-out li").all()
    ]


@pytest.mark.parametrize("width", [1280, 390])
def test_files_chosen_in_the_form_are_added_with_progress(
    team: Heron,
    page: Any,
    width: int,
    tmp_path: Path,
    shoot: Callable[[str], Path],
    audit: Callable[[Any], list[dict[str, Any]]],
) -> None:
    page.set_viewport_size({"width": width, "height": 860})
    page.goto(f"{team.url}/libraries")
    page.locator("#upload-library option[value=team]").wait_for(state="attached")
    vpn = tmp_path / f"vpn-{width}.md"
    room = {1280: "otter", 390: "badger"}[width]  # each width's page says its own thing
    vpn.write_text(f"# VPN\n\nThe VPN password is kept in the {room} room's safe.\n")
    fake = tmp_path / f"scan-{width}.md"
    fake.write_bytes(FAKE_PDF)
    page.set_input_files("#upload-files", [str(vpn), str(fake)])
    page.fill("#upload-folder", "it")
    page.evaluate(WATCH_LABELS)
    page.get_by_role("button", name="Add files").click()
    page.locator("#upload-progress[data-state=done]").wait_for()
    assert lines(page) == [
        ("true", f"Added it/vpn-{width}.md"),
        ("false", f"scan-{width}.md: it is a PDF, not UTF-8 text. Its content decides "
                  "its type, not its name."),
    ]  # fmt: skip
    labels = page.evaluate("window.labels")
    assert any(label.startswith("Embedding team:") for label in labels), labels
    assert page.locator("#upload-label").inner_text().startswith("team: 1 added, 1 refused;")
    assert (team.root / "team" / "it" / f"vpn-{width}.md").exists()
    assert not (team.root / "team" / "it" / f"scan-{width}.md").exists()
    found = team.rpc("search.query", query=f"where is the VPN password kept, {room} room")
    assert found[0]["page"] == f"it/vpn-{width}"  # type: ignore[index]
    # The page fits the width: nothing scrolls sideways but the tables' own boxes.
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    shoot(f"libraries-upload-{width}")
    if width == 1280:
        assert audit(page) == []
    assert page.errors == []


def test_files_dropped_on_a_library_s_row_are_added_to_it(team: Heron, page: Any) -> None:
    page.goto(f"{team.url}/libraries")
    page.locator("#libs tbody th", has_text="team").wait_for()
    page.locator("#upload-library option[value=team]").wait_for(state="attached")
    files = [["lunch.md", "# Lunch\n\nThe canteen opens at noon.\n"], ["notes.exe", "MZ"]]
    page.evaluate(DROP_ON_ROW, ["team", files])
    page.locator("#upload-progress[data-state=done]").wait_for()
    (added, refused) = lines(page)
    assert added == ("true", "Added lunch.md")
    assert refused[0] == "false" and refused[1].startswith("notes.exe: Heron indexes .md")
    assert (team.root / "team" / "lunch.md").exists()
    # The list shows the library's new count once the files are in.
    row = page.locator("#libs tbody tr", has=page.locator("th", has_text="team"))
    pages = int(row.locator("td.num").first.inner_text())
    assert pages == len(team.rpc("library.pages", name="team"))  # type: ignore[arg-type]
    assert page.errors == []


def test_a_refused_request_is_shown_and_nothing_is_written(team: Heron, page: Any) -> None:
    page.goto(f"{team.url}/libraries")
    page.locator("#upload-library option[value=team]").wait_for(state="attached")
    page.set_input_files("#upload-files", [
        {"name": "a.md", "mimeType": "text/markdown", "buffer": b"# A\n"},
    ])  # fmt: skip
    page.fill("#upload-folder", "../outside")
    page.get_by_role("button", name="Add files").click()
    page.locator("#upload-progress[data-state=failed]").wait_for()
    assert "hidden or a step up" in page.locator("#upload-progress .error").inner_text()
    assert not (team.root / "outside").exists()
    assert page.errors == [] or all("400" in e for e in page.errors)


def test_a_page_is_removed_from_the_pages_list_on_a_second_click(team: Heron, page: Any) -> None:
    team.rpc("library.add_files", name="team", files=[{"name": "old.md", "content": "IyBPbGQK"}])
    page.goto(f"{team.url}/libraries")
    page.get_by_role("button", name="Pages of team").click()
    remove = page.get_by_role("button", name="Remove old.md from team")
    remove.click()  # the first click asks
    assert remove.inner_text() == "Remove for good?" and (team.root / "team" / "old.md").exists()
    remove.click()
    page.locator("#pages-out", has_text="Removed old.md from team").wait_for()
    assert not (team.root / "team" / "old.md").exists()
    assert "old" not in {p["page"] for p in team.rpc("library.pages", name="team")}  # type: ignore[union-attr]
    assert page.get_by_role("button", name="Remove old.md from team").count() == 0
    assert page.errors == []


def test_behind_a_token_the_page_s_csrf_header_lets_it_add(
    tmp_path_factory: pytest.TempPathFactory, serve: Any, page: Any
) -> None:
    locked = team_server(tmp_path_factory.mktemp("upload-token"), serve, TOKEN)
    with httpx.Client(base_url=locked.url) as client:  # signed in: the cookie alone writes nothing
        client.post("/signin", data={"token": TOKEN, "next": "/libraries"})
        csrf = client.get("/libraries").text.split('name="heron-csrf" content="')[1].split('"')[0]
        sent = {"files": [("file", ("c.md", b"# C\n\nC.\n"))]}
        assert client.post("/upload/team", **sent).status_code == 401
        assert not (locked.root / "team" / "c.md").exists()
        assert (
            client.post("/upload/team", headers={"x-heron-csrf": csrf}, **sent).status_code == 200
        )
    page.goto(f"{locked.url}/libraries")
    page.fill("#token", TOKEN)
    page.keyboard.press("Enter")
    page.wait_for_url(f"{locked.url}/libraries")
    page.locator("#upload-library option[value=team]").wait_for(state="attached")
    page.set_input_files("#upload-files", [
        {"name": "d.md", "mimeType": "text/markdown", "buffer": b"# D\n\nD.\n"},
    ])  # fmt: skip
    page.get_by_role("button", name="Add files").click()
    page.locator("#upload-progress[data-state=done]").wait_for()
    assert lines(page) == [("true", "Added d.md")] and (locked.root / "team" / "d.md").exists()
    assert not [e for e in page.errors if "401" not in e], page.errors


def test_a_library_made_on_the_page_takes_files(team: Heron, page: Any) -> None:
    page.goto(f"{team.url}/libraries")
    page.fill("#add-name", "fresh")
    page.get_by_role("button", name="Add and index").click()
    page.get_by_role("status").filter(has_text="Made fresh").wait_for()
    page.locator("#upload-library option[value=fresh]").wait_for(state="attached")
    page.select_option("#upload-library", "fresh")
    page.set_input_files("#upload-files", [
        {"name": "first.md", "mimeType": "text/markdown", "buffer": b"# First\n\nHello.\n"},
    ])  # fmt: skip
    page.get_by_role("button", name="Add files").click()
    page.locator("#upload-progress[data-state=done]").wait_for()
    assert lines(page) == [("true", "Added first.md")]
    assert (team.root / "fresh" / "first.md").exists()
    page.locator("#libs tbody th", has_text="fresh").wait_for()
    assert page.errors == []
