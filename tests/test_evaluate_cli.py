"""`python -m arena.evaluate A B`: reports, JSON, recording into a league, and clear errors (exit code 2)."""

import json

import pytest
import torch

from arena.agents.policy import Policy
from arena.evaluate import main
from arena.league.model.league import League

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def save_policy(path, obs_dim=11, nvec=(4,), seed=0):
    torch.manual_seed(seed)
    policy = Policy(obs_dim, list(nvec), 16, 16)
    torch.save({"policy_spec": policy.spec, "policy": policy.state_dict()}, path)
    return str(path)


@pytest.fixture
def two_policies(tmp_path):
    return save_policy(tmp_path / "a.pt", seed=1), save_policy(tmp_path / "b.pt", seed=2)


def test_two_policies_head_to_head_prints_score_interval_elo_and_speed(two_policies, capsys):
    a, b = two_policies
    argv = [a, f"checkpoint:{b}", "--game", "rpsw", "--games", "60", "--envs", "12", "--no-progress"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "60 games (30 side-swapped, seed-paired pairs)" in out
    for line in ("W/D/L", "score", "95% CI", "Elo diff", "games/s"):
        assert line in out


def test_json_output_holds_the_counts_and_the_sprt_verdict(capsys):
    argv = ["scripted:counter", "scripted:constant", "--game", "rpsw", "--games", "1000", "--sprt", "0", "50",
            "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["provenance"]["cpus"] >= 1 and "commit" in out["provenance"]  # where the figures came from
    assert out["wins"] == out["games"] < 1000 and out["losses"] == 0
    assert out["sprt"]["verdict"] == "H1" and out["sprt"]["llr"] > 2.9 and out["stopped_early"]
    assert out["score_ci95"][0] > 0.5


def test_sprt_verdict_and_llr_are_printed(capsys):
    argv = ["scripted:constant", "scripted:counter", "--game", "rpsw", "--games", "1000", "--sprt", "0", "50"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "H0 accepted" in out and "LLR" in out and "stopped after" in out


def test_record_adds_both_players_and_every_match_to_the_league(two_policies, tmp_path, capsys):
    a, _ = two_policies
    run = tmp_path / "run"
    argv = [a, "scripted:random", "--game", "rpsw", "--games", "20", "--envs", "4", "--record", str(run)]
    assert main(argv) == 0
    assert "recorded  20 matches" in capsys.readouterr().out
    league = League.open(run)
    kinds = {p.player_id: p.kind for p in league.pool}
    snapshot = next(p for p in league.pool if p.kind == "snapshot")
    assert kinds["scripted:random"] == "scripted" and len(snapshot.sha256) == 64
    assert league.store.match_count() == 20
    assert {m.team_a for m in league.store.matches()} == {(snapshot.player_id,)}
    assert snapshot.player_id in league.ratings
    league.close()
    assert main(argv) == 0  # the same file again is recognised by its sha256: no new player
    league = League.open(run)
    assert len(league.pool) == 2 and league.store.match_count() == 40
    league.close()


def test_missing_checkpoint_exits_2_naming_the_path(tmp_path, capsys):
    assert main([str(tmp_path / "gone.pt"), "scripted:random", "--game", "rpsw"]) == 2
    assert "gone.pt" in capsys.readouterr().err


def test_unknown_bot_exits_2_listing_the_bots(capsys):
    assert main(["scripted:heuristic", "scripted:ace", "--game", "midrange"]) == 2
    err = capsys.readouterr().err
    assert "scripted:ace" in err and "scripted:random, scripted:heuristic" in err


def test_checkpoint_for_another_game_exits_2(two_policies, capsys):
    a, _ = two_policies  # an rpsw policy (obs_dim 11) played on midrange (obs_dim 83)
    assert main([a, "scripted:random", "--game", "midrange"]) == 2
    err = capsys.readouterr().err
    assert "does not fit midrange" in err and "obs_dim 11" in err


def test_bad_game_settings_and_arguments_exit_2(capsys):
    assert main(["scripted:random", "scripted:random", "--game", "rpsw", "--set", "roundz=3"]) == 2
    assert "roundz" in capsys.readouterr().err
    assert main(["scripted:random", "scripted:random", "--game", "rpsw", "--set", "rounds"]) == 2
    assert main(["scripted:random", "--game", "rpsw"]) == 2
    assert main(["scripted:random", "scripted:random", "--game", "chess"]) == 2


def test_a_text_setting_is_passed_as_text_and_checked_by_the_game(capsys):
    args = ["scripted:outbid", "scripted:match_prize", "--game", "goofspiel", "--games", "20",
            "--no-progress", "--set", "num_cards=5", "--set"]
    assert main([*args, "points_order=random", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["wins"] + result["draws"] + result["losses"] == 20
    assert main([*args, "points_order=rnd"]) == 2
    assert "points_order='rnd' is not allowed: use one of descending, random" in capsys.readouterr().err


def test_device_cuda_without_a_usable_gpu_exits_2_saying_why(capsys):
    from arena import _core

    if _core.cuda_built and torch.cuda.is_available():
        pytest.skip("a CUDA core and a GPU are here: --device cuda would run")
    argv = ["scripted:random", "scripted:random", "--game", "rpsw", "--games", "4", "--device", "cuda"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --device cuda: ")
    if not _core.cuda_built:
        assert "no CUDA support" in err and "device='cpu'" in err


def test_device_cpu_is_the_default_and_can_be_named(capsys):
    argv = ["scripted:counter", "scripted:constant", "--game", "rpsw", "--games", "20", "--json"]
    assert main(argv) == 0
    default = json.loads(capsys.readouterr().out)
    assert main([*argv, "--device", "cpu"]) == 0
    named = json.loads(capsys.readouterr().out)
    wdl = ("wins", "draws", "losses")
    assert [named[k] for k in wdl] == [default[k] for k in wdl]
