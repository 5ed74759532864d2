"""Reward modules: the ``Reward`` base class, built-in terms and their weighted composition.

Write ``class MyReward(arena.rewards.Reward)`` and name it in the reward config by dotted path.
Rewards shape training only; wins, payoffs and ratings come from match outcomes.
"""

from arena.rewards.base import Reward, RewardError, StepBatch, TorchStepBatch
from arena.rewards.compose import CompositeReward, build_reward
from arena.rewards.terms import (
    BUILTIN_TERMS,
    Boundary,
    Closing,
    Death,
    Event,
    Hit,
    Kill,
    MissileClosing,
    MissileEvaded,
    MissileFired,
    MissileMissed,
    MissileReach,
    Outcome,
    Pointing,
    PotentialShaping,
    Survival,
)

__all__ = [
    "BUILTIN_TERMS",
    "Boundary",
    "Closing",
    "CompositeReward",
    "Death",
    "Event",
    "Hit",
    "Kill",
    "MissileClosing",
    "MissileEvaded",
    "MissileFired",
    "MissileMissed",
    "MissileReach",
    "Outcome",
    "Pointing",
    "PotentialShaping",
    "Reward",
    "RewardError",
    "StepBatch",
    "Survival",
    "TorchStepBatch",
    "build_reward",
]
