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
resumed run labels exactly as the uninterrupted one did. Where the game masks actions (its
``action_mask``), a label the mask makes illegal becomes the head's first legal value (for midrange:
"fire" with nothing to launch becomes "no fire"), since the learner gives an illegal value
probability 0 and its cross-entropy would be unbounded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from arena.agents.scripted import ScriptedAgent, make_scripted
from arena.games import spec


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
        mask = spec(game).action_mask
        self.mask = None if mask is None else mask(self.params, self.team_sizes)
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
        teacher = self._teacher(update)
        actions = teacher.act(np.ascontiguousarray(flat, dtype=np.float32)).astype(np.int64)
        if self.mask is not None:
            actions = legal_labels(actions, flat[:, self.mask[0] : self.mask[1]] > 0.5, teacher.action_nvec)
        return torch.from_numpy(actions).reshape(*obs.shape[:-1], -1).to(obs.device)


def legal_labels(actions: np.ndarray, legal: np.ndarray, nvec: Sequence[int]) -> np.ndarray:
    """``actions`` [n, dims] with each value the ``legal`` flags [n, sum(nvec)] rule out replaced by
    its head's first legal value (0 in a head with none). Rows with no flag set carry no mask (a
    zeroed observation, as ``masked_logits`` reads them): their labels stay as they are (and the update
    leaves such rows out of the kickstarting loss: ``Policy.has_decision``)."""
    out = actions.copy()
    rows = np.arange(len(actions))
    flagged = legal.any(axis=1)
    for d, (start, width) in enumerate(zip(np.cumsum([0, *nvec[:-1]]), nvec, strict=True)):
        head = legal[:, start : start + width]
        bad = ~head[rows, out[:, d]] & flagged
        out[bad, d] = head[bad].argmax(axis=1)
    return out
