"""`python -m arena.train`: hydra composition, validation at start-up, end-to-end runs and resume."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from arena.agents.policy import load_policy
from arena.atomic import sha256_file
from arena.config import ENV_CONFIGS, ENV_META_KEYS, compose_run_config, game_overrides
from arena.games import spec
from arena.train import build_components, build_trainer, main, run_league_config

QUICK = [
    "env=rpsw", "trainer=quick", "dashboard=false", "trainer.total_timesteps=3000", "trainer.num_envs=32"
]


def _metrics(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def test_default_config_trains_midrange_1v1_against_heuristic_and_mirror():
    cfg = compose_run_config([])
    assert cfg.env.name == "midrange" and list(cfg.env.team_sizes) == [1, 1]
    assert list(cfg.opponents.players) == ["mirror", "scripted:heuristic"]
    assert cfg.trainer.device == "cpu" and cfg.logger.kind == "none"


def test_the_bare_command_uses_the_from_scratch_recipe_and_rpsw_keeps_the_outcome_alone():
    cfg = compose_run_config([])
    assert {"outcome", "stalemate", "energy", "pointing", "missile_evaded"} <= set(cfg.reward.terms)
    assert cfg.reward.terms.pointing.zero_sum is True
    assert cfg.reward.terms.missile_evaded.anneal_steps == 55_000_000
    assert cfg.agent.critic_per_opponent is True
    assert cfg.trainer.learning_rate == 0.001 and cfg.trainer.update_epochs == 2
    assert cfg.trainer.gamma == 0.995 and cfg.trainer.bootstrap_truncation is False
    assert list(cfg.agent.action_prior[2]) == [0.97, 0.03]  # env=midrange: fires rarely at first
    two = compose_run_config(["env=midrange_2v2"])
    assert list(two.env.team_sizes) == [2, 2] and two.agent.action_prior == cfg.agent.action_prior
    rpsw = compose_run_config(["env=rpsw"])
    assert list(rpsw.reward.terms) == ["outcome"] and rpsw.agent.action_prior is None
    assert compose_run_config(["agent.action_prior=null"]).agent.action_prior is None


def test_the_robust_league_adds_midrange_reward_terms_that_the_command_line_can_change():
    robust = compose_run_config(["+league=robust"])
    reach, edge = robust.reward.terms.missile_reach, robust.reward.terms.left_arena
    assert reach.edge is True and reach.weight == 0.3 and reach.max_margin == 0.0
    assert edge.event == "left_arena" and edge.scale == -1.0 and edge.weight == 0.5
    assert set(compose_run_config([]).reward.terms) < set(robust.reward.terms)  # the rest: midrange's own
    assert "missile_reach" not in compose_run_config(["+league=selfplay"]).reward.terms
    # the run's own settings of a term win; a game the league names no terms for gets none
    mine = compose_run_config(["+league=robust",
                               "+reward.terms.left_arena={_target_:event,event:left_arena,weight:2.0}"])
    assert mine.reward.terms.left_arena.weight == 2.0 and "scale" not in mine.reward.terms.left_arena
    assert list(compose_run_config(["env=rpsw", "+league=robust"]).reward.terms) == ["outcome"]
    dropped = compose_run_config(["+league=robust", "~league.reward_terms.midrange"])
    assert "missile_reach" not in dropped.reward.terms
    # the league's own exploiter trains with as many envs as the learner
    assert compose_run_config(["+league=robust", "trainer.num_envs=64"]).league.main_exploiter.num_envs == 64


def test_league_reward_terms_for_an_unknown_game_are_refused_naming_the_games():
    cfg = compose_run_config(["+league=robust", "+league.reward_terms.midrang={}"])
    with pytest.raises(ValueError, match="league.reward_terms.midrang: unknown game 'midrang'; games: "):
        run_league_config(cfg)


def test_team_games_train_with_the_teams_trainers_unless_the_command_line_names_one():
    default = compose_run_config([]).trainer
    teams = compose_run_config(["env=midrange_2v2", "+league=selfplay"]).trainer
    assert teams.ent_coef == default.ent_coef / 2 and teams.total_timesteps == 130_000_000
    assert teams.kickstart_teacher == "scripted:heuristic" and teams.kickstart_steps == 30_000_000
    assert (teams.learning_rate, teams.gamma, teams.minibatch_size) == (
        default.learning_rate, default.gamma, default.minibatch_size
    )
    assert compose_run_config(["env=midrange_2v2", "trainer=quick"]).trainer.total_timesteps == 20_000
    assert compose_run_config(["env=midrange_2v2", "trainer.ent_coef=0.05"]).trainer.ent_coef == 0.05
    four = compose_run_config(["env=midrange_4v4", "+league=selfplay"]).trainer
    assert (four.ent_coef, four.total_timesteps, four.kickstart_teacher, four.kickstart_steps) == (
        teams.ent_coef, teams.total_timesteps, teams.kickstart_teacher, teams.kickstart_steps
    )
    assert four.num_envs == 256 and teams.num_envs == default.num_envs == 1024
    assert default.kickstart_teacher is None
    assert compose_run_config(["env=midrange_4v4", "trainer=quick"]).trainer.num_envs == 64
    assert compose_run_config(["env=midrange_4v4", "trainer.num_envs=512"]).trainer.num_envs == 512


def test_2v2_trains_with_a_price_per_launch_that_the_command_line_can_drop():
    """env=midrange_2v2 picks reward=teams: the from-scratch reward plus missile_fired, composed
    exactly as the runs that measured it composed it on the command line (docs/results/teams.md)."""
    bare = compose_run_config(["env=midrange_2v2", "+league=selfplay"])
    measured = compose_run_config(["env=midrange_2v2", "+league=selfplay", "reward=scratch",
                                   "+reward.terms.missile_fired={_target_:missile_fired,weight:0.05}"])
    assert OmegaConf.to_container(bare) == OmegaConf.to_container(measured)
    assert bare.reward.terms.missile_fired.weight == 0.05
    assert "missile_fired" not in compose_run_config(["env=midrange_2v2", "reward=scratch"]).reward.terms
    assert "missile_fired" not in compose_run_config(["env=midrange_4v4"]).reward.terms
    assert "missile_fired" not in compose_run_config([]).reward.terms
    assert list(compose_run_config(["env=midrange_2v2", "reward=outcome"]).reward.terms) == ["outcome"]


def test_2v2_leagues_train_against_the_heuristic_and_evader_teams_unless_the_command_line_names_bots():
    """env=midrange_2v2's league_bots: the league the bare 2v2 command opens is the one the run that
    measured it opened with league.scripted on the command line (docs/results/teams.md); 1v1 and 4v4
    keep the game's reference bots, and the gauntlet plays all three in every size."""
    bare = run_league_config(compose_run_config(["env=midrange_2v2", "+league=selfplay"]))
    measured = run_league_config(compose_run_config(
        ["env=midrange_2v2", "+league=selfplay", "env.league_bots=null", "league.scripted=[heuristic,evader]"]
    ))
    assert bare == measured and bare.scripted == ["heuristic", "evader"]
    assert bare.gauntlet.players is None  # the game's reference bots: random, heuristic, evader
    for sizes in ([], ["env=midrange_4v4"]):
        assert run_league_config(compose_run_config([*sizes, "+league=selfplay"])).scripted is None
    named = compose_run_config(["env=midrange_2v2", "+league=selfplay", "league.scripted=[random]"])
    assert run_league_config(named).scripted == ["random"]
    assert compose_run_config(["env=midrange_2v2"]).league is None  # no league unless one is chosen
    bad = compose_run_config(["env=midrange_2v2", "+league=selfplay", "env.league_bots=[ace]"])
    with pytest.raises(ValueError, match=r"env.league_bots=\['ace'\].*'ace'.*available: .*heuristic"):
        run_league_config(bad)


@pytest.mark.parametrize("preset", ["midrange", "midrange_2v2", "midrange_4v4", "rpsw", "goofspiel"])
def test_every_env_key_is_either_a_game_parameter_or_a_meta_key_the_game_never_receives(tmp_path, preset):
    """The env schema of every game is its meta keys (ENV_META_KEYS, declared once in arena/config.py)
    plus the game's parameters; the game is built from the parameters alone."""
    cfg = compose_run_config([f"env={preset}", "env.device=cpu"])
    name = cfg.env.name
    fields = [f.name for f in dataclasses.fields(ENV_CONFIGS[name])]
    assert fields == [*ENV_META_KEYS, *spec(name).params]
    overrides = build_components(cfg, tmp_path)["env_overrides"]
    assert set(overrides) == set(spec(name).params) == set(game_overrides(dict(cfg.env)))
    assert not set(overrides) & {"name", "team_sizes", "device", "league_bots"}


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("trainer.lr=1", "unknown config key 'trainer.lr'.*valid keys there: .*learning_rate"),
        ("env.bogus=1", "unknown config key 'env.bogus'.*time_limit_s"),
        ("bogus=1", "top level has no 'bogus'.*trainer"),
        ("trainer.num_envs=abc", "num_envs"),
        ("env=chess", "unknown env config 'chess'; available: .*midrange"),
        ("sweep.objectiv=x", "unknown config key 'sweep.objectiv'.*valid keys there: .*objective"),
        ("sweep=nope", "unknown sweep config 'nope'; available: .*rpsw"),
    ],
)
def test_a_misspelt_key_or_wrong_type_fails_at_start_up_naming_valid_choices(override, expected):
    with pytest.raises(ValueError, match=expected):
        compose_run_config([override])


def test_cli_reports_config_errors_with_exit_code_2(capsys):
    assert main(["trainer.lr=1"]) == 2
    assert "valid keys there" in capsys.readouterr().err


def test_cli_rejects_out_of_range_game_parameter_naming_it(tmp_path, capsys):
    assert main([*QUICK, "env=midrange", "env.time_limit_s=-5", f"run_dir={tmp_path / 'r'}"]) == 2
    assert "time_limit_s" in capsys.readouterr().err


def test_cli_rejects_unknown_reward_class_naming_the_term(tmp_path, capsys):
    term = "+reward.terms.mine={_target_:no_such_pkg.Reward,weight:1.0}"
    argv = [*QUICK, term, f"run_dir={tmp_path / 'r'}"]
    assert main(argv) == 2
    assert "mine" in capsys.readouterr().err


def test_cli_trains_end_to_end_with_logger_none(tmp_path):
    run_dir = tmp_path / "run"
    assert main([*QUICK, f"run_dir={run_dir}", "logger=none"]) == 0
    assert (run_dir / "config.yaml").is_file()
    assert (run_dir / "checkpoints" / "trainer.pt").is_file()
    lines = _metrics(run_dir)
    assert lines and lines[-1]["step"] >= 3000
    for key in ("SPS", "policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac",
                "explained_variance", "learning_rate", "episode_return", "reward/outcome"):
        assert key in lines[-1], key


def test_cli_trains_with_wandb_offline_without_an_account(tmp_path, monkeypatch):
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))  # no netrc login
    run_dir = tmp_path / "run"
    assert main([*QUICK, f"run_dir={run_dir}", "logger=wandb"]) == 0
    offline = list((run_dir / "wandb").glob("offline-run-*"))
    assert offline, "an offline W&B run was written"


def test_cli_resume_latest_continues_the_same_run(tmp_path):
    run_dir = tmp_path / "run"
    assert main([*QUICK, f"run_dir={run_dir}"]) == 0
    first = _metrics(run_dir)[-1]["step"]
    assert main([*QUICK, f"run_dir={run_dir}", "trainer.total_timesteps=6000", "trainer.resume=latest"]) == 0
    steps = [m["step"] for m in _metrics(run_dir)]
    assert steps[-1] >= 6000 and first in steps and steps == sorted(steps)


def test_every_start_of_a_run_records_its_commit_and_machine(tmp_path):
    run_dir = tmp_path / "run"
    assert main([*QUICK, f"run_dir={run_dir}"]) == 0
    assert main([*QUICK, f"run_dir={run_dir}", "trainer.total_timesteps=6000", "trainer.resume=latest"]) == 0
    starts = json.loads((run_dir / "provenance.json").read_text())
    assert len(starts) == 2 and starts[0]["resumed_from"] is None and starts[0]["step"] == 0
    assert starts[1]["resumed_from"] and starts[1]["step"] > 0
    assert all(s["cpus"] >= 1 and s["ranks"] == 1 and "commit" in s for s in starts)


def test_cli_resume_from_a_missing_checkpoint_is_a_clear_error(tmp_path, capsys):
    assert main([*QUICK, f"run_dir={tmp_path / 'none'}", "trainer.resume=latest"]) == 2
    assert "no checkpoint" in capsys.readouterr().err


def test_a_run_given_trainer_init_starts_from_that_files_weights_and_records_it(tmp_path):
    assert main([*QUICK, f"run_dir={tmp_path / 'first'}"]) == 0
    weights = tmp_path / "first" / "checkpoints" / "trainer.pt"
    given = load_policy(weights).state_dict()
    for init, same in ((None, False), (weights, True)):
        extra = [] if init is None else [f"trainer.init={init}"]
        trainer, parts = build_trainer(compose_run_config([*QUICK, *extra]), tmp_path / "built")
        try:
            mine = trainer.policy.state_dict()
            assert all(torch.equal(mine[k].cpu(), given[k]) for k in given) is same
        finally:
            trainer.close()
    trainer, _ = build_trainer(compose_run_config(QUICK), tmp_path / "learnt")
    try:
        trainer.evaluate()
        trainer.train()
        with pytest.raises(RuntimeError, match="before it learns"):  # Adam's moments belong to its weights
            trainer.start_from(weights)
    finally:
        trainer.close()
    run_dir = tmp_path / "second"
    assert main([*QUICK, f"run_dir={run_dir}", f"trainer.init={weights}"]) == 0
    (start,) = json.loads((run_dir / "provenance.json").read_text())
    assert start["init"]["path"] == str(weights) and start["init"]["sha256"] == sha256_file(weights)


def test_a_resumed_run_keeps_its_checkpoints_weights_and_does_not_read_trainer_init(tmp_path):
    run_dir = tmp_path / "run"
    assert main([*QUICK, f"run_dir={run_dir}"]) == 0
    missing = tmp_path / "gone.pt"
    assert main([*QUICK, f"run_dir={run_dir}", "trainer.total_timesteps=6000", "trainer.resume=latest",
                 f"trainer.init={missing}"]) == 0
    starts = json.loads((run_dir / "provenance.json").read_text())
    assert starts[1]["resumed_from"] and starts[1]["init"] is None


def test_trainer_init_of_another_architecture_or_a_missing_file_is_a_clear_error(tmp_path, capsys):
    assert main([*QUICK, f"run_dir={tmp_path / 'small'}", "agent.lstm_size=16", "agent.hidden_size=16"]) == 0
    small = tmp_path / "small" / "checkpoints" / "trainer.pt"
    assert main([*QUICK, f"run_dir={tmp_path / 'a'}", f"trainer.init={small}"]) == 2
    err = capsys.readouterr().err
    assert f"trainer.init={small}" in err and "architecture" in err and "16" in err
    missing = tmp_path / "gone.pt"
    assert main([*QUICK, f"run_dir={tmp_path / 'b'}", f"trainer.init={missing}"]) == 2
    assert f"trainer.init={missing}" in capsys.readouterr().err


def test_stages_switch_learning_rate_and_opponents_at_their_step_counts(tmp_path):
    run_dir = tmp_path / "run"
    stages = (
        "stages=[{steps:1024,trainer:{learning_rate:0.01}},"
        "{steps:1024,trainer:{learning_rate:0.001},opponents:{players:[scripted:cycle],weights:[1.0]}}]"
    )
    assert main([*QUICK, f"run_dir={run_dir}", "trainer.anneal_lr=false", stages]) == 0
    by_stage = {}
    for m in _metrics(run_dir):
        by_stage.setdefault(m["stage"], []).append(m)
    assert by_stage[0][0]["learning_rate"] == pytest.approx(0.01)
    assert by_stage[1][-1]["learning_rate"] == pytest.approx(0.001)
    assert any("win_rate/scripted:cycle" in m for m in by_stage[1])


def test_python_dash_m_entry_point_prints_help():
    out = subprocess.run([sys.executable, "-m", "arena.train", "--help"], capture_output=True, text=True,
                         env={**os.environ}, check=True).stdout
    assert "+league" in out and "trainer.resume" in out


def test_cfg_prints_the_resolved_config_and_trains_nothing(tmp_path, capsys):
    run_dir = tmp_path / "r"
    assert main(["--cfg", "env=rpsw", f"run_dir={run_dir}", "sweep.objective=win_rate/scripted:random"]) == 0
    out = OmegaConf.create(capsys.readouterr().out)
    assert out.env.name == "rpsw" and out.run_dir == str(run_dir) and "hydra" not in out
    assert out.sweep.objective == "win_rate/scripted:random"
    assert out.sweep.name == "rpsw"  # the game's name: the same command resumes its study
    assert not run_dir.exists()


def test_python_dash_m_single_run_exits_0_naming_its_run_dir_and_hydra_writes_nothing(tmp_path):
    command = [sys.executable, "-m", "arena.train", *QUICK, "trainer.total_timesteps=1", "run_dir=r"]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "run directory: r" in done.stdout
    assert [p.name for p in tmp_path.iterdir()] == ["r"]
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == [
        ".arena.lock", "checkpoints", "config.yaml", "metrics.jsonl", "provenance.json"]


def test_python_dash_m_exits_2_on_a_misspelt_key_single_run_or_sweep(tmp_path):
    for multirun in ([], ["-m", "+sweep=rpsw"]):
        done = subprocess.run([sys.executable, "-m", "arena.train", *multirun, "trainer.lr=1"], cwd=tmp_path,
                              capture_output=True, text=True, check=False)
        assert done.returncode == 2, (multirun, done.stderr[-3000:])
        assert "unknown config key 'trainer.lr'" in done.stderr and "learning_rate" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_sweep_preset_without_dash_m_trains_once_with_its_fixed_values(tmp_path, caplog):
    run_dir = tmp_path / "r"
    argv = ["+sweep=rpsw", "trainer.total_timesteps=1", "trainer.num_envs=16", f"run_dir={run_dir}"]
    assert main(argv) == 0
    cfg = OmegaConf.load(run_dir / "config.yaml")
    assert cfg.env.name == "rpsw" and cfg.trainer.learning_rate == 0.003  # trainer=quick's, not a draw
    assert "-m runs the sweep" in caplog.text
