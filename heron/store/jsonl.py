"""Reading the batch format every Heron command shares: one JSON object a line.

Records: ``{"id": "a", "text": "...", "metadata": {...}}``. Queries: ``{"id": "q1",
"text": "..."}``. Errors name the file and line, and blank lines are skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from heron.errors import InputError
from heron.store.base import Record


def read_objects(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each non-blank line of ``path``."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 - bytes, to report bad UTF-8 with its line
    except OSError as exc:
        raise InputError(f"Cannot read {path}: {exc.strerror}.") from exc
    with handle:
        for number, raw in enumerate(handle, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(
                    f"{path} line {number} is not valid UTF-8 (byte {raw[exc.start]:#04x} at "
                    f"column {exc.start + 1}). Re-encode the file, e.g. iconv -f latin1 -t utf-8."
                ) from exc
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{path} line {number} is not JSON: {exc.msg}.") from exc
            if not isinstance(value, dict):
                raise InputError(f"{path} line {number} must be a JSON object.")
            yield number, value


def _text_field(path: Path, number: int, value: dict[str, Any], name: str) -> str:
    field = value.get(name)
    if field is None:
        raise InputError(f'{path} line {number} has no "{name}".')
    if name == "id" and isinstance(field, int | float):
        return str(field)
    if not isinstance(field, str):
        raise InputError(f'{path} line {number}: "{name}" must be a string.')
    return field


def read_records(path: Path) -> Iterator[Record]:
    for number, value in read_objects(path):
        metadata = value.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise InputError(f'{path} line {number}: "metadata" must be an object.')
        yield Record(
            _text_field(path, number, value, "id"),
            _text_field(path, number, value, "text"),
            metadata,
        )


def read_queries(path: Path) -> list[tuple[str, str]]:
    return [
        (_text_field(path, n, v, "id"), _text_field(path, n, v, "text"))
        for n, v in read_objects(path)
    ]
