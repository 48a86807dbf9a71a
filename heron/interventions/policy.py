"""Policy: which channels an intervention goes to, per kind, from YAML.

The least intrusive channel that fits: a card always; a message through the alert
channels from a severity up (``warning`` by default, when channels are configured);
voice only for ``critical``. See the packaged ``policy.yml``.

>>> policy = Policy.parse({"default": {"message": "warning", "voice": "critical"}}, "x")
>>> policy.channels("collision", "warning")
('card', 'message')
>>> policy.channels("collision", "critical")
('card', 'message', 'voice')
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from heron.errors import ConfigError
from heron.interventions.learn import Learning
from heron.interventions.model import SEVERITIES, Channel, severity_rank
from heron.interventions.templates import read_yaml

NEVER = "never"


@dataclass(frozen=True)
class Rule:
    message: str = "warning"  # lowest severity sent as a message, or "never"
    voice: str = "critical"  # "critical" or "never"
    cooldown: bool = True  # false: neither held back by the room's cooldown nor starting it
    learn: bool = True  # false: outcomes never move this kind (heron.interventions.learn)

    def channels(self, severity: str, step: int = 0) -> tuple[Channel, ...]:
        """The channels at ``severity``, each floor moved ``step`` ranks up (``learn``)."""
        chosen: list[Channel] = ["card"]
        for channel, floor in (("message", self.message), ("voice", self.voice)):
            floor = Learning.floor(floor, step)
            if floor != NEVER and severity_rank(severity) >= severity_rank(floor):
                chosen.append(channel)  # type: ignore[arg-type]
        return tuple(chosen)


def _rule(spec: Any, where: str, base: Rule) -> Rule:
    if not isinstance(spec, dict) or set(spec) - {"message", "voice", "cooldown", "learn"}:
        raise ConfigError(
            f"{where}: expected message, voice, cooldown and learn, e.g. {{message: warning}}."
        )
    cooldown = spec.get("cooldown", base.cooldown)
    learn = spec.get("learn", base.learn)
    if not isinstance(cooldown, bool) or not isinstance(learn, bool):
        raise ConfigError(f"{where}: cooldown and learn are true or false.")
    message = str(spec.get("message", base.message))
    voice = str(spec.get("voice", base.voice))
    if message not in (*SEVERITIES, NEVER):
        raise ConfigError(
            f"{where}: message {message!r}; choose from {', '.join((*SEVERITIES, NEVER))}."
        )
    if voice not in ("critical", NEVER):
        raise ConfigError(f"{where}: voice {voice!r}; voice is for critical only (or never).")
    return Rule(message, voice, cooldown, learn)


@dataclass(frozen=True)
class Policy:
    default: Rule
    kinds: dict[str, Rule]

    @classmethod
    def parse(cls, data: Any, source: str) -> Policy:
        if not isinstance(data, dict) or set(data) - {"default", "kinds"}:
            raise ConfigError(f"{source}: expected 'default:' and 'kinds:'.")
        default = _rule(data.get("default") or {}, f"{source}, default", Rule())
        kinds = data.get("kinds") or {}
        if not isinstance(kinds, dict):
            raise ConfigError(f"{source}: kinds is a mapping of kind to rule.")
        rules = {k: _rule(v, f"{source}, kind {k!r}", default) for k, v in kinds.items()}
        return cls(default, rules)

    def merged(self, other: Policy) -> Policy:
        return Policy(other.default, self.kinds | other.kinds)

    def rule(self, kind: str) -> Rule:
        return self.kinds.get(kind, self.default)

    def channels(self, kind: str, severity: str, step: int = 0) -> tuple[Channel, ...]:
        return self.rule(kind).channels(severity, step)


def load_policy(home: Path) -> Policy:
    """The packaged policy, with ``$HERON_HOME/interventions/policy.yml`` over it."""
    policy = Policy.parse(*read_yaml(None, "policy.yml"))
    user = home / "interventions" / "policy.yml"
    if user.is_file():
        policy = policy.merged(Policy.parse(*read_yaml(user, "policy.yml")))
    return policy
