from __future__ import annotations

import os
from pathlib import Path

from heron.libraries.scan import matches, read_page, scan
from tests.libraries.conftest import write_pages


def test_collections_are_top_folders_or_marked_folders(tmp_path: Path) -> None:
    root = write_pages(
        tmp_path / "lib",
        {
            "index.md": "root page",
            "concepts/a.md": "a",
            "concepts/deep/b.md": "b",
            "guides/api/c.md": "c",
            "guides/api/.collection": "",
            ".git/x.md": "hidden",
            ".ai/concepts/a.toml": "",
            "photo.png": "not a document",
        },
    )
    pages, skipped = scan(root, 10_000)
    assert [(p.id, p.collection) for p in pages] == [
        ("concepts/a", "concepts"),
        ("concepts/deep/b", "concepts"),
        ("guides/api/c", "guides/api"),
        ("index", ""),
    ]
    assert skipped == []


def test_the_docs_repo_layout_names_collections_by_their_folder(tmp_path: Path) -> None:
    root = write_pages(
        tmp_path / "lib",
        {
            "collections/guide/intro.md": "a",
            "collections/guide/deep/more.md": "b",
            "collections/api/.collection": 'name = "api_reference"\n',
            "collections/api/calls.md": "c",
            "collections/tools/sub/.collection": "",
            "collections/tools/sub/x.md": "d",
            "collections/loose.md": "e",
            "docs/books/manual/m.md": "f",
        },
    )
    pages, _ = scan(root, 10_000)
    assert [(p.id, p.collection) for p in pages] == [
        ("collections/api/calls", "api_reference"),
        ("collections/guide/deep/more", "guide"),
        ("collections/guide/intro", "guide"),
        ("collections/loose", "collections"),  # not in a collection's folder
        ("collections/tools/sub/x", "tools/sub"),
        ("docs/books/manual/m", "docs"),
    ]
    configured, _ = scan(root, 10_000, collections="docs/books")
    assert configured[-1].collection == "manual"
    assert configured[1].collection == "collections"  # only the configured folder counts


def test_symlink_loops_and_outside_links_are_skipped(tmp_path: Path) -> None:
    root = write_pages(tmp_path / "lib", {"a/page.md": "text"})
    os.symlink(root / "a", root / "a" / "loop")  # a folder loop
    os.symlink(root / "x.md", root / "y.md")  # a file loop
    os.symlink(root / "y.md", root / "x.md")
    outside = tmp_path / "secret.md"
    outside.write_text("private")
    os.symlink(outside, root / "leak.md")
    os.symlink(root / "a" / "page.md", root / "alias.md")  # inside: read
    pages, skipped = scan(root, 10_000)
    assert [p.id for p in pages] == ["a/page", "alias"]
    reasons = {s.path: s.reason for s in skipped}
    assert set(reasons) == {"x.md", "y.md", "leak.md"}
    assert "outside the library" in reasons["leak.md"]


def test_oversized_page_is_skipped_with_the_setting_to_raise(tmp_path: Path) -> None:
    root = write_pages(tmp_path / "lib", {"big.md": "x" * 2000, "ok.md": "fine"})
    pages, skipped = scan(root, 1000)
    assert [p.id for p in pages] == ["ok"]
    assert "HERON_LIBRARY_MAX_PAGE_BYTES" in skipped[0].reason


def test_binary_and_non_utf8(tmp_path: Path) -> None:
    root = write_pages(
        tmp_path / "lib",
        {"bin.md": b"\x89PNG\x00\x00\x01", "latin.md": "caf\xe9 cr\xe8me".encode("latin-1")},
    )
    pages = {p.id: p for p in scan(root, 10_000)[0]}
    assert read_page(pages["bin"], 10_000) == (
        None,
        "cannot be read as Markdown: binary file (NUL bytes), not text",
    )
    page, refused = read_page(pages["latin"], 10_000)
    assert page is not None and refused is None
    assert page.lines == ["caf\ufffd cr\ufffdme"] and "iconv" in page.warnings[0]


def test_mdx_and_markdown_pages_and_one_page_per_id(tmp_path: Path) -> None:
    root = write_pages(
        tmp_path / "lib",
        {"a.md": "a", "a.mdx": "a again", "b.mdx": "b", "c.markdown": "c", ".mdx": "no name"},
    )
    pages, skipped = scan(root, 10_000)
    assert [(p.id, p.path.name) for p in pages] == [
        ("a", "a.md"),
        ("b", "b.mdx"),
        ("c", "c.markdown"),
    ]
    assert [(s.path, s.reason) for s in skipped] == [("a.mdx", "the page a is a.md")]


def test_include_and_exclude_globs(tmp_path: Path) -> None:
    root = write_pages(
        tmp_path / "lib",
        {
            "content/en/docs/a.md": "a",
            "content/en/docs/deep/_index.md": "index",
            "content/en/docs/deep/b.md": "b",
            "content/fr/docs/a.md": "fr",
            "README.md": "readme",
        },
    )
    pages, _ = scan(root, 10_000, include=["content/en/**"], exclude=["**/_*.md"])
    assert [p.id for p in pages] == ["content/en/docs/a", "content/en/docs/deep/b"]
    pages, _ = scan(root, 10_000, include=["*.md"])  # '*' stays within the root folder
    assert [p.id for p in pages] == ["README"]
    assert matches("docs/a/b.md", "docs/**") and not matches("docs/a/b.md", "docs/*.md")
    assert matches("b.md", "**/b.md") and matches("x/y/b.md", "**/b.md")
