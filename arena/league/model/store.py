"""The league store: one SQLite file per run that survives a crash at any moment and resumes exactly.

Every finished match is committed together with the rating updates it caused (in its own transaction,
or with the other matches that ended in the same step inside ``batch()``), so the file always holds a
prefix of the match history with ratings that agree with it. The in-memory
league (pool, payoff table, ratings) is rebuilt by `load()`: players as registered, payoff by replaying
the matches in order (with the run's decay), ratings as each player's last rating row.

Each match also records, for every learning player in it, how many checkpoints that learner had
written when it played (``match_learners``). A learner resumed from its g-th checkpoint lost the
state that played the matches tagged g or later: `rollback` removes them and re-rates the matches
that remain after the first one removed, in one transaction (see the README's reliability section).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import numbers
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from arena.envs.outcomes import Result, ResultLike
from arena.league.model.payoff import PayoffTable
from arena.league.model.players import Player
from arena.league.model.stats import wilson_interval

log = logging.getLogger(__name__)

# (ratings before the match, team A, team B, outcome from A's view) -> the match's new ratings
RateFn = Callable[[Mapping[str, tuple[float, float]], Sequence[str], Sequence[str], int],
                  dict[str, tuple[float, float]]]

LEAGUE_DB = "league.sqlite"
SCHEMA_VERSION = "1"
# Meta keys the league writes so that a resume (and `show`) uses the run's own settings.
META_DECAY = "payoff_decay"
META_RATINGS = "ratings_config"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS players (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    path TEXT,
    sha256 TEXT,
    step INTEGER,
    parent TEXT,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS matches (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    learner_step INTEGER,
    team_a TEXT NOT NULL,
    team_b TEXT NOT NULL,
    outcome INTEGER NOT NULL CHECK (outcome IN (-1, 0, 1)),
    length REAL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS ratings (
    match_id INTEGER NOT NULL REFERENCES matches(id),
    player_id TEXT NOT NULL REFERENCES players(id),
    mu REAL NOT NULL,
    sigma REAL NOT NULL,
    PRIMARY KEY (player_id, match_id)
);
"""


# Added after schema version 1 without changing it: created on open when missing (old stores gain it;
# their matches carry no checkpoint tag and are never rolled back).
_MATCH_LEARNERS_SCHEMA = """
CREATE TABLE IF NOT EXISTS match_learners (
    match_id INTEGER NOT NULL REFERENCES matches(id),
    player_id TEXT NOT NULL REFERENCES players(id),
    checkpoint INTEGER NOT NULL CHECK (checkpoint >= 0),
    PRIMARY KEY (match_id, player_id)
);
CREATE INDEX IF NOT EXISTS match_learners_by_player ON match_learners (player_id, checkpoint);
-- a rollback deletes the ratings of the matches from one on: without it, a scan of every rating row
CREATE INDEX IF NOT EXISTS ratings_by_match ON ratings (match_id)
"""

_GAUNTLET_SCHEMA = """
CREATE TABLE IF NOT EXISTS gauntlet (
    player_id TEXT NOT NULL REFERENCES players(id),
    reference TEXT NOT NULL,
    learner_step INTEGER,
    wins INTEGER NOT NULL,
    draws INTEGER NOT NULL,
    losses INTEGER NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (player_id, reference)
)
"""


@dataclass(frozen=True)
class GauntletRecord:
    """A snapshot's games against one fixed reference player (W/D/L from the snapshot's view)."""

    player_id: str
    reference: str
    learner_step: int | None
    wins: int
    draws: int
    losses: int
    created_at: float = 0.0

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    def score(self, confidence: float = 0.95) -> tuple[float, float, float]:
        """(score, lower, upper): (W + D/2) / games with its Wilson interval."""
        return wilson_interval(self.wins, self.draws, self.losses, confidence)


@dataclass(frozen=True)
class MatchRecord:
    """One finished match; outcome (+1/0/-1) is from team A's point of view."""

    match_id: int
    learner_step: int | None
    team_a: tuple[str, ...]
    team_b: tuple[str, ...]
    outcome: int
    length: float | None
    created_at: float


@dataclass(frozen=True)
class RatingRow:
    """A player's rating right after a match."""

    match_id: int
    player_id: str
    mu: float
    sigma: float


@dataclass
class LeagueState:
    """Everything needed to rebuild the in-memory league."""

    players: list[Player]
    matches: list[MatchRecord]
    payoff: PayoffTable
    ratings: dict[str, tuple[float, float]]
    meta: dict[str, str] = field(default_factory=dict)


class LeagueStoreError(ValueError):
    """The league store file exists but SQLite cannot read it (damaged, truncated, not a database)."""

    def __init__(self, path: Path, exc: Exception) -> None:
        super().__init__(
            f"league store {path} cannot be read ({exc}): it is damaged or not an arena league. arena left "
            f"it as it is: restore it from a backup (copy it together with its -wal file), or try "
            f"`sqlite3 {path} .recover` into a new file; a new run_dir starts a new league"
        )
        self.path = path


class LeagueStore:
    """SQLite league store in WAL mode; a single writer (the training process), any number of readers."""

    def __init__(
        self, path: str | os.PathLike[str], *, create: bool = True, synchronous: str = "NORMAL",
        read_only: bool = False,
    ) -> None:
        """``read_only``: a reader beside a running trainer (``league show``, ``evaluate --league``): the
        file is opened with SQLite's ``mode=ro``, so the reader never writes, never waits for the
        writer's lock, and sees a consistent snapshot per transaction (WAL)."""
        self.path = Path(path)
        self.read_only = read_only
        self._batch_depth = 0  # open batch() blocks: their one transaction holds every write
        if read_only:
            create = False
        if synchronous not in ("NORMAL", "FULL"):
            raise ValueError(f"synchronous={synchronous!r} must be 'NORMAL' or 'FULL'")
        if not create and not self.path.is_file():
            raise FileNotFoundError(f"no league store at {self.path}")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._open(synchronous)
        except sqlite3.DatabaseError as exc:
            raise LeagueStoreError(self.path, exc) from exc

    def _open(self, synchronous: str) -> None:
        if self.read_only:
            self._conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, isolation_level=None,
                                         timeout=30.0)
            self._check_version()
            self._known_players = {row[0] for row in self._conn.execute("SELECT id FROM players")}
            return
        # Autocommit mode: transactions are explicit BEGIN/COMMIT below, one per match.
        self._conn = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
        self._conn.execute("PRAGMA journal_mode=WAL")
        # NORMAL in WAL mode: a commit is durable against any crash of this process (SIGKILL, OOM, a
        # segfault in the core) because committed pages are in the WAL, which the OS keeps; only an OS
        # crash or power cut can lose the last few commits, and even then the file stays consistent (a
        # shorter prefix of matches). FULL would fsync on every match, which at thousands of matches per
        # second costs more than it protects; pass synchronous="FULL" where power loss matters.
        self._conn.execute(f"PRAGMA synchronous={synchronous}")
        self._conn.execute("PRAGMA foreign_keys=ON")
        self._init_schema()
        self._known_players: set[str] = {row[0] for row in self._conn.execute("SELECT id FROM players")}

    def integrity_check(self) -> str:
        """SQLite's ``PRAGMA integrity_check``: "ok", or what is wrong."""
        rows = self._conn.execute("PRAGMA integrity_check").fetchall()
        return "\n".join(str(r[0]) for r in rows)

    @classmethod
    def in_run_dir(cls, run_dir: str | os.PathLike[str], *, create: bool = True) -> LeagueStore:
        """The store of a run directory (RUN_DIR/league.sqlite)."""
        return cls(Path(run_dir) / LEAGUE_DB, create=create)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> LeagueStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _init_schema(self) -> None:
        with self._transaction():
            has_meta = self._conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
            ).fetchone()
            if has_meta is None:
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        self._conn.execute(statement)
                self._conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (SCHEMA_VERSION,))
            self._check_version()
            self._conn.execute(_GAUNTLET_SCHEMA)
            for statement in _MATCH_LEARNERS_SCHEMA.split(";"):
                if statement.strip():
                    self._conn.execute(statement)

    def _check_version(self) -> None:
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None or row[0] != SCHEMA_VERSION:
            found = None if row is None else row[0]
            raise ValueError(
                f"league store {self.path} has schema version {found}; this code reads {SCHEMA_VERSION}"
            )

    def _transaction(self, write: bool = True) -> _Transaction | contextlib.nullcontext[None]:
        if self._batch_depth:  # inside batch(): its one transaction holds every write
            return contextlib.nullcontext()
        return _Transaction(self._conn, write)

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """One transaction for every write inside (the matches that ended in one step): all of them
        are stored or none, and a step's matches cost one commit instead of one each."""
        if self._batch_depth:
            self._batch_depth += 1
            try:
                yield
            finally:
                self._batch_depth -= 1
            return
        with _Transaction(self._conn, write=True):
            self._batch_depth = 1
            try:
                yield
            finally:
                self._batch_depth = 0

    # -- meta ----------------------------------------------------------------------------------

    def set_meta(self, key: str, value: str | int | float | dict | list) -> None:
        """Store a run-info value (non-strings are stored as JSON)."""
        self.set_metas({key: value})

    def set_metas(self, values: Mapping[str, str | int | float | dict | list]) -> None:
        """Store several run-info values in one transaction (all or none)."""
        rows = [(key, value if isinstance(value, str) else json.dumps(value, sort_keys=True))
                for key, value in values.items()]
        with self._transaction():
            self._conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", rows)

    def meta(self) -> dict[str, str]:
        return dict(self._conn.execute("SELECT key, value FROM meta ORDER BY key").fetchall())

    # -- players -------------------------------------------------------------------------------

    def add_player(self, player: Player) -> None:
        """Register a player; registering an identical one again is a no-op, a different one fails."""
        with self._transaction():
            existing = self._player_row(player.player_id)
            if existing is not None:
                if existing != player:
                    raise ValueError(
                        f"player {player.player_id!r} is already stored as {existing!r}; got {player!r}"
                    )
                return
            self._conn.execute(
                "INSERT INTO players (id, kind, path, sha256, step, parent, created_at)"
                " VALUES (?,?,?,?,?,?,?)",
                (player.player_id, player.kind, player.path, player.sha256, player.step, player.parent,
                 time.time()),
            )
        self._known_players.add(player.player_id)

    def players(self) -> list[Player]:
        """Players in the order they were registered."""
        rows = self._conn.execute(
            "SELECT id, kind, path, sha256, step, parent FROM players ORDER BY rowid"
        ).fetchall()
        return [Player(*row) for row in rows]

    def _player_row(self, player_id: str) -> Player | None:
        row = self._conn.execute(
            "SELECT id, kind, path, sha256, step, parent FROM players WHERE id = ?", (player_id,)
        ).fetchone()
        return None if row is None else Player(*row)

    # -- gauntlet ------------------------------------------------------------------------------

    def record_gauntlet(self, record: GauntletRecord) -> None:
        """Commits a snapshot's result against a reference (replacing an earlier one of the pair)."""
        if record.player_id not in self._known_players and self._player_row(record.player_id) is None:
            raise ValueError(f"gauntlet result for unknown player {record.player_id!r}")
        with self._transaction():
            self._conn.execute(
                "INSERT OR REPLACE INTO gauntlet (player_id, reference, learner_step, wins, draws, losses,"
                " created_at) VALUES (?,?,?,?,?,?,?)",
                (record.player_id, record.reference, record.learner_step, int(record.wins), int(record.draws),
                 int(record.losses), time.time()),
            )

    def gauntlet(self) -> list[GauntletRecord]:
        """Every gauntlet result, in the order they were played."""
        rows = self._conn.execute(
            "SELECT player_id, reference, learner_step, wins, draws, losses, created_at FROM gauntlet"
            " ORDER BY created_at, rowid"
        ).fetchall()
        return [GauntletRecord(*row) for row in rows]

    # -- matches -------------------------------------------------------------------------------

    def record_match(
        self,
        team_a: Sequence[str],
        team_b: Sequence[str],
        outcome: ResultLike,
        *,
        length: float | None = None,
        learner_step: int | None = None,
        ratings: Mapping[str, tuple[float, float]] | None = None,
        checkpoints: Mapping[str, int] | None = None,
    ) -> int:
        """Commit one match and the ratings it produced (player -> (mu, sigma) after the match).

        Teams list the distinct players driving each side; outcome is from team A's point of view.
        ``checkpoints``: for each learning player in the match, the checkpoints it had written when
        it played (what `rollback` goes by). Returns the match id. Either everything is stored or
        nothing is.
        """
        result = Result.parse(outcome)
        teams = [self._check_team(team_a, "team_a"), self._check_team(team_b, "team_b")]
        ratings = dict(ratings or {})
        in_match = set(teams[0]) | set(teams[1])
        outsiders = sorted(set(ratings) - in_match)
        if outsiders:
            raise ValueError(f"ratings given for {outsiders}, who did not play in this match {teams}")
        for player_id, (mu, sigma) in ratings.items():
            if not (math.isfinite(mu) and math.isfinite(sigma) and sigma > 0):
                raise ValueError(f"rating ({mu}, {sigma}) of {player_id!r} needs finite mu and sigma > 0")
        step = _check_step(learner_step)
        tags = dict(checkpoints or {})
        for player_id, count in tags.items():
            if player_id not in in_match:
                raise ValueError(f"checkpoint count given for {player_id!r}, who did not play in {teams}")
            if isinstance(count, bool) or not isinstance(count, numbers.Integral) or count < 0:
                raise ValueError(f"checkpoint count {count!r} of {player_id!r} must be an int >= 0")
        if length is not None and not (math.isfinite(length) and length >= 0):
            raise ValueError(f"match length={length!r} must be a finite number >= 0 or None")
        with self._transaction():
            cur = self._conn.execute(
                "INSERT INTO matches (learner_step, team_a, team_b, outcome, length, created_at)"
                " VALUES (?,?,?,?,?,?)",
                (step, json.dumps(teams[0]), json.dumps(teams[1]), result,
                 None if length is None else float(length), time.time()),
            )
            match_id = int(cur.lastrowid)
            self._conn.executemany(
                "INSERT INTO ratings (match_id, player_id, mu, sigma) VALUES (?,?,?,?)",
                [(match_id, p, float(mu), float(sigma)) for p, (mu, sigma) in ratings.items()],
            )
            if tags:
                self._conn.executemany(
                    "INSERT INTO match_learners (match_id, player_id, checkpoint) VALUES (?,?,?)",
                    [(match_id, p, int(c)) for p, c in tags.items()],
                )
        return match_id

    def _check_team(self, team: Sequence[str], name: str) -> list[str]:
        if isinstance(team, str) or not isinstance(team, Sequence) or not team:
            raise ValueError(f"{name} {team!r} must be a non-empty list of player ids")
        if len(set(team)) != len(team):
            raise ValueError(f"{name} {list(team)} names a player more than once; list each driver once")
        unknown = [p for p in team if p not in self._known_players]
        if unknown:
            raise ValueError(f"{name} names unregistered players {unknown}; add_player() them first")
        return list(team)

    def matches(self) -> list[MatchRecord]:
        rows = self._conn.execute(
            "SELECT id, learner_step, team_a, team_b, outcome, length, created_at FROM matches ORDER BY id"
        ).fetchall()
        return [
            MatchRecord(mid, step, tuple(json.loads(a)), tuple(json.loads(b)), outcome, length, created)
            for mid, step, a, b, outcome, length, created in rows
        ]

    def match_checkpoints(self) -> dict[int, dict[str, int]]:
        """match id -> {learning player: checkpoints it had written when it played}."""
        out: dict[int, dict[str, int]] = {}
        for match_id, player_id, count in self._conn.execute(
            "SELECT match_id, player_id, checkpoint FROM match_learners ORDER BY match_id, player_id"
        ):
            out.setdefault(int(match_id), {})[player_id] = int(count)
        return out

    def rollback(self, player_id: str, checkpoint: int, rate: RateFn,
                 initial: Callable[[], tuple[float, float]]) -> int:
        """Removes every match ``player_id`` played after writing its ``checkpoint``-th checkpoint
        (tagged ``checkpoint`` or more), and re-rates the matches after the first one removed, in one
        transaction; returns how many matches were removed.

        Ratings before the first removed match are kept; from there each player starts from its last
        rating before it (``initial()`` for a player with none) and every remaining later match is
        rated again in order with ``rate(current, team_a, team_b, outcome)``, which returns the new
        ratings of that match's players (an empty dict for a match that is not rated).
        """
        if isinstance(checkpoint, bool) or not isinstance(checkpoint, numbers.Integral) or checkpoint < 0:
            raise ValueError(f"checkpoint={checkpoint!r} must be an int >= 0")
        with self._transaction():
            doomed = [int(r[0]) for r in self._conn.execute(
                "SELECT match_id FROM match_learners WHERE player_id = ? AND checkpoint >= ?"
                " ORDER BY match_id",
                (player_id, int(checkpoint)))]
            if not doomed:
                return 0
            first = doomed[0]
            self._conn.execute("CREATE TEMP TABLE IF NOT EXISTS doomed (id INTEGER PRIMARY KEY)")
            self._conn.execute("DELETE FROM doomed")
            self._conn.executemany("INSERT INTO doomed VALUES (?)", [(m,) for m in doomed])
            self._conn.execute("DELETE FROM ratings WHERE match_id >= ?", (first,))
            self._conn.execute("DELETE FROM match_learners WHERE match_id IN (SELECT id FROM doomed)")
            self._conn.execute("DELETE FROM matches WHERE id IN (SELECT id FROM doomed)")
            self._conn.execute("DELETE FROM doomed")
            current: dict[str, tuple[float, float]] = {
                p: (mu, sigma) for p, mu, sigma in self._conn.execute(
                    "SELECT r.player_id, r.mu, r.sigma FROM ratings r WHERE r.match_id ="
                    " (SELECT MAX(match_id) FROM ratings WHERE player_id = r.player_id)")
            }
            rows = self._conn.execute(
                "SELECT id, team_a, team_b, outcome FROM matches WHERE id > ? ORDER BY id", (first,)
            ).fetchall()
            for match_id, a, b, outcome in rows:
                team_a, team_b = json.loads(a), json.loads(b)
                for p in (*team_a, *team_b):
                    current.setdefault(p, initial())
                new = rate(current, team_a, team_b, int(outcome))
                current.update(new)
                self._conn.executemany(
                    "INSERT INTO ratings (match_id, player_id, mu, sigma) VALUES (?,?,?,?)",
                    [(match_id, p, float(mu), float(sigma)) for p, (mu, sigma) in new.items()],
                )
        log.info("rolled back %d matches of %s played after its checkpoint %d; re-rated %d later matches",
                 len(doomed), player_id, checkpoint, len(rows))
        return len(doomed)

    def match_count(self) -> int:
        return int(self._conn.execute("SELECT COUNT(*) FROM matches").fetchone()[0])

    # -- ratings -------------------------------------------------------------------------------

    def rating_history(self) -> list[RatingRow]:
        """Every rating row, by match then player."""
        rows = self._conn.execute(
            "SELECT match_id, player_id, mu, sigma FROM ratings ORDER BY match_id, player_id"
        ).fetchall()
        return [RatingRow(*row) for row in rows]

    def current_ratings(self) -> dict[str, tuple[float, float]]:
        """Each player's rating from its last rating row."""
        rows = self._conn.execute(
            "SELECT r.player_id, r.mu, r.sigma FROM ratings r"
            " WHERE r.match_id = (SELECT MAX(match_id) FROM ratings WHERE player_id = r.player_id)"
        ).fetchall()
        return {p: (mu, sigma) for p, mu, sigma in rows}

    # -- resume --------------------------------------------------------------------------------

    def load(self, decay: float = 1.0) -> LeagueState:
        """Everything needed to rebuild the league; the payoff table replays the matches with `decay`."""
        try:
            with self._transaction(write=False):  # one consistent read snapshot even while a writer appends
                players = self.players()
                matches = self.matches()
                ratings = self.current_ratings()
                meta = self.meta()
        except sqlite3.DatabaseError as exc:
            raise LeagueStoreError(self.path, exc) from exc
        payoff = PayoffTable(decay)
        for m in matches:
            payoff.record_teams(m.team_a, m.team_b, m.outcome)
        log.info("loaded league store %s: %d players, %d matches", self.path, len(players), len(matches))
        return LeagueState(players=players, matches=matches, payoff=payoff, ratings=ratings, meta=meta)


def _check_step(learner_step: int | None) -> int | None:
    if learner_step is None:
        return None
    if isinstance(learner_step, bool) or not isinstance(learner_step, numbers.Integral) or learner_step < 0:
        raise ValueError(f"learner_step={learner_step!r} must be an int >= 0 or None")
    return int(learner_step)


class _Transaction:
    """BEGIN ... COMMIT, rolled back on any exception.

    Writes use BEGIN IMMEDIATE (take the write lock up front, so no upgrade can fail midway); reads use a
    deferred BEGIN, which in WAL mode gives a consistent snapshot without blocking the writer.
    """

    def __init__(self, conn: sqlite3.Connection, write: bool) -> None:
        self._conn = conn
        self._begin = "BEGIN IMMEDIATE" if write else "BEGIN"

    def __enter__(self) -> None:
        self._conn.execute(self._begin)

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        if exc_type is None:
            self._conn.execute("COMMIT")
        else:
            self._conn.execute("ROLLBACK")
