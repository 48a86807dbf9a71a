"""Files under a root, reached without following a symlink: how Heron reads and writes in
a folder someone else filled (a workspace, a library and its Q&A caches).

A path is a list of names below the root, ``["concepts", ".ai", "pods.toml"]``. Each
folder is opened from its parent's descriptor, ``os.open(name, O_DIRECTORY |
O_NOFOLLOW, dir_fd=parent)`` (the ``openat`` pattern), so no symlink below the root is
followed, and a folder swapped for a symlink between a check and a use cannot lead
outside: there is no check apart from the use. The root itself is opened as given (its
owner chose it; it may be a symlink).

Only regular files are read: the name is ``lstat``-ed first (a device is never opened),
then opened ``O_NOFOLLOW | O_NONBLOCK`` (a FIFO swapped in cannot block the open) and
checked again with ``fstat`` on the open descriptor; a read stops one byte past its
bound. A write goes to a fresh temporary name created ``O_CREAT | O_EXCL | O_NOFOLLOW``
beside the target, then ``os.replace`` within the same folder descriptor: readers see
the old content or the new, and a symlink, folder or special file in the target's place
is refused, never written through.

>>> with folder(root, [".ai"], create=True) as fd:                      # doctest: +SKIP
...     replace_file(fd, "pods.toml", b'content_hash = "..."', ".ai/pods.toml")
>>> with folder(root, [".ai"]) as fd:                                   # doctest: +SKIP
...     read_regular(fd, "pods.toml", ".ai/pods.toml", limit=256_000)
(b'content_hash = "..."', 20)

Refusals are ``PathRefused``, whose message says what is there; each caller adds what
to do, in its own words (a workspace tool and the library indexer advise differently).
A missing folder or file is ``FileNotFoundError``, its ``filename`` the path from the
root; other ``OSError``s (permissions, a full disk) pass through.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

from heron.errors import HeronError

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
KINDS = {
    stat.S_IFREG: "a file",
    stat.S_IFDIR: "a folder",
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFLNK: "a symlink",
}


def kind_name(kind: int) -> str:
    """``stat.S_IFIFO`` -> ``"a FIFO (named pipe)"``."""
    return KINDS.get(kind, "not a regular file")


class PathRefused(HeronError):
    """``path`` (from the root) was refused because ``at``, the whole path or a folder on
    the way to it (``folder``), is ``kind`` (a ``stat.S_IF*`` value: a symlink, a FIFO, a
    file where a folder was wanted ...). The message says what is there, not what to do:
    callers add that."""

    def __init__(self, path: str, at: str, kind: int, *, folder: bool = False) -> None:
        self.path, self.at, self.kind, self.folder = path, at, kind, folder
        if kind == stat.S_IFLNK:
            message = (
                f"{path!r} is a symlink"
                if at == path
                else f"{path!r} goes through the symlink {at!r}"
            )
        elif folder and at != path:
            message = f"{at!r}, on the way to {path!r}, is {kind_name(kind)}, not a folder"
        elif folder:
            message = f"{at!r} is {kind_name(kind)}, not a folder"
        else:
            message = f"{path!r} is {kind_name(kind)}"
        super().__init__(message)

    @property
    def symlink(self) -> bool:
        return self.kind == stat.S_IFLNK


def _kind(parent: int, name: str) -> int:
    """What ``name`` in ``parent`` is, not following a symlink; 0 when it cannot be told."""
    try:
        return stat.S_IFMT(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode)
    except OSError:
        return 0


def _joined(parts: Sequence[str]) -> str:
    return "/".join(parts)


def open_folder(
    root: Path | str,
    parts: Sequence[str],
    *,
    create: bool = False,
    mode: int = 0o755,
    path: str | None = None,
) -> int:
    """A descriptor of the folder ``parts`` below ``root``, reached without following a
    symlink; the caller closes it (``folder`` does). ``create`` makes missing folders on
    the way (with ``mode``). A folder that is missing (and not created) is
    ``FileNotFoundError``; one that is a symlink or no folder is ``PathRefused``, naming
    ``path`` (the file wanted in it; default the folder) and the folder; one that changed
    while it was opened, ``OSError``."""
    whole = _joined(parts) if path is None else path
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for n, part in enumerate(parts):
            try:
                child = os.open(part, _DIR, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise FileNotFoundError(
                        errno.ENOENT, "no such folder", _joined(parts[: n + 1])
                    ) from None
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, mode, dir_fd=fd)
                try:
                    child = os.open(part, _DIR, dir_fd=fd)
                except OSError as exc:
                    raise _refused(fd, part, whole, parts[: n + 1], exc) from None
            except OSError as exc:
                raise _refused(fd, part, whole, parts[: n + 1], exc) from None
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextlib.contextmanager
def folder(
    root: Path | str,
    parts: Sequence[str],
    *,
    create: bool = False,
    mode: int = 0o755,
    path: str | None = None,
) -> Iterator[int]:
    """``open_folder``'s descriptor, closed on leaving."""
    fd = open_folder(root, parts, create=create, mode=mode, path=path)
    try:
        yield fd
    finally:
        os.close(fd)


def _refused(parent: int, name: str, path: str, at: Sequence[str], exc: OSError) -> Exception:
    """Why the folder ``at`` (``name`` in ``parent``) could not be opened: a
    ``PathRefused`` for a symlink or a file that is no folder, else ``exc``."""
    kind = _kind(parent, name)
    if kind == stat.S_IFLNK or (kind not in (0, stat.S_IFDIR) and exc.errno == errno.ENOTDIR):
        return PathRefused(path, _joined(at), kind, folder=True)
    return exc


def open_regular(parent: int, name: str, path: str) -> int:
    """A blocking descriptor of ``name`` in the folder ``parent``, a regular file, or
    ``PathRefused`` (a symlink, folder, FIFO, socket or device; ``path`` names it), or
    ``FileNotFoundError``. The caller closes it."""
    kind = _kind(parent, name)
    if kind not in (0, stat.S_IFREG):  # refused by name: a device is never opened
        raise PathRefused(path, path, kind)
    try:
        fd = os.open(name, _READ, dir_fd=parent)
    except FileNotFoundError:
        raise FileNotFoundError(errno.ENOENT, "no such file", path) from None
    except OSError:  # swapped since the lstat: a symlink (ELOOP), a socket (ENXIO)
        kind = _kind(parent, name)
        if kind not in (0, stat.S_IFREG):
            raise PathRefused(path, path, kind) from None
        raise
    kind = stat.S_IFMT(os.fstat(fd).st_mode)
    if kind != stat.S_IFREG:  # the descriptor is what is read: checked last, on it
        os.close(fd)
        raise PathRefused(path, path, kind)
    os.set_blocking(fd, True)
    return fd


def read_regular(parent: int, name: str, path: str, limit: int) -> tuple[bytes, int]:
    """``(data, size)``: at most ``limit + 1`` bytes of the regular file ``name`` in the
    folder ``parent`` (so ``len(data) > limit`` says it is over) and its size when opened;
    ``PathRefused`` or ``FileNotFoundError`` as ``open_regular``."""
    fd = open_regular(parent, name, path)
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(fd).st_size
        return handle.read(limit + 1), size


def create_file(parent: int, name: str, data: bytes, path: str, *, mode: int = 0o644) -> None:
    """Write ``data`` as the new file ``name`` of the folder ``parent``, whole or not at
    all: into a temporary file beside it (as ``replace_file``), then hard-linked to
    ``name``, which fails if anything is there (a file, a symlink, a dangling one: a link
    is never followed). ``FileExistsError`` then, its ``filename`` ``path``; nothing is
    replaced and no reader sees a part of ``data``."""
    tmp = _written(parent, name, data, mode)
    try:
        os.link(tmp, name, src_dir_fd=parent, dst_dir_fd=parent, follow_symlinks=False)
    except FileExistsError:
        raise FileExistsError(errno.EEXIST, "a file exists there", path) from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=parent)


def _written(parent: int, name: str, data: bytes, mode: int) -> str:
    """A temporary file of ``parent`` holding ``data`` with ``mode``, created ``O_EXCL |
    O_NOFOLLOW`` under a random name beside ``name``; its name."""
    # The temporary name stays under the 255-byte limit however long the name is.
    tmp = f".{name[:200]}.{secrets.token_hex(4)}.heron-tmp"
    fd = os.open(tmp, _CREATE, 0o600, dir_fd=parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            os.fchmod(handle.fileno(), mode & 0o777)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=parent)
        raise
    return tmp


def replace_file(parent: int, name: str, data: bytes, path: str, *, mode: int = 0o644) -> None:
    """Write ``data`` as the file ``name`` of the folder ``parent``: into a temporary file
    beside it, created ``O_EXCL | O_NOFOLLOW`` under a random name (a name planted in
    advance, a symlink included, is never opened), then renamed over ``name``. An existing
    regular file keeps its mode (``mode`` for a new one); a symlink, folder or special
    file there is ``PathRefused`` (``path`` names it), never written through or replaced:
    its owner put it there."""
    try:
        info = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        pass
    else:
        if not stat.S_ISREG(info.st_mode):
            raise PathRefused(path, path, stat.S_IFMT(info.st_mode))
        mode = stat.S_IMODE(info.st_mode)
    tmp = _written(parent, name, data, mode)
    try:
        os.replace(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=parent)
        raise


def remove_regular(parent: int, name: str, path: str) -> None:
    """Delete the regular file ``name`` of the folder ``parent``; a symlink, folder or
    special file there is ``PathRefused`` (``path`` names it) and stays, a missing one
    ``FileNotFoundError``. ``unlink`` never follows a symlink, so what a swap puts there
    between the check and the unlink is removed as a name, never followed."""
    kind = _kind(parent, name)
    if kind == 0:
        raise FileNotFoundError(errno.ENOENT, "no such file", path)
    if kind != stat.S_IFREG:
        raise PathRefused(path, path, kind)
    try:
        os.unlink(name, dir_fd=parent)
    except FileNotFoundError:
        raise FileNotFoundError(errno.ENOENT, "no such file", path) from None
