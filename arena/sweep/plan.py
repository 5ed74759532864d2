"""A sweep checked before its first trial: its search space, its fixed values, where it lives.

A sweep is the run config's overrides (groups, fixed values, ``sweep.*``) plus a search space: the
preset's ``sweep.params`` (where the Optuna sweeper plugin read ``hydra.sweeper.params``) and every
``key=<sweep>`` of the command line, the command line winning. The search space keeps hydra's sweep
syntax, each expression turned into an Optuna distribution (``distribution``):

| expression | Optuna |
|---|---|
| ``interval(lo, hi)`` | ``FloatDistribution(lo, hi)`` |
| ``tag(log, interval(lo, hi))`` | ``FloatDistribution(lo, hi, log=True)`` |
| ``tag(int, interval(lo, hi))`` (``tag(int, log, ...)``: log) | ``IntDistribution(lo, hi[, log=True])`` |
| ``choice(a, b, ...)``, ``range(start, stop[, step])`` | ``CategoricalDistribution`` of the values |

Every key must be a key of the run schema taking a value of that type: a sample of each expression is
composed before anything trains. ``run_dir`` is refused (each trial has its own). A sweep's folder
(``hydra.sweep.dir``, ``runs/sweeps/<sweep.name>``) holds its trials (``<folder>/<trial number>``)
and, by default, its study (``study.db``); a folder holding files but no study of this sweep is
refused, and so is a study of another search space under the same name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena.config import compose_run_config, normalise_overrides

STUDY_FILE = "study.db"  # the default storage: sqlite:///<sweep folder>/study.db
DIRECTIONS = ("maximize", "minimize")
PRUNERS = ("none", "median", "hyperband")


@dataclass(frozen=True)
class Dimension:
    """One key of the search space: its Optuna distribution and, for a categorical one, the
    command-line form of each choice (``encoded``)."""

    key: str
    expression: str
    distribution: Any  # optuna.distributions.BaseDistribution
    encoded: tuple[str, ...] = ()

    def override(self, value: Any) -> str:
        """``key=value`` for a value Optuna drew from this dimension."""
        if self.encoded:
            choices = list(self.distribution.choices)
            return f"{self.key}={self.encoded[choices.index(value)]}"
        return f"{self.key}={value!r}" if isinstance(value, float) else f"{self.key}={value}"

    def sample(self) -> str:
        """``key=value`` with a value of the type Optuna draws (to check the key before any trial)."""
        if self.encoded:
            return f"{self.key}={self.encoded[0]}"
        return self.override(self.distribution.low)


def _parse(lines: list[str], where: str) -> list[Any]:
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    try:
        return OverridesParser.create().parse_overrides(lines)
    except HydraException as exc:
        raise ValueError(f"{where}: {exc}") from exc


def distribution(override: Any) -> Dimension:
    """The Optuna distribution of one parsed ``key=<sweep>`` override; a ``ValueError`` naming the
    expression when it has no Optuna form."""
    import optuna

    key, text = override.get_key_element(), override.get_value_string()
    sweep = override.value()
    tags = set(getattr(sweep, "tags", set()) or set())
    unknown = tags - {"log", "int"}
    if unknown:
        raise ValueError(f"{key}={text}: tags {sorted(unknown)} are not understood; allowed: log, int")
    if override.is_interval_sweep():
        low, high = float(sweep.start), float(sweep.end)
        if not (math.isfinite(low) and math.isfinite(high)) or low >= high:
            raise ValueError(f"{key}={text}: an interval needs finite lo < hi, got ({low}, {high})")
        log = "log" in tags
        if log and low <= 0:
            raise ValueError(f"{key}={text}: a log interval needs lo > 0, got {low}")
        if "int" in tags:
            if low != int(low) or high != int(high):
                raise ValueError(f"{key}={text}: an int interval needs integer ends, got ({low}, {high})")
            return Dimension(key, text, optuna.distributions.IntDistribution(int(low), int(high), log=log))
        return Dimension(key, text, optuna.distributions.FloatDistribution(low, high, log=log))
    if tags:
        raise ValueError(f"{key}={text}: tags apply to an interval, not to choice() or range()")
    if override.is_choice_sweep() or override.is_range_sweep():
        encoded = tuple(override.sweep_string_iterator())
        values = list(sweep.list) if override.is_choice_sweep() else [
            v for v in _range_values(sweep)]
        if not values:
            raise ValueError(f"{key}={text}: the sweep has no values")
        if len(set(map(repr, values))) != len(values):
            raise ValueError(f"{key}={text}: a value appears twice")
        if not all(v is None or isinstance(v, bool | int | float | str) for v in values):
            raise ValueError(f"{key}={text}: choices must be numbers, strings, booleans or null")
        return Dimension(key, text, optuna.distributions.CategoricalDistribution(values), encoded)
    raise ValueError(f"{key}={text}: not a sweep Optuna can draw from; use interval(lo,hi), "
                     "tag(log,interval(lo,hi)), tag(int,interval(lo,hi)), choice(a,b,...) or range(...)")


def _range_values(sweep: Any) -> list[Any]:
    values, value = [], sweep.start
    while (value < sweep.stop) if sweep.step > 0 else (value > sweep.stop):
        values.append(value)
        value += sweep.step
    return values


def _quoted(value: str) -> str:
    return "'" + value.replace("'", "\\'") + "'"


@dataclass
class SweepPlan:
    """A checked sweep. ``config``: the run config every trial starts from (hydra's node included);
    ``fixed``: the overrides every trial composes, before its drawn values; ``space``: the search space;
    ``argv``: the command line's overrides, as a worker process gets them."""

    config: Any
    fixed: list[str]
    space: dict[str, Dimension]
    sweep_dir: Path
    storage: str
    study_name: str
    argv: list[str]

    @property
    def settings(self) -> Any:
        return self.config.sweep

    def identity(self) -> dict[str, Any]:
        """What a study resumed under this sweep's name must have been started with."""
        # The sweep's own settings may change between runs of one study (more trials, more workers,
        # another pruner); objective, window and direction are compared below.
        keep = [line for line in self.fixed if not line.lstrip("+~").startswith(("sweep.", "hydra."))]
        return {"space": {k: d.expression for k, d in sorted(self.space.items())}, "fixed": sorted(keep),
                "objective": str(self.settings.objective), "window": int(self.settings.window),
                "direction": str(self.settings.direction)}

    def describe(self) -> str:
        s = self.settings
        lines = [f"sweep {self.sweep_dir}: {s.n_trials} trials, {s.direction} {s.objective} (mean of the "
                 f"last {s.window} records), pruner {s.pruner}, {s.workers} worker(s), study "
                 f"{self.study_name!r} in {self.storage}"]
        lines += [f"  {key}: {d.expression}" for key, d in self.space.items()]
        return "\n".join(lines)


def _check_settings(s: Any) -> None:
    if s.window < 1:
        raise ValueError(f"sweep.window={s.window}: must be at least 1")
    if s.direction not in DIRECTIONS:
        raise ValueError(f"sweep.direction={s.direction!r} must be one of {list(DIRECTIONS)}")
    if s.pruner not in PRUNERS:
        raise ValueError(f"sweep.pruner={s.pruner!r} must be one of {list(PRUNERS)}")
    if s.n_trials < 1:
        raise ValueError(f"sweep.n_trials={s.n_trials}: must be at least 1")
    if s.workers < 1:
        raise ValueError(f"sweep.workers={s.workers}: must be at least 1")
    if s.heartbeat_s < 1:
        raise ValueError(f"sweep.heartbeat_s={s.heartbeat_s}: must be at least 1")
    if not 0.0 <= s.prune_warmup < 1.0:
        raise ValueError(f"sweep.prune_warmup={s.prune_warmup}: must be in [0, 1)")


def plan(overrides: list[str]) -> SweepPlan:
    """Checks the sweep that ``-m`` with ``overrides`` would run; a clear ``ValueError`` otherwise."""
    from omegaconf import OmegaConf

    parsed = _parse(normalise_overrides(list(overrides)), "command line")
    for item in parsed:
        if item.key_or_group == "run_dir":
            raise ValueError("run_dir cannot be set in a sweep: trial N trains in <hydra.sweep.dir>/N, and "
                             "hydra.sweep.dir is runs/sweeps/<sweep.name>; set sweep.name=NAME or "
                             "hydra.sweep.dir=DIR instead")
        if item.is_hydra_override() and item.is_sweep_override():
            raise ValueError(f"{item.input_line}: hydra's own settings cannot be swept")
    hydra_lines = [o.input_line for o in parsed if o.is_hydra_override()]
    task = [o for o in parsed if not o.is_hydra_override()]
    first = compose_run_config(hydra_lines + [o.input_line for o in task if not o.is_sweep_override()],
                               with_hydra=True)
    declared = dict(first.sweep.get("params") or {})
    entries = {o.get_key_element(): o for o in _parse([f"{k}={v}" for k, v in declared.items()],
                                                          "sweep.params")}
    entries.update((o.get_key_element(), o) for o in task)  # the command line wins
    fixed_lines = [o.input_line for o in entries.values() if not o.is_sweep_override()]
    space = {o.get_key_element(): distribution(o) for o in entries.values() if o.is_sweep_override()}
    for key in space:
        if key.lstrip("+~").startswith(("sweep.", "hydra.")) or key.lstrip("+~") == "run_dir":
            raise ValueError(f"{key}: the sweep's own settings cannot be swept")
    fixed = hydra_lines + fixed_lines
    try:
        config = compose_run_config(fixed, with_hydra=True) if declared else first
    except ValueError as exc:
        raise ValueError(f"sweep.params: {exc}") from exc
    try:
        compose_run_config(fixed + [d.sample() for d in space.values()])
    except ValueError as exc:
        raise ValueError(f"search space: {exc}") from exc
    _check_settings(config.sweep)
    sweep_dir = Path(str(config.hydra.sweep.dir))
    storage = str(config.sweep.storage or f"sqlite:///{sweep_dir / STUDY_FILE}")
    study_name = str(config.sweep.name)
    pinned = ("hydra.sweep.dir", "sweep.name")  # resolved once here: workers see the same name
    argv = [o.input_line for o in parsed if o.get_key_element().lstrip("+~") not in pinned]
    argv += [f"hydra.sweep.dir={_quoted(str(sweep_dir))}", f"sweep.name={_quoted(study_name)}"]
    for key in config:  # the run's keys (hydra's own stay as they are: some are only known in a job)
        if key != "hydra" and OmegaConf.is_config(config[key]):
            OmegaConf.resolve(config[key])
    return SweepPlan(config=config, fixed=[line for line in fixed if not line.startswith("hydra.")],
                     space=space, sweep_dir=sweep_dir, storage=storage, study_name=study_name, argv=argv)
