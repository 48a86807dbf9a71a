"""What ``heron info`` reports: version, settings, model readiness, namespace sizes."""

from __future__ import annotations

from typing import Any

from heron import __version__
from heron.core.optional import OPTIONAL_TOOLS
from heron.embed import assets, calibration_of, load_embedder
from heron.errors import HeronError
from heron.settings import Settings
from heron.store import check_store, open_store


def about(settings: Settings) -> dict[str, Any]:
    """A JSON-able description of this installation. Never raises for a broken model:
    reporting what is broken is the point."""
    info: dict[str, Any] = {
        "version": __version__,
        "home": str(settings.home),
        "database": str(settings.db_path),
        "settings": settings.public(),
        "model": {"embedder": settings.embed.embedder, "profile": settings.embed.profile},
        "namespaces": [],
        "routing": routing(settings),
    }
    try:
        embedder = load_embedder(settings)
        info["model"].update(id=embedder.model_id, dim=embedder.dim, ready=True)
        if settings.agent.routing_threshold is None:
            info["routing"]["threshold"] = calibration_of(embedder).route
        if settings.embed.profile in ("minilm", "multilingual"):
            info["model"].update(
                onnx=str(assets.onnx_path()),
                tokenizer=str(assets.tokenizer_path(settings.models_dir)),
            )
    except HeronError as exc:
        info["model"].update(ready=False, error=str(exc))
        return info
    # Reading must not create an empty SQLite file; a PostgreSQL store always exists.
    if settings.postgres_url or settings.db_path.exists():
        store = open_store(settings, embedder)
        with store:
            check_store(store)  # an info that looks fine must mean the store is fine
            info["namespaces"] = [
                {"name": ns.name, "records": ns.count, "model_id": ns.model_id, "dim": ns.dim}
                for ns in store.namespaces()
            ]
    return info


def routing(settings: Settings) -> dict[str, Any]:
    """How the agent picks the tools it offers (``agent_routing_*``); the threshold is
    ``None`` until the embedder says its own (``about`` fills it in)."""
    return {
        "mode": settings.agent.routing_mode,
        "top_k": settings.agent.routing_top_k,
        "threshold": settings.agent.routing_threshold,
        "always_include": list(settings.agent.routing_always_include),
        # Each optional built-in, turned on or not (heron info prints them).
        **{tool.name: tool.on(settings) for tool in OPTIONAL_TOOLS},
    }
