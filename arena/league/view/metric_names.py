"""The names a league run logs its views under: the gauntlet's scores (``gauntlet/<reference>``), the
leaderboard, payoff and rating charts."""

from __future__ import annotations

import os
from pathlib import Path

from arena.player_specs import SCRIPTED_PREFIX

# What LeagueViews.log sends to the logger (besides the league/* scalars of the run's metrics).
LEADERBOARD_KEY, PAYOFF_KEY, PAYOFF_IMAGE_KEY = "league/leaderboard", "league/payoff_heatmap", "league/payoff"
RATINGS_KEY = "league/rating_curves"


def metric_name(reference: str) -> str:
    """``gauntlet/<reference>``, e.g. ``gauntlet/heuristic`` for ``scripted:heuristic``."""
    short = reference.removeprefix(SCRIPTED_PREFIX)
    if os.sep in short or short.endswith(".pt"):
        short = Path(short).stem
    return f"gauntlet/{short}"
