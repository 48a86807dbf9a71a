"""What an Office file that is not a readable zip package is, in words a person can act on.

.docx, .pptx and .xlsx are zip packages (Office Open XML). A password-protected one is
an OLE2 compound file instead (the encrypted package inside it), as is an old binary
.doc, .ppt or .xls; anything else that is not a zip is damaged or misnamed.
"""

from __future__ import annotations

import io
import zipfile

from heron.libraries.readers.base import Unreadable

#: The first bytes of an OLE2 compound file.
_OLE2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def check_package(data: bytes, kind: str) -> None:
    """Raise ``Unreadable`` unless ``data`` is a zip package; ``kind`` names the format
    (``"Word"``)."""
    if data.startswith(_OLE2):
        raise Unreadable(
            f"encrypted or an old binary {kind} file: it is an OLE2 compound file, not an "
            f"Office Open XML package; remove its password, or save it as a current {kind} "
            "file, and add that"
        )
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as package:
            damaged = package.testzip()
    except zipfile.BadZipFile as exc:
        raise Unreadable(
            f"not a {kind} file: not a zip package ({exc}); the file is damaged or misnamed"
        ) from exc
    if damaged is not None:
        raise Unreadable(f"damaged {kind} file: {damaged} inside it fails its checksum")
