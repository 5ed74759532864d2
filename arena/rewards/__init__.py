"""Reward modules: the ``Reward`` base class, the terms every game can use and their weighted
composition (each game's own terms live in its room, e.g. ``arena.games.midrange.rewards``).

Write ``class MyReward(arena.rewards.Reward)`` and name it in the reward config by dotted path.
Rewards shape training only; wins, payoffs and ratings come from match outcomes.
"""

from arena.rewards.base import Reward, RewardError, StepBatch, TorchStepBatch
from arena.rewards.compose import CompositeReward, build_reward, builtin_terms
from arena.rewards.terms import GENERIC_TERMS, Death, Event, Hit, Kill, Outcome, PotentialShaping, Stalemate

__all__ = [
    "GENERIC_TERMS",
    "CompositeReward",
    "Death",
    "Event",
    "Hit",
    "Kill",
    "Outcome",
    "PotentialShaping",
    "Reward",
    "RewardError",
    "Stalemate",
    "StepBatch",
    "TorchStepBatch",
    "build_reward",
    "builtin_terms",
]
