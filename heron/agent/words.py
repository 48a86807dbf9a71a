"""What Heron says in an answer's own words, in the asker's language and for their door.

An extractive answer quotes the libraries; around the quotes Heron says a few things of
its own: that nothing was found, that the passages quoted are only the closest, that they
hold code or tables. A person who asks in Portuguese reads them in Portuguese (English,
Portuguese and Spanish here; English for any other language), and what they can do next
is what their door offers: a command at the CLI, a request field over the API, a library
to pick or documents to add on the page. Never a shell command outside the CLI.

>>> say("nothing_fits", "pt", "page", scope="acme", score=" (0.82)")[:44]
'Não encontrei nada sobre isso em acme (0.82)'
"""

from __future__ import annotations

from typing import Literal

from heron.language import language

#: The languages Heron speaks; any other question is answered in English.
LANGUAGES = ("en", "pt", "es")
#: Who reads the answer: ``cli`` (hints name commands and flags), ``api`` (they name the
#: request's fields), ``page`` (they name what the page offers).
Surface = Literal["cli", "api", "page"]

_WORDS: dict[str, dict[str, str]] = {
    "en": {
        "nothing_fits": "I found nothing about this in {scope}{score}, so I have nothing to quote.",
        "nothing_indexed": "No library is indexed yet, so I have nothing to quote.",
        "generated_alone": "This answer is the model's own: no library passage fits it.",
        "closest": "These are the closest passages I found; none matches the question "
        "closely, so check that they answer it.",
        "code_only": "The passages found hold code or tables, not sentences to quote; "
        "open the sources below.",
        "stopped": "[Heron stopped the model: it kept repeating itself.]",
        "withheld": "[Heron withheld the model's answer: it gave back Heron's own prompt.]",
        "next_cli": "Add a library that covers it: heron library add NAME PATH && heron "
        "index NAME{generative}.",
        "generative_cli": ", or ask for the model's own answer (--answer generative)",
        "next_api": 'Search another library (the request\'s "library"), or ask whoever '
        "runs Heron to add documents that cover it{generative}.",
        "generative_api": ', or ask for the model\'s own answer ("answer": "generative")',
        "next_page": "Pick another library, or ask whoever runs Heron to add documents "
        "that cover it.",
        "job_passed": 'The job "{prompt}" finished, and its checks passed.',
        "job_not_passed": 'The job "{prompt}" finished, and its checks did not pass.',
        "job_unverified": 'The job "{prompt}" finished; nothing verified what it found.',
        "job_failed": 'The job "{prompt}" failed: {error}',
        "job_aborted": 'The job "{prompt}" was stopped before it finished.',
        "criterion_passed": "passed",
        "criterion_not_passed": "not passed",
        "criterion_unchecked": "not checked",
    },
    "pt": {
        "nothing_fits": "Não encontrei nada sobre isso em {scope}{score}, então não tenho "
        "o que citar.",
        "nothing_indexed": "Ainda não há nenhuma biblioteca indexada, então não tenho o que citar.",
        "generated_alone": "Esta resposta é do próprio modelo: nenhum trecho das "
        "bibliotecas corresponde a ela.",
        "closest": "Estes são os trechos mais próximos que encontrei; nenhum corresponde "
        "bem à pergunta, então confira se eles a respondem.",
        "code_only": "Os trechos encontrados têm código ou tabelas, não frases para "
        "citar; abra as fontes abaixo.",
        "stopped": "[O Heron interrompeu o modelo: ele estava se repetindo.]",
        "withheld": "[O Heron reteve a resposta do modelo: ela repetia o prompt do próprio Heron.]",
        "next_cli": "Adicione uma biblioteca que trate disso: heron library add NOME "
        "CAMINHO && heron index NOME{generative}.",
        "generative_cli": ", ou peça a resposta do próprio modelo (--answer generative)",
        "next_api": 'Pesquise em outra biblioteca (o campo "library" do pedido) ou peça '
        "a quem administra o Heron para adicionar documentos sobre isso{generative}.",
        "generative_api": ', ou peça a resposta do próprio modelo ("answer": "generative")',
        "next_page": "Escolha outra biblioteca ou peça a quem administra o Heron para "
        "adicionar documentos sobre isso.",
        "job_passed": 'O job "{prompt}" terminou, e suas verificações passaram.',
        "job_not_passed": 'O job "{prompt}" terminou, e suas verificações não passaram.',
        "job_unverified": 'O job "{prompt}" terminou; nada verificou o que ele encontrou.',
        "job_failed": 'O job "{prompt}" falhou: {error}',
        "job_aborted": 'O job "{prompt}" foi interrompido antes de terminar.',
        "criterion_passed": "passou",
        "criterion_not_passed": "não passou",
        "criterion_unchecked": "não verificado",
    },
    "es": {
        "nothing_fits": "No encontré nada sobre esto en {scope}{score}, así que no tengo "
        "nada que citar.",
        "nothing_indexed": "Todavía no hay ninguna biblioteca indexada, así que no tengo "
        "nada que citar.",
        "generated_alone": "Esta respuesta es del propio modelo: ningún fragmento de las "
        "bibliotecas le corresponde.",
        "closest": "Estos son los fragmentos más cercanos que encontré; ninguno "
        "corresponde bien a la pregunta, así que comprueba si la responden.",
        "code_only": "Los fragmentos encontrados contienen código o tablas, no frases "
        "que citar; abre las fuentes de abajo.",
        "stopped": "[Heron detuvo el modelo: se estaba repitiendo.]",
        "withheld": "[Heron retuvo la respuesta del modelo: repetía el prompt del propio Heron.]",
        "next_cli": "Añade una biblioteca que lo trate: heron library add NOMBRE RUTA && "
        "heron index NOMBRE{generative}.",
        "generative_cli": ", o pide la respuesta del propio modelo (--answer generative)",
        "next_api": 'Busca en otra biblioteca (el campo "library" de la petición) o pide '
        "a quien administra Heron que añada documentos sobre esto{generative}.",
        "generative_api": ', o pide la respuesta del propio modelo ("answer": "generative")',
        "next_page": "Elige otra biblioteca o pide a quien administra Heron que añada "
        "documentos sobre esto.",
        "job_passed": 'El trabajo "{prompt}" terminó, y sus comprobaciones pasaron.',
        "job_not_passed": 'El trabajo "{prompt}" terminó, y sus comprobaciones no pasaron.',
        "job_unverified": 'El trabajo "{prompt}" terminó; nada verificó lo que encontró.',
        "job_failed": 'El trabajo "{prompt}" falló: {error}',
        "job_aborted": 'El trabajo "{prompt}" se detuvo antes de terminar.',
        "criterion_passed": "pasó",
        "criterion_not_passed": "no pasó",
        "criterion_unchecked": "sin comprobar",
    },
}
#: How each language's "found nothing" answer starts: a reply that says so is no subject
#: a follow-up could be about (``heron.agent.followup``).
NOTHING_FOUND = tuple(
    _WORDS[lang][key].split("{", 1)[0].split(",", 1)[0]
    for lang in LANGUAGES
    for key in ("nothing_fits", "nothing_indexed")
)


def speaks(text: str) -> str:
    """The language Heron answers ``text`` in: its own when Heron speaks it, else English.

    >>> speaks("¿Qué hago si pierdo mi portátil?"), speaks("Wie spät ist es?")
    ('es', 'en')
    """
    found = language(text)
    return found if found in LANGUAGES else "en"


def say(key: str, lang: str, **fields: str) -> str:
    """Heron's words ``key`` in ``lang`` (English when it does not speak it), with
    ``fields`` filled in."""
    words = _WORDS.get(lang, _WORDS["en"])
    return words[key].format(**fields)


def nothing_found(
    scope: list[str],
    indexed: list[str],
    best: float | None,
    *,
    lang: str,
    surface: Surface,
    generated: bool,
) -> str:
    """What grounding found, said plainly, and what the asker can do about it in their
    door: ``scope`` the libraries searched, ``indexed`` those indexed, ``best`` the best
    passage's cosine; ``generated``: said under a model's answer rather than as it (the
    hint then offers no generated answer: it is one)."""
    if not indexed:
        said = say("nothing_indexed", lang)
    else:
        score = f" ({best:.2f})" if best is not None else ""
        said = say("nothing_fits", lang, scope=", ".join(scope), score=score)
    if generated:
        said = say("generated_alone", lang)
    offer = "" if generated or surface == "page" else say(f"generative_{surface}", lang)
    return f"{said} {say(f'next_{surface}', lang, generative=offer)}"


def refusal(text: str) -> bool:
    """Whether ``text`` is Heron saying it found nothing, in any language it speaks."""
    return text.lstrip().startswith(NOTHING_FOUND)
