"""Policies and fixed players: the learner's network, frozen policies, mixtures and the scripted-bot
contract (each game's own bots live in its room, ``arena/games/<name>/bots.py``)."""

from arena.agents.scripted import SCRIPTED_BOTS, ScriptedAgent, make_scripted

__all__ = ["SCRIPTED_BOTS", "ScriptedAgent", "make_scripted"]
