"""Codes the core writes per env when a match ends (values match arena/native/common.h)."""

from __future__ import annotations

from enum import IntEnum


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
