"""Training stages: a schedule of step counts, each with its own overrides (a curriculum).

A stage may change the trainer's learning rate and entropy coefficient, the opponent mix, and game
parameters that take effect at the next spawn (e.g. spawn distances). Stages run in order; the
last one lasts until the end of training.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger(__name__)

STAGE_TRAINER_KEYS = ("learning_rate", "ent_coef", "clip_coef", "vf_coef", "anneal_lr")


@dataclass(frozen=True)
class Stage:
    steps: int
    name: str
    trainer: dict[str, Any] = field(default_factory=dict)
    opponents: dict[str, float] | None = None
    env: dict[str, Any] = field(default_factory=dict)


def parse_stages(raw: Sequence[Mapping[str, Any]]) -> list[Stage]:
    """Validates the ``stages`` config: positive step counts and known trainer keys."""
    stages = []
    for i, item in enumerate(raw):
        steps = item.get("steps", 0)
        if isinstance(steps, bool) or not isinstance(steps, int) or steps <= 0:
            raise ValueError(f"stages[{i}].steps={steps!r} must be a positive integer (learner samples)")
        trainer = dict(item.get("trainer") or {})
        unknown = sorted(set(trainer) - set(STAGE_TRAINER_KEYS))
        if unknown:
            raise ValueError(
                f"stages[{i}].trainer cannot set {', '.join(unknown)}; "
                f"allowed: {', '.join(STAGE_TRAINER_KEYS)}"
            )
        mix = item.get("opponents")
        if mix:
            players, weights = list(mix.get("players") or []), list(mix.get("weights") or [])
            if len(players) != len(weights) or not players:
                raise ValueError(f"stages[{i}].opponents needs players and weights of the same length")
            mix = dict(zip(players, weights, strict=True))
        stages.append(
            Stage(
                steps=steps,
                name=str(item.get("name") or f"stage{i}"),
                trainer=trainer,
                opponents=dict(mix) if mix else None,
                env=dict(item.get("env") or {}),
            )
        )
    return stages


class StageSchedule:
    """Applies each stage when the learner's step count enters it."""

    def __init__(self, stages: Sequence[Stage]) -> None:
        self.stages = list(stages)
        self.current: int | None = None

    def index_at(self, step: int) -> int | None:
        if not self.stages:
            return None
        end = 0
        for i, stage in enumerate(self.stages):
            end += stage.steps
            if step < end:
                return i
        return len(self.stages) - 1

    def apply(
        self,
        step: int,
        trainer: Any,
        set_opponent_mix: Callable[[Mapping[str, float]], None],
    ) -> Stage | None:
        """Switches to the stage of ``step`` if it changed; returns the new stage or None."""
        index = self.index_at(step)
        if index is None or index == self.current:
            return None
        self.current = index
        stage = self.stages[index]
        if stage.trainer:
            trainer.config = dataclasses.replace(trainer.config, **stage.trainer).validate()
        if stage.env:
            trainer.env.set_params(**stage.env)
        if stage.opponents is not None:
            set_opponent_mix(stage.opponents)
        logger.info("stage %d (%s) from step %d: %s", index, stage.name, step, stage)
        return stage
