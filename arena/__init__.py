"""arena: a self-play multi-agent arena and league system with a batched C++ match core.

The native core is the extension module ``arena._core``. Setting the environment variable
``ARENA_CORE_PATH`` to the path of another build of it (a ``_core*.so``, e.g. the sanitizer build
that ``.ci/run`` makes in ``build/ci-asan``) makes ``import arena`` load that file as
``arena._core`` instead of the installed one, so every ``from arena import _core`` sees it.
"""

import importlib.util
import logging
import os
import sys


def _load_core_from_path() -> None:
    path = os.environ.get("ARENA_CORE_PATH")
    if not path or "arena._core" in sys.modules:
        return
    spec = importlib.util.spec_from_file_location("arena._core", path)
    if spec is None or spec.loader is None or not os.path.isfile(path):
        raise ImportError(f"ARENA_CORE_PATH={path!r} is not a file: allowed the path of a built _core*.so")
    module = importlib.util.module_from_spec(spec)
    sys.modules["arena._core"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules["arena._core"]
        raise
    globals()["_core"] = module
    logging.getLogger(__name__).info("arena._core loaded from ARENA_CORE_PATH=%s", path)


_load_core_from_path()

from arena.envs import EndReason, Outcome, VectorEnv, make  # noqa: E402

__version__ = "0.1.0"
__all__ = ["EndReason", "Outcome", "VectorEnv", "__version__", "make"]
