"""The league: pool, payoff table and ratings kept in memory and written through to the league store.

The entry points wire this to the trainer: they add players, report each finished match with
`record_match`, ask a `Matchmaker(league.pool, league.payoff, ...)` for opponents, and feed
`win_rates_vs_pool` to a `SnapshotGate`. Opening a run directory again resumes exactly where the store
left off.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from arena.envs.outcomes import Result, ResultLike
from arena.league.model.payoff import PayoffTable
from arena.league.model.players import Player, Pool
from arena.league.model.ratings import Ratings
from arena.league.model.records import PlayerRecords
from arena.league.model.store import LEAGUE_DB, META_DECAY, META_RATINGS, LeagueStore

log = logging.getLogger(__name__)


class League:
    """In-memory league state backed by a LeagueStore; every change is committed before it is applied."""

    def __init__(self, store: LeagueStore, *, decay: float | None = None,
                 ratings_config: Mapping[str, float] | None = None) -> None:
        self.store = store
        meta = store.meta()
        decay = _resolve(META_DECAY, decay, meta, default=1.0)
        config = _resolve(META_RATINGS, dict(ratings_config) if ratings_config is not None else None, meta,
                          default=Ratings().config())
        self.decay = float(decay)
        self.ratings = Ratings(**config)
        self._reload()
        store.set_meta(META_DECAY, decay)
        store.set_meta(META_RATINGS, self.ratings.config())

    @classmethod
    def open(cls, run_dir: str | os.PathLike[str], *, decay: float | None = None,
             ratings_config: Mapping[str, float] | None = None) -> League:
        """Open (or create) the league of a run directory, RUN_DIR/league.sqlite."""
        return cls(LeagueStore(Path(run_dir) / LEAGUE_DB), decay=decay, ratings_config=ratings_config)

    def _reload(self) -> None:
        """Pool, payoff and ratings as the store holds them."""
        state = self.store.load(self.decay)
        self.pool = Pool(state.players, retired=self.store.retired())
        self.payoff: PayoffTable = state.payoff
        self.ratings = _fresh_like(self.ratings)
        for player_id, (mu, sigma) in state.ratings.items():
            self.ratings.set(player_id, mu, sigma)
        self.records = PlayerRecords(state.records)  # undecayed W/D/L, for the leaderboard
        self.match_count = state.match_count
        self.last_match_id = state.last_match_id

    def mark(self) -> bool:
        """Writes a mark of the league as it stands (``LeagueStore.write_mark``): a later open or
        rollback replays only the matches after it. The training run marks at every checkpoint.
        Returns False where the store holds matches this league has not seen (nothing written)."""
        return self.store.write_mark(self.last_match_id, self.match_count, self.payoff,
                                     self.ratings.as_dict(), self.records.as_dict())

    def close(self) -> None:
        self.store.close()

    def rollback(self, player_id: str, checkpoint: int) -> int:
        """Forgets the matches ``player_id`` played after writing its ``checkpoint``-th checkpoint
        (a resumed learner lost the state that played them): they are removed, the later matches are
        re-rated, and pool, payoff and ratings are reloaded. Snapshots and gauntlet results stay.
        Returns how many matches were removed."""
        rater = _fresh_like(self.ratings)

        def rate(current: Mapping[str, tuple[float, float]], team_a: Sequence[str], team_b: Sequence[str],
                 outcome: int) -> dict[str, tuple[float, float]]:
            if set(team_a) & set(team_b):  # mirror matches are not rated (see record_match)
                return {}
            for p in (*team_a, *team_b):
                rater.set(p, *current[p])
            return rater.updated(team_a, team_b, outcome)

        removed = self.store.rollback(player_id, checkpoint, rate,
                                      initial=lambda: (float(rater.env.mu), float(rater.env.sigma)))
        if removed:
            self._reload()
        return removed

    def retire(self, player_ids: Sequence[str]) -> None:
        """Takes players out of the pool for good (``league.retention``): committed to the store first;
        deleting their files is the caller's next step (``arena.league.run.retention``)."""
        self.store.retire(player_ids)
        self.pool.retire(player_ids)

    def add_player(self, player: Player) -> Player:
        """Register a player (idempotent for an identical player)."""
        self.store.add_player(player)
        return self.pool.add(player)

    def record_match(
        self,
        team_a: Sequence[str],
        team_b: Sequence[str],
        outcome: ResultLike,
        *,
        length: float | None = None,
        learner_step: int | None = None,
        checkpoints: Mapping[str, int] | None = None,
    ) -> int:
        """Commit a finished match (outcome from team A's view), then update payoff and ratings.
        ``checkpoints``: each learning player's count of checkpoints written (see `rollback`).

        A match with a player on both sides (mirror self-play) is stored and counted in the payoff
        table but not rated: it says nothing about that player's skill.
        """
        result = Result.parse(outcome)
        for player_id in (*team_a, *team_b):
            self.pool.get(player_id)
        mirror = bool(set(team_a) & set(team_b))
        new = {} if mirror else self.ratings.updated(team_a, team_b, result)
        match_id = self.store.record_match(
            team_a, team_b, result, length=length, learner_step=learner_step, ratings=new,
            checkpoints=checkpoints,
        )
        self.payoff.record_teams(team_a, team_b, result)
        self.records.add(team_a, team_b, result)
        for player_id, (mu, sigma) in new.items():
            self.ratings.set(player_id, mu, sigma)
        self.match_count += 1
        self.last_match_id = match_id
        return match_id

    def win_rates_vs_pool(
        self, learner_id: str, kinds: Sequence[str] = ("snapshot", "scripted")
    ) -> dict[str, tuple[float, float]]:
        """opponent id -> (score, decayed games) of the learner against each pool player of `kinds`."""
        return dict(self.iter_win_rates_vs_pool(learner_id, kinds))

    def iter_win_rates_vs_pool(
        self, learner_id: str, kinds: Sequence[str] = ("snapshot", "scripted"), *, newest_first: bool = False
    ) -> Iterator[tuple[str, tuple[float, float]]]:
        """`win_rates_vs_pool`'s items one at a time (newest player first with ``newest_first``), so a
        reader that stops early, as the snapshot gate does at the first opponent not beaten (usually
        the newest snapshot), costs O(1) instead of O(pool)."""
        players = self.pool.of_kind(*kinds)
        ids = [p.player_id for p in (reversed(players) if newest_first else players)]
        return self.iter_win_rates_against(learner_id, [i for i in ids if i != learner_id])

    def iter_win_rates_against(self, learner_id: str, opponent_ids: Sequence[str]
                               ) -> Iterator[tuple[str, tuple[float, float]]]:
        """(score, decayed games) of the learner against each of ``opponent_ids``, in that order (0.5
        before any game)."""
        for opponent in opponent_ids:
            s = self.payoff.score(learner_id, opponent)
            yield opponent, (0.5 if s is None else s, self.payoff.games(learner_id, opponent))

    def last_snapshot_step(self, learner_id: str) -> int | None:
        """Learner step of the newest snapshot frozen from `learner_id`, or None."""
        latest = self.pool.latest_snapshot(parent=learner_id)
        return None if latest is None else latest.step


def _fresh_like(ratings: Ratings) -> Ratings:
    """Unrated players, same TrueSkill settings and the same kind of rater (TwoTeamRatings stays one)."""
    return type(ratings)(**ratings.config())


def _resolve(key: str, given: object, meta: Mapping[str, str], default: object) -> object:
    stored = json.loads(meta[key]) if key in meta else None
    if given is None:
        return default if stored is None else stored
    if stored is not None and stored != given:
        log.warning("league %s changes on resume: stored %r, now %r", key, stored, given)
    return given
