"""NumPy references of the native games, written for reading and used by the parity tests.

Each module is the operation-for-operation twin of one C++ header in ``arena/native``:
``common`` of common.h, ``midrange_physics`` and ``midrange`` of midrange.h, ``rpsw`` of rpsw.h.
Change a header and its twin together; tests/test_reference_parity.py checks they agree.
"""

from arena.envs.reference.common import env_seed, mix64, splitmix64
from arena.envs.reference.midrange import MidrangeReference
from arena.envs.reference.rpsw import RpswReference

__all__ = ["MidrangeReference", "RpswReference", "env_seed", "mix64", "splitmix64"]
