"""Follow-up questions: retrieval reads the conversation, not only the last message."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from heron.agent import Agent, Turn
from heron.agent.followup import contextual, last_reply, refers_back, standalone
from heron.agent.words import nothing_found
from heron.core.chat import Message
from tests.llm_servers import ChatServer

FIRST = "When should I prune roses?"
FOLLOW_UP = "What should I remove first?"
HISTORY = [Message("user", FIRST), Message("assistant", "Prune roses in late winter.")]


def rewrites(chat: ChatServer) -> list[dict]:
    """The calls that asked the model to make a turn standalone."""
    posted = chat.posted("/v1/chat/completions")
    return [r for r in posted if "standalone" in r["messages"][0]["content"]]


def test_refers_back_in_english_portuguese_and_spanish() -> None:
    for message in (
        "Where do I request a new one?",
        "And how long does it take?",
        "What about on weekends?",
        "Onde eu peço isso?",
        "E quanto custa?",
        "¿Y cuánto tarda eso?",
    ):
        assert refers_back(message), message
    for message in ("What is a Pod?", "How do I rotate the VPN password on my laptop?"):
        assert not refers_back(message), message
    long = "Can you tell me how the scheduler decides where it places a Pod in a large cluster?"
    assert not refers_back(long)  # a long message says what it means


def test_contextual_query_weighs_the_latest_turn_most() -> None:
    unit = np.eye(3, dtype=np.float32)
    text, vector = contextual("and then?", unit[0], ["first q", "second q"], unit[1:])
    assert text == "and then? second q first q"
    assert np.isclose(np.linalg.norm(vector), 1.0)
    assert vector[0] > vector[2] > vector[1] > 0  # now, then the latest, then the one before


def test_contextual_query_stays_in_the_message_models_part_at_its_length() -> None:
    # The multilingual profile: two models side by side (split at 2), a query in one
    # half at length sqrt(2), so its dot product with a passage is that model's cosine.
    root2 = np.sqrt(2.0)
    message = np.array([root2, 0, 0, 0], dtype=np.float32)
    earlier = np.array([[0, root2, 0, 0]], dtype=np.float32)  # the same model
    reply = np.array([0, 0, root2, 0], dtype=np.float32)  # read by the other model
    _, vector = contextual("and then?", message, ["first q"], earlier, reply, splits=(2,))
    assert np.isclose(np.linalg.norm(vector), root2)
    assert vector[0] > vector[1] > 0
    assert not vector[2:].any()  # the other model's vector has no say on this scale


def test_the_last_reply_is_not_herons_saying_it_found_nothing() -> None:
    assert last_reply(HISTORY) == "Prune roses in late winter."
    for lang in ("en", "pt", "es"):  # in every language Heron says it
        refusal = nothing_found(
            ["garden"], ["garden"], 0.21, lang=lang, surface="api", generated=False
        )
        history = [*HISTORY, Message("user", "What about tulips?"), Message("assistant", refusal)]
        assert last_reply(history) == ""


def test_standalone_takes_one_question_or_none() -> None:
    earlier = ["How do I prune roses?"]
    assert standalone('"When do I prune roses?"\n', "and when?", earlier) == (
        "When do I prune roses?"
    )
    assert standalone("Question: Where are the roses?", "where?", earlier) == (
        "Where are the roses?"
    )
    assert standalone("", "x", earlier) is None
    assert standalone("roses " * 200, "short?", earlier) is None
    assert standalone("Tell me about the weather.", "and when?", earlier) is None


def test_a_follow_up_is_searched_with_the_earlier_question(agent: Agent) -> None:
    alone = agent.ask(Turn(FOLLOW_UP))
    follow = agent.ask(Turn(FOLLOW_UP, history=HISTORY))
    assert follow.grounding.how == "context"
    assert follow.grounding.query.startswith(FOLLOW_UP) and FIRST in follow.grounding.query
    assert follow.citations[0].page == "garden/pruning"
    assert "dead canes" in follow.answer
    assert alone.grounding.how == "message"  # no conversation: the message as it is


def test_a_session_gives_the_follow_up_its_context(agent: Agent) -> None:
    first = agent.ask(Turn(FIRST))
    follow = agent.ask(Turn(FOLLOW_UP, session_id=first.session_id))
    assert follow.grounding.how == "context"
    assert follow.citations[0].page == "garden/pruning"


def test_a_standalone_question_after_another_keeps_its_own_words(agent: Agent) -> None:
    answer = agent.ask(Turn("How often should I water my tomato plants?", history=HISTORY))
    assert answer.grounding.how == "message"
    assert answer.citations[0].page == "garden/watering"


def test_a_capable_model_rewrites_the_follow_up_once(
    make_agent: Callable[..., Agent], chat: ChatServer
) -> None:
    agent = make_agent()
    answer = agent.ask(Turn(FOLLOW_UP, history=HISTORY, answer="extractive"))
    (call,) = rewrites(chat)
    prompt = call["messages"][-1]["content"]
    assert FIRST in prompt and prompt.rstrip().endswith("Question:") and FOLLOW_UP in prompt
    # The replay server echoes the prompt: a reply sharing no word with the conversation
    # is no rewrite, so the deterministic query stands in (and is cached as such).
    assert answer.grounding.how == "context"
    assert answer.citations[0].page == "garden/pruning"
    agent.ask(Turn(FOLLOW_UP, history=HISTORY, answer="extractive"))
    assert len(rewrites(chat)) == 1  # cached per conversation and turn


def test_a_rewritten_question_is_what_is_searched(
    make_agent: Callable[..., Agent], chat: ChatServer
) -> None:
    agent = make_agent()
    chat.replies.append("What should I remove first when I prune roses?")
    answer = agent.ask(Turn(FOLLOW_UP, history=HISTORY, answer="extractive"))
    assert answer.grounding.how == "model"
    assert answer.grounding.query == "What should I remove first when I prune roses?"
    assert answer.citations[0].page == "garden/pruning"


def test_when_the_rewrite_fails_the_deterministic_query_stands_in(
    make_agent: Callable[..., Agent], chat: ChatServer
) -> None:
    agent = make_agent()
    chat.fail("gpt-test", 500, times=10)
    answer = agent.ask(Turn(FOLLOW_UP, history=HISTORY, answer="extractive"))
    assert answer.grounding.how == "context"
    assert answer.citations[0].page == "garden/pruning"
