"""Torch versions of midrange's scripted pilots: the numpy pilots' actions on real matches' rows."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import arena
from arena.agents.scripted import make_scripted
from arena.games.midrange import bots as scripted_midrange
from arena.games.midrange.bots import HeuristicPilot, RandomPilot
from arena.games.midrange.obs import MidrangeObsLayout

PILOTS = ("heuristic", "evader", "heuristic_6km", "heuristic_10km", "heuristic_14km")


def real_rows(team_sizes: tuple[int, int], steps: int = 250, seed: int = 1) -> np.ndarray:
    """Observation rows of real matches: heuristic pilots that fire and defend, some fighters flying
    straight out at random throttle (edge, leaving the arena), dead fighters' rows in team games."""
    env = arena.make("midrange", num_envs=24, num_threads=1, team_sizes=team_sizes, arena_radius_m=15000.0,
                     spawn_distance_min_m=6000.0, spawn_distance_max_m=16000.0, time_limit_s=60.0)
    pilot, rng = HeuristicPilot(team_sizes), np.random.default_rng(seed)
    scripted = rng.random(env.num_agents) < 0.75
    obs, _ = env.reset(seed)
    rows = []
    for _ in range(steps):
        other = np.stack([rng.integers(0, n, env.num_agents) for n in env.action_space.nvec], axis=1)
        other[:, 0] = 2
        rows.append(obs.copy())
        obs, *_, infos = env.step(np.where(scripted[:, None], pilot.act(obs), other).astype(np.int32))
        rows.append(infos["final_observation"][np.repeat(infos["done"], env.agents_per_env)])
    env.close()
    return np.concatenate(rows)


@pytest.fixture(scope="module", params=[(1, 1), (2, 2)], ids=["1v1", "2v2"])
def rows(request) -> tuple[tuple[int, int], np.ndarray]:
    obs = real_rows(request.param)
    layout = MidrangeObsLayout(request.param, 4)
    assert len(obs) >= 10000
    assert (layout.threats(obs)[:, :, 0] > 0.5).any(axis=1).sum() > 1000
    assert (layout.own_missiles(obs)[:, :, 0] > 0.5).any(axis=1).sum() > 1000
    assert (obs[:, 0] < 0.5).sum() > 20  # ended matches' final rows of dead fighters
    return request.param, obs


def ambiguous_rows(pilot: HeuristicPilot, obs: np.ndarray, monkeypatch) -> np.ndarray:
    """Rows whose numpy actions change when every bearing moves by a few float32 ulp: there numpy's
    and torch's arctan2, which differ by that much, may pick different actions."""
    reference = pilot.act(obs)
    changed = np.zeros(len(obs), dtype=bool)
    for factor in (1 - 6e-7, 1 + 6e-7):
        with monkeypatch.context() as patch:
            patch.setattr(scripted_midrange, "angle_of",
                          lambda sin, cos, f=factor: (np.arctan2(sin, cos) * f).astype(np.float32))
            changed |= (pilot.act(obs) != reference).any(axis=1)
    return changed


@pytest.mark.parametrize("name", PILOTS)
def test_torch_pilots_act_as_the_numpy_pilots_on_real_rows(rows, name, monkeypatch) -> None:
    team_sizes, obs = rows
    pilot = make_scripted(name, "midrange", team_sizes=team_sizes)
    assert pilot.supports_torch
    expected = pilot.act(obs)
    got = pilot.act_torch(torch.from_numpy(obs))
    assert got.dtype == torch.int32 and got.shape == expected.shape
    differ = (got.numpy() != expected).any(axis=1)
    # every action agrees but, at most, where an angle sits within a few ulp of a rule's threshold
    assert not (differ & ~ambiguous_rows(pilot, obs, monkeypatch)).any()
    assert differ.mean() < 1e-3
    # the rows exercise the rules: turns both ways; launches, but the evader's (the 6 km rung finds
    # no shot in these matches, whose heuristic pilots fire and are defended against from further)
    assert len(np.unique(expected[:, 0])) == 5
    fired = int((expected[:, 2] == 1).sum())
    assert fired == 0 if name == "evader" else fired > 5 or name == "heuristic_6km"


def test_random_pilot_torch_draws_the_numpy_pilots_numbers(rows) -> None:
    team_sizes, obs = rows
    numpy_pilot = make_scripted("random", "midrange", team_sizes=team_sizes, seed=9)
    torch_pilot = make_scripted("random", "midrange", team_sizes=team_sizes, seed=9)
    assert isinstance(torch_pilot, RandomPilot) and torch_pilot.supports_torch
    for begin in range(0, 3000, 700):  # batch after batch: the generators stay in step
        chunk = obs[begin:begin + 700]
        np.testing.assert_array_equal(torch_pilot.act_torch(torch.from_numpy(chunk)).numpy(),
                                      numpy_pilot.act(chunk))
    assert torch_pilot.act_torch(torch.from_numpy(obs[:0])).shape == (0, 3)


class ShyPilot(HeuristicPilot):
    """A user's change of one numpy rule without its torch twin."""

    def _fire(self, obs, enemy, has_target, target_bearing):
        return np.zeros(len(obs), dtype=bool)


def test_a_pilot_whose_numpy_rule_changed_without_a_torch_twin_falls_back_to_numpy(rows) -> None:
    team_sizes, obs = rows
    pilot = ShyPilot(team_sizes)
    assert not pilot.supports_torch
    got = pilot.act_torch(torch.from_numpy(obs[:2000]))
    np.testing.assert_array_equal(got.numpy(), pilot.act(obs[:2000]))
    assert not got[:, 2].any()
