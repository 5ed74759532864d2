"""Replays: evaluation games saved to files, played again bit for bit, and watched.

- ``file``: the ``.npz`` format (``Replay``, ``save_replay``, ``load_replay``; the format is
  documented there);
- ``record``: ``ReplayRecorder``, which ``arena.evaluation.runner.play_match`` feeds from its env loop;
- ``simulate``: ``resimulate`` / ``check_replay`` in the compiled core;
- ``scene``, ``animate``, ``html``: drawing a replay as a GIF/MP4 or a self-contained HTML viewer.

    python -m arena.evaluate A B --games 100 --replays replays/ --replay-which losses
    python -m arena.replay replays/g00003-loss.npz --html game.html --gif game.gif
"""

from arena.replay.file import PlayerRef, Replay, load_replay, save_replay

__all__ = ["PlayerRef", "Replay", "load_replay", "save_replay"]
