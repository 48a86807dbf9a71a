"""What a model's tokens cost, in dollars per token, for budgets in money.

A price is LiteLLM's pair ``input_cost_per_token`` / ``output_cost_per_token``. An alias
of models.yml may set both (``litellm_params`` or ``model_info`` of a LiteLLM file, or the
alias's own keys); otherwise the provider's model name is looked up in ``DEFAULTS``, the
list prices the vendors publish for their current models (per million tokens, as their
price pages give them, divided here). The local model costs nothing. A remote model found
nowhere costs nothing either, as in LiteLLM, and the log says so once: give it a price
before a budget is meant to bound it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

log = logging.getLogger("heron.llm")

#: Dollars per million tokens (input, output), from openai.com/api/pricing and
#: anthropic.com/pricing; a dated model name (``gpt-4o-2024-08-06``) takes its family's.
_PER_MILLION: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.5, 10.0),
    "gpt-4o-mini": (0.15, 0.6),
    "gpt-4.1": (2.0, 8.0),
    "gpt-4.1-mini": (0.4, 1.6),
    "gpt-4.1-nano": (0.1, 0.4),
    "gpt-5": (1.25, 10.0),
    "gpt-5-mini": (0.25, 2.0),
    "gpt-5-nano": (0.05, 0.4),
    "o3": (2.0, 8.0),
    "o3-mini": (1.1, 4.4),
    "o4-mini": (1.1, 4.4),
    "claude-opus-4-1": (15.0, 75.0),
    "claude-sonnet-4-5": (3.0, 15.0),
    "claude-sonnet-4": (3.0, 15.0),
    "claude-haiku-4-5": (1.0, 5.0),
    "claude-3-5-haiku": (0.8, 4.0),
}


@dataclass(frozen=True)
class Price:
    """Dollars per token in and out."""

    input_cost_per_token: float = 0.0
    output_cost_per_token: float = 0.0

    def cost(self, tokens_in: int, tokens_out: int) -> float:
        return tokens_in * self.input_cost_per_token + tokens_out * self.output_cost_per_token


DEFAULTS: dict[str, Price] = {
    name: Price(i / 1_000_000, o / 1_000_000) for name, (i, o) in _PER_MILLION.items()
}
FREE = Price()
_warned: set[str] = set()


def default_price(provider: str, model: str) -> Price:
    """The shipped price of ``model`` (a provider's name for it, ``openrouter/`` style
    prefixes and date suffixes allowed); ``FREE`` for the local model and any unknown one."""
    if provider == "local":
        return FREE
    name = model.rsplit("/", 1)[-1]
    for candidate in sorted(DEFAULTS, key=len, reverse=True):  # gpt-4o-mini before gpt-4o
        if name == candidate or name.startswith(f"{candidate}-20"):
            return DEFAULTS[candidate]
    if model not in _warned:
        _warned.add(model)
        log.warning(
            "no price for model %r: its calls cost $0 against budgets; set "
            "input_cost_per_token and output_cost_per_token on its alias in models.yml",
            model,
        )
    return FREE
