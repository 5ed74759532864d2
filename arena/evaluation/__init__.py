"""Evaluation: side-swapped, seed-paired head-to-head matches, SPRT, round robins with Elo fits.

``python -m arena.evaluate`` is the command line; this package holds what it drives.
"""

from arena.evaluation.league_players import league_players
from arena.evaluation.pairing import PairedLayout, PairTally, PlayedMatch, paired_layout
from arena.evaluation.record import league_player_for, record_result
from arena.evaluation.round_robin import RoundRobinResult, default_anchor, play_round_robin
from arena.evaluation.runner import (
    MatchProgress,
    MatchResult,
    MatchSettings,
    SprtSettings,
    play_match,
)

__all__ = [
    "MatchProgress",
    "MatchResult",
    "MatchSettings",
    "PairTally",
    "PairedLayout",
    "PlayedMatch",
    "RoundRobinResult",
    "SprtSettings",
    "default_anchor",
    "league_player_for",
    "league_players",
    "paired_layout",
    "play_match",
    "play_round_robin",
    "record_result",
]
