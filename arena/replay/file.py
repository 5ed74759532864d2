"""The replay file: one midrange game in one compressed ``.npz``, checked when read.

A replay holds what was seen (world states per decision), what was done (each fighter's action per
decision) and what is needed to play it again in the core (game parameters, team sizes, the env's
initial world state and its seed). Arrays, with ``T`` decisions, ``F = n0 + n1`` fighters (team 0
first, as the core numbers them), ``M = F * missiles_per_fighter`` missile slots, ``E`` events:

======================  ================  =====================================================
key                     shape, dtype      what
======================  ================  =====================================================
``meta``                0-d str           JSON: see below
``fighter_x``, ``_y``   [T, F] float64    position, m (arena centre at 0, 0)
``fighter_vx``, ``_vy`` [T, F] float64    velocity, m/s (heading = atan2(vy, vx), speed = norm)
``fighter_alive``       [T, F] bool
``fighter_missiles``    [T, F] int8       missiles left
``missile_x``, ``_y``   [T, M] float64    position, m (meaningful where active)
``missile_active``      [T, M] bool       in flight
``missile_owner``       [T, M] int8       fighter that fired the slot's missile
``missile_target``      [T, M] int8       fighter it is locked on
``actions``             [T, F, D] int8    each fighter's action at decision t (D = 3)
``events``              [T, F, E] int16   the core's event counts of decision t (``event_names``)
``init_<key>``          as the core       the env's full ``world_state()`` before decision 0
======================  ================  =====================================================

Frame ``t`` is the world before decision ``t`` (frame 0 is the spawn): ``actions[t]`` applied to it
gives ``events[t]`` and frame ``t + 1``. The core starts a finished env's next match inside the
decision that ends it, so the world after the last decision is not recorded: the last frame is one
decision (``frame_skip * dt`` seconds) before the end; the last row of ``events`` says what ended it.

``meta`` holds ``format`` ("arena-replay"), ``version``, ``game``, ``team_sizes``, ``params`` (every
game parameter, as ``env.params``), ``event_names``, ``players`` (A and B: ``name``, and ``sha256`` of
the policy file or null for a scripted bot), ``a_team`` (the team A drove), ``outcome`` (core code:
0 team 0 won, 1 team 1 won, 2 draw), ``end_reason`` (``EndReason`` code), ``length`` (decisions),
``seed`` (the env's seed given to ``reset_envs``), ``match_index`` (which match of that env: 0 is
the first after the seed), ``env_index``, ``game_number`` (position in the evaluation's counting
order), ``evaluation_seed``, ``deterministic`` and ``extra`` (free-form notes, e.g. the gauntlet's
snapshot and reference). Re-simulation (``arena.replay.simulate``) starts
from ``init_*`` through ``set_world_state``: a seed alone gives only an env's first match (the spawn
generator advances at each reset), while the initial state reproduces any match.
"""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from arena.atomic import atomic_path
from arena.envs.outcomes import EndReason, Outcome
from arena.games import GAMES, spec

FORMAT = "arena-replay"
VERSION = 1
# games whose matches can be recorded and re-simulated (their specs' "replay" feature)
REPLAY_GAMES = tuple(name for name in GAMES if "replay" in spec(name).features)

# Per-frame arrays: name -> (dtype, per-fighter or per-missile).
FRAME_FIELDS: dict[str, tuple[type, str]] = {
    "fighter_x": (np.float64, "F"),
    "fighter_y": (np.float64, "F"),
    "fighter_vx": (np.float64, "F"),
    "fighter_vy": (np.float64, "F"),
    "fighter_alive": (np.bool_, "F"),
    "fighter_missiles": (np.int8, "F"),
    "missile_x": (np.float64, "M"),
    "missile_y": (np.float64, "M"),
    "missile_active": (np.bool_, "M"),
    "missile_owner": (np.int8, "M"),
    "missile_target": (np.int8, "M"),
}
ACTION_DTYPE = np.int8
EVENT_DTYPE = np.int16
INIT_PREFIX = "init_"
_META_KEYS = ("game", "team_sizes", "params", "event_names", "players", "a_team", "outcome", "end_reason",
              "length", "seed", "match_index", "env_index", "game_number", "evaluation_seed", "deterministic")


@dataclass(frozen=True)
class PlayerRef:
    """Who played a side: ``scripted:<bot>`` or a policy file's path, with the file's sha256."""

    name: str
    sha256: str | None = None


@dataclass
class Replay:
    """One recorded game; see the module docstring for every field."""

    game: str
    team_sizes: tuple[int, int]
    params: dict[str, Any]
    event_names: tuple[str, ...]
    players: tuple[PlayerRef, PlayerRef]  # A, B
    a_team: int
    outcome: int
    end_reason: int
    seed: int
    match_index: int
    frames: dict[str, np.ndarray]
    actions: np.ndarray
    events: np.ndarray
    initial_state: dict[str, np.ndarray]
    env_index: int = 0
    game_number: int = 0
    evaluation_seed: int | None = None
    deterministic: bool = False
    extra: dict[str, Any] = field(default_factory=dict)  # free-form notes kept in the meta

    @property
    def length(self) -> int:
        """Decisions played (rows of ``actions``)."""
        return int(self.actions.shape[0])

    @property
    def num_fighters(self) -> int:
        return self.team_sizes[0] + self.team_sizes[1]

    @property
    def team_of_fighter(self) -> np.ndarray:
        return np.array([0] * self.team_sizes[0] + [1] * self.team_sizes[1], dtype=np.int8)

    @property
    def decision_s(self) -> float:
        """Game seconds per decision."""
        return float(self.params["frame_skip"]) * float(self.params["dt"])

    @property
    def a_outcome(self) -> int:
        """+1 A won, 0 draw, -1 A lost."""
        if self.outcome == Outcome.DRAW:
            return 0
        return 1 if self.outcome == self.a_team else -1

    @property
    def result_word(self) -> str:
        """``win``, ``draw`` or ``loss``, from A's point of view."""
        return {1: "win", 0: "draw", -1: "loss"}[self.a_outcome]

    def heading(self) -> np.ndarray:
        """[T, F] heading of each fighter, radians (0 along +x, counter-clockwise)."""
        return np.arctan2(self.frames["fighter_vy"], self.frames["fighter_vx"])

    def speed(self) -> np.ndarray:
        """[T, F] speed of each fighter, m/s."""
        return np.hypot(self.frames["fighter_vx"], self.frames["fighter_vy"])

    def meta(self) -> dict[str, Any]:
        a, b = self.players
        return {
            "format": FORMAT, "version": VERSION, "game": self.game, "team_sizes": list(self.team_sizes),
            "params": dict(self.params), "event_names": list(self.event_names),
            "players": [{"side": "A", "name": a.name, "sha256": a.sha256},
                        {"side": "B", "name": b.name, "sha256": b.sha256}],
            "a_team": self.a_team, "outcome": self.outcome,
            "outcome_name": Outcome(self.outcome).name.lower(),
            "end_reason": self.end_reason, "end_reason_name": EndReason(self.end_reason).name.lower(),
            "length": self.length, "seed": self.seed, "match_index": self.match_index,
            "env_index": self.env_index, "game_number": self.game_number,
            "evaluation_seed": self.evaluation_seed, "deterministic": self.deterministic, "extra": self.extra,
        }

    def validate(self) -> Replay:
        """Checks shapes, dtypes and codes; raises ``ValueError`` naming the bad field."""
        if self.game not in REPLAY_GAMES:
            raise ValueError(f"replay game {self.game!r} is not supported: allowed {list(REPLAY_GAMES)}")
        sizes = self.team_sizes
        if len(sizes) != 2 or not all(isinstance(n, int) and n >= 1 for n in sizes):
            raise ValueError(f"replay team_sizes={sizes!r} must be two integers >= 1")
        per_fighter = self.params.get("missiles_per_fighter")
        if isinstance(per_fighter, bool) or not isinstance(per_fighter, int) or per_fighter < 0:
            raise ValueError(f"replay params need an integer missiles_per_fighter, got {per_fighter!r}")
        f = self.num_fighters
        dims = {"F": f, "M": f * per_fighter}
        t = self.length
        if t < 1:
            raise ValueError("replay has no decisions (actions is empty)")
        for name, (dtype, per) in FRAME_FIELDS.items():
            _check_array(self.frames, name, (t, dims[per]), dtype)
        _check_array({"actions": self.actions}, "actions", (t, f, self.actions.shape[2]), ACTION_DTYPE)
        _check_array({"events": self.events}, "events", (t, f, len(self.event_names)), EVENT_DTYPE)
        if not self.initial_state:
            raise ValueError("replay has no initial state (init_* arrays)")
        for name, value in self.initial_state.items():
            if not isinstance(value, np.ndarray):
                raise ValueError(f"replay initial state {name!r} must be an array")
        if self.a_team not in (0, 1):
            raise ValueError(f"replay a_team={self.a_team!r} must be 0 or 1")
        if self.outcome not in (Outcome.TEAM0, Outcome.TEAM1, Outcome.DRAW):
            raise ValueError(f"replay outcome={self.outcome!r} must be 0 (team 0 won), 1 (team 1 won) "
                             "or 2 (draw)")
        if self.end_reason not in {int(r) for r in EndReason} - {EndReason.NONE}:
            raise ValueError(f"replay end_reason={self.end_reason!r} is not a finished game's EndReason code")
        for name in ("seed", "match_index", "env_index", "game_number"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"replay {name}={value!r} must be an integer >= 0")
        return self


def save_replay(replay: Replay, path: str | os.PathLike[str]) -> Path:
    """Writes ``replay`` to ``path`` (a ``.npz``) atomically; returns the path."""
    replay.validate()
    path = Path(path)
    if path.suffix != ".npz":
        raise ValueError(f"replay file {str(path)!r} must end in .npz")
    arrays: dict[str, np.ndarray] = {"meta": np.array(json.dumps(replay.meta(), allow_nan=False))}
    arrays.update(replay.frames)
    arrays["actions"] = replay.actions
    arrays["events"] = replay.events
    arrays.update({INIT_PREFIX + k: v for k, v in replay.initial_state.items()})
    with atomic_path(path) as tmp, open(tmp, "wb") as out:
        np.savez_compressed(out, **arrays)  # type: ignore[arg-type]
    return path


def load_replay(path: str | os.PathLike[str]) -> Replay:
    """Reads and checks a replay file; raises ``FileNotFoundError`` or ``ValueError`` naming the problem."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"replay file not found: {path}")
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {key: data[key] for key in data.files}
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as err:
        raise ValueError(f"{path} is not a replay file (.npz): {err}") from None
    if "meta" not in arrays:
        raise ValueError(f"{path} is not a replay file: it has no 'meta' entry")
    try:
        meta = json.loads(str(arrays.pop("meta")))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: the replay's meta is not JSON: {err}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ValueError(f"{path} is not an {FORMAT} file (format {_get(meta, 'format')!r})")
    if meta.get("version") != VERSION:
        raise ValueError(f"{path}: replay version {meta.get('version')!r} is not supported: "
                         f"allowed {VERSION}")
    missing = [k for k in _META_KEYS if k not in meta]
    if missing:
        raise ValueError(f"{path}: the replay's meta lacks {missing}")
    absent = [k for k in (*FRAME_FIELDS, "actions", "events") if k not in arrays]
    if absent:
        raise ValueError(f"{path}: the replay lacks the arrays {absent}")
    try:
        players = tuple(PlayerRef(str(p["name"]), p.get("sha256")) for p in meta["players"])
        if len(players) != 2:
            raise ValueError(f"two players expected, got {len(players)}")
        replay = Replay(
            game=meta["game"], team_sizes=(int(meta["team_sizes"][0]), int(meta["team_sizes"][1])),
            params=dict(meta["params"]), event_names=tuple(meta["event_names"]),
            players=(players[0], players[1]), a_team=meta["a_team"], outcome=meta["outcome"],
            end_reason=meta["end_reason"], seed=meta["seed"], match_index=meta["match_index"],
            frames={k: arrays[k] for k in FRAME_FIELDS}, actions=arrays["actions"], events=arrays["events"],
            initial_state={k.removeprefix(INIT_PREFIX): v for k, v in arrays.items()
                           if k.startswith(INIT_PREFIX)},
            env_index=meta["env_index"], game_number=meta["game_number"],
            evaluation_seed=meta["evaluation_seed"], deterministic=bool(meta["deterministic"]),
            extra=dict(meta.get("extra") or {}),
        )
    except (KeyError, TypeError, IndexError, ValueError) as err:
        raise ValueError(f"{path}: the replay's meta is malformed: {err}") from None
    try:
        replay.validate()
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None
    if meta["length"] != replay.length:
        raise ValueError(f"{path}: meta length {meta['length']!r} but {replay.length} recorded decisions")
    return replay


def replay_file_name(replay: Replay) -> str:
    """``g<game number>-<win|draw|loss>.npz``: sorts in counting order, says A's result."""
    return f"g{replay.game_number:05d}-{replay.result_word}.npz"


def _check_array(arrays: Mapping[str, np.ndarray], name: str, shape: tuple[int, ...], dtype: type) -> None:
    value = arrays.get(name)
    if not isinstance(value, np.ndarray):
        raise ValueError(f"replay array {name!r} is missing")
    if value.shape != shape or value.dtype != np.dtype(dtype):
        raise ValueError(f"replay array {name!r} has shape {value.shape} and dtype {value.dtype}; "
                         f"expected {shape} and {np.dtype(dtype)}")
    if value.dtype.kind == "f" and not np.isfinite(value).all():
        raise ValueError(f"replay array {name!r} holds NaN or infinite values")


def _get(meta: Any, key: str) -> Any:
    return meta.get(key) if isinstance(meta, dict) else None
