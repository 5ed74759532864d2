"""`python -m arena.train -m ...`: real Optuna studies on rpsw in SQLite (resume, a killed trial asked
again, two workers, pruning), and the checks a sweep passes first."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import optuna
import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import OmegaConf

from arena.bench.pruning import time_to_reach
from arena.config import config_dir
from arena.sweep.plan import distribution, plan
from arena.sweep.study import INTERRUPTED_KEY, _pruner, _Reporter, objective, storage_of
from arena.train import main
from arena.trainer.config import available_cores
from arena.trainer.telemetry.loggers import JsonlLogger

# One update a trial, scored by its PPO loss, which depends on the drawn ent_coef: the trials score apart.
TINY = ["trainer.total_timesteps=1", "trainer.num_envs=8", "sweep.objective=loss"]


def _declared_space() -> dict:
    """configs/sweep/rpsw.yaml's search space, parsed as the sweep parses it."""
    params = OmegaConf.load(config_dir() / "sweep" / "rpsw.yaml").sweep.params
    parsed = OverridesParser.create().parse_overrides([f"{k}={v}" for k, v in params.items()])
    return {o.key_or_group: o for o in parsed}


def _inside(override, value) -> bool:
    if override.is_interval_sweep():
        interval = override.value()
        return interval.start <= value <= interval.end
    return value in list(override.sweep_iterator())


def _mean_of_last(run_dir: Path, metric: str, window: int) -> float:
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    values = [json.loads(line)[metric] for line in lines if metric in json.loads(line)][-window:]
    return sum(values) / len(values)


def test_an_optuna_study_on_rpsw_trains_each_trial_in_its_own_run_dir_and_names_the_best(tmp_path):
    command = [sys.executable, "-m", "arena.train", "-m", "+sweep=rpsw", "sweep.n_trials=3",
               "sweep.name=study", *TINY]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    sweep_dir = tmp_path / "runs" / "sweeps" / "study"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"]  # nothing else written here
    assert sorted(p.name for p in sweep_dir.iterdir() if p.is_dir()) == ["0", "1", "2"]
    space = _declared_space()
    assert set(space) == {"trainer.learning_rate", "trainer.ent_coef", "trainer.update_epochs"}
    drawn, scores = [], []
    for trial in ("0", "1", "2"):
        run_dir = sweep_dir / trial
        cfg = OmegaConf.load(run_dir / "config.yaml")
        assert Path(cfg.run_dir) == run_dir.resolve() and cfg.env.name == "rpsw"
        params = {key: OmegaConf.select(cfg, key) for key in space}
        assert all(_inside(space[key], value) for key, value in params.items()), params
        drawn.append(params)
        scores.append(_mean_of_last(run_dir, cfg.sweep.objective, cfg.sweep.window))
        assert (run_dir / "checkpoints" / "trainer.pt").is_file()
        assert (run_dir / "train.log").is_file()
    assert len({tuple(sorted(p.items())) for p in drawn}) == 3, drawn
    assert len(set(scores)) == 3, scores
    result = OmegaConf.to_container(OmegaConf.load(sweep_dir / "optimization_results.yaml"))
    assert result["best_value"] == pytest.approx(max(scores), rel=1e-12, abs=1e-12)
    assert result["best_params"] == drawn[scores.index(max(scores))]
    assert "optimization_results.yaml" in done.stdout and str(Path("runs/sweeps/study")) in done.stdout
    # The study is Optuna's own, in SQLite: what optuna-dashboard opens.
    study = optuna.load_study(study_name="study", storage=f"sqlite:///{sweep_dir / 'study.db'}")
    assert [t.state for t in study.trials] == [optuna.trial.TrialState.COMPLETE] * 3
    assert [t.value for t in study.trials] == pytest.approx(scores, rel=1e-12, abs=1e-12)
    assert [{k: t.params[k] for k in space} for t in study.trials] == drawn

    # The same command resumes the study: the trials are kept, only the missing ones run.
    again = subprocess.run(command[:5] + ["sweep.n_trials=4"] + command[6:], cwd=tmp_path,
                           capture_output=True, text=True, timeout=240)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    study = optuna.load_study(study_name="study", storage=f"sqlite:///{sweep_dir / 'study.db'}")
    assert len(study.trials) == 4 and [t.value for t in study.trials[:3]] == pytest.approx(scores, abs=1e-12)
    assert sorted(p.name for p in sweep_dir.iterdir() if p.is_dir()) == ["0", "1", "2", "3"]
    same = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=240)
    storage = f"sqlite:///{sweep_dir / 'study.db'}"
    assert same.returncode == 0 and len(optuna.load_study(study_name="study", storage=storage).trials) == 4


def test_the_objective_is_the_mean_of_a_metric_over_the_last_records_holding_it(tmp_path):
    log = JsonlLogger(tmp_path)
    for step, (ret, other) in enumerate([(1.0, 5.0), (2.0, None), (4.0, 6.0)]):
        log.log({"episode_return": ret} | ({} if other is None else {"win_rate/x": other}), step=step)
    log.log({"entropy": 1.0}, step=3)
    log.close()
    assert objective(tmp_path, "episode_return") == 4.0
    assert objective(tmp_path, "episode_return", window=2) == 3.0
    assert objective(tmp_path, "win_rate/x", window=10) == 5.5
    with pytest.raises(ValueError, match=r"sweep.objective='gauntlet/x'.*metrics there: .*episode_return"):
        objective(tmp_path, "gauntlet/x")
    with pytest.raises(ValueError, match="sweep.window=0"):
        objective(tmp_path, "episode_return", window=0)


def test_a_nan_in_the_objective_window_makes_the_objective_nan(tmp_path):
    log = JsonlLogger(tmp_path)
    log.log({"episode_return": float("nan")}, step=0)
    log.log({"episode_return": 1.0}, step=1)
    log.close()
    assert math.isnan(objective(tmp_path, "episode_return", window=2))
    assert objective(tmp_path, "episode_return", window=1) == 1.0


def test_a_misspelt_key_in_a_command_line_sweep_is_refused_before_any_trial(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["-m", "+sweep=rpsw", "trainer.lr=interval(0.001,0.01)"]) == 2
    err = capsys.readouterr().err
    assert "search space: unknown config key 'trainer.lr'" in err and "learning_rate" in err
    assert list(tmp_path.iterdir()) == []


def test_a_misspelt_key_in_the_declared_search_space_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["-m", "+sweep=rpsw", '++sweep.params={trainer.entcoef:"interval(0,1)"}']) == 2
    assert "unknown config key 'trainer.entcoef'" in capsys.readouterr().err


def test_a_search_space_value_of_the_wrong_type_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["-m", "+sweep=rpsw", "trainer.num_envs=interval(1.5,64)"]) == 2
    assert "num_envs" in capsys.readouterr().err


def test_a_sweep_refuses_run_dir_since_each_trial_has_its_own(tmp_path, capsys):
    assert main(["-m", "+sweep=rpsw", f"run_dir={tmp_path / 'r'}"]) == 2
    assert "run_dir cannot be set in a sweep" in capsys.readouterr().err


def test_a_sweep_refuses_a_folder_that_holds_files_but_no_study_of_its_name(tmp_path, capsys):
    (tmp_path / "optimization_results.yaml").write_text("best_value: 1\n")
    assert main(["-m", "+sweep=rpsw", f"hydra.sweep.dir={tmp_path}"]) == 2
    assert "already holds files but" in capsys.readouterr().err


def test_a_study_started_with_another_search_space_is_not_resumed_under_its_name(tmp_path, capsys):
    first = plan(["+sweep=rpsw", f"hydra.sweep.dir={tmp_path}"])
    optuna.create_study(storage=storage_of(first), study_name="rpsw").set_user_attr(
        "arena_sweep", {**first.identity(), "space": {"trainer.ent_coef": "interval(0.0, 0.1)"}})
    assert main(["-m", "+sweep=rpsw", f"hydra.sweep.dir={tmp_path}"]) == 2
    err = capsys.readouterr().err
    assert "study 'rpsw'" in err and "was started with other space" in err and "sweep.name" in err


def test_cfg_with_multirun_prints_the_trials_config_and_search_space_and_writes_nothing(
        tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["-m", "+sweep=rpsw", "--cfg", "sweep.name=s", "trainer.clip_coef=interval(0.1,0.3)"]) == 0
    out = OmegaConf.create(capsys.readouterr().out)
    assert out.env.name == "rpsw" and out.sweep.name == "s" and out.sweep.objective == "episode_return"
    assert out.sweep.direction == "maximize" and out.hydra.sweep.dir == "runs/sweeps/s"
    assert out.sweep.storage == "sqlite:///runs/sweeps/s/study.db"
    assert out.sweep.params["trainer.clip_coef"] == "interval(0.1,0.3)"
    assert "trainer.learning_rate" in out.sweep.params
    assert list(tmp_path.iterdir()) == []


def test_the_sweep_group_is_accepted_without_a_plus_and_a_fixed_value_leaves_the_search_space():
    sweep = plan(["sweep=rpsw", "trainer.learning_rate=0.002", "sweep.name=x"])
    assert set(sweep.space) == {"trainer.ent_coef", "trainer.update_epochs"}
    assert sweep.config.trainer.learning_rate == 0.002
    assert sweep.sweep_dir == Path("runs/sweeps/x")
    assert "hydra.sweep.dir='runs/sweeps/x'" in sweep.argv and "sweep.name='x'" in sweep.argv


def _study(tmp_path: Path, name: str) -> optuna.Study:
    path = tmp_path / "runs" / "sweeps" / name / "study.db"
    return optuna.load_study(study_name=name, storage=f"sqlite:///{path}")


def _stop_when_logged(command: list[str], cwd: Path, sig: int, *metrics: Path) -> tuple[int, str]:
    """Runs ``command`` as a shell runs a background job (SIGINT ignored, which its children inherit)
    or, for SIGINT, as at a terminal; sends ``sig`` once every one of ``metrics`` holds an update;
    returns the exit status and stderr."""
    sigint = signal.SIG_DFL if sig == signal.SIGINT else signal.SIG_IGN
    with open(cwd / "out.txt", "w") as out, open(cwd / "err.txt", "w") as err:
        process = subprocess.Popen(command, cwd=cwd, stdout=out, stderr=err,
                                   preexec_fn=lambda: signal.signal(signal.SIGINT, sigint))
        try:
            for _ in range(1200):  # until the trials have logged an update (at most 2 minutes)
                if all(m.is_file() and m.read_text().strip() for m in metrics) or process.poll() is not None:
                    break
                time.sleep(0.1)
            assert process.poll() is None, (cwd / "err.txt").read_text()[-3000:]
            process.send_signal(sig)
            process.wait(timeout=120)
        finally:
            process.kill()
    return process.returncode, (cwd / "err.txt").read_text()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl_c", "kill_pid"])
def test_ctrl_c_or_kill_pid_during_a_trial_checkpoints_it_and_stops_the_whole_sweep(tmp_path, sig):
    command = [sys.executable, "-m", "arena.train", "-m", "+sweep=rpsw", "sweep.n_trials=3",
               "sweep.name=s", "trainer.total_timesteps=10000000", "trainer.num_envs=16"]
    trials = tmp_path / "runs" / "sweeps" / "s"
    code, err = _stop_when_logged(command, tmp_path, sig, trials / "0" / "metrics.jsonl")
    assert code == 130, err[-3000:]
    assert "sweep interrupted (trial 0 stopped at step" in err
    assert (trials / "0" / "checkpoints" / "trainer.pt").is_file()
    assert not (trials / "1").exists() and not (trials / "optimization_results.yaml").exists()
    trial = _study(tmp_path, "s").trials[0]
    assert trial.state == optuna.trial.TrialState.FAIL and trial.user_attrs[INTERRUPTED_KEY] is True


def test_kill_pid_of_a_sweep_with_workers_stops_every_worker_after_its_checkpoint(tmp_path):
    command = [sys.executable, "-m", "arena.train", "-m", "+sweep=rpsw", "sweep.n_trials=4", "sweep.name=tw",
               "sweep.workers=2", "trainer.total_timesteps=10000000", "trainer.num_envs=16"]
    trials = tmp_path / "runs" / "sweeps" / "tw"
    try:
        code, err = _stop_when_logged(command, tmp_path, signal.SIGTERM,
                                      trials / "0" / "metrics.jsonl", trials / "1" / "metrics.jsonl")
        assert code == 130, err[-3000:]
        assert "sweep interrupted" in err
        trials_run = _study(tmp_path, "tw").trials
        assert len(trials_run) == 2, err[-3000:]
        for trial in trials_run:  # no worker is left running a trial, and each stopped one checkpointed
            assert trial.state == optuna.trial.TrialState.FAIL, (trial.number, trial.state)
            assert trial.user_attrs[INTERRUPTED_KEY] is True
            assert (Path(trial.user_attrs["run_dir"]) / "checkpoints" / "trainer.pt").is_file()
    finally:  # a worker runs in a session of its own: never leave one training after a failure
        for trial in _study(tmp_path, "tw").trials if (trials / "study.db").is_file() else []:
            pid = trial.user_attrs.get("pid")
            cmdline = Path(f"/proc/{pid}/cmdline")
            if pid and cmdline.is_file() and b"arena.train" in cmdline.read_bytes():
                os.kill(pid, signal.SIGKILL)


def test_a_killed_trial_is_marked_failed_and_its_parameters_asked_again(tmp_path):
    command = [sys.executable, "-m", "arena.train", "-m", "+sweep=rpsw", "sweep.n_trials=1", "sweep.name=k",
               "sweep.heartbeat_s=1", "trainer.total_timesteps=30000", "trainer.num_envs=8"]
    metrics = tmp_path / "runs" / "sweeps" / "k" / "0" / "metrics.jsonl"
    code, _ = _stop_when_logged(command, tmp_path, signal.SIGKILL, metrics)  # no checkpoint, no word to
    assert code == -signal.SIGKILL  # the study: a dead machine
    (killed,) = _study(tmp_path, "k").trials
    assert killed.state == optuna.trial.TrialState.RUNNING  # as the storage last heard of it
    time.sleep(3)  # its heartbeat (1 s) has been silent for longer than the grace period (2 s)
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    first, retry = _study(tmp_path, "k").trials
    assert first.state == optuna.trial.TrialState.FAIL
    assert retry.state == optuna.trial.TrialState.COMPLETE and retry.params == first.params
    with warnings.catch_warnings():  # Optuna marks the heartbeat API experimental
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        assert optuna.storages.RetryHeartbeatStaleTrialCallback.retried_trial_number(retry) == 0
    assert (tmp_path / "runs" / "sweeps" / "k" / "1" / "checkpoints" / "trainer.pt").is_file()


def test_two_workers_run_one_study_each_with_its_share_of_the_cores(tmp_path):
    command = [sys.executable, "-m", "arena.train", "-m", "+sweep=rpsw", "sweep.n_trials=4", "sweep.name=w",
               "sweep.workers=2", *TINY]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    trials = _study(tmp_path, "w").trials
    complete = [t for t in trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert len(complete) >= 4 and len(trials) <= 5  # a worker may start one more as the other finishes
    share = max(1, available_cores() // 2)
    for trial in complete:
        cfg = OmegaConf.load(Path(trial.user_attrs["run_dir"]) / "config.yaml")
        assert cfg.trainer.num_threads == share and cfg.trainer.torch_threads == share
    assert len({t.user_attrs["pid"] for t in complete}) == 2  # both workers ran trials
    assert "optimization_results.yaml" in done.stdout


def test_a_trial_reports_its_running_objective_and_the_median_pruner_stops_a_laggard(tmp_path):
    sweep = plan(["+sweep=rpsw", f"hydra.sweep.dir={tmp_path}", "sweep.pruner=median", "sweep.window=2",
                  "sweep.prune_warmup=0.5", "trainer.total_timesteps=1000",
                  "sweep.sampler.n_startup_trials=2"])
    study = optuna.create_study(direction="maximize", pruner=_pruner(sweep))
    for score in (1.0, 2.0, 1.5, 2.5, 1.8):  # five finished trials (the pruner waits for 5) that scored well
        trial = study.ask()
        for step in (200, 600, 1000):
            trial.report(score, step)
        study.tell(trial, score)
    laggard = study.ask()
    reporter = _Reporter(laggard, "episode_return", window=2)
    reporter({"entropy": 1.0}, 100)  # records without the objective are not reports
    reporter({"episode_return": -1.0}, 200)  # below the median, but inside the warm-up: goes on
    reporter({"episode_return": 0.0}, 400)
    assert study.trials[laggard.number].intermediate_values == {200: -1.0, 400: -0.5}
    with pytest.raises(optuna.TrialPruned, match="episode_return = -0.25 at step 600"):
        reporter({"episode_return": -0.5}, 600)
    leader = study.ask()
    good = _Reporter(leader, "episode_return", window=1)
    good({"episode_return": 3.0}, 600)  # above the median: not pruned


@pytest.mark.parametrize("line,kind,low,high,log", [
    ("a=interval(0.1, 0.3)", "float", 0.1, 0.3, False),
    ("a=tag(log, interval(1e-4, 1e-2))", "float", 1e-4, 1e-2, True),
    ("a=tag(int, interval(1, 8))", "int", 1, 8, False),
    ("a=tag(int, log, interval(1, 64))", "int", 1, 64, True),
])
def test_an_interval_becomes_an_optuna_range(line, kind, low, high, log):
    (override,) = OverridesParser.create().parse_overrides([line])
    d = distribution(override).distribution
    cls = optuna.distributions.FloatDistribution if kind == "float" else optuna.distributions.IntDistribution
    assert isinstance(d, cls) and (d.low, d.high, d.log) == (low, high, log)


def test_choice_and_range_become_categories_that_write_back_as_the_command_line_wrote_them():
    parsed = OverridesParser.create().parse_overrides(["a=choice(1, 2, 4)", "b=range(0, 6, 2)",
                                                       "c=choice(adam, sgd)"])
    a, b, c = (distribution(o) for o in parsed)
    assert a.distribution.choices == (1, 2, 4) and a.override(4) == "a=4"
    assert b.distribution.choices == (0, 2, 4) and b.sample() == "b=0"
    assert c.override("sgd") == "c=sgd"


@pytest.mark.parametrize("line,message", [
    ("a=tag(log, interval(0, 1))", "a log interval needs lo > 0"),
    ("a=tag(int, interval(0.5, 2))", "an int interval needs integer ends"),
    ("a=tag(cube, interval(0, 1))", r"tags \['cube'\] are not understood"),
    ("a=tag(log, choice(1, 2))", "tags apply to an interval"),
    ("a=interval(1, 1)", "needs finite lo < hi"),
])
def test_a_sweep_optuna_cannot_draw_from_is_refused_by_name(line, message):
    (override,) = OverridesParser.create().parse_overrides([line])
    with pytest.raises(ValueError, match=message):
        distribution(override)


@pytest.mark.parametrize("override,message", [
    ("sweep.pruner=fast", "sweep.pruner='fast' must be one of"),
    ("sweep.direction=up", "sweep.direction='up' must be one of"),
    ("sweep.workers=0", "sweep.workers=0"),
])
def test_bad_sweep_settings_are_refused_before_any_trial(tmp_path, monkeypatch, capsys, override, message):
    monkeypatch.chdir(tmp_path)
    assert main(["-m", "+sweep=rpsw", override]) == 2
    assert message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_the_pruning_bench_times_when_a_study_first_matches_a_best_value():
    curve = [(4.0, None), (9.5, 0.12), (20.0, 0.12), (31.0, 0.18), (40.0, 0.2)]
    assert time_to_reach(curve, 0.18) == 31.0  # the first completion at or above it
    assert time_to_reach(curve, 0.1) == 9.5
    assert time_to_reach(curve, 0.21) is None  # never matched
    assert time_to_reach([], 0.0) is None
