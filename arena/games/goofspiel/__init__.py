"""Goofspiel: the game's room. ``game`` holds its spec (``SPEC``), parameters, NumPy reference and
bots; ``exploitability`` its game tree and exact exploitability (best responses by backward
induction)."""
