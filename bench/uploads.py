"""Files added to a library (issue 46): what adding one costs beside a whole ``heron
index``, and an upload through ``POST /upload`` end to end.

Setup: a fresh HERON_HOME (MiniLM), a folder library of N documents made here: nine in
ten Markdown pages, one in ten a ten-page PDF (``tests/libraries/documents.py``'s
writer), each a few hundred words.

1. **One file added to a library of N documents**, for N in ``SIZES``: ``add_files``
   (only the new page read, parsed and embedded: ``index_library(only=...)``) beside
   ``heron index`` run after the same kind of file is written into the folder (every
   document read and parsed, only the new one embedded). Median seconds of ``RUNS``.
2. **``POST /upload`` of a running ``heron serve``**: ``FILES`` files at once (Markdown,
   PDF and Word) with ``Accept: text/event-stream``: seconds to the first event and to
   ``done``, files per second, events received; the same files again as JSON (no events).
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench.common import table
from tests.libraries import documents

SIZES = (100, 500)
RUNS = 3
FILES = 20


def _library(root: Path, size: int) -> Path:
    folder = root / f"lib{size}"
    folder.mkdir()
    for n in range(size):
        words = " ".join(f"topic{n % 97} setting{n % 13} value{n}" for _ in range(40))
        if n % 10 == 9:
            pages = [[f"Manual {n} page {p}: {words}"] for p in range(10)]
            (folder / f"manual{n}.pdf").write_bytes(documents.pdf(pages))
        else:
            (folder / f"page{n}.md").write_text(f"# Page {n}\n\n{words}\n\n## More\n\n{words}\n")
    return folder


def _one_file_rows(root: Path) -> list[list[object]]:
    from heron.libraries import add_library, index_library
    from heron.libraries.upload import NewFile, add_files
    from heron.settings import Settings
    from heron.store import open_store

    settings = Settings()
    rows: list[list[object]] = []
    with open_store(settings) as store:
        for size in SIZES:
            name = f"lib{size}"
            add_library(name, str(_library(root, size)), settings)
            index_library(name, store, settings=settings)
            added, whole = [], []
            for run in range(RUNS):
                page = f"# Added {run}\n\nThe VPN password of site {run} rotates monthly.\n"
                started = time.perf_counter()
                add_files(name, [NewFile(f"up{run}.md", page.encode())], store, settings)
                added.append(time.perf_counter() - started)
                (root / name / f"disk{run}.md").write_text(page)
                started = time.perf_counter()
                index_library(name, store, settings=settings)
                whole.append(time.perf_counter() - started)
            one, full = statistics.median(added), statistics.median(whole)
            rows.append([size, one, full, f"{full / one:.1f}x"])
    return rows


def _files(tag: str) -> list[tuple[str, tuple[str, bytes, str]]]:
    """``FILES`` files whose texts are ``tag``'s own: no run reads another's embeddings
    from the cache."""
    out = []
    for n in range(FILES):
        text = f"Item {n} of {tag}: the badge of floor {n} opens the {tag} door after 19:00."
        if n % 4 == 1:
            name, data = f"f{n}.pdf", documents.pdf([[text]] * 3)
        elif n % 4 == 2:
            name, data = f"f{n}.docx", documents.word()
        else:
            name, data = f"f{n}.md", f"# Item {n}\n\n{text}\n".encode()
        out.append(("file", (name, data, "application/octet-stream")))
    return out


def _upload_rows(root: Path, env: dict[str, str]) -> list[list[object]]:
    folder = root / "team"
    folder.mkdir()
    with socket.socket() as sock:  # a free port, which the server binds itself
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "heron", "serve", "--port", str(port), "--log-level", "warning"],
        env=os.environ | env | {"HERON_LIBRARY_ROOTS": json.dumps([str(root)])},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        rpc = {"jsonrpc": "2.0", "id": 1, "method": "library.add"}
        httpx.post(f"{url}/rpc", json=rpc | {"params": {"name": "team", "source": str(folder)}})
        warm = [("file", ("warm.md", b"# Warm\n\nThe model loads here.\n", "text/markdown"))]
        httpx.post(f"{url}/upload/team", files=warm, timeout=600)  # the model, loaded once
        rows: list[list[object]] = []
        for kind, headers, sub in (
            ("events", {"accept": "text/event-stream"}, "a"),
            ("JSON", {}, "b"),
        ):
            started = time.perf_counter()
            first, events = None, 0
            with httpx.stream(
                "POST", f"{url}/upload/team", files=_files(sub), data={"folder": sub},
                headers=headers, timeout=600,
            ) as reply:  # fmt: skip
                for line in reply.iter_lines():
                    if line.startswith("event: "):
                        first = first or time.perf_counter() - started
                        events += 1
            done = time.perf_counter() - started
            rows.append([kind, FILES, first or "-", done, FILES / done, events or "-"])
        return rows
    finally:
        server.terminate()
        server.wait(60)


def run() -> str:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        env = {
            "HERON_HOME": str(root / "home"),
            "HERON_LIBRARY_DEFAULT_DOCS": "false",
            "HERON_EMBEDDER": "minilm",
        }
        os.environ.update(env)
        first = table(
            "One file added to a library of N documents: upload vs heron index (s, median)",
            ["documents", "upload (its page alone)", "heron index (all read)", "ratio"],
            _one_file_rows(root),
        )
        second = table(
            f"POST /upload of {FILES} files (Markdown, PDF, Word), indexed",
            ["answer", "files", "first event (s)", "done (s)", "files/s", "events"],
            _upload_rows(root, env),
        )
    return first + "\n" + second
