"""What a reward term sees (``StepBatch``) and what it is (``Reward``).

A reward term is a vectorised function of one decision step of every agent row: it returns one
float32 per row. Terms never change what the env reports; match outcomes (wins, payoffs, ratings)
come from the core, not from rewards.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

if TYPE_CHECKING:  # torch is optional (the train extra): the numpy path never imports it
    from torch import Tensor


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


@dataclass(frozen=True)
class TorchStepBatch:
    """``StepBatch`` with tensors (on any one device): what a term's ``torch_call`` reads.

    Same fields and meaning as ``StepBatch``; ``actions`` int32, ``events`` integer counts, flags bool.
    It lets a rollout whose env lives on the GPU compute the reward where the observations are,
    without copying them to the host every step. Terms must not write into its tensors (they may be
    the env's own buffers)."""

    obs_before: Tensor  # [rows, d] float32
    obs_after: Tensor  # [rows, d] float32
    actions: Tensor  # [rows, k] int32
    events: Tensor  # [rows, e] integer counts for this decision
    event_names: tuple[str, ...]
    outcome_reward: Tensor  # [rows] float32
    terminals: Tensor  # [rows] bool
    truncations: Tensor  # [rows] bool
    done_rows: Tensor  # [rows] bool
    team_of_row: Tensor  # [rows] int
    game: str
    team_sizes: tuple[int, int]
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def num_rows(self) -> int:
        return int(self.outcome_reward.shape[0])

    @classmethod
    def from_step_batch(cls, batch: StepBatch, device: Any = "cpu") -> TorchStepBatch:
        """The same step as tensors on ``device`` (copies; for tests and for callers holding numpy)."""
        import torch

        def tensor(array: np.ndarray) -> Tensor:
            return torch.as_tensor(np.array(array), device=device)

        return cls(
            obs_before=tensor(batch.obs_before), obs_after=tensor(batch.obs_after),
            actions=tensor(np.asarray(batch.actions, dtype=np.int32)), events=tensor(batch.events),
            event_names=tuple(batch.event_names), outcome_reward=tensor(batch.outcome_reward),
            terminals=tensor(batch.terminals), truncations=tensor(batch.truncations),
            done_rows=tensor(batch.done_rows), team_of_row=tensor(batch.team_of_row), game=batch.game,
            team_sizes=tuple(batch.team_sizes), params=dict(batch.params),
        )

    def to_numpy(self) -> StepBatch:
        """The same step as a numpy ``StepBatch`` on the host (the fallback for numpy-only terms)."""

        def host(tensor: Tensor) -> np.ndarray:
            return _read_only(tensor.detach().cpu().numpy())

        return StepBatch(
            obs_before=host(self.obs_before), obs_after=host(self.obs_after), actions=host(self.actions),
            events=host(self.events), event_names=self.event_names, outcome_reward=host(self.outcome_reward),
            terminals=host(self.terminals), truncations=host(self.truncations),
            done_rows=host(self.done_rows), team_of_row=host(self.team_of_row), game=self.game,
            team_sizes=self.team_sizes,
            params=dict(self.params),
        )


def twins_defined(cls: type, twins: tuple[tuple[str, str], ...], base: type) -> bool:
    """Whether every numpy method of ``twins`` (pairs ``(numpy name, torch name)``) has its torch twin
    defined in ``cls`` or in a class at least as derived as the one defining the numpy method, and
    not only in ``base`` (where it is the stub). So a subclass that changes the numpy rule of a
    built-in term or bot (overrides ``__call__``, ``potential``, ``_act``...) without writing the
    torch twin loses its torch path instead of silently computing the parent's rule on tensors."""
    mro = cls.__mro__

    def owner(name: str) -> int | None:
        return next((i for i, klass in enumerate(mro) if name in vars(klass)), None)

    for numpy_name, torch_name in twins:
        numpy_owner, torch_owner = owner(numpy_name), owner(torch_name)
        if numpy_owner is None:
            continue
        if torch_owner is None or mro[torch_owner] is base or torch_owner > numpy_owner:
            return False
    return True


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
    #: (numpy method, its torch twin) pairs: a term runs on tensors only where each numpy method
    #: has its twin defined at least as deep in the class hierarchy (``twins_defined``)
    TORCH_TWINS: ClassVar[tuple[tuple[str, str], ...]] = (("__call__", "torch_call"),)

    def __init__(self) -> None:
        pass

    def __call__(self, batch: StepBatch) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__} must implement __call__(batch) -> np.ndarray")

    def torch_call(self, batch: TorchStepBatch) -> Tensor:
        """The same values as ``__call__`` from tensors ([rows] float32 on the batch's device).

        Optional: a term that defines it can be computed where the env's observations are (the
        GPU) without a host copy per step; one that does not makes the composed reward run on numpy.
        """
        raise NotImplementedError(f"{type(self).__name__} has no torch version (torch_call)")

    @property
    def supports_torch(self) -> bool:
        """Whether ``torch_call`` computes what ``__call__`` does (see ``TORCH_TWINS``)."""
        return twins_defined(type(self), self.TORCH_TWINS, Reward)

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

    def check_game(self, batch: StepBatch | TorchStepBatch) -> None:
        if self.game is not None and batch.game != self.game:
            raise RewardError(
                f"{self.label()} reads {self.game} observations and cannot be used with game "
                f"{batch.game!r}; remove it from the reward config or use a term that works for every game "
                "(outcome, event)"
            )

    def event(self, batch: StepBatch, name: str) -> np.ndarray:
        """Counts of event ``name`` per row, as float32; a clear error if the game has no such event."""
        return batch.events[:, self._event_column(batch, name)].astype(np.float32)

    def event_torch(self, batch: TorchStepBatch, name: str) -> Tensor:
        """``event`` on tensors: counts of event ``name`` per row as float32."""
        import torch

        return batch.events[:, self._event_column(batch, name)].to(torch.float32)

    def _event_column(self, batch: StepBatch | TorchStepBatch, name: str) -> int:
        try:
            return batch.event_names.index(name)
        except ValueError:
            raise RewardError(
                f"{self.label()} needs event {name!r}, which game {batch.game!r} does not report; "
                f"its events are: {', '.join(batch.event_names)}"
            ) from None
