"""Head-to-head matches of two players, side-swapped and seed-paired, batched in the core.

How the games are laid out, and why:
- Envs come in pairs ``(2i, 2i+1)`` seeded alike (``reset_envs``), and each env's spawn generator
  advances only at its own resets, so the k-th match of both envs starts from the same spawn.
  Player A drives team 0 in env ``2i`` and team 1 in env ``2i+1`` (B the other side): every spawn is
  played from both sides, which cancels any advantage of a side or of a lucky spawn.
- Every env plays a fixed quota of matches and only those count. Counting the first N matches to
  finish instead would over-represent short matches (and so whatever wins quickly).
- A game counts once both halves of its pair are done ("pair-game" k of pair i: match k of env 2i and
  of env 2i+1), so every tally is balanced between sides.
- Results and the SPRT take pair-games in a fixed order, round-major: (round 0, pair 0), (round 0,
  pair 1), ..., (round 1, pair 0), ... A pair-game enters only once every pair-game before it in that
  order is done, and the SPRT is checked after each one, as if the games were played one at a time.
  Which games count therefore never depends on how long they took: with many envs the first games
  to finish are the short ones, and an SPRT fed in finishing order would stop on a biased sample.
  The test runs after each step where matches finished; when it decides, the run stops at that
  pair-game, and games played beyond it are dropped (``MatchResult`` holds exactly what the test saw).
- The SPRT sees the tally plus half a virtual game of each outcome (``SPRT_PRIOR_GAMES``). The GSPRT
  estimates the per-game variance from the games, and while every game ends alike (a bot that wins
  them all) that estimate is 0 and the LLR stays 0 forever; the prior keeps the variance positive so
  a lopsided match stops after a few pairs, and moves the LLR negligibly once a few dozen games are in.
- Each step runs one batched inference per player over the rows it drives in envs still playing.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np

import arena
from arena.agents.players import Agent, ResolvedPlayer
from arena.envs.vector import VectorEnv
from arena.evaluation.pairing import PairedLayout, PairTally, PlayedMatch, paired_layout
from arena.games import DEFAULT_GAME
from arena.league.model.stats import elo_difference, sprt, sprt_llr, wilson_interval

logger = logging.getLogger(__name__)

DEFAULT_MAX_ENVS = 256
SPRT_PRIOR_GAMES = 0.5  # virtual wins, draws and losses each, added to the tally the SPRT sees


@dataclass(frozen=True)
class SprtSettings:
    """Sequential test of H0: elo = elo0 against H1: elo = elo1 (A's Elo advantage over B)."""

    elo0: float
    elo1: float
    alpha: float = 0.05
    beta: float = 0.05

    def __post_init__(self) -> None:
        if not self.elo1 > self.elo0:
            raise ValueError(f"SPRT needs elo1 > elo0; got elo0={self.elo0}, elo1={self.elo1}")
        for name, value in (("alpha", self.alpha), ("beta", self.beta)):
            if not 0.0 < value < 0.5:
                raise ValueError(f"SPRT {name}={value} must be in (0, 0.5)")


@dataclass(frozen=True)
class MatchSettings:
    """What to play: the game and its settings, how many games, on how many envs and threads."""

    game: str = DEFAULT_GAME
    team_sizes: tuple[int, int] = (1, 1)
    games: int = 100  # rounded up to an even number: games come in side-swapped pairs
    num_envs: int | None = None  # default min(games, 256); rounded up to even, capped at games
    seed: int = 0
    num_threads: int | None = None  # default: every CPU of this process
    overrides: Mapping[str, Any] = field(default_factory=dict)
    deterministic: bool = False  # policies take their most likely action instead of sampling
    sprt: SprtSettings | None = None
    device: str = "cpu"  # where the matches are stepped and the policies run: "cpu" or "cuda"

    def __post_init__(self) -> None:
        if self.device not in ("cpu", "cuda"):
            raise ValueError(f"device={self.device!r} is not allowed: use 'cpu' or 'cuda'")
        if isinstance(self.games, bool) or not isinstance(self.games, int) or self.games < 1:
            raise ValueError(f"games={self.games!r} must be an integer >= 1")
        if self.num_envs is not None and (
            isinstance(self.num_envs, bool) or not isinstance(self.num_envs, int) or self.num_envs < 1
        ):
            raise ValueError(f"num_envs={self.num_envs!r} must be an integer >= 1 or None")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed={self.seed!r} must be an integer >= 0")

    @property
    def even_games(self) -> int:
        return self.games + self.games % 2

    def pair_quota(self) -> np.ndarray:
        """Pair-games each env pair plays: ``even_games / 2`` spread over ``envs / 2`` pairs."""
        pairs = self.envs // 2
        quota = np.full(pairs, self.even_games // 2 // pairs, dtype=np.int64)
        quota[: (self.even_games // 2) % pairs] += 1
        return quota

    @property
    def envs(self) -> int:
        wanted = self.num_envs if self.num_envs is not None else DEFAULT_MAX_ENVS
        return min(wanted + wanted % 2, self.even_games)


@dataclass(frozen=True)
class MatchProgress:
    """Passed to the progress callback: matches finished so far, and the tally counted so far."""

    finished: int  # matches finished within the quotas, counted or not yet
    games: int  # games counted (complete pair-games, in counting order)
    games_total: int
    wins: int
    draws: int
    losses: int


Fighters = tuple[Mapping[str, float], ...]  # one side's fighters by place: event -> per match


@dataclass(frozen=True)
class MatchResult:
    """A against B, from A's point of view."""

    a: str
    b: str
    settings: MatchSettings
    wins: int
    draws: int
    losses: int
    elapsed_s: float
    steps: int
    matches: tuple[PlayedMatch, ...] = field(repr=False)
    sprt_verdict: Literal["H0", "H1"] | None = None
    sprt_llr: float | None = None
    stopped_early: bool = False
    # The game's events per match, summed over each side's fighters: name -> (A's, B's). Over every
    # match played within the quotas (with an SPRT, also those after the stop).
    events: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    # The same per fighter of each side (A's, B's), by its place in its team (fighter 0 is the first
    # of its team's formation, as in the world state), plus ``died_first``: the share of matches in
    # which it was its team's first loss (fighters shot down in the same step all count).
    fighters: tuple[Fighters, Fighters] = ((), ())

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def games_per_second(self) -> float:
        return self.games / self.elapsed_s if self.elapsed_s > 0 else float("inf")

    def score(self, confidence: float = 0.95) -> tuple[float, float, float]:
        """(score, lower, upper): A's score with its Wilson interval."""
        return wilson_interval(self.wins, self.draws, self.losses, confidence)

    def elo(self, confidence: float = 0.95) -> tuple[float, float, float]:
        """(elo, lower, upper): A's Elo advantage over B with its interval."""
        return elo_difference(self.wins, self.draws, self.losses, confidence)

    def as_dict(self) -> dict[str, Any]:
        s, s_lo, s_hi = self.score()
        e, e_lo, e_hi = self.elo()
        out: dict[str, Any] = {
            "a": self.a, "b": self.b, "game": self.settings.game,
            "team_sizes": list(self.settings.team_sizes), "games": self.games,
            "games_requested": self.settings.games, "wins": self.wins, "draws": self.draws,
            "losses": self.losses, "score": s, "score_ci95": [s_lo, s_hi], "elo": _finite(e),
            "elo_ci95": [_finite(e_lo), _finite(e_hi)], "elapsed_s": self.elapsed_s,
            "games_per_second": self.games_per_second, "envs": self.settings.envs,
            "seed": self.settings.seed, "stopped_early": self.stopped_early,
            "events_per_match": {name: {"a": a, "b": b} for name, (a, b) in self.events.items()},
            "events_per_fighter": {"a": [dict(f) for f in self.fighters[0]],
                                   "b": [dict(f) for f in self.fighters[1]]},
        }
        if self.settings.sprt is not None:
            t = self.settings.sprt
            out["sprt"] = {"elo0": t.elo0, "elo1": t.elo1, "alpha": t.alpha, "beta": t.beta,
                           "verdict": self.sprt_verdict, "llr": self.sprt_llr}
        return out


ProgressCallback = Callable[[MatchProgress], None]


class MatchRecorder(Protocol):
    """Watches the env loop of ``play_match`` (e.g. ``arena.replay.record.ReplayRecorder``): ``start``
    once after the envs are seeded, ``step`` after every decision (``active``: envs within quota)."""

    def start(self, env: VectorEnv, layout: PairedLayout, settings: MatchSettings, a: ResolvedPlayer,
              b: ResolvedPlayer) -> None: ...

    def step(self, env: VectorEnv, actions: np.ndarray, infos: dict[str, np.ndarray],
             active: np.ndarray) -> None: ...


def play_match(
    a: ResolvedPlayer,
    b: ResolvedPlayer,
    settings: MatchSettings,
    *,
    on_progress: ProgressCallback | None = None,
    recorder: MatchRecorder | Sequence[MatchRecorder] | None = None,
) -> MatchResult:
    """Plays ``settings.games`` games (rounded up to even) of A against B; see the module docstring.
    ``recorder`` (optional: one, or several in the order they are called) sees every decision, e.g. to
    save replays or measure shots; None costs nothing."""
    recorders = () if recorder is None else tuple(recorder) if isinstance(recorder, Sequence) else (recorder,)
    num_envs = settings.envs
    pair_quota = settings.pair_quota()
    quota = np.repeat(pair_quota, 2)
    env = arena.make(
        settings.game, num_envs=num_envs, num_threads=settings.num_threads, seed=settings.seed,
        device=settings.device, team_sizes=settings.team_sizes, **dict(settings.overrides),
    )
    try:
        a, b = on_device(a, settings.device), on_device(b, settings.device)
        for player in (a, b):
            check_fits(player, env)
        layout = paired_layout(env, settings.seed)
        event_names = tuple(env.event_names)
        sides = [
            Side(a.make_agent(len(layout.a_rows), layout.a_seed, settings.deterministic), layout.a_rows,
                  layout.env_of_row[layout.a_rows]),
            Side(b.make_agent(len(layout.b_rows), layout.b_seed, settings.deterministic), layout.b_rows,
                  layout.env_of_row[layout.b_rows]),
        ]
        actions = np.zeros((env.num_agents, len(env.action_space.nvec)), dtype=np.int32)
        tally = PairTally(pair_quota, layout.a_team_of_env)
        event_sums = np.zeros((2, len(env.event_names)))  # A, B
        fighters = FighterTally(env, sides)
        test = settings.sprt
        verdict: Literal["H0", "H1"] | None = None
        steps = 0
        start = time.perf_counter()
        obs, _ = env.reset_envs(layout.env_seeds)
        for watcher in recorders:
            watcher.start(env, layout, settings, a, b)
        while verdict is None and not tally.all_counted:
            active = tally.played < quota
            obs, infos, finished = step_sides(env, sides, obs, actions, active)
            steps += 1
            for watcher in recorders:
                watcher.step(env, actions, infos, active)
            events = infos["events"]
            for k, side in enumerate(sides):
                event_sums[k] += events[side.rows[active[side.env_of_row]]].sum(axis=0)
            fighters.step(events, infos["done"].astype(bool), active)
            if finished.size == 0:
                continue
            tally.finish(finished, infos["outcome"][finished], infos["episode_length"][finished])
            while verdict is None and tally.count_next():
                if test is not None:
                    verdict = sprt(*_with_prior(tally.wdl), test.elo0, test.elo1, test.alpha, test.beta)
            if on_progress is not None:
                finished_total = int(tally.played.sum())
                on_progress(MatchProgress(finished_total, tally.games, settings.even_games, *tally.wdl))
    finally:
        env.close()
    elapsed = time.perf_counter() - start
    llr = None if test is None else sprt_llr(*_with_prior(tally.wdl), test.elo0, test.elo1)
    wins, draws, losses = tally.wdl
    stopped_early = verdict is not None and tally.games < settings.even_games
    played = max(1, int(tally.played.sum()))
    per_match = {name: (float(event_sums[0, j]) / played, float(event_sums[1, j]) / played)
                 for j, name in enumerate(event_names)}
    logger.info("%s vs %s: W/D/L %d/%d/%d in %.2f s (%d steps)%s", a.name, b.name, wins, draws, losses,
                elapsed, steps, f", SPRT {verdict}" if verdict else "")
    return MatchResult(a.name, b.name, settings, wins, draws, losses, elapsed, steps, tuple(tally.matches),
                       verdict, llr, stopped_early, per_match, fighters.per_match(event_names))


def on_device(player: ResolvedPlayer, device: str) -> ResolvedPlayer:
    """``player`` with its policy on ``device`` (a copy: the caller's policy stays where it is);
    scripted players and policies already there are returned as they are."""
    policy = player.policy
    if policy is None or next(policy.parameters()).device.type == device:
        return player
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"player {player.name!r} cannot run on device='cuda': torch sees no usable GPU; "
                           "use device='cpu'")
    return dataclasses.replace(player, policy=copy.deepcopy(policy).to(device))


def check_fits(player: ResolvedPlayer, env: VectorEnv) -> None:
    """Refuses a player resolved for another game or observation size than ``env``'s."""
    if player.spaces.obs_dim != env.obs_dim or player.spaces.game != env.game:
        raise ValueError(f"player {player.name!r} was resolved for {player.spaces.describe()}, "
                         f"not for this {env.game} env (obs_dim {env.obs_dim})")


def step_sides(env: VectorEnv, sides: list[Side], obs: np.ndarray, actions: np.ndarray,
               active: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray]:
    """One step: every side acts on the envs still playing (``active``), the env steps, the sides
    learn which rows start a new episode. Returns the new obs, the infos and the active envs whose
    match just ended."""
    for side in sides:
        side.act(obs, actions, active)
    obs, _, _, _, infos = env.step(actions)
    done = infos["done"].astype(bool)
    for side in sides:
        side.episode_start = done[side.env_of_row]
    return obs, infos, np.flatnonzero(done & active)


class Side:
    """The rows one player drives and its agent; rows index the agent's own state table."""

    def __init__(self, agent: Agent, rows: np.ndarray, env_of_row: np.ndarray) -> None:
        self.agent = agent
        self.rows = rows
        self.env_of_row = env_of_row
        self.episode_start = np.ones(len(rows), dtype=bool)
        self.table_rows = np.arange(len(rows))

    def act(self, obs: np.ndarray, actions: np.ndarray, active_env: np.ndarray) -> None:
        """One batched inference over the rows of envs still playing; other rows keep old actions."""
        live = active_env[self.env_of_row]
        table_rows = self.table_rows if live.all() else self.table_rows[live]
        rows = self.rows[table_rows]
        actions[rows] = self.agent.act(obs[rows], table_rows, self.episode_start[table_rows])


class FighterTally:
    """The game's events of each side's fighters by their place in their team, and who died first."""

    def __init__(self, env: VectorEnv, sides: list[Side]) -> None:
        self.sides = sides
        self.places = [env.place_of_row[side.rows] for side in sides]
        self.size = int(max(env.team_sizes))
        names = tuple(env.event_names)
        self.died = names.index("died") if "died" in names else None
        self.sums = np.zeros((2, self.size, len(names)))
        self.first_deaths = np.zeros((2, self.size))
        self.matches = np.zeros((2, self.size))  # matches each place played (in NvM not every place does)
        self.lost_one = np.zeros((2, env.num_envs), dtype=bool)  # a side's fighter died this match

    def step(self, events: np.ndarray, done: np.ndarray, active: np.ndarray) -> None:
        for k, side in enumerate(self.sides):
            live = active[side.env_of_row]
            np.add.at(self.sums[k], self.places[k][live], events[side.rows[live]])
            if self.died is None:
                continue
            dying = live & (events[side.rows, self.died] > 0)
            if dying.any():
                envs = side.env_of_row[dying]
                first = ~self.lost_one[k, envs]
                np.add.at(self.first_deaths[k], self.places[k][dying][first], 1.0)
                self.lost_one[k, envs] = True
            ended = live & done[side.env_of_row]
            np.add.at(self.matches[k], self.places[k][ended], 1.0)
        self.lost_one[:, done] = False

    def per_match(self, names: tuple[str, ...]) -> tuple[Fighters, Fighters]:
        """Per side, per place that played: each event per match it played, and ``died_first``."""
        def side(k: int) -> Fighters:
            out = []
            for place in range(self.size):
                played = self.matches[k, place]
                if played == 0:
                    continue
                row = {name: float(self.sums[k, place, j] / played) for j, name in enumerate(names)}
                if self.died is not None:
                    row["died_first"] = float(self.first_deaths[k, place] / played)
                out.append(row)
            return tuple(out)

        return side(0), side(1)


def _with_prior(wdl: tuple[int, int, int]) -> tuple[float, float, float]:
    w, d, l = wdl  # noqa: E741
    return w + SPRT_PRIOR_GAMES, d + SPRT_PRIOR_GAMES, l + SPRT_PRIOR_GAMES


def _finite(x: float) -> float | None:
    return x if np.isfinite(x) else None
