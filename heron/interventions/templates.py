"""Templates, not models: per kind a text and a spoken variant, filled from the facts.

The packaged ``templates.yml`` holds Heron's kinds; ``$HERON_HOME/interventions/
templates.yml`` may replace or add kinds. Every placeholder is checked against its kind's
declared facts when the file is loaded, so a typo is a ``ConfigError`` naming the kind
and the placeholder, never a blank in a message; a condition lacking a declared fact is
an ``InputError`` naming it. Placeholders are bare names (``{file}``): no attribute,
index, conversion or format spec, so a template cannot reach into a value or pad it to a
gigabyte.

>>> t = Templates.parse({"kinds": {"hi": {"facts": ["who"], "text": "Hi {who}.",
...     "spoken": "Hello {who}."}}}, "example")
>>> t.render("hi", {"who": ["alice", "bob"]}, seen_before=0).text
'Hi alice + bob.'
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from heron.errors import ConfigError, InputError
from heron.interventions.model import Action, Rendered
from heron.yamlsafe import load

_FORMATTER = string.Formatter()

#: The most characters a card's text keeps, and its spoken variant (about 25 s of
#: speech: what a voice renders, whatever the facts held).
MAX_TEXT = 4_000
MAX_SPOKEN = 400
#: A button's label, filled from facts, is cut here.
MAX_LABEL = 60


def placeholders(template: str, where: str) -> set[str]:
    """The names ``template`` fills; ``ConfigError`` for anything but ``{name}``.

    >>> sorted(placeholders("{a} and {b}", "x"))
    ['a', 'b']
    """
    try:
        parts = list(_FORMATTER.parse(template))
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}; write a literal brace as {{{{ or }}}}.") from exc
    names = set()
    for _, name, spec, conversion in parts:
        if name is None:
            continue
        if not name.isidentifier() or spec or conversion:
            raise ConfigError(
                f"{where}: placeholder {{{name}{'!' + conversion if conversion else ''}"
                f"{':' + spec if spec else ''}}} is not a bare fact name; write {{fact}}."
            )
        names.add(name)
    return names


def _text(value: Any) -> str:
    if isinstance(value, list | tuple):
        return " + ".join(_text(v) for v in value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "" if value is None else str(value)


@dataclass(frozen=True)
class Template:
    kind: str
    facts: tuple[str, ...]  # required: each a placeholder may use
    text: str
    spoken: str
    actions: tuple[Action, ...] = ()
    optional: tuple[str, ...] = ()  # kept when given, never in the words
    owner: str | None = None  # the Heron detector that alone raises it (not the API)


@dataclass(frozen=True)
class Templates:
    kinds: dict[str, Template]
    seen_text: str = " Seen before."
    seen_spoken: str = " This happened before."

    @classmethod
    def parse(cls, data: Any, source: str) -> Templates:
        """Templates from a loaded YAML document; ``source`` names it in errors."""
        if not isinstance(data, dict) or not isinstance(data.get("kinds"), dict):
            raise ConfigError(
                f"{source}: expected a mapping with 'kinds:'; see docs/interventions.md."
            )
        seen = data.get("seen_before") or {}
        kinds = {name: _template(name, spec, source) for name, spec in data["kinds"].items()}
        return cls(
            kinds,
            str(seen.get("text", cls.seen_text)),
            str(seen.get("spoken", cls.seen_spoken)),
        )

    def merged(self, other: Templates) -> Templates:
        """These templates with ``other``'s kinds (and seen-before words) over them."""
        return Templates(self.kinds | other.kinds, other.seen_text, other.seen_spoken)

    def template(self, kind: str) -> Template:
        found = self.kinds.get(kind)
        if found is None:
            raise InputError(
                f"Unknown intervention kind {kind!r}. Choose from: "
                f"{', '.join(sorted(self.kinds))}; or add it to "
                "$HERON_HOME/interventions/templates.yml."
            )
        return found

    def render(self, kind: str, facts: dict[str, Any], *, seen_before: int) -> Rendered:
        """The words of a ``kind`` condition with ``facts``. ``InputError`` names an unknown
        kind or a missing fact."""
        template = self.template(kind)
        self.check(kind, facts)
        values = {name: _text(facts[name]) for name in template.facts}
        seen = seen_before > 0
        return Rendered(
            _cut(template.text.format(**values), MAX_TEXT) + (self.seen_text if seen else ""),
            _cut(template.spoken.format(**values), MAX_SPOKEN) + (self.seen_spoken if seen else ""),
            tuple(
                Action(
                    _fill(a.label, values)[:MAX_LABEL],
                    a.method,
                    {k: _fill(v, values) for k, v in a.params.items()},
                )
                for a in template.actions
            ),
        )

    def check(self, kind: str, facts: dict[str, Any]) -> None:
        """``InputError`` unless ``facts`` has every fact ``kind`` declares."""
        template = self.template(kind)
        missing = [name for name in template.facts if name not in facts]
        if missing:
            raise InputError(
                f"A {kind} condition needs the facts {', '.join(template.facts)}; missing: "
                f"{', '.join(missing)}."
            )

    def declared(self, kind: str, facts: dict[str, Any]) -> dict[str, Any]:
        """Only the facts ``kind`` declares (required or optional): what is stored; the
        rest a caller sent is dropped. ``InputError`` as ``check``."""
        self.check(kind, facts)
        template = self.template(kind)
        return {k: facts[k] for k in (*template.facts, *template.optional) if k in facts}


def _cut(text: str, limit: int) -> str:
    """``text`` at most ``limit`` characters, cut at a word with an ellipsis."""
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    return (head.rsplit(" ", 1)[0] if " " in head[limit // 2 :] else head) + "…"


def _fill(value: Any, values: dict[str, str]) -> Any:
    return value.format(**values) if isinstance(value, str) else value


def _template(kind: str, spec: Any, source: str) -> Template:
    where = f"{source}, kind {kind!r}"
    if not isinstance(spec, dict):
        raise ConfigError(f"{where}: expected facts, text and spoken.")
    unknown = set(spec) - {"facts", "optional", "text", "spoken", "actions", "owner"}
    if unknown:
        raise ConfigError(
            f"{where}: unknown key {sorted(unknown)[0]!r}; use facts, optional, text, "
            "spoken, actions, owner."
        )
    facts = spec.get("facts") or []
    optional = spec.get("optional") or []
    for name, names in (("facts", facts), ("optional", optional)):
        if not isinstance(names, list) or not all(
            isinstance(f, str) and f.isidentifier() for f in names
        ):
            raise ConfigError(f"{where}: {name} is a list of names, e.g. [actors, file].")
    owner = spec.get("owner")
    if owner is not None and (not isinstance(owner, str) or not owner.strip()):
        raise ConfigError(f"{where}: owner names the detector that raises it, e.g. jobs.")
    for part in ("text", "spoken"):
        if not isinstance(spec.get(part), str) or not spec[part].strip():
            raise ConfigError(
                f'{where}: {part} is missing; give the words, e.g. "Conflict on {{file}}."'
            )
    texts = {"text": spec["text"], "spoken": spec["spoken"]}
    actions = []
    for n, action in enumerate(spec.get("actions") or []):
        if not isinstance(action, dict) or not {"label", "method"} <= set(action):
            raise ConfigError(f"{where}: action {n + 1} needs a label and a method.")
        params = action.get("params") or {}
        if not isinstance(params, dict):
            raise ConfigError(f"{where}: action {n + 1}'s params is a mapping.")
        texts |= {f"action {n + 1} {k}": v for k, v in params.items() if isinstance(v, str)}
        texts[f"action {n + 1} label"] = str(action["label"])
        actions.append(Action(str(action["label"]), str(action["method"]), dict(params)))
    for part, text in texts.items():
        undeclared = placeholders(text, f"{where}, {part}") - set(facts)
        if undeclared:
            raise ConfigError(
                f"{where}, {part}: {{{sorted(undeclared)[0]}}} is not among its facts "
                f"({', '.join(facts) or 'none'}); declare it under facts or fix the name."
            )
    return Template(
        kind,
        tuple(facts),
        spec["text"],
        spec["spoken"],
        tuple(actions),
        tuple(f for f in optional if f not in facts),
        owner,
    )


def user_templates_path(home: Path) -> Path:
    return home / "interventions" / "templates.yml"


def read_yaml(path: Path | None, package_file: str) -> tuple[Any, str]:
    """A YAML document from ``path``, or the packaged ``package_file``; with its name."""
    if path is None:
        text = resources.files("heron.interventions").joinpath(package_file).read_text("utf-8")
        return load(text), f"the packaged {package_file}"
    try:
        return load(path.read_text(encoding="utf-8")), str(path)
    except OSError as exc:
        raise ConfigError(f"Cannot read {path}: {exc.strerror}.") from exc
    except (yaml.YAMLError, InputError) as exc:
        raise ConfigError(f"{path} is not YAML Heron takes: {exc}.") from exc


def load_templates(home: Path) -> Templates:
    """The packaged templates, with the user's file over them when there is one."""
    templates = Templates.parse(*read_yaml(None, "templates.yml"))
    user = user_templates_path(home)
    if user.is_file():
        templates = templates.merged(Templates.parse(*read_yaml(user, "templates.yml")))
    return templates
