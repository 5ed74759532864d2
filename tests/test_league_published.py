"""``league:RUN_DIR``: what a league publishes, for evaluation, export and training opponents."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from arena.agents.mixture import MixtureAgent
from arena.agents.players import resolve_player
from arena.agents.policy import Policy
from arena.config import opponent_mix
from arena.league.model.published import published
from arena.league.model.store import LEAGUE_DB, LeagueStore
from arena.player_specs import parse_player
from arena.train import main as train

RPSW_LEAGUE = ["env=rpsw", "+league=selfplay", "dashboard=false", "trainer=quick",
               "trainer.total_timesteps=40000", "league.snapshot.every_steps=8000", "league.gauntlet.games=0"]


def _snapshots(run_dir):
    with LeagueStore(run_dir / LEAGUE_DB, read_only=True) as store:
        return [p for p in store.players() if p.kind == "snapshot" and p.parent == "learner"]


@pytest.fixture(scope="module")
def newest_league(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("newest")
    assert train([*RPSW_LEAGUE, f"run_dir={run_dir}"]) == 0
    return run_dir


@pytest.fixture(scope="module")
def mixture_league(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("mixture")
    assert train([*RPSW_LEAGUE, f"run_dir={run_dir}", "league.publish=mixture",
                  "league.publish_window=3"]) == 0
    return run_dir


def test_a_league_publishes_its_newest_snapshot_by_default(newest_league):
    snaps = _snapshots(newest_league)
    assert len(snaps) >= 2
    found = published(newest_league)
    assert not found.is_mixture
    assert found.members[0].player_id == snaps[-1].player_id
    player = resolve_player(f"league:{newest_league}", "rpsw")
    assert player.kind == "policy" and player.sha256 == snaps[-1].sha256


def test_a_mixture_league_publishes_its_last_snapshots_with_equal_weights(mixture_league):
    snaps = _snapshots(mixture_league)
    found = published(mixture_league)
    assert [m.player_id for m in found.members] == [p.player_id for p in snaps[-3:]]
    assert [m.weight for m in found.members] == [1.0, 1.0, 1.0]
    player = resolve_player(f"league:{mixture_league}", "rpsw")
    assert player.kind == "mixture" and len(player.members) == 3
    mix = opponent_mix([f"league:{mixture_league}"], [1.0])
    assert sorted(mix.values()) == pytest.approx([1 / 3] * 3)
    assert all(key.startswith("checkpoint:") for key in mix)


def test_evaluate_and_export_accept_a_league_spec(newest_league, mixture_league, tmp_path, capsys):
    from arena.evaluate import main as evaluate
    from arena.export import main as export

    for league in (newest_league, mixture_league):
        assert evaluate([f"league:{league}", "scripted:random", "--game", "rpsw", "--games", "40",
                         "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["games"] == 40
    out = tmp_path / "published.torchscript.pt"
    assert export([f"league:{newest_league}", "--format", "torchscript", "--out", str(out)]) == 0
    assert out.is_file()
    assert export([f"league:{mixture_league}", "--format", "torchscript", "--out", str(out)]) == 2
    assert "mixture" in capsys.readouterr().err


def test_a_league_spec_without_a_league_or_a_snapshot_is_refused_by_name(tmp_path):
    with pytest.raises(FileNotFoundError, match="no league store"):
        published(tmp_path)
    LeagueStore(tmp_path / LEAGUE_DB).close()
    with pytest.raises(ValueError, match="published nothing yet"):
        published(tmp_path)
    with pytest.raises(ValueError, match="names no run directory"):
        parse_player("league:")
    from arena.league.config import league_config

    with pytest.raises(ValueError, match="league.publish='best'"):
        league_config({"publish": "best"})
    with pytest.raises(ValueError, match="league.publish_window=0"):
        league_config({"publish": "mixture", "publish_window": 0})


def _policy(seed: int) -> Policy:
    torch.manual_seed(seed)
    return Policy(obs_dim=6, action_nvec=(4,), hidden_size=16, lstm_size=8)


def test_a_mixture_draws_one_member_per_match_and_keeps_it_until_the_next_episode_start():
    policies = [_policy(s) for s in range(3)]
    agent = MixtureAgent(policies, [0.2, 0.3, 0.5], num_rows=400, seed=7)
    rows = np.arange(400)
    obs = np.random.default_rng(0).normal(size=(400, 6)).astype(np.float32)
    agent.act(obs, rows, np.ones(400, bool))
    first = agent.member_of_row.copy()
    assert set(first) == {0, 1, 2}
    assert np.bincount(first, minlength=3) / 400 == pytest.approx([0.2, 0.3, 0.5], abs=0.08)
    agent.act(obs, rows, np.zeros(400, bool))
    assert (agent.member_of_row == first).all()  # mid-match: same member
    starts = np.zeros(400, bool)
    starts[:200] = True
    agent.act(obs, rows, starts)
    assert (agent.member_of_row[200:] == first[200:]).all()
    assert (agent.member_of_row[:200] != first[:200]).any()  # new matches: drawn again


def test_a_mixture_row_acts_exactly_as_its_member_does():
    from arena.agents.frozen import PolicyAgent

    policies = [_policy(s) for s in range(2)]
    mixture = MixtureAgent(policies, [1.0, 0.0], num_rows=5, deterministic=True)
    alone = PolicyAgent(policies[0], 5, deterministic=True)
    rng = np.random.default_rng(1)
    for t in range(4):
        obs = rng.normal(size=(5, 6)).astype(np.float32)
        start = np.full(5, t == 0)
        assert (mixture.act(obs, np.arange(5), start) == alone.act(obs, np.arange(5), start)).all()
