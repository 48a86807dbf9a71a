"""Errors of tools, shared by every capability that defines or calls one (``heron.tools``
re-exports them).

HeronError
 ├── InputError
 │    └── ToolInputError      a tool definition, name or argument that cannot be accepted
 └── ToolError                a tool could not be found, reached or run
      ├── UnknownTool         no tool (or encoded name) by that name
      ├── ToolCallError       the tool ran and failed, or refused the call
      └── ServerError         an MCP server is unreachable, crashed, hung or spoke badly
"""

from __future__ import annotations

from heron.errors import HeronError, InputError


class ToolInputError(InputError):
    pass


class ToolError(HeronError):
    pass


class UnknownTool(ToolError, KeyError):
    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class ToolCallError(ToolError):
    pass


class ServerError(ToolError):
    pass
