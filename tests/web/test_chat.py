"""The chat page as people use it: a streamed answer rendered as Markdown whose inline
markers open the cited passage beside it (Escape closes it, the source opens at its
lines); conversations in a sidebar that survive a reload, renamed and deleted there;
copy, regenerate and stop; the model picker naming alias and provider; a fallback said
plainly with the generated text one click away; nothing in an answer can run."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from heron.agent.sessions import Asker, Sessions, sessions_file
from tests.web.conftest import Heron

QUESTION = "How do I roll back a Deployment to its previous revision?"
ROLLBACK = {"library": "tiny", "collection": "tasks", "page": "tasks/rollback", "heading": "",
            "url_or_path": "", "line_range": [1, 4]}  # fmt: skip
MARKDOWN = """Roll it back [1]:

- check the history
- undo the rollout

| command | what it does |
|---|---|
| `kubectl rollout undo` | returns to the previous revision |

```sh
kubectl rollout undo deployment/web
```

<img src=x onerror=window.pwned=1> [a link](javascript:window.pwned=2)
<script>window.pwned=3</script>
"""


def seed(heron: Heron, message: str, text: str, **fields: Any) -> str:
    """A stored turn (as the agent stores one) in a new page conversation of the
    machine's user (the server has no token: every browser is that user)."""
    sid = uuid.uuid4().hex
    record = {"answer": text, "citations": [ROLLBACK], "session_id": sid, "model": "local",
              "mode": "generative", "fallback": None, "finish_reason": "stop",
              "grounding": {"query": message, "libraries": ["tiny"], "how": "message"},
              "related": [ROLLBACK | {"page": "concepts/pods", "score": 0.42}],
              } | fields  # fmt: skip
    sessions = Sessions(sessions_file(heron.root / "home" / "agent.db"))
    try:
        sessions.save(sid, message, record, asker=Asker("", "page", admin=True))
    finally:
        sessions.close()
    return sid


def ask(heron: Heron, page, library: str, message: str) -> None:  # type: ignore[no-untyped-def]
    """Open the chat page and send ``message`` to ``library``, quoted (no model call)."""
    page.goto(heron.url + "/")
    page.locator(f"#library option[value={library}]").wait_for(state="attached")
    page.select_option("#mode", "extractive")
    page.select_option("#library", library)
    page.fill("#message", message)
    page.keyboard.press("Enter")


def test_an_answer_streams_and_its_inline_marker_opens_the_passage(
    heron: Heron, page, shoot
) -> None:  # type: ignore[no-untyped-def]
    ask(heron, page, "tiny", QUESTION)
    turn = page.locator("li.turn[data-done=true]")
    turn.wait_for()
    answer = turn.locator(".answer")
    assert "kubectl rollout undo" in answer.inner_text()
    assert answer.get_attribute("data-first-token-at"), "no token event reached the page"
    assert (
        "quoted" in turn.locator(".meta").inner_text()
        and "model local" in turn.locator(".meta").inner_text()
    )
    assert turn.locator(".grounding").inner_text().startswith("Searched")
    marker = answer.locator("a.cite[data-page='tasks/rollback']").first
    marker.focus()
    page.keyboard.press("Enter")  # keyboard only
    aside = page.locator("#passage")
    aside.locator(".p-text").wait_for()
    assert aside.locator(".p-library").inner_text() == "tiny"
    assert aside.locator(".p-page").inner_text() == "tasks/rollback"
    assert "kubectl rollout undo" in aside.locator(".p-text").inner_text()
    first, last = aside.locator(".p-lines").inner_text().split("\u2013")
    source = aside.locator(".p-source a")
    assert source.inner_text() == f"{heron.root / 'docs'}/tasks/rollback.md:{first}-{last}"
    assert source.get_attribute("href").endswith(f"first={first}&last={last}#L{first}")
    shoot("chat-passage")
    page.keyboard.press("Escape")
    assert aside.is_hidden()
    assert (
        page.evaluate("() => document.activeElement.dataset.page") == "tasks/rollback"
    )  # back to the marker
    options = page.locator("#model option").all_inner_texts()
    assert any(o.startswith("local (") for o in options) and options[0].startswith(
        "Default: local ("
    )
    page.reload()  # the conversation is kept: the sidebar names it, its turns come back
    link = page.locator("#conv-list a.conv[aria-current=page]")
    link.wait_for()
    assert link.inner_text() == QUESTION
    page.locator("li.turn .you", has_text=QUESTION).wait_for()
    assert page.locator("li.turn a.cite[data-page='tasks/rollback']").count() >= 1
    assert not page.errors, page.errors


#: The page's fetch, the sidebar's list of conversations answered late: once a question's
#: stream has started, or after 3 s.
SLOW_SIDEBAR = """(() => {
  const fetch = window.fetch;
  let asked = null;
  const streaming = new Promise((ok) => { asked = ok; });
  window.fetch = async (url, init) => {
    if (String(url).includes("/chat/stream")) asked();
    else if (init && String(init.body || "").includes('"sessions.list"')) {
      await Promise.race([streaming, new Promise((ok) => setTimeout(ok, 3000))]);
    }
    return fetch(url, init);
  };
})();"""


def test_a_question_sent_while_the_page_still_opens_is_answered_not_lost(
    heron: Heron, page
) -> None:  # type: ignore[no-untyped-def]
    # The pickers fill at once, the sidebar late: the question is sent before the page
    # has opened its conversation, which once cleared its turn and aborted its stream.
    page.add_init_script(SLOW_SIDEBAR)
    ask(heron, page, "tiny", QUESTION)
    assert page.locator("#conv-list a.conv").count() == 0  # still opening
    turn = page.locator("li.turn[data-done=true]")
    turn.wait_for()
    assert "kubectl rollout undo" in turn.locator(".answer").inner_text()
    assert page.locator("li.turn").count() == 1
    page.locator("#conv-list a.conv[aria-current=page]", has_text=QUESTION).wait_for()
    assert not page.errors, page.errors


def test_markdown_renders_as_structure_and_nothing_in_it_runs(
    heron: Heron, page, audit, shoot
) -> None:  # type: ignore[no-untyped-def]
    sid = seed(heron, "How do I undo a rollout?", MARKDOWN)
    page.goto(f"{heron.url}/?session={sid}")
    answer = page.locator("li.turn[data-done=true] .answer")
    answer.wait_for()
    assert answer.locator("ul > li").count() == 2
    assert answer.locator("table th").all_inner_texts() == ["command", "what it does"]
    assert "kubectl rollout undo deployment/web" in answer.locator("pre code").inner_text()
    assert answer.locator("img, script").count() == 0
    assert answer.locator("a[href^='javascript'], a[href^='JAVASCRIPT']").count() == 0
    assert answer.locator("a", has_text="a link").count() == 0  # the javascript: link is text
    assert page.evaluate("() => window.pwned") is None
    assert audit(page) == []
    page.locator(".answer a.cite").first.click()
    page.locator("#passage .p-text").wait_for()
    assert page.locator("#passage .p-page").inner_text() == "tasks/rollback"
    page.locator("li.turn .related button", has_text="concepts/pods").click()  # "also relevant"
    page.locator("#passage .p-page", has_text="concepts/pods").wait_for()
    shoot("chat-markdown")
    assert not page.errors, page.errors


def test_library_text_made_of_markup_stays_inert_in_an_answer(heron: Heron, page) -> None:  # type: ignore[no-untyped-def]
    ask(heron, page, "evil", "quokka marker passage")
    answer = page.locator("li.turn[data-done=true] .answer")
    answer.wait_for()
    assert answer.inner_text().strip()
    page.locator("li.turn button", has_text="evil / evil").first.wait_for()  # found and listed
    assert page.locator("li.turn img, li.turn script").count() == 0
    hrefs = page.locator("li.turn a[href]").evaluate_all(
        "(as) => as.map((a) => a.getAttribute('href'))"
    )
    assert not [h for h in hrefs if not h.startswith(("#", "/", "http"))], hrefs
    assert page.evaluate("() => window.pwned") is None
    assert not page.errors, page.errors


def test_a_fallback_is_said_plainly_with_the_generated_text_a_click_away(
    heron: Heron, page, shoot
) -> None:  # type: ignore[no-untyped-def]
    sid = seed(heron, "What is a Pod?", "A Pod runs one or more containers [1].",
               fallback="degenerate", mode="extractive", finish_detail="degenerate",
               generated="Pods pods pods pods")  # fmt: skip
    page.goto(f"{heron.url}/?session={sid}")
    notice = page.locator("li.turn .notice")
    notice.wait_for()
    assert "kept repeating itself" in notice.inner_text()
    generated = page.locator("li.turn details.generated")
    assert not generated.locator("pre").is_visible()
    generated.locator("summary").click()
    assert generated.locator("pre").inner_text() == "Pods pods pods pods"
    shoot("chat-fallback")
    assert not page.errors, page.errors


def test_conversations_are_renamed_deleted_and_started_in_the_sidebar(heron: Heron, page) -> None:  # type: ignore[no-untyped-def]
    sid = seed(heron, "Which port does the API use?", "Port 8765 [1].")
    page.goto(f"{heron.url}/?session={sid}")
    item = page.locator("#conv-list li", has=page.locator(f"a[data-id='{sid}']"))
    item.wait_for()
    item.get_by_role("button", name="Rename “Which port does the API use?”").click()
    page.locator("#conv-list .rename-input").fill("API port")
    page.keyboard.press("Enter")
    page.locator(f"#conv-list a[data-id='{sid}']", has_text="API port").wait_for()
    page.reload()
    page.locator(f"#conv-list a[data-id='{sid}']", has_text="API port").wait_for()
    assert page.locator("#conversation-h").inner_text() == "API port"
    page.locator("li.turn[data-done=true]").wait_for()
    page.get_by_role("button", name="Delete “API port”").click()
    page.locator("#conv-list button.danger").click()
    page.locator("li.turn").wait_for(state="detached")
    page.locator("#conv-list button.danger").wait_for(state="detached")
    assert page.locator(f"#conv-list a[data-id='{sid}']").count() == 0
    assert page.locator("#empty").is_visible()
    assert sid not in {s["id"] for s in heron.rpc("sessions.list")}  # type: ignore[union-attr]
    page.get_by_role("button", name="New conversation").click()
    assert page.locator("#conversation-h").inner_text() == "New conversation"
    assert not page.errors, page.errors


def test_copy_and_regenerate_an_answer(heron: Heron, page) -> None:  # type: ignore[no-untyped-def]
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    ask(heron, page, "tiny", "What does a Secret hold?")
    first = page.locator("li.turn[data-done=true]").first
    first.wait_for()
    first.get_by_role("button", name="Copy", exact=True).click()
    first.get_by_role("button", name="Copied").wait_for()
    assert "Secret" in page.evaluate("() => navigator.clipboard.readText()")
    first.get_by_role("button", name="Regenerate").click()
    page.locator("li.turn[data-done=true]").nth(1).wait_for()
    assert page.locator("li.turn .you").all_inner_texts() == ["What does a Secret hold?"] * 2
    assert not page.errors, page.errors


def test_stop_ends_an_answer_being_written(heron: Heron, page) -> None:  # type: ignore[no-untyped-def]
    page.goto(heron.url + "/")
    page.select_option("#mode", "generative")  # the local model: seconds, time to stop it
    page.fill("#message", "Explain what a Pod is.")
    page.keyboard.press("Enter")
    stop = page.locator("#stop")
    stop.wait_for()
    stop.click()
    page.locator("li.turn .stopped").wait_for()
    assert page.locator("#send").is_enabled() and stop.is_hidden()
    assert page.locator("li.turn[data-done=true]").count() == 0
    assert not page.errors, page.errors


def test_a_job_delegated_in_the_conversation_is_a_live_item_confirmed_there(
    heron: Heron, page
) -> None:  # type: ignore[no-untyped-def]
    # A job of this session that waits for a person: the chat shows it live, with its
    # buttons; confirming there runs it, and its steps and verdict arrive in the same item.
    sid = seed(heron, "Is main broken?", "I'll check in a background job [1].")
    job = heron.rpc("jobs.create", prompt="is main broken?", success_criteria="tests pass",
                    risk_level="deploy_allowed", session_id=sid, by="ana")  # fmt: skip
    other = heron.rpc("jobs.create", prompt="what changed?", session_id="another")
    page.goto(f"{heron.url}/?session={sid}")
    item = page.locator(f"li.job-item[data-job='{job['id']}']")  # type: ignore[index]
    page.locator(
        f"li.job-item[data-job='{job['id']}'][data-state=waiting_for_confirmation]"
    ).wait_for()
    assert page.locator(f"li.job-item[data-job='{other['id']}']").count() == 0  # type: ignore[index]
    item.get_by_role("button", name="Confirm").click()
    page.locator(f"li.job-item[data-job='{job['id']}'][data-state=completed]").wait_for()
    assert item.get_by_role("button", name="Confirm").count() == 0
    steps = item.locator(".job-step").evaluate_all("els => els.map(e => e.dataset.step)")
    assert {"git_status", "git_diff", "test"} <= set(steps)
    assert item.locator(".job-verdict").get_attribute("data-ok") == "true"
    assert not page.errors, page.errors


def test_each_person_s_sidebar_lists_only_their_own_page_conversations(
    heron: Heron, browser
) -> None:  # type: ignore[no-untyped-def]
    """Two people, each with a named key their browser sends (as a proxy that signs
    people in would), beside a conversation of the API: at 1280 and at 390 px each
    sidebar lists exactly that person's conversations made on the page."""
    suffix = uuid.uuid4().hex[:8]
    scopes = ["read", "chat", "jobs"]
    tokens = {who: heron.rpc("keys.create", name=f"{who}-{suffix}", scopes=scopes)["token"]
              for who in ("ana", "bea")}  # type: ignore[index]  # fmt: skip
    api = heron.rpc("agent.chat", message="What does a Secret hold?", answer="extractive")
    asked = {"ana": ["What does a Pod run?", QUESTION], "bea": ["Where do I keep a password?"]}
    for who, questions in asked.items():
        context = browser.new_context(
            viewport={"width": 1280, "height": 860},
            locale="en-US",
            extra_http_headers={"authorization": f"Bearer {tokens[who]}"},
        )
        context.set_default_timeout(30_000)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc, seen=errors: seen.append(str(exc)))
        page.on("console", lambda m, seen=errors: m.type == "error" and seen.append(m.text))
        page.goto(heron.url + "/")
        page.locator("#library option[value=tiny]").wait_for(state="attached")
        page.select_option("#mode", "extractive")
        page.select_option("#library", "tiny")
        for question in questions:
            page.get_by_role("button", name="New conversation").click()
            page.fill("#message", question)
            page.keyboard.press("Enter")
            page.locator("li.turn[data-done=true]").wait_for()
        theirs = httpx.post(
            f"{heron.url}/rpc",
            json={"jsonrpc": "2.0", "id": 1, "method": "sessions.list",
                  "params": {"door": "page"}},
            headers={"authorization": f"Bearer {tokens[who]}"},
            timeout=60,
        ).json()["result"]  # fmt: skip
        assert sorted(s["title"] for s in theirs) == sorted(questions)
        for width, height in ((1280, 860), (390, 844)):
            page.set_viewport_size({"width": width, "height": height})
            page.reload()
            links = page.locator("#conv-list a.conv")
            links.nth(len(questions) - 1).wait_for()
            shown = links.evaluate_all("(as) => as.map((a) => a.dataset.id)")
            assert shown == [s["id"] for s in theirs], (who, width)
            assert api["session_id"] not in shown  # type: ignore[index]
            assert sorted(links.all_inner_texts()) == sorted(questions)
            assert page.evaluate("() => document.documentElement.scrollWidth <= innerWidth")
        assert not errors, errors
        context.close()
