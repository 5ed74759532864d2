"""Playing a replay again in the compiled core, and checking that it gives the recorded game bit for bit.

A one-env batch with the replay's game, team sizes and parameters is put in the recorded initial
world state (``set_world_state``) and stepped with the recorded actions. The core's physics draws
no random numbers during a match and gives the same result whatever the thread count or SIMD path,
so every frame, event count and the outcome must come out identical to the recording.
"""

from __future__ import annotations

import numpy as np

import arena
from arena.replay.file import EVENT_DTYPE, FRAME_FIELDS, Replay


class ReplayMismatchError(ValueError):
    """The re-simulated game differs from the recording; the message names the first difference."""


def resimulate(replay: Replay) -> Replay:
    """The game played again from the replay's initial state and actions: a replay of what the core
    does now. Raises ``ReplayMismatchError`` if the game ends before the last recorded decision, or not
    at it."""
    env = arena.make(replay.game, num_envs=1, num_threads=1, team_sizes=replay.team_sizes, **replay.params)
    try:
        env.set_world_state({k: np.asarray(v)[None] for k, v in replay.initial_state.items()})
        frames: dict[str, list[np.ndarray]] = {k: [] for k in FRAME_FIELDS}
        events: list[np.ndarray] = []
        outcome = end_reason = -1
        for t in range(replay.length):
            ws = env.world_state()
            for name, (dtype, _) in FRAME_FIELDS.items():
                frames[name].append(ws[name][0].astype(dtype))
            _, _, _, _, infos = env.step(replay.actions[t].astype(np.int32))
            events.append(infos["events"].astype(EVENT_DTYPE))
            if infos["done"][0]:
                if t != replay.length - 1:
                    raise ReplayMismatchError(f"the re-simulated game ended at decision {t}, the recording "
                                         f"goes on to decision {replay.length - 1}")
                outcome, end_reason = int(infos["outcome"][0]), int(infos["end_reason"][0])
        if outcome < 0:
            raise ReplayMismatchError(f"the re-simulated game did not end after the {replay.length} recorded "
                                 "decisions")
    finally:
        env.close()
    return Replay(
        game=replay.game, team_sizes=replay.team_sizes, params=dict(replay.params),
        event_names=replay.event_names, players=replay.players, a_team=replay.a_team, outcome=outcome,
        end_reason=end_reason, seed=replay.seed, match_index=replay.match_index,
        frames={k: np.stack(v) for k, v in frames.items()}, actions=replay.actions.copy(),
        events=np.stack(events), initial_state={k: np.array(v) for k, v in replay.initial_state.items()},
        env_index=replay.env_index, game_number=replay.game_number, evaluation_seed=replay.evaluation_seed,
        deterministic=replay.deterministic, extra=dict(replay.extra),
    )


def check_replay(replay: Replay) -> Replay:
    """Re-simulates ``replay`` and compares every frame, event and the result, bit for bit; raises
    ``ReplayMismatchError`` naming the first decision and field that differ. Returns the re-simulation."""
    again = resimulate(replay)
    for name in (*FRAME_FIELDS, "events"):
        recorded = replay.events if name == "events" else replay.frames[name]
        replayed = again.events if name == "events" else again.frames[name]
        for t in range(replay.length):
            if recorded[t].tobytes() != replayed[t].tobytes():
                raise ReplayMismatchError(f"decision {t}: {name} differs: recorded {recorded[t].tolist()}, "
                                     f"re-simulated {replayed[t].tolist()}")
    if (again.outcome, again.end_reason) != (replay.outcome, replay.end_reason):
        raise ReplayMismatchError(f"the result differs: recorded outcome {replay.outcome} (end reason "
                             f"{replay.end_reason}), re-simulated {again.outcome} ({again.end_reason})")
    return again
