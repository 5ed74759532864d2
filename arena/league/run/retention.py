"""Retention: a league that runs for a week keeps a bounded set of files (``league.retention``).

After each new snapshot, the snapshots outside the kept set are **retired** (see ``RetentionConfig``
for what is kept). Retiring is crash-consistent, in two steps:

1. the store commits the retirement (``League.retire``: one transaction), and the players leave the
   pool: matchmaking, the gate and the views no longer see them;
2. their files are deleted.

A kill between the two leaves files the store already calls retired; opening the run again deletes
them (``finish_retirement``). A kill before the first leaves everything as it was. Nothing else of a
retired player is lost: its ratings, its matches, its gauntlet rows and its place in the rating and
gauntlet histories stay in the store, so ``league show`` and the payoff table still have it.

The guard's rejected candidates (``league/rejected``) and the gauntlet's replays (``replays/``, each
``.npz`` with its ``.gif``) are capped at their newest files.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path

from arena.league.config import RetentionConfig
from arena.league.model.league import League
from arena.league.model.players import Player
from arena.league.model.snapshots import snapshot_file

logger = logging.getLogger(__name__)


def kept_snapshots(league: League, config: RetentionConfig, protected: Iterable[str] = ()) -> set[str]:
    """The snapshot ids retention keeps: each learning player's ``keep_recent`` newest, the
    ``keep_top`` best by conservative rating, and ``protected`` (the guard's best, what is
    published, what an env plays now)."""
    snapshots = league.pool.snapshots()
    keep = {p for p in protected if p in league.pool}
    by_parent: dict[str | None, list[Player]] = {}
    for p in snapshots:
        by_parent.setdefault(p.parent, []).append(p)
    for mine in by_parent.values():
        keep.update(p.player_id for p in mine[-config.keep_recent:])
    if config.keep_top:
        ratings = league.ratings
        rated = sorted((p.player_id for p in snapshots if p.player_id in ratings),
                       key=ratings.conservative, reverse=True)
        keep.update(rated[:config.keep_top])
    return keep


def retire_snapshots(league: League, run_dir: str | os.PathLike[str], config: RetentionConfig,
                     protected: Iterable[str] = ()) -> list[str]:
    """Retires the snapshots outside ``kept_snapshots`` (store first, then the files); returns their ids."""
    if not config.enabled:
        return []
    keep = kept_snapshots(league, config, protected)
    doomed = [p for p in league.pool.snapshots() if p.player_id not in keep]
    if not doomed:
        return []
    league.retire([p.player_id for p in doomed])
    for player in doomed:
        _delete(snapshot_file(run_dir, player))
    logger.info("retention: retired %d snapshots (%s ... %s); %d kept", len(doomed), doomed[0].player_id,
                doomed[-1].player_id, len(league.pool.snapshots()))
    return [p.player_id for p in doomed]


def finish_retirement(league: League, run_dir: str | os.PathLike[str]) -> int:
    """Deletes the files of players the store calls retired (a run killed between the two steps);
    returns how many were still there."""
    found = 0
    for player_id in league.pool.retired:
        player = league.pool.get(player_id)
        if player.path is not None:
            path = snapshot_file(run_dir, player)
            if path.exists():
                _delete(path)
                found += 1
    if found:
        logger.warning("retention: deleted %d files of retired snapshots left by a stopped run", found)
    return found


def cap_files(directory: Path, patterns: tuple[str, ...], keep: int) -> int:
    """Deletes all but the ``keep`` newest files (by mtime, then name) matching the first pattern,
    together with their siblings of the other patterns' suffixes; returns how many were deleted."""
    if not directory.is_dir():
        return 0
    main = sorted(directory.glob(patterns[0]), key=lambda p: (p.stat().st_mtime_ns, p.name))
    doomed = main[:max(0, len(main) - keep)]
    for path in doomed:
        _delete(path)
        for pattern in patterns[1:]:
            _delete(path.with_suffix(pattern.removeprefix("*")))
    return len(doomed)


def _delete(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass
