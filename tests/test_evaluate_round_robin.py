"""Round robin of a league's players: every pair plays, Bradley-Terry Elo with intervals, scores table."""

import json
import os

import pytest
import torch

from arena.agents.players import resolve_player
from arena.agents.policy import Policy
from arena.evaluate import main
from arena.evaluation.round_robin import default_anchor, play_round_robin
from arena.evaluation.runner import MatchSettings
from arena.league.model.league import League
from arena.league.model.players import Player, snapshot_id
from arena.league.model.snapshots import write_snapshot

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def policy_payload(seed):
    torch.manual_seed(seed)
    policy = Policy(11, [4], 16, 16)
    return {"policy_spec": policy.spec, "policy": policy.state_dict()}


@pytest.fixture
def league_dir(tmp_path):
    """An rpsw league: the learner, two scripted bots and one snapshot (stored relative to the run)."""
    league = League.open(tmp_path)
    league.add_player(Player("learner", "learner"))
    league.add_player(Player("scripted:random", "scripted"))
    league.add_player(Player("scripted:counter", "scripted"))
    sha = write_snapshot(tmp_path / "snapshots" / "s0.pt", policy_payload(3))
    league.add_player(Player(snapshot_id("learner", 0), "snapshot", path="snapshots/s0.pt", sha256=sha,
                             step=100, parent="learner"))
    league.close()
    return tmp_path


def test_league_round_robin_prints_elo_and_scores_for_every_player(league_dir, capsys):
    argv = ["--league", str(league_dir), "--game", "rpsw", "--games-per-pair", "40", "--no-progress"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "anchored on scripted:random = 0" in out and "Pairwise scores" in out
    row_names = [line.split()[1] for line in out.splitlines() if line.split()[:1] in (["1"], ["2"], ["3"])]
    assert sorted(row_names) == sorted(["scripted:random", "scripted:counter", "learner:snap-000000"] * 2)
    # the learner itself has no weights in the store: skipped


def test_learner_plays_when_a_checkpoint_is_given(league_dir, tmp_path, capsys):
    torch.save(policy_payload(9), tmp_path / "last.pt")
    argv = ["--league", str(league_dir), "--game", "rpsw", "--games-per-pair", "20", "--json",
            "--checkpoint", str(tmp_path / "last.pt")]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["elo"]) == {"learner", "scripted:random", "scripted:counter", "learner:snap-000000"}
    assert out["anchor"] == "scripted:random" and out["elo"]["scripted:random"]["elo"] == 0
    assert len(out["results"]) == 6
    assert all(r["wins"] + r["draws"] + r["losses"] == 20 for r in out["results"])


def test_a_replaced_snapshot_file_is_refused(league_dir, capsys):
    path = league_dir / "snapshots" / "s0.pt"
    os.chmod(path, 0o644)
    torch.save(policy_payload(4), path)
    assert main(["--league", str(league_dir), "--game", "rpsw"]) == 2
    assert "sha256" in capsys.readouterr().err


def test_a_run_without_a_league_exits_2(tmp_path, capsys):
    assert main(["--league", str(tmp_path / "nothing"), "--game", "rpsw"]) == 2
    assert "no league store" in capsys.readouterr().err


def test_round_robin_ranks_the_counter_bot_above_the_constant_bot():
    names = ("scripted:constant", "scripted:counter", "scripted:cycle")
    players = {p: resolve_player(p, "rpsw") for p in names}
    rr = play_round_robin(players, MatchSettings(game="rpsw", games=20, num_threads=1))
    assert rr.wdl("scripted:counter", "scripted:constant") == (20, 0, 0)
    assert rr.wdl("scripted:constant", "scripted:counter") == (0, 0, 20)
    elo = rr.fit.as_dict()
    assert rr.fit.anchor == "scripted:constant" and elo["scripted:constant"][0] == 0
    assert elo["scripted:counter"][1] > 0  # its whole interval lies above the anchor


def test_default_anchor_prefers_the_random_bot_then_any_scripted_bot_then_the_mean():
    assert default_anchor(["a.pt", "scripted:cycle", "scripted:random"]) == "scripted:random"
    assert default_anchor(["a.pt", "scripted:cycle"]) == "scripted:cycle"
    assert default_anchor(["a.pt", "b.pt"]) is None
