"""Reward terms every game can use; each game's own terms live in its room
(``arena/games/<name>/rewards.py``, listed by ``GameSpec.reward_terms``).

Every term returns one float32 per agent row for one decision. Sign convention: a positive weight
means "more of the good thing", so costs (death, a missile fired, leaving the arena) return values <= 0.

- ``Outcome``: the core's own reward, +1 win / -1 loss / 0 otherwise at the step the match ends.
- ``Event(event=...)`` and its named forms ``Kill``, ``Hit``, ``Death``: counts of an event of this
  decision, for any game that reports the event.
- ``Stalemate``: -1 for both sides of a match that ends with no winner (timeouts scored as losses).
- ``PotentialShaping``: the base of potential-based shaping (Ng, Harada & Russell 1999),
  ``F = gamma * phi(s') - phi(s)``, with the trainer's discount; a game's shaping terms subclass it.

Torch versions (``torch_call``, for a rollout that keeps the observations on the GPU): every term
here and in the games' rooms has one, which repeats the numpy arithmetic operation by operation in
the same dtypes, so its values are bit-identical to the numpy ones except where a transcendental
function rounds differently in torch and numpy (a game's module says where).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from arena.rewards.base import Reward, RewardError, StepBatch, TorchStepBatch

if TYPE_CHECKING:
    from torch import Tensor

def divide_as_numpy(x: Tensor, divisor: float) -> Tensor:
    """``x / divisor`` rounded as numpy rounds it: CUDA turns a division by a Python number into a
    multiplication by its reciprocal (not bit-identical), a division by a tensor it does not."""
    import torch

    return x / torch.tensor(divisor, dtype=x.dtype, device=x.device)


def where_or_zero(mask: Tensor, value: Tensor) -> Tensor:
    """``np.where(mask, value, 0.0)`` on float32 values."""
    import torch

    return torch.where(mask, value, torch.zeros((), dtype=value.dtype, device=value.device))


class Outcome(Reward):
    """The match outcome, exactly the core's reward: +1 win, -1 loss, 0 draw or still running."""

    def __call__(self, batch: StepBatch) -> np.ndarray:
        return np.asarray(batch.outcome_reward, dtype=np.float32)

    def torch_call(self, batch: TorchStepBatch) -> Tensor:
        import torch

        return batch.outcome_reward.to(torch.float32)


class Event(Reward):
    """``scale`` times the count of event ``event`` this decision (e.g. ``event: round_won`` in rpsw)."""

    def __init__(self, event: str, scale: float = 1.0) -> None:
        if not isinstance(event, str) or not event:
            raise RewardError(f"event must be a non-empty event name, got {event!r}")
        self.event_name = event
        self.scale = float(scale)

    def __call__(self, batch: StepBatch) -> np.ndarray:
        counts = self.event(batch, self.event_name)
        return counts if self.scale == 1.0 else counts * np.float32(self.scale)

    def torch_call(self, batch: TorchStepBatch) -> Tensor:
        counts = self.event_torch(batch, self.event_name)
        return counts if self.scale == 1.0 else counts * float(np.float32(self.scale))


class Kill(Event):
    """+1 per enemy fighter this agent's missiles destroyed this decision."""

    def __init__(self) -> None:
        super().__init__("kills", 1.0)


class Hit(Event):
    """+1 per hit scored by this agent's missiles this decision."""

    def __init__(self) -> None:
        super().__init__("hits", 1.0)


class Death(Event):
    """-1 when this agent's fighter is destroyed (shot down or left the arena)."""

    def __init__(self) -> None:
        super().__init__("died", -1.0)


class Stalemate(Reward):
    """-1 for every agent of a match that ends with no winner (time limit, no missiles left, both
    sides destroyed together): a stalemate scored as a loss for both sides, as Sumo (Bansal et al.
    2017) and BVRGym score a timeout, so that stalling is never the safe play. Matches, payoffs and
    ratings still count it a draw: this changes only what the learner is trained on."""

    def __call__(self, batch: StepBatch) -> np.ndarray:
        done = np.asarray(batch.done_rows, dtype=bool)
        no_winner = np.asarray(batch.outcome_reward) == 0
        return np.where(done & no_winner, np.float32(-1.0), np.float32(0.0)).astype(np.float32)

    def torch_call(self, batch: TorchStepBatch) -> Tensor:
        import torch

        stalemate = batch.done_rows.to(torch.bool) & (batch.outcome_reward == 0)
        return where_or_zero(stalemate, torch.full_like(batch.outcome_reward, -1.0, dtype=torch.float32))


class PotentialShaping(Reward):
    """Base of potential-based shaping: ``gamma * phi(obs_after) - phi(obs_before)``.

    ``phi`` after a match ended is 0 (absorbing state). With ``bootstrap_truncation=True`` a
    truncated match (time limit) keeps ``phi`` of its final observation instead: use it when the
    trainer bootstraps the value of truncated episodes rather than treating them as terminal.
    """

    TORCH_TWINS = (("__call__", "torch_call"), ("potential", "torch_potential"))

    def __init__(self, gamma: float | None = None, bootstrap_truncation: bool | None = None) -> None:
        if gamma is not None and (
            not isinstance(gamma, int | float) or isinstance(gamma, bool) or not 0.0 <= gamma <= 1.0
        ):
            raise RewardError(f"gamma must be a number in [0, 1] (the trainer's discount), got {gamma!r}")
        # None: taken from the trainer when the reward is built for it (``build_reward(discount=...)``)
        self.gamma = None if gamma is None else float(gamma)
        self.bootstrap_truncation = None if bootstrap_truncation is None else bool(bootstrap_truncation)

    def match_trainer(self, gamma: float, bootstrap_truncation: bool) -> None:
        """Takes the trainer's discount and truncation handling where none was given; refuses a
        mismatch, which would change the optimal policy (the shaping no longer telescopes)."""
        pairs = (("gamma", self.gamma, float(gamma)),
                 ("bootstrap_truncation", self.bootstrap_truncation, bool(bootstrap_truncation)))
        for key, mine, theirs in pairs:
            if mine is not None and mine != theirs:
                raise RewardError(
                    f"{key}={mine!r} differs from the trainer's {theirs!r}: potential-based shaping leaves "
                    f"the optimal policy unchanged only with the trainer's own value; leave {key} unset "
                    f"(it is then taken from the trainer) or set trainer.{key}={mine!r}"
                )
        self.gamma, self.bootstrap_truncation = float(gamma), bool(bootstrap_truncation)

    def potential(self, batch: StepBatch, obs: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def torch_potential(self, batch: TorchStepBatch, obs: Tensor) -> Tensor:
        """``potential`` on tensors (same float32 values); a subclass without it runs on numpy."""
        raise NotImplementedError(f"{type(self).__name__} has no torch version (torch_potential)")

    def _check_ready(self, batch: StepBatch | TorchStepBatch) -> float:
        self.check_game(batch)
        if self.gamma is None:
            raise RewardError(f"{self.label()}: gamma is unset; build the reward with the trainer's discount "
                              "(arena.rewards.build_reward(..., discount=...)) or pass gamma")
        return self.gamma

    def torch_call(self, batch: TorchStepBatch) -> Tensor:
        gamma = self._check_ready(batch)
        before = self.torch_potential(batch, batch.obs_before)
        after = self.torch_potential(batch, batch.obs_after)
        ended = batch.done_rows
        if self.bootstrap_truncation:
            ended = ended & ~batch.truncations
        after = where_or_zero(~ended, after)
        return after * float(np.float32(gamma)) - before

    def __call__(self, batch: StepBatch) -> np.ndarray:
        self._check_ready(batch)
        before = self.potential(batch, batch.obs_before)
        after = self.potential(batch, batch.obs_after)
        ended = np.asarray(batch.done_rows, dtype=bool)
        if self.bootstrap_truncation:
            ended = ended & ~np.asarray(batch.truncations, dtype=bool)
        after = np.where(ended, np.float32(0.0), after)
        return (np.float32(self.gamma) * after - before).astype(np.float32)


#: short names usable as ``_target_`` in reward configs: the terms every game can use (each game adds
#: its own, ``GameSpec.reward_terms``; ``arena.rewards.compose.builtin_terms`` lists them all)
GENERIC_TERMS: dict[str, type[Reward]] = {
    "outcome": Outcome,
    "event": Event,
    "kill": Kill,
    "hit": Hit,
    "death": Death,
    "stalemate": Stalemate,
}
