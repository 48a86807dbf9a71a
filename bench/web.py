"""The web page on loopback: what the chat page weighs with its assets, how soon it
answers and is usable, and how soon a streamed token shows after the server sent it, in
a real headless Chromium.

``heron serve``'s app runs in this process (uvicorn in a thread) over a fresh home with a
small indexed library, so the moment the server writes each ``token`` frame can be noted
(``heron.server.doors.sse.message`` wrapped); the page notes when the first token was put in the
DOM (``data-first-token-at``, epoch ms on the same clock). Page loads read the browser's
Navigation Timing: first byte (``responseStart``), ``DOMContentLoaded``, and ready: the
chat script filled the model and library pickers through the API (``data-ready-at``),
cold (a new browser context per load) and with the assets cached (one tab, reloaded).
"""

from __future__ import annotations

import os
import socket
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import table

LOADS = 20
ASKS = 10
CHROMIUM = "/usr/bin/chromium"
PAGES = {
    "rollback.md": "# Roll back a Deployment\n\nUse kubectl rollout undo to return a "
    "Deployment to its previous revision.\n",
    "pods.md": "# Pods\n\nA Pod runs one or more containers that share storage and network.\n",
    "secrets.md": "# Secrets\n\nA Secret holds a small amount of sensitive data.\n",
}


def _home(root: Path) -> None:
    from heron.libraries import add_library, index_library
    from heron.settings import Settings
    from heron.store import open_store

    docs = root / "docs"
    docs.mkdir(parents=True)
    for name, text in PAGES.items():
        (docs / name).write_text(text)
    settings = Settings()
    add_library("demo", str(docs), settings)
    store = open_store(settings)
    try:
        index_library("demo", store, settings=settings)
    finally:
        store.close()


def _serve(sent: list[float]) -> tuple[str, object]:
    import uvicorn

    from heron.server import create_app
    from heron.server.doors import sse
    from heron.settings import Settings

    original = sse.message

    def noted(data: Any, *, event: str | None = None, id: str | int | None = None) -> Any:
        if event == "token":  # the chat stream frames each event as it sends it
            sent.append(time.time() * 1000)
        return original(data, event=event, id=id)

    sse.message = noted
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(
        create_app(Settings()), lifespan="on", log_config=None, access_log=False
    )
    server = uvicorn.Server(config)
    threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return f"http://127.0.0.1:{sock.getsockname()[1]}", server


def _weight(url: str) -> int:
    """Bytes of the chat page and of every script and stylesheet it names."""
    import re

    import httpx

    with httpx.Client(base_url=url) as client:
        html = client.get("/").content
        assets = re.findall(rb'(?:src|href)="(/static/[^"]+)"', html)
        return len(html) + sum(len(client.get(a.decode()).content) for a in assets)


def _timing(page, url: str) -> tuple[float, float, float]:  # type: ignore[no-untyped-def]
    page.goto(url + "/")
    page.locator("body[data-ready-at]").wait_for()
    return tuple(
        page.evaluate(
            "() => { const n = performance.getEntriesByType('navigation')[0];"
            " return [n.responseStart, n.domContentLoadedEventEnd,"
            " Number(document.body.dataset.readyAt)]; }"
        )
    )


def _loads(browser, url: str) -> tuple[list, list]:  # type: ignore[no-untyped-def]
    """Cold loads (a new browser context each: no cache, a new renderer) and loads in one
    tab whose cache holds the assets; the first of each warms up and is not counted."""
    cold = []
    for _ in range(LOADS + 1):
        context = browser.new_context()
        cold.append(_timing(context.new_page(), url))
        context.close()
    page = browser.new_page()
    warm = [_timing(page, url) for _ in range(LOADS + 1)]
    page.close()
    return cold[1:], warm[1:]


def _asks(browser, url: str, sent: list[float]) -> list[float]:  # type: ignore[no-untyped-def]
    page = browser.new_page()
    page.goto(url + "/")
    page.locator("body[data-ready-at]").wait_for()
    page.select_option("#mode", "extractive")
    gaps = []
    for n in range(ASKS + 1):
        sent.clear()
        page.fill("#message", "How do I roll back a Deployment?")
        page.keyboard.press("Enter")
        done = page.locator("li.turn[data-done=true]").nth(n)
        done.wait_for()
        shown = float(done.locator(".answer").get_attribute("data-first-token-at"))
        if n:  # the first answer opens the agent: not counted
            gaps.append(shown - sent[0])
    page.close()
    return gaps


def run() -> str:
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ.update(
            {
                "HERON_HOME": str(root / "home"),
                "HERON_LIBRARY_DEFAULT_DOCS": "false",
                "HERON_SKILLS_DIRS": str(root / "skills"),
            }
        )
        _home(root)
        sent: list[float] = []
        url, server = _serve(sent)
        weight = _weight(url)
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM)
                cold, warm = (np.array(x) for x in _loads(browser, url))
                gaps = np.array(_asks(browser, url, sent))
                browser.close()
        finally:
            server.should_exit = True  # type: ignore[attr-defined]

    def row(what: str, ms: np.ndarray) -> tuple[str, str, str, str]:
        p50, p95 = np.percentile(ms, [50, 95])
        return what, f"{p50:.1f} ms", f"{p95:.1f} ms", f"{ms.max():.1f} ms"

    weighed = table(
        "Chat page weight (the limit: 150 KB)",
        ["what", "size"],
        [("the page, its scripts, stylesheet and catalogue", f"{weight / 1000:.1f} KB")],
    )
    return (
        weighed
        + "\n\n"
        + table(
            f"Web page on loopback ({LOADS} loads each, {ASKS} extractive answers)",
            ["measure", "p50", "p95", "max"],
            [
                row("chat page, cold: time to first byte", cold[:, 0]),
                row("chat page, cold: DOMContentLoaded (scripts run)", cold[:, 1]),
                row("chat page, cold: ready (pickers filled through the API)", cold[:, 2]),
                row("chat page, cached assets: time to first byte", warm[:, 0]),
                row("chat page, cached assets: DOMContentLoaded", warm[:, 1]),
                row("chat page, cached assets: ready", warm[:, 2]),
                row("first token shown after the server sent it", gaps),
            ],
        )
    )
