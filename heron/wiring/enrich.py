"""The libraries' page enricher on a model: ``library_enricher`` hands
``heron.libraries.enrich.ModelEnricher`` a chat function over the broker of ``heron.llm``."""

from __future__ import annotations

from typing import Any

from heron.core.chat import ChatRequest, Message, Sampling
from heron.libraries.enrich import ModelEnricher
from heron.llm import Broker
from heron.settings import Settings

#: Tokens the model may write for one page's questions (5 short pairs fit in ~400).
ENRICH_MAX_TOKENS = 600
#: Page characters a model reads by default: most pages whole, for an API model; the
#: local model's first 3,000 (on 2 cores its prompt time is ~1 minute a 1,000 tokens).
MAX_CHARS = 12_000
LOCAL_MAX_CHARS = 3_000
LOCAL_PROVIDER = "local"
#: Tokens of the prompt besides the page: the instructions and the title.
PROMPT_TOKENS = 200
#: Low: the questions should say what the page says, not wander.
ENRICH_TEMPERATURE = 0.2
#: Characters of page text per token, low (code, URLs) so a cut page fits the context.
CHARS_PER_TOKEN = 3
#: Providers that cannot be held to a JSON schema (Anthropic's Messages API): asked in
#: words, and their answer parsed as JSON or ``Q:`` lines.
NO_JSON_MODE = frozenset({"anthropic"})


def library_enricher(settings: Settings, broker: Broker) -> ModelEnricher:
    """The libraries' ``Enricher`` on ``HERON_LIBRARY_ENRICH_MODEL`` (default: the routing
    table's default alias) through ``broker``, which the caller closes. The page is cut
    to fit the model's context; a failed call raises the broker's ``ProviderError``,
    which the indexer reports for that page. A local model is loaded on the first page
    asked, so an index with nothing to ask loads none."""
    alias = settings.library.enrich_model
    spec = broker.table.spec(alias)
    budget = spec.capabilities.context_window - ENRICH_MAX_TOKENS - PROMPT_TOKENS
    wanted = settings.library.enrich_max_chars or (
        LOCAL_MAX_CHARS if spec.provider == LOCAL_PROVIDER else MAX_CHARS
    )
    max_chars = max(1000, min(wanted, budget * CHARS_PER_TOKEN))
    response_format = None if spec.provider in NO_JSON_MODE else "json_schema"

    def complete(system: str, user: str, schema: dict[str, Any]) -> str:
        held = (
            {"type": "json_schema", "json_schema": {"name": "questions", "schema": schema}}
            if response_format
            else None
        )
        request = ChatRequest(
            (Message("system", system), Message("user", user)),
            max_tokens=ENRICH_MAX_TOKENS,
            temperature=ENRICH_TEMPERATURE,
            sampling=Sampling(response_format=held),
        )
        return broker.complete(request, model=spec.alias).text

    return ModelEnricher(
        complete,
        f"{spec.provider}/{spec.model}",
        count=settings.library.enrich_questions,
        max_chars=max_chars,
    )
