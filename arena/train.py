"""``python -m arena.train [group=option ...] [key=value ...]``: train a learner.

Hydra config groups (see ``configs/``): ``env`` (midrange, midrange_2v2, midrange_4v4, rpsw, goofspiel),
``agent``, ``trainer``, ``reward``, ``logger`` (none, wandb, tensorboard) and, with ``+league=NAME``
(or ``league=NAME``), ``league`` (selfplay, pfsp, alphastar, robust, psro, equilibrium). Examples::

    python -m arena.train                                   # midrange 1v1 vs heuristic + mirror play
    python -m arena.train env=rpsw trainer=quick logger=none
    python -m arena.train trainer.total_timesteps=2_000_000 logger=wandb reward=shaped
    python -m arena.train trainer.resume=latest run_dir=runs/my-run
    python -m arena.train +league=selfplay                  # league: mirror + PFSP over snapshots + bots
    python -m arena.train +league=alphastar league.snapshot.every_steps=500000
    python -m arena.train --cfg                             # print the resolved config and exit

Sweeps (``-m``: an Optuna study; see ``arena.sweep``, ``configs/sweep/`` and docs/tuning.md)::

    python -m arena.train -m +sweep=rpsw                    # an Optuna study on the tiny game (minutes)
    python -m arena.train -m +sweep=rpsw sweep.n_trials=20 'trainer.clip_coef=interval(0.1,0.3)'
    python -m arena.train -m +sweep=rpsw sweep.workers=2 sweep.pruner=median
    python -m arena.train -m +sweep=rpsw --cfg              # print the trials' config and search space

Trial N trains in ``runs/sweeps/<sweep.name>/N`` and scores the mean of ``sweep.objective`` (a key of
metrics.jsonl; default ``episode_return``) over its last ``sweep.window`` records, which the study
maximises (``sweep.direction``). The study lives in ``runs/sweeps/<sweep.name>/study.db``: the same
command resumes it. The best parameters and value land in
``runs/sweeps/<sweep.name>/optimization_results.yaml``.

The run directory holds ``config.yaml`` (resolved), ``checkpoints/trainer.pt`` (written atomically
every ``trainer.checkpoint_minutes`` (5) of wall time and/or ``trainer.checkpoint_interval`` samples,
and at exit, Ctrl-C and ``kill PID`` (SIGTERM; ``arena/stop_signal.py``) included) and ``metrics.jsonl``;
with a league also ``league.sqlite`` (players, every match, rating history: the league's source of
truth, which a resumed run reloads) and ``league/snapshots/<player>.pt``
(``python -m arena.league show RUN_DIR`` prints the leaderboard).

Data-parallel (``docs/scaling.md``): ``torchrun --nproc_per_node=N -m arena.train [...]`` runs N ranks
of one run: ``trainer.num_envs`` is the run's total, split among the ranks; gradients are averaged with
DDP; rank 0 holds the run directory (lock, league, loggers, dashboard, checkpoints) and decides the
matchmaking for every rank.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from arena.config import compose_run_config, exploiter_reward_config, game_overrides, opponent_mix
from arena.league.config import LeagueConfig, league_config
from arena.league.model.store import LEAGUE_DB
from arena.league.run.exploiter_ranks import ExploiterRanks, split_ranks, train_exploiter_rank
from arena.league.run.league_run import LeagueRun
from arena.provenance import record_start
from arena.rewards import build_reward
from arena.stop_signal import sigterm_stops_as_ctrl_c
from arena.sweep.plan import plan
from arena.sweep.study import RESULTS_FILE, launch, results
from arena.trainer.checkpoint import checkpoints_written
from arena.trainer.config import PolicyConfig, TrainerConfig
from arena.trainer.distributed import Collective, launched_by_torchrun
from arena.trainer.opponents import FixedMix
from arena.trainer.placement import placement
from arena.trainer.ppo import RESUME_OVERRIDES, PPOTrainer, trainer_env
from arena.trainer.run_lock import RunDirInUseError, RunLock
from arena.trainer.stages import StageSchedule, parse_stages
from arena.trainer.telemetry.dashboard import Dashboard
from arena.trainer.telemetry.health import HealthMonitor, health_metrics
from arena.trainer.telemetry.loggers import NoneLogger, make_logger

RecordListener = Callable[[dict[str, float], int], None]  # (metrics, learner step) of each record
logger = logging.getLogger("arena.train")


def _plain(node: Any) -> Any:
    from omegaconf import OmegaConf

    return OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node


def resolve_run_dir(cfg: Any) -> Path:
    if cfg.run_dir:
        return Path(cfg.run_dir)
    return Path("runs") / f"{cfg.env.name}-{time.strftime('%Y%m%d-%H%M%S')}"


def resolve_resume(resume: str | None, run_dir: Path, explicit_run_dir: bool,
                   league: bool = False) -> Path | None:
    """``trainer.resume``: a checkpoint path, or ``latest`` (this run_dir's checkpoint, or the newest
    checkpoint under runs/ when no run_dir is given). With ``league``, ``latest`` on a run_dir that
    holds a league but no checkpoint yet (stopped before its first) gives None: a fresh learner
    continues that league."""
    if not resume:
        return None
    if resume != "latest":
        path = Path(resume)
        if path.is_dir():
            path = path / "checkpoints" / "trainer.pt"
        if not path.is_file():
            raise FileNotFoundError(f"trainer.resume={resume!r}: no checkpoint file at {path}")
        return path
    if explicit_run_dir:
        path = run_dir / "checkpoints" / "trainer.pt"
        if not path.is_file():
            if league and (run_dir / LEAGUE_DB).is_file():
                logger.warning("trainer.resume=latest: %s holds a league but no checkpoint yet (the run "
                               "stopped before its first one): the learner starts afresh and the league "
                               "keeps its snapshots", run_dir)
                return None
            raise FileNotFoundError(f"trainer.resume=latest: {run_dir} has no checkpoint ({path} is missing)")
        return path
    found = sorted(Path("runs").glob("*/checkpoints/trainer.pt"), key=lambda p: p.stat().st_mtime)
    if not found:
        raise FileNotFoundError("trainer.resume=latest: no checkpoint under runs/*/checkpoints/")
    return found[-1]


def build_components(cfg: Any, run_dir: Path) -> dict[str, Any]:
    """The pieces a run is made of, from the resolved config (no training happens here)."""
    trainer_values = {k: v for k, v in _plain(cfg.trainer).items() if k not in ("resume", "init")}
    checkpoint_dir = Path(trainer_values["checkpoint_dir"])
    if not checkpoint_dir.is_absolute():
        trainer_values["checkpoint_dir"] = str(run_dir / checkpoint_dir)
    trainer_config = TrainerConfig(**trainer_values).validate()
    env = _plain(cfg.env)
    where = placement(trainer_config.device, env.get("device"))
    return {
        "trainer_config": trainer_config,
        "policy_config": PolicyConfig(**_plain(cfg.agent)).validate(),
        "game": env["name"],
        "team_sizes": tuple(env["team_sizes"]),
        "env_overrides": game_overrides(env),
        "env_device": where.env_device,
        "placement": where,
        "reward_fn": build_reward_fn(cfg),
        "matchmaker": FixedMix(
            opponent_mix(list(cfg.opponents.players), list(cfg.opponents.weights)),
            redraw=True,
            seed=trainer_config.seed,
        ),
        "stages": StageSchedule(parse_stages(_plain(cfg.stages) or [])),
    }


def build_trainer(
    cfg: Any, run_dir: Path, resume_path: Path | None = None, matchmaker: Any = None, collective: Any = None
) -> tuple[Any, dict[str, Any]]:
    """A new trainer as configured (its learner's weights from ``trainer.init`` when set), or one
    restored from ``resume_path``; and its components.
    ``matchmaker`` replaces the configured opponent mix (a league's matchmaker); ``collective``: this
    process is a rank of a data-parallel run (``arena.trainer.distributed``)."""
    parts = build_components(cfg, run_dir)
    if matchmaker is not None:
        parts["matchmaker"] = matchmaker
    if resume_path is None:
        config = parts["trainer_config"]
        ranks = collective.world if collective is not None else 1
        env = trainer_env(config, parts["game"], team_sizes=parts["team_sizes"],
                          env_overrides=parts["env_overrides"], device=parts["env_device"],
                          num_envs=collective.shard(config.num_envs).num_envs if ranks > 1 else None)
        try:
            trainer = PPOTrainer(config, parts["policy_config"], env=env, reward_fn=parts["reward_fn"],
                                 matchmaker=parts["matchmaker"], collective=collective)
        except BaseException:
            env.close()
            raise
        init = cfg.trainer.get("init")
        if init:
            try:
                sha256 = trainer.start_from(str(init), what="trainer.init")
            except BaseException:
                trainer.close()
                raise
            logger.info("the learner starts from %s (sha256 %s)", init, sha256[:12])
            parts["init"] = {"path": str(init), "sha256": sha256}
        return trainer, parts
    logger.info("resuming from %s", resume_path)
    trainer = PPOTrainer.resume(
        resume_path,
        reward_fn=parts["reward_fn"],
        matchmaker=parts["matchmaker"],
        config_overrides={key: getattr(parts["trainer_config"], key) for key in RESUME_OVERRIDES},
        collective=collective,
        env_device=parts["env_device"],
    )
    return trainer, parts


def build_reward_fn(cfg: Any, exploiter: bool = False) -> Any:
    """The run's reward function; ``exploiter``: the one its league's exploiters train on
    (``league.exploiter_reward``)."""
    trainer = cfg.trainer
    reward = exploiter_reward_config(cfg) if exploiter else cfg.reward
    return build_reward(_plain(reward.terms),
                        discount=(float(trainer.gamma), bool(trainer.bootstrap_truncation)))


def run_league_config(cfg: Any) -> LeagueConfig:
    """The run's checked ``LeagueConfig`` (``+league=NAME``). Where ``league.scripted`` is null, the
    league's bots are the env preset's ``env.league_bots`` when it names some (``env=midrange_2v2``
    does), else the game's reference bots."""
    game = str(cfg.env.name)
    config = league_config(cfg.league, game)
    preset = cfg.env.get("league_bots")
    if config.scripted is not None or preset is None:
        return config
    try:
        return league_config(dataclasses.replace(config, scripted=[str(b) for b in preset]), game)
    except ValueError as exc:
        raise ValueError(f"env.league_bots={list(preset)}: {exc}") from None


def open_league(cfg: Any, run_dir: Path, resuming: bool = False, learner_checkpoints: int = 0) -> Any:
    """The league of the run (``+league=NAME``), opened from RUN_DIR/league.sqlite; None without one.
    ``learner_checkpoints``: see ``LeagueRun``."""
    if cfg.league is None:
        return None

    if not resuming and (run_dir / LEAGUE_DB).is_file():
        logger.warning("%s already holds a league: a new learner joins it (trainer.resume=latest continues "
                       "the old one)", run_dir)
    if any(stage.get("opponents") for stage in _plain(cfg.stages) or []):
        raise ValueError("stages cannot set opponents when a league runs: the league chooses them")
    game = str(cfg.env.name)
    return LeagueRun(run_league_config(cfg), run_dir, game=game,
                     team_sizes=tuple(cfg.env.team_sizes), seed=int(cfg.trainer.seed),
                     learner_checkpoints=learner_checkpoints)


def run(cfg: Any, collective: Any = None, on_record: RecordListener | None = None) -> Path:
    """Trains as configured (holding the run directory's lock); returns the run directory. With
    ``collective`` this process is one rank of a data-parallel run: rank 0 chooses the run directory
    and the checkpoint to resume, and holds the lock. ``on_record(metrics, step)`` hears every record
    rank 0 logs (a sweep's trial reports its objective so); an exception it raises stops the run as
    any failure does, after the checkpoint."""
    main = collective is None or collective.is_main
    found: tuple[str, str | None] | BaseException | None = None
    if main:
        try:
            run_dir = resolve_run_dir(cfg)
            resume_path = resolve_resume(cfg.trainer.resume, run_dir, explicit_run_dir=bool(cfg.run_dir),
                                         league=cfg.league is not None)
            if resume_path is not None and not cfg.run_dir:
                run_dir = resume_path.parent.parent
            run_dir.mkdir(parents=True, exist_ok=True)
            found = (str(run_dir), None if resume_path is None else str(resume_path))
        except (ValueError, FileNotFoundError) as exc:
            found = exc
    if collective is not None:
        found = collective.from_main(found if main else None)
    if isinstance(found, BaseException):
        raise found
    assert found is not None
    run_dir, resume_path = Path(found[0]), None if found[1] is None else Path(found[1])
    if not main:
        return _train(cfg, run_dir, resume_path, collective)
    with RunLock(run_dir):  # one writer per run directory
        return _train(cfg, run_dir, resume_path, collective, on_record)


def _train(cfg: Any, run_dir: Path, resume_path: Path | None, collective: Any = None,
           on_record: RecordListener | None = None) -> Path:
    from omegaconf import OmegaConf

    ranks = None  # league.exploiter_ranks: exploiters train on the last ranks (league/run/exploiter_ranks.py)
    if collective is not None and cfg.league is not None and bool(cfg.league.get("exploiter_ranks", False)):
        layout, main_collective = split_ranks(run_league_config(cfg), collective,
                                              str(cfg.trainer.device))
        if main_collective is None:
            train_exploiter_rank(collective, layout, make_reward=lambda: build_reward_fn(cfg, exploiter=True))
            return run_dir
        ranks = ExploiterRanks(collective, layout)
        collective = main_collective
    elif cfg.league is not None and bool(cfg.league.get("exploiter_ranks", False)):
        logger.warning("league.exploiter_ranks=true needs torchrun (several ranks): in one process the "
                       "exploiters take their turns after each update of the main learner")
    main = collective is None or collective.is_main
    written = 0 if resume_path is None else checkpoints_written(resume_path)
    league_run = None
    if main:  # rank 0 holds the league
        league_run = open_league(cfg, run_dir, resuming=resume_path is not None or bool(cfg.trainer.resume),
                                 learner_checkpoints=written)
        if ranks is not None:
            league_run.use_exploiter_ranks(ranks)
    league_matchmaker = league_run.matchmaker() if league_run is not None else None
    try:
        trainer, parts = build_trainer(cfg, run_dir, resume_path, matchmaker=league_matchmaker,
                                       collective=collective)
        if league_run is not None:
            league_run.attach(trainer, make_reward=lambda: build_reward_fn(cfg, exploiter=True))
            if ranks is not None:
                ranks.setup(league_run)
        elif ranks is not None:
            ranks.follow_setup()
    except BaseException:
        if league_run is not None:
            league_run.close()
        raise
    if main:
        for note in parts["placement"].notes:
            logger.info(note)
        OmegaConf.save(cfg, run_dir / "config.yaml", resolve=True)
        record_start(run_dir, resumed_from=None if resume_path is None else str(resume_path),
                     step=trainer.global_step, ranks=1 if collective is None else collective.world,
                     init=parts.get("init"))
    log = NoneLogger()  # ranks other than 0 log nothing
    if main:
        log = make_logger(cfg.logger.kind, run_dir, **_logger_options(cfg, run_dir, trainer))
    health = HealthMonitor.from_config(cfg.health)
    stages = parts["stages"]

    def set_mix(mix: Mapping[str, float]) -> None:
        trainer.set_matchmaker(FixedMix(dict(mix), redraw=True, seed=trainer.config.seed + 1))

    total = trainer.config.total_timesteps
    interrupted = failed = False
    try:
        with Dashboard(total_steps=total, enabled=cfg.dashboard and main) as dashboard:
            while not trainer.done:
                stages.apply(trainer.global_step, trainer, set_mix)
                trainer.evaluate()
                trainer.train()
                metrics = trainer.mean_and_log()  # with a league: its round ran (LeagueRun.on_update)
                if league_run is None and ranks is not None:
                    ranks.follow()  # a main rank other than 0 takes part in the league round
                if not main:
                    continue
                warnings = health.update(metrics, progress=trainer.global_step / total)
                metrics.update(health_metrics(warnings))
                if stages.current is not None:
                    metrics["stage"] = float(stages.current)
                if league_run is not None:
                    league_run.log_views(log, trainer.global_step)
                log.log(metrics, step=trainer.global_step)
                dashboard.update(metrics, trainer.global_step, warnings)
                if on_record is not None:
                    on_record(metrics, trainer.global_step)
    except KeyboardInterrupt:
        interrupted = True
        logger.warning("interrupted at step %d%s", trainer.global_step,
                       "" if collective is not None else ": writing a checkpoint")
    except BaseException:
        failed = True
        raise
    finally:
        if league_run is not None and main and not failed:
            try:  # the last snapshot is a judged one (arena/league/run/guard.py); its gauntlet logged
                if league_run.finish(trainer.global_step):
                    log.log(league_run.metrics(), step=trainer.global_step)
            except (Exception, KeyboardInterrupt):  # the checkpoint below matters more
                logger.exception("the end-of-run gauntlet failed: the newest snapshot stays the last "
                                 "one taken during the run")
        if collective is not None and (interrupted or failed):
            # Saving is a collective: ranks stopped at different points would wait on each other.
            path = trainer.checkpoint_path()
            logger.warning("a data-parallel run stopped at step %d keeps its last checkpoint %s (written "
                           "every trainer.checkpoint_minutes)", trainer.global_step, path)
        else:
            path = trainer.save()
        if league_run is not None:
            try:
                league_run.save()
                league_run.log_views(log, trainer.global_step, force=True)
            finally:
                league_run.close()
        log.close()
        trainer.close()
    logger.info("%s: %s (step %d)", "stopped" if interrupted else "done", path, trainer.global_step)
    return run_dir


def _logger_options(cfg: Any, run_dir: Path, trainer: Any) -> dict[str, Any]:
    kind = cfg.logger.kind
    if kind != "wandb":
        return {}
    from omegaconf import OmegaConf

    return {
        "project": cfg.logger.project,
        "entity": cfg.logger.entity,
        "name": cfg.logger.name or run_dir.name,
        "tags": list(cfg.logger.tags),
        "mode": cfg.logger.mode,
        "log_snapshots": bool(cfg.logger.log_snapshots),
        "config": {
            **OmegaConf.to_container(cfg, resolve=True),
            "trainer_resolved": dataclasses.asdict(trainer.config),
        },
    }


USAGE = __doc__ or ""

MULTIRUN_FLAGS = ("-m", "--multirun")


def main(argv: list[str] | None = None) -> int:
    """The command line (``argv``: its arguments); the exit status: 0 done, 2 bad input (named on
    stderr). With ``-m`` it runs a sweep (see ``arena.sweep``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if any(a in ("-h", "--help") for a in argv):
        print(USAGE)
        return 0
    show_config = "--cfg" in argv
    multirun = any(a in MULTIRUN_FLAGS for a in argv)
    overrides = [a for a in argv if a != "--cfg" and a not in MULTIRUN_FLAGS]
    if multirun:
        return _sweep(overrides, show_config)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        cfg = compose_run_config(overrides)
        if show_config:
            from omegaconf import OmegaConf

            print(OmegaConf.to_yaml(cfg, resolve=True))
            return 0
        if any(o.lstrip("+").startswith("sweep=") for o in overrides):
            logger.warning("a sweep preset without -m trains once with its fixed values; -m runs the sweep")
        collective = Collective.join(str(cfg.trainer.device)) if launched_by_torchrun() else None
        if collective is not None and not collective.is_main:
            logging.getLogger().setLevel(logging.WARNING)  # rank 0 reports for the run
        try:
            # `kill PID` checkpoints as Ctrl-C does; torchrun's agent stops its ranks with SIGTERM and a
            # kill of its own, left to it
            with sigterm_stops_as_ctrl_c() if collective is None else contextlib.nullcontext():
                run_dir = run(cfg, collective)
        except BaseException:
            if collective is not None:
                collective.close(wait=False)
            raise
        if collective is not None:
            collective.close()
    except (ValueError, FileNotFoundError, RunDirInUseError) as exc:
        print(f"arena.train: error: {exc}", file=sys.stderr)
        return 2
    if collective is None or collective.is_main:
        print(f"run directory: {run_dir}")
    return 0


def _sweep(overrides: list[str], show_config: bool) -> int:
    """``-m``: checks the sweep, then runs its Optuna study (``arena.sweep``)."""
    from omegaconf import OmegaConf

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        sweep = plan(overrides)
    except (ValueError, FileNotFoundError) as exc:
        print(f"arena.train: error: {exc}", file=sys.stderr)
        return 2
    if show_config:
        print(OmegaConf.to_yaml({k: v for k, v in sweep.config.items() if k not in ("hydra", "sweep")}))
        print("# the sweep: its settings, search space (params) and folder")
        settings = OmegaConf.to_container(sweep.config.sweep, resolve=True)
        assert isinstance(settings, dict)
        space = {k: d.expression for k, d in sweep.space.items()}
        print(OmegaConf.to_yaml({"sweep": {**settings, "params": space, "storage": sweep.storage},
                                 "hydra": {"sweep": {"dir": str(sweep.sweep_dir)}}}))
        return 0
    print(sweep.describe(), flush=True)
    try:
        with sigterm_stops_as_ctrl_c():  # `kill PID` checkpoints the running trial as Ctrl-C does
            status = launch(sweep, run)
    except KeyboardInterrupt as exc:
        print(f"arena.train: sweep interrupted ({exc or 'Ctrl-C'}); its trials so far: {sweep.sweep_dir}; "
              "the same command resumes the study", file=sys.stderr)
        return 130
    except (ValueError, FileNotFoundError) as exc:
        print(f"arena.train: error: {exc}", file=sys.stderr)
        return 2
    if status != 0:
        return status
    print(f"sweep directory: {sweep.sweep_dir} (trial N trained in {sweep.sweep_dir}/N)")
    best = results(sweep.sweep_dir)
    if best is not None:
        print(f"{RESULTS_FILE}: {json.dumps(best)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
