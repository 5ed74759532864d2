"""Terminal and image views of a league store: leaderboard table, rating curves, payoff heatmap; and the
rating curves a training run sends to its logger (``RatingCurves``)."""

from __future__ import annotations

import json
import os
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from rich.table import Table

from arena.figures import pyplot, save_figure
from arena.league.config import LeagueConfig
from arena.league.model.answer_record import answer_record
from arena.league.model.exploitability import Exploitability, exploitability_history
from arena.league.model.guard_counts import GuardCounts
from arena.league.model.payoff import PayoffTable
from arena.league.model.players import EXPLOITER_KINDS
from arena.league.model.published import learner_id_of, published
from arena.league.model.ratings import Ratings
from arena.league.model.records import PlayerRecords
from arena.league.model.store import (
    LEAGUE_DB,
    META_DECAY,
    META_RATINGS,
    GauntletRecord,
    LeagueState,
    LeagueStore,
    MatchRecord,
    RatingRow,
)
from arena.league.model.time_to_exploit import EXPLOITED, WINDOW, TimeToExploit, time_to_exploit

if TYPE_CHECKING:
    from arena.league.model.players import Player

RATING_CURVES_PNG = "league_ratings.png"
PAYOFF_PNG = "league_payoff.png"
GAUNTLET_PNG = "league_gauntlet.png"
EXPLOITABILITY_PNG = "league_exploitability.png"
_MAX_LABELLED = 16  # more players than this: no legend / cell labels, they would be unreadable
# Points of the logged rating chart, all players together (a W&B table holds at most 10,000 rows).
RATING_CHART_MAX_POINTS = 5000
HEATMAP_MAX_INCHES = 14.0
RATING_PLOT_POINTS = 400  # points of each player's curve in league_ratings.png (read by index, not every row)
RECENT_SNAPSHOTS = 8  # the main learner's newest snapshots, always in a bounded view
VIEW_PLAYERS_DEFAULT = LeagueConfig.view_players  # a store written before league.view_players


@dataclass(frozen=True)
class LeaderboardRow:
    rank: int
    player_id: str
    kind: str
    mu: float
    sigma: float
    conservative: float
    wins: int
    draws: int
    losses: int

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses


def player_records(matches: Iterable[MatchRecord]) -> dict[str, tuple[int, int, int]]:
    """Undecayed (W, D, L) of each player over ``matches``, mirror matches (on both sides) excluded
    (``PlayerRecords``; a league keeps them as matches arrive: ``LeagueState.records``)."""
    return PlayerRecords.of((m.team_a, m.team_b, m.outcome) for m in matches).as_dict()


def leaderboard_rows(state: LeagueState) -> list[LeaderboardRow]:
    """All registered players, best conservative rating (mu - 3 sigma) first; unrated ones at the prior."""
    config = json.loads(state.meta[META_RATINGS]) if META_RATINGS in state.meta else {}
    ratings = Ratings(**config)
    for player_id, (mu, sigma) in state.ratings.items():
        ratings.set(player_id, mu, sigma)
    kinds = {p.player_id: p.kind for p in state.players}
    records = state.records
    rows = []
    for rank, entry in enumerate(ratings.leaderboard(kinds), start=1):
        w, d, l = records.get(entry.player_id, (0, 0, 0))  # noqa: E741
        rows.append(LeaderboardRow(rank, entry.player_id, kinds[entry.player_id], entry.mu, entry.sigma,
                                   entry.conservative, w, d, l))
    return rows


def recent_snapshots(players: Iterable[Player], learner_id: str) -> list[str]:
    """The ``RECENT_SNAPSHOTS`` newest snapshots of ``learner_id`` (``players`` in joining order):
    always in a bounded view, and the opponent mix's own keys."""
    mine = [p.player_id for p in players if p.kind == "snapshot" and p.parent == learner_id]
    return mine[-RECENT_SNAPSHOTS:]


def shown_players(order: Sequence[str], players: Sequence[Player], learner_id: str, limit: int) -> list[str]:
    """The players a bounded view shows, in ``order`` (the leaderboard's, best first): every player
    that is not a snapshot (learners, exploiters, scripted references), the ``RECENT_SNAPSHOTS``
    newest snapshots of ``learner_id`` (``players`` is in the order they joined), then the best rated
    of the rest until ``limit`` are shown. A pool of at most ``limit`` players is shown whole; the
    players that are not snapshots are shown even beyond ``limit``."""
    if limit < 1:
        raise ValueError(f"limit={limit} must be >= 1")
    if len(order) <= limit:
        return list(order)
    keep = {p.player_id for p in players if p.kind != "snapshot"}
    keep.update(recent_snapshots(players, learner_id))
    for player_id in order:
        if len(keep) >= limit:
            break
        keep.add(player_id)
    return [p for p in order if p in keep]


def leaderboard_table(rows: Sequence[LeaderboardRow], title: str = "League leaderboard") -> Table:
    """A rich table of the leaderboard (rank, player, kind, mu, sigma, mu - 3 sigma, games, W/D/L)."""
    table = Table(title=title)
    width = max((len(r.player_id) for r in rows), default=6)
    table.add_column("#", justify="right")
    table.add_column("player", no_wrap=True, min_width=width)
    table.add_column("kind", no_wrap=True)
    for name in ("mu", "sigma", "mu-3sigma", "games"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("W/D/L", justify="right", no_wrap=True)
    for r in rows:
        table.add_row(str(r.rank), r.player_id, r.kind, f"{r.mu:.2f}", f"{r.sigma:.2f}",
                      f"{r.conservative:.2f}", str(r.games), f"{r.wins}/{r.draws}/{r.losses}")
    return table


Curves = dict[str, tuple[list[float], list[float]]]


def rating_series(history: Sequence[RatingRow], step_of: Mapping[int, int | None],
                  x: str = "match") -> Curves:
    """{player: (xs, conservative ratings)}: each player's mu - 3 sigma after each of its rows in
    ``history``, against the match id or the learner step of the match (``step_of``: match id -> step,
    ``LeagueStore.learner_steps``; matches without a step are left out then)."""
    if x not in ("match", "step"):
        raise ValueError(f"x axis {x!r} must be 'match' or 'step'")
    curves: Curves = {}
    for row in history:
        xv = row.match_id if x == "match" else step_of.get(row.match_id)
        if xv is None:
            continue
        xs, ys = curves.setdefault(row.player_id, ([], []))
        xs.append(float(xv))
        ys.append(row.mu - 3.0 * row.sigma)
    return curves


def thin(xs: Sequence[float], ys: Sequence[float], max_points: int) -> tuple[list[float], list[float]]:
    """At most ``max_points`` (>= 2) of a curve, evenly spaced by index, the first and the last kept."""
    if max_points < 2:
        raise ValueError(f"max_points={max_points} must be at least 2")
    if len(xs) <= max_points:
        return list(xs), list(ys)
    keep = np.unique(np.linspace(0, len(xs) - 1, max_points).round().astype(int))
    return [xs[i] for i in keep], [ys[i] for i in keep]


class RatingCurves:
    """Every player's conservative rating against the learner's step, for one line chart of all players.

    Starts from the store's rating history of the players shown (so a resumed run's chart shows their
    past), then gets one point per player each time ``add`` is called (at each logged view). It holds
    the curves of the players of the last ``add`` only (the views' bounded set), each halved in place
    (every other point, so older history is coarser than recent) once it passes ``CURVE_CAP`` points:
    memory stays flat over a run of any length. ``series`` thins
    the curves to ``max_points`` points in all (at least two per player).
    """

    CURVE_CAP = 2000

    def __init__(self, start: Mapping[str, tuple[Sequence[float], Sequence[float]]] | None = None) -> None:
        self.curves: Curves = {p: (list(xs), list(ys)) for p, (xs, ys) in (start or {}).items()}

    @classmethod
    def from_store(cls, store: LeagueStore, players: Sequence[str],
                   max_points: int = RATING_CHART_MAX_POINTS) -> RatingCurves:
        """The rating curves of ``players`` as the store holds them, thinned as ``series`` would
        thin them, read without loading every rating row."""
        per_player = max(2, max_points // max(1, len(players)))
        history = store.rating_history(players, points=per_player)
        return cls(rating_series(history, store.learner_steps(r.match_id for r in history), x="step"))

    def add(self, step: int, ratings: Mapping[str, float]) -> None:
        """Each player's rating at learner step ``step``; the curves of players not in ``ratings``
        (no longer shown) are dropped."""
        self.curves = {p: c for p, c in self.curves.items() if p in ratings}
        for player_id, value in ratings.items():
            xs, ys = self.curves.setdefault(player_id, ([], []))
            xs.append(float(step))
            ys.append(float(value))
            if len(xs) > self.CURVE_CAP:  # every other point goes (older history coarser), ends kept
                last = (xs[-1], ys[-1])
                xs, ys = xs[::2], ys[::2]
                if xs[-1] != last[0]:
                    xs.append(last[0])
                    ys.append(last[1])
                self.curves[player_id] = (xs, ys)

    def series(self, max_points: int = RATING_CHART_MAX_POINTS) -> Curves:
        per_player = max(2, max_points // max(1, len(self.curves)))
        return {p: thin(xs, ys, per_player) for p, (xs, ys) in self.curves.items()}


def plot_rating_curves(
    history: Sequence[RatingRow], step_of: Mapping[int, int | None], path: str | os.PathLike[str],
    x: str = "match", players: Sequence[str] | None = None,
) -> Path:
    """PNG of each player's conservative rating after each of its rows in ``history``, against match
    id or step (``step_of``, as for ``rating_series``; ``players``: only these; None: every player)."""
    curves = rating_series(history, step_of, x=x)
    if players is not None:
        wanted = set(players)
        curves = {p: c for p, c in curves.items() if p in wanted}
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9, 5))
    for player_id, (xs, ys) in curves.items():
        ax.step(xs, ys, where="post", label=player_id)
    ax.set_xlabel("match" if x == "match" else "learner step")
    ax.set_ylabel("conservative rating (mu - 3 sigma)")
    ax.set_title("TrueSkill ratings")
    ax.grid(alpha=0.3)
    if 0 < len(curves) <= _MAX_LABELLED:
        ax.legend(fontsize="small", loc="best")
    return save_figure(fig, path)


def plot_payoff_heatmap(payoff: PayoffTable, players: Sequence[str], path: str | os.PathLike[str]) -> Path:
    """PNG of the row player's score against the column player (blank where they never played)."""
    plt = pyplot()
    scores = payoff.matrix(players)
    # a cell per pair, at most HEATMAP_MAX_INCHES a side: a bounded view's 64 players draw in well
    # under a second, where a cell of half an inch each took seconds and hundreds of MiB
    size = min(HEATMAP_MAX_INCHES, max(4.0, 0.5 * len(players) + 2.0))
    fig, ax = plt.subplots(figsize=(size + 1.0, size))
    cmap = plt.get_cmap("RdBu").with_extremes(bad="lightgrey")
    image = ax.imshow(np.ma.masked_invalid(scores), cmap=cmap, vmin=0.0, vmax=1.0, interpolation="nearest")
    fig.colorbar(image, ax=ax, label="score (W + D/2) / games")
    font = "small" if len(players) <= 2 * _MAX_LABELLED else "xx-small"
    ax.set_xticks(range(len(players)), labels=list(players), rotation=90, fontsize=font)
    ax.set_yticks(range(len(players)), labels=list(players), fontsize=font)
    ax.set_xlabel("opponent")
    ax.set_title("Payoff (row player's score)")
    if len(players) <= _MAX_LABELLED:
        for i in range(len(players)):
            for j in range(len(players)):
                if np.isfinite(scores[i, j]):
                    ax.text(j, i, f"{scores[i, j]:.2f}", ha="center", va="center", fontsize="x-small")
    return save_figure(fig, path)


TITLE_WIDTH = 100  # characters a line of a figure title (9 inches wide, medium font)
GauntletPoint = tuple[int, str, float, float, float]  # learner step, snapshot, score, lower, upper


def gauntlet_curves(records: Sequence[GauntletRecord]) -> dict[str, list[GauntletPoint]]:
    """{reference: [(learner step, snapshot, score, lower, upper), ...] in step order}."""
    curves: dict[str, list[GauntletPoint]] = {}
    for r in records:
        curves.setdefault(r.reference, []).append((r.learner_step or 0, r.player_id, *r.score()))
    return {ref: sorted(points) for ref, points in curves.items()}


def plot_gauntlet(records: Sequence[GauntletRecord], path: str | os.PathLike[str], *,
                  start_time: float | None = None, title: str | None = None) -> Path:
    """PNG of each snapshot's score against each fixed reference over the learner's steps (or, with
    ``start_time``, over the minutes since then), with the 95% Wilson intervals: strength on a
    scale that does not drift, where a collapse shows."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9, 5))
    minutes = {(r.player_id, r.reference): (r.created_at - start_time) / 60.0 for r in records} \
        if start_time is not None else {}
    for ref, points in gauntlet_curves(records).items():
        steps = np.array([minutes.get((p[1], ref), p[0]) if minutes else p[0] for p in points], dtype=float)
        score, lo, hi = (np.array([p[k] for p in points]) for k in (2, 3, 4))
        line = ax.plot(steps, score, marker="o", markersize=3, label=ref)[0]
        ax.fill_between(steps, lo, hi, color=line.get_color(), alpha=0.2, linewidth=0)
    ax.set_ylim(-0.02, 1.02)
    ax.axhline(0.5, color="grey", linewidth=0.8, linestyle=":")
    ax.set_xlabel("minutes of training" if minutes else "learner step of the snapshot")
    ax.set_ylabel("score (W + D/2) / games, 95% interval")
    # Wrapped: a bench run's title carries its command-line overrides, which can be long.
    ax.set_title(textwrap.fill(title or "Gauntlet: each snapshot against fixed references", TITLE_WIDTH),
                 fontsize="medium")
    ax.grid(alpha=0.3)
    if records:
        ax.legend(fontsize="small", loc="best")
    return save_figure(fig, path)


def gauntlet_table(records: Sequence[GauntletRecord], last: int = 10, restores: int = 0,
                   rejections: int = 0) -> Table:
    """The last ``last`` snapshots' gauntlet results (one row per snapshot and reference); the caption
    counts the guard's rejections and restores (``arena.league.run.guard``)."""
    table = Table(title="Gauntlet (newest snapshots)",
                  caption=f"guard: {rejections} snapshot(s) published the best one's weights instead of the "
                          f"learner's; the learner was restored from its best snapshot {restores} time(s)")
    for column in ("snapshot", "step", "reference", "W/D/L", "score", "95% interval"):
        table.add_column(column, justify="left" if column in ("snapshot", "reference") else "right")
    snapshots = list(dict.fromkeys(r.player_id for r in records))[-last:]
    for r in records:
        if r.player_id in snapshots:
            score, lo, hi = r.score()
            table.add_row(r.player_id, f"{r.learner_step or 0:,}", r.reference,
                          f"{r.wins}/{r.draws}/{r.losses}", f"{score:.3f}", f"[{lo:.3f}, {hi:.3f}]")
    return table


def time_to_exploit_table(records: Sequence[TimeToExploit], last: int = 10) -> Table:
    """The last ``last`` exploiter generations: whom each trained against (its target), from and to which
    of its own samples, and after how many it beat it (``arena.league.model.time_to_exploit``)."""
    table = Table(title="Time to exploit (newest exploiter generations)",
                  caption=f"beaten: its score over its last {WINDOW} games against the target first reached "
                          f"{EXPLOITED}; held: it never did")
    for column in ("generation", "target", "games", "from", "samples", "beaten at", f"last {WINDOW}",
                   "1st snapshot"):
        table.add_column(column, justify="left" if column in ("generation", "target") else "right",
                         no_wrap=True)
    for r in records[-last:]:
        table.add_row(r.generation, r.target, f"{r.games:,}", f"{r.since:,}", f"{r.samples:,}",
                      "held" if r.exploited_at is None else f"{r.exploited_at:,}", f"{r.recent:.3f}",
                      "none" if r.snapshot_at is None else f"{r.snapshot_at:,}")
    return table


@dataclass(frozen=True)
class LeagueView:
    rows: list[LeaderboardRow]
    table: Table
    images: list[Path]
    gauntlet: Table | None = None
    exploitability: str | None = None  # the league's own exploitability now, in words (None: no exploiters)
    published: str = ""  # what ``league:RUN_DIR`` plays, in words (``arena.league.model.published``)
    time_to_exploit: Table | None = None  # how long each exploiter generation took (None: no exploiters)


def show(run_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str] | None = None,
         x: str = "match", all_players: bool = False) -> LeagueView:
    """Read RUN_DIR/league.sqlite, build the leaderboard table and write the PNGs to out_dir: the
    league's bounded set of players (``shown_players`` with its ``view_players``), or every player
    with ``all_players``."""
    run_dir = Path(run_dir)
    db = run_dir / LEAGUE_DB
    if not db.is_file():
        raise FileNotFoundError(f"{run_dir} has no league store ({LEAGUE_DB} not found)")
    out = Path(out_dir) if out_dir is not None else run_dir
    out.mkdir(parents=True, exist_ok=True)
    with LeagueStore(db, read_only=True) as store:
        meta = store.meta()
        decay = float(json.loads(meta[META_DECAY])) if META_DECAY in meta else 1.0
        state = store.load(decay)
        gauntlet = store.gauntlet()
        learner = learner_id_of(meta)
        rows = leaderboard_rows(state)
        if not all_players:
            config = json.loads(meta.get("league_config", "{}"))
            limit = int(config.get("view_players") or VIEW_PLAYERS_DEFAULT)
            shown = set(shown_players([r.player_id for r in rows], state.players, learner, limit))
            rows = [r for r in rows if r.player_id in shown]
        order = [r.player_id for r in rows]
        # each curve thinned to the points a picture can show, read by index
        history = store.rating_history(order, points=RATING_PLOT_POINTS)
        step_of = store.learner_steps(r.match_id for r in history) if x == "step" else {}
        # only the matches of a best response count (its games against the learner): SQLite skips the rest
        roots = [p.player_id for p in state.players if p.kind in EXPLOITER_KINDS]
        history_x = exploitability_history(state.players, store.iter_matches(touching=roots), learner, decay)
        generations = time_to_exploit(state.players, store.iter_matches(touching=roots)) if roots else []
    guard = GuardCounts.from_meta(meta)
    images = [
        plot_rating_curves(history, step_of, out / RATING_CURVES_PNG, x=x, players=order),
        plot_payoff_heatmap(state.payoff, order, out / PAYOFF_PNG),
    ]
    if gauntlet:
        images.append(plot_gauntlet(gauntlet, out / GAUNTLET_PNG))
    table = (gauntlet_table(gauntlet, restores=guard.restores, rejections=guard.rejections)
             if gauntlet else None)
    words = None
    if history_x:
        images.append(plot_exploitability(history_x, out / EXPLOITABILITY_PNG))
        now = history_x[-1][1]
        peak = max(history_x, key=lambda h: h[1].value)
        words = (f"league exploitability: {now.value:.3f} ({now.player_id} against {learner}, "
                 f"{now.games:.0f} decayed games); highest over the run {peak[1].value:.3f} "
                 f"(match {peak[0]}, {peak[1].player_id})")
    try:
        publishes = f"published policy: {published(run_dir).describe()}"
    except ValueError as err:  # no snapshot of the main learner yet
        publishes = f"published policy: none yet ({err})"
    answer = answer_record(meta)
    if answer is not None:  # league.answer: when and why the learner switched
        publishes += f"\n{answer.describe()}"
    return LeagueView(rows, leaderboard_table(rows, title=f"League leaderboard: {run_dir}"), images, table,
                      words, publishes, time_to_exploit_table(generations) if generations else None)


def plot_exploitability(history: Sequence[tuple[int, Exploitability]], path: str | os.PathLike[str]) -> Path:
    """The league's own exploitability (the best score of a best response against the learner) by match."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.plot([h[0] for h in history], [h[1].value for h in history], color="C3", linewidth=1.2)
    ax.axhline(0.5, color="grey", linewidth=0.8, linestyle="--")
    ax.set_ylim(0.0, 1.02)
    ax.set_xlabel("match")
    ax.set_ylabel("best exploiter score vs the learner")
    ax.set_title("league exploitability (league/exploitability)")
    ax.grid(alpha=0.3)
    return save_figure(fig, path)
