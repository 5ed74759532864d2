"""League marks: a league opened from its newest mark holds, to the bit, what a replay of every match
gives; rollbacks and foreign writers keep them honest; the bounded readers read only what they need."""

import shutil
import sqlite3

import numpy as np
import pytest

from arena.league.model.league import League
from arena.league.model.players import Player
from arena.league.model.store import KEEP_MARKS, LEAGUE_DB, LeagueStore

OPPONENTS = ["scripted:a", "scripted:b", "learner:snap-000000", "main_exploiter-0",
             "main_exploiter-0:snap-000000"]


def _players() -> list[Player]:
    return [Player("learner", "learner"), Player("scripted:a", "scripted"), Player("scripted:b", "scripted"),
            Player("learner:snap-000000", "snapshot", path="s0.pt", sha256="ab" * 32, step=0,
                   parent="learner"),
            Player("main_exploiter-0", "main_exploiter"),
            Player("main_exploiter-0:snap-000000", "snapshot", path="e0.pt", sha256="cd" * 32, step=0,
                   parent="main_exploiter-0")]


def _play(league: League, rng: np.random.Generator, n: int, checkpoint: int) -> None:
    """n matches of the learner (some mirror, some exploiter) tagged with its checkpoint count."""
    with league.store.batch():
        for _ in range(n):
            outcome = int(rng.integers(-1, 2))
            if rng.random() < 0.15:
                league.record_match(["learner"], ["learner"], outcome, checkpoints={"learner": checkpoint})
                continue
            opponent = OPPONENTS[int(rng.integers(len(OPPONENTS)))]
            league.record_match(["learner"], [opponent], outcome, learner_step=checkpoint * 1000,
                                checkpoints={"learner": checkpoint})


def _league(tmp_path, decay: float = 0.99) -> League:
    league = League.open(tmp_path, decay=decay)
    for p in _players():
        league.add_player(p)
    return league


def _without_marks(db, tmp_path) -> LeagueStore:
    """A copy of the store with every mark deleted: its load replays every match."""
    copy = tmp_path / "nomarks" / LEAGUE_DB
    copy.parent.mkdir()
    shutil.copy(db, copy)
    conn = sqlite3.connect(copy)
    for table in ("marks", "mark_payoff", "mark_players"):
        conn.execute(f"DELETE FROM {table}")
    conn.commit()
    conn.close()
    return LeagueStore(copy, create=False)


def _same_state(a, b) -> None:
    assert a.match_count == b.match_count and a.last_match_id == b.last_match_id
    assert a.ratings == b.ratings
    assert a.records == b.records
    assert sorted(a.payoff.rows()) == sorted(b.payoff.rows())  # bit for bit, not approximately


def test_a_league_loaded_from_its_mark_equals_a_replay_of_every_match_to_the_bit(tmp_path):
    league = _league(tmp_path)
    rng = np.random.default_rng(0)
    for checkpoint in range(4):
        _play(league, rng, 300, checkpoint)
        assert league.mark()
    _play(league, rng, 77, 4)  # after the last mark: replayed on load
    expected_rows = sorted(league.payoff.rows())
    league.close()
    with LeagueStore(tmp_path / LEAGUE_DB, create=False) as store:
        state = store.load(0.99)
        assert state.replayed == 77
        assert sorted(state.payoff.rows()) == expected_rows
        with _without_marks(tmp_path / LEAGUE_DB, tmp_path) as plain:
            full = plain.load(0.99)
        assert full.replayed == full.match_count == 4 * 300 + 77
        _same_state(state, full)


def test_only_the_newest_marks_are_kept(tmp_path):
    league = _league(tmp_path)
    rng = np.random.default_rng(1)
    for checkpoint in range(KEEP_MARKS + 3):
        _play(league, rng, 20, checkpoint)
        league.mark()
    marks = league.store.marks()
    assert len(marks) == KEEP_MARKS
    assert marks[-1].match_id == league.last_match_id and marks[-1].matches == league.match_count
    kept = {m.match_id for m in marks}
    for table in ("mark_payoff", "mark_players"):
        held = {r[0] for r in league.store._conn.execute(f"SELECT DISTINCT mark FROM {table}")}
        assert held == kept  # a dropped mark leaves no rows behind
    league.close()


def test_a_mark_made_with_another_decay_is_not_used(tmp_path):
    league = _league(tmp_path, decay=0.9)
    _play(league, np.random.default_rng(2), 100, 0)
    league.mark()
    league.close()
    with LeagueStore(tmp_path / LEAGUE_DB, create=False) as store:
        state = store.load(0.99)
    assert state.replayed == 100  # the 0.9 mark's counts are not 0.99's
    with _without_marks(tmp_path / LEAGUE_DB, tmp_path) as plain:
        _same_state(state, plain.load(0.99))


def test_rollback_with_marks_gives_what_a_rollback_without_them_gives(tmp_path):
    league = _league(tmp_path)
    rng = np.random.default_rng(3)
    for checkpoint in range(5):
        _play(league, rng, 200, checkpoint)
        league.mark()
    league.close()
    plain = _without_marks(tmp_path / LEAGUE_DB, tmp_path)
    marked = League(LeagueStore(tmp_path / LEAGUE_DB, create=False))
    unmarked = League(plain)
    assert marked.rollback("learner", 3) == unmarked.rollback("learner", 3) > 0
    assert all(m.match_id < 3 * 200 + 1 for m in marked.store.marks())  # those holding removed matches went
    assert marked.store.rating_history() == unmarked.store.rating_history()
    _same_state(marked.store.load(0.99), unmarked.store.load(0.99))
    assert sorted(marked.payoff.rows()) == sorted(unmarked.payoff.rows())
    assert marked.ratings.as_dict() == unmarked.ratings.as_dict()
    assert marked.match_count == unmarked.match_count == 3 * 200
    marked.close()
    unmarked.close()


def test_no_mark_is_written_over_matches_another_process_recorded(tmp_path):
    league = _league(tmp_path)
    _play(league, np.random.default_rng(4), 50, 0)
    assert league.mark()
    other = League.open(tmp_path)  # e.g. arena.evaluate --record beside a running trainer
    other.record_match(["scripted:a"], ["scripted:b"], 1)
    other.close()
    _play(league, np.random.default_rng(5), 50, 1)  # this league has not seen the other's match
    assert not league.mark()
    assert league.store.latest_mark().match_id == 50
    league.close()
    with LeagueStore(tmp_path / LEAGUE_DB, create=False) as store:
        state = store.load(0.99)
    assert state.match_count == 101 and state.replayed == 51  # the other's match included
    with _without_marks(tmp_path / LEAGUE_DB, tmp_path) as plain:
        _same_state(state, plain.load(0.99))


def test_the_bounded_rating_history_keeps_each_players_first_and_last_rows(tmp_path):
    league = _league(tmp_path)
    _play(league, np.random.default_rng(6), 500, 0)
    full = league.store.rating_history()
    thinned = league.store.rating_history(["learner", "scripted:a"], points=10)
    for player_id in ("learner", "scripted:a"):
        mine = [r for r in full if r.player_id == player_id]
        kept = [r for r in thinned if r.player_id == player_id]
        assert 2 <= len(kept) <= 10
        assert kept[0] == mine[0] and kept[-1] == mine[-1]
        assert set(kept) <= set(mine)
    assert {r.player_id for r in thinned} == {"learner", "scripted:a"}
    with pytest.raises(ValueError, match="points=1"):
        league.store.rating_history(["learner"], points=1)
    league.close()


def test_iter_matches_touching_reads_a_players_and_its_snapshots_matches_only(tmp_path):
    league = _league(tmp_path)
    _play(league, np.random.default_rng(7), 300, 0)
    everything = league.store.matches()
    touching = list(league.store.iter_matches(touching=["main_exploiter-0"], batch=7))
    expected = [m for m in everything
                if any(p.startswith("main_exploiter-0") for p in (*m.team_a, *m.team_b))]
    assert touching == expected and 0 < len(expected) < len(everything)
    assert list(league.store.iter_matches(after=everything[-3].match_id, batch=2)) == everything[-2:]
    assert list(league.store.iter_matches(touching=[])) == []
    league.close()
