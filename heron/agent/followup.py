"""Follow-up questions: what a turn is searched with, given the conversation before it.

"Where do I request a new one?" means nothing to a search on its own; after "How often
does the VPN password rotate?" it means a new VPN password. Two ways to make the turn
searchable, the first that applies:

1. **A capable model** (``answers: generative`` in models.yml) rewrites the turn into a
   standalone question (``rewrite_request``: one short call), cached per conversation and
   turn by the agent; a failed or odd rewrite falls back to 2.
2. **Deterministic** (any model, no call), only when the message alone grounds poorly (its
   best passage's cosine under the docs threshold) or reads as a follow-up
   (``refers_back``: a short message with a word that points back, or one that starts
   like "and ..." / "what about ..."): ``contextual`` searches the message's text plus
   the earlier questions' (the lexical side gets their terms) with a vector blended
   towards the latest turn: ``unit(q + DECAY * (q_1 + a_1) + DECAY**2 * q_2)``, ``q_1``
   the previous question's vector and ``a_1`` the previous answer's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from heron.agent.guard import Scaffold
from heron.agent.words import refusal
from heron.core.chat import ChatRequest, Message
from heron.embed import query_space
from heron.store.analysis import analyze

#: Earlier questions a follow-up borrows from, latest first, and their weights' decay.
CONTEXT_TURNS = 2
DECAY = 0.5
#: Words of the last answer that join the blended vector (a quoted answer says what the
#: conversation is about in the library's own words).
REPLY_WORDS = 64
#: A follow-up is short: a longer message says what it means.
FOLLOW_UP_WORDS = 12
#: Words that point back to something said before (English, Portuguese, Spanish).
REFERRING = frozenset(
    """it its it's they them their theirs that this those these one ones there he she him
    her his such same else another other former latter
    isso isto aquilo ele ela eles elas dele dela deles delas lá esse essa esses essas este
    esta estes estas aquele aquela mesmo mesma outro outra nele nela
    eso esto ello ella ellos ellas allí ese esa esos esas otro otra mismo misma""".split()  # noqa: SIM905
)
#: How a message that continues the one before starts.
_CONTINUES = re.compile(
    r"^\s*(and|also|but|so|then|what about|how about|what if|e|mas|então|também|"
    r"e quanto|e se|y|pero|también|y si)\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[\w'\u2019]+")
#: The rewrite: a short answer, and at most this much of each earlier turn in its prompt.
REWRITE_TOKENS = 64
REWRITE_TURN_CHARS = 600
REWRITE_TURNS = 6
REWRITE_SYSTEM = (
    "You rewrite the user's last message as one standalone question that a search engine "
    "can answer without the conversation: replace words that point back (it, that, this "
    "one, there) with what they mean, keep every detail and the user's language. Reply "
    "with the question alone, nothing else."
)


def earlier_questions(history: Sequence[Message]) -> list[str]:
    """The text of the user's earlier messages, oldest first."""
    return [m.content for m in history if m.role == "user" and m.content.strip()]


def refers_back(message: str) -> bool:
    """Whether ``message`` reads as a follow-up: short, with a word that points back or
    the start of a continuation.

    >>> refers_back("Where do I request a new one?"), refers_back("What is a Pod?")
    (True, False)
    """
    words = [w.lower() for w in _WORD.findall(message)]
    if not words or len(words) > FOLLOW_UP_WORDS:
        return False
    return bool(_CONTINUES.match(message)) or any(w in REFERRING for w in words)


def last_reply(history: Sequence[Message], words: int | None = REPLY_WORDS) -> str:
    """The start of the last assistant message (``words`` words; all of it for
    ``None``): what the follow-up most likely goes on about. Empty when that message is
    Heron saying it found nothing: its words (the libraries searched, how to add one) say
    nothing of the topic."""
    for m in reversed(history):
        if m.role == "assistant" and m.content.strip():
            if refusal(m.content):
                return ""
            return " ".join(m.content.split()[:words])
    return ""


def contextual(
    message: str,
    vector: np.ndarray,
    earlier: Sequence[str],
    earlier_vectors: np.ndarray,
    reply_vector: np.ndarray | None = None,
    splits: Sequence[int] = (),
) -> tuple[str, np.ndarray]:
    """The deterministic standalone query: ``message`` followed by the last
    ``CONTEXT_TURNS`` questions (latest first), and the blended vector (module doc).
    ``earlier_vectors``: one row per question of ``earlier[-CONTEXT_TURNS:]``;
    ``reply_vector``: the last answer's (``last_reply``), weighed as the latest
    question.

    The blend is made in the part of the space the message's vector lives in
    (``heron.embed.query_space``, ``splits``: the embedder's) and has that vector's length:
    the multilingual profile's query vectors are one model's half at length sqrt(2), so
    that a query's dot product with a passage is that model's cosine, and its thresholds
    apply. A blend of unit length scored every passage 1/sqrt(2) lower ("best match
    0.27" for a follow-up whose page scores 0.38)."""
    recent = list(earlier[-CONTEXT_TURNS:])[::-1]
    rows = np.asarray(earlier_vectors, dtype=np.float32).reshape(len(recent), -1)[::-1]
    if reply_vector is not None:
        rows = np.vstack([rows, np.asarray(reply_vector, dtype=np.float32).reshape(1, -1)])
    query, rows = query_space(vector, rows, splits)
    blended = query.copy()
    for k, row in enumerate(rows[: len(recent)], 1):
        blended += DECAY**k * row
    if reply_vector is not None:
        blended += DECAY * rows[-1]
    norm = float(np.linalg.norm(blended))
    length = float(np.linalg.norm(vector))
    text = " ".join([message, *recent])
    return text, (blended * (length / norm) if norm > 0 else blended)


def rewrite_request(message: str, history: Sequence[Message]) -> ChatRequest:
    """The one call that makes ``message`` standalone, from the turns before it."""
    lines = []
    for m in [m for m in history if m.role in ("user", "assistant")][-REWRITE_TURNS:]:
        text = " ".join(m.content.split())[:REWRITE_TURN_CHARS]
        if text:
            lines.append(f"{m.role}: {text}")
    prompt = "Conversation:\n" + "\n".join(lines) + f"\n\nLast message: {message}\n\nQuestion:"
    return ChatRequest(
        (Message("system", REWRITE_SYSTEM), Message("user", prompt)),
        max_tokens=REWRITE_TOKENS,
        temperature=0.0,
    )


def standalone(reply: str, message: str, earlier: Sequence[str] = ()) -> str | None:
    """The rewritten question from the model's ``reply``; ``None`` when it is not one:
    empty, far longer than a question, its instructions given back
    (``heron.agent.guard.Scaffold``), or sharing no word with the message and the
    ``earlier`` questions (a rewrite restates them; anything else is the model's own
    topic).

    >>> standalone('"When do I prune roses?"', "And when?", ["How do I prune roses?"])
    'When do I prune roses?'
    """
    lines = [line.strip() for line in reply.strip().splitlines() if line.strip()]
    if not lines:
        return None
    text = lines[0].removeprefix("Question:").strip().strip("\"'\u201c\u201d").strip()
    if not text or len(text) > max(300, 4 * len(message)):
        return None
    if Scaffold.of([REWRITE_SYSTEM], [message, *earlier]).echo(text):
        return None  # the rewrite's instructions given back (issue 44), not a question
    said = set(analyze(" ".join([message, *earlier])))
    return text if said & set(analyze(text)) else None
