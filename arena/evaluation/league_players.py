"""The players of a league's store, resolved for evaluation.

The store's snapshots (each file verified against its recorded sha256) and scripted bots are
evaluated; a learning player (the learner, an exploiter) has no fixed weights in the store, so it is
skipped unless a checkpoint file is given for it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from arena.agents.players import ResolvedPlayer, game_spaces, resolve_player
from arena.league.model.snapshots import verify_snapshot
from arena.league.model.store import LEAGUE_DB, LeagueStore

logger = logging.getLogger(__name__)


def league_players(
    run_dir: str | os.PathLike[str],
    game: str,
    team_sizes: tuple[int, int] = (1, 1),
    *,
    overrides: Mapping[str, Any] | None = None,
    checkpoints: Mapping[str, str] | None = None,
) -> dict[str, ResolvedPlayer]:
    """League player id -> resolved player, in the order they joined the league.

    ``checkpoints`` maps learning players' ids (e.g. ``"learner"``) to a checkpoint file to play them.
    Raises ``FileNotFoundError`` without a league store in ``run_dir`` or for a missing snapshot,
    ``ValueError`` for a snapshot whose sha256 changed or a player that does not fit the game.
    """
    run_dir = Path(run_dir)
    db = run_dir / LEAGUE_DB
    if not db.is_file():
        raise FileNotFoundError(f"no league store at {db}")
    with LeagueStore(db, read_only=True) as store:
        retired = store.retired()  # their files are gone (league.retention); their history stays
        pool = [p for p in store.players() if p.player_id not in retired]
    if retired:
        logger.info("leaving out %d players that retention retired", len(retired))
    checkpoints = dict(checkpoints or {})
    unknown = sorted(set(checkpoints) - {p.player_id for p in pool})
    if unknown:
        raise ValueError(f"checkpoints given for {unknown}, who are not players of the league at {db}; "
                         f"its players: {[p.player_id for p in pool]}")
    spaces = game_spaces(game, team_sizes, overrides)
    out: dict[str, ResolvedPlayer] = {}
    for player in pool:
        if player.player_id in checkpoints:
            out[player.player_id] = resolve_player(checkpoints[player.player_id], game, spaces=spaces)
        elif player.kind == "scripted":
            out[player.player_id] = resolve_player(player.player_id, game, spaces=spaces)
        elif player.kind == "snapshot":
            assert player.path is not None and player.sha256 is not None
            path = _snapshot_path(run_dir, player.path)
            verify_snapshot(path, player.sha256)
            out[player.player_id] = resolve_player(str(path), game, spaces=spaces)
        else:
            logger.info("skipping %s player %r: no checkpoint given for it", player.kind, player.player_id)
    return out


def _snapshot_path(run_dir: Path, path: str) -> Path:
    """A stored snapshot path: absolute as is; relative to the run directory if it exists there."""
    p = Path(path)
    if p.is_absolute() or not (run_dir / p).exists():
        return p
    return run_dir / p
