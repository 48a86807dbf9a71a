# ruff: noqa: F811 (pytest fixtures named by the parameters that receive them)
"""Attacks on the interventions' storage (issue 33): what a raise may cost is bounded by
rule, and actions come from their source of truth.

- Only the facts a kind declares are kept, each capped; a suppressed raise is counted,
  not stored; spoken text is cut; audio is capped while written, streamed when served,
  deleted when its card resolves and pruned by age and count; history is pruned by age
  and count per room.
- The API (and the CLI) cannot raise the kinds Heron's own detectors own: no caller can
  make a Confirm card for a real waiting job with words of its choosing.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from heron.errors import InputError
from heron.interventions import Interventions, interventions_db_path
from heron.interventions.model import MAX_FACT, MAX_ITEM, MAX_ITEMS
from heron.interventions.service import audio_folder
from heron.interventions.templates import MAX_SPOKEN
from heron.interventions.voice import CHUNK, MAX_AUDIO_BYTES
from heron.server.features.interventions import open_audio
from tests.interventions.conftest import (  # noqa: F401 (the interventions tests' fixtures)
    COLLISION,
    make_service,
    service,
    settings,
)

MB = 1024 * 1024


def program(tmp_path: Path, name: str, body: str) -> str:
    """A text-to-speech program of the attacker's choosing (or a quick honest one)."""
    path = tmp_path / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return str(path)


def database_bytes(service: Interventions) -> int:
    path = interventions_db_path(service.settings)
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def test_only_declared_facts_are_kept_each_capped(service: Interventions) -> None:
    facts = {
        "message": "m" * 1_000_000,
        "undeclared": "u" * 1_000_000,
        "also": [{"deep": "x" * 10_000}] * 1000,
    }
    sent = service.raise_("notice", "big", "team", "info", facts)
    assert set(sent.facts) == {"message"} and len(sent.facts["message"]) == MAX_FACT
    listed = service.raise_(
        "collision", "collision:f", "other", facts=COLLISION | {"actors": ["a" * 5000] * 500}
    )
    assert len(listed.facts["actors"]) == MAX_ITEMS
    assert {len(a) for a in listed.facts["actors"]} == {MAX_ITEM}
    assert database_bytes(service) < 1 * MB


def test_suppressed_raises_are_counted_not_stored(service: Interventions) -> None:
    service.raise_("collision", "collision:README.md", "team", facts=COLLISION)
    before = database_bytes(service)
    padding = {"padding": "p" * 600_000, "file": "f" * 600_000}
    for _ in range(20):
        held = service.raise_("collision", "collision:README.md", "team", facts=COLLISION | padding)
        assert held.status == "suppressed_guard" and held.id == 0
    assert database_bytes(service) - before < 256 * 1024  # was 13 MB for these 20
    (stats,) = [s for s in service.stats() if s.kind == "collision"]
    assert (stats.raised, stats.delivered, stats.suppressed_guard) == (21, 1, 20)
    assert len(service.list("team")) == 1


def test_spoken_text_is_cut_and_audio_is_capped_while_written(
    make_service: Callable[..., Interventions], tmp_path: Path
) -> None:
    # A program that never stops talking: the file is refused past the cap, mid-write.
    endless = program(tmp_path, "talker", "printf RIFF; exec /bin/cat /dev/zero")
    service = make_service(interventions={"tts_program": endless})
    long = " ".join(["word"] * 10_000)
    sent = service.raise_("notice", "long", "team", "critical", {"message": long})
    assert len(sent.spoken) <= MAX_SPOKEN and sent.spoken.endswith("…")
    (voice,) = [d for d in sent.deliveries if d.channel == "voice"]
    assert not voice.ok and f"over {MAX_AUDIO_BYTES // MB} MiB" in (voice.error or "")
    assert sent.audio_url is None
    assert list(audio_folder(service.settings).iterdir()) == []  # no partial file left


def test_audio_is_deleted_when_its_card_resolves_and_pruned_by_count(
    make_service: Callable[..., Interventions], tmp_path: Path
) -> None:
    quick = program(tmp_path, "speaker", "printf 'RIFF0000WAVEfake'")
    service = make_service(interventions={"tts_program": quick, "cooldown": 0, "audio_keep": 2})
    folder = audio_folder(service.settings)
    first = service.raise_("notice", "n0", "team", "critical", {"message": "down"})
    assert first.audio_url and (folder / f"{first.id}.wav").is_file()
    service.resolve("team", "n0")
    assert not (folder / f"{first.id}.wav").exists()  # the condition is over
    for n in range(1, 5):
        service.raise_("notice", f"n{n}", "team", "critical", {"message": "down"})
    assert len(list(folder.iterdir())) == 4
    assert service.prune().audio == 2
    assert len(list(folder.iterdir())) == 2


def test_audio_is_served_a_chunk_at_a_time(tmp_path: Path) -> None:
    (tmp_path / "7.wav").write_bytes(b"RIFF" + b"\0" * (3 * CHUNK))
    found = open_audio(tmp_path, "7.wav")
    assert found is not None
    chunks, size = found
    first = next(iter(chunks))
    assert size == 3 * CHUNK + 4 and len(first) == CHUNK  # never the whole file at once
    assert len(b"".join([first, *chunks])) == size
    os.symlink(tmp_path / "7.wav", tmp_path / "8.wav")
    assert open_audio(tmp_path, "8.wav") is None


def test_history_is_pruned_by_age_and_count_per_room(
    make_service: Callable[..., Interventions],
) -> None:
    service = make_service(interventions={"cooldown": 0, "keep_per_room": 5})
    for n in range(12):
        service.raise_("notice", f"a{n}", "a", "info", {"message": f"a{n}"})
    for n in range(3):
        service.raise_("notice", f"b{n}", "b", "info", {"message": f"b{n}"})
    service.raise_("notice", "a11", "a", "info", {"message": "again"})  # counted
    pruned = service.prune()
    assert (pruned.interventions, pruned.suppressed) == (7, 0)
    assert [i.key for i in service.list("a")] == [f"a{n}" for n in range(11, 6, -1)]
    assert len(service.list("b")) == 3
    # A pruned active card takes its guard with it: the key goes out again.
    assert service.raise_("notice", "a0", "a", "info", {"message": "a0"}).delivered
    aged = service.store.prune(before=float("inf"), keep_per_room=5)[0]
    assert aged.interventions == 9 and aged.suppressed == 1
    assert service.list() == [] and service.stats() == []


@pytest.mark.parametrize("kind", ["job_waiting", "job_failed", "library_stale", "ping"])
def test_callers_cannot_raise_the_kinds_heron_detectors_own(
    service: Interventions, kind: str
) -> None:
    # A waiting deploy job's card with a prompt of the caller's choosing, whose Confirm
    # would confirm the real job: refused, nothing stored.
    facts = {"job_id": "9f3c", "prompt": "rotate the logs (harmless)"}
    with pytest.raises(InputError, match=r"raised by Heron's \w+ detector"):
        service.raise_(kind, f"{kind}:9f3c", "default", facts=facts)
    assert service.list() == [] and service.stats() == []
