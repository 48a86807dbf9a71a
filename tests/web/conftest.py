"""The web page's tests: a real ``heron serve`` on a free loopback port over a fresh
HERON_HOME (the tiny library, a library whose page is markup, a watchdog report, a git
workspace for jobs), and one real headless Chromium (Debian's, driven by Playwright) for
the whole run, each test in a fresh context of its own.

``audit(page)`` runs axe-core (from its npm package, which ``scripts/setup`` installs in
``.venv/node``) in the page and returns its serious and critical violations. Missing,
Chromium or axe-core skip their tests, and fail them when ``CI`` is set.

Screenshots go under the run's base temporary folder (``web-screenshots/``) and are
copied to ``.pytest-artifacts/web/`` in the checkout, for people to look at."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from heron.libraries import add_library, index_library
from heron.ops.watchdog import Watchdog, parse_config
from heron.settings import Settings
from heron.store import open_store
from tests.ci import missing
from tests.jobs.conftest import BUILD_OK, git
from tests.libraries.conftest import write_pages
from tests.server.conftest import build_home, free_socket, heron_env, wait_healthy

CHROMIUM = Path("/usr/bin/chromium")
ROOT = Path(__file__).parents[2]
ARTIFACTS = ROOT / ".pytest-artifacts" / "web"
AXE = ROOT / ".venv" / "node" / "node_modules" / "axe-core" / "axe.min.js"
#: A page whose title, heading and text are markup: the page must never run it.
XSS = "<script>window.pwned=1</script><img src=x onerror=window.pwned=2>"
EVIL = {
    "evil.md": f'---\ntitle: "{XSS}"\n---\n## {XSS}\n\nThe quokka marker passage: '
    "<img src=x onerror=window.pwned=3> and [a quokka link](javascript:window.pwned=4) "
    '<a href="javascript:window.pwned=5">quokka anchor</a>.\n',
}
#: axe-core's violations that count: the serious and the critical ones.
AUDIT = """async () => (await axe.run(document, {resultTypes: ["violations"]})).violations
  .filter((v) => v.impact === "serious" || v.impact === "critical")
  .map((v) => ({id: v.id, impact: v.impact, nodes: v.nodes.slice(0, 4).map((n) => n.html)}))"""

#: A watchdog with one check that passes (``python -c pass``).
WATCHDOG = json.dumps(
    {"checks": [{"name": "web-check", "kind": "command", "argv": [sys.executable, "-c", "pass"]}]}
)


@dataclass
class Heron:
    """One running ``heron serve``."""

    url: str
    root: Path
    proc: subprocess.Popen[str]
    log: Path
    token: str | None = None

    def rpc(self, method: str, **params: object) -> object:
        headers = {"authorization": f"Bearer {self.token}"} if self.token else {}
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        answer = httpx.post(f"{self.url}/rpc", json=body, headers=headers, timeout=60).json()
        assert "result" in answer, answer
        return answer["result"]

    def methods(self) -> set[str]:
        return {m["name"] for m in self.rpc("rpc.discover")["methods"]}  # type: ignore[index]


def web_env(tmp: Path) -> dict[str, str]:
    return heron_env(tmp) | {
        "HERON_TOOLS_ROOT": str(tmp / "repo"),
        "HERON_TOOLS_COMMANDS": json.dumps(["git", "sh"]),
        "HERON_JOBS_TEST_COMMAND": BUILD_OK,
        "HERON_LIBRARY_ROOTS": json.dumps([str(tmp)]),
    }


def build(tmp: Path) -> None:
    """The tiny library and the skill (as the server tests have), the markup library, a
    watchdog report, and a git repository for jobs to check."""
    build_home(tmp)
    settings = Settings()
    add_library("evil", str(write_pages(tmp / "evil", EVIL)), settings)
    store = open_store(settings)
    try:
        assert index_library("evil", store, settings=settings).error is None
    finally:
        store.close()
    # One watchdog run, so the Operations pane has a report to show.
    Watchdog(parse_config(WATCHDOG, "watchdog.yml"), settings).run_once()
    repo = tmp / "repo"
    repo.mkdir()
    (repo / "app.py").write_text("print('hi')\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "app.py")
    git(repo, "commit", "-q", "-m", "init")


@pytest.fixture(scope="session")
def web_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("web")
    with pytest.MonkeyPatch.context() as mp:
        for name in ("HERON_CONFIG", "HERON_API_TOKEN"):  # the build reads the settings
            mp.delenv(name, raising=False)
        for name, value in web_env(tmp).items():
            mp.setenv(name, value)
        build(tmp)
    return tmp


@pytest.fixture(scope="session")
def serve() -> Iterator:
    """``serve(root, token=None)``: a ``heron serve`` over ``root``'s home, stopped at the end."""
    started: list[Heron] = []

    def start(root: Path, token: str | None = None, port: int | None = None) -> Heron:
        if port is None:
            sock = free_socket()
            port = sock.getsockname()[1]
            sock.close()  # the server binds it itself, as a user's would
        env = os.environ | web_env(root) | ({"HERON_API_TOKEN": token} if token else {})
        log = root / f"serve-{port}.log"
        with open(log, "w") as out:  # a file, not a pipe nobody reads: it cannot fill up
            proc = subprocess.Popen(
                [sys.executable, "-m", "heron", "serve", "--port", str(port)],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                text=True,
            )
        url = f"http://127.0.0.1:{port}"
        wait_healthy(url, proc)
        started.append(Heron(url, root, proc, log, token))
        return started[-1]

    yield start
    for heron in started:
        heron.proc.send_signal(signal.SIGTERM)
        try:
            heron.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            heron.proc.kill()
            heron.proc.wait()


@pytest.fixture(scope="session")
def heron(web_home: Path, serve) -> Heron:  # type: ignore[no-untyped-def]
    """The shared server, without a token."""
    return serve(web_home)


@pytest.fixture(scope="module")
def browser() -> Iterator:
    """One headless Chromium per module. Missing, it skips (fails in CI). Not one per
    session: a running sync Playwright holds an event loop in the worker's main thread,
    and every later test in that worker that calls ``asyncio.run`` (the job runner's)
    failed with "cannot be called from a running event loop" whenever the scheduler
    (``--dist worksteal``) gave a worker web tests before them."""
    if not CHROMIUM.exists():
        missing(f"{CHROMIUM} is missing", "install it: scripts/setup (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing("playwright is not installed", "pip install playwright (scripts/setup)")
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM))
        yield chromium
        chromium.close()


@pytest.fixture(scope="session")
def axe_source() -> str:
    if not AXE.exists():
        missing(f"axe-core is missing ({AXE})", "run scripts/setup (npm install axe-core)")
    return AXE.read_text()


@pytest.fixture
def audit(axe_source: str) -> Callable:
    """``audit(page)``: axe-core's serious and critical violations on the page as it is."""

    def run(page) -> list[dict]:  # type: ignore[no-untyped-def]
        # Evaluated through the DevTools protocol, so the page's CSP (no inline script)
        # stays as it is and the page itself never loads axe.
        if not page.evaluate("() => typeof axe !== 'undefined'"):
            page.evaluate(axe_source)
        return page.evaluate(AUDIT)

    return run


@pytest.fixture
def page(browser, request: pytest.FixtureRequest) -> Iterator:  # type: ignore[no-untyped-def]
    """A fresh page (its own cookies) in English; script errors and dialogs fail the
    test. A test marked ``@pytest.mark.parametrize("page", [{...}], indirect=True)``
    passes the context's options (``locale``, ``extra_http_headers``...)."""
    options = {"viewport": {"width": 1280, "height": 860}, "locale": "en-US"}
    options |= getattr(request, "param", {})
    context = browser.new_context(**options)
    context.set_default_timeout(30_000)
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    tab.on("dialog", lambda d: errors.append(f"dialog: {d.message}"))
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    tab.errors = errors
    yield tab
    context.close()


@pytest.fixture
def shoot(page, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:  # type: ignore[no-untyped-def]
    """``shoot(name)``: save the whole page as ``NAME.png`` in the run's folder and in
    ``ARTIFACTS``."""

    def screenshot(name: str) -> Path:
        folder = tmp_path_factory.getbasetemp() / "web-screenshots"
        folder.mkdir(exist_ok=True)
        path = folder / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, ARTIFACTS / path.name)
        return path

    return screenshot
