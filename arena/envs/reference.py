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


class EnvOutputs:
    """The twin of common.h's ``EnvOut``: the result buffers a batch writes each decision, as the core's
    batches expose them (rows ``env * agents_per_env + slot``). Every game's NumPy reference inherits it,
    allocating them once (``allocate_outputs``) and clearing them at a reset (``clear_outputs``)."""

    obs: np.ndarray  # [rows, obs_dim] float32
    final_obs: np.ndarray  # [rows, obs_dim] float32, written only when a match ended
    rewards: np.ndarray  # [rows] float32
    terminals: np.ndarray  # [rows] bool
    truncations: np.ndarray  # [rows] bool
    events: np.ndarray  # [rows, num_events] int32
    outcome: np.ndarray  # [num_envs] int8 (OUTCOME_NONE while running)
    end_reason: np.ndarray  # [num_envs] int8
    episode_length: np.ndarray  # [num_envs] int32, decisions, written when a match ended
    done: np.ndarray  # [num_envs] bool

    def allocate_outputs(self, num_envs: int, agents_per_env: int, obs_dim: int, num_events: int) -> None:
        rows = num_envs * agents_per_env
        self.obs = np.zeros((rows, obs_dim), np.float32)
        self.final_obs = np.zeros((rows, obs_dim), np.float32)
        self.rewards = np.zeros(rows, np.float32)
        self.terminals = np.zeros(rows, bool)
        self.truncations = np.zeros(rows, bool)
        self.events = np.zeros((rows, num_events), np.int32)
        self.outcome = np.zeros(num_envs, np.int8)
        self.end_reason = np.zeros(num_envs, np.int8)
        self.episode_length = np.zeros(num_envs, np.int32)
        self.done = np.zeros(num_envs, bool)

    def clear_outputs(self) -> None:
        """Every result back to its value before a match's first decision (outcome: running)."""
        for buffer in (self.rewards, self.terminals, self.truncations, self.events, self.end_reason,
                       self.episode_length, self.done):
            buffer[...] = 0
        self.outcome[...] = OUTCOME_NONE
