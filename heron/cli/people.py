"""``heron people``: a room's roster (join, leave, list), a ping to a teammate on their own
channel, and what a person does outside Heron (``activity``), for a script, an editor
hook or a terminal: the ``people.*`` methods of the server, from the command line.

The roster and pings are the interventions' (``heron.interventions.Interventions``: join,
leave, roster, ping), run in-process on the home's store as ``heron interventions`` is.
Activity feeds the collision and research-overlap detectors, which live in the running
server's memory (``heron.wiring.Observers``): ``activity`` goes to this home's
``heron serve`` (``heron.cli.remote.require``) and says how to start one when none runs.
Text from the store is printed with its control characters escaped (``safe``)."""

from __future__ import annotations

import getpass
from typing import TYPE_CHECKING, Annotated, Any

import typer

from heron.cli import remote
from heron.cli.interventions import JsonFlag, opened, safe
from heron.cli.output import console, print_json
from heron.cli.settings import command_settings
from heron.errors import InputError

if TYPE_CHECKING:
    from heron.interventions import Intervention

#: ``people.activity``'s kinds (``heron.wiring.ActivityReport``), written out so
#: that --help need not import the agent (tests/interventions/test_people_cli.py checks).
ACTIVITY_KINDS = ("edit", "release", "read", "search")

people_app = typer.Typer(
    help="People in a room: its roster, pings to a teammate, what they work on.",
    no_args_is_help=True,
)

Room = Annotated[
    str | None, typer.Option("--room", help="The room; default: HERON_INTERVENTIONS_ROOM.")
]
Person = Annotated[str, typer.Argument(help="The person: their name.")]


def _room(room: str | None) -> str:

    return room if room is not None else command_settings().interventions.room


def _card(item: Intervention | dict[str, Any], as_json: bool) -> None:
    data = item if isinstance(item, dict) else item.to_dict()
    if as_json:
        print_json(data)
        return
    console.print(safe(f"{data['id']:>6} {data['room']} {data['kind']}: {data['text']}"))


@people_app.command("join")
def join(
    person: Person,
    room: Room = None,
    channel: Annotated[
        str | None,
        typer.Option(
            help="Where a ping to them goes: page (the room's cards) or an apprise URL "
            "(json://host/hook, ntfy://topic, slack://...); default: the one they have, "
            "else page."
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Put a person in a room's roster, with the channel their pings go to.

    Example: heron people join bob --room voice-team --channel json://hooks.example/bob
    """
    with opened() as service:
        member = service.join(_room(room), person, channel)
    if as_json:
        print_json(member.to_dict())
        return
    console.print(safe(f"{member.person} is in room {member.room}; pings go to {member.shown}"))


@people_app.command("leave")
def leave(person: Person, room: Room = None, as_json: JsonFlag = False) -> None:
    """Take a person out of a room's roster.

    Example: heron people leave bob --room voice-team
    """
    where = _room(room)
    with opened() as service:
        left = service.leave(where, person)
    if as_json:
        print_json({"room": where, "person": person, "left": left})
        return
    said = "left" if left else "was not in"
    console.print(safe(f"{person} {said} room {where}"))


@people_app.command("list")
def list_(room: Room = None, as_json: JsonFlag = False) -> None:
    """A room's roster: who is in it and where a ping to each goes, by name.

    Example: heron people list --room voice-team --json
    """
    where = _room(room)
    with opened() as service:
        members = service.roster(where)
    if as_json:
        print_json([m.to_dict() for m in members])
        return
    for m in members:
        console.print(safe(f"{m.person:<24} {m.shown}"))
    if not members:
        console.print(safe(f"Nobody is in room {where} yet; add someone: heron people join NAME"))


@people_app.command("ping")
def ping(
    teammate: Annotated[str, typer.Argument(help="Whom to ping: a name in the room's roster.")],
    about: Annotated[str, typer.Option("--about", help="The file or topic to sync up on.")],
    room: Room = None,
    by: Annotated[str | None, typer.Option(help="Who pings; default: your user name.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Ask a teammate to sync up: a ping card in the room, sent to their channel alone.

    Example: heron people ping bob --about backend/voice/livekit.py --room voice-team
    """
    with opened() as service:
        item = service.ping(_room(room), by or getpass.getuser(), teammate, about)
        service.wait()  # the message to their channel is sent before the command ends
        item = service.get(item.id) if item.id else item
    _card(item, as_json)


@people_app.command("activity")
def activity(
    person: Person,
    kind: Annotated[str, typer.Argument(help=f"One of: {', '.join(ACTIVITY_KINDS)}.")],
    room: Room = None,
    path: Annotated[str, typer.Option(help="The file, for edit and release.")] = "",
    text: Annotated[str, typer.Option(help="What is read or searched: a title, words.")] = "",
    heading: Annotated[
        list[str] | None, typer.Option("--heading", help="A heading of the file (repeatable).")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Report what a person edits or reads outside Heron; prints the cards it raised.

    Sent to this home's running heron serve, whose detectors see who works on what.

    Example: heron people activity alice edit --path backend/voice/livekit.py --room voice-team
    """
    if kind not in ACTIVITY_KINDS:
        raise InputError(f"Unknown activity {kind!r}. Choose from: {', '.join(ACTIVITY_KINDS)}.")
    params = {
        "room": _room(room),
        "person": person,
        "kind": kind,
        "path": path,
        "text": text,
        "headings": heading or [],
    }
    raised = remote.require("people activity", "people.activity", params)
    if as_json:
        print_json(raised)
        return
    for card in raised:
        _card(card, as_json)
    if not raised:
        console.print(safe(f"Reported {person}'s {kind} in room {params['room']}; no card raised"))
