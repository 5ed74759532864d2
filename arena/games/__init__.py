"""The games arena plays: the core's list (``_core.GAMES``, from ``ARENA_GAMES`` in
``arena/native/games.h``, one line per game) and one spec per game, ``arena.games.<name>.SPEC``
(``arena/games/spec.py`` says what a spec holds; ``docs/games.md`` walks through adding a game).
"""

from __future__ import annotations

import importlib
from functools import cache

from arena import _core
from arena.games.spec import GameSpec

GAMES: tuple[str, ...] = tuple(_core.GAMES)


@cache
def spec(name: str) -> GameSpec:
    """The spec of game ``name``; a ``ValueError`` naming the games for an unknown one."""
    if name not in GAMES:
        raise ValueError(f"unknown game {name!r}; available: {', '.join(GAMES)}")
    found = importlib.import_module(f"arena.games.{name}").SPEC
    if not isinstance(found, GameSpec) or found.name != name:
        raise RuntimeError(f"arena.games.{name}.SPEC must be the GameSpec of {name!r}, got {found!r}")
    return found


__all__ = ["GAMES", "GameSpec", "spec"]
