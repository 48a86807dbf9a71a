"""Every model call in Heron: a routing table of aliases, retries, fallbacks, streaming.

See docs/llm.md. ``load_broker(settings)`` reads ``models.yml`` (or runs the bundled local model
with no configuration); ``Broker.complete`` and ``Broker.stream`` take a ``ChatRequest``.
"""

from __future__ import annotations

from heron.core.chat import (
    ChatRequest,
    Completion,
    Done,
    Message,
    Sampling,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolChoice,
    Usage,
)
from heron.llm.broker import Broker, load_broker
from heron.llm.config import (
    LOCAL_ALIAS,
    PROVIDER_DEFAULTS,
    Capabilities,
    ModelSpec,
    RoutingTable,
    load_table,
    parse_table,
)
from heron.llm.errors import (
    AuthError,
    BadRequest,
    ContextTooLong,
    CoolingDown,
    NoModelAvailable,
    OwnTimeout,
    ProviderDown,
    ProviderError,
    ProviderTimeout,
    RateLimited,
    RequestError,
)
from heron.llm.types import Provider

__all__ = [
    "LOCAL_ALIAS",
    "PROVIDER_DEFAULTS",
    "AuthError",
    "BadRequest",
    "Broker",
    "Capabilities",
    "ChatRequest",
    "Completion",
    "ContextTooLong",
    "CoolingDown",
    "Done",
    "Message",
    "ModelSpec",
    "NoModelAvailable",
    "OwnTimeout",
    "Provider",
    "ProviderDown",
    "ProviderError",
    "ProviderTimeout",
    "RateLimited",
    "RequestError",
    "RoutingTable",
    "Sampling",
    "StreamEvent",
    "TextDelta",
    "ToolCall",
    "ToolChoice",
    "Usage",
    "load_broker",
    "load_table",
    "parse_table",
]
