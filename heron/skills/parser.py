"""Reading one ``SKILL.md``: YAML front matter between ``---`` lines, then Markdown.

A skill that is mis-read is a skill that is never found, so the parser recovers where it
can and records a ``Diagnostic`` for each recovery. Codes, and what the parser does:

- ``no-front-matter``: the file does not start with ``---``; the whole file is the body.
- ``unclosed-front-matter``: ``---`` opened but never closed (or closed only after Markdown
  text); the YAML-looking lines at the top are the front matter, the rest the body.
- ``unquoted-colon``: a plain value holds ``": "`` (``description: Use: when...``), which
  YAML rejects; that entry is read again with its value quoted. ``quoted-value``: the
  same retry helped a value for another reason.
- ``yaml-error``: an entry is still not YAML; its text is kept as written (block
  scalars folded). Only that entry is affected: each top-level key is loaded on its own.
- ``not-a-mapping``: the front matter is a list or a scalar; it is ignored.
- ``bad-field``: ``name``, ``description`` or ``tags`` of the wrong type, read as text.
- ``missing-name``: the folder's name is used. ``missing-description``: the body's first
  paragraph is used. ``no-description``: there is none to take.
- ``truncated``: the file is over ``MAX_BYTES``; its head is read.

Folded (``>``) and literal (``|``) block scalars, block and flow lists, and tags nested
under ``metadata`` (``metadata.hermes.tags``) are valid YAML and read as such, without a
diagnostic. Descriptions have their whitespace collapsed to single spaces.

Files that cannot be read as text raise ``SkillFileError`` with the reason: unreadable,
not a regular file (a FIFO or device is refused without opening it, so nothing blocks),
broken symlink or symlink loop, binary (a NUL byte), UTF-16, invalid UTF-8, empty.

Front matter is untrusted YAML, read with ``heron.yamlsafe``: a file whose front matter
uses aliases (``&a`` ... ``*a``: the "billion laughs" bomb) or is over 64 KiB is refused
(``SkillFileError``) rather than recovered, at once.
"""

from __future__ import annotations

import codecs
import datetime
import errno
import math
import os
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from heron import yamlsafe
from heron.errors import InputError

#: Front matter sits at the top, so a larger file is read only this far.
MAX_BYTES = 1 << 20
#: A description taken from the body is cut at about this many characters.
DESCRIPTION_LIMIT = 500
#: At most this many front-matter values are copied: YAML aliases can nest a small file
#: into billions of values.
VALUE_BUDGET = 10_000
_FIELDS = ("name", "description", "tags")
_BLOCK_MARKERS = frozenset((">", "|", ">-", "|-", ">+", "|+"))
#: A value starting with one of these is structured (quoted, a list, a block...), not plain.
_NOT_PLAIN = tuple("'\"[{|>&*!")
_KEY = re.compile(r"""^(?P<key>[A-Za-z_][\w.\-]*|"[^"]*"|'[^']*')[ \t]*:(?:[ \t]+|$)""")
_LIST_MARK = re.compile(r"^(?:[-*+]\s+|>\s*|\d+[.)]\s+)")


@dataclass(frozen=True)
class Diagnostic:
    """One recovery: ``code`` for counting, ``message`` for people (with the fix)."""

    code: str
    message: str

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


@dataclass(frozen=True)
class Skill:
    """A parsed ``SKILL.md``. ``extra`` holds the other front-matter keys, JSON-safe."""

    name: str
    description: str
    path: Path
    tags: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)
    body: str = ""
    diagnostics: tuple[Diagnostic, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "path": str(self.path),
            "tags": list(self.tags),
            "extra": dict(self.extra),
            "diagnostics": [str(d) for d in self.diagnostics],
            "body": self.body,
        }


class SkillFileError(InputError):
    """A file that cannot be read as a skill at all; ``reason`` says why and what to do."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


# -- reading ----------------------------------------------------------------------------


def _os_reason(path: Path, exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "symlink loop (the link leads back to itself); point it at a real file"
    if exc.errno == errno.ENOENT:
        if os.path.islink(path):
            return f"broken symlink to {os.readlink(path)}; fix the link or remove it"
        return "disappeared during the scan; scan again"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied; make it readable (chmod a+r) or remove it"
    return f"cannot be read ({exc.strerror or exc}); check the file"


def outside_reason(path: Path, within: Path) -> str | None:
    """Why ``path`` is not read as part of ``within``: it resolves (through symlinks)
    outside it; ``None`` when it stays inside."""
    real = Path(os.path.realpath(path))
    if real.is_relative_to(os.path.realpath(within)):
        return None
    return (
        f"symlink outside its directory (to {real}); not indexed. Copy it in, or set "
        "HERON_SKILLS_FOLLOW_SYMLINKS=true to index skills linked from elsewhere"
    )


def read_skill_file(path: Path, *, within: Path | None = None) -> tuple[str, list[Diagnostic]]:
    """The text of a skill file (at most ``MAX_BYTES``), or ``SkillFileError``.

    ``within``: refuse a file that resolves outside this directory (a symlink leaving
    its skill). Nothing but a regular file is opened for reading, and it is opened
    non-blocking, so a FIFO swapped in after the check cannot hang the scan."""
    target, flags = path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
    try:
        if within is not None:
            reason = outside_reason(path, within)
            if reason:
                raise SkillFileError(path, reason)
            # Open what was checked, and refuse it if it became a link since.
            target, flags = Path(os.path.realpath(path)), flags | getattr(os, "O_NOFOLLOW", 0)
        mode = os.stat(target).st_mode
        if stat.S_ISDIR(mode):
            raise SkillFileError(path, "is a directory; put a SKILL.md file in it instead")
        if not stat.S_ISREG(mode):
            raise SkillFileError(path, "is not a regular file (a FIFO, socket or device)")
        fd = os.open(target, flags)
        with open(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise SkillFileError(path, "is not a regular file (a FIFO, socket or device)")
            data = handle.read(MAX_BYTES + 1)
            size = info.st_size
    except OSError as exc:
        raise SkillFileError(path, _os_reason(path, exc)) from exc
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise SkillFileError(path, "is UTF-16; re-encode it: iconv -f utf-16 -t utf-8")
    nul = data.find(b"\0")
    if nul >= 0:
        raise SkillFileError(path, f"binary content (a NUL byte at offset {nul}), not text")
    diagnostics = []
    if len(data) > MAX_BYTES:
        data = data[:MAX_BYTES]
        diagnostics.append(
            Diagnostic(
                "truncated",
                f"the file is {size / 2**20:.1f} MiB; read its first {MAX_BYTES // 1024} KiB. "
                "Move long material out of SKILL.md into files the skill points to.",
            )
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if diagnostics and exc.reason == "unexpected end of data":  # cut inside a character
            text = data[: exc.start].decode("utf-8")
        else:
            raise SkillFileError(
                path,
                f"not valid UTF-8 (byte {data[exc.start]:#04x} at offset {exc.start}); "
                "re-encode it, e.g. iconv -f latin1 -t utf-8",
            ) from exc
    if not text.strip():
        raise SkillFileError(path, "is empty; write its front matter (name, description)")
    return text, diagnostics


def parse_skill(path: Path, *, within: Path | None = None) -> Skill:
    """Read and parse one skill file; ``SkillFileError`` when it is not text, its front
    matter is refused (``heron.yamlsafe``) or it resolves outside ``within``."""
    text, diagnostics = read_skill_file(path, within=within)
    try:
        return parse_text(text, path, diagnostics)
    except yamlsafe.YAMLRefused as exc:
        raise SkillFileError(path, f"front matter refused: {exc}") from None


# -- parsing ----------------------------------------------------------------------------


def parse_text(text: str, path: Path, diagnostics: Iterable[Diagnostic] = ()) -> Skill:
    """Parse the text of a skill file; ``path`` names the skill when the text does not.
    Front matter with aliases or over 64 KiB raises ``heron.yamlsafe.YAMLRefused``.

    >>> parse_text("---\\nname: x\\ndescription: >\\n  Two\\n  lines.\\n---\\nBody", Path("x"))
    ... # doctest: +ELLIPSIS
    Skill(name='x', description='Two lines.', ...)
    """
    diags = list(diagnostics)
    lines = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    opened = next((i for i, line in enumerate(lines) if line.strip()), 0)
    block, body = _split_front_matter(lines, opened, diags)
    data = _load_front_matter(block, opened + 2, diags) if block is not None else {}
    budget = [VALUE_BUDGET]
    extra = {str(k): _jsonable(v, budget) for k, v in data.items() if k not in _FIELDS}
    if budget[0] < 0:
        diags.append(
            Diagnostic(
                "bad-field", f"the front matter holds over {VALUE_BUDGET} values; kept the first"
            )
        )
    body_text = "\n".join(body).strip("\n")
    name = _name(data, path, diags)
    description = _description(data, body_text, diags)
    tags = _tags(data, diags)
    return Skill(name, description, path, tags, extra, body_text, tuple(diags))


def _is_delimiter(line: str) -> bool:
    return line.rstrip() in ("---", "...")


def _yamlish(line: str) -> bool:
    """Could be a line of front matter: blank, comment, indented, list item or ``key:``."""
    return not line.strip() or line.startswith((" ", "\t", "-", "#")) or bool(_KEY.match(line))


def _all_yamlish(lines: list[str]) -> bool:
    """Every line could be front matter; the text of a ``>``/``|`` block counts even when
    it is not indented (YAML refuses that, and ``_load_by_entry`` recovers it)."""
    in_block = False
    for line in lines:
        key = _KEY.match(line)
        if key:
            in_block = line[key.end() :].strip() in _BLOCK_MARKERS
        elif not (_yamlish(line) or (in_block and not line.startswith("#"))):
            return False
    return True


def _prefix_end(lines: list[str], start: int) -> int:
    """Where the front matter of an unclosed block ends: at the first line that is not
    ``key:``, indented or a list item, or at a blank line not followed by indented text
    (``#`` lines end it too: after front matter they are Markdown headings)."""
    i = start
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            if j == len(lines) or not lines[j].startswith((" ", "\t")):
                return i
            i = j
            continue
        if not (line.startswith((" ", "\t", "-")) or _KEY.match(line)) or _is_delimiter(line):
            return i
        i += 1
    return i


def _split_front_matter(
    lines: list[str], opened: int, diags: list[Diagnostic]
) -> tuple[str | None, list[str]]:
    """Front matter and body; ``lines[opened]`` is the first non-blank line."""
    if lines[opened].rstrip() != "---":
        diags.append(
            Diagnostic(
                "no-front-matter",
                "the file does not start with '---'; add front matter with name and description",
            )
        )
        return None, lines
    first = opened + 1
    close = next((i for i in range(first, len(lines)) if _is_delimiter(lines[i])), None)
    if close is not None and _all_yamlish(lines[first:close]):
        return "\n".join(lines[first:close]), lines[close + 1 :]
    end = _prefix_end(lines, first)
    while end > first and not lines[end - 1].strip():
        end -= 1
    where = (
        "is never closed"
        if close is None
        else f"is not closed before the Markdown on line {end + 1} (line {close + 1}'s '---' "
        "belongs to the body)"
    )
    read = f"read lines {first + 1}-{end} as front matter" if end > first else "it is empty"
    diags.append(
        Diagnostic(
            "unclosed-front-matter",
            f"the front matter opened on line {first} {where}; {read}. Add a '---' line after it.",
        )
    )
    return "\n".join(lines[first:end]), lines[end:]


def _load_front_matter(block: str, first_line: int, diags: list[Diagnostic]) -> dict[Any, Any]:
    """The front matter as a mapping; ``first_line`` is its line number in the file."""
    try:
        data = yamlsafe.load(block)
    except yaml.YAMLError:
        return _load_by_entry(block.split("\n"), first_line, diags)
    if data is None:
        return {}
    if not isinstance(data, dict):
        diags.append(
            Diagnostic(
                "not-a-mapping",
                f"the front matter is a {type(data).__name__}, not 'key: value' lines; ignored it",
            )
        )
        return {}
    return data


def _load_by_entry(lines: list[str], first_line: int, diags: list[Diagnostic]) -> dict[Any, Any]:
    """Load each top-level ``key:`` entry on its own, so one bad value spoils only itself."""
    entries: list[tuple[int, list[str]]] = []
    for i, line in enumerate(lines):
        if _KEY.match(line):
            entries.append((i, [line]))
        elif entries:
            entries[-1][1].append(line)
        elif line.strip() and not line.lstrip().startswith("#"):
            diags.append(
                Diagnostic("yaml-error", f"line {first_line + i} is not 'key: value'; ignored it")
            )
    data: dict[Any, Any] = {}
    for i, entry in entries:
        line_no = first_line + i
        try:
            value = yamlsafe.load("\n".join(entry))
        except yaml.YAMLError as exc:
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        else:
            if isinstance(value, dict):
                data.update(value)
                continue
            problem = "not a 'key: value' entry"
        match = _KEY.match(entry[0])
        assert match is not None  # every entry starts at a key line
        key, first = match.group("key").strip("'\""), entry[0][match.end() :]
        plain = _plain_value(first, entry[1:])
        if plain is not None:
            try:
                value = yamlsafe.load(f"{key}: {_quote(plain)}")
            except yaml.YAMLError:
                pass
            else:
                data.update(value)
                colon = ": " in plain or plain.endswith(":")
                diags.append(
                    Diagnostic(
                        "unquoted-colon" if colon else "quoted-value",
                        f"line {line_no}: the value of {key!r} "
                        + ("holds ': '" if colon else f"is not valid YAML ({problem})")
                        + "; read it as a quoted string. Quote it in the file.",
                    )
                )
                continue
        data[key] = _raw_value(first, entry[1:])
        diags.append(
            Diagnostic(
                "yaml-error",
                f"line {line_no}: {key!r} is not valid YAML ({problem}); kept its text as written",
            )
        )
    return data


def _plain_value(first: str, rest: list[str]) -> str | None:
    """The folded text of a plain (unquoted, single- or multi-line) scalar, else ``None``."""
    first = first.strip()
    if not first or first.startswith(_NOT_PLAIN) or first.startswith("- "):
        return None
    if any(line.strip() and not line.startswith((" ", "\t")) for line in rest):
        return None
    return " ".join([first, *(line.strip() for line in rest if line.strip())])


def _quote(text: str) -> str:
    """A YAML double-quoted scalar (the escapes YAML shares with JSON)."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\t", "\\t")
    return f'"{escaped}"'


def _raw_value(first: str, rest: list[str]) -> str:
    """The text of an entry YAML refused: block scalars folded (``>``) or kept (``|``)."""
    first = first.strip()
    texts = [line.strip() for line in rest]
    if first in _BLOCK_MARKERS:
        if first.startswith("|"):
            return "\n".join(texts).strip()
        paragraphs = "\n".join(texts).split("\n\n")
        return "\n".join(" ".join(p.split()) for p in paragraphs).strip()
    text = " ".join(t for t in [first, *texts] if t)
    if text[:1] in ("'", '"'):  # an unterminated quote: drop the quotes that are there
        text = text[1:].removesuffix(text[0])
    return text


# -- fields -----------------------------------------------------------------------------


def _scalar_text(value: Any) -> str | None:
    """Text of a scalar or a list of scalars, whitespace collapsed; ``None`` otherwise."""
    if isinstance(value, str):
        return " ".join(value.split())
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float | datetime.date):
        return str(value)
    if isinstance(value, list) and value and all(_scalar_text(v) for v in value):
        return " ".join(_scalar_text(v) or "" for v in value)
    return None


def _name(data: Mapping[Any, Any], path: Path, diags: list[Diagnostic]) -> str:
    raw = data.get("name")
    name = _scalar_text(raw)
    if name and not isinstance(raw, str):
        diags.append(Diagnostic("bad-field", f"name is a {type(raw).__name__}; read it as text"))
    if name:
        return name
    folder = path.parent.name or path.stem
    diags.append(
        Diagnostic("missing-name", f"no name in the front matter; used the folder name {folder!r}")
    )
    return folder


def _description(data: Mapping[Any, Any], body: str, diags: list[Diagnostic]) -> str:
    raw = data.get("description")
    text = _scalar_text(raw)
    if text and not isinstance(raw, str):
        diags.append(
            Diagnostic("bad-field", f"description is a {type(raw).__name__}; read it as text")
        )
    if text in _BLOCK_MARKERS:  # a block scalar whose text was lost: never index the marker
        text = None
    if text:
        return text
    found = first_paragraph(body)
    if found:
        diags.append(
            Diagnostic(
                "missing-description",
                "no description in the front matter; used the body's first paragraph. "
                "Add 'description:' saying what the skill does and when to use it.",
            )
        )
    else:
        diags.append(
            Diagnostic(
                "no-description",
                "no description and no paragraph to take one from; only the name is searchable",
            )
        )
    return found


def first_paragraph(body: str) -> str:
    """The first paragraph of prose in Markdown, skipping headings, code, tables, comments."""
    paragraph: list[str] = []
    fence = comment = False
    for line in body.split("\n"):
        text = line.strip()
        if comment:
            comment = "-->" not in text
            continue
        if text.startswith(("```", "~~~")):
            if paragraph:
                break
            fence = not fence
            continue
        if fence:
            continue
        if not text or text.startswith("#"):
            if paragraph:
                break
            continue
        if text.startswith("<!--"):
            comment = "-->" not in text
            continue
        if text.startswith(("|", "<", "---", "***", "===")):  # tables, HTML, rules
            if paragraph:
                break
            continue
        paragraph.append(_LIST_MARK.sub("", text))
    found = " ".join(" ".join(paragraph).split())
    if len(found) > DESCRIPTION_LIMIT:
        found = found[:DESCRIPTION_LIMIT].rsplit(" ", 1)[0] + " ..."
    return found


def _tag_values(value: Any, where: str, diags: list[Diagnostic]) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return value.split(",")
    if isinstance(value, list):
        return [text for v in value if (text := _scalar_text(v))]
    diags.append(Diagnostic("bad-field", f"{where} is a {type(value).__name__}, not a list"))
    return []


def _nested_tags(value: Any, where: str, diags: list[Diagnostic], depth: int = 3) -> list[str]:
    """``tags`` anywhere under ``metadata``, e.g. ``metadata.hermes.tags``."""
    if not isinstance(value, dict) or depth == 0:
        return []
    found = []
    for key, item in value.items():
        if key == "tags":
            found += _tag_values(item, f"{where}.tags", diags)
        else:
            found += _nested_tags(item, f"{where}.{key}", diags, depth - 1)
    return found


def _tags(data: Mapping[Any, Any], diags: list[Diagnostic]) -> tuple[str, ...]:
    raw = _tag_values(data.get("tags"), "tags", diags)
    raw += _nested_tags(data.get("metadata"), "metadata", diags)
    tags: dict[str, str] = {}
    for tag in raw:
        clean = " ".join(tag.split()).lstrip("#")
        if clean:
            tags.setdefault(clean.casefold(), clean)
    return tuple(tags.values())


def _jsonable(value: Any, budget: list[int]) -> Any:
    """A JSON-safe copy of a YAML value, at most ``budget[0]`` values deep in all."""
    budget[0] -= 1
    if budget[0] < 0:
        return None
    if isinstance(value, dict):
        return {str(k): _jsonable(v, budget) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_jsonable(v, budget) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, datetime.date):
        return value.isoformat()
    return str(value)
