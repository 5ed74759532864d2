"""Side-swapped, seed-paired games: who drives which rows, and counting pair-games in a fixed order.

Envs come in pairs ``(2i, 2i+1)`` with the same seed; A drives team 0 in env ``2i`` and team 1 in env
``2i+1``. Pair-game k of pair i is match k of both envs; ``PairTally`` counts pair-games round-major,
(round 0, pair 0), (round 0, pair 1), ..., each only once every one before it is done (see
``arena.evaluation.runner`` for why).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from arena.envs.outcomes import Outcome
from arena.envs.vector import VectorEnv


@dataclass(frozen=True)
class PlayedMatch:
    """One counted match: env, its match index in that env, A's team and outcome (+1/0/-1), length."""

    env: int
    index: int
    a_team: int
    a_outcome: int
    length: int


@dataclass(frozen=True)
class PairedLayout:
    """Who drives which rows, and the per-env seeds, of a side-swapped, seed-paired evaluation."""

    env_seeds: np.ndarray  # [num_envs], equal within each pair (2i, 2i+1)
    a_team_of_env: np.ndarray  # [num_envs]: 0 in even envs, 1 in odd ones
    env_of_row: np.ndarray  # [num_agents]
    a_rows: np.ndarray  # rows A drives, ascending
    b_rows: np.ndarray  # rows B drives, ascending
    a_seed: int
    b_seed: int


def paired_layout(env: VectorEnv, seed: int) -> PairedLayout:
    """The layout for ``env`` (an even number of envs); every seed is derived from ``seed``."""
    return layout_of(env.num_envs, env.team_of_row[: env.agents_per_env], seed)


def layout_of(num_envs: int, team_of_slot: np.ndarray, seed: int) -> PairedLayout:
    """The layout of ``num_envs`` envs whose agent slots belong to teams ``team_of_slot``."""
    if num_envs % 2:
        raise ValueError(f"a paired evaluation needs an even number of envs, got {num_envs}")
    env_ss, a_ss, b_ss = np.random.SeedSequence(seed).spawn(3)
    pair_seeds = env_ss.generate_state(num_envs // 2, dtype=np.uint64) >> np.uint64(1)
    agents_per_env = len(team_of_slot)
    env_of_row = np.repeat(np.arange(num_envs), agents_per_env)
    a_team_of_env = np.arange(num_envs) % 2
    a_drives = np.tile(np.asarray(team_of_slot), num_envs) == a_team_of_env[env_of_row]
    return PairedLayout(
        env_seeds=np.repeat(pair_seeds, 2),
        a_team_of_env=a_team_of_env,
        env_of_row=env_of_row,
        a_rows=np.flatnonzero(a_drives),
        b_rows=np.flatnonzero(~a_drives),
        a_seed=int(a_ss.generate_state(1, dtype=np.uint32)[0]),
        b_seed=int(b_ss.generate_state(1, dtype=np.uint32)[0]),
    )


class PairTally:
    """Per-env match results, counted (A's view) pair-game by pair-game in round-major order."""

    def __init__(self, pair_quota: np.ndarray, a_team_of_env: np.ndarray) -> None:
        envs, rounds = 2 * len(pair_quota), int(pair_quota.max())
        self.played = np.zeros(envs, dtype=np.int64)
        self.a_team_of_env = a_team_of_env
        self.outcome = np.zeros((envs, rounds), dtype=np.int8)  # A's view: +1/0/-1
        self.length = np.zeros((envs, rounds), dtype=np.int64)
        # The counting order: (round, pair) for every pair-game that will be played, round-major.
        self.order = [(k, i) for k in range(rounds) for i in range(len(pair_quota)) if k < pair_quota[i]]
        self.counted = 0  # pair-games of self.order counted so far
        self.counts = np.zeros(3, dtype=np.int64)  # wins, draws, losses
        self.matches: list[PlayedMatch] = []

    @property
    def wdl(self) -> tuple[int, int, int]:
        return int(self.counts[0]), int(self.counts[1]), int(self.counts[2])

    @property
    def games(self) -> int:
        return int(self.counts.sum())

    @property
    def all_counted(self) -> bool:
        return self.counted == len(self.order)

    def finish(self, envs: np.ndarray, outcome: np.ndarray, length: np.ndarray) -> None:
        """Stores one finished match for each of ``envs`` (outcome codes as the core writes them)."""
        index = self.played[envs]
        a_team = self.a_team_of_env[envs]
        outcome = outcome.astype(np.int64)
        self.outcome[envs, index] = np.where(outcome == Outcome.DRAW, 0, np.where(outcome == a_team, 1, -1))
        self.length[envs, index] = length
        self.played[envs] += 1

    def count_next(self) -> bool:
        """Counts the next pair-game of the order if both its matches are done; False otherwise."""
        if self.all_counted:
            return False
        k, pair = self.order[self.counted]
        if min(self.played[2 * pair], self.played[2 * pair + 1]) <= k:
            return False
        for env_id in (2 * pair, 2 * pair + 1):
            result = int(self.outcome[env_id, k])
            self.counts[1 - result] += 1  # +1 -> wins, 0 -> draws, -1 -> losses
            self.matches.append(PlayedMatch(env_id, k, int(self.a_team_of_env[env_id]), result,
                                            int(self.length[env_id, k])))
        self.counted += 1
        return True
