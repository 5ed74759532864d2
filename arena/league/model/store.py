"""The league store: one SQLite file per run that survives a crash at any moment and resumes exactly.

Every finished match is committed together with the rating updates it caused (in its own transaction,
or with the other matches that ended in the same step inside ``batch()``), so the file always holds a
prefix of the match history with ratings that agree with it. The in-memory
league (pool, payoff table, ratings, each player's record) is rebuilt by `load()`: players as
registered, ratings as each player's last rating row, payoff and records from the newest **mark**
(below) plus a replay of the matches after it, in order and with the run's decay.

A mark (``write_mark``) is the league as it stood after a given match: every pair's decayed payoff
counts, every player's rating and undecayed record. The training run writes one each time a learner
writes a checkpoint, and keeps the newest few. So `load()` and `rollback` replay only the matches
since a recent mark, not the whole history: a resume costs the same at ten million matches as at ten
thousand, and nothing reads every match or every rating row into memory. The marks are exact copies
of the in-memory numbers (SQLite REAL is an IEEE double), so a league loaded from a mark holds the
same numbers, to the bit, as one that replayed every match.

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
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from arena.envs.outcomes import Result, ResultLike
from arena.league.model.payoff import PayoffTable
from arena.league.model.players import Player
from arena.league.model.records import PlayerRecords, Record
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

# Marks (see the module docstring), added after schema version 1 without changing it: a store
# without them loads by replaying every match, as it always did, until its first mark.
_MARKS_SCHEMA = """
CREATE TABLE IF NOT EXISTS marks (
    match_id INTEGER PRIMARY KEY,  -- the mark holds the league after every match with an id up to this
    matches INTEGER NOT NULL,      -- matches the store held then
    decay REAL NOT NULL,           -- the payoff decay its counts were made with
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS mark_payoff (
    mark INTEGER NOT NULL,
    a TEXT NOT NULL,
    b TEXT NOT NULL,
    wins REAL NOT NULL,
    draws REAL NOT NULL,
    losses REAL NOT NULL,
    PRIMARY KEY (mark, a, b)
);
CREATE TABLE IF NOT EXISTS mark_players (
    mark INTEGER NOT NULL,
    player_id TEXT NOT NULL,
    mu REAL,
    sigma REAL,
    wins INTEGER NOT NULL,
    draws INTEGER NOT NULL,
    losses INTEGER NOT NULL,
    PRIMARY KEY (mark, player_id)
)
"""
# A snapshot file's size and mtime when its sha256 was last checked: opening the league again hashes
# only files whose stat changed (league.verify_all hashes every one). And the players retention
# retired (league.retention): their files are deleted, their ratings, matches and gauntlet rows stay.
_FILES_SCHEMA = """
CREATE TABLE IF NOT EXISTS snapshot_files (
    player_id TEXT PRIMARY KEY REFERENCES players(id),
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS retired (
    player_id TEXT PRIMARY KEY REFERENCES players(id),
    retired_at REAL NOT NULL
)
"""
KEEP_MARKS = 3  # the newest marks kept: a resume rolls back past at most the last checkpoint or two

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
    """Everything needed to rebuild the in-memory league (`LeagueStore.load`)."""

    players: list[Player]
    payoff: PayoffTable
    ratings: dict[str, tuple[float, float]]
    meta: dict[str, str] = field(default_factory=dict)
    records: dict[str, Record] = field(default_factory=dict)  # undecayed W/D/L, mirror matches left out
    match_count: int = 0
    last_match_id: int = 0  # the newest match's id (0: none)
    replayed: int = 0  # matches replayed after the mark it started from (all of them without one)


@dataclass(frozen=True)
class Mark:
    """The league after every match up to ``match_id`` (see the module docstring)."""

    match_id: int
    matches: int
    decay: float
    created_at: float


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
            for schema in (_MATCH_LEARNERS_SCHEMA, _MARKS_SCHEMA, _FILES_SCHEMA):
                for statement in schema.split(";"):
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

    # -- snapshot files and retirement ---------------------------------------------------------

    def _has_table(self, name: str) -> bool:
        return self._conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                                  (name,)).fetchone() is not None

    def file_stats(self) -> dict[str, tuple[int, int]]:
        """player id -> (size, mtime_ns) of its snapshot file when its sha256 was last checked."""
        if not self._has_table("snapshot_files"):
            return {}
        return {p: (int(size), int(mtime)) for p, size, mtime in self._conn.execute(
            "SELECT player_id, size, mtime_ns FROM snapshot_files")}

    def set_file_stats(self, stats: Mapping[str, tuple[int, int]]) -> None:
        """Records the stat of snapshot files whose sha256 was just checked (one transaction)."""
        if not stats:
            return
        with self._transaction():
            self._conn.executemany("INSERT OR REPLACE INTO snapshot_files VALUES (?,?,?)",
                                   [(p, int(size), int(mtime)) for p, (size, mtime) in stats.items()])

    def retired(self) -> set[str]:
        """The ids of the players retention retired (``league.retention``)."""
        if not self._has_table("retired"):
            return set()
        return {row[0] for row in self._conn.execute("SELECT player_id FROM retired")}

    def retire(self, player_ids: Sequence[str]) -> None:
        """Marks players retired, in one transaction (their files are deleted after it commits)."""
        unknown = [p for p in player_ids if p not in self._known_players]
        if unknown:
            raise ValueError(f"cannot retire unregistered players {unknown}")
        now = time.time()
        with self._transaction():
            rows = [(p,) for p in player_ids]
            self._conn.executemany("INSERT OR IGNORE INTO retired VALUES (?, ?)", [(p, now) for (p,) in rows])
            self._conn.executemany("DELETE FROM snapshot_files WHERE player_id = ?", rows)

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

    def has_gauntlet(self, player_id: str) -> bool:
        """Whether ``player_id`` has played the gauntlet (has a gauntlet row): one indexed look-up."""
        query = "SELECT 1 FROM gauntlet WHERE player_id = ? LIMIT 1"
        return self._conn.execute(query, (player_id,)).fetchone() is not None

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

    def matches(self, after: int = 0) -> list[MatchRecord]:
        """The matches with an id above ``after``, in order (all of them by default: a small league's
        or a test's reader; `iter_matches` streams a large one)."""
        return list(self.iter_matches(after))

    def iter_matches(self, after: int = 0, *, touching: Sequence[str] | None = None,
                     batch: int = 10_000) -> Iterator[MatchRecord]:
        """The matches with an id above ``after``, in order, read ``batch`` at a time: memory stays
        flat however many there are. ``touching``: only matches where one of these players, or a
        player whose id starts with one of them (its snapshots), is on a side (a filter SQLite runs,
        so the others are never decoded; it may let through a few more, never fewer)."""
        condition, args = "", []
        if touching is not None:
            if not touching:
                return
            # a team is stored as a JSON list: '"ID' starts the id (or an id that begins with it)
            prefixes = [json.dumps(p)[:-1] for p in dict.fromkeys(touching)]
            condition = " AND (" + " OR ".join(["instr(team_a, ?) OR instr(team_b, ?)"] * len(prefixes)) + ")"
            args = [p for prefix in prefixes for p in (prefix, prefix)]
        last = int(after)
        while True:
            rows = self._conn.execute(
                "SELECT id, learner_step, team_a, team_b, outcome, length, created_at FROM matches"
                f" WHERE id > ?{condition} ORDER BY id LIMIT ?", (last, *args, int(batch))
            ).fetchall()
            for mid, step, a, b, outcome, length, created in rows:
                yield MatchRecord(mid, step, tuple(json.loads(a)), tuple(json.loads(b)), outcome, length,
                                  created)
            if len(rows) < batch:
                return
            last = int(rows[-1][0])

    def learner_steps(self, match_ids: Iterable[int]) -> dict[int, int | None]:
        """match id -> the learner step it was played at (None where it has none), by index."""
        out: dict[int, int | None] = {}
        for match_id in dict.fromkeys(int(m) for m in match_ids):
            row = self._conn.execute("SELECT learner_step FROM matches WHERE id = ?", (match_id,)).fetchone()
            if row is not None:
                out[match_id] = None if row[0] is None else int(row[0])
        return out

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
            self._delete_marks_from(first)  # they hold matches that are gone
            current = self._ratings_before(first)
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

    def current_ratings(self) -> dict[str, tuple[float, float]]:
        """Each player's rating from its last rating row."""
        return self._ratings_before(None)

    def _ratings_before(self, first: int | None) -> dict[str, tuple[float, float]]:
        """Each player's last rating from the matches before ``first`` (None: all): the newest mark
        before it, then the rating rows after the mark, in order."""
        mark = self.latest_mark(before=first)
        start = 0 if mark is None else mark.match_id
        out = {} if mark is None else {
            p: (mu, sigma) for p, mu, sigma in self._conn.execute(
                "SELECT player_id, mu, sigma FROM mark_players WHERE mark = ? AND mu IS NOT NULL", (start,))
        }
        end = " AND match_id < ?" if first is not None else ""
        args = (start,) if first is None else (start, int(first))
        for p, mu, sigma in self._conn.execute(
                f"SELECT player_id, mu, sigma FROM ratings WHERE match_id > ?{end} ORDER BY match_id", args):
            out[p] = (mu, sigma)
        return out

    def rating_history(self, players: Sequence[str] | None = None,
                       points: int | None = None) -> list[RatingRow]:
        """Rating rows, by match then player: every row (the default), or those of ``players`` only,
        and with ``points`` at most that many rows a player, spread evenly over its matches (its first
        and last kept), read by index without loading the rest."""
        if players is None and points is None:
            rows = self._conn.execute(
                "SELECT match_id, player_id, mu, sigma FROM ratings ORDER BY match_id, player_id"
            ).fetchall()
            return [RatingRow(*row) for row in rows]
        if points is not None and points < 2:
            raise ValueError(f"points={points} must be at least 2")
        ids = list(dict.fromkeys(players)) if players is not None else [
            r[0] for r in self._conn.execute("SELECT id FROM players ORDER BY rowid")]
        out: list[RatingRow] = []
        for player_id in ids:
            if points is None:
                out.extend(RatingRow(*row) for row in self._conn.execute(
                    "SELECT match_id, player_id, mu, sigma FROM ratings WHERE player_id = ?"
                    " ORDER BY match_id", (player_id,)))
                continue
            bounds = self._conn.execute("SELECT MIN(match_id), MAX(match_id) FROM ratings"
                                        " WHERE player_id = ?", (player_id,)).fetchone()
            if bounds[0] is None:
                continue
            lo, hi = int(bounds[0]), int(bounds[1])
            seen: set[int] = set()
            for k in range(points):  # the first row at or after each of `points` evenly spaced match ids
                target = lo + (hi - lo) * k // (points - 1)
                row = self._conn.execute(
                    "SELECT match_id, player_id, mu, sigma FROM ratings WHERE player_id = ? AND match_id >= ?"
                    " ORDER BY match_id LIMIT 1", (player_id, target)).fetchone()
                if row is not None and row[0] not in seen:
                    seen.add(row[0])
                    out.append(RatingRow(*row))
        out.sort(key=lambda r: (r.match_id, r.player_id))
        return out

    # -- marks ---------------------------------------------------------------------------------

    def latest_mark(self, before: int | None = None, decay: float | None = None) -> Mark | None:
        """The newest mark (of the matches before ``before``; with payoff counts of ``decay``)."""
        if not self._has_table("marks"):  # a read-only reader of an older store
            return None
        query, args = "SELECT match_id, matches, decay, created_at FROM marks WHERE 1", []
        if before is not None:
            query += " AND match_id < ?"
            args.append(int(before))
        if decay is not None:
            query += " AND decay = ?"
            args.append(float(decay))
        row = self._conn.execute(query + " ORDER BY match_id DESC LIMIT 1", args).fetchone()
        return None if row is None else Mark(int(row[0]), int(row[1]), float(row[2]), float(row[3]))

    def marks(self) -> list[Mark]:
        if not self._has_table("marks"):  # a read-only reader of an older store
            return []
        return [Mark(int(a), int(b), float(c), float(d)) for a, b, c, d in self._conn.execute(
            "SELECT match_id, matches, decay, created_at FROM marks ORDER BY match_id")]

    def write_mark(self, last_match_id: int, match_count: int, payoff: PayoffTable,
                   ratings: Mapping[str, tuple[float, float]], records: Mapping[str, Record]) -> bool:
        """Stores the league as it stood after match ``last_match_id`` (``match_count`` matches in
        all), in one transaction, and drops all but the newest ``KEEP_MARKS`` marks.

        The caller's numbers must be those of exactly the stored matches up to ``last_match_id``:
        where the store holds a different number of them (another process recorded matches the
        caller has not seen, e.g. ``arena.evaluate --record`` beside a running trainer), nothing is
        written and it returns False; the next `load` replays those matches from an earlier mark."""
        last_match_id, match_count = int(last_match_id), int(match_count)
        with self._transaction():
            previous = self.latest_mark()
            if previous is not None and previous.match_id == last_match_id and previous.decay == payoff.decay:
                return True  # nothing new since
            since = 0 if previous is None or previous.match_id > last_match_id else previous.match_id
            base = 0 if since == 0 else previous.matches  # type: ignore[union-attr]
            stored = base + int(self._conn.execute("SELECT COUNT(*) FROM matches WHERE id > ? AND id <= ?",
                                                   (since, last_match_id)).fetchone()[0])
            if stored != match_count:
                log.warning("league store %s holds %d matches up to match %d, the league in memory %d: "
                            "another process recorded matches; no mark written", self.path, stored,
                            last_match_id, match_count)
                return False
            self._delete_marks_from(last_match_id)
            self._conn.execute("INSERT INTO marks (match_id, matches, decay, created_at) VALUES (?,?,?,?)",
                               (last_match_id, match_count, float(payoff.decay), time.time()))
            self._conn.executemany("INSERT INTO mark_payoff VALUES (?,?,?,?,?,?)",
                                   [(last_match_id, *row) for row in payoff.rows()])
            ids = set(ratings) | set(records)
            self._conn.executemany(
                "INSERT INTO mark_players VALUES (?,?,?,?,?,?,?)",
                [(last_match_id, p, *(ratings[p] if p in ratings else (None, None)),
                  *records.get(p, (0, 0, 0))) for p in sorted(ids)])
            old = [int(r[0]) for r in self._conn.execute(
                "SELECT match_id FROM marks ORDER BY match_id DESC LIMIT -1 OFFSET ?", (KEEP_MARKS,))]
            for mark in old:
                self._delete_mark(mark)
        return True

    def _delete_marks_from(self, first: int) -> None:
        """Drops the marks at or after match ``first`` (inside the caller's transaction)."""
        for (mark,) in self._conn.execute("SELECT match_id FROM marks WHERE match_id >= ?",
                                          (int(first),)).fetchall():
            self._delete_mark(int(mark))

    def _delete_mark(self, mark: int) -> None:
        for table, column in (("mark_payoff", "mark"), ("mark_players", "mark"), ("marks", "match_id")):
            self._conn.execute(f"DELETE FROM {table} WHERE {column} = ?", (mark,))

    # -- resume --------------------------------------------------------------------------------

    def load(self, decay: float = 1.0) -> LeagueState:
        """Everything needed to rebuild the league: the newest mark made with ``decay``, then the
        matches after it replayed into the payoff table (with ``decay``) and the records, and the
        rating rows after it. Without such a mark, every match is replayed, a batch at a time."""
        try:
            with self._transaction(write=False):  # one consistent read snapshot even while a writer appends
                players = self.players()
                meta = self.meta()
                mark = self.latest_mark(decay=decay)
                payoff, records = PayoffTable(decay), PlayerRecords()
                start, count = (0, 0) if mark is None else (mark.match_id, mark.matches)
                if mark is not None:
                    payoff.load_rows(self._conn.execute(
                        "SELECT a, b, wins, draws, losses FROM mark_payoff WHERE mark = ?", (start,)))
                    records = PlayerRecords({p: (w, d, l) for p, w, d, l in self._conn.execute(  # noqa: E741
                        "SELECT player_id, wins, draws, losses FROM mark_players WHERE mark = ?", (start,))})
                last, replayed = start, 0
                for m in self.iter_matches(start):
                    payoff.record_teams(m.team_a, m.team_b, m.outcome)
                    records.add(m.team_a, m.team_b, m.outcome)
                    last, replayed = m.match_id, replayed + 1
                ratings = self._ratings_before(None)
        except sqlite3.DatabaseError as exc:
            raise LeagueStoreError(self.path, exc) from exc
        log.info("loaded league store %s: %d players, %d matches (%d replayed after %s)", self.path,
                 len(players), count + replayed, replayed, "no mark" if mark is None else f"match {start}")
        return LeagueState(players=players, payoff=payoff, ratings=ratings, meta=meta,
                           records=records.as_dict(), match_count=count + replayed, last_match_id=last,
                           replayed=replayed)


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
