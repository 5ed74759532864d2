"""A recorded midrange match is drawn to a PNG: tracks per fighter, missiles, the arena."""

from __future__ import annotations

import numpy as np
import pytest

import arena
from arena.games.midrange.render import draw_match, record_match


def _fly_straight_and_fire(obs: np.ndarray) -> np.ndarray:
    actions = np.zeros((len(obs), 3), dtype=np.int32)
    actions[:, 0] = 2  # rudder neutral
    actions[:, 1] = 2  # full throttle
    actions[:, 2] = 1  # fire whenever possible
    return actions


def test_record_match_follows_one_env_until_its_match_ends():
    env = arena.make("midrange", num_envs=2, seed=3, time_limit_s=20)
    rec = record_match(env, _fly_straight_and_fire)
    assert rec.outcome in (0, 1, 2)
    assert 1 < len(rec.fighter_xy) <= 101  # 20 s of game time is 100 decisions
    first, second = rec.fighter_xy[0], rec.fighter_xy[1]
    assert not np.allclose(first, second)  # the fighters moved
    assert any(m.any() for m in rec.missile_active)  # missiles were in flight


def test_draw_match_writes_a_png(tmp_path):
    env = arena.make("midrange", num_envs=1, seed=5, team_sizes=(2, 2), time_limit_s=10)
    path = draw_match(record_match(env, _fly_straight_and_fire), tmp_path / "match.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_record_match_refuses_other_games():
    with pytest.raises(ValueError, match="midrange"):
        record_match(arena.make("rpsw"), lambda obs: np.zeros((len(obs), 1), np.int32))
