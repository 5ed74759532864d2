"""NumPy reference of rock-paper-scissors-well (arena/native/games/rpsw/rpsw.h), batched over envs.

A match is ``rounds`` simultaneous throws; the player with more round wins takes it. Same face
as ``arena._core.RpswBatch``: output buffers as attributes, auto-reset, ``world_state()``.
"""

from __future__ import annotations

import numpy as np

from arena.envs.reference import (
    END_NONE,
    END_ROUNDS,
    OUTCOME_DRAW,
    OUTCOME_NONE,
    OUTCOME_TEAM0,
    OUTCOME_TEAM1,
    EnvOutputs,
)

NUM_THROWS = 4  # rock, paper, scissors, well
NUM_EVENTS = 3
EV_ROUND_WON, EV_ROUND_LOST, EV_ROUND_DRAWN = range(NUM_EVENTS)
OBS_DIM = 2 * NUM_THROWS + 3
# PAYOFF[a, b]: +1 when throw a beats throw b, -1 when b beats a. Well beats rock and scissors,
# loses to paper, so rock is dominated.
PAYOFF = np.array([[0, -1, 1, -1], [1, 0, -1, 1], [-1, 1, 0, -1], [1, -1, 1, 0]], np.int32)


class RpswReference(EnvOutputs):
    """``num_envs`` rpsw matches of ``rounds`` throws; rows are ``env * 2 + player``."""

    def __init__(self, rounds: int = 9, num_envs: int = 1) -> None:
        self.rounds = rounds
        self.num_envs = num_envs
        self.agents_per_env = 2
        self.obs_dim = OBS_DIM
        self.round = np.zeros(num_envs, np.int32)
        self.score = np.zeros(num_envs, np.int32)  # rounds won by player 0 minus rounds won by player 1
        self.last_throw = np.full((num_envs, 2), -1, np.int32)  # -1 before the first round
        self.allocate_outputs(num_envs, self.agents_per_env, OBS_DIM, NUM_EVENTS)

    def reset(self, seed: int = 0) -> np.ndarray:
        """Starts a new match everywhere. The rules draw nothing, so the seed changes nothing."""
        del seed
        self._reset(np.arange(self.num_envs))
        self.clear_outputs()
        self.obs[:] = self._observe()
        return self.obs.copy()

    def step(self, actions: np.ndarray) -> dict[str, np.ndarray]:
        """One throw of both players in every env; returns copies of the output buffers."""
        a = np.asarray(actions)
        if a.shape != (2 * self.num_envs, 1):
            raise ValueError(f"actions must have shape ({2 * self.num_envs}, 1), got {a.shape}")
        if ((a < 0) | (a >= NUM_THROWS)).any():
            raise ValueError(f"throws must lie in 0..{NUM_THROWS - 1}")
        throws = a.reshape(self.num_envs, 2).astype(np.int32)
        r = PAYOFF[throws[:, 0], throws[:, 1]]
        self.score += r
        self.last_throw[:] = throws
        self.round += 1

        events = np.zeros((self.num_envs, 2, NUM_EVENTS), np.int32)
        ev0 = np.where(r > 0, EV_ROUND_WON, np.where(r < 0, EV_ROUND_LOST, EV_ROUND_DRAWN))
        ev1 = np.where(r > 0, EV_ROUND_LOST, np.where(r < 0, EV_ROUND_WON, EV_ROUND_DRAWN))
        envs = np.arange(self.num_envs)
        events[envs, 0, ev0] = 1
        events[envs, 1, ev1] = 1
        self.events[:] = events.reshape(-1, NUM_EVENTS)

        done = self.round >= self.rounds
        lead = self.score
        winner = np.where(lead > 0, OUTCOME_TEAM0, np.where(lead < 0, OUTCOME_TEAM1, OUTCOME_DRAW))
        outcome = np.where(done, winner, OUTCOME_NONE).astype(np.int8)
        self.outcome[:] = outcome
        self.end_reason[:] = np.where(done, END_ROUNDS, END_NONE)
        self.done[:] = done
        decisive = (outcome == OUTCOME_TEAM0) | (outcome == OUTCOME_TEAM1)
        rewards = np.where(decisive[:, None], np.where(outcome[:, None] == np.arange(2), 1.0, -1.0), 0.0)
        self.rewards[:] = rewards.astype(np.float32).ravel()
        self.terminals[:] = np.repeat(done, 2)
        self.truncations[:] = False
        ended = np.flatnonzero(done)
        if ended.size:
            self.episode_length[ended] = self.round[ended]
            self.final_obs.reshape(self.num_envs, 2, OBS_DIM)[ended] = self._observe().reshape(
                self.num_envs, 2, OBS_DIM)[ended]
            self._reset(ended)
        self.obs[:] = self._observe()
        return {name: getattr(self, name).copy() for name in (
            "obs", "rewards", "terminals", "truncations", "events", "outcome", "end_reason",
            "episode_length", "done", "final_obs")}

    def world_state(self) -> dict[str, np.ndarray]:
        """Copies of the state, keyed like ``RpswBatch.world_state()``."""
        return {"round": self.round.copy(), "score": self.score.copy(), "last_throw": self.last_throw.copy()}

    def _reset(self, envs: np.ndarray) -> None:
        self.round[envs] = 0
        self.score[envs] = 0
        self.last_throw[envs] = -1

    def _observe(self) -> np.ndarray:
        """Per player: opponent's last throw one-hot, own last throw one-hot, fraction of the match
        played, own score lead / rounds, first-round flag; [2 * envs, OBS_DIM] float32."""
        obs = np.zeros((self.num_envs, 2, OBS_DIM), np.float32)
        envs = np.arange(self.num_envs)
        rounds = np.float32(self.rounds)  # the C++ divides a float by the int, i.e. in float32
        for i in range(2):
            opp, own = self.last_throw[:, 1 - i], self.last_throw[:, i]
            obs[envs[opp >= 0], i, opp[opp >= 0]] = 1.0
            obs[envs[own >= 0], i, NUM_THROWS + own[own >= 0]] = 1.0
            obs[:, i, 2 * NUM_THROWS] = self.round.astype(np.float32) / rounds
            lead = self.score if i == 0 else -self.score
            obs[:, i, 2 * NUM_THROWS + 1] = lead.astype(np.float32) / rounds
            obs[:, i, 2 * NUM_THROWS + 2] = np.where(self.round == 0, 1.0, 0.0)
        return obs.reshape(-1, OBS_DIM)
