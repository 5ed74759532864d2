"""Hyperparameter studies with Optuna: ``python -m arena.train -m +sweep=NAME``.

``plan`` checks a sweep before its first trial (every key, every value's type, the search space in
hydra's sweep syntax turned into Optuna distributions); ``study`` runs it through Optuna's own API:
a study in a database (SQLite beside the trials by default) that a re-run resumes, trials in one
process or in ``sweep.workers`` processes, intermediate values for a pruner. docs/tuning.md is the
manual.
"""
