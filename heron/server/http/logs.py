"""Structured logs: one JSON object a line, with the request id of the request it is about.

Nothing here reads headers, so a token cannot reach a log line; the request middleware
logs method, path, status and time only.
"""

from __future__ import annotations

import json
import logging
import time
from contextvars import ContextVar

from heron.redact import RedactingFilter

#: The id of the request being answered, for every log line written while answering it.
request_id: ContextVar[str | None] = ContextVar("heron_request_id", default=None)

#: Record attributes that are not ``extra`` fields (uvicorn adds ANSI ``color_message``).
_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime", "color_message"}


class JsonFormatter(logging.Formatter):
    """``{"time", "level", "logger", "message", "request_id", ...extra}`` per record."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        rid = request_id.get()
        if rid is not None:
            entry["request_id"] = rid
        entry |= {k: v for k, v in vars(record).items() if k not in _STANDARD}
        if record.exc_info or record.exc_text:
            # exc_text: the traceback RedactingFilter already formatted and redacted.
            entry["error"] = record.exc_text or self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


def configure(level: str = "info") -> None:
    """JSON lines on stderr for Heron's and uvicorn's loggers."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RedactingFilter())  # secrets never reach a log line
    for name in ("heron", "uvicorn", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.handlers = [handler]
        logger.setLevel(level.upper())
        logger.propagate = False
