"""Extractive answers: the passages' own sentences that answer the question, each cited.

No model writes them, so they cannot loop or invent; the same passages and question give
the same answer. ``compose(question, vector, passages, embedder)``:

1. **Sentences**: each passage's prose sentences in reading order, a table row (with
   its column names) as one sentence (``heron.agent.sentences``: headings and code left
   out).
2. **Lexical**: BM25 of each sentence for the question's analysed terms
   (``heron.store.analysis``, the terms the libraries' lexical index uses), IDF over these
   sentences. BM25 as in Robertson & Zaragoza, "The Probabilistic Relevance Framework:
   BM25 and Beyond" (2009), with Lucene's IDF ``ln(1 + (N - df + 0.5) / (df + 0.5))``,
   ``k1 = 1.2``, ``b = 0.75``. A follow-up's query is the message and the earlier
   questions (``heron.agent.followup``); the earlier questions' terms weigh
   ``EARLIER_WEIGHT`` each, the message's 1: its own words say what it asks.
3. **Candidates**: the ``CANDIDATES`` sentences with the best BM25 (ties: the better
   passage, then the earlier sentence); when fewer share a term with the question, the
   first sentences of the best passages fill in. Only these are embedded: embedding
   every sentence of five passages costs more than the whole search.
4. **Dense**: the candidates (their first ``EMBED_WORDS`` words) embedded in one batch by
   the store's embedder (its cache answers sentences seen before), cosine with the
   question's vector.
5. **Fusion**: ``heron.store.fusion.fuse`` (z-scores, ``alpha`` 0.5), the libraries' own
   hybrid rule, minus ``PASSAGE_PENALTY`` times how far the sentence's passage is
   behind the best one in retrieval (``scores``: retrieval weighed the passages on more
   evidence than one sentence has, and the best one usually holds the answer), minus
   ``LINK_PENALTY`` times the share of the sentence that is link text and
   ``NAVIGATION_PENALTY`` for a passage under a "What's next" or "See also" heading:
   those point elsewhere, they do not answer. A question that asks what a term is
   ("What is Heron?", ``defined``) gives ``DEFINITION_BONUS`` to a sentence that says it
   ("Heron is ...", ``defines``), wherever retrieval placed its passage.
6. **Selection**, best first. A sentence about its page ("This page explains how to
   restore ...", ``_ABOUT``) is quoted only when no other sentence shares a word with
   the question. A sentence shorter than ``MIN_WORDS`` words, a question, a
   ``fragment`` (a sentence's tail, or one cut mid-clause), one that quotes the question
   itself (a page listing example questions), one nearly the same as one already chosen
   (cosine >= ``DUPLICATE``), one below the candidates' mean after the first, one whose
   cosine with the question is under ``RELATIVE`` times the best chosen one's (off the
   question beside the sentence that answers it; ``NEIGHBOUR_RELATIVE`` for the
   sentence next to a chosen one), or one that would make the answer repeat itself
   (``heron.agent.guard``) is left out; at most ``Limits.sentences`` sentences and
   ``Limits.words`` words (and ``Limits.chars`` characters, from a ``max_tokens``). A
   sentence chosen alone from its paragraph brings the next one of that paragraph at
   once, while there is room (``_follow``), ahead of the sentences scored below it: what
   a sentence leads up to is often said in the next one's words.
7. **Order**: passages in the order of their best chosen sentence; within a passage, its
   reading order. Each sentence is followed by its marker ``[n]``: the passages quoted
   are numbered 1, 2, ... in order of first use (``Extract.used[n - 1]`` is the passage),
   so the citations are exactly the passages quoted.

>>> compose("How often do I water tomatoes?", vector, ["Water tomatoes twice a week."],
...         embedder).text                                            # doctest: +SKIP
'Water tomatoes twice a week. [1]'
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal, NamedTuple

import numpy as np

from heron.agent.answer import ToolUse
from heron.agent.guard import repeated_ngram
from heron.agent.sentences import Sentence, sentences
from heron.embed import Embedder, query_space, splits_of
from heron.language import language
from heron.store.analysis import analyze, bm25, query_terms
from heron.store.fusion import fuse

#: Sentences embedded per answer (the best by BM25), and words embedded of each: about
#: 400 tokens for MiniLM. Eight left out the answer whenever the passages' summaries and
#: their neighbours' sentences took the places (docs/benchmarks.md, "Real use": 8, 10,
#: 12 and 16 measured).
CANDIDATES = 12
EMBED_WORDS = 32
#: Fused score taken off a sentence per unit its passage's retrieval score is behind the
#: best passage's (both z-scores): a passage far behind must hold a far better sentence,
#: one close behind only a better one. On the 100 Kubernetes dev questions over three
#: libraries (gold page quoted / share of the sentences from it): 0.8 per rank as
#: before, 63.0% / 59.9%; per score unit 0.5: 69.0 / 54.3, 0.8: 67.0 / 60.5, 1.2: 67.0 /
#: 62.1, 1.6: 67.0 / 63.4, 2.4: 66.0 / 65.0 (docs/benchmarks.md, "Real use").
PASSAGE_PENALTY = 1.6
LINK_PENALTY = 1.0
NAVIGATION_PENALTY = 1.0
#: A sentence about its page ("This page explains what is backed up ...", a summary
#: "How to connect ..."): a pointer, like a "See also" list, that matches every word of
#: the question because it sums the page up, and answers none of it. It is quoted only
#: when no other sentence shares a word with the question, sets no bar for the sentences
#: after it (``RELATIVE``) and brings no successor: it leads up to the page, not to the
#: next sentence ("Read it before you need it.").
_ABOUT = re.compile(
    r"^\W*(?:this|the) (?:page|document|guide|section|tutorial|topic|article|chapter)\b"
    r"|^\W*in this (?:page|document|guide|section|tutorial|topic|article|chapter)\b"
    r"|^\W*how\b",  # not a question: those are left out
    re.IGNORECASE,
)
#: "What is X?" asks for a definition, and "X is ..." gives one: such a sentence gains
#: ``DEFINITION_BONUS`` (English, Portuguese, Spanish; X of at most ``DEFINED_WORDS``
#: words, so that "What is the default hard eviction threshold ...?" asks for a value).
DEFINITION_BONUS = 1.0
DEFINED_WORDS = 4
#: The most a follow-up's own vector weighs beside its query's (``_own_weight``).
OWN_WEIGHT = 0.5
#: Sentences that define the term weighed beyond the BM25 ``CANDIDATES`` (``_candidates``).
DEFINITIONS = 4
_DEFINE = re.compile(
    r"^\W*(?:what|who)\s+(?:is|are)\s+(?:an?\s+|the\s+)?(?P<en>[^?]+?)\s*\??$"
    r"|^\W*(?:o\s+)?que\s+(?:é|são)\s+(?:o\s+|a\s+|os\s+|as\s+|um\s+|uma\s+)?"
    r"(?P<pt>[^?]+?)\s*\??$"
    r"|^\W*qu[ée]\s+(?:es|son)\s+(?:el\s+|la\s+|los\s+|las\s+|una?\s+)?"
    r"(?P<es>[^?]+?)\s*\??$",
    re.IGNORECASE,
)
_COPULA = frozenset({"is", "are", "é", "são", "es", "son", "means", "refers"})
_ARTICLES = frozenset({"a", "an", "the", "o", "os", "as", "um", "uma", "el", "la", "los", "las"})
_CONTEXT = frozenset({"in", "on", "at", "within", "no", "na", "em", "en"})
_RELATION = frozenset({"of", "for", "to", "between", "de", "do", "da", "para", "del"})


def defined(question: str) -> str | None:
    """The term ``question`` asks to define ("What is a Pod?" -> "pod"), lowercased;
    ``None`` when it asks for something else.

    >>> defined("What is Heron?"), defined("What is the purpose of Kubernetes auditing?")
    ('heron', None)
    """
    match = _DEFINE.match(question.strip())
    if not match:
        return None
    words = _words(next(g for g in match.groups() if g)).split()
    # "What is a PersistentVolumeClaim in Kubernetes?": the term ends where its context
    # starts; "What is the purpose of ...?" asks for a relation, not a term.
    words = words[: next((i for i, w in enumerate(words) if w in _CONTEXT), len(words))]
    if not words or len(words) > DEFINED_WORDS or _RELATION & set(words):
        return None
    return " ".join(words)


def defines(text: str, term: str) -> bool:
    """Whether ``text`` starts by saying what ``term`` is: it opens (after an article)
    with one of the term's words and has "is" or "are" soon after ("A Secret is an
    object ..." for "kubernetes secret").

    >>> defines("A Secret is an object that holds a password.", "kubernetes secret")
    True
    """
    words = _words(text).split()
    while words and words[0] in _ARTICLES:
        words = words[1:]
    named = bool(words) and any(words[0].startswith(w[:5]) for w in term.split())
    return named and bool(_COPULA & set(words[1:8]))


#: Headings of sections that point to other pages (compared lowercased, last level).
NAVIGATION = frozenset(
    {"what's next", "next steps", "see also", "further reading", "learn more", "related"}
)
#: Cosine from which two sentences say the same thing: only the better one is kept.
DUPLICATE = 0.9
#: Fewer words is a fragment ("Pods that run a single container."), not an answer.
MIN_WORDS = 4
#: Fewer words without closing punctuation is a list entry, not a statement.
STATEMENT_WORDS = 8
#: Characters a marker takes beside its sentence: `` [n]`` and the space after it.
MARKER_CHARS = 5
_WORD = re.compile(r"\w+")
_DANGLING = re.compile(r"\b(and|or|but|the|a|an|to|of|with)$", re.IGNORECASE)
#: After the best sentence, one is kept only when its cosine with the question is at
#: least this share of the best one's: a quote that says less about the question than
#: the best does is not part of the answer (tuned on the Kubernetes dev questions and
#: Heron's own; docs/benchmarks.md, "Real use").
RELATIVE = 0.8
#: The same for the sentence right before or after a chosen one in its paragraph: it
#: often goes on about the same thing in words of its own ("In a heat wave water them
#: every day." after the watering rule), which the question's vector does not see.
NEIGHBOUR_RELATIVE = 0.5
#: A follow-up's standalone query holds the earlier questions' words; each weighs this
#: much beside the message's own (a BM25 query-term weight): "And how long should I wait
#: before chasing?" after a question on approvals asks about the wait, not the approvals
#: again (docs/benchmarks.md, "Real use").
EARLIER_WEIGHT = 0.5
#: Sentences embedded for a question in another language than English (``heron.language``)
#: instead of ``CANDIDATES``: it shares few words with English pages (names, numbers), so
#: BM25 cannot pick the candidates, and the answer was often past the twelfth sentence
#: ("Qual o limite de hotel por noite em Londres?": the London row was never weighed).
CANDIDATES_ACROSS = 32
#: Fused score a sentence gains when it holds the kind of fact the question asks for
#: (``asks``, ``states``): a number for "how many", a time for "when", a person or a
#: way to reach one for "who". "Who do I call if the VPN is broken at night?" opened with
#: "Open a ticket in the IT portal ..." (all the question's words, no one to call).
KIND_BONUS = 0.6
#: What a sentence that opens with a condition gains when the question asks about one
#: (``_CONDITION``): "Who do I call when the desk is closed?" is answered by "Outside
#: those hours, call ...", not by the desk's own number.
CONDITION_BONUS = 0.8
#: How far behind the best sentence one that holds the kind of fact asked for may be and
#: still lead the answer (``_lead_with_the_fact``), in fused score units.
PROMOTE_MARGIN = 1.5
#: The same for an entry of a list asked for, under a heading that names it: its entries
#: rarely share the question's words ("SEV1: the product is down ...").
LIST_MARGIN = 2.5
#: Fused score a sentence loses when the conversation's last answer already quoted it: a
#: follow-up asks for something new ("and if I bring a guest?" after the badge rules), and
#: an answer that says again what was just said answers nothing; it still wins when
#: nothing else is on the question.
REPEAT_PENALTY = 1.0
#: Fused score a passage's sentences lose when it holds the question itself, word for word:
#: a page that lists questions (a demo, an FAQ index) mentions the question, it does not
#: answer it.
LISTING_PENALTY = 2.0
#: A list or table asked for ("What are the severity levels?") is quoted whole, at most
#: this many entries and ``LIST_WORDS`` words (beside ``Limits``).
LIST_ENTRIES = 10
LIST_WORDS = 200

Kind = Literal["who", "count", "value", "when", "where", "why", "list", "yesno", "how", "which"]
#: How each kind of question starts, in English, Portuguese and Spanish (first match wins:
#: "how many" is a count before it is a "how").
_KINDS: tuple[tuple[Kind, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern, re.IGNORECASE))
    for kind, pattern in (
        (
            "who",
            r"^\W*(?:(?:and|e|y)\s+)?(?:who|whom|whose|quem|qui[ée]n(?:es)?)\b"
            r"|\b(?:to whom|para quem|a qui[ée]n|con qui[ée]n|com quem)\b"
            r"|\bwho\s+(?:do|should|can|must)\s+i\s+(?:call|contact|ask|ping|tell|email)\b",
        ),
        (
            "count",
            r"\b(?:how\s+(?:many|much|long|often|far|soon|quickly|fast|early|late|big|old)"
            r"|(?:the\s+)?(?:longest|shortest|maximum|minimum|most|least|latest|earliest)"
            r"|quant[oa]s?|cu[áa]nt[oa]s?|de quanto em quanto|cada cu[áa]nto|qu[ée] tan"
            r"|what(?:'s|\s+is|\s+are)?\s+(?:the\s+)?(?:\w+\s+){0,2}(?:percentage|amount|number"
            r"|rate|price|cost|fee|limit|budget|deadline|lifetime|allowance|duration|size)"
            r"|qual (?:o |é o |é a |a )?(?:\w+\s+)?(?:valor|limite|prazo|or[çc]amento|taxa"
            r"|pre[çc]o)"
            r"|cu[áa]l es (?:el |la )?(?:\w+\s+)?(?:l[íi]mite|plazo|presupuesto|importe|tarifa"
            r"|precio)"
            # "Is there a cap per night?": a cap is a number.
            r"|is there an? (?:\w+\s+)?(?:cap|limit|maximum|minimum|max)"
            r"|(?:h[áa]|existe) (?:um |algum )?(?:teto|limite|m[áa]ximo|m[íi]nimo)"
            r"|hay (?:un |alg[úu]n )?(?:tope|l[íi]mite|m[áa]ximo|m[íi]nimo))\b",
        ),
        (
            "value",
            r"^\W*(?:(?:and|e|y)\s+)?(?:what|which|qual|cu[áa]l)(?:'s|\s+is|\s+are|\s+é|\s+es)?"
            r"\s+(?:the\s+|o\s+|a\s+|el\s+|la\s+|os\s+|as\s+|los\s+|las\s+)?(?:\w+\s+){0,3}"
            r"(?:extensions?|phones?|numbers?|ports?|address(?:es)?|e-?mails?|urls?|links?|codes?"
            r"|servers?|hosts?|ramais|ramal|telefones?|n[úu]meros?|portas?|endere[çc]os?"
            r"|c[óo]digos?|servidor(?:es)?|extensi[óo]n(?:es)?|tel[ée]fonos?|puertos?"
            r"|direcci[óo]n(?:es)?)\b",
        ),
        (
            "when",
            r"^\W*(?:(?:and|e|y)\s+)?(?:when|quando|cu[áa]ndo)\b|\bwhat time\b"
            r"|\b(?:at|by) what (?:time|hour|date)\b|\bwhich day\b|\ba que horas\b"
            r"|^\W*what hours\b|\bqu[ée] horario\b|\bque hor[áa]rio\b"
            r"|\ba qu[ée] hora\b|\bem que dia\b|\bqu[ée] d[íi]a\b|\bfrom which day\b"
            r"|\ba partir de que dia\b"
            # "What are the desk's hours?", "Qual é o horário ...?": the thing asked is a time.
            r"|^\W*(?:(?:and|e|y)\s+)?(?:what|which|qual|cu[áa]l)(?:'s|\s+is|\s+are|\s+é"
            r"|\s+es|\s+s[ãa]o|\s+son)?\s+(?:the\s+|o\s+|a\s+|el\s+|la\s+|os\s+|los\s+)?"
            r"(?:\w+\s+){0,2}(?:hours|schedule|opening times|time|date|day|hor[áa]rios?|hora"
            r"|data|dia|fecha|d[íi]a)\b",
        ),
        ("where", r"^\W*(?:(?:and|e|y)\s+)?(?:where|onde|d[óo]nde|aonde|ad[óo]nde)\b"),
        ("why", r"^\W*(?:(?:and|e|y)\s+)?(?:why|por ?que|por qu[ée]|porqu[ée])\b"),
        (
            "list",
            r"^\W*(?:(?:and|e|y)\s+)?(?:what|which) are (?:the|all)\b|^\W*list\b"
            r"|^\W*(?:quais|cu[áa]les) s[ãa]o\b|^\W*(?:quais|cu[áa]les) son\b"
            r"|^\W*name (?:the|all)\b|\b(?:all|every|todos os|todas as|todos los|todas las)\s+"
            r"(?:the\s+)?\w+\s+(?:levels|types|kinds|steps|options|rules)\b",
        ),
        (
            "yesno",
            r"^\W*(?:(?:and|e|y)\s+)?(?:can|could|may|do|does|did|is|are|am|should|must|will|would|has|have"
            r"|posso|pode|podem|devo|deve|preciso|precisa|tem|h[áa]|[ée]|s[ãa]o|puedo|puede|"
            r"pueden|debo|debe|necesito|hay|es|son|tengo|tiene)\b",
        ),
        ("how", r"^\W*(?:(?:and|e|y)\s+)?(?:how|como|c[óo]mo)\b"),
        (
            "which",
            r"^\W*(?:(?:and|e|y)\s+)?(?:which|what|qual|quais|cu[áa]l|cu[áa]les|que"
            r"|qu[ée])\b",
        ),
    )
)
_NUMBER = re.compile(
    r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|"
    r"thirty|forty|fifty|hundred|thousand|once|twice|half|dozen|daily|weekly|monthly|yearly|"
    r"annual|hourly|um|uma|dois|duas|tr[êe]s|quatro|cinco|seis|sete|oito|nove|dez|vinte|trinta"
    r"|uno|dos|tres|cuatro|seis|siete|ocho|nueve|diez|veinte|treinta)\b",
    re.IGNORECASE,
)
#: A value to type or dial: digits, an address, a link, a host name (not any `code`: a
#: field's name is not the address asked for).
_VALUE = re.compile(r"\d|@|://|\b[\w-]+\.(?:example|com|org|net|io|local|internal)\b")
_TIME = re.compile(
    r"\d{1,2}[:h]\d{2}|\b\d{1,2}\s?(?:am|pm)\b|\b\d{1,2}(?:st|nd|rd|th)\b|\b(?:monday|tuesday"
    r"|wednesday|thursday|friday|saturday|sunday|weekdays?|weekends?|morning|afternoon|evening"
    r"|night|noon|midnight|january|february|march|april|may|june|july|august|september|october"
    r"|november|december|before|after|until|within|from the|every|daily|weekly|monthly|first"
    r"|second|third|fourth|fifth|last|segunda|ter[çc]a|quarta|quinta|sexta|s[áa]bado|domingo"
    r"|lunes|martes|mi[ée]rcoles|jueves|viernes|antes|depois|despu[ée]s|at[ée]|hasta"
    r"|primeiro|quarto|primer|cuarto)\b",
    re.IGNORECASE,
)
_PERSON = re.compile(
    r"\b(?:call|phone|ring|contact|email|e-mail|ask|ping|page|message|extension|ext\.?|"
    r"desk|team|manager|lead|owner|on-call|engineer|officer|department|hr|it|people "
    r"operations|buddy|admin|administrator|liga|ligue|contate|pergunte|ramal|equipe|gerente|"
    r"respons[áa]vel|llama|contacta|pregunta|extensi[óo]n|equipo|jefe)\b|@|#\w|\+?\d[\d -]{5,}",
    re.IGNORECASE,
)
#: A place: a preposition before a name or a path ("in Pulse", "under `Absence`"), a link,
#: or a word for a place; not any preposition ("in the afternoon" is a time).
_PLACE = re.compile(
    r"\b(?:in|at|on|under|from|inside|through|via|em|no|na|en|por)\s+(?:the\s+|o\s+|a\s+|el\s+|"
    r"la\s+)?[A-Z`*]|https?://|/\w|>|(?i:\b(?:floors?|rooms?|portal|channel|folder|reception"
    r"|office|building|desk|drive|site|page|menu|tab|andar|sala|pr[ée]dio|recep[çc][ãa]o"
    r"|escrit[óo]rio|pasta|canal|planta|edificio|recepci[óo]n|oficina|carpeta)\b)",
)
_REASON = re.compile(
    r"\b(?:because|since|so that|to avoid|in order to|otherwise|which means|porque|pois|para que"
    r"|para evitar|ya que|puesto que)\b",
    re.IGNORECASE,
)
#: An instruction, the answer to "how do I ...?": a verb first, then what it acts on
#: ("Add the label ...", "Abra um chamado ...", "Llama al ..."), or what the reader must
#: or can do ("You must meet ..."). A sentence opened by a determiner, a quantifier, a
#: pronoun or a preposition ("Most tickets ...", "Outside those hours ...") is none.
_NOT_A_VERB = (
    "the|a|an|this|that|these|those|most|some|all|each|every|any|many|few|no|one|it|its|they"
    "|their|we|our|he|she|there|here|in|on|at|for|from|with|by|of|to|after|before|during"
    "|outside|inside|under|within|when|if|while|as|o|os|as|um|uma|uns|umas|este|esta|esse|essa"
    "|todo|toda|todos|todas|cada|muitos|alguns|ele|ela|eles|elas|em|no|na|nos|nas|de|do|da"
    "|para|com|por|quando|se|el|la|los|las|un|una|unos|unas|todo|cada|muchos|algunos|en|del"
    "|al|con|cuando|si"
)
_INSTRUCTION = re.compile(
    rf"^\W*(?!(?i:{_NOT_A_VERB})\b)[A-Za-zÀ-ÿ]+\s+(?:the|a|an|your|it|them|this|that|up|out"
    r"|o|a|os|as|um|uma|seu|sua|seus|suas|el|la|los|las|un|una|su|sus|al|tu)\b"
    r"|^\W*(?:you|voc[êe]|usted|t[úu])\s+(?:must|should|need|can|have to|deve|precisa|pode"
    r"|tem que|debe|necesita|puede|tiene que)\b",
    re.IGNORECASE,
)
#: A condition in a question after what it asks ("Who do I call when the desk is
#: closed?"; not "In Heron, when does ...?", a question word after a comma), and a
#: sentence that opens with one ("Outside those hours, call ..."): the
#: sentence answers the case asked about, not the usual one.
_CONDITION = re.compile(
    r"\w\s+(?:when|if|while|during|outside|after|before|unless|quando|se|enquanto|durante|fora"
    r"|depois|antes|caso|cuando|si|mientras|fuera|despu[ée]s)\b",
    re.IGNORECASE,
)
_CONDITIONAL = re.compile(
    r"^\W*(?:if|when|whenever|while|during|outside|after|before|unless|in case|once|se|quando"
    r"|caso|durante|fora|depois|antes|si|cuando|mientras|fuera|despu[ée]s)\b",
    re.IGNORECASE,
)
_YESNO = re.compile(
    r"\b(?:can|cannot|can't|may|must|never|not|no|only|allowed|required|always|need|needs|"
    r"pode|n[ãa]o|nunca|somente|apenas|puede|s[óo]lo|solo|siempre)\b",
    re.IGNORECASE,
)
#: A sentence that leans on the one before it: a pronoun or a demonstrative among its
#: first words ("Outside those hours, call ...", "It expires after 180 days."), or a
#: connective that points back at its start ("Otherwise, ...", "In that case, ..."); not
#: "Then" or "Also", which open a sentence that stands alone. Quoted, it brings its
#: predecessor, without which it says nothing (``_precede``).
_POINTERS = (
    "those|these|that|this|such|it|they|them|there|isso|isto|esse|essa|esses|essas|nesse"
    "|nessa|desse|dessa|eso|esto|ese|esa|esos|esas|ello"
)
_LEANS = re.compile(
    # A pointer among the first words is one in lowercase: "The IT help desk ..." names
    # a department; at the very start any case ("It expires ...").
    rf"^\W*(?:(?i:{_POINTERS})\b|(?:\w+\s+){{1,2}}(?:{_POINTERS})\b"
    r"|(?i:otherwise|instead|afterwards|after that|if so|if not|in that case"
    r"|caso contr[áa]rio|depois disso|sen[ãa]o|de lo contrario|despu[ée]s de eso|si no)\b)"
)


_CLAUSE = re.compile(r"[,;:]\s+")


def asks(question: str) -> Kind | None:
    """The kind of fact ``question`` asks for (English, Portuguese, Spanish), or ``None``.

    >>> asks("Who do I call if the VPN is broken at night?"), asks("Quantos dias de férias?")
    ('who', 'count')
    >>> asks("What are the severity levels for incidents?"), asks("¿Cuándo cierra la nómina?")
    ('list', 'when')
    >>> asks("I'm new, where do I go on my first morning?")
    'where'
    """
    # People lead with what happened and ask after a comma ("I'm new, where do I go
    # ...?", "it says my account is locked, what happened?"): each clause is asked too.
    clauses = [question, *(c for c in _CLAUSE.split(question)[1:] if c.strip())]
    for clause in clauses:
        for kind, pattern in _KINDS:
            if pattern.search(clause):
                return kind
    return None


def states(text: str, kind: Kind | None) -> bool:
    """Whether sentence ``text`` holds the kind of fact a ``kind`` question asks for: a
    number, a time, a person or a way to reach one, a place, a reason, a yes or no, an
    instruction. "which" and "list" questions are answered by what they name, not by a
    shape.

    >>> states("Call extension 4410 at night.", "who"), states("Open a ticket.", "who")
    (True, False)
    >>> states("Add the label escalation.", "how"), states("Most tickets are solved.", "how")
    (True, False)
    """
    pattern = {
        "count": _NUMBER,
        "value": _VALUE,
        "when": _TIME,
        "who": _PERSON,
        "where": _PLACE,
        "why": _REASON,
        "yesno": _YESNO,
        "how": _INSTRUCTION,
    }.get(kind or "")
    return bool(pattern and pattern.search(text))


def leans(text: str) -> bool:
    """Whether ``text`` leans on the sentence before it (``_LEANS``).

    >>> leans("Outside those hours, call the on-call engineer."), leans("Call 4410.")
    (True, False)
    >>> leans("It expires after 180 days."), leans("The IT desk fixes laptops.")
    (True, False)
    """
    return bool(_LEANS.match(text))


@dataclass(frozen=True)
class Limits:
    """How long an extractive answer may be: ``sentences`` and ``words`` at most, and
    ``chars`` (from a request's ``max_tokens``) when set."""

    sentences: int = 5
    words: int = 120
    chars: int | None = None


@dataclass(frozen=True)
class Quote:
    """One sentence of the answer: its text and its passage's citation number (1-based)."""

    text: str
    number: int
    score: float


@dataclass(frozen=True)
class Extract:
    """The answer text (quotes with their markers) and the quotes in that order;
    ``used``: the passages quoted (0-based, as given), in order of first use: marker
    ``[n]`` is ``passages[used[n - 1]]``."""

    text: str
    quotes: tuple[Quote, ...]
    used: tuple[int, ...] = ()


@dataclass(frozen=True)
class _Unit:
    passage: int  # 0-based rank of the passage
    sentence: Sentence
    terms: tuple[str, ...]


def _words(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def fragment(text: str) -> bool:
    """Whether ``text`` is a piece of a sentence rather than one: it starts in lowercase
    (the tail of a sentence a chunk or a list cut: "folder, a shell on login."), ends
    mid-clause (a comma, a semicolon, a dash, "and" / "or"), or is a short entry with no
    closing punctuation.

    >>> fragment("folder, a shell on login."), fragment("`kubectl` lists them.")
    (True, False)
    """
    start = text.lstrip("\"'([*_ ")
    if start[:1].islower():
        return True
    end = text.rstrip()
    if end.endswith((",", ";", "-", "\u2013")) or _DANGLING.search(end):
        return True
    # A short line with no closing punctuation is a list entry or a heading's words
    # ("Review pull requests and provide binding feedback"), not a statement.
    return len(end.split()) < STATEMENT_WORDS and not end.endswith((".", "!", "`", ")", '"'))


def _units(question: str, passages: Sequence[str]) -> list[_Unit]:
    """The sentences that may answer: long enough, whole (not a ``fragment``), not a
    question (a list of the questions a page answers is not their answer), and not a
    quote of the question."""
    asked = _words(question)
    return [
        _Unit(rank, s, tuple(analyze(s.text)))
        for rank, text in enumerate(passages)
        for s in sentences(text)
        if len(s.text.split()) >= MIN_WORDS
        and (s.row or not fragment(s.text))  # a row is whole by construction
        and not s.text.rstrip("\"')").endswith("?")
        and not (asked and asked in _words(s.text))
    ]


def _weights(terms: Sequence[str], latest: str | None) -> dict[str, float] | None:
    """BM25 weights of a query's ``terms`` when it was built from the conversation:
    ``EARLIER_WEIGHT`` for those not in the ``latest`` message."""
    if not latest:
        return None
    own = set(analyze(latest))
    return {t: 1.0 if t in own else EARLIER_WEIGHT for t in terms}


def _own_weight(latest: str) -> float:
    """How much a follow-up's own vector weighs beside its query's (``_weigh``): up to
    ``OWN_WEIGHT``, reached at four of its search terms; none at two ("and when is it
    open?" is "when open": the conversation's query says what "it" is).

    >>> _own_weight("and when is it open?"), _own_weight("and is there a cap per night?")
    (0.0, 0.25)
    """
    return OWN_WEIGHT * min(1.0, max(0, len(set(query_terms(latest))) - 2) / 2)


def _candidates(
    units: list[_Unit], lexical: np.ndarray, count: int, term: str | None = None
) -> list[int]:
    """Indices of the ``count`` sentences to embed: best BM25 first, then passage order;
    and, when the question asks what ``term`` is, up to ``DEFINITIONS`` more that
    ``defines`` it. BM25 favours short sentences dense in the question's words, so a
    page's long opening definition ("Heron is a self-hosted pipeline that ... and ...")
    lost its place to passing mentions and never reached ``DEFINITION_BONUS``."""
    order = sorted(
        range(len(units)),
        key=lambda i: (-float(lexical[i]), units[i].passage, units[i].sentence.position),
    )
    chosen = order[:count]
    if term:
        chosen += [i for i in order[count:] if defines(units[i].sentence.text, term)][:DEFINITIONS]
    return chosen


def _head(text: str) -> str:
    """What is embedded of a sentence: its first ``EMBED_WORDS`` words. Embedding time
    grows with tokens, and a long sentence says what it is about early."""
    words = text.split()
    return text if len(words) <= EMBED_WORDS else " ".join(words[:EMBED_WORDS])


def _cut(text: str, words: int, chars: int | None) -> str:
    """``text`` cut to ``words`` words and ``chars`` characters, at a word, with ``…``."""
    kept = text.split()[:words]
    while chars is not None and kept and len(" ".join(kept)) + 2 > chars:
        kept.pop()
    return " ".join(kept) + " …" if kept else ""


def _fits(chosen: list[tuple[int, str]], text: str, limits: Limits) -> bool:
    words = sum(len(t.split()) for _, t in chosen) + len(text.split())
    chars = sum(len(t) + MARKER_CHARS for _, t in chosen) + len(text) + MARKER_CHARS
    return words <= limits.words and (limits.chars is None or chars <= limits.chars)


def render(quotes: Sequence[Quote]) -> str:
    """Quotes as answer text: one paragraph per passage, each sentence and its ``[n]``."""
    paragraphs: list[list[str]] = []
    last = None
    for quote in quotes:
        if quote.number != last:
            paragraphs.append([])
            last = quote.number
        paragraphs[-1].append(f"{quote.text} [{quote.number}]")
    return "\n\n".join(" ".join(p) for p in paragraphs)


def _behind(count: int, scores: Sequence[float]) -> list[float]:
    """How far each of ``count`` passages is behind the best one: by retrieval score
    (``scores``, best first), or one unit a rank when the scores are not known."""
    if len(scores) >= count > 0:
        return [max(0.0, float(scores[0]) - float(s)) for s in scores[:count]]
    return [float(rank) for rank in range(count)]


def _adjustment(
    unit: _Unit,
    headings: Sequence[str],
    behind: Sequence[float],
    term: str | None,
    kind: Kind | None = None,
    said: str = "",
    listing: Sequence[bool] = (),
    condition: bool = False,
) -> float:
    """What step 5 adds to a sentence's fused score (module doc): the penalties, the
    bonus of a sentence that says what the ``defined`` ``term`` is, and the bonus of one
    that holds the ``kind`` of fact asked for (``states``), and the penalty of one the
    conversation's last answer already ``said`` (its words, ``_words``), and the penalty
    of a passage ``listing`` the question itself among others (a page of example
    questions: "How does Heron pick tools?" in the demo's list of what it asks), and
    the bonus of a sentence opening with a condition when the question has one."""
    heading = headings[unit.passage] if unit.passage < len(headings) else ""
    navigation = heading.rsplit(" > ", 1)[-1].strip().lower() in NAVIGATION
    text = unit.sentence.text
    # The definition asked for stands wherever retrieval placed its page: a term named on
    # every page of a library ("What is Heron?" in Heron's docs) leaves the page that
    # defines it behind pages that merely use it.
    definition = bool(term) and defines(text, term or "")
    return (
        (DEFINITION_BONUS if definition else 0.0)
        + (KIND_BONUS if states(text, kind) or (kind == "list" and unit.sentence.group) else 0.0)
        + (CONDITION_BONUS if condition and _CONDITIONAL.match(text) else 0.0)
        - (REPEAT_PENALTY if said and _words(text) in said else 0.0)
        - (LISTING_PENALTY if unit.passage < len(listing) and listing[unit.passage] else 0.0)
        - (0.0 if definition else PASSAGE_PENALTY * behind[unit.passage])
        - LINK_PENALTY * unit.sentence.linked
        - (NAVIGATION_PENALTY if navigation else 0.0)
    )


class _Weighed(NamedTuple):
    """Steps 1-4 (module doc): the sentences, their BM25, the candidates' indices, their
    vectors and their cosines with the question."""

    units: list[_Unit]
    lexical: np.ndarray
    keys: np.ndarray
    vectors: np.ndarray
    cosines: np.ndarray
    term: str | None  # the term the question asks to define (``defined``)


def _weigh(
    question: str,
    vector: np.ndarray,
    passages: Sequence[str],
    embedder: Embedder,
    latest: str | None,
    latest_vector: np.ndarray | None = None,
) -> _Weighed | None:
    """Steps 1-4 for ``passages``; ``None`` when they hold no sentence to quote."""
    units = _units(latest or question, passages)
    if not units:
        return None
    terms = query_terms(question)
    lexical = bm25(terms, [u.terms for u in units], _weights(terms, latest))
    across = language(latest or question) != "en"
    count = CANDIDATES_ACROSS if across else CANDIDATES
    # "What are the severity levels?" asks for the list, not for what severity levels are.
    term = defined(latest or question) if asks(latest or question) != "list" else None
    keys = np.array(_candidates(units, lexical, count, term), dtype=np.int64)
    # Sentences weighed, and compared with each other, as the question's model sees them.
    embedded = embedder.embed([_head(units[i].sentence.text) for i in keys])
    question_vector, vectors = query_space(vector, embedded, splits_of(embedder))
    cosines = vectors @ question_vector
    own_weight = 0.0
    if latest and latest != question and latest_vector is not None:
        own_weight = _own_weight(latest)
    if own_weight:
        # A follow-up's query carries the earlier questions, and their pull: "and is
        # there a cap per night when I travel?" after an expense claim's deadline
        # weighed the claim's sentences above the hotels' cap. The message's own vector
        # weighs in as far as its own words say what it asks.
        own, own_vectors = query_space(latest_vector, embedded, splits_of(embedder))
        cosines = (1 - own_weight) * cosines + own_weight * (own_vectors @ own)
    return _Weighed(units, lexical, keys, vectors, cosines, term)


def closest(
    question: str, vector: np.ndarray, passages: Sequence[str], embedder: Embedder
) -> float:
    """The best cosine between the question and a sentence ``compose`` would weigh (0.0
    when the passages hold none): a passage's vector sums all of it, so a question
    answered by one sentence of a long lead ("What happens on my first day?" and the
    onboarding page's "What happens in your first days and weeks ...": 0.51, the
    passage 0.28) can fit a sentence closely and the passage weakly. The embedder's
    cache answers the same sentences again when the answer is composed."""
    weighed = _weigh(question, vector, passages, embedder, None)
    return float(weighed.cosines.max()) if weighed is not None else 0.0


def compose(
    question: str,
    vector: np.ndarray,
    passages: Sequence[str],
    embedder: Embedder,
    limits: Limits | None = None,
    *,
    headings: Sequence[str] = (),
    scores: Sequence[float] = (),
    latest: str | None = None,
    latest_vector: np.ndarray | None = None,
    said: str = "",
) -> Extract:
    """The extractive answer to ``question`` from ``passages`` (Markdown bodies in
    citation order; ``vector``: the question's, from ``embedder``; ``headings``: each
    passage's heading path, ``A > B``, and ``scores`` its retrieval score, when known).
    A follow-up's ``question`` is the standalone query built from the conversation, and
    ``latest`` the message as sent (``latest_vector``: its own vector, from ``embedder``),
    and ``said`` the conversation's last answer. Empty
    text when no passage holds a sentence to quote.
    See the module doc for the rules."""
    limits = limits or Limits()
    weighed = _weigh(question, vector, passages, embedder, latest, latest_vector)
    if weighed is None or limits.sentences < 1:
        return Extract("", ())
    units, lexical, keys, vectors, cosines, term = weighed
    dense = np.argsort(-cosines, kind="stable")
    by_lexical = np.argsort(-lexical[keys], kind="stable")
    fused = fuse(
        keys[dense], cosines[dense], keys[by_lexical], lexical[keys][by_lexical], top_k=len(keys)
    )
    row = {int(k): i for i, k in enumerate(keys.tolist())}
    behind = _behind(len(passages), scores)
    kind = asks(latest or question)
    said = _words(said)
    asked = _words(latest or question)
    listing = [len(asked.split()) >= MIN_WORDS and asked in _words(p) for p in passages]
    condition = bool(_CONDITION.search(latest or question))
    scored = sorted(
        (
            (
                f.score
                + _adjustment(units[f.key], headings, behind, term, kind, said, listing, condition),
                f.key,
            )
            for f in fused
        ),
        key=lambda pair: (-pair[0], pair[1]),
    )
    score_of = {key: score for score, key in scored}
    # A pointer to its page is the answer only when no other sentence is on the question.
    others = [p for p in scored if not _ABOUT.match(units[p[1]].sentence.text)]
    if any(lexical[key] > 0 for _, key in others):
        scored = others
    asked = set(query_terms(latest or question))
    named = [bool(asked & set(analyze(h.rsplit(" > ", 1)[-1]))) for h in headings]
    scored = _lead_with_the_fact(scored, units, lexical, kind, named)
    chosen: list[tuple[int, str]] = []  # (unit index, text)
    picked: list[np.ndarray] = []
    best = -math.inf
    lead: int | None = None  # the first sentence chosen
    defining = False  # it is the definition asked for
    for score, key in scored:
        if len(chosen) >= limits.sentences or (chosen and score < 0):
            break
        if any(k == key for k, _ in chosen):  # brought by the sentence before it
            continue
        text = units[key].sentence.text
        vec = vectors[row[key]]
        cosine = float(cosines[row[key]])
        share = NEIGHBOUR_RELATIVE if _beside(units, key, chosen) else RELATIVE
        if chosen and cosine < share * best:
            continue
        if any(float(vec @ other) >= DUPLICATE for other in picked):
            continue
        if defining and lead is not None and units[key].passage != units[lead].passage:
            continue  # "What is X?" is answered by the definition and what follows it
        if not chosen and not _fits([], text, limits):
            # The best sentence, cut to fit with its marker.
            room = limits.chars - MARKER_CHARS if limits.chars is not None else None
            text = _cut(text, limits.words, room)
        elif not _fits(chosen, text, limits):
            continue
        # Quotes of prose never cycle through characters; their words may repeat.
        if repeated_ngram(render(_quotes(units, [*chosen, (key, text)], score_of))):
            continue
        _precede(units, key, chosen, score_of, limits)
        chosen.append((key, text))
        picked.append(vec)
        if lead is None:
            lead, defining = key, bool(term) and defines(text, term or "")
        if not _ABOUT.match(text):  # a pointer to its page sets no bar for the answer
            best = max(best, cosine)
        _follow(units, key, chosen, score_of, limits)
    # The best sentence leads, with what must be read beside it: a person reads the
    # first sentence, and the one before it in the page ("You are not forced to change
    # your password ...") buried "After 5 wrong attempts the account locks ...". A
    # procedure reads in the page's order ("How do I roll back ...?": the steps), the
    # passage of the instruction that leads first ("Add the label escalation ...", not
    # the page's "Most tickets are solved by support.").
    first = set()
    if lead is not None and kind != "how":
        first = _run(units, {k for k, _ in chosen}, lead)
    elif lead is not None and states(units[lead].sentence.text, kind):
        first = {k for k, _ in chosen if units[k].passage == units[lead].passage}
    if kind == "list" and chosen:
        first = _whole_list(units, passages, chosen, score_of, limits)
    quotes = _quotes(units, chosen, score_of, first)
    used = tuple(dict.fromkeys(q.number - 1 for q in quotes))
    number = {passage: n for n, passage in enumerate(used, 1)}
    quotes = [replace(q, number=number[q.number - 1]) for q in quotes]
    return Extract(render(quotes), tuple(quotes), used)


def _follow(
    units: list[_Unit],
    key: int,
    chosen: list[tuple[int, str]],
    score: dict[int, float],
    limits: Limits,
) -> None:
    """Sentence ``key``, just chosen, brings the next one of its paragraph when it was
    chosen alone (not right after its predecessor) and the answer has room (``chosen``
    and ``score`` extended in place): a sentence often leads up to what the next one
    says ("You do not need a doctor's note for the first three days." then "From the
    fourth day, send a note ..."), in words neither the question nor its vector shares.
    It comes at once, ahead of the sentences scored below its lead: added after the
    selection it lost its place to them whenever they filled the answer. A sentence
    about its page (``_ABOUT``) brings nothing."""
    taken = {k for k, _ in chosen}
    after = _successor(units, key)
    if (
        after is None
        or after in taken
        or len(chosen) >= limits.sentences
        or _ABOUT.match(units[key].sentence.text)
        or (key - 1 in taken and _successor(units, key - 1) == key)
    ):
        return
    text = units[after].sentence.text
    scored = {**score, after: score[key]}  # placed with the sentence it follows
    if _fits(chosen, text, limits) and not repeated_ngram(
        render(_quotes(units, [*chosen, (after, text)], scored))
    ):
        chosen.append((after, text))
        score[after] = score[key]


def _lead_with_the_fact(
    scored: list[tuple[float, int]],
    units: list[_Unit],
    lexical: np.ndarray,
    kind: Kind | None,
    named: Sequence[bool] = (),
) -> list[tuple[float, int]]:
    """``scored`` with the best sentence that holds the kind of fact asked for first,
    when the best one does not hold it and that one is within ``PROMOTE_MARGIN`` of it and
    shares a word with the question: "What's the phone extension for the IT help desk?"
    is answered by "... call the help desk on extension 4410.", not by the page's opening
    "The IT help desk fixes laptops ..." that matches it better as a whole. Its own
    cosine then sets the bar for the rest (``RELATIVE``). A list asked for is an entry of
    a list or table under a heading that shares a word with the question (``named``, per
    passage): "What are the incident severity levels?" and the entries under "Severity
    levels", which share none of its words themselves."""

    def fits(key: int) -> bool:
        unit = units[key]
        if kind == "list":
            return bool(unit.sentence.group) and unit.passage < len(named) and named[unit.passage]
        return lexical[key] > 0 and states(unit.sentence.text, kind)

    if not scored or kind is None or fits(scored[0][1]):
        return scored
    top = scored[0][0]
    margin = LIST_MARGIN if kind == "list" else PROMOTE_MARGIN
    for i, (score, key) in enumerate(scored[1:], 1):
        if score < top - margin:
            break
        if fits(key):
            return [scored[i], *scored[:i], *scored[i + 1 :]]
    return scored


def _precede(
    units: list[_Unit],
    key: int,
    chosen: list[tuple[int, str]],
    score: dict[int, float],
    limits: Limits,
) -> None:
    """Sentence ``key``, about to be chosen, brings the one before it in its passage when
    it ``leans`` on it ("Outside those hours, call ..." says nothing without the hours),
    placed with it (``chosen`` and ``score`` extended in place)."""
    before = key - 1
    if (
        before < 0
        or any(k == before for k, _ in chosen)
        or units[before].passage != units[key].passage
        or units[before].sentence.position != units[key].sentence.position - 1
        or not leans(units[key].sentence.text)
        or len(chosen) + 1 >= limits.sentences
    ):
        return
    text = units[before].sentence.text
    if _fits(chosen, text + " " + units[key].sentence.text, limits):
        chosen.append((before, text))
        score[before] = score[key]


def _whole_list(
    units: list[_Unit],
    passages: Sequence[str],
    chosen: list[tuple[int, str]],
    score: dict[int, float],
    limits: Limits,
) -> set[int]:
    """A list or table asked for is quoted whole: the entries of the one the best chosen
    entry is part of, in reading order, at most ``LIST_ENTRIES`` entries and
    ``LIST_WORDS`` words (``limits.chars`` still holds); returns their keys, which lead
    the answer. Entries too short to be quoted alone (a list entry without its full stop)
    join ``units`` here."""
    lead_key = next((k for k, _ in chosen if units[k].sentence.group), None)
    if lead_key is None:
        return set()
    lead = units[lead_key]
    known = {(u.passage, u.sentence.position): k for k, u in enumerate(units)}
    entries = [e for e in sentences(passages[lead.passage]) if e.group == lead.sentence.group]
    taken = {k for k, _ in chosen}
    words = sum(len(t.split()) for _, t in chosen)
    chars = sum(len(t) + MARKER_CHARS for _, t in chosen)
    keys = set()
    for entry in entries[:LIST_ENTRIES]:
        key = known.get((lead.passage, entry.position))
        if key is None:
            key = len(units)
            units.append(_Unit(lead.passage, entry, tuple(analyze(entry.text))))
        keys.add(key)
        if key in taken:
            continue
        words += len(entry.text.split())
        chars += len(entry.text) + MARKER_CHARS
        if words > LIST_WORDS or (limits.chars is not None and chars > limits.chars):
            keys.discard(key)
            break
        chosen.append((key, entry.text))
        score[key] = score[lead_key]
    return keys


def _successor(units: list[_Unit], key: int) -> int | None:
    """The sentence right after sentence ``key`` in its paragraph, if it may be quoted."""
    unit, after = units[key], key + 1
    if after < len(units):
        other = units[after]
        if (other.passage, other.sentence.block) == (unit.passage, unit.sentence.block) and (
            other.sentence.position == unit.sentence.position + 1
        ):
            return after
    return None


def _beside(units: list[_Unit], key: int, chosen: list[tuple[int, str]]) -> bool:
    """Whether sentence ``key`` is next to a chosen one in the same paragraph."""
    unit = units[key]
    return any(
        units[k].passage == unit.passage
        and units[k].sentence.block == unit.sentence.block
        and abs(units[k].sentence.position - unit.sentence.position) == 1
        for k, _ in chosen
    )


def _quotes(
    units: list[_Unit],
    chosen: list[tuple[int, str]],
    score: dict[int, float],
    first: set[int] = frozenset(),  # type: ignore[assignment]
) -> list[Quote]:
    """``chosen`` in answer order (module doc, step 7); the sentences ``first`` lead, in
    their reading order (the best sentence with what must be read beside it, ``_run``;
    a list asked for), so that the answer states the fact asked for in its first
    sentence, not after the sentences before it in the page."""
    best: dict[int, float] = {}
    for key, _ in chosen:
        rank = units[key].passage
        best[rank] = max(best.get(rank, -math.inf), score[key])
    ordered = sorted(
        chosen,
        key=lambda c: (
            c[0] not in first,
            -best[units[c[0]].passage],
            units[c[0]].passage,
            units[c[0]].sentence.position,
        ),
    )
    return [Quote(text, units[key].passage + 1, round(score[key], 4)) for key, text in ordered]


def _run(units: list[_Unit], taken: set[int], key: int) -> set[int]:
    """Sentence ``key`` with what must be read beside it among the chosen (``taken``):
    the sentence before it when it ``leans`` on it, and the one after it (its successor,
    brought by ``_follow``)."""
    unit = units[key]
    run = {key}
    for near, needed in ((key - 1, leans(unit.sentence.text)), (key + 1, True)):
        if (
            needed
            and near in taken
            and 0 <= near < len(units)
            and units[near].passage == unit.passage
            and abs(units[near].sentence.position - unit.sentence.position) == 1
        ):
            run.add(near)
    return run


def passage_body(text: str) -> str:
    """A passage's Markdown without the ``Title > Heading`` line its chunk starts with
    (a matched question: its answer)."""
    if "\nQ: " in text and "\nA: " in text:
        return text.rsplit("\nA: ", 1)[1]
    return text.split("\n", 1)[1] if "\n" in text else text


def tool_summary(uses: Sequence[ToolUse]) -> str:
    """What the tools returned, one line each, cut: the answer to a tool question."""
    done = [u for u in uses if u.ok] or list(uses)[-1:]
    lines = []
    for use in done:
        if not use.ok:
            lines.append(f"{use.name} failed: {use.error}")
            continue
        result = use.result
        if isinstance(result, list) and all(isinstance(x, str) for x in result):
            shown = ", ".join(result[:20]) + (
                f" and {len(result) - 20} more" if len(result) > 20 else ""
            )
        else:
            shown = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
        shown = shown if len(shown) <= 400 else shown[:400].rsplit(" ", 1)[0] + " …"
        lines.append(f"{use.name} returned: {shown or '(nothing)'}")
    return "\n".join(lines)
