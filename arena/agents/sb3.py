"""Stable-Baselines3 models as arena players: the player spec ``sb3:PATH.zip``.

A model saved by SB3's ``model.save(PATH)`` (``PPO``, ``A2C``) or sb3-contrib's (``RecurrentPPO``,
``MaskablePPO``), trained on an arena adapter (``ArenaSingleAgentEnv``, ``ArenaVecEnv``) of the same
game and settings, plays in ``arena.evaluate``, the gauntlet (``league.gauntlet.players``) and a
trainer's fixed opponents. It acts for all its rows at once: one ``predict`` over every row it drives,
with an LSTM state per row for ``RecurrentPPO`` (reset at each match's first decision) and the game's
legal actions for ``MaskablePPO``. Sampling (``deterministic=False``) draws from a generator seeded by
the agent's seed, so a seeded evaluation plays the same games twice.

The algorithm is read from the zip's ``data`` (its policy class), and SB3's own loader loads it. That
loader unpickles parts of the file (the spaces, the policy class), as it does for any SB3 model: name
only files you trust. The training schedules are replaced, not unpickled.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import zipfile
from collections.abc import Callable
from typing import Any

import numpy as np

from arena.games import spec as game_spec

SB3_INSTALL = "pip install stable-baselines3 sb3-contrib"
# policy class -> (module, algorithm) that loads it
ALGORITHMS = {
    "ActorCriticPolicy": ("stable_baselines3", "PPO"),
    "MultiInputActorCriticPolicy": ("stable_baselines3", "PPO"),
    "RecurrentActorCriticPolicy": ("sb3_contrib", "RecurrentPPO"),
    "MaskableActorCriticPolicy": ("sb3_contrib", "MaskablePPO"),
}
_CLASS_NAME = re.compile(r"<function (\w+)\.__init__")
# What SB3's loader would otherwise unpickle from the file; none of it is needed to act.
_SCHEDULES = {"learning_rate": 0.0, "lr_schedule": lambda _: 0.0, "clip_range": lambda _: 0.0}


def policy_class_name(path: str | os.PathLike[str]) -> str:
    """The policy class an SB3 zip was saved with, read from its ``data`` JSON (nothing unpickled)."""
    try:
        with zipfile.ZipFile(path) as z:
            data = json.loads(z.read("data"))
    except (zipfile.BadZipFile, KeyError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path} is not a Stable-Baselines3 model (a zip written by model.save): "
                         f"{exc}") from exc
    found = _CLASS_NAME.search(str(data.get("policy_class", {}).get("__init__", "")))
    if found is None:
        raise ValueError(f"{path}: its data names no policy class; is it a Stable-Baselines3 model?")
    return found.group(1)


def load_sb3_model(path: str | os.PathLike[str]) -> Any:
    """The SB3 model in ``path``, on the CPU, by the algorithm its policy class belongs to."""
    name = policy_class_name(path)
    if name not in ALGORITHMS:
        raise ValueError(f"{path}: policy class {name} is not one arena plays; allowed: "
                         f"{', '.join(sorted(ALGORITHMS))} (PPO, A2C, RecurrentPPO, MaskablePPO)")
    module, algorithm = ALGORITHMS[name]
    try:
        cls = getattr(importlib.import_module(module), algorithm)
    except ImportError as exc:
        raise ValueError(f"{path} is a {algorithm} model: {module} is not installed ({SB3_INSTALL})") from exc
    return cls.load(path, device="cpu", custom_objects=dict(_SCHEDULES))


def check_model_fits(model: Any, obs_dim: int, action_nvec: tuple[int, ...], source: str) -> None:
    """Raises ``ValueError`` unless the model's spaces are the game's: a Box of ``obs_dim`` features
    and a MultiDiscrete of ``action_nvec``."""
    obs_shape = tuple(getattr(model.observation_space, "shape", ()) or ())
    nvec = tuple(int(k) for k in getattr(model.action_space, "nvec", ()))
    if obs_shape != (obs_dim,) or nvec != tuple(action_nvec):
        raise ValueError(f"{source} does not fit: it takes observations of shape {obs_shape} and actions "
                         f"{list(nvec) or model.action_space}, the game has ({obs_dim},) and "
                         f"{list(action_nvec)}; was it trained on another game, team size or game settings?")


class SB3Agent:
    """An SB3 model acting for rows of a batch (the ``Agent`` interface of ``arena.agents.players``):
    ``act(obs [n, d], rows [n], episode_start [n]) -> int32 [n, dims]``."""

    keeps_rows = True  # a trainer's opponents hand it its rows and their match starts

    def __init__(self, model: Any, action_nvec: tuple[int, ...], *, num_rows: int = 0,
                 deterministic: bool = False, seed: int = 0,
                 mask_of: Callable[[np.ndarray], np.ndarray | None] | None = None) -> None:
        self.model = model
        self._nvec = tuple(int(k) for k in action_nvec)
        self.deterministic = deterministic
        self.mask_of = mask_of
        self.rng = np.random.default_rng(seed)
        self.recurrent = hasattr(model.policy, "lstm_actor")
        self.maskable = type(model).__name__ == "MaskablePPO"
        self._hidden: np.ndarray | None = None
        self._cell: np.ndarray | None = None
        if self.recurrent:
            shape = model.policy.lstm_hidden_state_shape  # (layers, 1, hidden)
            self._state_shape = (shape[0], shape[2])
            self._grow(max(1, num_rows))

    @property
    def obs_dim(self) -> int:
        return int(self.model.observation_space.shape[0])

    @property
    def action_nvec(self) -> tuple[int, ...]:
        return self._nvec

    def _grow(self, rows: int) -> None:
        have = 0 if self._hidden is None else self._hidden.shape[1]
        if rows <= have:
            return
        layers, hidden = self._state_shape
        grown = np.zeros((layers, rows, hidden), np.float32), np.zeros((layers, rows, hidden), np.float32)
        if self._hidden is not None and self._cell is not None:
            grown[0][:, :have], grown[1][:, :have] = self._hidden, self._cell
        self._hidden, self._cell = grown

    def reset(self) -> None:
        """Every row's LSTM state back to zero."""
        if self._hidden is not None and self._cell is not None:
            self._hidden[...] = 0.0
            self._cell[...] = 0.0

    def act(self, obs: np.ndarray, rows: np.ndarray | None = None,
            episode_start: np.ndarray | None = None) -> np.ndarray:
        import torch

        obs = np.asarray(obs, np.float32)
        if obs.ndim != 2 or obs.shape[1] != self.obs_dim:
            raise ValueError(f"Stable-Baselines3 model takes observations of {self.obs_dim} features, got "
                             f"rows of shape {obs.shape[1:]}: was it trained on another game or team size?")
        n = len(obs)
        if n == 0:
            return np.zeros((0, len(self._nvec)), np.int32)
        rows = np.arange(n) if rows is None else np.asarray(rows, np.int64)
        starts = np.zeros(n, bool) if episode_start is None else np.asarray(episode_start, bool)
        kwargs: dict[str, Any] = {"deterministic": self.deterministic}
        if self.maskable and self.mask_of is not None:
            mask = self.mask_of(obs)
            if mask is not None:
                kwargs["action_masks"] = np.asarray(mask, bool)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(self.rng.integers(2**62)))
            if self.recurrent:
                self._grow(int(rows.max()) + 1)
                assert self._hidden is not None and self._cell is not None
                state = (self._hidden[:, rows], self._cell[:, rows])
                actions, (h, c) = self.model.predict(obs, state=state, episode_start=starts, **kwargs)
                self._hidden[:, rows], self._cell[:, rows] = h, c
            else:
                actions, _ = self.model.predict(obs, **kwargs)
        return np.asarray(actions, np.int32).reshape(n, len(self._nvec))


def sb3_agent(model: Any, game: str, team_sizes: tuple[int, int], params: dict[str, Any], *,
              num_rows: int = 0, deterministic: bool = False, seed: int = 0) -> SB3Agent:
    """An ``SB3Agent`` for rows of ``game`` (its legal actions go to a ``MaskablePPO``)."""
    found = game_spec(game)
    params, team_sizes = dict(params), tuple(team_sizes)
    nvec = tuple(int(k) for k in model.action_space.nvec)
    return SB3Agent(model, nvec, num_rows=num_rows, deterministic=deterministic, seed=seed,
                    mask_of=lambda obs: found.mask_of(obs, params, team_sizes))
