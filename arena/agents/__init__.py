"""Policies and fixed players: scripted pilots and throwers (learned policies live beside them)."""

from arena.agents.scripted import SCRIPTED_BOTS, ScriptedAgent, make_scripted
from arena.agents.scripted_midrange import HeuristicPilot, HeuristicTuning, MidrangePilot, RandomPilot
from arena.agents.scripted_rpsw import (
    BiasedThrower,
    ConstantThrower,
    CounterThrower,
    CycleThrower,
    RandomThrower,
    RpswThrower,
)

__all__ = [
    "SCRIPTED_BOTS",
    "BiasedThrower",
    "ConstantThrower",
    "CounterThrower",
    "CycleThrower",
    "HeuristicPilot",
    "HeuristicTuning",
    "MidrangePilot",
    "RandomPilot",
    "RandomThrower",
    "RpswThrower",
    "ScriptedAgent",
    "make_scripted",
]
