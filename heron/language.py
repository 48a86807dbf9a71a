"""Which language a query or a page is written in: what reads it (a model, a stemmer).

py3langid (langid.py's model, 97 languages, brought by the ``e5`` extra) labels a text; a
short or technical query ("kubectl rollout undo", "ingress nginx tls") is often labelled
something improbable with low confidence, so a query counts as not English when its
label is confident (``CONFIDENT``), when it writes letters English does not, or when
English is not even a distant guess (``UNLIKE``); English is the fallback, and the only
answer without py3langid.

>>> is_english("How do I roll back a deploy?"), language("Quantos dias de férias eu tenho?")
(True, 'pt')
"""

from __future__ import annotations

from functools import cache, lru_cache
from typing import Any

from heron.errors import ModelError
from heron.extras import missing

#: The probability (py3langid, normalised over its languages) from which a query's label
#: is believed. Short English keyword queries get improbable labels below it ("kubectl
#: rollout undo": br 0.18, "hiring process": bcl 0.29), and so do short requests in other
#: languages ("organizar meus recibos": gl 0.29, "hacer un gif": es 0.28), which ``UNLIKE``
#: tells apart.
CONFIDENT = 0.3
#: Below this share of the best label's probability, English is ruled out for a text
#: whose label is not confident: "hacer un gif" has English at 0.005, "kubectl rollout
#: undo" at 0.10. Measured (``python -m bench.multilingual default`` and the bench sets):
#: none of 770 English bench questions is read as another language, nor "pdf", "vpn
#: password", "docker compose up" or "CrashLoopBackOff"; 2 of 24 short English keyword
#: queries are ("jira ticket", "grafana dashboard") and 28 of 1,063 skill and tool names
#: (brand names); 97.9% of the Portuguese bench requests and 95.8% of the Spanish ones
#: are read as not English (95.1% and 90.3% without it).
UNLIKE = 0.05
#: The probability from which a page's label is believed (``text_language``): a page of
#: prose is labelled at 0.99 or more; a short one, a table of names, a page of code is
#: not, and stays English, as every page was analysed before.
PAGE_CONFIDENT = 0.9
#: A page is read from its first this many characters: py3langid's time grows with the
#: text (the Kubernetes pages took 7.7 ms each whole), and its label is settled long before.
PAGE_SAMPLE = 10_000
#: Labels read as a language they are usually confused with on short texts: a short
#: Portuguese request is often labelled Galician, a Spanish one Catalan or Asturian.
_NEAREST = {"gl": "pt", "ca": "es", "ast": "es", "an": "es", "oc": "es"}


def is_english(text: str) -> bool:
    """Whether ``text`` is read as English (module doc). Raises ``ModelError`` naming the
    extra when py3langid is not installed."""
    ranked = _identifier().rank(text)
    label, probability = ranked[0]
    if label == "en":
        return True
    if probability >= CONFIDENT or any(c.isalpha() and ord(c) > 127 for c in text):
        return False
    return dict(ranked).get("en", 0.0) >= UNLIKE * probability


@lru_cache(maxsize=4096)
def language(text: str) -> str:
    """The language ``text`` is read in, an ISO 639-1 code: ``"en"`` when it is read as
    English (``is_english``) or py3langid is not installed, else py3langid's label (a
    short text's usual confusions mapped to the language meant, ``_NEAREST``). Cached:
    one query is analysed by several stages."""
    try:
        if is_english(text):
            return "en"
    except ModelError:
        return "en"
    label = _identifier().classify(text)[0]
    return _NEAREST.get(label, label)


def text_language(text: str) -> str:
    """The language a page (a long text, where py3langid is sure) is written in, an ISO
    639-1 code: py3langid's label where its probability reaches ``PAGE_CONFIDENT``, else
    (and without py3langid) ``"en"``. Unlike a query, a page is not read as another
    language for a letter English does not write: English pages name "José" and "café"."""
    try:
        label, probability = _identifier().classify(text[:PAGE_SAMPLE])
    except ModelError:
        return "en"
    if probability < PAGE_CONFIDENT:
        return "en"
    return _NEAREST.get(label, label)


@cache
def _identifier() -> Any:
    """py3langid's identifier, loaded once (about 0.2 s): the e5 extra brings it."""
    try:
        from py3langid.langid import MODEL_FILE, LanguageIdentifier
    except ImportError as exc:
        raise ModelError(missing("e5")) from exc
    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
