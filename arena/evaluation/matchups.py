"""Many head-to-head matchups at once: the pairings of a round robin share one batched env.

Each matchup gets its own block of envs laid out exactly as ``play_match`` lays out a match (the same
env seeds in every block: every pairing sees the same spawns), and keeps its own quotas and its own
round-major count (``PairTally``), so its games are the games ``play_match`` plays with the same
settings. What changes is the cost: at each step every player acts once, over all its rows in every
block it plays in, instead of two small forward passes per matchup; and the blocks step together in
the core. Matchups are grouped so that a group holds at most ``max_envs`` envs.

Players sample from one generator each (seeded from the settings' seed and the player's place in
``players``), so sampled actions differ from ``play_match``'s; deterministic players, and
``settings.deterministic``, give the very same games.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np

import arena
from arena.agents.players import ResolvedPlayer
from arena.evaluation.pairing import PairTally, layout_of
from arena.evaluation.runner import MatchProgress, MatchResult, MatchSettings, Side, check_fits, step_sides

DEFAULT_MAX_ENVS = 4096

MatchupProgress = Callable[[str, str, MatchProgress], None]


def play_matchups(
    players: Mapping[str, ResolvedPlayer],
    matchups: Sequence[tuple[str, str]],
    settings: MatchSettings,
    *,
    max_envs: int = DEFAULT_MAX_ENVS,
    on_progress: MatchupProgress | None = None,
) -> list[MatchResult]:
    """``settings.games`` games of every matchup ``(a, b)`` (ids of ``players``), A's view, in order.
    No SPRT: every matchup plays all its games."""
    if settings.sprt is not None:
        raise ValueError("play_matchups plays every game of every matchup; an SPRT applies to play_match")
    for a, b in matchups:
        for p in (a, b):
            if p not in players:
                raise ValueError(f"matchup {(a, b)} names {p!r}, which is not one of the players "
                                 f"{list(players)}")
        if a == b:
            raise ValueError(f"matchup {(a, b)} has the same player on both sides")
    if isinstance(max_envs, bool) or not isinstance(max_envs, int) or max_envs < 2:
        raise ValueError(f"max_envs={max_envs!r} must be an integer >= 2")
    per_group = max(1, max_envs // settings.envs)
    results: list[MatchResult] = []
    for start in range(0, len(matchups), per_group):
        results += _play_group(players, list(matchups[start:start + per_group]), settings, on_progress)
    return results


def _play_group(players: Mapping[str, ResolvedPlayer], group: list[tuple[str, str]], settings: MatchSettings,
                on_progress: MatchupProgress | None) -> list[MatchResult]:
    block = settings.envs
    pair_quota = settings.pair_quota()
    quota = np.tile(np.repeat(pair_quota, 2), len(group))
    env = arena.make(settings.game, num_envs=block * len(group), num_threads=settings.num_threads,
                     seed=settings.seed, team_sizes=settings.team_sizes, **dict(settings.overrides))
    try:
        for p in {p for matchup in group for p in matchup}:
            check_fits(players[p], env)
        layout = layout_of(block, env.team_of_row[: env.agents_per_env], settings.seed)
        rows_per_block = block * env.agents_per_env
        env_of_row = np.repeat(np.arange(env.num_envs), env.agents_per_env)
        rows: dict[str, list[np.ndarray]] = {}
        for j, (a, b) in enumerate(group):
            rows.setdefault(a, []).append(layout.a_rows + j * rows_per_block)
            rows.setdefault(b, []).append(layout.b_rows + j * rows_per_block)
        seeds = np.random.SeedSequence([settings.seed, 1]).spawn(len(players))
        place = {p: k for k, p in enumerate(players)}
        sides = []
        for p, parts in rows.items():
            player_rows = np.concatenate(parts)
            seed = int(seeds[place[p]].generate_state(1, dtype=np.uint32)[0])
            agent = players[p].make_agent(len(player_rows), seed, settings.deterministic)
            sides.append(Side(agent, player_rows, env_of_row[player_rows]))
        tallies = [PairTally(pair_quota, layout.a_team_of_env) for _ in group]
        actions = np.zeros((env.num_agents, len(env.action_space.nvec)), dtype=np.int32)
        played = np.zeros(env.num_envs, dtype=np.int64)
        steps = 0
        start = time.perf_counter()
        obs, _ = env.reset_envs(np.tile(layout.env_seeds, len(group)))
        while not all(t.all_counted for t in tallies):
            obs, infos, finished = step_sides(env, sides, obs, actions, played < quota)
            steps += 1
            if finished.size == 0:
                continue
            played[finished] += 1
            for j in np.unique(finished // block).tolist():
                mine = finished[finished // block == j]
                tally = tallies[j]
                tally.finish(mine - j * block, infos["outcome"][mine], infos["episode_length"][mine])
                while tally.count_next():
                    pass
                if on_progress is not None:
                    a, b = group[j]
                    on_progress(a, b, MatchProgress(int(tally.played.sum()), tally.games, settings.even_games,
                                                    *tally.wdl))
        elapsed = time.perf_counter() - start
    finally:
        env.close()
    return [MatchResult(players[a].name, players[b].name, settings, *t.wdl, elapsed, steps, tuple(t.matches))
            for (a, b), t in zip(group, tallies, strict=True)]
