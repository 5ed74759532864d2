"""The games arena plays: the core's list (``_core.GAMES``, from ``ARENA_GAMES`` in
``arena/native/games.h``, one line per game) and one spec per game, ``arena.games.<name>.game.SPEC``,
in the game's own room ``arena/games/<name>/`` (``arena/games/spec.py`` says what a spec holds;
``docs/games.md`` walks through adding a game).
A game's module is found by its name when its spec is first asked for (``spec``): the registry
imports no game, so a game may import anything below ``make`` (envs' tables, the agents' bots).
"""

from __future__ import annotations

import importlib
from functools import cache

from arena import _core
from arena.games.spec import GameSpec

GAMES: tuple[str, ...] = tuple(_core.GAMES)
# The game ``make``, the adapters, evaluation and the trainer play when none is named.
DEFAULT_GAME = "midrange"


@cache
def spec(name: str) -> GameSpec:
    """The spec of game ``name``; a ``ValueError`` naming the games for an unknown one."""
    if name not in GAMES:
        raise ValueError(f"unknown game {name!r}; available: {', '.join(GAMES)}")
    found = importlib.import_module(f"arena.games.{name}.game").SPEC
    if not isinstance(found, GameSpec) or found.name != name:
        raise RuntimeError(f"arena.games.{name}.game.SPEC must be the GameSpec of {name!r}, got {found!r}")
    return found


def require(game: str, feature: str, what: str) -> None:
    """Raises ``ValueError`` naming the games that support ``feature`` (``GameSpec.features``) when
    game ``game`` does not."""
    if feature not in spec(game).features:
        able = [name for name in GAMES if feature in spec(name).features]
        raise ValueError(f"{what} works for the games {', '.join(able)}, not {game!r}")


__all__ = ["DEFAULT_GAME", "GAMES", "GameSpec", "require", "spec"]
