"""The agent with the local model: pipeline overhead, and citations on Kubernetes questions.

Overhead: an agent over a library of about 2,000 chunks (the first Kubernetes pages, in
path order, whose chunks in the ``bench libraries`` index add up to 2,000), 500 tools (the
199 MetaTool tools, copies of them under ``serverN.`` prefixes with a trivial handler,
and the built-ins) and the composio skills (860 ``SKILL.md``). Each of ``OVERHEAD_ASKS``
dev questions is asked once; overhead is an ask's wall time minus its model time (the
completions' ``seconds``). Built in ``.bench/agent/overhead`` once (the chunks and
skills come from the embedding cache of ``bench libraries``, so little is embedded).

Citations: the ``bench libraries`` index (885 pages), copied to ``.bench/agent/k8s``, and
the test questions (precise form). A question counts when the answer's citations
include its gold page; beside it, the retrieval Hit@3 (the passages the prompt holds)
and Hit@5 of the same search. ``CITATION_QUESTIONS`` of the 97 (every other one) keep
the run short: the local model takes seconds per answer.
"""

from __future__ import annotations

import shutil
import time
from collections import Counter
from typing import Any

import numpy as np

from bench import libraries as books
from bench.common import SHARED, WORK, percentiles, read_jsonl, table
from bench.tools import metatool
from heron.agent import Agent, Turn
from heron.libraries import add_library, index_library
from heron.settings import Settings
from heron.tools import Tool
from heron.wiring import open_agent

ROOT = WORK / "agent"
QUESTIONS = SHARED / "data" / "docs" / "kubernetes" / "questions.jsonl"
SKILLS = SHARED / "data" / "skills" / "composio"
CHUNKS = 2000
TOOLS = 500
OVERHEAD_ASKS = 40
CITATION_QUESTIONS = 49
#: Answer tokens per model call: enough for a short answer, and the runs stay short.
MAX_TOKENS = 160
#: The overhead excludes model time, so its asks need only a few tokens.
OVERHEAD_MAX_TOKENS = 16
STAGES = ("retrieval", "routing", "skills", "prompt", "tools", "overhead")


def _pages_for(chunks: int) -> list[str]:
    """The first pages, in path order, whose chunks in the books index reach ``chunks``."""
    _, store = books._setup()
    per_page = Counter(i.rsplit("#", 1)[0] for i in store.ids(books.LIBRARY) if "#q" not in i)
    store.close()
    chosen, total = [], 0
    for page in sorted(per_page):
        if total >= chunks:
            break
        chosen.append(page)
        total += per_page[page]
    return chosen


def _tools(count: int) -> list[Tool]:
    _, base, _, _ = metatool()
    tools = list(base)
    copy = 1
    while len(tools) < count:
        tools += [Tool(f"server{copy}.{t.name}", t.description, source=t.source) for t in base]
        copy += 1
    return tools[:count]


def overhead_agent() -> Agent:
    home = ROOT / "overhead"
    settings = Settings(
        home=home, skills={"dirs": str(SKILLS)}, agent={"max_tokens": OVERHEAD_MAX_TOKENS}
    )
    if not (home / "ready").exists():
        books.initial_index()
        shutil.rmtree(home, ignore_errors=True)
        home.mkdir(parents=True)
        shutil.copy(books.ROOT / "home" / "embeddings.db", home / "embeddings.db")
        library = home / "library"
        for page in _pages_for(CHUNKS):
            source = books.ROOT / "library" / f"{page}.md"
            (library / page).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, library / f"{page}.md")
        add_library(books.LIBRARY, str(library), settings)
    agent = open_agent(settings)
    if not (home / "ready").exists():
        index_library(books.LIBRARY, agent.store, settings=settings)
        agent.skills.index()
        (home / "ready").touch()
    builtin = len(agent.toolbox.registry)
    for tool in _tools(TOOLS - builtin):
        agent.toolbox.registry.add(tool, lambda arguments: {"ok": True})
    return agent


def overhead_rows(agent: Agent, questions: list[dict[str, Any]]) -> list[tuple]:
    agent.ask(Turn("warm up: what is a Pod?"))  # loads the model and the indexes once
    samples: dict[str, list[float]] = {stage: [] for stage in STAGES}
    kinds: Counter[str] = Counter()
    for q in questions[:OVERHEAD_ASKS]:
        answer = agent.ask(Turn(q["question"]))
        kinds[answer.triage.kind] += 1
        for stage in STAGES:
            samples[stage].append(answer.timings.get(stage, 0.0))
    chunks = agent.store.count(books.LIBRARY)
    skills = agent.store.count("skills")
    print(
        f"triage: {dict(kinds)}; {chunks} records, {len(agent.toolbox.registry)} tools, "
        f"{skills} skills",
        flush=True,
    )
    return [(stage, *percentiles(samples[stage])) for stage in STAGES]


def citation_rows(questions: list[dict[str, Any]]) -> tuple[list[tuple], dict[str, Any]]:
    books.initial_index()
    home = ROOT / "k8s"
    if not (home / "heron.db").exists():
        home.mkdir(parents=True, exist_ok=True)
        for name in ("heron.db", "embeddings.db", "libraries.txt"):
            shutil.copy(books.ROOT / "home" / name, home / name)
    agent = open_agent(Settings(home=home, agent={"max_tokens": MAX_TOKENS}))
    cited = hit3 = hit5 = docs = 0
    model_seconds, tokens = [], []
    try:
        for q in questions:
            gold = q["page"].removesuffix(".md")
            pages = [r.page for r in agent.retriever.retrieve(q["question"])]
            hit3 += gold in pages[:3]
            hit5 += gold in pages[:5]
            answer = agent.ask(Turn(q["question"]))
            docs += answer.triage.kind == "docs"
            cited += gold in {c.page for c in answer.citations}
            model_seconds.append(answer.timings["model"])
            tokens.append(answer.usage.completion_tokens)
    finally:
        agent.close()
    n = len(questions)
    rows = [
        ("answers citing the gold page (local model)", cited / n),
        ("retrieval Hit@3 (passages in the prompt)", hit3 / n),
        ("retrieval Hit@5", hit5 / n),
        ("triaged as docs", docs / n),
    ]
    extra = {
        "model_p50_s": float(np.median(model_seconds)),
        "tokens_p50": float(np.median(tokens)),
    }
    return rows, extra


def run() -> str:
    questions = read_jsonl(QUESTIONS)
    dev = [q for q in questions if q["split"] == "dev"]
    test = [q for q in questions if q["split"] == "test"]
    start = time.perf_counter()
    agent = overhead_agent()
    try:
        rows = overhead_rows(agent, dev)
    finally:
        agent.close()
    text = table(
        f"Agent pipeline overhead: ~{CHUNKS:,} chunks, {TOOLS} tools, 860 skills, "
        f"{OVERHEAD_ASKS} dev questions, local model (its time excluded)",
        ["stage", "p50 ms", "p95 ms"],
        rows,
    )
    sample = test[::2][:CITATION_QUESTIONS]
    rows, extra = citation_rows(sample)
    text += table(
        f"Kubernetes test questions, {len(sample)} of {len(test)} (every other one), "
        f"local model, {MAX_TOKENS} answer tokens at most "
        f"(model p50 {extra['model_p50_s']:.1f} s, {extra['tokens_p50']:.0f} tokens)",
        ["measure", "share"],
        rows,
    )
    print(f"agent benchmark: {time.perf_counter() - start:.0f} s", flush=True)
    return text
