"""Opponent choice: the mix of sources and PFSP (``pfsp``), who an exploiter plays (``exploiters``), and the
frozen players one trainer's opponents need, loaded on demand (``player_cache``). Reads the league model
(``arena.league.model``), never the run."""
