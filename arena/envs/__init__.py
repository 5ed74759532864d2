"""The Python face of the native core: ``make``, the vector env, outcomes and adapters."""

from arena.envs.outcomes import EndReason, Outcome
from arena.envs.registry import GAMES, make
from arena.envs.vector import VectorEnv

__all__ = ["GAMES", "EndReason", "Outcome", "VectorEnv", "make"]
