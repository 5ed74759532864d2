"""The views a league run logs while it trains: the leaderboard table, the payoff heatmap (a chart and a
PNG), one chart of every player's rating, the gauntlet's replays as GIFs, and each new snapshot file.

They show a bounded set of players (``league.view_players``, ``shown_players``), not the whole pool,
and are drawn every ``league.log_interval`` updates: a league of hundreds of snapshots logs the same
amount as a small one.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arena.league.config import LeagueConfig
from arena.league.model.league import League
from arena.league.model.players import Player
from arena.league.model.snapshots import snapshot_file
from arena.league.view.metric_names import (
    LEADERBOARD_KEY,
    PAYOFF_IMAGE_KEY,
    PAYOFF_KEY,
    RATINGS_KEY,
    metric_name,
)
from arena.league.view.plots import RatingCurves, plot_payoff_heatmap, shown_players
from arena.replay.animate import write_animation

if TYPE_CHECKING:
    from arena.league.timing import LeagueTimer

PAYOFF_IMAGE = Path("league") / "payoff.png"
LEADERBOARD_COLUMNS = ("rank", "player", "kind", "mu", "sigma", "mu-3sigma", "score_vs_learner",
                       "games_vs_learner")


class LeagueViews:
    """The views of one league run, drawn from its league (owned by ``LeagueRun``)."""

    def __init__(self, league: League, run_dir: str | os.PathLike[str], config: LeagueConfig,
                 learner_id: str, timer: LeagueTimer) -> None:
        self.league, self.run_dir, self.config = league, Path(run_dir), config
        self.learner_id, self.timer = learner_id, timer
        self._logged_at = -1  # the update count of the last views drawn
        self._image_at: int | None = None  # the update count of the last payoff PNG drawn
        self._rating_curves: RatingCurves | None = None  # read from the store at the first view

    def due(self, updates: int) -> bool:
        """Whether the views are drawn after the ``updates``-th update."""
        return updates % self.config.log_interval == 0

    def shown(self, order: list[str]) -> list[str]:
        """Of ``order`` (the leaderboard's, best rated first), the players the views show
        (``league.view_players``; ``shown_players``)."""
        return shown_players(order, list(self.league.pool), self.learner_id, self.config.view_players)

    def rating_metrics(self) -> dict[str, float]:
        """``league/rating/<player>`` (mu - 3 sigma) of the players the views show."""
        ratings = self.league.ratings
        order = [e.player_id for e in ratings.leaderboard(self.league.pool.ids)]
        return {f"league/rating/{p}": ratings.conservative(p) for p in self.shown(order)}

    def leaderboard(self) -> list[list[Any]]:
        """Rows of ``LEADERBOARD_COLUMNS`` for the players the views show, best conservative rating
        first; a row's rank is its rank in the whole league."""
        pool, payoff, lid = self.league.pool, self.league.payoff, self.learner_id
        entries = self.league.ratings.leaderboard(pool.ids)
        shown = set(self.shown([e.player_id for e in entries]))
        rows = []
        for rank, entry in enumerate(entries, start=1):
            if entry.player_id not in shown:
                continue
            score = payoff.score(entry.player_id, lid) if entry.player_id != lid else None
            rows.append([rank, entry.player_id, pool.get(entry.player_id).kind, entry.mu, entry.sigma,
                         entry.conservative, score, payoff.games(entry.player_id, lid)])
        return rows

    def log(self, log: Any, step: int, updates: int, *, snapshots: Sequence[Player] = (),
            replays: Sequence[tuple[str, Path, Any]] = (), force: bool = False) -> None:
        """New gauntlet ``replays`` are drawn as GIFs beside their files and go to ``log.log_video`` as
        ``replay/<reference>``; new ``snapshots`` go to ``log.log_snapshot`` (kept only where the logger
        is told to). Then, when due after ``updates`` updates, or with ``force``: the leaderboard table,
        the payoff matrix as a heatmap chart, and the rating chart; the payoff matrix as a PNG too at the
        first view, with ``force``, and once ``league.image_interval`` updates have passed since the last."""
        self._log_replays(log, step, replays)
        for player in snapshots:
            log.log_snapshot(player.player_id, snapshot_file(self.run_dir, player), int(player.step or 0),
                             {"parent": player.parent, "sha256": player.sha256})
        if not (force or self.due(updates)) or self._logged_at == updates:
            return
        self._logged_at = updates

        with self.timer.measure("views"):
            rows = self.leaderboard()
            log.log_table(LEADERBOARD_KEY, list(LEADERBOARD_COLUMNS), rows, step)
            order = [r[1] for r in rows]
            log.log_heatmap(PAYOFF_KEY, order, order, self.league.payoff.matrix(order), step,
                            title="Payoff: row player's score against the column player", value_name="score")
            if force or self._image_at is None or updates - self._image_at >= self.config.image_interval:
                self._image_at = updates
                path = self.run_dir / PAYOFF_IMAGE
                path.parent.mkdir(parents=True, exist_ok=True)
                image = plot_payoff_heatmap(self.league.payoff, order, path)
                log.log_image(PAYOFF_IMAGE_KEY, image, step)
            if self._rating_curves is None:  # the shown players' curves so far, thinned, read by index
                self._rating_curves = RatingCurves.from_store(self.league.store, order)
            self._rating_curves.add(step, {r[1]: r[5] for r in rows})
            log.log_line_series(RATINGS_KEY, self._rating_curves.series(), step,
                                title="Rating (mu - 3 sigma) of every player", xname="learner step")

    def _log_replays(self, log: Any, step: int, replays: Sequence[tuple[str, Path, Any]]) -> None:
        if not replays:
            return

        with self.timer.measure("gauntlet"):
            for reference, path, replay in replays:
                gif = write_animation(replay, path.with_suffix(".gif"))
                name = metric_name(reference).replace("gauntlet/", "replay/", 1)
                snapshot = replay.extra.get("snapshot", path.stem)
                log.log_video(name, gif, step, caption=f"{snapshot} vs {reference}")
