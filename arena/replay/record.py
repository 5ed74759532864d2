"""Recording chosen games of a head-to-head evaluation as replays, from inside its env loop.

``play_match(..., recorder=ReplayRecorder(which, max_games))`` calls ``start`` once after the envs
are seeded and ``step`` after every decision; ``replays(result.matches)`` then returns the chosen
games in counting order (the order the evaluation counts pair-games, see
``arena.evaluation.runner``): the first ``max_games`` games (``first``), the first ``max_games`` that
A won, drew or lost (``wins``, ``draws``, ``losses``), or every counted game (``all``). Only games
that the evaluation counted are returned (with an SPRT, those before its stop).

Only envs whose current game can still be chosen are recorded: an env drops out for good once its
next game comes after the ``max_games``-th chosen one in counting order, so with ``first`` only
the first games' envs are followed, and ``step`` does nothing once no env is followed. Each step
packs what is kept of every env (actions, events, the next frame) into one float64 row per env
(exact for every field: the floats are float64 and the rest small integers), so a followed env
costs one row copy per decision.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from arena.envs.outcomes import Outcome
from arena.replay.file import ACTION_DTYPE, EVENT_DTYPE, FRAME_FIELDS, REPLAY_GAMES, PlayerRef, Replay

WHICH = ("first", "wins", "draws", "losses", "all")
_WANTED_RESULT = {"wins": 1, "draws": 0, "losses": -1}


@dataclass
class _Recording:
    """One game being recorded: its place, its first frame and one packed row per decision."""

    position: int  # in counting order
    env: int
    match_index: int
    initial: dict[str, np.ndarray]
    first_frame: np.ndarray  # packed frame fields of frame 0
    rows: list[np.ndarray] = field(default_factory=list)  # decision t: actions, events, frame t + 1


class ReplayRecorder:
    """Records the games ``which`` chooses, at most ``max_games`` of them (None: no limit)."""

    def __init__(self, which: str = "first", max_games: int | None = 10) -> None:
        if which not in WHICH:
            raise ValueError(f"replay choice {which!r} is not allowed: use one of {list(WHICH)}")
        if max_games is not None and (isinstance(max_games, bool) or not isinstance(max_games, int)
                                      or max_games < 1):
            raise ValueError(f"replay games={max_games!r} must be an integer >= 1 (or None: no limit)")
        self.which = which
        self.max_games = None if which == "all" else max_games
        self._kept: dict[int, Replay] = {}  # position -> replay
        self._live: dict[int, _Recording] = {}  # env -> its game being recorded
        self._started = False

    # ------------------------------------------------------------------ the runner's hooks

    def start(self, env: Any, layout: Any, settings: Any, a: Any, b: Any) -> None:
        """Called once, after the envs were seeded (``reset_envs``): follows every env whose first
        game may be chosen."""
        if env.game not in REPLAY_GAMES:
            raise ValueError(f"replays record the games {list(REPLAY_GAMES)}, not {env.game!r}")
        if self._started:
            raise RuntimeError("a ReplayRecorder records one evaluation; make a new one")
        self._started = True
        self._game, self._team_sizes = env.game, tuple(env.team_sizes)
        self._params, self._event_names = dict(env.params), tuple(env.event_names)
        self._players = (PlayerRef(a.name, a.sha256), PlayerRef(b.name, b.sha256))
        self._settings = settings
        self._apf = int(env.agents_per_env)
        self._num_envs = int(env.num_envs)
        self._env_seeds = np.asarray(layout.env_seeds)
        self._a_team_of_env = np.asarray(layout.a_team_of_env)
        pair_quota = settings.pair_quota()
        self._quota = np.repeat(pair_quota, 2)
        rounds = int(pair_quota.max())
        order = [(k, i) for k in range(rounds) for i in range(len(pair_quota)) if k < pair_quota[i]]
        self._pair_game = {key: j for j, key in enumerate(order)}  # (round, pair) -> counting order
        ws = env.world_state()
        self._frame_columns = self._columns(ws)
        frames = self._pack(ws, None, None)
        for e in range(env.num_envs):
            self._maybe_follow(e, 0, ws, frames)

    def step(self, env: Any, actions: np.ndarray, infos: dict[str, np.ndarray], active: np.ndarray) -> None:
        """Called after each decision with the actions the envs got and the step's infos."""
        if not self._live:
            return
        ws = env.world_state()
        packed = self._pack(ws, actions, infos["events"])
        envs = np.fromiter(self._live, dtype=np.int64, count=len(self._live))
        rows = packed[envs]
        for k, e in enumerate(envs.tolist()):
            self._live[e].rows.append(rows[k])
        done = infos["done"]
        frames = packed[:, -self._frame_columns:]
        for e in envs[done[envs].astype(bool)].tolist():
            rec = self._live.pop(e, None)
            if rec is None:
                continue  # dropped by a game that finished before it in this loop
            self._finish(rec, int(infos["outcome"][e]), int(infos["end_reason"][e]))
            self._maybe_follow(e, rec.match_index + 1, ws, frames)

    # ------------------------------------------------------------------ results

    def replays(self, matches: Any) -> list[Replay]:
        """The chosen games among ``matches`` (the result's counted ``PlayedMatch`` es), in counting order."""
        counted = {(m.env, m.index) for m in matches}
        chosen = [r for pos, r in sorted(self._kept.items()) if (r.env_index, r.match_index) in counted]
        return chosen if self.max_games is None else chosen[: self.max_games]

    # ------------------------------------------------------------------ internals

    def _position(self, env: int, match_index: int) -> int | None:
        j = self._pair_game.get((match_index, env // 2))
        return None if j is None else 2 * j + env % 2

    def _cutoff(self) -> float:
        """Games at or after this position can no longer be chosen."""
        if self.max_games is None:
            return float("inf")
        if self.which == "first":
            return float(self.max_games)
        return float(max(self._kept)) if len(self._kept) >= self.max_games else float("inf")

    def _maybe_follow(self, env: int, match_index: int, ws: dict[str, np.ndarray],
                      frames: np.ndarray) -> None:
        if match_index >= self._quota[env]:
            return
        position = self._position(env, match_index)
        if position is None or position >= self._cutoff():
            return
        initial = {k: np.array(v[env]) for k, v in ws.items()}
        self._live[env] = _Recording(position, env, match_index, initial, frames[env].copy())

    def _columns(self, ws: dict[str, np.ndarray]) -> int:
        """Packed columns of the frame fields (per env)."""
        return sum(int(np.prod(ws[name].shape[1:])) for name in FRAME_FIELDS)

    def _pack(self, ws: dict[str, np.ndarray], actions: np.ndarray | None,
              events: np.ndarray | None) -> np.ndarray:
        """[envs, columns] float64: each env's actions and events (when given), then its frame fields."""
        n = self._num_envs
        parts = [] if actions is None or events is None else [actions.reshape(n, -1), events.reshape(n, -1)]
        parts += [ws[name].reshape(n, -1) for name in FRAME_FIELDS]
        return np.concatenate(parts, axis=1, dtype=np.float64)

    def _unpack(self, rec: _Recording) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
        """Frames, actions [T, F, D] and events [T, F, E] of a finished recording."""
        table = np.stack(rec.rows)  # [T, columns]
        t, apf = len(rec.rows), self._apf
        action_cols = table.shape[1] - self._frame_columns - apf * len(self._event_names)
        actions = table[:, :action_cols].reshape(t, apf, -1).astype(ACTION_DTYPE)
        events = table[:, action_cols:-self._frame_columns].reshape(t, apf, -1).astype(EVENT_DTYPE)
        # Frame 0, then the frames after decisions 0 .. T-2 (the last decision's is the next game's spawn).
        flat = np.concatenate([rec.first_frame[None], table[:-1, -self._frame_columns:]])
        frames, col = {}, 0
        for name, (dtype, per) in FRAME_FIELDS.items():
            width = apf if per == "F" else apf * int(self._params["missiles_per_fighter"])
            frames[name] = flat[:, col: col + width].astype(dtype)
            col += width
        return frames, actions, events

    def _finish(self, rec: _Recording, outcome: int, end_reason: int) -> None:
        a_team = int(self._a_team_of_env[rec.env])
        a_result = 0 if outcome == Outcome.DRAW else (1 if outcome == a_team else -1)
        if self.which in _WANTED_RESULT and a_result != _WANTED_RESULT[self.which]:
            return
        frames, actions, events = self._unpack(rec)
        self._kept[rec.position] = Replay(
            game=self._game, team_sizes=(self._team_sizes[0], self._team_sizes[1]), params=dict(self._params),
            event_names=self._event_names, players=self._players, a_team=a_team, outcome=outcome,
            end_reason=end_reason, seed=int(self._env_seeds[rec.env]), match_index=rec.match_index,
            frames=frames, actions=actions, events=events, initial_state=rec.initial, env_index=rec.env,
            game_number=rec.position, evaluation_seed=int(self._settings.seed),
            deterministic=bool(self._settings.deterministic),
        )
        if self.max_games is not None and len(self._kept) > self.max_games:
            del self._kept[max(self._kept)]
        cutoff = self._cutoff()
        for e in [e for e, r in self._live.items() if r.position >= cutoff]:
            del self._live[e]  # can no longer be chosen: frees its frames
