"""`python -m arena.train +league=...`: selfplay, pfsp and alphastar leagues run end to end on rpsw."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from arena.agents.policy import load_policy
from arena.config import compose_run_config, exploiter_reward_config
from arena.league import LEAGUE_DB, LeagueStore, sha256_file
from arena.league.__main__ import main as league_cli
from arena.league.config import league_config
from arena.train import main

FAST = [
    "env=rpsw", "trainer=quick", "dashboard=false", "trainer.num_envs=32", "trainer.num_threads=1",
    "trainer.torch_threads=1",
]
SCRIPTED_RPSW = {f"scripted:{bot}" for bot in ("random", "cycle", "biased", "constant", "counter")}


def _metrics(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def _store(run_dir: Path) -> LeagueStore:
    return LeagueStore(run_dir / LEAGUE_DB, create=False)


@pytest.fixture(scope="module")
def selfplay_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run_dir = tmp_path_factory.mktemp("selfplay") / "run"
    argv = [*FAST, "+league=selfplay", f"run_dir={run_dir}", "trainer.total_timesteps=6000",
            "league.snapshot.every_steps=1500", "league.log_interval=2"]
    assert main(argv) == 0
    return run_dir


def test_league_presets_compose_into_checked_league_configs():
    for name, mix in (("selfplay", {"mirror": 0.35, "pfsp": 0.35, "scripted": 0.3}), ("pfsp", {"pfsp": 1.0}),
                      ("alphastar", {"mirror": 0.35, "pfsp": 0.5, "scripted": 0.15})):
        config = league_config(compose_run_config([f"+league={name}", "env=rpsw"]).league, "rpsw")
        assert config.matchmaking.mix.as_dict() == mix
        assert (config.main_exploiter is not None) == (name == "alphastar")
    with pytest.raises(ValueError, match="league.matchmaking.mix has no 'pfps'.*pfsp"):
        compose_run_config(["league=selfplay", "league.matchmaking.mix.pfps=1"])
    with pytest.raises(ValueError, match="sum to 1"):
        league_config(compose_run_config(["league=selfplay", "league.matchmaking.mix.mirror=0.9"]).league)


def test_selfplay_league_records_players_snapshots_matches_and_ratings_in_the_store(selfplay_run):
    with _store(selfplay_run) as store:
        players = {p.player_id: p for p in store.players()}
        matches = store.matches()
        history = store.rating_history()
    assert players["learner"].kind == "learner"
    assert SCRIPTED_RPSW <= {p for p, player in players.items() if player.kind == "scripted"}
    snapshots = [p for p in players.values() if p.kind == "snapshot"]
    assert len(snapshots) >= 2 and snapshots[0].player_id == "learner:snap-000000"
    for snap in snapshots:
        path = selfplay_run / snap.path
        # portable file names: no colon (Windows, scp, URLs)
        assert path == selfplay_run / "league" / "snapshots" / (snap.player_id.replace(":", "_") + ".pt")
        assert sha256_file(path) == snap.sha256 and snap.parent == "learner" and snap.step > 0
        assert load_policy(path).spec["obs_dim"] > 0  # what arena.evaluate reads
    assert len(matches) > 100 and all(m.team_a == ("learner",) for m in matches)
    opponents = {m.team_b[0] for m in matches}
    assert "learner" in opponents and opponents & SCRIPTED_RPSW
    assert opponents & {s.player_id for s in snapshots}
    assert all(m.length is not None and m.length > 0 and m.learner_step is not None for m in matches)
    rated = {m.match_id for m in matches if m.team_b != ("learner",)}
    assert history and {row.match_id for row in history} == rated  # mirror matches are not rated


def test_selfplay_league_logs_ratings_mix_leaderboard_and_payoff_heatmap(selfplay_run):
    lines = _metrics(selfplay_run)
    last = lines[-1]
    for key in ("league/size", "league/rating", "league/matches", "league/snapshots", "league/time/total"):
        assert key in last, key
    mix = {k: v for k, v in last.items() if k.startswith("league/mix/")}
    assert mix and sum(mix.values()) == pytest.approx(1.0)
    assert any(k.startswith("league/rating/learner:snap-") for line in lines for k in line)
    tables = [json.loads(line) for line in (selfplay_run / "tables.jsonl").read_text().splitlines()]
    board = [t for t in tables if t["name"] == "league/leaderboard"][-1]
    assert board["columns"][:3] == ["rank", "player", "kind"] and len(board["rows"]) == last["league/size"]
    images = [json.loads(line) for line in (selfplay_run / "images.jsonl").read_text().splitlines()]
    assert any(i["name"] == "league/payoff" and Path(i["path"]).is_file() for i in images)


def test_league_show_prints_the_leaderboard_of_a_training_run(selfplay_run, tmp_path, capsys):
    assert league_cli(["show", str(selfplay_run), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "learner:snap-000000" in out and "scripted:random" in out
    assert (tmp_path / "league_payoff.png").is_file() and (tmp_path / "league_ratings.png").is_file()


def test_pfsp_league_plays_only_the_pool_and_snapshots_when_the_learner_beats_all_of_it(tmp_path):
    run_dir = tmp_path / "run"
    argv = [*FAST, "league=pfsp", f"run_dir={run_dir}", "trainer.total_timesteps=4000",
            "league.snapshot.every_steps=null", "league.snapshot.beat_all_threshold=0.0",
            "league.snapshot.min_games=2"]
    assert main(argv) == 0
    with _store(run_dir) as store:
        matches = store.matches()
        snapshots = [p for p in store.players() if p.kind == "snapshot"]
    assert matches and all(m.team_b != ("learner",) for m in matches)  # no mirror play
    assert snapshots, "beat-all against the bots must have frozen the learner"
    assert {m.team_b[0] for m in matches} <= SCRIPTED_RPSW | {s.player_id for s in snapshots}


def test_alphastar_league_trains_main_agent_and_both_exploiters_in_one_run(tmp_path):
    run_dir = tmp_path / "run"
    argv = [*FAST, "+league=alphastar", f"run_dir={run_dir}", "trainer.total_timesteps=4000",
            "league.snapshot.every_steps=1000", "league.main_exploiter.num_envs=8",
            "league.league_exploiter.num_envs=8", "league.main_exploiter.snapshot.every_steps=500",
            "league.league_exploiter.snapshot.every_steps=500", "league.league_exploiter.reset_prob=0.0"]
    assert main(argv) == 0
    with _store(run_dir) as store:
        players = {p.player_id: p for p in store.players()}
        matches = store.matches()
    learners = {"learner", "main_exploiter-0", "league_exploiter-0"}
    assert learners <= set(players)
    for learner in learners:
        assert any(p.kind == "snapshot" and p.parent == learner for p in players.values()), learner
        assert any(m.team_a == (learner,) for m in matches), learner
    # the main exploiter plays the main learner (live) and restarts as a new generation at each snapshot
    assert {m.team_b[0] for m in matches if m.team_a == ("main_exploiter-0",)} <= {"learner"}
    assert players["main_exploiter-1"].kind == "main_exploiter"
    assert (run_dir / "checkpoints" / "league_exploiter-0" / "trainer.pt").is_file()
    last = [r for r in _metrics(run_dir) if "update" in r][-1]  # the last update's (the end-of-run
    # gauntlet logs a record of its own when the run stops on an unjudged snapshot)
    assert "main_exploiter/rating" in last and "league_exploiter/SPS" in last
    with sqlite3.connect(run_dir / LEAGUE_DB) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_main_exploiters_can_start_from_the_learners_weights_and_go_on_after_a_snapshot(tmp_path, capsys):
    import torch

    common = [*FAST, "+league=robust", "trainer.total_timesteps=4000", "league.snapshot.every_steps=1000",
              "league.main_exploiter.num_envs=8", "league.main_exploiter.snapshot.every_steps=500",
              "league.main_exploiter.init=learner", "league.main_exploiter.target=live",
              "league.main_exploiter.snapshot.min_steps=2000000",
              # the robust preset's settings before trial Z (docs/results/exploitability.md), under which
              # this run is known to leave several exploiter snapshots; a restarting exploiter has no
              # live weights for the learner to play (learners=0)
              "league.matchmaking.mix.learners=0.0", "league.matchmaking.mix.mirror=0.35",
              "league.matchmaking.mix.pfsp=0.35", "league.gauntlet.guard_bar=null"]
    going_on = tmp_path / "going_on"
    assert main([*common, f"run_dir={going_on}", "league.main_exploiter.reset_prob=0.0"]) == 0
    with _store(going_on) as store:
        players = {p.player_id: p for p in store.players()}
    assert sum(p.parent == "main_exploiter-0" for p in players.values()) >= 2  # several snapshots...
    assert "main_exploiter-1" not in players  # ...of one generation
    restarting = tmp_path / "restarting"
    assert main([*common, f"run_dir={restarting}", "league.main_exploiter.reset_prob=1.0"]) == 0
    starts = [torch.load(restarting / "checkpoints" / f"main_exploiter-{g}" / "init.pt", weights_only=True)
              for g in (0, 1)]
    # each generation starts from the learner's weights of its time: the learner trained in between
    assert starts[0].keys() == starts[1].keys()
    assert any(not torch.equal(starts[0][k], starts[1][k]) for k in starts[0])
    assert main([*common, f"run_dir={tmp_path / 'bad'}", "league.main_exploiter.init=copy"]) == 2
    assert "league.main_exploiter.init='copy' must be one of ['fresh', 'learner']" in capsys.readouterr().err


def test_the_main_learner_can_play_a_continuing_main_exploiters_live_weights(tmp_path, capsys):
    common = [*FAST, "+league=robust", "trainer.total_timesteps=3000", "league.snapshot.every_steps=1000",
              "league.main_exploiter.num_envs=8", "league.matchmaking.mix.mirror=0.25",
              "league.matchmaking.mix.learners=0.5", "league.matchmaking.mix.pfsp=0.25",
              "league.matchmaking.mix.scripted=0.0"]
    run_dir = tmp_path / "run"
    assert main([*common, f"run_dir={run_dir}", "league.main_exploiter.reset_prob=0.0"]) == 0
    with _store(run_dir) as store:
        matches = store.matches()
    against = [m.team_b[0] for m in matches if m.team_a == ("learner",)]
    # about half of the learner's matches go to the exploiter as it trains, none to an older copy
    assert 0.3 < against.count("main_exploiter-0") / len(against) < 0.7
    assert not any(p.startswith("main_exploiter-") and p != "main_exploiter-0" for p in against)
    # a restarting exploiter's old generations have no live weights: refused at start-up, by name
    assert main([*common, f"run_dir={tmp_path / 'bad'}", "league.main_exploiter.reset_prob=1.0"]) == 2
    err = capsys.readouterr().err
    assert "league.matchmaking.mix.learners=0.5" in err
    assert "league.main_exploiter.reset_prob=0, not 1.0" in err


def test_a_main_exploiter_with_a_start_score_waits_for_the_learners_gauntlet(tmp_path, capsys):
    # the learner's first snapshot (and gauntlet) comes after ~3000 samples, its second update or later
    common = [*FAST, "+league=robust", "trainer.total_timesteps=6000", "league.snapshot.every_steps=3000",
              "league.snapshot.beat_all_threshold=null", "league.main_exploiter.num_envs=8",
              "league.gauntlet.games=20", "league.gauntlet.every_steps=1000"]
    waited = tmp_path / "waited"
    # any gauntlet score clears 0: the exploiter starts right after the learner's first gauntlet
    assert main([*common, f"run_dir={waited}", "league.main_exploiter.start_score=0.0"]) == 0
    with _store(waited) as store:
        first_gauntlet = min(r.learner_step for r in store.gauntlet())
    rows = [r for r in _metrics(waited) if "update" in r]
    started = [r["global_step"] for r in rows if "main_exploiter/SPS" in r]
    assert first_gauntlet > 0 and started, "the exploiter must start once the learner has played a gauntlet"
    assert min(started) >= first_gauntlet
    assert rows[0]["global_step"] < first_gauntlet  # the learner trained alone before it
    never = tmp_path / "never"
    # a score no snapshot reaches (a perfect score against every reference): it never starts, and the
    # learner's share of matches against it goes to mirror play
    assert main([*common, f"run_dir={never}", "league.main_exploiter.start_score=1.0"]) == 0
    with _store(never) as store:
        assert not any(p.kind == "main_exploiter" for p in store.players())
        assert all(m.team_a == ("learner",) for m in store.matches())
    assert not any("main_exploiter/SPS" in r for r in _metrics(never))
    for bad, message in [(["league.main_exploiter.start_score=1.5"], "start_score=1.5 must be in [0, 1]"),
                         (["league.main_exploiter.start_score=0.5", "league.gauntlet.games=0"],
                          "league.gauntlet.games=0 plays no gauntlet")]:
        assert main([*common, f"run_dir={tmp_path / 'bad'}", *bad]) == 2
        assert message in capsys.readouterr().err


def test_the_exploiters_train_on_the_games_own_reward_when_the_league_says_so(tmp_path, capsys):
    # the league adds a term for rpsw ("bonus", a second outcome term); the learner always trains with
    # it, the main exploiter only with league.exploiter_reward=learner (the default)
    common = [*FAST, "+league=robust", "trainer.total_timesteps=2000", "league.main_exploiter.num_envs=8",
              "+league.reward_terms.rpsw={bonus: {_target_: outcome, weight: 0.5}}"]
    terms = {}
    for choice in ("learner", "game"):
        run_dir = tmp_path / choice
        assert main([*common, f"run_dir={run_dir}", f"league.exploiter_reward={choice}"]) == 0
        rows = [r for r in _metrics(run_dir) if "main_exploiter/global_step" in r]
        assert rows and all("reward/bonus" in r and "reward/outcome" in r for r in rows)  # the learner's
        terms[choice] = {k.removeprefix("main_exploiter/reward/") for r in rows for k in r
                         if k.startswith("main_exploiter/reward/")}
    assert terms == {"learner": {"outcome", "bonus"}, "game": {"outcome"}}
    # the run's own setting of a term the league also names is the run's: the exploiter keeps it
    mine = compose_run_config([*common, "league.exploiter_reward=game",
                               "+reward.terms.bonus={_target_: outcome, weight: 0.25}"])
    assert set(exploiter_reward_config(mine).terms) == {"outcome", "bonus"}
    assert main([*common, f"run_dir={tmp_path / 'bad'}", "league.exploiter_reward=attacker"]) == 2
    assert "league.exploiter_reward='attacker' must be one of ['learner', 'game']" in capsys.readouterr().err


def test_the_exploiters_start_without_the_main_learners_kickstarting_teacher(tmp_path):
    import torch

    run_dir = tmp_path / "run"
    assert main([*FAST, "+league=robust", f"run_dir={run_dir}", "trainer.total_timesteps=2000",
                 "league.main_exploiter.num_envs=8", "trainer.kickstart_teacher=scripted:counter",
                 "trainer.kickstart_steps=100000"]) == 0
    rows = [r for r in _metrics(run_dir) if "update" in r]
    assert rows and all(r["kickstart_coef"] > 0 for r in rows)  # the learner is pulled toward the teacher
    assert any("main_exploiter/global_step" in r for r in rows)  # and the exploiter trained beside it
    checkpoints = run_dir / "checkpoints"
    learner, exploiter = (torch.load(checkpoints / who / "trainer.pt", weights_only=True)["config"]
                          for who in ("", "main_exploiter-0"))
    assert (learner["kickstart_teacher"], learner["kickstart_steps"]) == ("scripted:counter", 100000)
    assert (exploiter["kickstart_teacher"], exploiter["kickstart_steps"]) == (None, 0)
    assert exploiter["num_envs"] == 8


def test_a_league_run_rejects_stages_that_set_opponents(tmp_path, capsys):
    argv = [*FAST, "+league=selfplay", f"run_dir={tmp_path / 'r'}",
            "+stages=[{steps: 100, opponents: {players: [mirror], weights: [1]}}]"]
    assert main(argv) == 2
    assert "league chooses them" in capsys.readouterr().err
