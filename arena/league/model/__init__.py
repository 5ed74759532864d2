"""The league's state: players and the pool, the payoff table, TrueSkill ratings, snapshot files, PSRO's
meta-game, what a league publishes, the result statistics, and the SQLite store that holds them all.

Nothing here knows about training: ``arena.league.matchmaking`` reads this model to choose opponents,
``arena.league.run`` writes to it while a run trains, ``arena.league.view`` draws it.
"""
