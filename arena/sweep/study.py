"""An Optuna study run through Optuna's own API: storage, resume, trials, pruning, workers.

- **Storage.** The study lives in ``sweep.storage`` (default ``sqlite:///<sweep folder>/study.db``), under
  ``sweep.name``. Re-running the same command resumes it: finished trials are kept and the study asks
  for the ones still missing (``sweep.n_trials`` counts complete and pruned trials). Any process
  pointed at the same storage URL and name (here ``sweep.workers`` of them, or several machines
  sharing a database) runs trials of that one study.
- **Failed trials.** Each running trial beats a heartbeat into the storage every ``sweep.heartbeat_s``;
  one silent for twice as long (its process was killed) is marked failed by the next trial to start,
  and Optuna's ``RetryHeartbeatStaleTrialCallback`` asks its parameters again. A trial stopped by Ctrl-C
  or ``kill PID`` (SIGTERM, ``arena/stop_signal.py``) checkpoints, is marked failed, and the next run
  of the command asks its parameters again.
- **Trials.** Trial N composes the sweep's fixed overrides plus its drawn values with hydra (every key
  check and message of a single run), trains in ``<sweep folder>/N`` (its log in ``train.log`` there)
  and scores the mean of ``sweep.objective`` over its last ``sweep.window`` records.
- **Pruning.** Each record holding the objective reports that mean as an intermediate value at the
  learner's step; ``sweep.pruner`` (``median``: below the median of earlier trials at the same step;
  ``hyperband``) stops a trial after ``sweep.prune_warmup`` of its steps (and, for ``median``, once 5
trials have finished), after its checkpoint.
- **Workers.** ``sweep.workers=N`` starts N processes of the same command, each running trials with
  ``1/N`` of the cores for torch and for the simulator's threads. They run in a session of their own,
  so a Ctrl-C at the terminal or a ``kill PID`` reaches the parent alone, which passes one SIGTERM to
  each worker: each checkpoints its trial once, not interrupted again while it writes.
"""

from __future__ import annotations

import json
import logging
import math
import os
import signal
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from arena.atomic import atomic_path
from arena.config import compose_run_config
from arena.sweep.plan import SweepPlan
from arena.trainer.config import available_cores

logger = logging.getLogger("arena.sweep")

RESULTS_FILE = "optimization_results.yaml"  # the best trial, written into the sweep's folder
IDENTITY_KEY = "arena_sweep"  # study user attribute: the search space and fixed values it was started with
REQUEUED_KEY = "arena_requeued"  # study user attribute: interrupted trials already asked again
INTERRUPTED_KEY = "interrupted"  # trial user attribute: stopped by Ctrl-C (its checkpoint is in run_dir)
THREADS_ENV = "ARENA_SWEEP_THREADS"  # a worker's share of the cores, set by the process that started it
Train = Callable[..., Any]  # arena.train.run(cfg, on_record=...)


def objective(run_dir: Path, metric: str, window: int = 1) -> float:
    """The mean of ``metric`` over the last ``window`` records of RUN_DIR/metrics.jsonl that hold it
    (a null there, i.e. a NaN, counts as NaN: the study marks that trial failed). A ``ValueError``
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


def storage_of(plan: SweepPlan) -> Any:
    """The study's ``RDBStorage``: heartbeats for running trials, a retry for a trial whose process
    died, and a patient lock wait for SQLite shared by several processes."""
    import optuna

    url = plan.storage
    engine: dict[str, Any] = {}
    if url.startswith("sqlite:///"):
        Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
        engine = {"connect_args": {"timeout": 60}}
    beat = int(plan.settings.heartbeat_s)
    with warnings.catch_warnings():  # heartbeats are marked experimental, and have been since Optuna 2.9
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return optuna.storages.RDBStorage(
            url, engine_kwargs=engine, heartbeat_interval=beat, grace_period=2 * beat,
            heartbeat_stale_trial_callback=optuna.storages.RetryHeartbeatStaleTrialCallback(max_retry=3))


def _pruner(plan: SweepPlan) -> Any:
    import optuna

    s = plan.settings
    total = int(plan.config.trainer.total_timesteps)
    warmup = int(s.prune_warmup * total)
    if s.pruner == "median":
        # Optuna's default 5 finished trials before any pruning: with 2, a 16-trial rpsw study pruned
        # 13 trials, slow starters among them, and missed the best (docs/results/tuning.md)
        return optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=warmup)
    if s.pruner == "hyperband":
        return optuna.pruners.HyperbandPruner(min_resource=max(1, warmup), max_resource=max(2, total))
    return optuna.pruners.NopPruner()


def open_study(plan: SweepPlan) -> Any:
    """Creates the study, or loads it when one of that name is in the storage (a resume); refuses a
    folder that holds files but no such study, and a study started with another search space."""
    import optuna

    storage = storage_of(plan)
    exists = plan.study_name in optuna.get_all_study_names(storage=storage)
    folder = plan.sweep_dir
    if not exists and folder.is_dir() and any(p.name != Path(plan.storage).name for p in folder.iterdir()):
        raise ValueError(f"hydra.sweep.dir {folder} already holds files but {plan.storage} has no study "
                         f"{plan.study_name!r} (an earlier sweep?): choose another with sweep.name=NAME or "
                         "hydra.sweep.dir=DIR")
    s = plan.settings
    sampler = optuna.samplers.TPESampler(seed=None if s.sampler.seed is None else int(s.sampler.seed),
                                         n_startup_trials=int(s.sampler.n_startup_trials))
    study = optuna.create_study(storage=storage, study_name=plan.study_name, direction=str(s.direction),
                                sampler=sampler, pruner=_pruner(plan), load_if_exists=True)
    identity = plan.identity()
    stored = study.user_attrs.get(IDENTITY_KEY)
    if stored is None:
        study.set_user_attr(IDENTITY_KEY, identity)
    elif stored != identity:
        changed = sorted(k for k in identity if stored.get(k) != identity[k])
        raise ValueError(f"study {plan.study_name!r} in {plan.storage} was started with other "
                         f"{', '.join(changed)} ({ {k: stored.get(k) for k in changed} }); this sweep has "
                         f"{ {k: identity[k] for k in changed} }: choose another sweep.name to start a new "
                         "study")
    return study


def _requeue_interrupted(study: Any) -> None:
    """Asks again the parameters of trials stopped by Ctrl-C (marked failed), once each."""
    import optuna

    done = set(study.user_attrs.get(REQUEUED_KEY, []))
    again = [t for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.FAIL,))
             if t.user_attrs.get(INTERRUPTED_KEY) and t.number not in done]
    for trial in again:
        study.enqueue_trial(trial.params, user_attrs={"retry_of": trial.number}, skip_if_exists=False)
        logger.info("trial %d was interrupted: its parameters are asked again", trial.number)
    if again:
        study.set_user_attr(REQUEUED_KEY, sorted(done | {t.number for t in again}))


def finished(study: Any) -> int:
    """Trials that count towards ``sweep.n_trials``: complete or pruned."""
    import optuna

    states = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
    return len(study.get_trials(deepcopy=False, states=states))


def _suggest(trial: Any, key: str, distribution: Any) -> Any:
    import optuna

    name = key.lstrip("+~")
    if isinstance(distribution, optuna.distributions.FloatDistribution):
        return trial.suggest_float(name, distribution.low, distribution.high, log=distribution.log)
    if isinstance(distribution, optuna.distributions.IntDistribution):
        return trial.suggest_int(name, distribution.low, distribution.high, log=distribution.log)
    return trial.suggest_categorical(name, distribution.choices)


class _Reporter:
    """Hears a trial's records: reports the objective's running mean and prunes when told to."""

    def __init__(self, trial: Any, metric: str, window: int) -> None:
        self.trial, self.metric, self.window = trial, metric, window
        self.values: list[float] = []

    def __call__(self, metrics: dict[str, float], step: int) -> None:
        import optuna

        if self.metric not in metrics:
            return
        self.values.append(float(metrics[self.metric]))
        last = self.values[-self.window:]
        value = sum(last) / len(last)
        if not math.isfinite(value):
            return
        self.trial.report(value, int(step))
        if self.trial.should_prune():
            raise optuna.TrialPruned(f"{self.metric} = {value:.6g} at step {step}")


def run_trial(trial: Any, plan: SweepPlan, train: Train) -> float:
    """One trial: composes its config, trains it in ``<sweep folder>/<number>``, returns its objective."""
    lines = list(plan.fixed)
    for key, dimension in plan.space.items():
        lines.append(dimension.override(_suggest(trial, key, dimension.distribution)))
    cfg = compose_run_config(lines)
    run_dir = (plan.sweep_dir / str(trial.number)).resolve()
    cfg.run_dir = str(run_dir)
    share = os.environ.get(THREADS_ENV)
    if share:  # a worker's share of the cores, unless the sweep fixes the threads itself
        if cfg.trainer.num_threads is None:
            cfg.trainer.num_threads = int(share)
        if cfg.trainer.torch_threads is None:
            cfg.trainer.torch_threads = int(share)
    trial.set_user_attr("run_dir", str(run_dir))
    trial.set_user_attr("pid", os.getpid())  # which worker ran it
    run_dir.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(run_dir / "train.log")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.getLogger().addHandler(handler)
    s = plan.settings
    try:
        logger.info("trial %d: %s", trial.number, " ".join(lines[len(plan.fixed):]) or "(no search space)")
        train(cfg, on_record=_Reporter(trial, str(s.objective), int(s.window)))
        step, total = _last_step(run_dir), int(cfg.trainer.total_timesteps)
        if step < total:  # train returns early only on Ctrl-C (after its checkpoint): the sweep stops
            trial.set_user_attr(INTERRUPTED_KEY, True)
            raise KeyboardInterrupt(f"trial {trial.number} stopped at step {step} of {total}")
        value = objective(run_dir, str(s.objective), int(s.window))
        logger.info("trial %d: %s = %.6g (%s)", trial.number, s.objective, value, run_dir)
        return value
    finally:
        logging.getLogger().removeHandler(handler)
        handler.close()


def optimize(plan: SweepPlan, train: Train) -> Any:
    """This process's part of the study: trials until ``sweep.n_trials`` have finished; the study."""
    import optuna

    study = open_study(plan)
    _requeue_interrupted(study)
    n, done = int(plan.settings.n_trials), finished(study)
    if done >= n:
        logger.info("study %r already has %d finished trials (sweep.n_trials=%d)", plan.study_name, done, n)
        return study
    states = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
    study.optimize(lambda trial: run_trial(trial, plan, train),
                   callbacks=[optuna.study.MaxTrialsCallback(n, states=states)], gc_after_trial=True)
    return study


def launch(plan: SweepPlan, train: Train) -> int:
    """Runs the sweep: in this process (``sweep.workers=1``) or in N worker processes of the same
    command, each with its share of the cores; 0 when done, 130 when interrupted, else a worker's
    failing exit status."""
    logging.getLogger("alembic").setLevel(logging.WARNING)  # Optuna's storage logs its set-up
    workers = int(plan.settings.workers)
    if workers == 1:
        write_results(plan, optimize(plan, train))
        return 0
    study = open_study(plan)  # created once, before the workers load it
    share = max(1, available_cores() // workers)
    env = {**os.environ, THREADS_ENV: str(share), "OMP_NUM_THREADS": str(share),
           "MKL_NUM_THREADS": str(share)}
    argv = [a for a in plan.argv if not a.lstrip("+~").startswith("sweep.workers=")]
    command = [sys.executable, "-m", "arena.train", "-m", *argv, "sweep.workers=1"]
    logger.info("%d workers, %d core(s) each: %s", workers, share, " ".join(command))
    processes = [subprocess.Popen(command, env=env, start_new_session=True) for _ in range(workers)]
    try:
        codes = [p.wait() for p in processes]
    except KeyboardInterrupt:
        for p in processes:  # each checkpoints its trial and exits (SIGTERM stops it as Ctrl-C does)
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in processes:
            p.wait()
        raise
    failed = [c for c in codes if c != 0]
    if failed:
        return 130 if 130 in failed else failed[0]
    write_results(plan, study)  # the workers' trials, read from the shared storage
    return 0


def best(study: Any) -> dict[str, Any] | None:
    """The study's best complete trial: ``best_params``, ``best_value``, ``best_trial``, ``run_dir``,
    and the counts of trials by state; None before any trial completed."""
    import optuna

    trials = study.get_trials(deepcopy=False)
    counts: dict[str, int] = {}
    for t in trials:
        counts[t.state.name.lower()] = counts.get(t.state.name.lower(), 0) + 1
    if not any(t.state == optuna.trial.TrialState.COMPLETE for t in trials):
        return None
    top = study.best_trial
    return {"best_params": dict(top.params), "best_value": float(top.value), "best_trial": top.number,
            "run_dir": top.user_attrs.get("run_dir"), "trials": counts}


def write_results(plan: SweepPlan, study: Any) -> dict[str, Any] | None:
    """Writes the study's best trial into ``<sweep folder>/optimization_results.yaml`` (atomically)."""
    from omegaconf import OmegaConf

    found = best(study)
    if found is None:
        return None
    path = plan.sweep_dir / RESULTS_FILE
    with atomic_path(path) as tmp:
        OmegaConf.save(OmegaConf.create(found), tmp)
    logger.info("best trial %d: %s = %.6g with %s", found["best_trial"], plan.settings.objective,
                found["best_value"], found["best_params"])
    return found


def results(sweep_dir: Path) -> dict[str, Any] | None:
    """The ``optimization_results.yaml`` a sweep wrote (best_params, best_value, ...); None without one."""
    from omegaconf import OmegaConf

    path = Path(sweep_dir) / RESULTS_FILE
    if not path.is_file():
        return None
    out = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
    assert isinstance(out, dict)
    return {str(k): v for k, v in out.items()}
