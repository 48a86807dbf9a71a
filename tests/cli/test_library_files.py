"""``heron library add-files`` and ``remove-file`` in a subprocess, as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_cli import heron


def test_files_are_added_indexed_searched_and_removed(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERON_LIBRARY_DEFAULT_DOCS", "false")
    monkeypatch.setenv("HERON_LIBRARY_UPLOAD_MAX_FILE_BYTES", "2000")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "lunch.md").write_text("# Lunch\n\nThe canteen opens at noon on weekdays.\n")
    heron("library", "add", "notes", str(docs))
    given = tmp_path / "given"
    given.mkdir()
    (given / "vpn.md").write_text("# VPN\n\nThe VPN password rotates every 90 days.\n")
    (given / "scan.md").write_bytes(b"%PDF-1.5\n\x00\x01binary")  # a PDF named .md
    (given / "huge.md").write_text("# Huge\n\n" + "words " * 1000)

    paths = [str(given / n) for n in ("vpn.md", "scan.md", "huge.md")]
    done = heron("library", "add-files", "notes", *paths, "--folder", "it", "--json", ok=False)
    assert done.returncode == 1, done.stderr  # some were refused
    report = json.loads(done.stdout)
    assert [f["ok"] for f in report["files"]] == [True, False, False]
    assert report["files"][1]["error"].startswith("scan.md: it is a PDF, not UTF-8 text")
    assert "HERON_LIBRARY_UPLOAD_MAX_FILE_BYTES" in report["files"][2]["error"]
    assert report["index"]["added"] == 1 and (docs / "it" / "vpn.md").exists()
    assert "Traceback" not in done.stderr
    found = json.loads(heron("search", "how often does the VPN password rotate", "--json").stdout)
    assert found[0]["page"] == "it/vpn"

    human = heron(
        "library", "add-files", "notes", str(given / "vpn.md"), "--folder", "it", ok=False
    )
    assert human.returncode == 1 and "exists in library 'notes'; it is kept" in human.stderr
    replaced = heron(
        "library", "add-files", "notes", str(given / "vpn.md"), "--folder", "it", "--replace"
    )
    assert "replaced it/vpn.md" in replaced.stdout

    removed = json.loads(heron("library", "remove-file", "notes", "it/vpn.md", "--json").stdout)
    assert removed["page"] == "it/vpn" and removed["index"]["removed"] == 1
    missing = heron("library", "remove-file", "notes", "it/vpn.md", ok=False)
    assert missing.returncode == 1 and "No file it/vpn.md in library 'notes'" in missing.stderr
    assert "Traceback" not in missing.stderr
