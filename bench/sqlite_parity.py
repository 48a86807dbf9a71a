"""One machine (SQLite) beside another tree of Heron (issue 47): ``python -m bench
sqlite-parity --base COMMIT``.

Issue 47 moved the library catalogue, sessions and the rest of a team's shared state
into PostgreSQL and asked that the embedded default get no slower. This times what a
person on one machine does, with this checkout's Heron and with one or more other trees
(``--base``, repeatable: a commit, checked out with ``git worktree add`` and removed
afterwards, or a folder that holds a tree), in the same run:

- **cold index**: ``heron index`` from the shell of a fresh home (empty embedding cache)
  on ``PAGES`` Kubernetes pages (the gold pages of the first questions of
  ``../shared/data/docs/kubernetes``);
- **re-index, one page changed**: ``heron index`` again after a line is appended to one page;
- **search in-process**: ``heron.libraries.search.search`` of ``QUERIES`` questions one at
  a time in one process (model and store open, the reranker made once, as a server
  does): median ms;
- **heron search from the shell**: ``SHELL_QUERIES`` questions, each a new process: median s.

Each tree runs in its own process (``python -c DRIVER``, the tree first on ``PYTHONPATH``;
the driver checks that ``heron`` is imported from it), with a fresh ``HERON_HOME`` per tree
and round under a temporary folder, SQLite, the ``minilm`` profile, one text per model run
and Heron's built-in docs off. Trees from before issue 48 ran the shipped MiniLM graph:
the driver gives them this checkout's int8 graph (``ensure_graph``), so that every tree
embeds with the same graph and only Heron's own code differs. Rounds alternate the trees'
order (A B, B A, ...) so that the machine's drifting load weighs on each alike; the table
has each tree's median over ``ROUNDS`` rounds and each tree's ratio to the tree before it
(and the last to the first).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from itertools import pairwise
from pathlib import Path

from bench.common import SHARED, read_jsonl, table
from heron.embed.minilm import ensure_graph
from heron.settings import Settings

REPO = Path(__file__).resolve().parents[1]
KUBERNETES = SHARED / "data" / "docs" / "kubernetes"
#: The commit before issue 47's first (f53c043, part 1): the default ``--base``.
BEFORE_ISSUE_47 = "bae810a"
#: Kubernetes pages in the library (about 1.3 MB, 100 of the questions' gold pages).
PAGES = 100
#: Questions searched in-process per tree and round (after one that warms the model).
QUERIES = 30
#: Questions searched from the shell per tree and round, one process each.
SHELL_QUERIES = 3
ROUNDS = 4
LIBRARY = "k8s"
#: The page whose copy gets one more line before the re-index.
CHANGED = "concepts/cluster-administration/networking.md"

#: What runs in each tree's process. ``argv[1]`` is ``searches`` (the in-process timings,
#: printed as JSON) or the arguments of a ``heron`` command.
DRIVER = r"""
import json, os, runpy, sys, time
from pathlib import Path

import heron

tree = Path(os.environ["HERON_PARITY_TREE"]).resolve()
if not Path(heron.__file__).resolve().is_relative_to(tree):
    sys.exit(f"heron was imported from {heron.__file__}, not from {tree}")
from heron.embed import assets, minilm

if not hasattr(minilm, "ensure_graph"):  # before issue 48: the same int8 graph as the others
    assets.onnx_path = lambda: Path(os.environ["HERON_PARITY_GRAPH"])
if sys.argv[1] == "searches":
    from heron.libraries.rerank import load_reranker
    from heron.libraries.search import search
    from heron.settings import Settings
    from heron.store import open_store

    settings = Settings()
    store = open_store(settings)
    reranker = load_reranker(settings.library)
    queries = json.loads(sys.argv[2])
    search(queries[0], store, settings=settings, top_k=5, reranker=reranker)
    took = []
    for query in queries[1:]:
        started = time.perf_counter()
        search(query, store, settings=settings, top_k=5, reranker=reranker)
        took.append(time.perf_counter() - started)
    print(json.dumps(took))
else:
    sys.argv = ["heron", *sys.argv[1:]]
    runpy.run_module("heron", run_name="__main__")
"""

ROWS = (
    ("cold index (s)", "index"),
    ("re-index, one page changed (s)", "reindex"),
    ("search in-process, median (ms)", "search"),
    ("heron search from the shell (s)", "shell"),
)


def _questions() -> list[dict[str, str]]:
    return read_jsonl(KUBERNETES / "questions.jsonl")


def _pages() -> list[str]:
    return list(dict.fromkeys(q["page"] for q in _questions()))[:PAGES]


@contextmanager
def _tree(given: str, root: Path) -> Iterator[tuple[str, Path]]:
    """``given`` as a tree on disk, with its label: a folder as it is, else a commit
    checked out (detached) in a worktree under ``root``, removed afterwards."""
    if Path(given).is_dir():
        yield Path(given).resolve().name, Path(given).resolve()
        return
    commit = _git("rev-parse", "--short", f"{given}^{{commit}}")
    path = root / f"tree-{commit}"
    _git("worktree", "add", "--detach", str(path), commit)
    try:
        yield commit, path
    finally:
        _git("worktree", "remove", "--force", str(path))


def _git(*args: str) -> str:
    done = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout.strip()


def _run(tree: Path, env: dict[str, str], *argv: str) -> tuple[float, str]:
    """Wall seconds and stdout of ``DRIVER ARGV`` in ``tree``'s process."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("HERON_")}
    environ |= env | {"HERON_PARITY_TREE": str(tree), "PYTHONPATH": str(tree)}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, *argv],
        cwd=env["HERON_HOME"],  # not a checkout: python -c puts the folder first
        env=environ,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{tree}: heron {' '.join(argv)} failed: {done.stderr[-2000:]}")
    return seconds, done.stdout


def _round(tree: Path, home: Path, graph: Path) -> dict[str, float]:
    """One round of every row for ``tree`` in the fresh home ``home``."""
    library = home.parent / "library"
    for page in _pages():
        (library / page).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(KUBERNETES / "library" / page, library / page)
    home.mkdir()
    env = {
        "HERON_HOME": str(home),
        "HERON_EMBEDDER": "minilm",
        "HERON_EMBED_BATCH_SIZE": "1",
        "HERON_LIBRARY_DEFAULT_DOCS": "false",
        "HERON_PARITY_GRAPH": str(graph),
    }
    _run(tree, env, "library", "add", LIBRARY, str(library))
    index, _ = _run(tree, env, "index", LIBRARY)
    with open(library / CHANGED, "a", encoding="utf-8") as page:
        page.write("\nOne more line, so that this page alone is indexed again.\n")
    reindex, _ = _run(tree, env, "index", LIBRARY)
    questions = [q["question"] for q in _questions()]
    _, out = _run(tree, env, "searches", json.dumps(questions[: QUERIES + 1]))
    shell = [
        _run(tree, env, "search", q, "-k", "5")[0]
        for q in questions[QUERIES + 1 : QUERIES + 1 + SHELL_QUERIES]
    ]
    return {
        "index": index,
        "reindex": reindex,
        "search": statistics.median(json.loads(out)) * 1000,
        "shell": statistics.median(shell),
    }


def _ratio(old: list[float], new: list[float]) -> str:
    """The median of the rounds' ratios ``new / old`` (each round runs both), then each
    round's: a change shows as a consistent side of 1, noise as both."""
    ratios = [b / a for a, b in zip(old, new, strict=True)]
    each = " ".join(f"{r:.2f}" for r in ratios)
    return f"{statistics.median(ratios):.3f} ({each})"


def run(bases: Sequence[str] = (BEFORE_ISSUE_47,), head: str | None = None) -> str:
    """The table of ``ROWS`` for each of ``bases`` and then ``head`` (this checkout's
    folder when ``None``), side by side."""
    graph = ensure_graph(Settings().models_dir)
    with tempfile.TemporaryDirectory(prefix="heron-sqlite-parity-") as tmp, ExitStack() as trees:
        root = Path(tmp)
        labelled = [trees.enter_context(_tree(name, root)) for name in bases]
        if head is None:
            labelled.append(("this checkout", REPO))
        else:
            labelled.append(trees.enter_context(_tree(head, root)))
        figures: dict[str, dict[str, list[float]]] = {label: {} for label, _ in labelled}
        for round_ in range(ROUNDS):
            order = labelled if round_ % 2 == 0 else labelled[::-1]
            for n, (label, path) in enumerate(order):
                print(f"round {round_ + 1}/{ROUNDS}: {label} ...", flush=True)
                home = root / f"r{round_}-{n}" / "home"
                home.parent.mkdir()
                for key, value in _round(path, home, graph).items():
                    figures[label].setdefault(key, []).append(value)
                shutil.rmtree(home.parent)
    labels = [label for label, _ in labelled]
    steps = list(pairwise(labels))
    if len(labels) > 2:
        steps.append((labels[0], labels[-1]))
    rows = []
    for title, key in ROWS:
        rows.append(
            [title, *(statistics.median(figures[label][key]) for label in labels)]
            + [_ratio(figures[old][key], figures[new][key]) for old, new in steps]
        )
    header = ["", *labels, *(f"{new} / {old}" for old, new in steps)]
    return table(
        f"One machine (SQLite), side by side: median of {ROUNDS} alternating rounds "
        f"({PAGES} Kubernetes pages, minilm, one int8 graph for every tree)",
        header,
        rows,
    )
