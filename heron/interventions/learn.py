"""The learning loop: what people do with a kind's cards in a room moves its policy, by
one documented, deterministic rule (docs/interventions.md, "Learning").

Per kind and room the store keeps a **step** (0: the policy as written) and counts the
accepts and dismissals given, in blocks of ``outcomes``. When a block is full it is
decided, and a new one starts:

- **Step down** when the dismissed share of the block is at or above ``dismiss_rate``:
  each channel's severity floor moves up one rank (``info`` < ``warning`` <
  ``critical`` < never), so a warning conflict that went out as a card and a message
  goes out as a card only, and the room's cooldown for the kind is multiplied by
  ``cooldown_factor`` once more. At most ``MAX_STEP`` steps.
- **Step up** (back towards the policy) when the accepted share of the block is at or
  above ``accept_rate``.

Each change is recorded with its reason; an operator's reset
(``heron interventions reset KIND --room R``) puts the step back to 0. Kinds whose policy
says ``learn: false`` (what a person asked for, or must hear) never move.

>>> rule = Learning(outcomes=10, dismiss_rate=0.8, accept_rate=0.5)
>>> rule.next_step(0, accepted=1, dismissed=9)
(1, '9 of the last 10 outcomes were dismissals (at least 80%): one step down')
>>> rule.next_step(1, accepted=6, dismissed=4)
(0, '6 of the last 10 outcomes were accepts (at least 50%): one step back up')
>>> rule.next_step(1, accepted=3, dismissed=6) is None   # the block is not full
True
>>> rule.floor("warning", 1), rule.floor("critical", 1), rule.floor("warning", 2)
('critical', 'never', 'never')
"""

from __future__ import annotations

from dataclasses import dataclass

from heron.interventions.model import SEVERITIES

#: The ladder a channel's floor climbs one rank per step.
LADDER: tuple[str, ...] = (*SEVERITIES, "never")
#: Enough to silence every channel but the card, from a floor of ``info``.
MAX_STEP = len(LADDER) - 1


@dataclass(frozen=True)
class Learning:
    """The rule's bounds (``HERON_INTERVENTIONS_LEARN_*``)."""

    outcomes: int = 10
    dismiss_rate: float = 0.8
    accept_rate: float = 0.5
    cooldown_factor: float = 2.0

    def next_step(self, step: int, *, accepted: int, dismissed: int) -> tuple[int, str] | None:
        """The step after a block of outcomes and why, or ``None`` when it stays (or the
        block is not full yet)."""
        given = accepted + dismissed
        if given < self.outcomes:
            return None
        if step < MAX_STEP and dismissed >= self.dismiss_rate * given:
            return step + 1, (
                f"{dismissed} of the last {given} outcomes were dismissals (at least "
                f"{self.dismiss_rate:.0%}): one step down"
            )
        if step > 0 and accepted >= self.accept_rate * given:
            return step - 1, (
                f"{accepted} of the last {given} outcomes were accepts (at least "
                f"{self.accept_rate:.0%}): one step back up"
            )
        return None

    @staticmethod
    def floor(floor: str, step: int) -> str:
        """A channel's severity floor ``step`` ranks up the ladder (``never`` stays)."""
        return LADDER[min(LADDER.index(floor) + step, MAX_STEP)]

    def cooldown(self, cooldown: float, step: int) -> float:
        """The room's cooldown for a kind at ``step`` (0 stays 0: an exempt kind)."""
        return cooldown * self.cooldown_factor**step
