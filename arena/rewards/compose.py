"""Weighted composition of reward terms, built from a config.

A reward config maps a term name (used in logs as ``reward/<name>``) to its entry::

    outcome: {_target_: outcome, weight: 1.0}
    kill:    {_target_: arena.rewards.terms.Kill, weight: 0.2}
    mine:    {_target_: my_pkg.rewards.MyReward, weight: 0.1, radius_m: 3000}

``_target_`` is a dotted path to a ``Reward`` subclass (imported) or the short name of a built-in
term (``builtin_terms()``: the generic terms and every game's own); ``weight`` defaults to 1.0;
every other key is passed to the class.

A weight can follow a schedule over training (learner samples): with ``anneal_steps: N`` it moves
linearly from ``weight`` to ``weight_end`` (default 0) over the first N samples, then stays there.
This is the exploration curriculum of Bansal et al. 2017: dense terms guide the start, then fade so
that the outcome alone decides what the policy keeps. The trainer reports its sample count with
``set_step`` before each rollout.

Built for a trainer (``discount=(gamma, bootstrap_truncation)``), potential-based shaping terms take
the trainer's discount and truncation handling, and a term that names different ones is refused.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from arena import games
from arena.rewards.base import Reward, RewardError, StepBatch, TorchStepBatch
from arena.rewards.terms import GENERIC_TERMS, PotentialShaping

if TYPE_CHECKING:
    from torch import Tensor

logger = logging.getLogger(__name__)


def _to_plain(cfg: Any) -> Any:
    """OmegaConf containers to plain dicts/lists (omegaconf is optional)."""
    try:
        from omegaconf import DictConfig, ListConfig, OmegaConf
    except ImportError:  # pragma: no cover - omegaconf comes with the train extra
        return cfg
    if isinstance(cfg, DictConfig | ListConfig):
        return OmegaConf.to_container(cfg, resolve=True)
    return cfg


@cache
def builtin_terms() -> Mapping[str, type[Reward]]:
    """Every short name a reward config can give as ``_target_``: the terms every game can use and
    each game's own (``GameSpec.reward_terms``), which never reuse a name. Built once (the games are
    fixed by the core), read-only."""
    terms = dict(GENERIC_TERMS)
    for game in games.GAMES:
        for short, cls in games.spec(game).reward_terms.items():
            if short in terms and terms[short] is not cls:
                raise RuntimeError(f"reward term {short!r} of game {game!r} reuses the name of "
                                   f"{terms[short]!r}")
            terms[short] = cls
    return MappingProxyType(terms)


def resolve_target(name: str, target: Any) -> type[Reward]:
    """The ``Reward`` subclass a ``_target_`` names, or a ``RewardError`` naming the term."""
    if isinstance(target, type):
        cls = target
    elif not isinstance(target, str) or not target:
        raise RewardError(f"reward term {name!r}: _target_ must be a dotted class path, got {target!r}")
    elif target in (builtins := builtin_terms()):
        cls = builtins[target]
    elif "." not in target:
        raise RewardError(
            f"reward term {name!r}: unknown built-in term {target!r}; built-ins: "
            f"{', '.join(sorted(builtins))}; or give a dotted path such as my_pkg.rewards.MyReward"
        )
    else:
        module_name, _, attr = target.rpartition(".")
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:
            raise RewardError(
                f"reward term {name!r}: cannot import module {module_name!r} of _target_ {target!r}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        try:
            cls = getattr(module, attr)
        except AttributeError:
            raise RewardError(
                f"reward term {name!r}: module {module_name!r} has no class {attr!r} (_target_ {target!r})"
            ) from None
    if not (isinstance(cls, type) and issubclass(cls, Reward)):
        raise RewardError(
            f"reward term {name!r}: _target_ {target!r} is not a subclass of arena.rewards.Reward"
        )
    return cls


def _accepted_kwargs(cls: type[Reward]) -> tuple[inspect.Signature, list[str]]:
    signature = inspect.signature(cls.__init__)
    names = [
        p.name
        for p in list(signature.parameters.values())[1:]
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]
    return signature, names


def instantiate_term(name: str, cls: type[Reward], kwargs: Mapping[str, Any]) -> Reward:
    """``cls(**kwargs)``, with errors that name the term and list the arguments it accepts."""
    signature, accepted = _accepted_kwargs(cls)
    described = ", ".join(accepted) if accepted else "none"
    try:
        signature.bind(None, **kwargs)
    except TypeError as exc:
        raise RewardError(
            f"reward term {name!r} ({cls.__qualname__}): bad arguments {sorted(kwargs)}: {exc}; "
            f"accepted arguments: {described}"
        ) from None
    try:
        term = cls(**kwargs)
    except RewardError as exc:
        raise RewardError(f"reward term {name!r} ({cls.__qualname__}): {exc}") from exc
    except (TypeError, ValueError) as exc:
        raise RewardError(
            f"reward term {name!r} ({cls.__qualname__}): {exc}; accepted arguments: {described}"
        ) from exc
    term.name = name
    return term


def _check_weight(name: str, weight: Any) -> float:
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not math.isfinite(weight):
        raise RewardError(f"reward term {name!r}: weight must be a finite number, got {weight!r}")
    return float(weight)


@dataclass(frozen=True)
class WeightSchedule:
    """A term's weight: ``start`` until step 0, linearly to ``end`` at ``steps``, ``end`` after."""

    start: float
    end: float
    steps: int

    def at(self, step: int) -> float:
        if self.steps <= 0:
            return self.start
        frac = min(1.0, max(0.0, step / self.steps))
        return self.start + (self.end - self.start) * frac


class CompositeReward:
    """The training reward: a weighted sum of terms, each also reported on its own (weighted)."""

    def __init__(
        self,
        terms: Mapping[str, tuple[float, Reward]],
        schedules: Mapping[str, WeightSchedule] | None = None,
    ) -> None:
        self.terms: dict[str, tuple[float, Reward]] = {}
        for name, (weight, term) in terms.items():
            if not isinstance(term, Reward):
                raise RewardError(f"reward term {name!r}: {term!r} is not an arena.rewards.Reward")
            term.name = name
            self.terms[name] = (_check_weight(name, weight), term)
        self.schedules = dict(schedules or {})
        unknown = sorted(set(self.schedules) - set(self.terms))
        if unknown:
            raise RewardError(f"weight schedules for unknown terms {unknown}; terms: {sorted(self.terms)}")
        self.step = 0
        self.set_step(0)

    def set_step(self, step: int) -> None:
        """The learner's sample count: scheduled weights move to their value at ``step``."""
        self.step = int(step)
        for name, schedule in self.schedules.items():
            self.terms[name] = (schedule.at(self.step), self.terms[name][1])

    @property
    def weights(self) -> dict[str, float]:
        return {name: weight for name, (weight, _) in self.terms.items()}

    def __call__(self, batch: StepBatch) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """(total [rows] float32, {term name: weighted term [rows] float32})."""
        rows = batch.num_rows
        total = np.zeros(rows, dtype=np.float32)
        parts: dict[str, np.ndarray] = {}
        for name, (weight, term) in self.terms.items():
            value = self._checked(name, term, term(batch), rows) * np.float32(weight)
            parts[name] = value
            total += value
        return total, parts

    @property
    def supports_torch(self) -> bool:
        """Whether every term has a torch version, so ``torch_call`` runs without leaving the device."""
        return not self.host_bound_terms()

    def host_bound_terms(self) -> list[str]:
        """The labels of the terms without a torch version (``Reward.label``: the config's name and
        the class), in config order: each makes ``torch_call`` copy the step to the host."""
        return [term.label() for _, term in self.terms.values() if not term.supports_torch]

    def torch_call(self, batch: TorchStepBatch) -> tuple[Tensor, dict[str, Tensor]]:
        """``__call__`` on tensors: (total [rows] float32, {term: weighted term}) on the batch's device.

        Same values as ``__call__`` on the same step (each built-in term's torch version repeats its
        numpy arithmetic; the weighting and the summing are the same float32 operations in the same
        order). With a term that has no torch version the whole step runs on numpy (a host copy),
        and the results come back as tensors. The values are checked as ``__call__`` checks them;
        the NaN/inf check reads one flag back from the device for the whole step."""
        import torch

        if not self.supports_torch:
            total_np, parts_np = self(batch.to_numpy())
            device = batch.outcome_reward.device
            return (torch.as_tensor(total_np, device=device),
                    {name: torch.as_tensor(value, device=device) for name, value in parts_np.items()})
        rows = batch.num_rows
        total = torch.zeros(rows, dtype=torch.float32, device=batch.outcome_reward.device)
        parts: dict[str, Tensor] = {}
        raw: list[Tensor] = []
        for name, (weight, term) in self.terms.items():
            value = self._checked_tensor(term, term.torch_call(batch), rows)
            raw.append(value)
            value = value * float(np.float32(weight))
            parts[name] = value
            total = total + value
        if raw and not bool(torch.isfinite(torch.stack(raw)).all()):
            for (name, (_, term)), value in zip(self.terms.items(), raw, strict=True):
                self._checked(name, term, value.cpu().numpy(), rows)  # raises, naming the term
        return total, parts

    def reset(self, done_rows: np.ndarray) -> None:
        """Clears per-row state of every term for the rows whose episode ended."""
        done_rows = np.asarray(done_rows, dtype=bool)
        for _, term in self.terms.values():
            term.reset(done_rows)

    def state_dict(self) -> dict[str, Any]:
        """The step of the weight schedules and each term's ``state_dict`` (for checkpoints)."""
        terms = {name: term.state_dict() for name, (_, term) in self.terms.items()}
        return {"step": self.step, "terms": terms}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restores ``state_dict()``; a term the checkpoint does not know keeps its fresh state."""
        self.set_step(int(state.get("step", 0)))
        saved = dict(state.get("terms", {}))
        for name, (_, term) in self.terms.items():
            if name in saved:
                term.load_state_dict(saved[name])
            else:
                logger.warning("reward term %r is not in the checkpoint: it starts afresh", name)

    @staticmethod
    def _checked(name: str, term: Reward, value: Any, rows: int) -> np.ndarray:
        label = term.label()
        try:
            array = np.asarray(value)
        except Exception as exc:
            raise RewardError(f"{label} returned {type(value).__name__}, not an array: {exc}") from exc
        if array.shape != (rows,):
            raise RewardError(f"{label} returned shape {array.shape}; expected ({rows},), one value per row")
        if array.dtype.kind not in "biuf":
            raise RewardError(f"{label} returned dtype {array.dtype}, which cannot be cast to float32")
        array = array.astype(np.float32, copy=False)
        bad = ~np.isfinite(array)
        if bad.any():
            first = int(np.flatnonzero(bad)[0])
            raise RewardError(
                f"{label} returned {int(bad.sum())} NaN/inf values (first at row {first}: {array[first]})"
            )
        return array

    @staticmethod
    def _checked_tensor(term: Reward, value: Any, rows: int) -> Tensor:
        """A term's torch value as float32 [rows], refused (naming the term) if it is not one."""
        import torch

        label = term.label()
        if not isinstance(value, torch.Tensor):
            raise RewardError(f"{label}.torch_call returned {type(value).__name__}, not a tensor")
        if tuple(value.shape) != (rows,):
            raise RewardError(f"{label}.torch_call returned shape {tuple(value.shape)}; expected ({rows},), "
                              "one value per row")
        if value.is_complex():
            raise RewardError(
                f"{label}.torch_call returned dtype {value.dtype}, which cannot be cast to float32")
        return value.to(torch.float32)

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={w:g}*{type(t).__name__}" for n, (w, t) in self.terms.items())
        return f"CompositeReward({inner})"


def build_reward(
    terms_cfg: Mapping[str, Mapping[str, Any]], *, discount: tuple[float, bool] | None = None
) -> CompositeReward:
    """Builds the training reward from a config mapping term names to entries (see module doc).

    ``discount``: the trainer's ``(gamma, bootstrap_truncation)``, given to potential-based shaping
    terms. Accepts plain dicts and OmegaConf ``DictConfig``."""
    terms_cfg = _to_plain(terms_cfg)
    if not isinstance(terms_cfg, Mapping):
        raise RewardError(f"a reward config must map term names to entries, got {type(terms_cfg).__name__}")
    if not terms_cfg:
        raise RewardError("the reward config has no terms; e.g. {'outcome': {'_target_': 'outcome'}}")
    terms: dict[str, tuple[float, Reward]] = {}
    schedules: dict[str, WeightSchedule] = {}
    for name, entry in terms_cfg.items():
        if not isinstance(name, str) or not name:
            raise RewardError(f"reward term names must be non-empty strings, got {name!r}")
        entry = _to_plain(entry)
        if not isinstance(entry, Mapping) or "_target_" not in entry:
            raise RewardError(
                f"reward term {name!r}: expected a mapping with _target_ (and optional weight), got {entry!r}"
            )
        kwargs = dict(entry)
        cls = resolve_target(name, kwargs.pop("_target_"))
        weight = _check_weight(name, kwargs.pop("weight", 1.0))
        schedule = _schedule(name, weight, kwargs.pop("weight_end", None), kwargs.pop("anneal_steps", None))
        if schedule is not None:
            schedules[name] = schedule
        term = instantiate_term(name, cls, kwargs)
        if discount is not None and isinstance(term, PotentialShaping):
            try:
                term.match_trainer(*discount)
            except RewardError as exc:
                raise RewardError(f"reward term {name!r}: {exc}") from None
        terms[name] = (weight, term)
    return CompositeReward(terms, schedules)


def _schedule(name: str, weight: float, end: Any, steps: Any) -> WeightSchedule | None:
    if steps is None:
        if end is not None:
            raise RewardError(
                f"reward term {name!r}: weight_end={end!r} needs anneal_steps (samples to get there)")
        return None
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise RewardError(
            f"reward term {name!r}: anneal_steps={steps!r} must be an integer >= 1 (learner samples)")
    return WeightSchedule(weight, _check_weight(name, 0.0 if end is None else end), steps)
