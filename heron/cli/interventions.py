"""``heron interventions``: raise, resolve, record outcomes, list and count interventions,
see and reset what the learning loop changed, and prune by the retention rule.

Text from the store (a notice's words, a room's name) is printed with its control
characters escaped (an escape character shows as ``\\x1b``), so no data can drive the
terminal. The interventions' service and the settings are imported when a command runs
(the rule in ``heron.cli``'s docstring)."""

from __future__ import annotations

import getpass
import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from heron.cli.output import console, print_json
from heron.cli.settings import command_settings
from heron.errors import InputError

if TYPE_CHECKING:
    from heron.interventions import Intervention, Interventions

#: ``heron.interventions.SEVERITIES``, written out so that --help need not import the
#: interventions (tests/cli/test_startup.py checks they agree).
SEVERITIES = ("info", "warning", "critical")

interventions_app = typer.Typer(
    help="Notices for detected conditions: cards, messages, voice; never nagging.",
    no_args_is_help=True,
)

JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON.")]
Room = Annotated[str, typer.Option("--room", help="The room: who shares the condition.")]
Key = Annotated[str, typer.Argument(help="The condition's identity, e.g. collision:README.md.")]


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def safe(text: str) -> str:
    """``text`` for a terminal: control characters escaped, then Rich markup."""
    return escape(_CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text))


@contextmanager
def opened() -> Iterator[Interventions]:
    from heron.interventions import open_interventions

    with open_interventions(command_settings()) as service:  # closing waits for messages being sent
        yield service


def _line(item: Intervention) -> str:
    state = item.status if not item.delivered else ("resolved" if item.resolved_at else "active")
    done = f" {item.outcome} by {item.outcome_by}" if item.outcome else ""
    return safe(f"{item.id:>6} {state:<20} {item.room} {item.kind}: {item.text}{done}")


def _print(item: Intervention, as_json: bool) -> None:
    if as_json:
        print_json(item.to_dict())
        return
    console.print(_line(item))
    for d in item.deliveries:
        outcome = "ok" if d.ok else f"failed ({d.error})"
        console.print(safe(f"        {d.channel} {d.target}: {outcome}, {d.attempts} attempt(s)"))


def _run(action: Callable[[Interventions], Intervention], as_json: bool) -> None:
    with opened() as service:
        item = action(service)
        service.wait()
        if item.id:  # a suppressed raise is counted, not stored: it has no id to read
            item = service.get(item.id)
    _print(item, as_json)


@interventions_app.command("raise")
def raise_(
    kind: Annotated[str, typer.Argument(help="The kind: collision, notice, watchdog_incident...")],
    key: Key,
    room: Room = "default",
    severity: Annotated[str, typer.Option(help=f"One of: {', '.join(SEVERITIES)}.")] = "warning",
    fact: Annotated[
        list[str] | None, typer.Option("--fact", help="NAME=VALUE (repeatable).")
    ] = None,
    facts_json: Annotated[
        str | None, typer.Option("--facts", help='All facts as JSON: {"file": "a.py"}.')
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Raise a condition: sent if the room's cooldown and the key's guard allow it.

    Example: heron interventions raise notice deploy --room team --fact message="Deploying"
    """
    facts: dict[str, Any] = {}
    if facts_json:
        try:
            facts = json.loads(facts_json)
        except json.JSONDecodeError as exc:
            raise InputError(
                f'--facts is not JSON ({exc.msg}); e.g. --facts \'{{"file": "a.py"}}\'.'
            ) from exc
    for item in fact or []:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise InputError(f"--fact takes NAME=VALUE, got {item!r}.")
        facts[name.strip()] = value
    who = getpass.getuser()
    _run(lambda s: s.raise_(kind, key, room, severity, facts, actor=who), as_json)  # type: ignore[arg-type]


@interventions_app.command("resolve")
def resolve(key: Key, room: Room = "default", as_json: JsonFlag = False) -> None:
    """End an active condition: its key re-arms.

    Example: heron interventions resolve collision:README.md --room team
    """
    _run(lambda s: s.resolve(room, key), as_json)


@interventions_app.command("outcome")
def outcome(
    intervention_id: Annotated[int, typer.Argument(help="The intervention's id.")],
    decision: Annotated[str, typer.Argument(help="accept or dismiss.")],
    by: Annotated[str | None, typer.Option(help="Who decided; default: your user name.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Record what a person did with an intervention, once.

    Example: heron interventions outcome 42 accept --by alice
    """
    _run(lambda s: s.outcome(intervention_id, decision, by or getpass.getuser()), as_json)


@interventions_app.command("list")
def list_(
    room: Annotated[str | None, typer.Option(help="Only this room's.")] = None,
    limit: Annotated[int, typer.Option(help="At most this many, newest first.")] = 50,
    active: Annotated[bool, typer.Option("--active", help="Only active ones.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """List interventions, newest first.

    Example: heron interventions list --room team --active
    """
    with opened() as service:
        found = service.list(room, limit=limit, active_only=active)
    if as_json:
        print_json([item.to_dict() for item in found])
        return
    for item in found:
        console.print(_line(item))
    if not found:
        console.print("No interventions yet; raise one with: heron interventions raise ...")


@interventions_app.command("stats")
def stats(
    room: Annotated[str | None, typer.Option(help="Only this room's learning.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Per kind: raised, delivered, suppressed, accepted, dismissed; what learning changed.

    Suppressed by cooldown or guard; the learning loop's changes per kind and room, and why.

    Example: heron interventions stats --room team
    """
    with opened() as service:
        kinds = [s.to_dict() for s in service.stats()]
        learned = [item.to_dict() for item in service.learned(room)]
        changes = [change.to_dict() for change in service.changes(room, limit=20)]
    if as_json:
        print_json({"kinds": kinds, "learned": learned, "changes": changes})
        return

    def pct(value: float | None) -> str:
        return "-" if value is None else f"{value:.0%}"

    console.print("kind                 raised delivered cooldown guard accept dismiss")
    for r in kinds:
        console.print(
            safe(
                f"{r['kind']:<20} {r['raised']:>6} {r['delivered']:>9} "
                f"{r['suppressed_cooldown']:>8} {r['suppressed_guard']:>5} "
                f"{pct(r['accept_rate']):>6} {pct(r['dismiss_rate']):>7}"
            )
        )
    if not kinds:
        console.print("No interventions yet.")
    moved = [item for item in learned if item["step"]]
    if moved:
        console.print("\nlearned (room kind: steps down from the policy; reset with heron "
                      "interventions reset KIND --room ROOM)")  # fmt: skip
        for item in moved:
            console.print(safe(f"  {item['room']} {item['kind']}: {item['step']}"))
    if changes:
        console.print("\npolicy changes, newest first")
        for c in changes:
            console.print(
                safe(
                    f"  {c['id']:>5} {c['room']} {c['kind']}: step {c['from_step']} -> "
                    f"{c['to_step']} by {c['by']}: {c['reason']}"
                )
            )


@interventions_app.command("reset")
def reset(
    kind: Annotated[str, typer.Argument(help="The kind whose learning to undo, e.g. collision.")],
    room: Room = "default",
    as_json: JsonFlag = False,
) -> None:
    """Put a kind in a room back at its policy, undoing what the learning loop stepped down.

    The reset is recorded as a change by you.

    Example: heron interventions reset collision --room team
    """
    with opened() as service:
        done = service.reset(room, kind, getpass.getuser())
    if as_json:
        print_json(done.to_dict())
        return
    console.print(safe(f"{done.room} {done.kind}: back at its policy (step {done.step})."))


@interventions_app.command("prune")
def prune(as_json: JsonFlag = False) -> None:
    """Apply the retention rule now; the server and raises also run it every minute.

    The rule: HERON_INTERVENTIONS_KEEP_DAYS, _KEEP_PER_ROOM and _AUDIO_KEEP.

    Example: heron interventions prune --json
    """
    with opened() as service:
        done = service.prune().to_dict()
    if as_json:
        print_json(done)
        return
    console.print(
        f"Removed {done['interventions']} interventions, {done['suppressed']} suppressed "
        f"counts, {done['changes']} policy changes and {done['audio']} audio files."
    )
