"""The Python face of the native core: ``make``, the vector env, outcomes and adapters.

The PettingZoo and Gymnasium adapters load on first use, so ``import arena`` stays light.
"""

from typing import Any

from arena.envs.outcomes import EndReason, Outcome
from arena.envs.registry import GAMES, make
from arena.envs.vector import VectorEnv

_LAZY = {
    "ArenaParallelEnv": "arena.envs.pettingzoo_env",
    "ArenaSingleAgentEnv": "arena.envs.gymnasium_env",
}

__all__ = ["GAMES", "ArenaParallelEnv", "ArenaSingleAgentEnv", "EndReason", "Outcome",
           "VectorEnv", "make"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'arena.envs' has no attribute {name!r}")
