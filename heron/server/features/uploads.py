"""Files added to a library over HTTP: ``POST /upload/{library}`` (multipart, what the
web page's drag and drop sends) and the JSON-RPC methods ``library.add_files`` (each
file's bytes in base64), ``library.remove_file`` and ``library.create`` (an empty folder
library made under ``HERON_LIBRARY_ROOTS`` to add files to). All of them call
``heron.libraries.upload``, which holds every rule (bounds, types by content, symlinks,
which libraries take files); nothing is checked here that it does not check.

``POST /upload/{library}`` takes ``multipart/form-data``: one ``file`` part per file (its
filename is the file's name), optionally ``folder`` (where in the library) and
``replace`` (``true``: a file of the same name is replaced). With ``Accept:
text/event-stream`` it answers with events as the work goes::

    event: file
    data: {"name": "vpn.md", "bytes": 70, "path": "vpn.md", "page": "vpn", "ok": true, ...}

    event: stage
    data: {"name": "chunks", "done": 3, "total": 7}

    event: done
    data: {"library": "handbook", "files": [...], "added": 1, "refused": 0, "index": {...}}

(``error`` instead of ``done`` if the indexing failed); otherwise with the ``done`` data
as JSON once indexed. A request refused as a whole (an unknown library, a git library,
too many files or bytes) is an error reply with its status before any event, and nothing
is written. The work goes on if the client leaves: the files are written and indexed.

**Who may.** The route and both methods need the ``admin`` scope (as ``library.add``);
they act in the request's context (``X-Heron-Context``, or the key's), whose libraries
alone they see; the library's folder must be under ``HERON_LIBRARY_ROOTS`` (``caller =
"api"``). A browser reaches the route from Heron's own pages only
(``heron.server.http.origins.OWN_PAGES_ONLY``: every request there writes), with the page's
CSRF header when the server has a token; the body may be up to
``HERON_LIBRARY_UPLOAD_MAX_BYTES`` and a little more for the multipart framing
(``heron.server.http.bodies``).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from pydantic import Field
from sse_starlette import ServerSentEvent
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.formparsers import MultiPartException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from heron.errors import HeronError, InputError
from heron.libraries.upload import (
    NewFile,
    Outcome,
    add_files,
    check_upload,
    new_library,
    remove_file,
)
from heron.server.doors.rpc import Methods, Params
from heron.server.features.methods import LibraryName
from heron.server.hooks import endpoint, no_lifespan
from heron.server.http.contexts import runtime_of
from heron.server.http.events import event_stream, message
from heron.server.http.replies import heron_error, invalid
from heron.server.http.strictjson import StrictJSONResponse
from heron.server.runtime import Runtime

#: The route's path; ``heron.server.http.bodies`` and ``heron.server.http.origins`` name its prefix.
UPLOAD = "/upload/{library}"
#: Form fields besides the files: folder and replace, with room to spare.
MAX_FIELDS = 8
#: Bytes a form field (not a file) may hold: a folder path.
MAX_FIELD_BYTES = 4096
#: Seconds between two ``stage`` events of one stage: a bar moves, the stream stays small.
STAGE_EVERY = 0.1
_YES = frozenset({"1", "true", "yes", "on"})

log = logging.getLogger("heron.server")


class FileParam(Params):
    name: str = Field(min_length=1, max_length=1000, description="The file's name, e.g. vpn.md.")
    content: str = Field(description="The file's bytes, in base64.")


class AddFilesParams(LibraryName):
    files: list[FileParam] = Field(min_length=1, description="The files to add.")
    folder: str = Field(default="", description="Where in the library; default: its root.")
    replace: bool = Field(default=False, description="Replace a file of the same name.")


class RemoveFileParams(LibraryName):
    path: str = Field(min_length=1, description="The file's path from the library's folder.")


def decoded(files: list[FileParam]) -> list[NewFile]:
    """Each file's bytes; ``InputError`` naming the file whose content is no base64."""
    out = []
    for given in files:
        try:
            out.append(NewFile(given.name, base64.b64decode(given.content, validate=True)))
        except (binascii.Error, ValueError):
            raise InputError(
                f"{given.name}: its content is not base64; send the file's bytes base64-encoded."
            ) from None
    return out


#: ``library.create``, ``library.add_files`` and ``library.remove_file``: admin, in the
#: caller's context.
rpc = Methods(reach="context")


@rpc.method(
    "library.create",
    LibraryName,
    summary="Make an empty folder library under HERON_LIBRARY_ROOTS to add files to.",
)
def library_create(p: LibraryName, rt: Runtime) -> dict[str, Any]:
    return new_library(p.name, rt.settings).to_dict()


@rpc.method(
    "library.add_files",
    AddFilesParams,
    summary="Add files (base64) to a folder library and index them.",
)
def library_add_files(p: AddFilesParams, rt: Runtime) -> dict[str, Any]:
    files = decoded(p.files)
    report = add_files(
        p.name, files, rt.store, rt.settings, under=p.folder, replace=p.replace, caller="api"
    )
    return report.to_dict()


@rpc.method(
    "library.remove_file",
    RemoveFileParams,
    summary="Delete a page's file from a folder library, and its records.",
)
def library_remove_file(p: RemoveFileParams, rt: Runtime) -> dict[str, Any]:
    return remove_file(p.name, p.path, rt.store, rt.settings, caller="api")


async def _form(request: Request, most: int) -> tuple[list[NewFile], str, bool] | Response:
    """The request's files, folder and replace, or the 400 saying what is wrong."""
    sent = request.headers.get("content-type", "")
    if sent.split(";", 1)[0].strip().lower() != "multipart/form-data":
        return invalid(
            f"POST /upload/LIBRARY takes multipart/form-data (this request had {sent!r}): one "
            "'file' part per file; or call library.add_files on /rpc with each file in base64."
        )
    try:
        form = await request.form(
            max_files=most + 1,  # one more: the upload's own bound names the setting
            max_fields=MAX_FIELDS,
            max_part_size=MAX_FIELD_BYTES,
        )
    except MultiPartException as exc:
        return invalid(
            f"The upload's form cannot be read: {exc}. Send multipart/form-data with one "
            f"'file' part per file (at most {most}, HERON_LIBRARY_UPLOAD_MAX_FILES), and "
            "optionally 'folder' and 'replace'."
        )
    try:
        parts = form.getlist("file")
        uploads = [part for part in parts if isinstance(part, UploadFile)]
        if len(uploads) != len(parts):
            return invalid("Each 'file' part must be a file, with its filename.", "file")
        files = [NewFile(part.filename or "", await part.read()) for part in uploads]
        folder, replace = form.get("folder") or "", form.get("replace") or ""
    finally:
        await form.close()
    if not isinstance(folder, str) or not isinstance(replace, str):
        return invalid("'folder' and 'replace' are text fields, not files.")
    return files, folder, replace.strip().lower() in _YES


async def upload(rt: Runtime, request: Request) -> Response:
    """``POST /upload/{library}`` (the module docstring)."""
    try:
        scoped = await asyncio.to_thread(runtime_of, rt, request)
    except HeronError as exc:
        return heron_error(exc)
    settings = scoped.settings
    read = await _form(request, settings.library.upload_max_files)
    if isinstance(read, Response):
        return read
    files, folder, replace = read
    name = request.path_params["library"]
    try:  # refused as a whole: an error reply with its status, before any event
        await asyncio.to_thread(check_upload, name, files, settings, under=folder, caller="api")
    except HeronError as exc:
        return heron_error(exc)

    def run(
        stages: Callable[[str, int | None], Callable[[int], None]] | None = None,
        written: Callable[[Outcome], None] | None = None,
    ) -> dict[str, Any]:
        report = add_files(
            name,
            files,
            scoped.store,
            settings,
            under=folder,
            replace=replace,
            caller="api",
            stages=stages,
            written=written,
        )
        return report.to_dict()

    if "text/event-stream" not in request.headers.get("accept", ""):
        try:
            return StrictJSONResponse(await run_in_threadpool(run))
        except HeronError as exc:
            return heron_error(exc)
    return event_stream(_events(run), settings)


async def _events(
    run: Callable[..., dict[str, Any]],
) -> AsyncIterator[ServerSentEvent]:
    """``run``'s files and stages as events, as they happen, then ``done`` or ``error``.
    The work runs in a thread of its own, to its end whether or not the client stays."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

    def put(event: str, data: Any) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, (event, data))

    def stages(stage: str, total: int | None) -> Callable[[int], None]:
        done, last = 0, 0.0
        put("stage", {"name": stage, "done": 0, "total": total})

        def advance(n: int) -> None:
            nonlocal done, last
            done += n
            now = time.monotonic()
            if now - last >= STAGE_EVERY or (total is not None and done >= total):
                last = now
                put("stage", {"name": stage, "done": done, "total": total})

        return advance

    def work() -> None:
        try:
            put("done", run(stages, lambda outcome: put("file", outcome.to_dict())))
        except HeronError as exc:
            put("error", {"message": str(exc), "type": type(exc).__name__})
        except Exception:  # a bug: said without internals, as the server's 500 is
            log.exception("an upload failed")
            put("error", {"message": "The upload failed on the server; the error is in its log."})

    # Kept referenced until it ends: it goes on when the client leaves (the files are written).
    task = asyncio.ensure_future(asyncio.to_thread(work))
    while True:
        event, data = await queue.get()
        yield message(data, event=event)
        if event in ("done", "error"):
            break
    await task


def routes(rt: Runtime) -> list[BaseRoute]:
    return [Route(UPLOAD, endpoint(upload, rt), methods=["POST"])]


lifespan = no_lifespan
