"""arena: a self-play multi-agent arena and league system with a batched C++ match core."""

from arena.envs import EndReason, Outcome, VectorEnv, make

__version__ = "0.1.0"
__all__ = ["EndReason", "Outcome", "VectorEnv", "__version__", "make"]
