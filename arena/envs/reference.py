"""NumPy twin of arena/native/common.h: the seeded generator, outcome codes, small helpers.

The generator works on Python ints masked to 64 bits: there are only a few draws per reset.
"""

from __future__ import annotations

import numpy as np

Arr = np.ndarray
Num = np.ndarray | float

MASK64 = (1 << 64) - 1
GOLDEN_GAMMA = 0x9E3779B97F4A7C15
OUTCOME_NONE, OUTCOME_TEAM0, OUTCOME_TEAM1, OUTCOME_DRAW = -1, 0, 1, 2
END_NONE, END_ELIMINATION, END_MUTUAL, END_NO_MISSILES, END_TIME_LIMIT, END_ROUNDS = range(6)


def mix64(z: int) -> int:
    """The splitmix64 output function on Python ints wrapped to 64 bits."""
    z &= MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def splitmix64(state: int) -> tuple[int, int]:
    """One draw of the core's generator (``rng_next``): returns (new state, 64-bit output)."""
    state = (state + GOLDEN_GAMMA) & MASK64
    return state, mix64(state)


def rng_uniform(state: int) -> tuple[int, float]:
    """Uniform double in [0, 1) from the top 53 bits, like ``rng_uniform``."""
    state, z = splitmix64(state)
    return state, float(z >> 11) * (1.0 / 9007199254740992.0)


def env_seed(seed: int, env: int) -> int:
    """The per-env seed of a run seeded with ``seed``: independent of the thread split."""
    return mix64(seed + GOLDEN_GAMMA * (env + 1))


def clamp(x: Num, lo: Num, hi: Num) -> Arr:
    """``clampd``: x < lo ? lo : (x > hi ? hi : x)."""
    return np.where(x < lo, lo, np.where(x > hi, hi, x))
