"""The typed seam between a trainer and the league: the trainer emits ``MatchesEnded`` and
``UpdateFinished`` (arena/trainer/events.py), the league listens, and the one command back is
``PPOTrainer.restore_policy``; the trainer imports nothing from the league."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch

from arena.league.config import league_config
from arena.league.run.league_run import LeagueRun
from arena.trainer.config import PolicyConfig, TrainerConfig
from arena.trainer.events import UpdateFinished
from arena.trainer.ppo import PPOTrainer

SMALL = PolicyConfig(hidden_size=8, lstm_size=8)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def small_trainer(tmp_path, matchmaker=None) -> PPOTrainer:
    config = TrainerConfig(num_envs=4, num_threads=1, torch_threads=1, total_timesteps=10**6, bptt_horizon=8,
                           rollout_steps=16, minibatch_size=64, seed=1,
                           checkpoint_dir=str(tmp_path / "checkpoints"))
    return PPOTrainer(config, SMALL, game="rpsw", matchmaker=matchmaker)


def test_every_update_listener_hears_each_update_in_order_and_its_metrics_join_the_updates(tmp_path):
    trainer = small_trainer(tmp_path)
    heard: list[tuple[str, UpdateFinished]] = []
    trainer.add_update_listener(lambda e: heard.append(("first", e)) or {"first/seen": float(e.update)})
    trainer.add_update_listener(
        lambda e: heard.append(("second", e)) or {"second/step": float(e.learner_step)})
    try:
        for update in (1, 2):
            trainer.evaluate()
            trainer.train()
            metrics = trainer.mean_and_log()
            assert [who for who, _ in heard[-2:]] == ["first", "second"]
            event = heard[-1][1]
            assert event is heard[-2][1]  # one event for every listener
            assert (event.learner_step, event.update) == (trainer.global_step, update)
            assert event.checkpoints_written == trainer.checkpoints_written
            assert event.policy is trainer.policy
            assert event.metrics["global_step"] == trainer.global_step
            assert "first/seen" not in event.metrics  # the update's own metrics, before the listeners'
            assert metrics["first/seen"] == update and metrics["second/step"] == trainer.global_step
        assert len(heard) == 4
    finally:
        trainer.close()


def test_restore_policy_replaces_the_learners_weights_and_clears_adams_moments(tmp_path):
    trainer = small_trainer(tmp_path)
    try:
        trainer.evaluate()
        trainer.train()
        assert trainer.optimizer.state  # Adam has moments for the weights it trained
        other = {k: torch.randn_like(v) for k, v in trainer.policy.state_dict().items()}
        trainer.restore_policy(other)
        for name, value in trainer.policy.state_dict().items():
            assert torch.equal(value, other[name]), name
        assert not trainer.optimizer.state
        with pytest.raises(RuntimeError, match="lstm"):  # weights of another architecture
            trainer.restore_policy({k: v for k, v in other.items() if not k.startswith("lstm")})
    finally:
        trainer.close()


def test_an_attached_league_takes_its_snapshots_from_the_trainers_update_events_alone(tmp_path):
    config = league_config({"matchmaking": {"mix": {"mirror": 0.5, "scripted": 0.5, "pfsp": 0.0}},
                            "snapshot": {"every_steps": 1, "beat_all_threshold": None},
                            "gauntlet": {"games": 0}})
    run = LeagueRun(config, tmp_path, game="rpsw")
    trainer = small_trainer(tmp_path, run.matchmaker())
    try:
        run.attach(trainer)
        steps = []
        for _ in range(3):  # the loop never calls the league: the trainer's events drive it
            trainer.evaluate()
            trainer.train()
            metrics = trainer.mean_and_log()
            steps.append(trainer.global_step)
            assert metrics["league/snapshots"] == len(steps)
        snapshots = run.league.pool.snapshots(parent=run.learner_id)
        assert [p.step for p in snapshots] == steps
        assert run.league.match_count > 0  # the matches arrived through MatchesEnded
    finally:
        trainer.close()
        run.close()


def test_the_trainer_package_imports_nothing_from_the_league():
    trainer_dir = Path(__file__).resolve().parents[1] / "arena" / "trainer"
    offenders = []
    for path in sorted(trainer_dir.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [f"{path.name}: {n}" for n in names
                          if n == "arena.league" or n.startswith("arena.league.")]
    assert not offenders, offenders
