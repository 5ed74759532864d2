"""The trainer's typed events: the whole seam between a trainer and whoever follows it (the league).

A trainer emits two events, and knows its followers only through the two callables below:

- ``MatchesEnded`` goes to its ``Matchmaker`` whenever envs need their next team-1 player (the
  matches that just ended there: envs, outcomes, lengths, learner step); the matchmaker answers with
  a player id per env. ``arena.trainer.opponents`` asks it; the league's ``LeagueMatchmaker``
  (``arena.league.run.learner``) is one.
- ``UpdateFinished`` goes to every ``UpdateListener`` after each update, once its metrics are
  summed up (``PPOTrainer.mean_and_log``): the learner's step, update and checkpoint counts, its
  current policy and the update's metrics. A listener returns metrics of its own, which join the
  update's. The league listens this way (``LeagueRun.on_update``: snapshots, gauntlets, exploiter
  turns, ``league/*`` metrics).

The one thing a follower asks of the trainer in return goes through a method: the league's guard
restores the learner's weights with ``PPOTrainer.restore_policy`` (docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from arena.envs.outcomes import Outcome

NO_OUTCOME = int(Outcome.NONE)  # the outcome of envs asking for their first opponent


@dataclass(frozen=True)
class MatchesEnded:
    """What the trainer tells its matchmaker when envs need their next team-1 player: the matches
    that just ended there (or, at the start, that none has yet).

    - ``env_ids`` int64 [k]: the envs;
    - ``outcomes`` int8 [k]: each env's ``Outcome`` from team 0's (the learner's) view,
      ``Outcome.NONE`` where no match ended (the first request; a data-parallel rank's request with
      nothing finished);
    - ``lengths`` float64 [k]: decisions the ended match lasted (0 where none ended);
    - ``learner_step``: the learner's sample count when they ended.
    """

    env_ids: np.ndarray
    outcomes: np.ndarray
    lengths: np.ndarray
    learner_step: int

    @classmethod
    def starting(cls, env_ids: np.ndarray, learner_step: int = 0) -> MatchesEnded:
        """The request for the first opponents of ``env_ids``: no match has ended there."""
        env_ids = np.asarray(env_ids, dtype=np.int64)
        return cls(env_ids, np.full(len(env_ids), NO_OUTCOME, dtype=np.int8), np.zeros(len(env_ids)),
                   int(learner_step))

    @property
    def ended(self) -> np.ndarray:
        """bool [k]: where a match ended (its outcome is not ``Outcome.NONE``)."""
        return self.outcomes != NO_OUTCOME


# The matchmaker interface: an event -> the player id of each of its envs' next match
Matchmaker = Callable[[MatchesEnded], Sequence[str]]


@dataclass(frozen=True)
class UpdateFinished:
    """What the trainer tells its update listeners after each update.

    - ``learner_step``: learner samples collected so far (the run's, in a data-parallel run);
    - ``update``: updates done so far;
    - ``checkpoints_written``: checkpoints this learner has written (tags the league's matches);
    - ``policy``: the learner's policy as it now is (``arena.agents.policy.Policy``): a listener reads
      or copies it and never changes it (``PPOTrainer.restore_policy`` does that);
    - ``metrics``: the update's metrics (``PPOTrainer.mean_and_log``'s, before the listeners' own).
    """

    learner_step: int
    update: int
    checkpoints_written: int
    policy: Any
    metrics: Mapping[str, float]


# The update listener interface: an event -> metrics to log with the update's
UpdateListener = Callable[[UpdateFinished], Mapping[str, float]]
