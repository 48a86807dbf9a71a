"""The page's own words, from message catalogues (``messages/<language>.json``): English
and Brazilian Portuguese. A request gets the language its ``heron_lang`` cookie names
(the page's picker sets it), else the best match of its ``Accept-Language``, else
English. Answers and data are shown as they are; only Heron's words are translated.

Templates call ``t("key", name=value)``; the scripts get the same catalogue as the asset
``messages.<language>.js`` and call ``Heron.t("key", {name: value})``. A message holds
``{name}`` placeholders::

    >>> negotiate("pt-BR,pt;q=0.9,en;q=0.8"), negotiate("pt-PT"), negotiate("de, fr;q=0.5")
    ('pt-BR', 'pt-BR', 'en')
"""

from __future__ import annotations

import json
from pathlib import Path

from starlette.requests import Request

FOLDER = Path(__file__).parent / "messages"
DEFAULT = "en"
#: The languages there are catalogues for, with their names in their own language.
LANGUAGES = {"en": "English", "pt-BR": "Português (Brasil)"}
COOKIE = "heron_lang"


def load(folder: Path = FOLDER) -> dict[str, dict[str, str]]:
    return {code: json.loads((folder / f"{code}.json").read_text("utf-8")) for code in LANGUAGES}


CATALOGUES = load()


def negotiate(header: str | None) -> str:
    """The catalogue that best fits an ``Accept-Language`` header: an exact tag first,
    then the same primary language (``pt-PT`` reads ``pt-BR``), by the header's q-values."""
    wanted: list[tuple[float, int, str]] = []
    for i, part in enumerate((header or "").split(",")):
        tag, _, params = part.strip().partition(";")
        quality = 1.0
        if params.strip().startswith("q="):
            try:
                quality = float(params.strip()[2:])
            except ValueError:
                continue
        if tag and quality > 0:
            wanted.append((-quality, i, tag.strip().lower()))
    by_tag = {code.lower(): code for code in LANGUAGES}
    for _, _, tag in sorted(wanted):
        if tag in by_tag:
            return by_tag[tag]
        primary = tag.split("-")[0]
        for code in LANGUAGES:
            if code.lower().split("-")[0] == primary:
                return code
    return DEFAULT


def language(request: Request) -> str:
    """The request's language: the remembered choice, else ``Accept-Language``."""
    chosen = request.cookies.get(COOKIE)
    if chosen in LANGUAGES:
        return chosen
    return negotiate(request.headers.get("accept-language"))


class Messages:
    """One language's catalogue, English beneath it for a key it lacks."""

    def __init__(self, code: str) -> None:
        self.code = code
        self.messages = CATALOGUES[DEFAULT] | CATALOGUES[code]

    def __call__(self, key: str, **values: object) -> str:
        text = self.messages.get(key, key)
        return text.format(**values) if values else text


def script(code: str) -> bytes:
    """The catalogue as the script the page loads before its own (no inline script)."""
    body = json.dumps(Messages(code).messages, ensure_ascii=False, sort_keys=True)
    return f'"use strict";\nwindow.HeronMessages = {body};\n'.encode()
