"""The guard: a main-learner snapshot that falls clearly below the best one is not published (the best
one's weights are); after guard_patience such drops in a row the learner is restored from the best
snapshot (arena/league/run/guard.py)."""

from __future__ import annotations

import json

import pytest
import torch

from arena.agents.policy import Policy, load_policy
from arena.games.rpsw.bots import THROWS
from arena.league.__main__ import main as league_cli
from arena.league.config import league_config
from arena.league.model.published import published as league_published
from arena.league.model.store import GauntletRecord
from arena.league.run.guard import (
    CANDIDATE_FILE,
    REJECTED_DIR,
    GuardScore,
    best_snapshot,
    guard_score,
    rejects,
)
from arena.league.run.league_run import LeagueRun
from arena.train import main
from arena.trainer.config import PolicyConfig, TrainerConfig
from arena.trainer.ppo import PPOTrainer

SMALL = PolicyConfig(hidden_size=8, lstm_size=8)
# The learner plays only the constant bot (always rock); every update is due a snapshot and a gauntlet.
GUARDED = {"matchmaking": {"mix": {"mirror": 0.0, "pfsp": 0.0, "scripted": 1.0}},
           "scripted": ["constant"], "snapshot": {"every_steps": 1, "beat_all_threshold": None},
           "gauntlet": {"players": ["scripted:constant"], "games": 40, "every_steps": 0}}


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def record(player: str, reference: str, wins: int, draws: int, losses: int) -> GauntletRecord:
    return GauntletRecord(player, reference, 0, wins, draws, losses)


def test_the_guard_score_is_the_lowest_reference_with_its_interval():
    score = guard_score([record("s0", "a", 90, 0, 10), record("s0", "b", 50, 20, 30)])
    assert (score.reference, score.score) == ("b", 0.6)
    assert score.lower < 0.6 < score.upper
    with pytest.raises(ValueError, match="one snapshot"):
        guard_score([record("s0", "a", 1, 0, 0), record("s1", "a", 1, 0, 0)])


def test_the_best_snapshot_played_every_reference_and_is_the_latest_of_equals():
    records = [record("s0", "a", 80, 0, 20), record("s0", "b", 80, 0, 20),
               record("s1", "a", 100, 0, 0),  # never played b: not a candidate for best
               record("s2", "a", 90, 0, 10), record("s2", "b", 80, 0, 20),
               record("s3", "a", 50, 0, 50), record("s3", "b", 50, 0, 50)]
    best = best_snapshot(records, ["s0", "s1", "s2", "s3"], ["a", "b"])
    assert best is not None and (best.player_id, best.score) == ("s2", 0.8)
    assert best_snapshot(records, ["s1"], ["a", "b"]) is None
    assert best_snapshot(records, ["s0", "s1", "s2"], ["a"]).player_id == "s1"


def test_a_candidate_is_rejected_only_when_the_best_lies_above_its_whole_interval():
    best = GuardScore("s2", "a", 0.9, 0.85, 0.94)
    assert not rejects(GuardScore("s3", "a", 0.85, 0.80, 0.91), best)  # within chance
    assert rejects(GuardScore("s3", "a", 0.70, 0.63, 0.77), best)
    assert not rejects(GuardScore("s3", "a", 0.70, 0.63, 0.77), best, margin=0.2)
    assert not rejects(GuardScore("s3", "a", 0.0, 0.0, 0.02), None)  # nothing to fall below


def test_with_a_bar_the_latest_snapshot_clearing_it_is_the_best():
    records = [record("s0", "a", 10, 0, 190), record("s1", "a", 169, 0, 31),  # a lucky early 0.845
               record("s2", "a", 148, 0, 52), record("s3", "a", 166, 0, 34), record("s4", "a", 96, 0, 104)]
    snapshots = ["s0", "s1", "s2", "s3", "s4"]
    assert best_snapshot(records, snapshots, ["a"]).player_id == "s1"  # no bar: the highest score
    best = best_snapshot(records, snapshots, ["a"], bar=0.8)
    assert best is not None and (best.player_id, best.score) == ("s3", 0.83)  # the latest at or above 0.8
    assert best_snapshot(records, snapshots, ["a"], bar=0.9).player_id == "s1"  # none clears it: the highest


def test_with_a_bar_only_a_clear_drop_below_the_bar_is_rejected():
    best = GuardScore("s2", "a", 0.95, 0.91, 0.97)
    near = GuardScore("s3", "a", 0.82, 0.76, 0.87)
    assert rejects(near, best)  # clearly below the best
    assert not rejects(near, best, bar=0.8)  # but above the bar
    assert not rejects(GuardScore("s3", "a", 0.78, 0.72, 0.83), best, bar=0.8)  # within chance of the bar
    assert rejects(GuardScore("s3", "a", 0.70, 0.63, 0.77), best, bar=0.8)  # clearly below the bar
    low = GuardScore("s2", "a", 0.6, 0.53, 0.67)  # a best below the bar is judged as without one
    assert rejects(GuardScore("s3", "a", 0.4, 0.33, 0.47), low, bar=0.8)
    assert not rejects(GuardScore("s3", "a", 0.55, 0.48, 0.62), low, bar=0.8)


def test_a_guard_bar_outside_zero_to_one_is_refused_by_name():
    for bad in (0, 1.5, -0.2):
        with pytest.raises(ValueError, match=r"guard_bar=.* must be a number in \(0, 1\] or null"):
            league_config({"gauntlet": {"guard_bar": bad}}).validate("rpsw")
    league_config({"gauntlet": {"guard_bar": 0.8}}).validate("rpsw")


def test_a_guard_margin_outside_zero_to_one_or_a_patience_below_one_is_refused_by_name():
    with pytest.raises(ValueError, match="league.gauntlet.guard_margin=2"):
        league_config({"gauntlet": {"guard_margin": 2}}).validate("rpsw")
    with pytest.raises(ValueError, match="league.gauntlet.guard_patience=0 must be an integer >= 1"):
        league_config({"gauntlet": {"guard_patience": 0}}).validate("rpsw")


def rpsw_trainer(tmp_path, matchmaker) -> PPOTrainer:
    config = TrainerConfig(num_envs=4, num_threads=1, torch_threads=1, total_timesteps=10**6, bptt_horizon=8,
                           rollout_steps=16, minibatch_size=64, seed=1,
                           checkpoint_dir=str(tmp_path / "checkpoints"))
    return PPOTrainer(config, SMALL, game="rpsw", matchmaker=matchmaker)


def always(policy: Policy, throw: str) -> None:
    """Makes ``policy`` throw ``throw`` whatever it sees (a learner that has found, or lost, the reply)."""
    with torch.no_grad():
        policy.actor.weight.zero_()
        policy.actor.bias.fill_(-30.0)
        policy.actor.bias[THROWS.index(throw)] = 30.0


def open_run(tmp_path, learner_checkpoints: int = 0, **gauntlet) -> tuple[LeagueRun, PPOTrainer]:
    config = json.loads(json.dumps(GUARDED))
    config["gauntlet"].update(gauntlet)
    run = LeagueRun(league_config(config), tmp_path, game="rpsw", learner_checkpoints=learner_checkpoints)
    trainer = rpsw_trainer(tmp_path, run.matchmaker())
    run.attach(trainer)
    return run, trainer


def snapshot_after(run: LeagueRun, trainer: PPOTrainer, throw: str,
                   rollouts: int = 1) -> tuple[str, float, dict]:
    """The learner, made to throw ``throw``, plays a rollout (no update) and reaches its next snapshot:
    the snapshot's id, its gauntlet score against the constant bot, and the league's metrics."""
    always(trainer.policy, throw)
    for _ in range(rollouts):
        trainer.evaluate()
    metrics = trainer.mean_and_log()  # its UpdateFinished runs the league round
    latest = run.league.pool.latest_snapshot(parent="learner")
    scores = [r.score()[0] for r in run.league.store.gauntlet() if r.player_id == latest.player_id]
    assert len(scores) == 1
    return latest.player_id, scores[0], metrics


def weights_of(policy: Policy) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in policy.state_dict().items()}


def test_a_collapsed_learner_is_restored_from_the_best_snapshot_and_that_is_what_gets_published(tmp_path,
                                                                                                  capsys):
    run, trainer = open_run(tmp_path, guard_patience=1)  # restored at the first rejection
    first, score, _ = snapshot_after(run, trainer, "paper")  # paper beats the constant rock
    assert score == 1.0
    best_weights = weights_of(trainer.policy)
    trainer.optimizer.state[next(iter(trainer.policy.parameters()))]["exp_avg"] = torch.ones(1)
    second, score, metrics = snapshot_after(run, trainer, "scissors")  # rock beats scissors: a collapse
    assert second != first and score == 1.0  # the published snapshot is the restored learner
    assert metrics["league/guard_restores"] == 1.0
    assert metrics["league/guard_rejected_score"] == 0.0 and metrics["league/guard_best_score"] == 1.0
    now = weights_of(trainer.policy)
    assert all(torch.equal(now[k], best_weights[k]) for k in best_weights)
    assert not trainer.optimizer.state  # Adam's moments of the collapsed weights are gone
    published = load_policy(str(tmp_path / run.league.pool.get(second).path))
    assert all(torch.equal(published.state_dict()[k], best_weights[k]) for k in best_weights)
    assert not (tmp_path / CANDIDATE_FILE).exists()
    assert run.league.store.meta()["guard_restores"] == "1"
    trainer.close()
    run.close()
    assert league_cli(["show", str(tmp_path), "--out", str(tmp_path / "views")]) == 0
    assert "restored from its best snapshot 1 time(s)" in capsys.readouterr().out


def test_a_candidate_that_holds_is_published_with_the_gauntlet_it_played(tmp_path):
    run, trainer = open_run(tmp_path)
    snapshot_after(run, trainer, "paper")
    trainer.optimizer.state[next(iter(trainer.policy.parameters()))]["exp_avg"] = torch.ones(1)
    _, score, metrics = snapshot_after(run, trainer, "paper")
    assert score == 1.0 and "league/guard_restores" not in metrics
    assert trainer.optimizer.state  # untouched
    played = run.league.store.gauntlet()
    assert [r.player_id for r in played] == ["learner:snap-000000", "learner:snap-000001"]  # once each
    trainer.close()
    run.close()


def test_a_rejected_candidate_publishes_the_best_weights_and_the_learner_learns_on_until_its_patience_ends(
        tmp_path):
    run, trainer = open_run(tmp_path, guard_patience=2)
    first, _, _ = snapshot_after(run, trainer, "paper")
    best_weights = weights_of(trainer.policy)
    trainer.optimizer.state[next(iter(trainer.policy.parameters()))]["exp_avg"] = torch.ones(1)
    second, score, metrics = snapshot_after(run, trainer, "scissors")  # rejected: 1 in a row
    assert score == 1.0  # what is published is the best snapshot's weights ...
    published = load_policy(str(tmp_path / run.league.pool.get(second).path))
    assert all(torch.equal(published.state_dict()[k], best_weights[k]) for k in best_weights)
    learner_weights = weights_of(trainer.policy)  # ... while the learner keeps its own, and Adam's
    assert not torch.equal(learner_weights["actor.bias"], best_weights["actor.bias"])
    assert trainer.optimizer.state
    assert metrics["league/guard_rejections"] == 1.0 and metrics["league/guard_restores"] == 0.0
    _, score, metrics = snapshot_after(run, trainer, "paper")  # accepted: the count in a row restarts
    assert score == 1.0 and "league/guard_restores" not in metrics
    snapshot_after(run, trainer, "scissors")  # rejected: 1 in a row
    assert weights_of(trainer.policy)["actor.bias"].argmax() == 2  # scissors still
    _, score, metrics = snapshot_after(run, trainer, "scissors")  # rejected: 2 in a row, restored
    assert score == 1.0
    assert metrics["league/guard_rejections"] == 3.0 and metrics["league/guard_restores"] == 1.0
    assert all(torch.equal(weights_of(trainer.policy)[k], best_weights[k]) for k in best_weights)
    assert not trainer.optimizer.state
    assert run.league.store.meta()["guard_rejections_in_a_row"] == "0"
    trainer.close()
    run.close()


def test_a_rejected_candidates_weights_are_kept_to_play_back_and_an_accepted_ones_are_not(tmp_path):
    run, trainer = open_run(tmp_path, guard_patience=2)
    snapshot_after(run, trainer, "paper")
    second, _, _ = snapshot_after(run, trainer, "scissors")  # rejected: the best's weights published
    learner_weights = weights_of(trainer.policy)
    rejected = tmp_path / REJECTED_DIR
    kept = load_policy(str(rejected / "learner_snap-000001.pt"))  # what the learner had become
    assert second == "learner:snap-000001"
    assert all(torch.equal(kept.state_dict()[k], learner_weights[k]) for k in learner_weights)
    snapshot_after(run, trainer, "paper")  # accepted
    assert [p.name for p in rejected.iterdir()] == ["learner_snap-000001.pt"]
    assert not (tmp_path / CANDIDATE_FILE).exists()
    trainer.close()
    run.close()


def test_a_learner_judged_below_its_best_takes_no_unjudged_snapshot_until_a_gauntlet_accepts_it(tmp_path):
    # A snapshot after every rollout (64 learner samples); a gauntlet every other one (128 apart).
    run, trainer = open_run(tmp_path, guard_patience=3, every_steps=100)

    def rollout(throw: str) -> list[str]:
        always(trainer.policy, throw)
        trainer.evaluate()
        trainer.mean_and_log()
        return [p.player_id for p in run.league.pool.snapshots(parent="learner")]

    assert rollout("paper") == ["learner:snap-000000"]  # gauntleted and accepted
    assert len(rollout("scissors")) == 2  # unjudged: published, as the learner was last accepted
    assert len(rollout("scissors")) == 3  # gauntleted, rejected: the best's weights published
    assert len(rollout("scissors")) == 3  # unjudged, but the learner was judged below its best
    assert len(rollout("paper")) == 4  # gauntleted and accepted
    assert len(rollout("paper")) == 5  # unjudged again
    trainer.close()
    run.close()


def test_without_the_guard_the_collapsed_snapshot_is_published(tmp_path):
    run, trainer = open_run(tmp_path, guard=False)
    snapshot_after(run, trainer, "paper")
    _, score, metrics = snapshot_after(run, trainer, "scissors")
    assert score == 0.0 and "league/guard_restores" not in metrics
    trainer.close()
    run.close()


def test_a_resumed_run_judges_against_the_best_snapshot_in_the_store(tmp_path):
    run, trainer = open_run(tmp_path, guard_patience=2)
    snapshot_after(run, trainer, "paper")
    _, _, metrics = snapshot_after(run, trainer, "scissors")  # the first rejection in a row
    assert metrics["league/guard_restores"] == 0.0
    trainer.save()  # the process ends with its checkpoint (its 1st), as python -m arena.train does
    trainer.close()
    run.close()
    run, trainer = open_run(tmp_path, learner_checkpoints=1, guard_patience=2)  # a new process: the
    # best and the count of rejections in a row are read back from the league store
    _, score, metrics = snapshot_after(run, trainer, "scissors", rollouts=3)  # past the last snapshot's step
    assert score == 1.0 and metrics["league/guard_restores"] == 1.0  # the second rejection in a row
    trainer.close()
    run.close()


def test_a_learner_resumed_from_an_older_checkpoint_takes_back_the_guard_counts_it_had_then(tmp_path):
    run, trainer = open_run(tmp_path, guard_patience=3)
    snapshot_after(run, trainer, "paper")  # accepted
    trainer.save()  # checkpoint 1: the learner that throws paper, no rejection yet
    snapshot_after(run, trainer, "scissors")  # rejected: 1 in a row
    _, _, metrics = snapshot_after(run, trainer, "scissors")  # rejected: 2 in a row
    assert metrics["league/guard_rejections"] == 2.0
    trainer.close()  # the process dies before another checkpoint
    run.close()
    run, trainer = open_run(tmp_path, learner_checkpoints=1, guard_patience=3)
    meta = run.league.store.meta()
    assert (meta["guard_rejections"], meta["guard_rejections_in_a_row"]) == ("0", "0")
    _, score, metrics = snapshot_after(run, trainer, "scissors", rollouts=4)  # 1 in a row, not 3
    assert score == 1.0 and metrics["league/guard_rejections"] == 1.0
    assert metrics["league/guard_restores"] == 0.0  # 3 in a row would have restored it
    trainer.close()
    run.close()


def small_league_command(run_dir, gauntlet_every: int) -> list[str]:
    """A 3000-sample rpsw +league=selfplay run, a snapshot every 1000 samples."""
    return ["env=rpsw", "trainer=quick", "dashboard=false", "trainer.num_envs=16", "trainer.num_threads=1",
            "trainer.torch_threads=1", "+league=selfplay", f"run_dir={run_dir}",
            "trainer.total_timesteps=3000", "league.snapshot.every_steps=1000", "league.gauntlet.games=20",
            f"league.gauntlet.every_steps={gauntlet_every}"]


def test_the_bare_league_command_runs_with_the_guard_on(tmp_path):
    run_dir = tmp_path / "run"
    assert main(small_league_command(run_dir, gauntlet_every=0)) == 0
    config = (run_dir / "config.yaml").read_text()
    assert "guard: true" in config


def test_the_last_snapshot_of_a_run_is_judged_by_the_gauntlet(tmp_path):
    # Gauntlets 10k samples apart: the rollouts in between take unjudged snapshots; the run's end does not.
    run, trainer = open_run(tmp_path, guard_patience=3, every_steps=10_000)
    snapshot_after(run, trainer, "paper")  # the first snapshot: gauntleted, accepted
    best_weights = weights_of(trainer.policy)
    always(trainer.policy, "scissors")  # the learner falls after its last snapshot ...
    trainer.evaluate()
    run.finish(trainer.global_step)  # ... and the run ends: its weights play the gauntlet, rejected
    snapshots = run.league.pool.snapshots(parent="learner")
    assert len(snapshots) == 2 and snapshots[-1].step == trainer.global_step
    played = {r.player_id: r.score()[0] for r in run.league.store.gauntlet()}
    assert played[snapshots[-1].player_id] == 1.0  # the newest snapshot holds the best's weights
    published = load_policy(str(tmp_path / snapshots[-1].path))
    assert all(torch.equal(published.state_dict()[k], best_weights[k]) for k in best_weights)
    assert run.league.store.meta()["guard_rejections"] == "1"
    run.finish(trainer.global_step)  # nothing learnt since the newest snapshot: nothing to judge
    assert len(run.league.pool.snapshots(parent="learner")) == 2
    trainer.close()
    run.close()


def test_a_learner_that_holds_at_the_end_publishes_its_own_judged_weights(tmp_path):
    run, trainer = open_run(tmp_path, every_steps=10_000)
    snapshot_after(run, trainer, "paper")
    trainer.evaluate()
    run.finish(trainer.global_step)
    snapshots = run.league.pool.snapshots(parent="learner")
    assert len(snapshots) == 2
    assert [r.player_id for r in run.league.store.gauntlet()] == [s.player_id for s in snapshots]
    assert run.league.store.meta().get("guard_rejections", "0") == "0"
    trainer.close()
    run.close()


def test_a_run_that_stops_right_after_an_unjudged_snapshot_still_ends_on_a_judged_one(tmp_path):
    # A snapshot after every rollout (64 learner samples); a gauntlet every other one (128 apart).
    run, trainer = open_run(tmp_path, guard_patience=3, every_steps=100)
    snapshot_after(run, trainer, "paper")  # the first snapshot: gauntleted, accepted
    best_weights = weights_of(trainer.policy)
    always(trainer.policy, "scissors")  # the learner falls ...
    trainer.evaluate()
    trainer.mean_and_log()  # ... and its next snapshot, at the step it stops at, is an unjudged one
    snapshots = run.league.pool.snapshots(parent="learner")
    assert len(snapshots) == 2 and snapshots[-1].step == trainer.global_step
    assert snapshots[-1].player_id not in {r.player_id for r in run.league.store.gauntlet()}
    assert run.finish(trainer.global_step)  # no training since: its weights play the gauntlet, rejected
    snapshots = run.league.pool.snapshots(parent="learner")
    assert len(snapshots) == 3 and snapshots[-1].step == snapshots[-2].step == trainer.global_step
    assert run.league.store.has_gauntlet(snapshots[-1].player_id)
    played = {r.player_id: r.score()[0] for r in run.league.store.gauntlet()}
    assert played[snapshots[-1].player_id] == 1.0  # the newest snapshot holds the best's weights
    published = load_policy(str(tmp_path / snapshots[-1].path))
    assert all(torch.equal(published.state_dict()[k], best_weights[k]) for k in best_weights)
    # league:RUN publishes it
    assert [m.player_id for m in league_published(tmp_path).members] == [snapshots[-1].player_id]
    assert not run.finish(trainer.global_step)  # the newest snapshot is judged now: nothing to do
    assert len(run.league.pool.snapshots(parent="learner")) == 3
    trainer.close()
    run.close()


def test_a_stopped_or_finished_league_command_ends_with_a_gauntleted_snapshot(tmp_path):
    run_dir = tmp_path / "run"
    # during the run, only the first snapshot is gauntleted
    assert main(small_league_command(run_dir, gauntlet_every=100_000)) == 0
    from arena.league.model.store import LeagueStore

    with LeagueStore(run_dir / "league.sqlite", read_only=True) as store:
        snapshots = [p for p in store.players() if p.kind == "snapshot" and p.parent == "learner"]
        judged = {r.player_id for r in store.gauntlet()}
    assert len(snapshots) >= 3 and snapshots[0].player_id in judged and snapshots[-1].player_id in judged
    assert not {s.player_id for s in snapshots[1:-1]} & judged
