"""Kickstarting: an auxiliary loss that pulls the learner toward a scripted teacher's actions early in
training, annealed to zero (Schmitt et al. 2018, "Kickstarting Deep Reinforcement Learning"; AlphaStar
started from imitation in the same spirit).

The teacher labels the learner's own observations (on-policy distillation): at every update the
teacher acts on every stored observation of the rollout, and the loss is the cross-entropy of the
learner's action distribution against the teacher's action, summed over the action dimensions and
averaged over learner steps. Its weight falls linearly from ``coef`` at step 0 to ``coef_end`` (0 by
default) at ``steps`` learner samples and stays there. At 0 the teacher is no longer consulted, so what
the learner keeps is only what the reward says is worth keeping; above 0 the pull stays for the whole
run, as AlphaStar kept a KL term toward its supervised policy throughout reinforcement learning.

Teachers are scripted bots (stateless: they read only the observation, so the stored observations
are all they need). A teacher that draws random actions is seeded from the update number, so a
resumed run labels exactly as the uninterrupted one did.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from arena.agents.scripted import ScriptedAgent, make_scripted


@dataclass(frozen=True)
class KickstartSchedule:
    """The teacher (``scripted:<bot>``), the loss weight at step 0, the step where it reaches
    ``coef_end`` and the weight kept from there on."""

    teacher: str
    coef: float
    steps: int
    coef_end: float = 0.0

    def coef_at(self, global_step: int) -> float:
        if self.steps <= 0:
            return self.coef_end
        left = max(0.0, 1.0 - global_step / self.steps)
        return self.coef_end + (self.coef - self.coef_end) * left


class Kickstart:
    """The teacher of a run and its weight schedule; the trainer adds the loss (``PPOTrainer._update``)."""

    def __init__(
        self,
        schedule: KickstartSchedule,
        game: str,
        team_sizes: tuple[int, int],
        params: Mapping[str, Any],
        seed: int = 0,
    ) -> None:
        self.schedule = schedule
        self.game, self.team_sizes, self.params = game, tuple(team_sizes), dict(params)
        self.seed = int(seed)
        self._teacher(0)  # checks the name against the game now, not at the first update

    def _teacher(self, update: int) -> ScriptedAgent:
        return make_scripted(
            self.schedule.teacher, self.game, team_sizes=self.team_sizes,
            params=self.params, seed=self.seed * 1_000_003 + update,
        )

    def coef_at(self, global_step: int) -> float:
        return self.schedule.coef_at(global_step)

    def labels(self, obs: Tensor, update: int) -> Tensor:
        """The teacher's actions for every stored observation: ``[..., obs_dim] -> [..., dims]`` int64."""
        flat = obs.reshape(-1, obs.shape[-1]).detach().cpu().numpy()
        actions = self._teacher(update).act(np.ascontiguousarray(flat, dtype=np.float32))
        return torch.from_numpy(actions.astype(np.int64)).reshape(*obs.shape[:-1], -1).to(obs.device)
