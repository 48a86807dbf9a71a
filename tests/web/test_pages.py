"""Every pane in a real headless Chromium against a real ``heron serve``: no horizontal
scroll at 1280 px and 390 px, no serious or critical axe-core violation in the light and
the dark palette, every control named, no error on the page (screenshots of each); in
Brazilian Portuguese, none of Heron's English; a job confirmed in the page beside its
list; a re-index watched; the status board; the security headers and the page weight."""

from __future__ import annotations

import json
import re

import httpx
import pytest

from heron.server.web.i18n import CATALOGUES
from tests.web.conftest import XSS, Heron

#: Every control with no accessible name: no label, no text, no aria-label.
UNNAMED = """() => [...document.querySelectorAll("button, input, select, textarea, a")]
  .filter((e) => e.type !== "hidden" && !(e.labels && e.labels.length)
    && !e.getAttribute("aria-label") && !e.textContent.trim())
  .map((e) => e.outerHTML)"""
#: What each pane shows once its script has filled it.
READY = {
    "/": ("body[data-ready-at] #conv-list li",),
    "/libraries": ("#libs table",),
    "/skills": ("#dirs ol li",),
    "/tools": ("#tools table",),
    "/jobs": ("#jobs .job-list, #jobs .empty",),
    "/interventions": ("#watching[data-state=open]",),
    "/operations": ("#watchdog .board", "#doctor .board"),
}
WIDE = "() => document.documentElement.scrollWidth - innerWidth"


def ready(page, path: str) -> None:  # type: ignore[no-untyped-def]
    for selector in READY[path]:
        page.locator(selector).first.wait_for(timeout=60_000)


@pytest.mark.parametrize("path", list(READY))
def test_each_pane_fits_reads_well_and_passes_axe(
    heron: Heron, page, audit, shoot, path: str
) -> None:  # type: ignore[no-untyped-def]
    heron.rpc("sessions.list")  # the chat pane lists what the chat tests left, or the empty state
    page.goto(heron.url + path)
    ready(page, path)
    name = path.strip("/") or "chat"
    assert page.evaluate(WIDE) <= 0, f"{path} scrolls sideways at 1280 px"
    assert audit(page) == [], path
    shoot(f"{name}-1280-light")
    page.emulate_media(color_scheme="dark")
    assert audit(page) == [], f"{path} (dark)"
    shoot(f"{name}-1280-dark")
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate(WIDE) <= 0, f"{path} scrolls sideways at 390 px"
    shoot(f"{name}-390-dark")
    assert page.evaluate(UNNAMED) == []
    assert page.locator("[role=alert], div.error").count() == 0, page.locator(
        "[role=alert]"
    ).all_inner_texts()
    assert not page.errors, page.errors


#: Heron's English: messages that differ in Portuguese, less those that read the same
#: (names, units) and single lower-case words, which data holds too (a tool's safety is
#: "write", a search mode "dense").
ENGLISH_ONLY = [
    text
    for key, text in CATALOGUES["en"].items()
    if text != CATALOGUES["pt-BR"][key]
    and re.search(r"[A-Za-z]{3}", text)
    and not re.fullmatch(r"[a-z]+", text)
]
#: Every text node and the named attributes, trimmed, one string each.
TEXTS = """() => {
  const out = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const text = walker.currentNode.textContent.trim();
    if (text && walker.currentNode.parentElement.closest("script, style") === null) out.push(text);
  }
  for (const e of document.querySelectorAll("[aria-label], [title], [placeholder]")) {
    for (const a of ["aria-label", "title", "placeholder"]) {
      if (e.getAttribute(a)) out.push(e.getAttribute(a).trim());
    }
  }
  out.push(document.title.replace(/ · Heron$/, ""));
  return out;
}"""


def english(texts: list[str]) -> list[str]:
    """The texts that are one of Heron's English messages (a placeholder: one word)."""
    found = []
    for message in ENGLISH_ONLY:
        parts = re.split(r"\{\w+\}", message)
        pattern = re.compile(r"\S+".join(re.escape(p) for p in parts), re.S)
        found += [t for t in texts if pattern.fullmatch(t)]
    return found


@pytest.mark.parametrize("page", [{"locale": "pt-BR"}], indirect=True)  # its Accept-Language
def test_in_brazilian_portuguese_no_pane_shows_herons_english(heron: Heron, page, shoot) -> None:  # type: ignore[no-untyped-def]
    for path in READY:
        page.goto(heron.url + path)
        ready(page, path)
        assert page.locator("html").get_attribute("lang") == "pt-BR"
        assert english(page.evaluate(TEXTS)) == [], path
    shoot("operations-pt-BR")
    page.select_option("#lang", "en")  # the picker, remembered over Accept-Language
    page.wait_for_load_state()
    page.locator("html[lang=en]").wait_for()
    page.goto(heron.url + "/jobs")
    assert page.locator("h1").inner_text() == "Jobs"
    assert not page.errors, page.errors


def test_a_job_parks_is_confirmed_beside_the_list_and_its_events_read_as_rows(
    heron: Heron, page, shoot
) -> None:  # type: ignore[no-untyped-def]
    page.goto(heron.url + "/jobs")
    page.fill("#prompt", "deploy the fix once the build passes")
    page.select_option("#risk", "deploy_allowed")
    page.check("#confirm-first")
    page.click("#create button[type=submit]")
    page.locator("#events li[data-kind=waiting]").wait_for()
    page.locator("#job-fields .f-state [data-state=waiting_for_confirmation]").wait_for()
    assert page.locator("#confirm").is_enabled()
    assert page.locator("#events li[data-kind=step_started]").count() == 0  # parked: nothing ran
    listed, detail = (page.locator(s).bounding_box() for s in (".jobs-list", "#detail"))
    assert listed["x"] + listed["width"] <= detail["x"], (listed, detail)  # side by side
    shoot("jobs-waiting")
    page.fill("#by", "alice")
    page.locator("#confirm").focus()
    page.keyboard.press("Enter")
    page.locator("#events li[data-kind=confirmed]").wait_for()
    page.locator("#job-fields .f-state [data-state=completed]").wait_for(timeout=60_000)
    step = page.locator("#events li[data-kind=step_finished]").first
    assert step.locator(".step").inner_text() == "git_status"
    assert step.locator(".exit").inner_text() == "exit 0"
    step.locator("details.output summary").first.click()
    assert "## main" in step.locator("details.output pre").first.inner_text()
    assert page.locator("#events pre:not(details pre)").count() == 0  # no raw JSON
    assert page.locator("#job-fields .f-confirmed-by").inner_text().startswith("alice at ")
    assert page.locator("#confirm").is_disabled() and page.locator("#abort").is_disabled()
    assert page.evaluate(WIDE) <= 0
    shoot("jobs-done")
    assert not page.errors, page.errors


def test_a_reindex_shows_its_progress_and_the_status_updates(heron: Heron, page, shoot) -> None:  # type: ignore[no-untyped-def]
    docs = heron.root / "docs"
    for n in range(6):  # changed pages, so the indexer has work to report
        (docs / f"extra/page{n}.md").parent.mkdir(exist_ok=True)
        (docs / f"extra/page{n}.md").write_text(f"# Extra {n}\n\nRollout note number {n}.\n")
    page.goto(heron.url + "/libraries")
    page.get_by_role("button", name="Re-index tiny").click()
    page.locator("#progress[data-state=done]").wait_for(timeout=60_000)
    bar = page.locator("#index-bar")
    assert bar.get_attribute("value") == bar.get_attribute("max") == "1"
    assert re.search(r"Indexed tiny: \d+ pages, 6 added", page.locator("#index-label").inner_text())
    row = page.locator("#libs tr", has=page.locator("th", has_text=re.compile("^tiny$")))
    row.locator("td").nth(2).filter(has_text="9").wait_for()  # 3 pages + 6 new
    page.get_by_role("button", name="Pages of tiny").click()
    page.get_by_role("cell", name="extra/page5", exact=True).wait_for()
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate(WIDE) <= 0  # the wide tables scroll in their own boxes
    shoot("libraries-390")
    assert not page.errors, page.errors


def test_markup_in_a_page_is_shown_as_text(heron: Heron, page, shoot) -> None:  # type: ignore[no-untyped-def]
    page.goto(heron.url + "/libraries")
    page.fill("#q", "quokka marker passage")
    page.locator("#q-library option[value=evil]").wait_for(state="attached")
    page.select_option("#q-library", "evil")
    page.press("#q", "Enter")
    title = page.locator("#results .r-title").first
    title.wait_for()
    assert title.inner_text() == XSS  # the markup, as text
    page.get_by_role("button", name="Open passage").first.click()
    page.locator("#passage .p-title").wait_for()
    assert page.locator("#passage .p-title").inner_text() == XSS
    assert "<img src=x onerror=window.pwned=3>" in page.locator("#passage .p-text").inner_text()
    assert page.locator("#results img, #passage img, #results script, #passage script").count() == 0
    assert page.evaluate("() => window.pwned") is None
    page.keyboard.press("Escape")
    assert page.locator("#passage").is_hidden()
    shoot("xss-as-text")
    assert not page.errors, page.errors


def test_the_status_board_puts_failing_checks_first(heron: Heron, page) -> None:  # type: ignore[no-untyped-def]
    board = heron.rpc("ops.board")
    assert board["report"]["ok"] is True  # type: ignore[index]
    (check,) = board["checks"]  # type: ignore[index]
    assert (check["name"], check["colour"], check["status"]) == ("web-check", "green", "ok")
    assert [r["ok"] for r in check["runs"]] == [True] and check["changed"] == check["runs"][0]["at"]
    page.goto(heron.url + "/operations")
    tile = page.locator("#watchdog .tile[data-colour=green]", has_text="web-check")
    tile.wait_for()
    assert tile.locator(".strip li").count() == 1
    page.locator("#doctor .board .tile").first.wait_for(timeout=60_000)
    colours = page.locator("#doctor .tile").evaluate_all("(ts) => ts.map((t) => t.dataset.colour)")
    order = {"red": 0, "amber": 1, "grey": 2, "green": 3}
    assert colours == sorted(colours, key=order.__getitem__)  # failing first
    assert not page.errors, page.errors


def test_a_cited_source_opens_at_its_lines(heron: Heron, page, shoot) -> None:  # type: ignore[no-untyped-def]
    page.goto(f"{heron.url}/source?library=tiny&page=tasks/rollback&first=3&last=4#L3")
    page.locator(".lines li.cited").first.wait_for()
    assert page.locator(".lines li.cited").evaluate_all("(ls) => ls.map((l) => l.id)") == [
        "L3",
        "L4",
    ]
    assert "kubectl rollout undo" in page.locator(".lines").inner_text()
    shoot("source")
    missing = httpx.get(f"{heron.url}/source?library=tiny&page=../../etc/passwd")
    assert missing.status_code == 404 and "root:" not in missing.text
    assert not page.errors, page.errors


def test_every_page_and_asset_carries_the_security_headers(heron: Heron) -> None:
    with httpx.Client(base_url=heron.url) as client:
        for path in [
            "/",
            "/libraries",
            "/jobs",
            "/source",
            "/static/heron.js",
            "/static/heron.css",
        ]:
            got = client.get(path)
            assert got.status_code in (200, 404), path
            csp = got.headers["content-security-policy"]
            for rule in ["default-src 'self'", "script-src 'self'", "frame-ancestors 'none'",
                         "object-src 'none'", "base-uri 'none'"]:  # fmt: skip
                assert rule in csp, (path, rule)
            assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
            assert got.headers["x-content-type-options"] == "nosniff"
        for path in ["/", "/operations"]:
            html = client.get(path, headers={"accept-language": "pt-BR"}).text
            assert re.findall(r"<script(?![^>]*\bsrc=)", html) == []  # no inline script
            assert re.search(r"<[^>]+\son[a-z]+=", html) is None  # no inline handler
            assert re.search(r"\sstyle=", html) is None  # no inline style
        assert client.get("/", headers={"origin": "http://evil.example"}).status_code == 403


def test_the_chat_page_weighs_under_150_kb(heron: Heron) -> None:
    with httpx.Client(base_url=heron.url) as client:
        html = client.get("/").text
        assets = re.findall(r'(?:src|href)="(/static/[^"]+)"', html)
        total = len(html.encode()) + sum(len(client.get(a).content) for a in assets)
    names = {a.split("?")[0] for a in assets}
    assert {
        "/static/heron.js",
        "/static/chat.js",
        "/static/heron.css",
        "/static/messages.en.js",
    } <= names
    assert total <= 150_000, total


def test_add_a_library_from_the_page(heron: Heron, page) -> None:  # type: ignore[no-untyped-def]
    folder = heron.root / "notes"
    folder.mkdir()
    (folder / "runbook.md").write_text("# Runbook\n\nRestart the ingest worker first.\n")
    page.goto(heron.url + "/libraries")
    page.fill("#add-name", "notes")
    page.fill("#add-source", str(folder))
    page.press("#add-source", "Enter")
    page.locator("#progress[data-state=done]").wait_for(timeout=60_000)
    assert "Indexed notes: 1 pages, 1 added" in page.locator("#index-label").inner_text()
    page.get_by_role("button", name="Re-index notes").wait_for()
    page.fill("#add-name", "outside")
    page.fill("#add-source", "/etc")
    page.press("#add-source", "Enter")
    page.locator("#add-out [role=alert]", has_text="HERON_LIBRARY_ROOTS").wait_for()
    assert not [e for e in page.errors if "status of" not in e], page.errors


def test_the_catalogues_are_served_as_scripts(heron: Heron) -> None:
    html = httpx.get(heron.url + "/", headers={"accept-language": "pt-BR"}).text
    (src,) = re.findall(r'src="(/static/messages\.pt-BR\.js\?v=\w+)"', html)
    body = httpx.get(heron.url + src).text
    assert (
        json.loads(body.split("window.HeronMessages = ", 1)[1].rstrip(";\n"))["chat.send"]
        == "Enviar"
    )
