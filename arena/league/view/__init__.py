"""Views of a league: the leaderboard, rating curves and payoff heatmap drawn from a store (``plots``, for
``python -m arena.league show``), the ones a training run logs as it goes (``training_views``) and the
names they are logged under (``metric_names``). Reads the league model, never the run."""
