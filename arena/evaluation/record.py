"""Recording evaluation matches into a league's store.

``record_result`` adds the two players if needed (kind "scripted" for bots, "snapshot" for files,
with their sha256; a file already in the league under any id is recognised by its sha256) and
records every counted match, outcome from A's side.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from arena.agents.players import ResolvedPlayer
from arena.evaluation.runner import MatchResult
from arena.league.model.league import League
from arena.league.model.players import Player

logger = logging.getLogger(__name__)


def league_player_for(league: League, player: ResolvedPlayer) -> Player:
    """The league player standing for ``player``: a registered one with the same file, or a new one."""
    if player.kind == "scripted":
        return Player(player.name, "scripted")
    assert player.path is not None and player.sha256 is not None
    for existing in league.pool:
        if existing.sha256 == player.sha256:
            return existing
    return Player(f"{Path(player.path).stem}@{player.sha256[:12]}", "snapshot",
                  path=os.path.abspath(player.path), sha256=player.sha256)


def record_result(run_dir: str | os.PathLike[str], a: ResolvedPlayer, b: ResolvedPlayer,
                  result: MatchResult) -> tuple[str, str]:
    """Adds A and B to the league of ``run_dir`` if needed and records every counted match.

    Returns their league ids. A match of a player against itself is stored but not rated.
    """
    league = League.open(run_dir)
    try:
        a_id = league.add_player(league_player_for(league, a)).player_id
        b_id = league.add_player(league_player_for(league, b)).player_id
        for match in result.matches:
            league.record_match([a_id], [b_id], match.a_outcome, length=match.length)
    finally:
        league.close()
    logger.info("recorded %d matches of %s vs %s in %s", len(result.matches), a_id, b_id, run_dir)
    return a_id, b_id
