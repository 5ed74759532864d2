"""How a match ended: the codes the core writes per env (values match arena/native/common.h), and
the one type a match's result has from the core to the league store, ``Result``."""

from __future__ import annotations

import numbers
from enum import IntEnum
from typing import Literal

import numpy as np


class Outcome(IntEnum):
    NONE = -1  # the match is still running
    TEAM0 = 0  # team 0 won
    TEAM1 = 1  # team 1 won
    DRAW = 2


class EndReason(IntEnum):
    NONE = 0
    ELIMINATION = 1  # one team has no fighters left
    MUTUAL = 2  # both teams destroyed in the same physics step
    NO_MISSILES = 3  # no missiles left anywhere and none in flight
    TIME_LIMIT = 4  # a truncation, not a terminal
    ROUNDS = 5  # fixed-length games such as rpsw


ResultLike = Literal["win", "draw", "loss", 1, 0, -1] | int | str


class Result(IntEnum):
    """A finished match from one side's point of view: what payoffs, ratings and the league store
    count. The trainer's path makes one from the core's code (``of_team``); what a user hands the
    league (a name or +1/0/-1) is read by ``parse``, once, where it comes in."""

    LOSS = -1
    DRAW = 0
    WIN = 1

    @classmethod
    def of_team(cls, outcome: int, team: int) -> Result:
        """Team ``team``'s result in a match the core ended with ``outcome`` (an ``Outcome`` code)."""
        if outcome == Outcome.DRAW:
            return cls.DRAW
        if outcome not in (Outcome.TEAM0, Outcome.TEAM1) or team not in (0, 1):
            raise ValueError(f"no result for team {team!r} of a match with outcome code {outcome!r}: allowed "
                             "codes 0 (team 0 won), 1 (team 1 won), 2 (draw) and teams 0, 1")
        return cls.WIN if int(outcome) == team else cls.LOSS

    @classmethod
    def parse(cls, value: ResultLike) -> Result:
        """A ``Result`` from a name ("win", "draw", "loss") or +1/0/-1; a ``ValueError`` naming the
        allowed values otherwise."""
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            if value in _BY_NAME:
                return _BY_NAME[value]
        elif isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_):
            if float(value) in (1.0, 0.0, -1.0):
                return cls(int(value))
        raise ValueError(f"outcome {value!r} is not one of 'win', 'draw', 'loss', 1, 0, -1")


_BY_NAME = {"win": Result.WIN, "draw": Result.DRAW, "loss": Result.LOSS}
