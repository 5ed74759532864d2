"""Scripted pilot strength: the heuristic pilot against the random pilot, and against itself.

Every env plays a fixed quota of matches and only those count, so long matches weigh as much
as short ones (stopping at the first N finished matches would favour quick endings). Sides
alternate by env: the first player is team 0 in even envs and team 1 in odd ones.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np

import arena
from arena.agents.scripted import ScriptedAgent, make_scripted
from arena.envs.outcomes import Outcome
from arena.league.model import stats

MAX_ENVS = 500


@dataclass(frozen=True)
class MatchResults:
    """Results of ``first`` against ``second``, from ``first``'s side."""

    wins: int
    draws: int
    losses: int
    mean_length: float  # decisions per match

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def win_rate(self) -> float:
        return self.wins / self.games if self.games else 0.0


def wilson_interval(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of the win rate (draws count as not-wins): the league's statistic."""
    if trials == 0:
        return 0.0, 1.0
    _, low, high = stats.wilson_interval(successes, 0, trials - successes, confidence)
    return max(0.0, low), min(1.0, high)


def play_matches(
    first: ScriptedAgent,
    second: ScriptedAgent,
    games: int,
    *,
    seed: int = 0,
    team_sizes: tuple[int, int] = (1, 1),
    num_threads: int | None = None,
    max_envs: int = MAX_ENVS,
) -> MatchResults:
    """Plays ``games`` midrange matches, ``first`` on team 0 in even envs and team 1 in odd ones."""
    if games < 1:
        raise ValueError(f"games={games} must be at least 1")
    num_envs = min(max_envs, games)
    quota = np.full(num_envs, games // num_envs, dtype=np.int64)
    quota[: games % num_envs] += 1
    env = arena.make("midrange", num_envs=num_envs, num_threads=num_threads, seed=seed, team_sizes=team_sizes)
    first_team = np.arange(num_envs) % 2  # team that ``first`` drives, per env
    env_of_row = np.repeat(np.arange(num_envs), env.agents_per_env)
    first_rows = np.flatnonzero(env.team_of_row == first_team[env_of_row])
    second_rows = np.flatnonzero(env.team_of_row != first_team[env_of_row])
    obs, _ = env.reset(seed)
    actions = np.zeros((env.num_agents, 3), dtype=np.int32)
    played = np.zeros(num_envs, dtype=np.int64)
    wins = draws = losses = 0
    length_sum = 0
    while (played < quota).any():
        actions[first_rows] = first.act(obs[first_rows])
        actions[second_rows] = second.act(obs[second_rows])
        obs, _, _, _, infos = env.step(actions)
        counted = infos["done"].astype(bool) & (played < quota)
        if counted.any():
            outcome = infos["outcome"][counted].astype(np.int64)
            wins += int((outcome == first_team[counted]).sum())
            draws += int((outcome == Outcome.DRAW).sum())
            losses += int((outcome == 1 - first_team[counted]).sum())
            length_sum += int(infos["episode_length"][counted].sum())
            played[counted] += 1
    return MatchResults(wins, draws, losses, length_sum / games)


def describe(label: str, r: MatchResults) -> str:
    low, high = wilson_interval(r.wins, r.games)
    return (
        f"{label:24} W/D/L {r.wins}/{r.draws}/{r.losses} of {r.games}  "
        f"win rate {100 * r.win_rate:.1f}% (95% Wilson [{100 * low:.1f}, {100 * high:.1f}])  "
        f"mean length {r.mean_length:.0f} decisions"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m arena.bench pilots",
        description="Heuristic midrange pilot against the random pilot (sides swapped by halves) "
        "and against itself, with 95%% Wilson intervals of its win rate.",
    )
    parser.add_argument("--games", type=int, default=1000, help="matches per pairing (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="env and random-pilot seed (default 0)")
    parser.add_argument("--team-sizes", type=int, nargs=2, default=(1, 1), metavar=("N0", "N1"))
    parser.add_argument("--threads", type=int, default=None, help="core threads (default: all CPUs)")
    args = parser.parse_args(argv)
    sizes = (args.team_sizes[0], args.team_sizes[1])

    def pilot(name: str, seed: int = args.seed) -> ScriptedAgent:
        return make_scripted(name, "midrange", team_sizes=sizes, seed=seed)

    print(f"midrange {sizes[0]}v{sizes[1]}, {args.games} matches per pairing, seed {args.seed}")
    pairings = (("heuristic vs random", "random"), ("heuristic vs heuristic", "heuristic"))
    for label, opponent in pairings:
        start = time.perf_counter()
        r = play_matches(
            pilot("heuristic"),
            pilot(opponent, args.seed + 1),
            args.games,
            seed=args.seed,
            team_sizes=sizes,
            num_threads=args.threads,
        )
        print(f"{describe(label, r)}  ({time.perf_counter() - start:.1f} s)")
    return 0
