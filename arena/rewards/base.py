"""What a reward term sees (``StepBatch``) and what it is (``Reward``).

A reward term is a vectorised function of one decision step of every agent row: it returns one
float32 per row. Terms never change what the env reports; match outcomes (wins, payoffs, ratings)
come from the core, not from rewards.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from arena.envs.midrange_obs import FIGHTER, SELF, MidrangeObsLayout


class RewardError(ValueError):
    """A reward term is misconfigured or computed an unusable value; the message names the term."""


def _read_only(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view


@dataclass(frozen=True)
class StepBatch:
    """One decision step of every agent row, as reward terms see it.

    ``obs_before`` is the observation the actions were chosen from; ``obs_after`` the one after the
    step, which for rows of envs whose match ended this step is the match's FINAL observation (not
    the auto-reset one). Arrays are indexed by agent row (``env * agents_per_env + slot``).
    """

    obs_before: np.ndarray  # [rows, d] float32
    obs_after: np.ndarray  # [rows, d] float32
    actions: np.ndarray  # [rows, k] int32
    events: np.ndarray  # [rows, e] int32 counts for this decision
    event_names: tuple[str, ...]
    outcome_reward: np.ndarray  # [rows] float32: +1 win, -1 loss, 0 otherwise (the core's reward)
    terminals: np.ndarray  # [rows] bool
    truncations: np.ndarray  # [rows] bool
    done_rows: np.ndarray  # [rows] bool: the row's match ended this step (terminal or truncated)
    team_of_row: np.ndarray  # [rows] int
    game: str
    team_sizes: tuple[int, int]
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def num_rows(self) -> int:
        return int(self.outcome_reward.shape[0])

    @classmethod
    def from_env(
        cls,
        env: Any,
        obs_before: np.ndarray,
        actions: np.ndarray,
        obs: np.ndarray,
        rewards: np.ndarray,
        terminals: np.ndarray,
        truncations: np.ndarray,
        infos: Mapping[str, np.ndarray],
    ) -> StepBatch:
        """Assembles a batch from ``env.step``'s results.

        ``obs_before`` must be a copy taken before the step (the env rewrites its buffers in place).
        Rows of finished envs get their final observation as ``obs_after``. Every array is a
        read-only view, so a term cannot corrupt the env's zero-copy buffers.
        """
        done_rows = np.repeat(np.asarray(infos["done"], dtype=bool), env.agents_per_env)
        obs_after = obs
        if done_rows.any():
            obs_after = np.where(done_rows[:, None], infos["final_observation"], obs)
        return cls(
            obs_before=_read_only(np.asarray(obs_before)),
            obs_after=_read_only(np.asarray(obs_after)),
            actions=_read_only(np.asarray(actions)),
            events=_read_only(np.asarray(infos["events"])),
            event_names=tuple(env.event_names),
            outcome_reward=_read_only(np.asarray(rewards)),
            terminals=_read_only(np.asarray(terminals)),
            truncations=_read_only(np.asarray(truncations)),
            done_rows=_read_only(done_rows),
            team_of_row=_read_only(np.asarray(env.team_of_row)),
            game=env.game,
            team_sizes=tuple(env.team_sizes),
            params=dict(env.params),
        )


class Reward:
    """Base class of reward terms: subclass it and name the class in the reward config.

    ``__init__`` takes the term's own keyword arguments (the config's keys other than ``_target_``
    and ``weight``); ``__call__`` returns a float32 array with one value per row; ``reset`` clears
    per-row state of the rows whose episode ended (stateless terms need not override it).
    A term with state that outlives an episode (running statistics, a count, a schedule of its own)
    returns it from ``state_dict`` (tensors and plain Python values: checkpoints are read with
    ``weights_only=True``) and takes it back in ``load_state_dict``: it then rides in the trainer's
    checkpoints. A term with per-row state (a running value per fighter) must include it too, for a
    checkpoint by wall time continues the matches in flight.
    Sign convention of the built-in terms: a positive weight always means "more of the good thing",
    so cost terms (deaths, missiles fired, boundary) return values <= 0.
    """

    #: the one game whose observations this term reads, or None if it works for every game
    game: ClassVar[str | None] = None
    #: set by the composer to the config's name of this term, for error messages
    name: str = ""

    def __init__(self) -> None:
        pass

    def __call__(self, batch: StepBatch) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__} must implement __call__(batch) -> np.ndarray")

    def reset(self, done_rows: np.ndarray) -> None:  # noqa: B027 - a no-op default, not abstract
        """Clears per-row state for ``done_rows`` (bool [rows]); stateless terms do nothing."""

    def state_dict(self) -> dict[str, Any]:
        """The term's state beyond per-row state, for checkpoints (none by default)."""
        return {}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:  # noqa: B027 - a no-op default
        """Restores what ``state_dict`` returned."""

    # ------------------------------------------------------------------ helpers for subclasses

    def label(self) -> str:
        cls = f"{type(self).__module__}.{type(self).__qualname__}"
        return f"reward term {self.name!r} ({cls})" if self.name else f"reward term {cls}"

    def check_game(self, batch: StepBatch) -> None:
        if self.game is not None and batch.game != self.game:
            raise RewardError(
                f"{self.label()} reads {self.game} observations and cannot be used with game "
                f"{batch.game!r}; remove it from the reward config or use a term that works for every game "
                "(outcome, event)"
            )

    def event(self, batch: StepBatch, name: str) -> np.ndarray:
        """Counts of event ``name`` per row, as float32; a clear error if the game has no such event."""
        try:
            column = batch.event_names.index(name)
        except ValueError:
            raise RewardError(
                f"{self.label()} needs event {name!r}, which game {batch.game!r} does not report; "
                f"its events are: {', '.join(batch.event_names)}"
            ) from None
        return batch.events[:, column].astype(np.float32)

    def midrange_layout(self, batch: StepBatch) -> MidrangeObsLayout:
        """The observation layout of a midrange batch (checks the game and the obs width)."""
        self.check_game(batch)
        tracked = batch.params.get("tracked_missiles") if batch.params else None
        if tracked is None:  # infer it: obs_dim = self + enemies + allies + 2 * K * missile
            probe = MidrangeObsLayout(tuple(batch.team_sizes), 0)
            tracked = (batch.obs_after.shape[1] - probe.obs_dim) // 14
        layout = MidrangeObsLayout(tuple(batch.team_sizes), int(tracked))
        if batch.obs_after.shape[1] != layout.obs_dim or batch.obs_before.shape[1] != layout.obs_dim:
            raise RewardError(
                f"{self.label()}: observations have {batch.obs_after.shape[1]} features but the midrange "
                f"layout for team_sizes={batch.team_sizes}, tracked_missiles={tracked} has {layout.obs_dim}"
            )
        return layout


SELF_ALIVE = SELF.index("alive")
SELF_BOUNDARY = SELF.index("boundary")
ENEMY_ALIVE = FIGHTER.index("alive")
ENEMY_RANGE = FIGHTER.index("range")
ENEMY_BEARING_COS = FIGHTER.index("bearing_cos")
ENEMY_ASPECT_COS = FIGHTER.index("aspect_cos")
