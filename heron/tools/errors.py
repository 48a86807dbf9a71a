"""Errors of ``heron.tools``: defined in ``heron.core.errors`` (every capability that
defines or calls a tool raises them, and the hierarchy is drawn there), re-exported here."""

from __future__ import annotations

from heron.core.errors import ServerError, ToolCallError, ToolError, ToolInputError, UnknownTool

__all__ = ["ServerError", "ToolCallError", "ToolError", "ToolInputError", "UnknownTool"]
