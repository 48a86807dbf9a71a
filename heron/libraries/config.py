"""Which libraries exist: ``libraries.txt`` in the data directory, plus Heron's own docs.

One library a line, ``name source [option=value ...]``, where source is a git URL or a
local path; ``#`` starts a comment::

    # name      source                                     options
    kubernetes  https://github.com/kubernetes/website.git  branch=main include=content/en/**
    handbook    /srv/docs/handbook                         exclude=drafts/**,**/_*.md

Options (``OPTIONS``): ``branch`` (a git library's branch or tag; the remote's default
branch without it), ``include`` and ``exclude`` (comma-separated globs over page paths
from the library's root: ``*`` stays within a folder, ``**`` spans folders; a page is
indexed when it matches an ``include``, or there is none, and no ``exclude``),
``enrich`` (``yes``: ``heron index`` asks the model for the questions of each changed
page, as ``heron index --enrich`` does; ``no``, the default: shipped caches only),
``language`` (``auto``, the default: each page is analysed for lexical search in the
language it is read in, ``heron.store.analysis.page_language``; a code, ``pt``, ``es``,
``en`` ...: every page in that one, for pages too short to tell) and ``collections``
(the folder whose sub-folders are the collections, ``collections`` by default:
``collections/guide/intro.md`` is in the collection ``guide``; see
``heron.libraries.scan``).

Heron's own docs (a checkout's ``docs/``, an installed wheel's ``heron/_docs``:
``heron_docs``) are the library ``heron`` unless ``libraries.txt`` names another library
``heron`` or ``HERON_LIBRARY_DEFAULT_DOCS=false``.

**Sources are checked** (``check_source``) before they are written. For everyone: a
source never starts with ``-`` (git would read it as an option), a git URL uses
``https``, ``http``, ``ssh``, ``git`` or scp-like ``user@host:path`` (``file://`` too
from the CLI), never a ``X::`` transport (``ext::`` runs a program), and a folder is
neither ``/`` nor one holding Heron's data directory. Over the API (``library.add``) a
folder must be under one of ``library_roots`` (``HERON_LIBRARY_ROOTS``; none by default)
and ``file://`` needs ``library_allow_file_urls``.

**A name is one context's** (``heron.core.contexts``). A library's name is its store
namespace, so two lists naming it share one index: what one context indexes there, the
other quotes, and removing it from one drops the other's. The unit that owns a name is a
library list: ``libraries.txt`` (the default context's, and every context's that has no
``libraries_file``) or a context's ``libraries_file``. ``add_library`` refuses a name
another list holds, whatever its source (``NameTaken``), so no API call can make two
lists share one; an operator may still write one library into two lists by hand, with
the same source and options, to share it (``read_libraries`` takes that, and refuses a
name two lists give different libraries: ``ConfigError``), and ``forget_library`` then
keeps the index while another list names it. The names of Heron's own indexes
(``RESERVED``: the tools' and the skills' namespaces) are no library's.

**Where the lists are** (``heron.libraries.catalogue``): files on one machine; rows of
the database when ``HERON_DATABASE_URL`` is PostgreSQL, so that replicas with homes of
their own share one catalogue (``libraries.txt`` is then the list's name there).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from heron.errors import ConfigError, InputError, NotFound
from heron.libraries.catalogue import editing, read
from heron.libraries.scan import COLLECTIONS
from heron.settings import Settings
from heron.store.analysis import LANGUAGES

FILE_NAME = "libraries.txt"
DEFAULT_DOCS_NAME = "heron"
#: Same rule as store namespaces: a library's records live in the namespace of its name.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}$")
_COMMENT = re.compile(r"\s#")
_SCP_URL = re.compile(r"^[\w.-]+@[\w.-]+:")  # git@github.com:org/repo.git
#: git's ``<transport>::<address>``: ``ext::sh -c ...`` runs a program.
_TRANSPORT = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)::")
#: URL schemes a library may be cloned with; none runs a program on this machine.
NETWORK_SCHEMES = ("https", "http", "ssh", "git")
#: Who adds a library: the local user (CLI, Python) or a caller over the API.
Caller = Literal["local", "api"]
#: Store namespaces of Heron's own indexes (``heron.tools.router``'s and the tool
#: definitions' ``tools``, ``heron.skills``' ``skills`` and ``skills.CONTEXT``, the
#: doctor's scratch): a library of that name would read, re-index and drop them.
RESERVED = frozenset({"tools", "skills", "heron.doctor"})
RESERVED_PREFIXES = ("skills.",)
#: The lock every ``add_library`` takes, beside its list's own: two contexts adding one
#: name at once must not both find it free.
_NAMES_LOCK = "libraries-names"


class NameTaken(InputError):
    """A library name another context's list holds (``add_library``)."""


#: The options a ``libraries.txt`` line may carry after its source, and what each takes.
OPTIONS = {
    "branch": "a branch or tag of a git library",
    "include": "comma-separated globs of the pages to index",
    "exclude": "comma-separated globs of the pages to skip",
    "enrich": "yes to generate each changed page's questions with the model, no (default)",
    "collections": "the folder whose sub-folders are collections (default: collections)",
    "language": "the pages' language for lexical search: auto (default, each page's own) "
    f"or one of {', '.join(sorted(LANGUAGES))}",
}
#: ``language=``'s default: each page's own.
AUTO = "auto"
_YES_NO = {"yes": True, "true": True, "on": True, "no": False, "false": False, "off": False}
_OPTION = re.compile(r"^([A-Za-z_]+)=(.*)$")
#: What git accepts as a branch or tag, less what it would read as an option or a range.
_BRANCH = re.compile(r"^(?!-)(?!.*\.\.)[\w./-]+$")


@dataclass(frozen=True)
class Library:
    name: str
    source: str
    builtin: bool = False
    branch: str | None = None
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    enrich: bool = False
    collections: str = COLLECTIONS
    language: str = AUTO

    @property
    def is_git(self) -> bool:
        return is_git_url(self.source)

    def to_dict(self) -> dict[str, Any]:
        """What ``heron library list --json`` and RPC ``library.list`` show of it."""
        return {
            "name": self.name,
            "source": self.source,
            "builtin": self.builtin,
            "branch": self.branch,
            "include": list(self.include),
            "exclude": list(self.exclude),
            "enrich": self.enrich,
            "collections": self.collections,
            "language": self.language,
        }

    def options(self) -> str:
        """Its options as libraries.txt writes them (those not at their defaults):
        ``branch=main include=docs/** enrich=yes``."""
        words = [f"branch={self.branch}"] if self.branch is not None else []
        for key, globs in (("include", self.include), ("exclude", self.exclude)):
            words += [f"{key}={','.join(globs)}"] if globs else []
        words += ["enrich=yes"] if self.enrich else []
        if self.collections != COLLECTIONS:
            words.append(f"collections={self.collections}")
        words += [f"language={self.language}"] if self.language != AUTO else []
        return " ".join(words)


def is_git_url(source: str) -> bool:
    return "://" in source or bool(_SCP_URL.match(source) or _TRANSPORT.match(source))


def url_scheme(source: str) -> str | None:
    """``https`` for ``https://...``, ``ssh`` for ``git@host:path``, the transport for
    ``ext::...``; None for a local path."""
    if transport := _TRANSPORT.match(source):
        return transport.group(1).lower()
    if "://" in source:
        return source.split("://", 1)[0].lower()
    return "ssh" if _SCP_URL.match(source) else None


def check_git_source(source: str, *, allow_file: bool = True) -> None:
    """``InputError`` unless the git URL ``source`` is one git cannot turn into an option
    or a program: no leading ``-``, no ``X::`` transport, a known scheme, a host."""
    if source.startswith("-"):
        raise InputError(
            f"A library source cannot start with '-' ({source!r}): git would read it as an "
            "option. Give a URL such as https://github.com/org/docs.git"
        )
    scheme = url_scheme(source)
    if _TRANSPORT.match(source):
        raise InputError(
            f"{source!r} uses git's {scheme}:: transport, which runs a program on this "
            "machine; give an https:// or ssh:// URL."
        )
    if scheme == "file":
        if not allow_file:
            raise InputError(
                f"{source!r} is a file:// URL: over the API it would read any repository on "
                "this machine. Set HERON_LIBRARY_ALLOW_FILE_URLS=true on the server to allow "
                "it, or add it on the machine: heron library add NAME URL"
            )
        return
    if scheme not in NETWORK_SCHEMES:
        raise InputError(
            f"{source!r}: the URL scheme {scheme}:// is not one Heron clones with. Use "
            f"{', '.join(s + '://' for s in NETWORK_SCHEMES)} or user@host:path."
        )
    host = source.split("://", 1)[1].rsplit("@", 1)[-1] if "://" in source else ""
    if "://" in source and (not host or host.startswith("-")):
        raise InputError(f"{source!r} has no host name a URL can have; check the URL.")


def check_source(source: str, settings: Settings, caller: Caller = "local") -> str:
    """``source`` as ``libraries.txt`` keeps it (a folder made absolute), or
    ``InputError`` saying why it cannot be a library and what to do (rules above)."""
    source = source.strip()
    if not source or any(c in source for c in "\n\r\x00"):
        raise InputError("A library source is a git URL or a local folder, on one line.")
    if source.startswith("-"):
        check_git_source(source)
    if is_git_url(source):
        check_git_source(source, allow_file=caller == "local" or settings.library.allow_file_urls)
        return source
    folder = Path(source).expanduser().resolve()
    if not folder.is_dir():
        raise InputError(
            f"{source} is not a folder. Give a local folder of Markdown pages or a git "
            "URL such as https://github.com/org/docs.git"
        )
    home = settings.home.expanduser().resolve()
    if folder == Path(folder.anchor):
        raise InputError(
            f"{folder} is the root of the filesystem; give the folder of the documentation."
        )
    if home == folder or home.is_relative_to(folder):
        raise InputError(
            f"{folder} holds Heron's data directory ({home}), with its databases and "
            "settings; give a folder of documentation pages instead."
        )
    if caller == "api":
        roots = [Path(r).expanduser().resolve() for r in settings.library.roots]
        if not any(folder == r or folder.is_relative_to(r) for r in roots):
            now = ", ".join(str(r) for r in roots) or "none set"
            raise InputError(
                "library.add over the API takes local folders only under "
                f"HERON_LIBRARY_ROOTS (now: {now}); {folder} is not under one. Set "
                "HERON_LIBRARY_ROOTS='[\"/srv/docs\"]' for the server, or add it on the "
                "machine: heron library add NAME FOLDER"
            )
    return str(folder)


def config_path(settings: Settings) -> Path:
    """The library list of the settings' context: its ``libraries_file``, else
    ``libraries.txt``."""
    spec = settings.context_spec
    if spec is not None and spec.libraries_file is not None:
        return spec.libraries_file
    return settings.home / FILE_NAME


def _check_editable(settings: Settings) -> None:
    """A context that lists its libraries by name in heron.toml sees only those: one
    added to ``libraries.txt`` from it would be one it cannot see."""
    spec = settings.context_spec
    if spec is not None and spec.libraries is not None and spec.libraries_file is None:
        raise InputError(
            f"Context {settings.context!r} lists its libraries in heron.toml "
            f"([contexts.{settings.context}] libraries); add or remove one there, or give "
            "the context its own libraries_file."
        )


def heron_docs() -> Path | None:
    """Heron's own docs with their shipped vectors: an installed wheel's ``heron/_docs``
    (setup.py puts ``docs/`` there), else a checkout's ``docs/`` beside the ``heron``
    package; ``None`` when neither is there.

    The package's copy first: only a built wheel has one, and it is exactly the docs the
    wheel's vectors were shipped with. A checkout has none, so there ``docs/``, the pages
    being edited and the ones scripts/ship-vectors writes beside, is taken; a ``docs/``
    beside an installed package is some other distribution's in site-packages, hence the
    checkout's ``pyproject.toml`` asked for too."""
    package = Path(__file__).resolve().parents[1]
    if (package / "_docs").is_dir():
        return package / "_docs"
    checkout = package.parent
    if (checkout / "docs").is_dir() and (checkout / "pyproject.toml").is_file():
        return checkout / "docs"
    return None


def check_name(name: str) -> str:
    if not _NAME.match(name):
        raise InputError(
            f"Invalid library name {name!r}: use letters, digits, '_', '-' or '.', "
            "starting with a letter or digit, e.g. kubernetes-docs."
        )
    if name in RESERVED or name.startswith(RESERVED_PREFIXES):
        raise InputError(
            f"{name!r} names one of Heron's own indexes (tools, skills, skills.CONTEXT), "
            f"so it cannot be a library's; choose another name, e.g. {name}-docs."
        )
    return name


def list_key(path: Path, settings: Settings) -> str:
    """The list at ``path`` in the catalogue: ``libraries.txt`` for the home's (one name
    on every replica, whatever each one's home), else the path heron.toml gives."""
    home_list = settings.home / FILE_NAME
    # The usual case without resolving (a syscall per folder): it is read at every use.
    return FILE_NAME if path == home_list or _same_list(path, home_list) else str(path)


def _lines(path: Path, settings: Settings) -> list[str]:
    try:
        text = read(path, list_key(path, settings), settings)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"Cannot read {path}: {exc}. Fix or delete the file.") from exc
    return text.splitlines() if text is not None else []


def _parse(path: Path, settings: Settings) -> list[Library]:
    lines = _lines(path, settings)
    libraries: dict[str, Library] = {}
    for number, raw in enumerate(lines, 1):
        # A comment is a line starting with '#', or ' #' to the end of a line.
        line = _COMMENT.split(raw, 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 1)
        if len(parts) != 2:
            raise ConfigError(
                f"{path} line {number}: expected 'NAME SOURCE', got {raw!r}. "
                "Fix it, or use: heron library add NAME SOURCE"
            )
        try:
            library = _library(parts[0], parts[1])
        except InputError as exc:
            raise ConfigError(f"{path} line {number}: {exc}") from exc
        if library.name in libraries:
            raise ConfigError(f"{path} line {number}: library {library.name!r} is listed twice.")
        libraries[library.name] = library
    return list(libraries.values())


def _library(name: str, rest: str) -> Library:
    """One line's library: ``rest`` is the source, then its ``option=value`` words.

    Options are read from the end, so a local source may hold spaces (``/srv/my docs``)
    as it always could."""
    check_name(name)
    words = rest.split()
    options: dict[str, str] = {}
    while len(words) > 1 and (option := _OPTION.match(words[-1])):
        key, value = option.group(1), option.group(2)
        if key not in OPTIONS:
            known = "; ".join(f"{k} ({what})" for k, what in OPTIONS.items())
            raise InputError(
                f"unknown option {key!r} for library {name!r}. Known options: {known}."
            )
        if key in options:
            raise InputError(f"option {key!r} is given twice for library {name!r}.")
        options[key] = value
        words.pop()
    source = rest.strip()
    for _ in range(len(options)):  # the source as written, inner spaces kept
        source = source.rsplit(None, 1)[0]
    branch = options.get("branch")
    if branch is not None and not _BRANCH.match(branch):
        raise InputError(
            f"branch={branch!r} for library {name!r} is not a branch or tag name git "
            "takes; use letters, digits, '.', '_', '-' or '/', e.g. branch=main."
        )
    if branch is not None and not is_git_url(source):
        raise InputError(
            f"branch= is for git libraries; {name!r} is the local folder {source}. "
            "Check out the branch there instead."
        )
    enrich = options.get("enrich", "no")
    if enrich.lower() not in _YES_NO:
        raise InputError(f"enrich={enrich!r} for library {name!r}: use enrich=yes or enrich=no.")
    collections = options.get("collections", COLLECTIONS).strip("/")
    if not collections or any(part in ("", ".", "..") for part in collections.split("/")):
        raise InputError(
            f"collections={options['collections']!r} for library {name!r} is not a folder "
            "path inside the library; use e.g. collections=docs/collections."
        )
    language = options.get("language", AUTO).lower()
    if language != AUTO and language not in LANGUAGES:
        raise InputError(
            f"language={options['language']!r} for library {name!r}: use language=auto (each "
            f"page's own) or one of {', '.join(sorted(LANGUAGES))}."
        )
    return Library(
        name,
        source,
        branch=branch,
        include=_globs(options.get("include")),
        exclude=_globs(options.get("exclude")),
        enrich=_YES_NO[enrich.lower()],
        collections=collections,
        language=language,
    )


def _globs(value: str | None) -> tuple[str, ...]:
    return tuple(g for g in (value or "").split(",") if g)


def _listed(path: Path, settings: Settings) -> list[Library]:
    """The libraries of the list at ``path`` in file order, then the built-in ``heron``
    docs library unless the list names one."""
    libraries = _parse(path, settings)
    docs = heron_docs()
    if (
        settings.library.default_docs
        and docs is not None
        and all(lib.name != DEFAULT_DOCS_NAME for lib in libraries)
    ):
        libraries.append(Library(DEFAULT_DOCS_NAME, str(docs), builtin=True))
    return libraries


def _same_list(a: Path, b: Path) -> bool:
    return a.expanduser().resolve() == b.expanduser().resolve()


def _other_lists(settings: Settings) -> list[Path]:
    """The library lists of the server but the settings' context's own: ``libraries.txt``
    and every context's ``libraries_file``, each once."""
    mine = config_path(settings)
    lists: list[Path] = []
    for path in [settings.home / FILE_NAME] + [
        spec.libraries_file
        for spec in settings.contexts.values()
        if spec.libraries_file is not None
    ]:
        if not _same_list(path, mine) and not any(_same_list(path, p) for p in lists):
            lists.append(path)
    return lists


def _others(settings: Settings) -> Iterator[Library]:
    """Every library of the server's other lists (``_other_lists``)."""
    for path in _other_lists(settings):
        try:
            yield from _listed(path, settings)
        except ConfigError:
            # Its own context reports what is wrong with it; this one is not told its path.
            raise ConfigError(
                "Another context's library list cannot be read, so which library names it "
                "holds cannot be told; the server's operator must fix it (heron --context "
                "NAME library list says what is wrong)."
            ) from None


def elsewhere(name: str, settings: Settings) -> list[Library]:
    """The library each other list of the server names ``name``: empty when ``name`` is
    this context's alone, or nobody's."""
    return [lib for lib in _others(settings) if lib.name == name]


def _key(library: Library) -> tuple[Any, ...]:
    """What makes two entries one library: the same pages indexed the same way."""
    return (library.source, library.branch, library.include, library.exclude, library.collections)


def read_libraries(settings: Settings) -> list[Library]:
    """Configured libraries in file order, then the built-in ``heron`` docs library; in
    a context (``settings.context_spec``), those of its file, and of them only the ones
    it names, if it names any. A name another list gives another library is a
    ``ConfigError`` (one namespace cannot hold both; see the module)."""
    libraries = _listed(config_path(settings), settings)
    if any(spec.libraries_file is not None for spec in settings.contexts.values()):
        # Lists of their own exist: one of them may name one of these differently.
        # Neither context is told the other's file or name: only what to fix here.
        mine = {lib.name: lib for lib in libraries}
        for lib in _others(settings):
            if lib.name in mine and _key(lib) != _key(mine[lib.name]):
                raise ConfigError(
                    f"Library {lib.name!r} of {config_path(settings)} is also in another "
                    "context's library list, with another source or options; a library "
                    "name is one index, so it cannot be both. Rename it in one list "
                    "(library remove, then add under a new name), or give both lists the "
                    "same line to share it."
                )
    spec = settings.context_spec
    if spec is not None and spec.libraries is not None:
        libraries = [lib for lib in libraries if lib.name in spec.libraries]
    return libraries


def get_library(name: str, settings: Settings) -> Library:
    libraries = read_libraries(settings)
    for library in libraries:
        if library.name == name:
            return library
    known = ", ".join(lib.name for lib in libraries) or "none yet"
    raise NotFound(
        f"No library {name!r} (libraries: {known}). Add it with: heron library add {name} SOURCE"
    )


def add_library(
    name: str,
    source: str,
    settings: Settings,
    *,
    caller: Caller = "local",
    branch: str | None = None,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    enrich: bool = False,
    collections: str | None = None,
    language: str = AUTO,
) -> Library:
    """Append ``name source [options]`` to ``libraries.txt``; a local source is stored
    absolute. ``caller="api"`` applies the API's stricter rules (``check_source``). The
    options are checked as ``libraries.txt`` is read: ``add_library("k8s", URL, settings,
    branch="main", include=["content/en/**"])`` writes
    ``k8s URL branch=main include=content/en/**``.
    """
    check_name(name)
    _check_editable(settings)
    source = check_source(source, settings, caller)
    for key, globs in (("include", include), ("exclude", exclude)):
        if any(not g or "," in g or g != "".join(g.split()) for g in globs):
            raise InputError(f"{key} globs hold no spaces or commas: got {list(globs)!r}.")
    if collections is not None and collections != "".join(collections.split()):
        raise InputError(f"collections= is a folder path without spaces: {collections!r}.")
    if language != "".join(language.split()):
        raise InputError(f"language= is one word, auto or a language code: {language!r}.")
    given = Library(
        name,
        source,
        branch=branch,
        include=tuple(include),
        exclude=tuple(exclude),
        enrich=enrich,
        collections=COLLECTIONS if collections is None else collections,
        language=language,
    )
    line = " ".join(word for word in (name, source, given.options()) if word)
    library = _library(name, line.split(None, 1)[1])  # the options checked as when read
    path = config_path(settings)
    key = list_key(path, settings)
    with editing(path, key, settings, names=settings.home / _NAMES_LOCK) as write:
        if any(lib.name == name for lib in _parse(path, settings)):
            raise InputError(
                f"Library {name!r} exists. Remove it first: heron library remove {name}"
            )
        if elsewhere(name, settings):
            # Whatever its source: sharing the name would share the index, its re-index
            # and its removal. Who holds it is that context's business, not told here.
            raise NameTaken(
                f"The library name {name!r} is taken by another context: a library's name "
                "is its index, and one context's. Choose another name, e.g. "
                f"{settings.context}-{name}."
            )
        write([*_lines(path, settings), line])
    return library


def remove_library(name: str, settings: Settings) -> Library:
    """Delete the library's line from ``libraries.txt`` (the caller drops its index)."""
    _check_editable(settings)
    path = config_path(settings)
    with editing(path, list_key(path, settings), settings) as write:
        for library in _parse(path, settings):
            if library.name == name:
                kept = [
                    line for line in _lines(path, settings) if line.split(None, 1)[:1] != [name]
                ]
                write(kept)
                return library
    if name == DEFAULT_DOCS_NAME and heron_docs() is not None:
        raise InputError(
            "The 'heron' library is Heron's own docs; turn it off with "
            "HERON_LIBRARY_DEFAULT_DOCS=false."
        )
    raise NotFound(f"No library {name!r} in {path}. See: heron library list")
