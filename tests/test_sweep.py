"""`python -m arena.train -m ...`: a real Optuna study on rpsw, and the checks a sweep passes first."""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import OmegaConf

from arena.config import config_dir
from arena.sweep import objective, plan
from arena.train import main
from arena.trainer.telemetry.loggers import JsonlLogger

# One update a trial, scored by its PPO loss, which depends on the drawn ent_coef: the trials score apart.
TINY = ["trainer.total_timesteps=1", "trainer.num_envs=8", "sweep.objective=loss"]


def _declared_space() -> dict:
    """configs/sweep/rpsw.yaml's search space, parsed as the sweeper parses it."""
    params = OmegaConf.load(config_dir() / "sweep" / "rpsw.yaml").hydra.sweeper.params
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
    command = [sys.executable, "-m", "arena.train", "-m", "+sweep=rpsw", "hydra.sweeper.n_trials=3",
               "sweep.name=study", *TINY]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    sweep_dir = tmp_path / "runs" / "sweeps" / "study"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"]  # hydra wrote nothing else here
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
    assert len({tuple(sorted(p.items())) for p in drawn}) == 3, drawn
    assert len(set(scores)) == 3, scores
    result = OmegaConf.to_container(OmegaConf.load(sweep_dir / "optimization_results.yaml"))
    assert result["best_value"] == pytest.approx(max(scores), rel=1e-12, abs=1e-12)
    assert result["best_params"] == drawn[scores.index(max(scores))]
    assert "optimization_results.yaml" in done.stdout and str(Path("runs/sweeps/study")) in done.stdout


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
    assert main(["-m", "+sweep=rpsw", '++hydra.sweeper.params={trainer.entcoef:"interval(0,1)"}']) == 2
    assert "unknown config key 'trainer.entcoef'" in capsys.readouterr().err


def test_a_search_space_value_of_the_wrong_type_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["-m", "+sweep=rpsw", "trainer.num_envs=interval(1.5,64)"]) == 2
    assert "num_envs" in capsys.readouterr().err


def test_a_sweep_refuses_run_dir_since_each_trial_has_its_own(tmp_path, capsys):
    assert main(["-m", "+sweep=rpsw", f"run_dir={tmp_path / 'r'}"]) == 2
    assert "run_dir cannot be set in a sweep" in capsys.readouterr().err


def test_a_sweep_refuses_a_folder_that_already_holds_files(tmp_path, capsys):
    (tmp_path / "optimization_results.yaml").write_text("best_value: 1\n")
    assert main(["-m", "+sweep=rpsw", f"hydra.sweep.dir={tmp_path}"]) == 2
    assert "already holds files" in capsys.readouterr().err


def test_cfg_with_multirun_prints_the_trials_config_and_search_space_and_writes_nothing(
        tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["-m", "+sweep=rpsw", "--cfg", "sweep.name=s", "trainer.clip_coef=interval(0.1,0.3)"]) == 0
    out = OmegaConf.create(capsys.readouterr().out)
    assert out.env.name == "rpsw" and out.sweep.name == "s" and out.sweep.objective == "episode_return"
    assert out.hydra.sweeper.direction == "maximize" and out.hydra.sweep.dir == "runs/sweeps/s"
    assert out.hydra.sweeper.params["trainer.clip_coef"] == "interval(0.1,0.3)"
    assert "trainer.learning_rate" in out.hydra.sweeper.params
    assert list(tmp_path.iterdir()) == []


def test_the_sweep_group_is_accepted_without_a_plus_and_a_fixed_value_leaves_the_search_space():
    sweep = plan(["sweep=rpsw", "trainer.learning_rate=0.002", "sweep.name=x"])
    assert set(sweep.space) == {"trainer.ent_coef", "trainer.update_epochs"}
    assert sweep.config.trainer.learning_rate == 0.002
    assert sweep.sweep_dir == Path("runs/sweeps/x")
    assert "hydra.sweep.dir='runs/sweeps/x'" in sweep.argv and "sweep.name='x'" in sweep.argv


def test_ctrl_c_during_a_trial_checkpoints_it_and_stops_the_whole_sweep(tmp_path):
    command = [sys.executable, "-m", "arena.train", "-m", "+sweep=rpsw", "hydra.sweeper.n_trials=3",
               "sweep.name=s", "trainer.total_timesteps=10000000", "trainer.num_envs=16"]
    trials = tmp_path / "runs" / "sweeps" / "s"
    with open(tmp_path / "out.txt", "w") as out, open(tmp_path / "err.txt", "w") as err:
        # Ctrl-C as at a terminal: a shell starts background jobs (a CI script's pytest among them)
        # with SIGINT ignored, and a child would inherit that and never see the signal.
        process = subprocess.Popen(command, cwd=tmp_path, stdout=out, stderr=err,
                                   preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        try:
            for _ in range(1200):  # until trial 0 has logged an update (at most 2 minutes)
                metrics = trials / "0" / "metrics.jsonl"
                if metrics.is_file() and metrics.read_text().strip() or process.poll() is not None:
                    break
                time.sleep(0.1)
            process.send_signal(signal.SIGINT)
            process.wait(timeout=120)
        finally:
            process.kill()
    err = (tmp_path / "err.txt").read_text()
    assert process.returncode == 130, err[-3000:]
    assert "sweep interrupted (trial 0 stopped at step" in err
    assert (trials / "0" / "checkpoints" / "trainer.pt").is_file()
    assert not (trials / "1").exists() and not (trials / "optimization_results.yaml").exists()
