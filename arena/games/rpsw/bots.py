"""Scripted rock-paper-scissors-well players: fixed opponents with known best responses.

Observation row (11): opponent's last throw one-hot (4), own last throw one-hot (4), round
fraction, score lead / rounds, first-round flag. Throws: 0 rock, 1 paper, 2 scissors, 3 well;
well beats rock and scissors and loses to paper. What a learner should find against each bot:
- ``RandomThrower``: never rock (rock is dominated by well); paper and well each score +1/4.
- ``ConstantThrower(rock)``: paper or well, every round.
- ``BiasedThrower``: the best response to its distribution (paper against the rock-heavy default).
- ``CycleThrower``: the throw that beats the successor of its last throw (visible in the obs).
- ``CounterThrower``: it beats the learner's last throw, so repeating a throw loses.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from arena import _core
from arena.agents.scripted import ScriptedAgent

NUM_THROWS = int(_core.RPSW_NUM_THROWS)
OBS_DIM = int(_core.RPSW_OBS_DIM)
THROWS = ("rock", "paper", "scissors", "well")
# BEATS[t]: a throw that beats t (paper beats rock, scissors beats paper, well beats scissors,
# paper beats well).
BEATS = np.array([1, 2, 3, 1], dtype=np.int32)
OPENING = 1  # paper: ties with well for the best reply to a uniform opponent


def last_throw(obs: np.ndarray, own: bool) -> np.ndarray:
    """Last throw per row (0..3), or -1 in the first round of a match."""
    one_hot = obs[:, NUM_THROWS : 2 * NUM_THROWS] if own else obs[:, :NUM_THROWS]
    return np.where(one_hot.max(axis=1) > 0.5, one_hot.argmax(axis=1), -1).astype(np.int32)


def _throw_index(throw: int | str) -> int:
    if isinstance(throw, str):
        if throw not in THROWS:
            raise ValueError(f"unknown throw {throw!r}; allowed: {', '.join(THROWS)}")
        return THROWS.index(throw)
    if not 0 <= int(throw) < NUM_THROWS:
        raise ValueError(f"throw {throw!r} is out of range: allowed 0..{NUM_THROWS - 1} or a name")
    return int(throw)


class RpswThrower(ScriptedAgent):
    """Base of the rpsw bots: one action dimension with 4 throws."""

    game = "rpsw"

    def __init__(self) -> None:
        super().__init__(OBS_DIM, (NUM_THROWS,))


class RandomThrower(RpswThrower):
    """Uniform over the four throws, from a seeded generator."""

    name = "random"

    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        self.rng = np.random.default_rng(seed)

    def _act(self, obs: np.ndarray) -> np.ndarray:
        return self.rng.integers(0, NUM_THROWS, size=(len(obs), 1))


class BiasedThrower(RpswThrower):
    """Throws drawn from fixed probabilities (rock-heavy by default: paper is the best reply)."""

    name = "biased"

    def __init__(self, probs: Sequence[float] = (0.4, 0.2, 0.2, 0.2), seed: int = 0) -> None:
        super().__init__()
        p = np.asarray(probs, dtype=np.float64)
        if p.shape != (NUM_THROWS,) or (p < 0).any() or p.sum() <= 0:
            raise ValueError(
                f"probs must be {NUM_THROWS} non-negative numbers with a positive sum, got {probs}"
            )
        self.probs = p / p.sum()
        self.rng = np.random.default_rng(seed)

    def _act(self, obs: np.ndarray) -> np.ndarray:
        return self.rng.choice(NUM_THROWS, size=(len(obs), 1), p=self.probs)


class ConstantThrower(RpswThrower):
    """The same throw every round (rock by default)."""

    name = "constant"

    def __init__(self, throw: int | str = "rock") -> None:
        super().__init__()
        self.throw = _throw_index(throw)

    def _act(self, obs: np.ndarray) -> np.ndarray:
        return np.full((len(obs), 1), self.throw)


class CycleThrower(RpswThrower):
    """Rock, paper, scissors, well in turn: the successor of its own last throw, rock first."""

    name = "cycle"

    def _act(self, obs: np.ndarray) -> np.ndarray:
        own = last_throw(obs, own=True)
        return np.where(own < 0, 0, (own + 1) % NUM_THROWS)[:, None]


class CounterThrower(RpswThrower):
    """Throws what beats the opponent's last throw (paper in the first round)."""

    name = "counter"

    def _act(self, obs: np.ndarray) -> np.ndarray:
        opp = last_throw(obs, own=False)
        return np.where(opp < 0, OPENING, BEATS[np.maximum(opp, 0)])[:, None]
