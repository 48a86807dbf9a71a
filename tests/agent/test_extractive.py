"""Extractive answers: golden selection on small passages, determinism, every sentence
found in the passage it cites, no model loaded, honest when nothing is found, and Heron's
own docs kept out of other questions. Real embedder, real SQLite store."""

from __future__ import annotations

import html
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from heron.agent import Agent, Answer, Limits, Turn, compose
from heron.agent.extractive import defined, defines
from heron.agent.words import refusal
from heron.embed import MiniLMEmbedder
from heron.libraries import add_library, index_library
from heron.libraries.parse import strip_markup
from heron.llm import local
from heron.settings import Settings
from heron.wiring import open_agent
from tests.ci import missing
from tests.conftest import SHARED
from tests.llm_servers import ChatServer

WATERING = (
    "Water tomato plants deeply twice a week, at the base, early in the morning.\n"
    "In a heat wave water them every day. Never wet the leaves: it spreads blight.\n"
)
PRUNING = (
    "Prune roses in late winter, just before the buds open. Cut above an outward bud\n"
    "at an angle of 45 degrees and remove dead canes first.\n"
)
K8S_PAGES = (
    "concepts/overview/components.md",
    "concepts/configuration/configmap.md",
    "concepts/overview/working-with-objects/labels.md",
)
_MARKER = re.compile(r"(.+?) \[(\d+)\](?:\s+|$)", re.DOTALL)


def quote(embedder: MiniLMEmbedder, question: str, passages: list[str], **limits: int) -> str:
    vector = embedder.embed([question])[0]
    return compose(question, vector, passages, embedder, Limits(**limits)).text


@pytest.fixture(autouse=True)
def no_local_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """An extractive answer never loads the bundled model: loading it fails the test."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the local model was loaded for an extractive answer")

    monkeypatch.setattr(local, "load_model", refuse)


# -- selection, on passages written here ---------------------------------------------------


def test_golden_the_sentences_that_answer_with_their_markers(embedder: MiniLMEmbedder) -> None:
    answer = quote(embedder, "How often should I water my tomato plants?", [WATERING, PRUNING])
    assert answer == (
        "Water tomato plants deeply twice a week, at the base, early in the morning. [1] "
        "In a heat wave water them every day. [1]"
    )
    # Numbered by use: the one passage quoted is [1], whatever its place among them; a
    # sentence quoted alone from its paragraph brings the next one (the last pair above
    # is a run already, so "Never wet the leaves" stays out).
    assert quote(embedder, "When should I prune roses?", [WATERING, PRUNING]) == (
        "Prune roses in late winter, just before the buds open. [1] Cut above an outward "
        "bud at an angle of 45 degrees and remove dead canes first. [1]"
    )


def test_a_sentence_quoted_alone_brings_the_next_one_of_its_paragraph(
    embedder: MiniLMEmbedder,
) -> None:
    sick = (
        "If you are ill, tell your manager before your normal start time. You do not need a "
        "doctor's note for the first three days in a row. From the fourth day, send a note "
        "to People Operations. Sick days never count against your annual leave.\n"
    )
    question = "From which day of sickness do I need a doctor's note?"
    # The answer is in the next sentence's words ("the fourth day"), far from the
    # question's vector (MiniLM cosine 0.30 against 0.70 for the one before it).
    assert quote(embedder, question, [sick]) == (
        "You do not need a doctor's note for the first three days in a row. [1] "
        "From the fourth day, send a note to People Operations. [1]"
    )
    assert quote(embedder, question, [sick], sentences=1).count("[1]") == 1  # room first
    # A sentence about its page leads up to the page, not to the sentence after it.
    about = "This page explains how to restore the database. Read it before you need it.\n"
    assert quote(embedder, "How do I restore the database?", [about]) == (
        "This page explains how to restore the database. [1]"
    )


def test_a_definition_answers_what_is(embedder: MiniLMEmbedder) -> None:
    server = (
        "The HERON_CONTEXT setting names the context Heron's CLI acts in; Heron's server puts "
        "requests that name none there. Heron checks the Host and Origin of every request.\n"
    )
    overview = (
        "Heron is a self-hosted intelligence pipeline for AI agents: it decides what reaches "
        "an agent's context. One machine runs everything embedded.\n"
    )
    question = "What is Heron?"
    vector = embedder.embed([question])[0]
    # Retrieval put the settings page first; "Heron is ..." is what was asked for.
    answer = compose(question, vector, [server, overview], embedder, scores=[5.2, 4.6])
    assert answer.text.startswith(
        "Heron is a self-hosted intelligence pipeline for AI agents: it decides what "
        "reaches an agent's context. [1]"
    )
    assert answer.used[0] == 1


def test_a_definition_far_behind_still_answers_what_is(embedder: MiniLMEmbedder) -> None:
    # Fourteen short sentences naming Heron outscore, by BM25, the long sentence that
    # defines it, and retrieval put their page far ahead: the definition is still weighed
    # and leads (a fresh home's "What is Heron?" quoted a server page before).
    server = " ".join(
        f"The {topic} of heron runs on port {8000 + n} when the server starts."
        for n, topic in enumerate(
            [
                "search",
                "ask",
                "index",
                "jobs",
                "cards",
                "skills",
                "tools",
                "keys",
                "limits",
                "metrics",
                "logs",
                "pages",
                "streams",
                "uploads",
            ]
        )
    )
    overview = (
        "Heron is a self-hosted intelligence pipeline for AI agents that chooses the "
        "passages an agent gets, indexes a team's documents incrementally and answers "
        "with citations to the page in the asker's language.\n"
    )
    question = "What is Heron?"
    vector = embedder.embed([question])[0]
    answer = compose(question, vector, [server, overview], embedder, scores=[9.0, 4.0])
    assert answer.text.startswith("Heron is a self-hosted intelligence pipeline")
    assert answer.used == (1,)


def test_what_a_question_asks_to_define() -> None:
    assert defined("What is Heron?") == "heron"
    assert defined("What is a PersistentVolumeClaim in Kubernetes?") == "persistentvolumeclaim"
    assert defined("What are Kubernetes Secrets?") == "kubernetes secrets"
    assert defined("O que é um Pod?") == defined("¿Qué es un Pod?") == "pod"
    for asks_something_else in (
        "What is the purpose of Kubernetes auditing?",
        "What is the hotel budget for business trips?",
        "What is the recommended order of upgrading nodes during a cluster upgrade?",
        "How do I restore the database?",
    ):
        assert defined(asks_something_else) is None, asks_something_else
    assert defines("A Secret is an object that holds a password.", "kubernetes secrets")
    assert not defines("Secrets can be mounted as files.", "kubernetes secrets")
    assert not defines("The kubelet is an agent on each node.", "pod")


def test_sentences_keep_reading_order_and_passages_their_numbers(
    embedder: MiniLMEmbedder,
) -> None:
    volume = (
        "An emptyDir volume is first created when a Pod is assigned to a node, and starts "
        "empty. Containers in the Pod can all read and write the same files in the emptyDir "
        "volume. When a Pod is removed from a node, the data in the emptyDir volume is "
        "deleted for good."
    )
    answer = quote(embedder, "When is the data of an emptyDir volume deleted?", [volume, PRUNING])
    # The last sentence answers best, yet comes after the first: reading order, not score.
    assert answer == (
        "An emptyDir volume is first created when a Pod is assigned to a node, and starts "
        "empty. [1] Containers in the Pod can all read and write the same files in the emptyDir "
        "volume. [1] When a Pod is removed from a node, the data in the emptyDir volume is "
        "deleted for good. [1]"
    )


def test_near_duplicates_are_quoted_once_and_limits_hold(embedder: MiniLMEmbedder) -> None:
    copy = WATERING.replace("deeply", "deeply,")
    answer = quote(embedder, "How often should I water tomatoes?", [WATERING, copy])
    assert answer.count("twice a week") == 1
    one = quote(embedder, "How often should I water tomatoes?", [WATERING], sentences=1)
    assert one.count("[1]") == 1
    short = quote(embedder, "How often should I water tomatoes?", [WATERING], words=6)
    assert short == "Water tomato plants deeply twice a … [1]"
    # max_tokens 10 (40 characters) holds the answer, marker included.
    assert len(quote(embedder, "How often should I water?", [WATERING], chars=40)) <= 40


def test_markdown_is_quoted_as_prose(embedder: MiniLMEmbedder) -> None:
    page = (
        "## Listing Pods\n\nTo list the Pods of a namespace, run:\n\n```shell\n"
        "kubectl get pods -n NAMESPACE\n```\n\n| flag | meaning |\n|---|---|\n"
        "| -n | the namespace to list the Pods of |\n\n"
        "- The _wide_ output (`-o wide`) adds the [node](/docs/nodes) of each Pod.\n"
    )
    answer = quote(embedder, "How do I list the pods of a namespace?", [page])
    assert answer.startswith(
        "To list the Pods of a namespace, run: `kubectl get pods -n NAMESPACE` [1]"
    )
    assert "|" not in answer and "##" not in answer and "](" not in answer


def test_a_table_row_is_quoted_with_its_column_names(embedder: MiniLMEmbedder) -> None:
    page = (
        "## Paging\n\nOutside working hours, answer pages as follows.\n\n"
        "| Severity | Acknowledge within | Start working within |\n|---|---|---|\n"
        "| SEV1 | 5 minutes | 15 minutes |\n| SEV4 | next working day | as planned |\n"
    )
    answer = quote(embedder, "How quickly must I acknowledge a SEV1 page?", [page])
    assert answer.startswith(
        "Severity: SEV1; Acknowledge within: 5 minutes; Start working within: 15 minutes. [1]"
    )


def test_a_passage_far_behind_in_retrieval_needs_a_far_better_sentence(
    embedder: MiniLMEmbedder,
) -> None:
    question = "When should I prune roses?"
    vector = embedder.embed([question])[0]

    def first(scores: list[float]) -> int:
        extract = compose(question, vector, [WATERING, PRUNING], embedder, scores=scores)
        return extract.used[0]

    assert first([0.5, 0.4]) == 1  # close behind: the sentence that answers wins
    assert first([9.0, 0.4]) == 0  # far behind: retrieval's evidence outweighs it
    assert first([]) == 1  # no scores: one unit a rank


def test_no_passages_or_no_prose_give_no_quotes(embedder: MiniLMEmbedder) -> None:
    assert quote(embedder, "anything", []) == ""
    assert quote(embedder, "anything", ["```\ncode only\n```"]) == ""


# -- through the agent: determinism, substrings, no model ----------------------------------


def plain(markdown: str) -> str:
    """Markdown reduced to its words, written independently of the code under test: link
    targets, emphasis, code and table marks, fence info strings and list markers out, and
    commas, semicolons and periods (a short list is quoted as one sentence, its entries
    joined by ``;`` whatever ended them)."""
    text = html.unescape(strip_markup(markdown)).replace("\\", "")
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"```[\w-]*|<[^>]+>", " ", text)
    text = re.sub(r"^\s*(?:[-+*]|\d+\.)\s+", " ", text, flags=re.MULTILINE)
    text = re.sub(r"[*_`>#|,;.]", " ", text)
    return " ".join(text.split())


def cited_text(citation: object) -> str:
    first, last = citation.line_range  # type: ignore[attr-defined]
    lines = Path(citation.url_or_path).read_text(encoding="utf-8").splitlines()  # type: ignore[attr-defined]
    return "\n".join(lines[first - 1 : last])


@pytest.fixture(scope="module")
def k8s_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three real Kubernetes pages, Hugo shortcodes and all, as the library
    ``kubernetes`` in a home of its own, indexed once for the module."""
    source = SHARED / "data" / "docs" / "kubernetes" / "library"
    if not source.exists():
        missing(f"the shared data set is not at {source}", "set HERON_SHARED")
    base = tmp_path_factory.mktemp("k8s")
    root = base / "library"
    for page in K8S_PAGES:
        (root / page).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source / page, root / page)
    settings = Settings(home=base / "home", library={"default_docs": False})
    add_library("kubernetes", str(root), settings)
    agent = open_agent(settings)
    try:
        index_library("kubernetes", agent.store, settings=settings)
    finally:
        agent.close()
    return settings.home


@pytest.fixture
def k8s(k8s_home: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Agent]:
    """An agent on ``k8s_home``."""
    monkeypatch.setenv("HERON_HOME", str(k8s_home))
    monkeypatch.setenv("HERON_LIBRARY_DEFAULT_DOCS", "false")
    agent = open_agent(Settings())
    yield agent
    agent.close()


QUESTIONS = (
    "What does the kube-scheduler do?",
    "How can a Pod use a ConfigMap?",
    "What characters are allowed in a label key?",
    "What is etcd used for in Kubernetes?",
)


def test_every_quoted_sentence_is_in_the_passage_it_cites(k8s: Agent) -> None:
    for question in QUESTIONS:
        answer = k8s.ask(Turn(question))
        assert answer.mode == "extractive" and answer.model == "local", question
        assert answer.usage.completion_tokens == 0 and answer.timings["model"] == 0
        quotes = _MARKER.findall(answer.answer)
        assert quotes and "".join(f"{q} [{n}]" for q, n in quotes).replace(" ", "") == (
            answer.answer.replace(" ", "").replace("\n", "")
        ), answer.answer
        assert len(quotes) <= 5 and len(answer.answer.split()) <= 120 + len(quotes)
        for sentence, number in quotes:
            passage = cited_text(answer.citations[int(number) - 1])
            assert plain(sentence) in plain(passage), (question, sentence)


def test_the_same_question_gets_the_same_answer(k8s: Agent) -> None:
    first = k8s.ask(Turn(QUESTIONS[1]))
    again = k8s.ask(Turn(QUESTIONS[1]))
    assert again.answer == first.answer and again.citations == first.citations
    fresh = open_agent(Settings())  # a new process would open it the same way
    try:
        assert fresh.ask(Turn(QUESTIONS[1])).answer == first.answer
    finally:
        fresh.close()


def test_a_stream_gives_the_extractive_answer_whole(k8s: Agent) -> None:
    from heron.agent import Citations, Final, Token

    events = list(k8s.stream(Turn(QUESTIONS[0])))
    assert [type(e) for e in events] == [Token, Citations, Final]
    assert events[0].text == events[-1].answer.answer  # type: ignore[union-attr]


# -- grounding that finds nothing, and Heron's own docs -------------------------------------


def ask_one_page(tmp_path: Path, library: str, markdown: str, *questions: str) -> list[Answer]:
    """Extractive answers to ``questions`` over ``library``, one page of ``markdown``."""
    root = tmp_path / library
    root.mkdir()
    (root / "page.md").write_text(markdown, encoding="utf-8")
    settings = Settings(library={"default_docs": False})
    add_library(library, str(root), settings)
    agent = open_agent(settings)
    try:
        index_library(library, agent.store, settings=settings)
        return [agent.ask(Turn(q, answer="extractive")) for q in questions]
    finally:
        agent.close()


def test_an_answer_reads_the_best_pages_sections_below_its_lead(home: Path, tmp_path: Path) -> None:
    (answer,) = ask_one_page(
        tmp_path,
        "ops",
        "---\ndescription: How the database is backed up and restored.\n---\n\n"
        "# Database backups\n\nThis page explains how the database is backed up and how "
        "to restore the database.\n\n## Schedule\n\nA full backup runs every night at "
        "02:00 and is kept for 35 days.\n\n## Restoring the database\n\nTo restore the "
        "database, pick the target time and restore into a new cluster.\n",
        "How do I restore the database?",
    )
    # Found at its lead (the page's summary), answered from the section below it.
    assert "pick the target time" in answer.answer
    assert ("ops", "page", "Restoring the database") in [
        (c.library, c.page, c.heading) for c in answer.citations
    ]


def test_an_empty_home_says_grounding_found_nothing_and_how_to_add_a_library(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERON_LIBRARY_DEFAULT_DOCS", "false")
    agent = open_agent(Settings())
    try:
        answer = agent.ask(Turn("What is a Pod?"))
    finally:
        agent.close()
    assert answer.answer.startswith("No library is indexed yet, so I have nothing to quote.")
    assert "heron library add NAME PATH && heron index NAME" in answer.answer
    assert answer.citations == [] and answer.mode == "extractive"


def test_no_library_matching_says_so_and_never_invents(agent: Agent) -> None:
    answer = agent.ask(Turn("What is the capital of France?"))
    assert answer.answer.startswith("I found nothing about this in garden")
    assert "--answer generative" in answer.answer and answer.citations == []
    assert "Paris" not in answer.answer


def test_a_weak_match_is_quoted_and_said_to_be_weak(agent: Agent) -> None:
    # Cosine 0.34: under the docs threshold (0.45), over unrelated texts' (0.1 to 0.3).
    answer = agent.ask(Turn("How do I care for plants in summer?"))
    assert answer.triage.kind == "knowledge"
    assert answer.answer.startswith("Water tomato plants deeply twice a week") and answer.citations
    assert any(n.startswith("no passage fits closely (best match 0.3") for n in answer.notes)


def test_a_sentence_that_fits_is_quoted_where_its_passage_matches_weakly(
    home: Path, tmp_path: Path
) -> None:
    # One passage of eight unrelated rules: its vector is far from the question (0.20,
    # under 0.3) while one of its sentences fits (0.52 >= 0.45).
    answer, unrelated = ask_one_page(
        tmp_path,
        "hr",
        "# Handbook\n\nParking permits are issued by facilities and renewed each January. "
        "Expense claims are paid with the next salary run. The office kitchen is cleaned "
        "on Fridays, so label your food. Printers on every floor take your badge. Your "
        "first day starts at 09:30 with a welcome from People Operations. Payroll closes "
        "on the 20th of each month. Bicycles go in the basement rack, never in the "
        "corridors. Holiday requests need three working days' notice.\n",
        "What happens on my first day?",
        "What is the capital of France?",
    )
    assert (answer.triage.docs_score or 0) < 0.3
    assert answer.answer.startswith("Your first day starts at 09:30") and answer.citations
    assert any("a sentence of them 0.5" in n for n in answer.notes), answer.notes
    assert refusal(unrelated.answer) and not unrelated.citations


@pytest.fixture
def with_heron_docs(
    garden: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[[bool], Agent]:
    """``make(garden_too)``: an agent whose built-in ``heron`` library (Heron's docs, here
    one page of them) is indexed, with or without the user's ``garden``."""
    docs = tmp_path / "heron-docs"
    docs.mkdir()
    (docs / "tools.md").write_text(
        "# Tools\n\nHeron picks tools with a hybrid router over their names and "
        "descriptions. The router offers the five tools that fit a request best.\n"
        "Tools water nothing and prune nothing.\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("HERON_LIBRARY_DEFAULT_DOCS", "true")
    monkeypatch.setattr("heron.libraries.config.heron_docs", lambda: docs)
    opened: list[Agent] = []

    def make(garden_too: bool) -> Agent:
        agent = open_agent(Settings())
        opened.append(agent)
        index_library("heron", agent.store, settings=agent.settings)
        if garden_too:
            index_library("garden", agent.store, settings=agent.settings)
        return agent

    yield make  # type: ignore[misc]
    for agent in opened:
        agent.close()


def test_heron_docs_answer_questions_about_heron_only(
    with_heron_docs: Callable[[bool], Agent],
) -> None:
    agent = with_heron_docs(True)
    garden = agent.ask(Turn("How often should I water my tomato plants?"))
    assert garden.citations and {c.library for c in garden.citations} == {"garden"}
    about = agent.ask(Turn("How does Heron pick tools?"))
    assert about.citations[0].library == "heron" and "hybrid router" in about.answer
    chosen = agent.ask(Turn("What does the router offer?", library="heron"))
    assert {c.library for c in chosen.citations} == {"heron"}


def test_with_only_heron_docs_indexed_every_question_searches_them(
    with_heron_docs: Callable[[bool], Agent],
) -> None:
    agent = with_heron_docs(False)
    answer = agent.ask(Turn("How do I prune water tools?"))
    assert answer.grounding.libraries == ("heron",)
    assert [c.library for c in answer.citations] == ["heron"]


# -- a capable model asked for an extractive answer writes its lead line --------------------


def test_a_capable_model_writes_only_a_one_line_lead(
    make_agent: Callable[..., Agent], chat: ChatServer
) -> None:
    answer = make_agent().ask(
        Turn("How often should I water my tomato plants?", answer="extractive")
    )
    (request,) = chat.posted("/v1/chat/completions")  # one call: the lead
    assert request["max_tokens"] == 48 and "tools" not in request
    assert "Quoted facts:\n- Water tomato plants deeply" in request["messages"][-1]["content"]
    lead, quoted = answer.answer.split("\n\n", 1)
    assert lead.startswith("echo: Question: How often") and "\n" not in lead  # the replay's echo
    assert quoted.startswith("Water tomato plants deeply twice a week") and "[1]" in quoted
    assert answer.mode == "extractive" and answer.model == "gpt"


# -- the kind of fact asked for, leaning sentences, lists, follow-ups ----------------------

HELP_DESK = (
    "The IT help desk fixes laptops, accounts, phones and anything else with a plug.\n\n"
    "Open a ticket in the help portal, or call the help desk on extension 4410. The desk is "
    "staffed Monday to Friday from 8:00 to 18:00. Outside those hours, call the on-duty "
    "technician on +351 21 555 0199.\n"
)
INCIDENTS = (
    "An incident is anything that breaks the product for customers. When in doubt, declare "
    "one.\n\n"
    "- SEV1: the product is down or customer data is exposed.\n"
    "- SEV2: a major feature is broken for many customers.\n"
    "- SEV3: a feature is broken for some customers, with a workaround.\n"
    "- SEV4: a minor problem with no real impact on customers.\n"
)


def test_the_kind_of_fact_asked_for_leads_the_answer(embedder: MiniLMEmbedder) -> None:
    from heron.agent.extractive import asks, leans, states

    assert asks("What's the phone extension for the IT help desk?") == "value"
    assert asks("Quantos dias de férias eu tenho por ano?") == "count"
    assert asks("¿Quién aprueba los gastos?") == "who"
    assert asks("What are the incident severity levels?") == "list"
    assert states("call the help desk on extension 4410.", "value")
    assert not states("The IT help desk fixes laptops.", "value")
    assert leans("Outside those hours, call the on-duty technician.")
    assert not leans("The IT help desk fixes laptops.")  # "IT" names a department
    answer = quote(embedder, "What's the phone extension for the IT help desk?", [HELP_DESK])
    assert answer.startswith("Open a ticket in the help portal, or call the help desk on ext")


def test_a_list_asked_for_is_quoted_whole_under_the_heading_that_names_it(
    embedder: MiniLMEmbedder,
) -> None:
    question = "What are the incident severity levels?"
    vector = embedder.embed([question])[0]
    lead, levels = INCIDENTS.split("\n\n", 1)
    # Two sections of one page, as an answer reads them (at the page's score).
    done = compose(
        question,
        vector,
        [lead, levels],
        embedder,
        headings=["Incidents", "Severity levels"],
        scores=[1.0, 1.0],
    )
    assert [q.text[:5] for q in done.quotes[:4]] == ["SEV1:", "SEV2:", "SEV3:", "SEV4:"]


def test_a_follow_up_does_not_repeat_the_last_answer(embedder: MiniLMEmbedder) -> None:
    question = "and who do I call at night?"
    said = "Open a ticket in the help portal, or call the help desk on extension 4410. [1]"
    vector = embedder.embed([question])[0]
    first = compose(question, vector, [HELP_DESK], embedder, Limits(sentences=1), said=said)
    assert first.text.startswith("Outside those hours") or "0199" in first.text


def test_a_page_summary_is_searched_never_quoted(agent: Agent) -> None:
    # The garden library's pages have no front matter; a summary in the first chunk's
    # metadata (index version 3) is left out of the passage an extractive answer reads.
    found = agent.retriever.retrieve("How often should I water my tomato plants?")
    record = agent.store.get(found[0].library, found[0].chunk)
    assert "summary" not in record.metadata
    assert agent.retriever.passage(found[0], quoted=True) == agent.retriever.passage(found[0])


def test_a_question_with_a_condition_is_answered_by_the_sentence_for_that_case(
    embedder: MiniLMEmbedder,
) -> None:
    answer = quote(embedder, "Who do I call when the IT help desk is closed?", [HELP_DESK])
    # The case asked about leads, with the hours it leans on; the desk's own number after.
    lead = answer.split(" [1]")[0:2]
    assert lead[0].startswith("The desk is staffed") and "on-duty technician" in lead[1]
    assert answer.index("0199") < answer.index("4410")
    # A question word after a comma is no condition: nothing gains for opening with one.
    plain = quote(embedder, "In the office, when is the help desk staffed?", [HELP_DESK])
    assert plain.startswith("The desk is staffed Monday to Friday")


ESCALATIONS = (
    "Most customer tickets are solved by the support team. Some need an engineer.\n",
    "Add the label escalation to the customer's ticket and fill in the steps to reproduce. "
    "The engineering triage rotation picks it up within one working day.\n",
)


def test_how_is_answered_by_the_instruction_in_the_pages_order(embedder: MiniLMEmbedder) -> None:
    from heron.agent.extractive import states

    assert states("Abra um chamado no portal.", "how") and states("You must sign in.", "how")
    assert not states("Most customer tickets are solved.", "how")
    assert not states("Outside those hours, call the desk.", "how")
    question = "How do I hand a customer ticket over to engineering?"
    done = compose(
        question,
        embedder.embed([question])[0],
        list(ESCALATIONS),
        embedder,
        headings=["Escalations", "Escalations > How"],
        scores=[1.0, 1.0],
    )
    assert done.text.startswith("Add the label escalation")
    assert done.text.index("Add the label") < done.text.index("triage rotation")
