"""Sweeps: ``python -m arena.train -m ...`` is hydra's multirun, e.g. an Optuna study (``-m +sweep=rpsw``).

The whole study is checked before its first trial: every key of the search space (the sweeper's
``hydra.sweeper.params`` and sweep values on the command line, e.g. ``'trainer.ent_coef=interval(0,0.05)'``)
must be a key of the run schema taking a value of that type (a sample of each is composed), fixed
values are composed as usual, ``run_dir`` is refused (each trial has its own) and the sweep's folder
must hold nothing yet. Then hydra's app runner (``@hydra.main``) runs the trials one after another in
this process: trial N trains in ``<hydra.sweep.dir>/N`` (``hydra.sweep.dir`` is
``runs/sweeps/<sweep.name>``) and hands the sweeper its objective (:func:`objective`), which the
sweeper maximises or minimises as ``hydra.sweeper.direction`` says (``+sweep=rpsw``: maximize; the
Optuna sweeper's own default is minimize). With the Optuna sweeper the best parameters and value are
logged at the end and written to ``<hydra.sweep.dir>/optimization_results.yaml``.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena.config import compose_run_config, config_dir, normalise_overrides, register_configs

logger = logging.getLogger("arena.sweep")

RESULTS_FILE = "optimization_results.yaml"  # written into the sweep's folder by the Optuna sweeper


def objective(run_dir: Path, metric: str, window: int = 1) -> float:
    """The mean of ``metric`` over the last ``window`` records of RUN_DIR/metrics.jsonl that hold it
    (a null there, i.e. a NaN, counts as NaN: the sweeper marks that trial failed). A ``ValueError``
    naming the metrics there are when no record holds it."""
    if window < 1:
        raise ValueError(f"sweep.window={window}: must be at least 1")
    path = Path(run_dir) / "metrics.jsonl"
    values: list[float] = []
    seen: set[str] = set()
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        seen.update(record)
        if metric in record:
            values.append(math.nan if record[metric] is None else float(record[metric]))
    if not values:
        raise ValueError(f"sweep.objective={metric!r}: no record of {path} holds it; metrics there: "
                         f"{', '.join(sorted(seen)) or 'none'}")
    last = values[-window:]
    return sum(last) / len(last)


def _last_step(run_dir: Path) -> int:
    path = run_dir / "metrics.jsonl"
    lines = path.read_text().splitlines() if path.is_file() else []
    return int(json.loads(lines[-1])["step"]) if lines else 0


@dataclass
class SweepPlan:
    """A checked sweep: ``config`` (hydra's node included) is what every trial starts from, before the
    values of ``space`` (key -> sweep expression) are drawn; ``argv`` is what hydra's multirun gets."""

    config: Any
    space: dict[str, str]
    sweep_dir: Path
    argv: list[str]

    def describe(self) -> str:
        sweeper = self.config.hydra.sweeper
        kind = str(sweeper.get("_target_", "")).rsplit(".", 1)[-1]
        direction = sweeper.get("direction")
        sweep = self.config.sweep
        what = (f"{getattr(direction, 'name', direction)} {sweep.objective} (mean of the last {sweep.window} "
                "records)" if direction is not None else f"objective {sweep.objective}")
        trials = f"{sweeper.n_trials} trials" if "n_trials" in sweeper else "every combination"
        lines = [f"sweep {self.sweep_dir}: {trials} of {kind}, {what}"]
        lines += [f"  {key}: {expression}" for key, expression in self.space.items()]
        return "\n".join(lines)


def _parse(lines: list[str], where: str) -> list[Any]:
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    try:
        return OverridesParser.create().parse_overrides(lines)
    except HydraException as exc:
        raise ValueError(f"{where}: {exc}") from exc


def _sample(override: Any) -> str:
    """``key=value`` with one value the sweep ``override`` can take (of the type the sweeper draws)."""
    key = override.get_key_element()
    if override.is_interval_sweep():
        interval = override.value()
        integers = isinstance(interval.start, int) and isinstance(interval.end, int)
        return f"{key}={int(interval.start) if integers else float(interval.start)}"
    return f"{key}={next(iter(override.sweep_string_iterator()))}"


def _quoted(value: str) -> str:
    return "'" + value.replace("'", "\\'") + "'"


def _compose(lines: list[str], where: str | None = None) -> Any:
    try:
        return compose_run_config(lines, with_hydra=True)
    except ValueError as exc:
        message = f"{where}: {exc}" if where else str(exc)
        if "optuna" in message and importlib.util.find_spec("hydra_plugins.hydra_optuna_sweeper") is None:
            message += " (the Optuna sweeper is not installed: pip install 'arena[tune]')"
        raise ValueError(message) from exc


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
    first = _compose(hydra_lines + [o.input_line for o in task if not o.is_sweep_override()])
    params = first.hydra.sweeper.get("params") or {}
    entries = {o.get_key_element(): o for o in _parse([f"{k}={v}" for k, v in params.items()],
                                                          "hydra.sweeper.params")}
    entries.update((o.get_key_element(), o) for o in task)  # the command line wins, as in the sweeper
    fixed = [o.input_line for o in entries.values() if not o.is_sweep_override()]
    sweeps = [o for o in entries.values() if o.is_sweep_override()]
    config = _compose(hydra_lines + fixed, "hydra.sweeper.params") if params else first
    _compose(hydra_lines + fixed + [_sample(o) for o in sweeps], "search space")
    if config.sweep.window < 1:
        raise ValueError(f"sweep.window={config.sweep.window}: must be at least 1")
    sweep_dir = Path(str(config.hydra.sweep.dir))
    if sweep_dir.is_dir() and any(sweep_dir.iterdir()):
        raise ValueError(f"hydra.sweep.dir {sweep_dir} already holds files (an earlier sweep?): choose "
                         "another with sweep.name=NAME or hydra.sweep.dir=DIR")
    pinned = ("hydra.sweep.dir", "sweep.name")  # resolved once here: the trials see the same time stamp
    argv = [o.input_line for o in parsed if o.get_key_element().lstrip("+~") not in pinned]
    argv += [f"hydra.sweep.dir={_quoted(str(sweep_dir))}", f"sweep.name={_quoted(str(config.sweep.name))}"]
    space = {o.get_key_element(): o.get_value_string() for o in sweeps}
    for key in config:  # the run's keys (hydra's own stay as they are: some are only known in a job)
        if key != "hydra" and OmegaConf.is_config(config[key]):
            OmegaConf.resolve(config[key])
    return SweepPlan(config=config, space=space, sweep_dir=sweep_dir, argv=argv)


def _trial(cfg: Any, run: Callable[[Any], Any]) -> float:
    """One trial: trains (``run``, ``arena.train.run``) in the job's folder and returns its objective."""
    from hydra.core.hydra_config import HydraConfig

    job = HydraConfig.get()
    run_dir = Path(job.runtime.output_dir)
    cfg.run_dir = str(run_dir)
    run(cfg)  # returns early only on Ctrl-C (after its checkpoint): then the whole sweep stops
    step, total = _last_step(run_dir), cfg.trainer.total_timesteps
    if step < total:
        raise KeyboardInterrupt(f"trial {job.job.num} stopped at step {step} of {total}")
    value = objective(run_dir, cfg.sweep.objective, cfg.sweep.window)
    logger.info("trial %s: %s = %.6g (%s)", job.job.num, cfg.sweep.objective, value, run_dir)
    return value


def launch(sweep: SweepPlan, run: Callable[[Any], Any]) -> int:
    """Runs the trials through hydra's ``@hydra.main`` multirun, each trained by ``run`` (the training
    entry point, ``arena.train.run``, handed in: the sweep sits below it); hydra's exit status (0: done)."""
    import hydra

    register_configs()
    logging.getLogger("alembic").setLevel(logging.WARNING)  # Optuna imports it, which logs its set-up

    def trial(cfg: Any) -> float:  # hydra's task function
        return _trial(cfg, run)

    app = hydra.main(config_path=str(config_dir()), config_name="config", version_base="1.3")(trial)
    saved = sys.argv
    sys.argv = [saved[0] if saved else "arena.train", "--multirun", *sweep.argv]
    try:
        app()
    except SystemExit as exc:  # hydra reported an error
        return exc.code if isinstance(exc.code, int) else 1
    finally:
        sys.argv = saved
    return 0


def results(sweep_dir: Path) -> dict[str, Any] | None:
    """The Optuna sweeper's ``optimization_results.yaml`` (best_params, best_value); None without one."""
    from omegaconf import OmegaConf

    path = Path(sweep_dir) / RESULTS_FILE
    if not path.is_file():
        return None
    out = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
    assert isinstance(out, dict)
    return {str(k): v for k, v in out.items()}
