"""What a trainer reports, apart from the PPO core: the loggers (JSONL beside W&B or TensorBoard,
``loggers``), the terminal dashboard (``dashboard``), the training-health checks (``health``) and
the metric names shared with Stable-Baselines3 (``metric_names``)."""
