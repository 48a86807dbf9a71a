"""The page in a real headless Chromium against a real ``heron serve``: chat streamed
with citations that open their passage, a job confirmed in the page, a re-index watched,
markup in a page title shown as text, every pane readable (screenshots), and the
security headers on every answer."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.web.conftest import XSS, Heron

QUESTION = "How do I roll back a Deployment to its previous revision?"
#: Every control with no accessible name: no label, no text, no aria-label.
UNNAMED = """() => [...document.querySelectorAll("button, input, select, textarea, a")]
  .filter((e) => e.type !== "hidden" && !(e.labels && e.labels.length)
    && !e.getAttribute("aria-label") && !e.textContent.trim())
  .map((e) => e.outerHTML)"""


def unnamed_controls(page) -> list[str]:  # type: ignore[no-untyped-def]
    return page.evaluate(UNNAMED)


def test_chat_streams_an_answer_whose_citation_opens_the_passage(heron: Heron, page, shoot) -> None:  # type: ignore[no-untyped-def]
    page.goto(heron.url + "/")
    page.locator("#library option[value=tiny]").wait_for(state="attached")
    page.select_option("#mode", "extractive")
    page.select_option("#library", "tiny")
    page.fill("#message", QUESTION)
    page.keyboard.press("Enter")
    turn = page.locator("li.turn[data-done=true]")
    try:
        turn.wait_for()
    except Exception:
        shoot("chat-failed")
        raise AssertionError(page.errors) from None
    answer = turn.locator(".answer")
    assert answer.inner_text().strip()
    assert answer.get_attribute("data-first-token-at"), "no token event reached the page"
    assert "extractive" in turn.locator(".meta").inner_text()
    assert "model local" in turn.locator(".meta").inner_text()
    cite = turn.locator("button.cite[data-page='tasks/rollback']").first
    cite.focus()
    page.keyboard.press("Enter")  # keyboard only
    aside = page.locator("#passage")
    aside.locator(".p-text").wait_for()
    assert aside.locator(".p-library").inner_text() == "tiny"
    assert "tasks/rollback" in aside.locator(".p-page").inner_text()
    assert "kubectl rollout undo" in aside.locator(".p-text").inner_text()
    first, last = aside.locator(".p-lines").inner_text().split("\u2013")
    source = aside.locator(".p-source").inner_text()  # a local library: its path at the lines
    assert source == f"{heron.root / 'docs'}/tasks/rollback.md:{first}-{last}"
    shoot("chat")
    assert page.locator("#model option[value=local]").count() == 1  # the models.yml aliases
    page.reload()  # the conversation is kept per session: agent.history fills it again
    page.locator("li.turn .you", has_text=QUESTION).wait_for()
    assert page.locator("li.turn button.cite[data-page='tasks/rollback']").count() >= 1
    assert unnamed_controls(page) == []
    assert not page.errors, page.errors


def test_a_job_parks_is_confirmed_in_the_page_and_its_events_arrive(
    heron: Heron, page, shoot
) -> None:  # type: ignore[no-untyped-def]
    page.goto(heron.url + "/jobs")
    page.fill("#prompt", "deploy the fix once the build passes")
    page.select_option("#risk", "deploy_allowed")
    page.check("#confirm-first")
    page.click("#create button[type=submit]")
    page.locator("#events li[data-kind=waiting]").wait_for()
    page.locator("#job-fields .f-state", has_text="waiting_for_confirmation").wait_for()
    assert page.locator("#confirm").is_enabled()
    assert page.locator("#events li[data-kind=step_started]").count() == 0  # parked: nothing ran
    shoot("jobs-waiting")
    page.fill("#by", "alice")
    page.locator("#confirm").focus()
    page.keyboard.press("Enter")
    page.locator("#events li[data-kind=confirmed]").wait_for()
    page.locator("#events li[data-kind=step_finished]").first.wait_for()
    page.locator("#job-fields .f-state", has_text="completed").wait_for(timeout=60_000)
    assert page.locator("#job-fields .f-confirmed-by").inner_text().startswith("alice at ")
    assert page.locator("#confirm").is_disabled() and page.locator("#abort").is_disabled()
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
    row = page.locator("#libs tr", has=page.locator("td", has_text=re.compile("^tiny$")))
    row.locator("td").nth(3).filter(has_text="9").wait_for()  # 3 pages + 6 new
    page.get_by_role("button", name="Pages of tiny").click()
    page.get_by_role("cell", name="extra/page5", exact=True).wait_for()
    shoot("libraries")
    assert not page.errors, page.errors


def test_markup_in_a_page_title_is_shown_as_text(heron: Heron, page, shoot) -> None:  # type: ignore[no-untyped-def]
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
    assert page.locator("#passage .p-heading").inner_text() == XSS
    assert page.locator("#results img, #passage img, #results script, #passage script").count() == 0
    assert page.evaluate("() => window.pwned") is None
    shoot("xss-as-text")
    assert not page.errors, page.errors


@pytest.mark.parametrize("path", ["/skills", "/tools", "/interventions", "/operations"])
def test_each_pane_reads_its_api_or_says_it_is_absent(heron: Heron, page, path: str, shoot) -> None:  # type: ignore[no-untyped-def]
    page.goto(heron.url + path)
    if path == "/skills":
        page.locator("#dirs ol li").first.wait_for()
        page.fill("#q", "roll back a deployment")
        page.press("#q", "Enter")
        page.locator("#results li", has_text="rollback-deployment").wait_for()
        page.locator("#usage table").wait_for()
    elif path == "/tools":
        page.locator("#tools table").wait_for()
        page.fill("#q", "search the documentation")
        page.press("#q", "Enter")
        page.locator("#route td", has_text=re.compile("^offered$")).first.wait_for()
    elif path == "/operations":
        doctor = "ops.doctor" in heron.methods()
        if doctor:
            page.locator("#doctor table").wait_for(timeout=60_000)
        else:
            page.locator("#doctor .note", has_text="not available on this server").wait_for()
        page.locator("#watchdog dd", has_text="web-check").first.wait_for()  # the last report
    else:
        if "interventions.outcome" not in heron.methods():
            page.locator("#cards .note", has_text="not available on this server").wait_for()
        else:
            page.locator("#watching", has_text="Watching room default").wait_for()
    shoot(path.strip("/"))
    assert unnamed_controls(page) == []
    assert page.locator("[role=alert]").count() == 0, page.locator("[role=alert]").all_inner_texts()
    assert not page.errors, page.errors


def test_every_page_and_asset_carries_the_security_headers(heron: Heron) -> None:
    with httpx.Client(base_url=heron.url) as client:
        for path in ["/", "/libraries", "/jobs", "/static/heron.js", "/static/heron.css"]:
            got = client.get(path)
            assert got.status_code == 200, path
            csp = got.headers["content-security-policy"]
            for rule in ["default-src 'self'", "script-src 'self'", "frame-ancestors 'none'",
                         "object-src 'none'", "base-uri 'none'"]:  # fmt: skip
                assert rule in csp, (path, rule)
            assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
            assert got.headers["x-content-type-options"] == "nosniff"
        chat = client.get("/").text
        assert re.findall(r"<script(?![^>]*\bsrc=)", chat) == []  # no inline script
        assert re.search(r"<[^>]+\son[a-z]+=", chat) is None  # no inline handler
        assert re.search(r"\sstyle=", chat) is None  # no inline style
        assert client.get("/", headers={"origin": "http://evil.example"}).status_code == 403


def test_the_chat_page_weighs_under_150_kb(heron: Heron) -> None:
    with httpx.Client(base_url=heron.url) as client:
        html = client.get("/").text
        assets = re.findall(r'(?:src|href)="(/static/[^"]+)"', html)
        total = len(html.encode()) + sum(len(client.get(a).content) for a in assets)
    names = {a.split("?")[0] for a in assets}
    assert {"/static/heron.js", "/static/chat.js", "/static/heron.css"} <= names
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


def test_stop_ends_an_answer_being_written(heron: Heron, page) -> None:  # type: ignore[no-untyped-def]
    page.goto(heron.url + "/")
    page.select_option("#mode", "generative")  # the local model: seconds, time to stop it
    page.fill("#message", "Explain what a Pod is.")
    page.keyboard.press("Enter")
    stop = page.locator("#stop")
    page.locator("#stop:not([disabled])").wait_for()
    stop.click()
    page.locator("li.turn .meta", has_text="Stopped.").wait_for()
    assert page.locator("#send").is_enabled() and stop.is_disabled()
    assert page.locator("li.turn[data-done=true]").count() == 0
    assert not page.errors, page.errors
