"""``whole``: every number a request carries (a query parameter, a header, a path
segment), parsed one strict way: ASCII digits only, within a range, else ``InputError``
(answered 400) naming the field. In a JSON body (a JSON-RPC method's params) a number
is already one; ``RecordId`` and ``Position`` give it the same range (an invalid-params
error past it, not an overflow in the store).

Python's own ``int()`` takes what no client means (``"١٢"``, ``"1_000"``, ``" 7 "``,
``"+7"``) and raises on others ``str.isdigit()`` passes (``"²"``); a value past 64 bits
overflows SQLite. Each of those was a 500.

>>> whole("42", "after")
42
>>> whole("²", "after")
Traceback (most recent call last):
...
heron.errors.InputError: after must be a whole number from 0 to 9223372036854775807, not '²'.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field

from heron.errors import InputError

#: The largest id or sequence number any store holds (SQLite's INTEGER, PostgreSQL's BIGINT).
MAX_ID = 2**63 - 1
#: A stored record's id (from 1), and a position in a sequence (from 0), in params models.
RecordId = Annotated[int, Field(ge=1, le=MAX_ID)]
Position = Annotated[int, Field(ge=0, le=MAX_ID)]
_DIGITS = re.compile(r"[0-9]{1,19}")


def whole(text: str | None, field: str, *, low: int = 0, high: int = MAX_ID) -> int:
    """``text`` as a whole number in ``[low, high]``; ``InputError`` naming ``field``."""
    if text is not None and _DIGITS.fullmatch(text) and low <= int(text) <= high:
        return int(text)
    shown = text if text is None else text[:40]
    raise InputError(f"{field} must be a whole number from {low} to {high}, not {shown!r}.")
