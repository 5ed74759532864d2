"""Many head-to-head matchups at once: the pairings of a round robin share one batched env.

Each matchup gets its own block of envs laid out exactly as ``play_match`` lays out a match (the same
env seeds in every block: every pairing sees the same spawns), and keeps its own quotas and its own
round-major count (``PairTally``), so its games are the games ``play_match`` plays with the same
settings. What changes is the cost: at each step every player acts once, over all its rows in every
block it plays in, instead of two small forward passes per matchup; and the blocks step together in
the core. Matchups are grouped so that a group holds at most ``max_envs`` envs.

The policies of a group that share an architecture can step together: their weights stacked in one
``FrozenPolicies`` bank, all their rows in one batched forward pass per step, as the league's frozen
opponents do in training, instead of one forward pass per player. That pays when each policy has few
rows (a large pool: 1.28x with 200 policies, 41 rows each) and costs a little when each has many (the
gathers around the batched product: 0.94x with 8 policies, 896 rows each), so by default
(``grouped=None``) they are banked when they average fewer than ``BANK_BELOW_ROWS`` rows a policy.
Each still samples from its own generator, over its own rows in the same order, so the games are
those of one pass per player (to the float tolerance of ``tests/test_grouped_policies.py``).

Players sample from one generator each (seeded from the settings' seed and the player's place in
``players``), so sampled actions differ from ``play_match``'s; deterministic players, and
``settings.deterministic``, give the very same games.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import torch

import arena
from arena.agents.frozen import FrozenPolicies, choose_actions
from arena.agents.grouped import ArchitectureKey, architecture_key
from arena.agents.players import ResolvedPlayer
from arena.agents.policy import Policy
from arena.evaluation.pairing import PairTally, layout_of
from arena.evaluation.runner import MatchProgress, MatchResult, MatchSettings, Side, check_fits, step_sides

DEFAULT_MAX_ENVS = 4096
BANK_BELOW_ROWS = 128  # measured crossover on a 2-core CPU: 41 rows 1.28x, 164 rows 1.02x, 896 0.94x

MatchupProgress = Callable[[str, str, MatchProgress], None]


def play_matchups(
    players: Mapping[str, ResolvedPlayer],
    matchups: Sequence[tuple[str, str]],
    settings: MatchSettings,
    *,
    max_envs: int = DEFAULT_MAX_ENVS,
    on_progress: MatchupProgress | None = None,
    grouped: bool | None = None,
) -> list[MatchResult]:
    """``settings.games`` games of every matchup ``(a, b)`` (ids of ``players``), A's view, in order.
    No SPRT: every matchup plays all its games. ``grouped``: step the policies of an architecture
    in one bank (True), each on its own (False), or by the rows they average (None, the default)."""
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
        results += _play_group(players, list(matchups[start:start + per_group]), settings, on_progress,
                               grouped)
    return results


def _play_group(players: Mapping[str, ResolvedPlayer], group: list[tuple[str, str]], settings: MatchSettings,
                on_progress: MatchupProgress | None, grouped: bool | None) -> list[MatchResult]:
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
        sides: list[Side | GroupedPolicySide] = []
        banked: dict[ArchitectureKey, list[tuple[Policy, np.ndarray, int]]] = {}
        if grouped is None:
            policy_rows = [sum(map(len, parts)) for p, parts in rows.items() if players[p].kind == "policy"]
            grouped = len(policy_rows) > 1 and np.mean(policy_rows) < BANK_BELOW_ROWS
        for p, parts in rows.items():
            player_rows = np.concatenate(parts)
            seed = int(seeds[place[p]].generate_state(1, dtype=np.uint32)[0])
            policy = players[p].policy
            if grouped and players[p].kind == "policy" and policy is not None:
                banked.setdefault(architecture_key(policy), []).append((policy, player_rows, seed))
                continue
            agent = players[p].make_agent(len(player_rows), seed, settings.deterministic)
            sides.append(Side(agent, player_rows, env_of_row[player_rows]))
        sides += [GroupedPolicySide(members, env_of_row, settings.deterministic)
                  for members in banked.values()]
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


class GroupedPolicySide:
    """Policies of one architecture acting together, each on its own rows, with what ``step_sides``
    asks of a ``Side``: ``act``, ``env_of_row`` and ``episode_start`` over all their rows.

    ``members``: ``(policy, env rows, seed)`` per player. Player k's rows are the k-th segment of
    one ``FrozenPolicies`` state table; one ``step`` over the live rows of every player gives the
    logits, and each player samples its segment with its own generator (seeded ``seed``), as its
    ``PolicyAgent`` would: the same draws, in the same order."""

    def __init__(self, members: list[tuple[Policy, np.ndarray, int]], env_of_row: np.ndarray,
                 deterministic: bool) -> None:
        self.policies = [policy.eval() for policy, _, _ in members]
        self.rows = np.concatenate([rows for _, rows, _ in members])
        self.env_of_row = env_of_row[self.rows]
        self.owner = np.repeat(np.arange(len(members)), [len(rows) for _, rows, _ in members])
        self.episode_start = np.ones(len(self.rows), dtype=bool)
        self.deterministic = deterministic
        device = self.policies[0].actor.weight.device
        self.frozen = FrozenPolicies(len(self.rows), device)
        for k, policy in enumerate(self.policies):
            self.frozen.put(k, policy)
        self.generators = []
        for _, _, seed in members:
            generator = torch.Generator(device=device)
            generator.manual_seed(int(seed))
            self.generators.append(generator)

    def act(self, obs: np.ndarray, actions: np.ndarray, active_env: np.ndarray) -> None:
        """One batched inference over the rows of envs still playing; other rows keep old actions."""
        table_rows = np.flatnonzero(active_env[self.env_of_row])
        if len(table_rows) == 0:
            return
        counts = np.bincount(self.owner[table_rows], minlength=len(self.policies))
        players = np.flatnonzero(counts)
        ends = np.cumsum(counts[players])
        bounds = list(zip((ends - counts[players]).tolist(), ends.tolist(), strict=True))
        rows = self.rows[table_rows]
        device = self.frozen.device
        with torch.inference_mode():
            logits = self.frozen.step(
                players.tolist(), bounds, torch.from_numpy(table_rows).to(device),
                torch.from_numpy(np.ascontiguousarray(obs[rows], dtype=np.float32)).to(device),
                torch.from_numpy(self.episode_start[table_rows]).to(device))
            chosen = torch.cat([
                choose_actions(self.policies[k], logits[lo:hi], self.generators[k], self.deterministic)
                for k, (lo, hi) in zip(players.tolist(), bounds, strict=True)])
        actions[rows] = chosen.cpu().numpy().astype(np.int32, copy=False)
