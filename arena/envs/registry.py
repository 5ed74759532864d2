"""How ``make`` builds a game's vector env, from the game's spec (``arena/games/``)."""

from __future__ import annotations

import os
from typing import Any

from arena.envs.vector import VectorEnv
from arena.games import GAMES, spec
from arena.games.spec import validate_team_sizes

MAX_ENVS = 1 << 22


def default_num_threads() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def build_params(name: str, sizes: tuple[int, int], overrides: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """Validated parameter values of game ``name`` and the core's parameter object for them."""
    return spec(name).validate(overrides, sizes)


def make(
    name: str,
    num_envs: int = 1,
    num_threads: int | None = None,
    seed: int = 0,
    device: str = "cpu",
    team_sizes: tuple[int, int] | list[int] = (1, 1),
    **overrides: Any,
) -> VectorEnv:
    """Builds a vector env of ``num_envs`` matches of game ``name``.

    Every default of the game is a keyword override, e.g.
    ``make("midrange", num_envs=4096, team_sizes=(2, 2), time_limit_s=120, arena_radius_m=80_000)``.
    """
    if name not in GAMES:
        raise ValueError(f"unknown game {name!r}; available: {', '.join(GAMES)}")
    if isinstance(num_envs, bool) or not isinstance(num_envs, int) or not 1 <= num_envs <= MAX_ENVS:
        raise ValueError(f"num_envs={num_envs!r} is out of range: allowed an integer in [1, {MAX_ENVS}]")
    if num_threads is None:
        num_threads = default_num_threads()
    if isinstance(num_threads, bool) or not isinstance(num_threads, int) or not 1 <= num_threads <= 1024:
        raise ValueError(f"num_threads={num_threads!r} is out of range: allowed an integer in [1, 1024]")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed={seed!r} must be a non-negative integer")
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device={device!r} is not allowed: use 'cpu' or 'cuda'")
    game = spec(name)
    sizes = validate_team_sizes(team_sizes, max(spec(g).max_team for g in GAMES))
    values, params = game.validate(overrides, sizes)
    if game.core_batch is None:
        raise RuntimeError(f"game {name!r} names no core batch class (GameSpec.core_batch)")
    core = game.core_batch(params, num_envs, num_threads, device)
    env = VectorEnv(name, core, team_sizes=sizes, params=values, seed=seed, event_names=game.events)
    env.reset(seed)
    return env
