"""Triage rules on hand-made signals, and on the real retrieval of a tiny library."""

from __future__ import annotations

from heron.agent import Agent, triage
from heron.libraries.search import Result, named
from heron.tools import RoutedTool, Tool

DOCS, TOOLS = 0.45, 0.5


def result(dense: float, page: str = "tools") -> Result:
    return Result(
        library="heron",
        collection="",
        page=page,
        title="Tools",
        heading="",
        anchor="",
        snippet="",
        score=1.0,
        components={"fused": 0.1, "dense": dense, "lexical": 1.0, "rerank": 1.0},
        content_hash="",
        citation=f"(heron, {page})",
        source=f"/docs/{page}.md:1-5",
        lines=(1, 5),
        chunk=f"{page}#0",
    )


def routed(name: str, dense: float, lexical: float = 1.0, tags: tuple[str, ...] = ()) -> RoutedTool:
    tool = Tool(name, "", tags=tags)
    return RoutedTool(tool, name, 1, dense, dense, lexical, True, "rank 1")


def decide(message: str, results: list[Result], tools: list[RoutedTool], **options):
    return triage(message, results, tools, docs_threshold=DOCS, tool_threshold=TOOLS, **options)


def test_named_matches_whole_words_in_any_case() -> None:
    assert named("What is HERON?", ["heron"]) == "heron"
    assert named("a heronry by the lake", ["heron"]) is None
    assert named("see c++ notes", ["c++"]) == "c++"
    assert named("nothing here", []) is None


def test_a_chosen_or_named_library_means_docs_whatever_the_scores() -> None:
    weak = [result(0.05)]
    assert decide("anything", weak, [], library="heron").kind == "docs"
    by_name = decide("What is Heron?", weak, [routed("list_files", 0.9)], names=["heron"])
    assert (by_name.kind, by_name.confident, by_name.reason) == ("docs", True, "names 'heron'")


def test_a_strong_tool_that_shares_a_word_is_forced() -> None:
    decision = decide("list the files", [result(0.2)], [routed("list_files", 0.78)])
    assert (decision.kind, decision.confident, decision.tool) == ("tools", True, "list_files")


def test_a_tool_loses_to_a_better_passage_to_a_low_score_and_to_no_shared_word() -> None:
    assert decide("skills index", [result(0.6)], [routed("search_skills", 0.56)]).kind == "docs"
    assert decide("list", [result(0.1)], [routed("list_files", 0.49)]).kind == "knowledge"
    assert decide("list", [], [routed("list_files", 0.9, lexical=0.0)]).kind == "knowledge"


def test_the_docs_search_tool_is_never_forced_its_search_already_ran() -> None:
    tools = [routed("search_docs", 0.9, tags=("docs",))]
    assert decide("search the docs", [result(0.5)], tools).kind == "docs"
    assert decide("search the docs", [result(0.3)], tools).kind == "knowledge"


def test_a_passage_over_the_threshold_means_docs_below_it_knowledge() -> None:
    assert decide("q", [result(0.3), result(0.46)], []).kind == "docs"
    assert decide("q", [result(0.44)], []).kind == "knowledge"
    assert decide("q", [], []).to_dict()["docs_score"] is None


def test_real_retrieval_sends_questions_where_they_belong(agent: Agent) -> None:
    assert {"garden", "kitchen"} <= set(agent.retriever.names())
    cases = {
        "How often should I water my tomato plants?": ("docs", "garden/watering"),
        "List the files in my workspace": ("tools", "list_files"),
        "Give me the kitchen notes on sourdough": ("docs", "kitchen/bread"),
    }
    for message, (kind, target) in cases.items():
        results = agent.retriever.retrieve(message)
        decision = decide(
            message, results, agent.offer.route(message), names=agent.retriever.names()
        )
        assert decision.kind == kind, (message, decision)
        found = decision.tool if kind == "tools" else results[0].page
        assert found == target, (message, found)


def test_a_name_that_is_an_ordinary_word_counts_only_written_as_a_name() -> None:
    weak = [result(0.05)]
    names = ["it", "hr", "security", "kubernetes"]
    vocabulary = {"security"}  # a whole word of the embedder's tokenizer
    for message in (
        "My VPN password expired and the portal won't let me reset it",
        "security stuff for new people?",
        "Security stuff for new people?",  # capitalised where a sentence starts
    ):
        decision = decide(message, weak, [], names=names, vocabulary=vocabulary)
        assert decision.kind == "knowledge", (message, decision.reason)
    for message, name in (
        ("Who do I call in IT at night?", "it"),
        ("what does HR say about leave", "hr"),
        ("What should I ask Security first?", "security"),
        ("how do kubernetes services work", "kubernetes"),  # no ordinary word: any case
    ):
        decision = decide(message, weak, [], names=names, vocabulary=vocabulary)
        assert (decision.kind, decision.reason) == ("docs", f"names {name!r}"), message


def test_evidence_answers_from_a_page_that_stands_out_and_refuses_an_unrelated_one() -> None:
    from heron.agent.triage import Evidence

    fits = Evidence.of(0.5, 0.2, docs=0.45, weak=0.3, support_from=0.0)
    assert fits.verdict == "fits"
    # Under the cosine thresholds, but one page stands well above the next ones.
    stands = Evidence.of(0.28, 0.2, docs=0.45, weak=0.3, support_from=0.0)
    assert stands.verdict == "related" and "support 0.03" in stands.why
    flat = Evidence.of(0.28, 0.05, docs=0.45, weak=0.3, support_from=0.0)
    assert flat.verdict == "unrelated"
    # A sentence that fits, or its support with the page's peak, is evidence enough.
    assert flat.with_sentence(0.46).verdict == "related"
    assert flat.with_sentence(0.42).verdict == "related"  # 0.42 - 0.45 + 0.05 >= 0
    assert flat.with_sentence(0.35).verdict == "unrelated"
    assert Evidence.of(None, None, docs=0.45, weak=0.3, support_from=0.0).verdict == "unrelated"
    assert set(fits.to_dict()) >= {"verdict", "why", "cosine", "peak", "support"}
