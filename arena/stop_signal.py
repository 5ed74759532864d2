"""``kill PID`` stops a run as Ctrl-C does.

A shell starts a background job (``nohup python -m arena.train ... &``) with SIGINT ignored, so the
only signal its user can send to stop it is SIGTERM, which also is what a batch scheduler sends
before it preempts a job. By default SIGTERM ends Python at once: no checkpoint since the last
periodic one, no final measurement, no record. Inside ``sigterm_stops_as_ctrl_c()`` the first
SIGTERM raises ``KeyboardInterrupt`` in the main thread instead, so the code that handles Ctrl-C
(``arena.train`` writes its checkpoint, ``arena.bench exploit`` measures its best weights) handles it
too. A second SIGTERM ends the process at once, as the default does (every file arena writes is
written atomically, so it cannot leave half a file), unless it comes within ``DUPLICATE_S`` of the
first: coreutils' ``timeout`` sends its signal to the command and then to the command's whole process
group, so ``timeout 1800 python -m arena.train ...`` delivers SIGTERM twice within microseconds; taken
as a second request, the copy ended the run before its checkpoint was written.

The handler is installed only in the main thread of a process whose SIGTERM is at its default, so
an application that embeds arena and handles SIGTERM itself keeps its own handler.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

DUPLICATE_S = 1.0  # a SIGTERM this soon after the first is the same request, not a second one


@contextmanager
def sigterm_stops_as_ctrl_c() -> Iterator[bool]:
    """Within the block, SIGTERM raises ``KeyboardInterrupt`` (once; a second one, ``DUPLICATE_S`` or
    more later, terminates); yields whether the handler was installed (not outside the main thread,
    nor over a handler someone else set). The previous disposition is restored on leaving."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield False
        return

    first: list[float] = []

    def again(signum: int, frame: FrameType | None) -> None:
        if time.monotonic() - first[0] < DUPLICATE_S:
            return  # the same request again (``timeout`` signals the command and its group)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second request ends the process
        os.kill(os.getpid(), signal.SIGTERM)

    def stop(signum: int, frame: FrameType | None) -> None:
        first.append(time.monotonic())
        signal.signal(signal.SIGTERM, again)
        raise KeyboardInterrupt(f"{signal.Signals(signum).name} received")

    signal.signal(signal.SIGTERM, stop)
    try:
        yield True
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
