"""Matchups played side by side in one batched env give the games each would give on its own."""

import itertools

import pytest
import torch

from arena.agents.players import resolve_player
from arena.agents.policy import Policy
from arena.evaluation.matchups import play_matchups
from arena.evaluation.runner import MatchSettings, play_match

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def players(tmp_path, game="rpsw", obs_dim=11, nvec=(4,), bots=("scripted:counter", "scripted:cycle")):
    out = {}
    for k in range(3):
        torch.manual_seed(k)
        policy = Policy(obs_dim, list(nvec), 16, 16)
        path = tmp_path / f"p{k}.pt"
        torch.save({"policy_spec": policy.spec, "policy": policy.state_dict()}, path)
        out[f"p{k}"] = resolve_player(str(path), game)
    for bot in bots:
        out[bot] = resolve_player(bot, game)
    return out


@pytest.mark.parametrize("max_envs", [4096, 24])  # all matchups in one env; groups of a few
def test_side_by_side_matchups_play_the_same_games_as_one_match_at_a_time(tmp_path, max_envs):
    ps = players(tmp_path)
    settings = MatchSettings(game="rpsw", games=24, num_envs=8, seed=3, num_threads=1, deterministic=True)
    matchups = list(itertools.combinations(ps, 2))
    together = play_matchups(ps, matchups, settings, max_envs=max_envs)
    for (a, b), result in zip(matchups, together, strict=True):
        alone = play_match(ps[a], ps[b], settings)
        assert (result.wins, result.draws, result.losses) == (alone.wins, alone.draws, alone.losses), (a, b)
        assert result.matches == alone.matches, (a, b)
        assert result.games == 24


def test_side_by_side_midrange_matchups_with_lstm_policies_match_too(tmp_path):
    import arena

    env = arena.make("midrange", num_envs=1)
    ps = players(tmp_path, "midrange", env.obs_dim, tuple(int(n) for n in env.action_space.nvec),
                 bots=("scripted:heuristic",))
    settings = MatchSettings(game="midrange", games=4, num_envs=4, seed=5, num_threads=1, deterministic=True,
                             overrides={"time_limit_s": 60.0})
    matchups = [("p0", "p1"), ("p2", "scripted:heuristic"), ("scripted:heuristic", "p0")]
    together = play_matchups(ps, matchups, settings)
    for (a, b), result in zip(matchups, together, strict=True):
        assert result.matches == play_match(ps[a], ps[b], settings).matches, (a, b)


def test_sampling_players_play_every_game_of_every_matchup(tmp_path):
    ps = players(tmp_path, bots=("scripted:random",))
    settings = MatchSettings(game="rpsw", games=10, num_envs=4, seed=0, num_threads=1)
    seen = []
    results = play_matchups(ps, [("p0", "p1"), ("p1", "scripted:random")], settings,
                            on_progress=lambda a, b, p: seen.append((a, b, p.games)))
    assert [r.games for r in results] == [10, 10]
    assert ("p0", "p1", 10) in seen and ("p1", "scripted:random", 10) in seen
    again = play_matchups(ps, [("p0", "p1"), ("p1", "scripted:random")], settings)
    assert [r.matches for r in again] == [r.matches for r in results]  # same seed, same games


@pytest.mark.parametrize(("matchups", "message"), [
    ([("p0", "nobody")], "'nobody', which is not one of the players"),
    ([("p0", "p0")], "same player on both sides"),
])
def test_bad_matchups_are_refused_clearly(tmp_path, matchups, message):
    with pytest.raises(ValueError, match=message):
        play_matchups(players(tmp_path), matchups, MatchSettings(game="rpsw", games=2))


@pytest.mark.parametrize("deterministic", [True, False])
def test_policies_stepped_in_one_bank_play_the_games_they_play_stepped_one_at_a_time(tmp_path, deterministic):
    # Grouped inference (the round robin's default) against one forward pass per player: the same
    # logits to float tolerance, each player's own generator over its own rows, so the same games.
    import arena

    env = arena.make("midrange", num_envs=1)
    ps = players(tmp_path, "midrange", env.obs_dim, tuple(int(n) for n in env.action_space.nvec),
                 bots=("scripted:heuristic",))
    settings = MatchSettings(game="midrange", games=6, num_envs=6, seed=7, num_threads=1,
                             deterministic=deterministic, overrides={"time_limit_s": 60.0})
    matchups = list(itertools.combinations(ps, 2))
    banked = play_matchups(ps, matchups, settings, grouped=True)
    alone = play_matchups(ps, matchups, settings, grouped=False)
    assert [r.matches for r in banked] == [r.matches for r in alone]
    assert sum(r.games for r in banked) == 6 * len(matchups)
