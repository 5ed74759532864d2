"""A league run is the same run wherever its checkpoints by wall time land.

``trainer.checkpoint_minutes`` makes the main learner and the in-process exploiters write a checkpoint
at whichever update the clock says; the league then records the counts it goes with (the guard's
counts, a mark of the store, each match's checkpoint tags). None of it may change what the run plays:
two runs of one seed and config, one checkpointing after every update and one never, hold the same
matches, the same snapshots (to the sha256 of their weights) and the same gauntlet results.
"""

from __future__ import annotations

from pathlib import Path

from arena.league import LEAGUE_DB, LeagueStore
from arena.train import main

FAST = ["env=rpsw", "trainer=quick", "dashboard=false", "logger=none", "trainer.num_envs=32",
        "trainer.num_threads=1", "trainer.torch_threads=1", "trainer.seed=1"]
# A main exploiter in-process against the learner's newest snapshot, as the robust league's trials run
# it, with a gauntlet: snapshots of both, the guard's judgements and the exploiter's targets all count.
LEAGUE = [*FAST, "+league=robust", "trainer.total_timesteps=6000", "league.snapshot.every_steps=1000",
          "league.main_exploiter.num_envs=8", "league.main_exploiter.target=newest",
          "league.main_exploiter.reset_prob=0", "league.main_exploiter.snapshot.every_steps=500",
          "league.main_exploiter.snapshot.min_steps=0", "league.gauntlet.games=10",
          "league.gauntlet.every_steps=2000", "league.matchmaking.mix.mirror=0.3",
          "league.matchmaking.mix.pfsp=0.3", "league.matchmaking.mix.scripted=0.3",
          "league.matchmaking.mix.learners=0.1"]


def _league(run_dir: Path) -> tuple[list, list, list, int]:
    with LeagueStore(run_dir / LEAGUE_DB, read_only=True) as store:
        matches = [(m.team_a, m.team_b, m.outcome, m.length, m.learner_step) for m in store.matches()]
        players = [(p.player_id, p.kind, p.sha256, p.step) for p in store.players()]
        gauntlet = [(r.player_id, r.reference, r.wins, r.draws, r.losses) for r in store.gauntlet()]
        tagged = sum(1 for tags in store.match_checkpoints().values() for count in tags.values() if count)
    return matches, players, gauntlet, tagged


def test_a_league_run_plays_the_same_matches_whether_or_not_checkpoints_by_wall_time_land(tmp_path):
    assert main([*LEAGUE, f"run_dir={tmp_path / 'plain'}", "trainer.checkpoint_minutes=0"]) == 0
    assert main([*LEAGUE, f"run_dir={tmp_path / 'timed'}", "trainer.checkpoint_minutes=0.000001"]) == 0
    plain, timed = _league(tmp_path / "plain"), _league(tmp_path / "timed")
    assert plain[3] == 0 and timed[3] > 0  # only the timed run wrote checkpoints while it played
    assert any(kind == "snapshot" and player_id.startswith("main_exploiter")
               for player_id, kind, _, _ in plain[1])
    assert plain[2]  # the gauntlet played
    assert timed[0] == plain[0]  # every match, in order, with its outcome, length and step
    assert timed[1] == plain[1]  # every player, snapshots with the sha256 of their weights
    assert timed[2] == plain[2]
