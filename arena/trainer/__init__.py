"""PPO+LSTM training: rollout (``evaluate``), update (``train``), metrics (``mean_and_log``), checkpoints.

Names are imported on first use, so ``arena.trainer.telemetry.loggers`` and
``arena.trainer.telemetry.dashboard`` load without torch.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "PPOTrainer": "arena.trainer.ppo",
    "TrainerConfig": "arena.trainer.config",
    "PolicyConfig": "arena.trainer.config",
    "FixedMix": "arena.trainer.opponents",
    "Opponents": "arena.trainer.opponents",
    "Matchmaker": "arena.trainer.events",
    "MatchesEnded": "arena.trainer.events",
    "UpdateFinished": "arena.trainer.events",
    "UpdateListener": "arena.trainer.events",
    "MIRROR": "arena.trainer.opponents",
    "Experience": "arena.trainer.experience",
    "compute_gae": "arena.trainer.advantage",
    "CheckpointError": "arena.trainer.checkpoint",
    "atomic_save": "arena.trainer.checkpoint",
    "load_checkpoint": "arena.trainer.checkpoint",
    "save_policy_snapshot": "arena.trainer.checkpoint",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'arena.trainer' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
