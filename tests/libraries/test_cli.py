"""End-to-end: ``heron library``, ``heron index`` and ``heron search`` in a subprocess."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.test_cli import heron
from tests.llm_servers import KEY, ONE_MODEL
from tests.llm_servers import serve as serve_chat


@pytest.fixture
def library(home: Path, monkeypatch: pytest.MonkeyPatch, make_library: Callable[..., Path]) -> Path:
    monkeypatch.setenv("HERON_LIBRARY_DEFAULT_DOCS", "false")
    root = make_library()
    heron("library", "add", "lib", str(root))
    return root


def test_add_index_search_status_remove(library: Path, tmp_path: Path) -> None:
    listed = json.loads(heron("library", "list", "--json").stdout)
    assert listed == [
        {
            "name": "lib",
            "source": str(library),
            "builtin": False,
            "branch": None,
            "include": [],
            "exclude": [],
            "enrich": False,
            "collections": "collections",
            "language": "auto",
        }
    ]
    (report,) = json.loads(heron("index", "--json").stdout)
    assert (report["pages"], report["added"], report["error"]) == (3, 3, None)
    results = json.loads(heron("search", "undo a rollout", "--json", "-k", "2").stdout)
    assert results[0]["citation"] == "(lib, tasks/rollback)"
    assert {"library", "collection", "page", "title", "heading", "snippet", "score"} <= set(
        results[0]
    )
    assert {"components", "content_hash", "source", "lines"} <= set(results[0])
    human = heron("search", "password", "--library", "lib", "--collection", "concepts").stdout
    assert "(lib, concepts/secrets)" in human
    (status,) = json.loads(heron("library", "status", "--json").stdout)
    assert (status["pages"], status["indexed"], status["last_error"]) == (3, True, None)
    assert "3 pages" in heron("library", "status", "lib").stdout
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": "a", "text": "password"}\n{"id": "b", "text": "rollback"}\n')
    lines = heron("search", "--queries", str(queries), "-k", "1").stdout.splitlines()
    out = [json.loads(line) for line in lines]
    assert [o["id"] for o in out] == ["a", "b"]
    assert out[0]["results"][0]["page"] == "concepts/secrets"
    assert out[0]["results"][0]["id"].startswith("concepts/secrets#")
    heron("library", "remove", "lib")
    assert json.loads(heron("library", "list", "--json").stdout) == []
    assert "No indexed libraries" in heron("search", "x", ok=False).stderr


def test_failing_sync_exits_1_and_says_why(library: Path, tmp_path: Path) -> None:
    heron("library", "add", "ghost", (tmp_path / "missing.git").as_uri())
    done = heron("index", ok=False)
    assert done.returncode == 1 and "cannot fetch" in done.stderr
    assert "lib: 3 pages" in done.stdout  # the other library was indexed
    assert "Traceback" not in done.stderr


def test_errors_name_the_fix(library: Path) -> None:
    assert "heron library add nope SOURCE" in heron("index", "nope", ok=False).stderr
    assert "Give either a QUERY or --queries" in heron("search", ok=False).stderr
    assert (
        "heron library remove lib" in heron("library", "add", "lib", str(library), ok=False).stderr
    )


def test_a_repeated_library_searches_each_and_ask_refuses_it(
    library: Path, make_library: Callable[..., Path]
) -> None:
    """Issue 44: a second --library replaced the first without a word."""
    other = make_library({"ports.md": "# Ports\n\nA rollout keeps the service ports.\n"}, "b")
    heron("library", "add", "other", str(other))
    heron("index")
    found = heron("search", "rollout", "--library", "lib", "--library", "other", "--json")
    assert {r["library"] for r in json.loads(found.stdout)} == {"lib", "other"}
    one = heron("search", "rollout", "--library", "other", "--json").stdout
    assert {r["library"] for r in json.loads(one)} == {"other"}
    assert (
        "searched lib, other"
        in heron("search", "rollout", "--library", "lib", "--library", "other").stdout
    )
    for command in ("ask", "chat"):
        args = [command, "rollout"] if command == "ask" else [command]
        refused = heron(*args, "--library", "lib", "--library", "other", ok=False)
        assert refused.returncode == 1 and "Traceback" not in refused.stderr
        assert refused.stderr.startswith(
            f"error: --library given 2 times (lib, other): heron {command} grounds"
        )
        assert 'heron search "QUESTION" --library lib --library other' in refused.stderr


def test_add_with_options_writes_them_and_refuses_bad_ones(
    home: Path, monkeypatch: pytest.MonkeyPatch, make_library: Callable[..., Path]
) -> None:
    monkeypatch.setenv("HERON_LIBRARY_DEFAULT_DOCS", "false")
    root = make_library()
    heron("library", "add", "lib", str(root), "--include", "concepts/**", "--exclude", "**/s*")
    lines = (home / "libraries.txt").read_text().splitlines()
    assert lines == [f"lib {root} include=concepts/** exclude=**/s*"]
    (report,) = json.loads(heron("index", "--json").stdout)
    assert report["pages"] == 1  # concepts/pods; concepts/secrets excluded, tasks/ not included
    done = heron("library", "add", "k8s", "https://example.com/k.git", "--branch", "-x", ok=False)
    assert "is not a branch or tag name" in done.stderr and "Traceback" not in done.stderr
    (home / "libraries.txt").write_text(f"lib {root} exclde=x\n")
    done = heron("index", ok=False)
    assert "unknown option 'exclde'" in done.stderr and "Known options: branch" in done.stderr
    assert "Traceback" not in done.stderr


def test_index_enrich_asks_once_then_never_again(
    library: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serve_chat() as chat:
        (home / "models.yml").write_text(ONE_MODEL.format(url=chat.url))
        monkeypatch.setenv("TEST_OPENAI_KEY", KEY)
        monkeypatch.setenv("HERON_LLM_RETRIES", "0")
        chat.fail("gpt-test", 500)
        chat.replies += [
            json.dumps({"qa": [{"question": f"What does page {n} say?", "answer": "x"}]})
            for n in (2, 3)
        ]
        done = heron("index", "--enrich")
        assert "3 pages" in done.stdout and "2 questions, 3 model calls" in done.stdout
        assert "no questions for concepts/pods" in done.stderr
        assert "Traceback" not in done.stderr
        chat.replies.append(json.dumps({"qa": [{"question": "What runs in a Pod?"}]}))
        (again,) = json.loads(heron("index", "--enrich", "--json").stdout)
        assert (again["model_calls"], again["questions"], again["enrich_errors"]) == (1, 3, [])
        (third,) = json.loads(heron("index", "--enrich", "--json").stdout)
        assert (third["model_calls"], third["unchanged"], third["questions"]) == (0, 3, 3)
        assert len(chat.posted("/v1/chat/completions")) == 4
    # No model configured is needed to index without enrichment: models.yml is not read.
    (home / "models.yml").write_text("not: [valid")
    (plain,) = json.loads(heron("index", "--json").stdout)
    assert (plain["model_calls"], plain["questions"]) == (0, 3)


def test_documents_are_cited_to_their_page_and_refusals_named(
    home: Path, monkeypatch: pytest.MonkeyPatch, make_library: Callable[..., Path]
) -> None:
    from tests.libraries import documents
    from tests.libraries.test_readers import MANUAL

    monkeypatch.setenv("HERON_LIBRARY_DEFAULT_DOCS", "false")
    root = make_library(
        {
            "manual.pdf": MANUAL,
            "scan.pdf": documents.pdf([["Cover page"], None, None]),
            "locked.pdf": documents.pdf([["secret plans"]], password="pw"),
        }
    )
    heron("library", "add", "docs", str(root))
    indexed = heron("index", "docs")
    said = indexed.stdout + indexed.stderr
    assert "skipped locked.pdf: cannot be read as PDF: encrypted" in said
    assert "scanned scan.pdf: pages 2, 3 have no text layer" in said
    found = heron("search", "run setup with sudo", "--library", "docs", "-k", "1").stdout
    assert "(docs, manual) p. 2" in found and "manual.pdf#page=2" in found
    status = heron("library", "status", "docs").stdout
    assert "scanned manual.pdf: pages 3" in status and "scanned scan.pdf: pages 2, 3" in status
    (result,) = json.loads(
        heron("search", "run setup", "--library", "docs", "-k", "1", "--json").stdout
    )
    assert result["pages"] == [2, 2]
