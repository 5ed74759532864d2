"""League store: round trip, atomic matches, and surviving SIGKILL at any moment."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from arena.league.model.payoff import PayoffTable
from arena.league.model.players import Player
from arena.league.model.ratings import Ratings
from arena.league.model.store import LEAGUE_DB, LeagueStore

REPO = Path(__file__).resolve().parents[1]

PLAYERS = [
    Player("learner", "learner"),
    Player("scripted:random", "scripted"),
    Player("scripted:heuristic", "scripted"),
    Player("learner:snap-000000", "snapshot", path="snaps/0.pt", sha256="ab" * 32, step=0, parent="learner"),
]

# Shared by this test and the child process it kills: match i is a pure function of i.
MATCH_SRC = '''
def match(i):
    if i % 7 == 0:
        return ["learner", "scripted:heuristic"], ["learner:snap-000000", "scripted:random"], (i % 3) - 1
    opponent = ["scripted:random", "scripted:heuristic", "learner:snap-000000"][i % 3]
    return ["learner"], [opponent], [1, 0, -1, 1, 1][i % 5]
'''
namespace: dict = {}
exec(MATCH_SRC, namespace)
match = namespace["match"]

CHILD = MATCH_SRC + '''
import sys
from arena.league.model.players import Player
from arena.league.model.ratings import Ratings
from arena.league.model.store import LeagueStore

store = LeagueStore(sys.argv[1])
for p in [Player("learner", "learner"), Player("scripted:random", "scripted"),
          Player("scripted:heuristic", "scripted"),
          Player("learner:snap-000000", "snapshot", path="snaps/0.pt", sha256="ab" * 32, step=0,
                 parent="learner")]:
    store.add_player(p)
ratings = Ratings()
i = 0
while True:
    team_a, team_b, outcome = match(i)
    new = ratings.rate(team_a, team_b, outcome)
    store.record_match(team_a, team_b, outcome, length=100 + i, learner_step=10 * i, ratings=new)
    print(i, flush=True)
    i += 1
'''


def fill(store: LeagueStore, n: int) -> Ratings:
    for p in PLAYERS:
        store.add_player(p)
    ratings = Ratings()
    for i in range(n):
        team_a, team_b, outcome = match(i)
        new = ratings.rate(team_a, team_b, outcome)
        store.record_match(team_a, team_b, outcome, length=100 + i, learner_step=10 * i, ratings=new)
    return ratings


def test_round_trip_rebuilds_players_matches_payoff_and_ratings(tmp_path):
    path = tmp_path / LEAGUE_DB
    with LeagueStore(path) as store:
        ratings = fill(store, 30)
        store.set_meta("run", {"seed": 1})
    with LeagueStore(path, create=False) as store:
        state = store.load(decay=0.9)
        matches = store.matches()
    assert state.players == PLAYERS
    assert state.match_count == 30 and state.last_match_id == 30
    assert [m.match_id for m in matches] == list(range(1, 31))
    for i, m in enumerate(matches):
        team_a, team_b, outcome = match(i)
        assert (list(m.team_a), list(m.team_b), m.outcome) == (team_a, team_b, outcome)
        assert (m.learner_step, m.length) == (10 * i, 100 + i)
    assert state.ratings == ratings.as_dict()  # SQLite REAL is an exact double
    assert json.loads(state.meta["run"]) == {"seed": 1} and state.meta["schema_version"] == "1"
    replayed = PayoffTable(0.9)
    for i in range(30):
        replayed.record_teams(*match(i))
    for a in ("learner", "scripted:random"):
        for b in ("scripted:heuristic", "learner:snap-000000"):
            assert state.payoff.wdl(a, b) == pytest.approx(replayed.wdl(a, b))


def test_store_uses_wal_journal(tmp_path):
    with LeagueStore(tmp_path / LEAGUE_DB) as store:
        assert store._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_rollback_finds_the_ratings_it_deletes_by_an_index_not_a_scan(tmp_path):
    with LeagueStore(tmp_path / LEAGUE_DB) as store:
        query = "EXPLAIN QUERY PLAN DELETE FROM ratings WHERE match_id >= ?"
        plan = store._conn.execute(query, (5,)).fetchall()
    assert any("ratings_by_match" in row[-1] for row in plan), plan


def test_a_batch_of_matches_is_stored_whole_or_not_at_all(tmp_path):
    with LeagueStore(tmp_path / LEAGUE_DB) as store:
        for player in (Player("learner", "learner"), Player("scripted:random", "scripted")):
            store.add_player(player)
        with store.batch():
            for outcome in (1, 0, -1):
                store.record_match(["learner"], ["scripted:random"], outcome, learner_step=1)
            # a reader sees none of them until the batch commits
            with LeagueStore(tmp_path / LEAGUE_DB, read_only=True) as reader:
                assert reader.matches() == []
        assert [m.outcome for m in store.matches()] == [1, 0, -1]
        with pytest.raises(ValueError, match="unregistered"), store.batch():
            store.record_match(["learner"], ["scripted:random"], 1, learner_step=2)
            store.record_match(["learner"], ["nobody"], 1, learner_step=2)
        assert len(store.matches()) == 3  # the failed batch's first match went with it


def test_registering_a_player_twice_is_idempotent_but_conflicts_fail(tmp_path):
    with LeagueStore(tmp_path / LEAGUE_DB) as store:
        store.add_player(PLAYERS[0])
        store.add_player(PLAYERS[0])
        with pytest.raises(ValueError, match="already stored"):
            store.add_player(Player("learner", "scripted"))
        assert store.players() == [PLAYERS[0]]


def test_bad_matches_are_rejected_and_store_nothing(tmp_path):
    with LeagueStore(tmp_path / LEAGUE_DB) as store:
        fill(store, 0)
        with pytest.raises(ValueError, match=r"unregistered players \['ghost'\]"):
            store.record_match(["learner"], ["ghost"], "win")
        with pytest.raises(ValueError, match="did not play"):
            store.record_match(["learner"], ["scripted:random"], "win",
                               ratings={"scripted:heuristic": (1.0, 1.0)})
        with pytest.raises(ValueError, match="outcome"):
            store.record_match(["learner"], ["scripted:random"], "victory")
        with pytest.raises(ValueError, match="sigma > 0"):
            nan_rating = {"learner": (25.0, float("nan"))}
            store.record_match(["learner"], ["scripted:random"], "win", ratings=nan_rating)
        with pytest.raises(ValueError, match="learner_step=-1"):
            store.record_match(["learner"], ["scripted:random"], "win", learner_step=-1)
        with pytest.raises(ValueError, match="more than once"):
            store.record_match(["learner", "learner"], ["scripted:random"], "win")
        assert store.match_count() == 0


class FailingRatingsWrite:
    """A connection whose rating insert fails: the match insert before it must roll back."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def execute(self, *args):
        return self._conn.execute(*args)

    def executemany(self, *args):
        raise sqlite3.OperationalError("disk I/O error (simulated)")


def test_a_match_and_its_ratings_commit_together_or_not_at_all(tmp_path):
    with LeagueStore(tmp_path / LEAGUE_DB) as store:
        fill(store, 3)
        real = store._conn
        store._conn = FailingRatingsWrite(real)
        with pytest.raises(sqlite3.OperationalError, match="simulated"):
            store.record_match(["learner"], ["scripted:random"], "win", ratings={"learner": (30.0, 5.0)})
        store._conn = real
        assert store.match_count() == 3
        assert store.record_match(["learner"], ["scripted:random"], "win") == 4


def test_opening_a_missing_store_without_create_fails_clearly(tmp_path):
    with pytest.raises(FileNotFoundError, match="no league store"):
        LeagueStore(tmp_path / LEAGUE_DB, create=False)


@pytest.mark.parametrize("seed", [0, 1])
def test_sigkill_at_a_random_moment_leaves_exactly_the_committed_matches(tmp_path, seed):
    rng = np.random.default_rng(seed)
    db = tmp_path / LEAGUE_DB
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(db)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    reported = int(rng.integers(20, 120))
    try:
        for _ in range(reported):
            assert proc.stdout.readline(), proc.stderr.read()
        time.sleep(float(rng.uniform(0.0, 0.01)))  # land anywhere inside the next transactions
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL

    assert sqlite3.connect(db).execute("PRAGMA integrity_check").fetchone() == ("ok",)
    with LeagueStore(db, create=False) as store:
        state = store.load()
        history = store.rating_history()
        matches = store.matches()
        n = len(matches)
        assert state.match_count == n
        assert n >= reported  # every match the child reported as committed is there (and maybe one more)
        assert [m.match_id for m in matches] == list(range(1, n + 1))
        replay = Ratings()
        by_match: dict[int, dict] = {}
        for row in history:
            by_match.setdefault(row.match_id, {})[row.player_id] = (row.mu, row.sigma)
        for i, m in enumerate(matches):
            team_a, team_b, outcome = match(i)
            assert (list(m.team_a), list(m.team_b), m.outcome) == (team_a, team_b, outcome)
            assert by_match[m.match_id] == replay.rate(team_a, team_b, outcome)  # no partial match
        assert set(by_match) == {m.match_id for m in matches}
        # (trueskill keeps a rating as precision and precision-mean: reading mu and sigma back after
        # setting them can differ in the last bit)
        expected = replay.as_dict()
        assert state.ratings.keys() == expected.keys()
        for player_id, rating in state.ratings.items():
            assert rating == pytest.approx(expected[player_id], rel=1e-12)
        # The store keeps working after the crash.
        assert store.record_match(["learner"], ["scripted:random"], "draw") == n + 1
