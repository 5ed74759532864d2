"""Match outcomes as the league sees them: +1 win, 0 draw, -1 loss, from one side's point of view."""

from __future__ import annotations

import numbers
from typing import Literal

import numpy as np

OutcomeLike = Literal["win", "draw", "loss", 1, 0, -1] | int | str

WIN, DRAW, LOSS = 1, 0, -1
_BY_NAME = {"win": WIN, "draw": DRAW, "loss": LOSS}


def parse_outcome(outcome: OutcomeLike) -> int:
    """Return +1, 0 or -1 for an outcome given as a name ("win"/"draw"/"loss") or as +1/0/-1."""
    if isinstance(outcome, str):
        if outcome in _BY_NAME:
            return _BY_NAME[outcome]
    elif isinstance(outcome, numbers.Real) and not isinstance(outcome, bool | np.bool_):
        if float(outcome) in (1.0, 0.0, -1.0):
            return int(outcome)
    raise ValueError(f"outcome {outcome!r} is not one of 'win', 'draw', 'loss', 1, 0, -1")


def outcome_name(outcome: int) -> str:
    """The name ("win"/"draw"/"loss") of +1/0/-1."""
    return {WIN: "win", DRAW: "draw", LOSS: "loss"}[parse_outcome(outcome)]
