"""Players and the pool: validation with clear errors, joining order, latest snapshot."""

import numpy as np
import pytest

from arena.league.model.players import Player, Pool, snapshot_id


def test_snapshot_ids_are_stable_and_sortable():
    assert snapshot_id("learner", 3) == "learner:snap-000003"
    assert snapshot_id("main", 12) > snapshot_id("main", 3)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"player_id": "", "kind": "learner"}, "non-empty string"),
    ({"player_id": "x", "kind": "bot"}, "kind 'bot' of 'x' is not one of"),
    ({"player_id": "x", "kind": "snapshot"}, "needs both path and sha256"),
    ({"player_id": "x", "kind": "scripted", "sha256": "abc"}, "64 lowercase hex"),
    ({"player_id": "x", "kind": "learner", "step": -1}, "step -1 of 'x'"),
])
def test_bad_players_are_rejected_clearly(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Player(**kwargs)


def test_numpy_steps_become_plain_ints():
    p = Player("s", "snapshot", path="s.pt", sha256="0" * 64, step=np.int64(5), parent="learner")
    assert p.step == 5 and type(p.step) is int


def test_pool_keeps_joining_order_and_finds_latest_snapshot():
    def snap(parent: str, i: int) -> Player:
        return Player(snapshot_id(parent, i), "snapshot", path=f"{i}.pt", sha256="0" * 64, parent=parent)

    pool = Pool([Player("learner", "learner"), snap("learner", 0), Player("main_exploiter", "main_exploiter"),
                 snap("main_exploiter", 0), snap("learner", 1)])
    assert pool.ids[0] == "learner" and len(pool) == 5
    assert pool.latest_snapshot("learner").player_id == snapshot_id("learner", 1)
    assert pool.latest_snapshot("main_exploiter").player_id == snapshot_id("main_exploiter", 0)
    assert pool.latest_snapshot("nobody") is None
    assert [p.player_id for p in pool.of_kind("learner", "main_exploiter")] == ["learner", "main_exploiter"]
    assert pool.get("main_exploiter").is_learning


def test_pool_rejects_a_different_player_under_a_taken_id():
    pool = Pool([Player("learner", "learner")])
    pool.add(Player("learner", "learner"))  # identical: fine
    with pytest.raises(ValueError, match="already taken"):
        pool.add(Player("learner", "scripted"))
    with pytest.raises(ValueError, match="unknown player 'x'"):
        pool.get("x")
