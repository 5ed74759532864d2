"""Player specs: the names by which training, the league and evaluation address a player, and the
one parser of them (``parse_player``).

- ``"mirror"``: the learner itself (in training, where the learner drives both teams);
- ``"scripted:<name>"``: a scripted bot of the game (``arena.agents.scripted.SCRIPTED_BOTS``);
- ``"checkpoint:<path>"`` or a path to an existing file: a policy file;
- ``"league:<run_dir>"``: what the league in that run directory publishes;
- ``"sb3:<path>.zip"``: a Stable-Baselines3 model (``arena.agents.sb3``);
- anything else: an id some other part registered (a league's players), or a missing file.

Parsing a name needs nothing but the name (and whether a file of that name exists), so this module
imports nothing of arena's and sits below everything that names players: the game specs (their
bots), the agents, the trainer, the league and evaluation. ``arena.agents.players`` resolves a
parsed spec into something that acts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

MIRROR = "mirror"
SCRIPTED_PREFIX = "scripted:"
CHECKPOINT_PREFIX = "checkpoint:"
LEAGUE_PREFIX = "league:"
SB3_PREFIX = "sb3:"
PlayerKind = Literal["mirror", "scripted", "checkpoint", "league", "sb3", "id"]


@dataclass(frozen=True)
class PlayerSpec:
    """A parsed player name: its kind and its bare name (the bot's name without the prefix, the
    file's path, or the id)."""

    kind: PlayerKind
    name: str

    @property
    def id(self) -> str:
        """The canonical id: ``mirror``, ``scripted:<name>``, ``sb3:<path>``, the path, or the id itself."""
        if self.kind == "scripted":
            return SCRIPTED_PREFIX + self.name
        return SB3_PREFIX + self.name if self.kind == "sb3" else self.name


def parse_player(spec: str) -> PlayerSpec:
    """The kind and name of player spec ``spec`` (see the module docstring); ``ValueError`` for an
    empty one or a bare ``scripted:``."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"player spec {spec!r} must be a non-empty string")
    if spec == MIRROR:
        return PlayerSpec("mirror", spec)
    if spec.startswith(SCRIPTED_PREFIX):
        bare = spec.removeprefix(SCRIPTED_PREFIX)
        if not bare:
            raise ValueError(f"player spec {spec!r} names no bot: use 'scripted:<name>'")
        return PlayerSpec("scripted", bare)
    if spec.startswith(CHECKPOINT_PREFIX):
        return PlayerSpec("checkpoint", spec.removeprefix(CHECKPOINT_PREFIX))
    if spec.startswith(LEAGUE_PREFIX):
        bare = spec.removeprefix(LEAGUE_PREFIX)
        if not bare:
            raise ValueError(f"player spec {spec!r} names no run directory: use 'league:<run_dir>'")
        return PlayerSpec("league", bare)
    if spec.startswith(SB3_PREFIX):
        bare = spec.removeprefix(SB3_PREFIX)
        if not bare:
            raise ValueError(f"player spec {spec!r} names no file: use 'sb3:<path>.zip'")
        return PlayerSpec("sb3", bare)
    if os.path.isfile(spec):
        return PlayerSpec("checkpoint", spec)
    return PlayerSpec("id", spec)


def scripted_id(name: str) -> str:
    """``scripted:<name>`` for a bot's name given with or without the prefix."""
    return SCRIPTED_PREFIX + name.removeprefix(SCRIPTED_PREFIX)
