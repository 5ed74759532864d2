"""Players for evaluation: batched stateful policy acting, and resolving player specs with clear errors."""

import numpy as np
import pytest
import torch

from arena.agents.frozen import PolicyAgent
from arena.agents.players import load_player, resolve_player
from arena.agents.policy import Policy

RPSW_OBS, RPSW_NVEC = 11, [4]


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def save_policy(path, obs_dim=RPSW_OBS, nvec=RPSW_NVEC, seed=0):
    torch.manual_seed(seed)
    policy = Policy(obs_dim, nvec, 16, 16)
    torch.save({"policy_spec": policy.spec, "policy": policy.state_dict()}, path)
    return policy


def test_policy_agent_matches_stepping_the_policy_row_by_row():
    torch.manual_seed(0)
    policy = Policy(6, [3, 2], 16, 16).eval()
    agent = PolicyAgent(policy, num_rows=4, seed=7)
    rng = np.random.default_rng(0)
    # Rows come and go, and episodes restart at different times for different rows.
    calls = [([0, 1, 2, 3], [1, 1, 1, 1]), ([1, 3], [0, 0]), ([0, 1, 2, 3], [0, 1, 0, 0]), ([2, 0], [1, 0])]
    h, c = policy.initial_state(4)
    generator = torch.Generator().manual_seed(7)
    for rows, starts in calls:
        obs = rng.standard_normal((len(rows), 6)).astype(np.float32)
        got = agent.act(obs, np.array(rows), np.array(starts, dtype=bool))
        with torch.no_grad():
            idx = torch.tensor(rows)
            logits, _, (h_new, c_new) = policy.forward_step(torch.from_numpy(obs), (h[idx], c[idx]),
                                                            torch.tensor(starts, dtype=torch.bool))
            h[idx], c[idx] = h_new, c_new
            expected, _ = policy.sample_actions(logits, generator)
        assert got.dtype == np.int32 and got.shape == (len(rows), 2)
        np.testing.assert_array_equal(got, expected.numpy())


def test_policy_agent_deterministic_takes_the_argmax_and_seeded_sampling_repeats():
    torch.manual_seed(1)
    policy = Policy(6, [3, 2], 16, 16).eval()
    obs = np.random.default_rng(1).standard_normal((50, 6)).astype(np.float32)
    rows, starts = np.arange(50), np.ones(50, dtype=bool)
    starts_t = torch.ones(50, dtype=torch.bool)
    logits, _, _ = policy.forward_step(torch.from_numpy(obs), policy.initial_state(50), starts_t)
    argmax = np.stack([head.argmax(-1).numpy() for head in logits], axis=1)
    np.testing.assert_array_equal(PolicyAgent(policy, 50, deterministic=True).act(obs, rows, starts), argmax)
    first = PolicyAgent(policy, 50, seed=3).act(obs, rows, starts)
    np.testing.assert_array_equal(PolicyAgent(policy, 50, seed=3).act(obs, rows, starts), first)


def test_scripted_spec_gives_an_agent_that_ignores_rows():
    agent = load_player("scripted:counter", "rpsw", num_rows=8, seed=0)
    obs = np.zeros((3, RPSW_OBS), dtype=np.float32)
    actions = agent.act(obs, np.array([5, 0, 7]), np.ones(3, dtype=bool))
    np.testing.assert_array_equal(actions, [[1], [1], [1]])  # paper opens


def test_policy_file_resolves_with_its_sha256(tmp_path):
    save_policy(tmp_path / "p.pt")
    for spec in (str(tmp_path / "p.pt"), f"checkpoint:{tmp_path / 'p.pt'}"):
        player = resolve_player(spec, "rpsw")
        assert player.kind == "policy" and len(player.sha256) == 64
        agent = player.make_agent(num_rows=2, seed=0)
        assert agent.act(np.zeros((2, RPSW_OBS), np.float32), np.arange(2), np.ones(2, bool)).shape == (2, 1)


def test_unknown_scripted_bot_lists_the_available_ones():
    with pytest.raises(ValueError, match="unknown scripted player 'scripted:nope'.*scripted:heuristic"):
        resolve_player("scripted:nope", "midrange")


def test_missing_policy_file_names_the_path_and_hints_at_scripted_names(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.pt"):
        resolve_player(str(tmp_path / "missing.pt"), "rpsw")
    with pytest.raises(FileNotFoundError, match="did you mean the scripted player 'scripted:heuristic'"):
        resolve_player("heuristic", "midrange")


def test_corrupted_policy_file_names_the_path(tmp_path):
    (tmp_path / "bad.pt").write_bytes(b"not a torch file")
    with pytest.raises(ValueError, match="bad.pt"):
        resolve_player(str(tmp_path / "bad.pt"), "rpsw")


def test_policy_for_another_game_is_refused_with_both_spaces(tmp_path):
    save_policy(tmp_path / "rpsw.pt")
    with pytest.raises(ValueError, match=r"does not fit midrange 1v1 \(obs_dim 83.*takes obs_dim 11"):
        resolve_player(str(tmp_path / "rpsw.pt"), "midrange")
    save_policy(tmp_path / "actions.pt", nvec=[5])  # right obs_dim, wrong action space
    with pytest.raises(ValueError, match=r"actions \[5\]"):
        resolve_player(str(tmp_path / "actions.pt"), "rpsw")
