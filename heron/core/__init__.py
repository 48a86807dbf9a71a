"""Value types every capability shares, kept below them all.

A capability (``heron.libraries``, ``heron.skills``, ``heron.tools``, ``heron.llm``,
``heron.jobs``) imports no other capability, but several speak of the same things: a
``Tool`` (``heron.core.tools``), provider-safe tool names (``heron.core.names``), the
workspace a tool or a job acts in (``heron.core.workspace``), files under a root reached
without following a symlink (``heron.core.files``: the workspace's and a library's), a
chat ``Message`` and ``ChatRequest`` (``heron.core.chat``), the tool errors
(``heron.core.errors``) and the table of optional built-in tools (``heron.core.optional``,
which ``heron.about`` and ``heron.extras`` read too). They live here, depend only on
``heron.errors``, ``heron.programs`` and ``heron.redact``, and code inside Heron imports
them from here; only the package faces (``heron.tools``, ``heron.llm``) re-export them.
"""

from __future__ import annotations

from heron.core.chat import ChatRequest, Completion, Message, Sampling, ToolCall, Usage
from heron.core.errors import ServerError, ToolCallError, ToolError, ToolInputError, UnknownTool
from heron.core.names import PROFILES, NameCodec, NameProfile, get_profile
from heron.core.tools import Handler, Tool, ToolSink, parse_tool, parse_tools
from heron.core.workspace import MAX_OUTPUT, Workspace

__all__ = [
    "MAX_OUTPUT",
    "PROFILES",
    "ChatRequest",
    "Completion",
    "Handler",
    "Message",
    "NameCodec",
    "NameProfile",
    "Sampling",
    "ServerError",
    "Tool",
    "ToolCall",
    "ToolCallError",
    "ToolError",
    "ToolInputError",
    "ToolSink",
    "UnknownTool",
    "Usage",
    "Workspace",
    "get_profile",
    "parse_tool",
    "parse_tools",
]
