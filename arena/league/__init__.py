"""The league: players, snapshots, matchmaking, payoff table, TrueSkill ratings and the league store.

Importing this package loads neither torch nor matplotlib; snapshot writing and the views import them
when used.
"""

from arena.league.matchmaking.pfsp import (
    SOURCES,
    WEIGHTINGS,
    Matchmaker,
    f_hard,
    f_var,
    linear_capped,
    pfsp_probabilities,
    score_for_pfsp,
)
from arena.league.model.league import League
from arena.league.model.payoff import PayoffTable
from arena.league.model.players import PLAYER_KINDS, Player, Pool, snapshot_id
from arena.league.model.ratings import RatingEntry, Ratings
from arena.league.model.snapshots import (
    SnapshotGate,
    SnapshotIntegrityError,
    load_snapshot,
    sha256_file,
    verify_snapshot,
    write_snapshot,
)
from arena.league.model.store import LEAGUE_DB, LeagueState, LeagueStore, MatchRecord, RatingRow

__all__ = [
    "LEAGUE_DB",
    "PLAYER_KINDS",
    "SOURCES",
    "WEIGHTINGS",
    "League",
    "LeagueState",
    "LeagueStore",
    "MatchRecord",
    "Matchmaker",
    "PayoffTable",
    "Player",
    "Pool",
    "RatingEntry",
    "RatingRow",
    "Ratings",
    "SnapshotGate",
    "SnapshotIntegrityError",
    "f_hard",
    "f_var",
    "linear_capped",
    "load_snapshot",
    "pfsp_probabilities",
    "score_for_pfsp",
    "sha256_file",
    "snapshot_id",
    "verify_snapshot",
    "write_snapshot",
]
