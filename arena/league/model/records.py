"""Each player's undecayed record over all its matches: the leaderboard's wins, draws and losses.

A match counts once for every player on each side, from that side's point of view. A player on both
sides (mirror self-play) gets nothing from it: the game says nothing about its record. The league
keeps these totals in memory as matches arrive, and the store keeps them at its marks
(``LeagueStore.write_mark``), so nobody needs to read every match to show them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from arena.envs.outcomes import Result, ResultLike

Record = tuple[int, int, int]  # wins, draws, losses


class PlayerRecords:
    """player id -> [wins, draws, losses], updated one match at a time."""

    def __init__(self, start: Mapping[str, Record] | None = None) -> None:
        self._records: dict[str, list[int]] = {p: [int(v) for v in r] for p, r in (start or {}).items()}

    @classmethod
    def of(cls, matches: Iterable[tuple[Sequence[str], Sequence[str], ResultLike]]) -> PlayerRecords:
        """The records of ``(team_a, team_b, outcome)`` matches, outcome from team A's view."""
        records = cls()
        for team_a, team_b, outcome in matches:
            records.add(team_a, team_b, outcome)
        return records

    def add(self, team_a: Sequence[str], team_b: Sequence[str], outcome: ResultLike) -> None:
        """One match, outcome from team A's point of view."""
        result = Result.parse(outcome)
        both = set(team_a) & set(team_b)
        for team, side_result in ((team_a, result), (team_b, -result)):
            for player_id in dict.fromkeys(team):
                if player_id not in both:
                    self._records.setdefault(player_id, [0, 0, 0])[1 - side_result] += 1

    def get(self, player_id: str) -> Record:
        r = self._records.get(player_id)
        return (0, 0, 0) if r is None else (r[0], r[1], r[2])

    def as_dict(self) -> dict[str, Record]:
        return {p: (r[0], r[1], r[2]) for p, r in self._records.items()}
