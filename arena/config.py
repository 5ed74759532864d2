"""The run configuration of ``python -m arena.train``: hydra structured configs.

Every group (env, agent, trainer, reward, logger, league) is backed by a dataclass, so a misspelt
key or a wrong type fails at start-up. The YAML files under ``configs/`` choose between presets.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import MISSING, OmegaConf

from arena.games import GAMES, spec
from arena.games.spec import Param
from arena.league.config import LeagueConfig
from arena.league.model.published import published_checkpoints
from arena.trainer.config import PolicyConfig, TrainerConfig
from arena.trainer.telemetry.health import HealthConfig


def _env_meta_fields(game: str) -> list[tuple[str, Any, Any]]:
    """The env keys that are not game parameters, as fields of ``game``'s env schema: never passed to
    the game."""
    return [
        ("name", str, field(default=game)),
        ("team_sizes", list[int], field(default_factory=lambda: [1, 1])),
        # where the matches step: cpu, cuda (a CUDA build of the core), or None: follow trainer.device
        # (arena/trainer/placement.py)
        ("device", str | None, field(default=None)),
        # the bots a league (+league=NAME) trains against where league.scripted is null; None: the
        # game's reference bots. A preset's choice (env=midrange_2v2), not a game parameter.
        ("league_bots", list[str] | None, field(default=None)),
    ]


ENV_META_KEYS: tuple[str, ...] = tuple(key for key, _, _ in _env_meta_fields(""))


def game_overrides(env: dict[str, Any]) -> dict[str, Any]:
    """The game parameters of an env config (a plain dict): every key but ``ENV_META_KEYS``."""
    return {k: v for k, v in env.items() if k not in ENV_META_KEYS}


def _game_config(name: str, game: str, params: dict[str, Param]) -> type:
    """A dataclass with the env's meta keys (the game's name, team sizes, ...) and every parameter of
    the game as a field."""
    fields: list[Any] = _env_meta_fields(game)
    fields += [(key, p.kind, field(default=p.default)) for key, p in params.items()]
    return dataclasses.make_dataclass(name, fields)


# The env group's schema of every game (``configs/env/<preset>.yaml`` extends ``<game>_schema``).
ENV_CONFIGS: dict[str, type] = {
    name: _game_config(f"{name.capitalize()}EnvConfig", name, dict(spec(name).params)) for name in GAMES
}


@dataclass
class TrainerRunConfig(TrainerConfig):
    """The trainer's hyperparameters plus where to resume from: a checkpoint path or ``latest``; and the
    policy file a new run's learner starts from (``init``: a trainer checkpoint or a snapshot of the
    same architecture, as ``--init`` of ``arena.bench exploit``; None: fresh weights; a resumed run
    keeps its checkpoint's weights). A run writes a checkpoint every 5 minutes unless told otherwise
    (``trainer.checkpoint_minutes=0``)."""

    checkpoint_minutes: float = 5.0
    resume: str | None = None
    init: str | None = None


@dataclass
class RewardConfig:
    """``terms.<name>: {_target_: <dotted path or built-in name>, weight: w, **kwargs}``."""

    terms: dict[str, Any] = field(default_factory=lambda: {"outcome": {"_target_": "outcome", "weight": 1.0}})


@dataclass
class LoggerConfig:
    kind: str = "none"  # none | wandb | tensorboard
    project: str = "arena"
    entity: str | None = None
    name: str | None = None
    tags: list[str] = field(default_factory=list)
    mode: str | None = None  # wandb: online | offline | disabled; None: offline without an API key
    log_snapshots: bool = False  # wandb: keep each league snapshot file as a model artifact


@dataclass
class OpponentsConfig:
    """Who drives team 1 when no league runs: ``players`` (``mirror``, ``scripted:<name>``, a
    checkpoint path or ``league:<run_dir>``, what that league publishes) drawn with ``weights`` for
    each env at every episode end."""

    players: list[str] = field(default_factory=lambda: ["mirror", "scripted:heuristic"])
    weights: list[float] = field(default_factory=lambda: [0.5, 0.5])

    def mix(self) -> dict[str, float]:
        return opponent_mix(self.players, self.weights)


def opponent_mix(players: list[str], weights: list[float]) -> dict[str, float]:
    """``{player: weight}``, or a ``ValueError`` naming what is wrong."""
    if len(players) != len(weights) or not players:
        raise ValueError(
            f"opponents.players {list(players)} and opponents.weights {list(weights)} must be "
            "non-empty lists of the same length"
        )
    mix: dict[str, float] = {}
    for player, weight in zip(players, weights, strict=True):
        if isinstance(player, str) and player.startswith("league:"):
            # What a league publishes: its newest judged snapshot, or its mixture drawn per match.
            members = published_checkpoints(player.removeprefix("league:"))
            for member, share in members.items():
                mix[member] = mix.get(member, 0.0) + float(weight) * share
        else:
            mix[player] = mix.get(player, 0.0) + float(weight)
    return mix


@dataclass
class StageConfig:
    """A training stage: ``steps`` learner samples with its own overrides.

    ``trainer`` may set learning_rate, ent_coef, clip_coef, vf_coef; ``opponents`` replaces the
    opponent players and weights;
    ``env`` may set the spawn distances (a curriculum of spawn difficulty)."""

    steps: int = 0
    name: str | None = None
    trainer: dict[str, Any] = field(default_factory=dict)
    opponents: OpponentsConfig | None = None
    env: dict[str, Any] = field(default_factory=dict)


@dataclass
class SweepSamplerConfig:
    """Optuna's TPE sampler: ``seed`` (None: a fresh draw each time), ``n_startup_trials`` random draws
    before it models the results."""

    seed: int | None = 0
    n_startup_trials: int = 10


@dataclass
class SweepConfig:
    """A sweep (``python -m arena.train -m ...``, e.g. ``-m +sweep=rpsw``; ``arena.sweep``): an Optuna
    study named ``name`` in ``storage`` (None: ``sqlite:///<hydra.sweep.dir>/study.db``, the folder
    being ``runs/sweeps/<name>``), ``n_trials`` finished trials (complete or pruned), each training in
    ``<folder>/<trial number>`` and scored by the mean of metric ``objective`` (a key of metrics.jsonl)
    over its last ``window`` records, which the study maximises or minimises (``direction``).
    ``params``: the search space (key -> hydra sweep expression). ``workers`` processes run trials at
    once, each with its share of the cores. ``pruner`` (none, median, hyperband) stops trials whose
    intermediate objective lags, after ``prune_warmup`` of their steps. ``heartbeat_s``: a running
    trial's heartbeat; one silent for twice as long (its process was killed) is marked failed and
    asked again."""

    name: str = "${env.name}"
    objective: str = "episode_return"
    window: int = 1
    direction: str = "maximize"
    n_trials: int = 8
    params: dict[str, str] = field(default_factory=dict)
    storage: str | None = None
    workers: int = 1
    pruner: str = "none"
    prune_warmup: float = 0.5
    heartbeat_s: int = 30
    sampler: SweepSamplerConfig = field(default_factory=SweepSamplerConfig)


@dataclass
class RunConfig:
    run_dir: str | None = None  # None: runs/<game>-<date>-<time>
    dashboard: bool = True
    env: Any = MISSING  # the env group's schema (one per game: ENV_CONFIGS) gives it its type
    agent: PolicyConfig = field(default_factory=PolicyConfig)
    trainer: TrainerRunConfig = field(default_factory=lambda: TrainerRunConfig())
    reward: RewardConfig = field(default_factory=RewardConfig)
    logger: LoggerConfig = field(default_factory=LoggerConfig)
    opponents: OpponentsConfig = field(default_factory=OpponentsConfig)
    stages: list[StageConfig] = field(default_factory=list)
    league: Any = None  # a LeagueConfig when a league group is chosen (+league=selfplay|pfsp|alphastar)
    sweep: SweepConfig = field(default_factory=SweepConfig)  # what a sweep (-m) optimises; see SweepConfig
    health: HealthConfig = field(default_factory=HealthConfig)  # training-health thresholds


def register_configs() -> None:
    """Puts the schemas in hydra's ConfigStore (the YAML presets in configs/ extend them)."""
    from hydra.core.config_store import ConfigStore

    cs = ConfigStore.instance()
    cs.store(name="run_schema", node=RunConfig)
    for name, node in ENV_CONFIGS.items():
        cs.store(group="env", name=f"{name}_schema", node=node)
    cs.store(group="agent", name="lstm_schema", node=PolicyConfig)
    cs.store(group="trainer", name="trainer_schema", node=TrainerRunConfig)
    cs.store(group="reward", name="reward_schema", node=RewardConfig)
    cs.store(group="logger", name="logger_schema", node=LoggerConfig)
    cs.store(group="league", name="league_schema", node=LeagueConfig)


# ---------------------------------------------------------------------- composition


def config_dir() -> Path:
    """The YAML presets: installed beside the package, or at the root of a source checkout."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "configs", here.parent / "configs"):
        if (candidate / "config.yaml").is_file():
            return candidate
    raise FileNotFoundError(f"arena's configs/ folder was not found next to {here}")


GROUPS = ("env", "agent", "trainer", "reward", "logger", "league", "sweep")
APPENDED_GROUPS = ("league", "sweep")  # not in the defaults list: NAME=X means +NAME=X


def normalise_overrides(overrides: list[str]) -> list[str]:
    # The league and sweep groups are optional: accept both `+league=NAME` and `league=NAME`.
    return ["+" + o if o.split("=", 1)[0] in APPENDED_GROUPS else o for o in overrides]


def _valid_keys(node: Any) -> list[str]:
    from omegaconf import DictConfig

    return sorted(str(k) for k in node.keys()) if isinstance(node, DictConfig) else []


def _explain(overrides: list[str], base: Any) -> str | None:
    """Names the first override whose key does not exist, with the keys valid at that level."""
    from omegaconf import DictConfig

    for item in overrides:
        if item.startswith(("+", "~")) or "=" not in item:
            continue
        key = item.split("=", 1)[0]
        if key in GROUPS or key.startswith(("hydra.", "hydra/")):  # hydra's own settings: hydra checks them
            continue
        node, walked = base, []
        for part in key.split("."):
            if not isinstance(node, DictConfig) or part not in node:
                where = ".".join(walked) or "the top level"
                valid = ", ".join(_valid_keys(node)) or "none (not a group of keys)"
                return f"unknown config key {key!r}: {where} has no {part!r}; valid keys there: {valid}"
            node = node[part]
            walked.append(part)
    return None


def _explain_choice(overrides: list[str]) -> str | None:
    """Names a group option that does not exist, with the options there are."""
    for item in overrides:
        group, _, choice = item.lstrip("+").partition("=")
        if group in GROUPS and not (config_dir() / group / f"{choice}.yaml").is_file():
            options = sorted(p.stem for p in (config_dir() / group).glob("*.yaml"))
            return f"unknown {group} config {choice!r}; available: {', '.join(options) or 'none'}"
    return None


def with_league_reward(cfg: Any) -> Any:
    """``cfg`` with the reward terms its league adds for its game (``league.reward_terms.<env.name>``)
    joined to ``reward.terms``; a term the run's reward already names keeps the run's settings."""
    from omegaconf import open_dict

    added = _league_reward_terms(cfg)
    if not added:
        return cfg
    with open_dict(cfg.reward.terms):
        for name, term in added.items():
            if name not in cfg.reward.terms:
                cfg.reward.terms[name] = term
    return cfg


def _league_reward_terms(cfg: Any) -> Any:
    """The reward terms ``cfg``'s league adds for its game (``league.reward_terms.<env.name>``), or None."""
    league = cfg.get("league")
    return (league.get("reward_terms") or {}).get(str(cfg.env.name)) if league is not None else None


def exploiter_reward_config(cfg: Any) -> Any:
    """The reward config the league's exploiters train on (``league.exploiter_reward``): ``learner``,
    the run's ``cfg.reward``; ``game``, a copy without the terms ``league.reward_terms`` joined to it
    (a term the run's reward gives settings of its own is the run's, and stays)."""
    league = cfg.get("league")
    if league is None or str(league.get("exploiter_reward", "learner")) == "learner":
        return cfg.reward
    added = _league_reward_terms(cfg) or {}
    reward = OmegaConf.create(OmegaConf.to_container(cfg.reward, resolve=True))
    for name, term in added.items():
        if name in reward.terms and OmegaConf.to_container(reward.terms[name], resolve=True) == \
                OmegaConf.to_container(term, resolve=True):
            del reward.terms[name]
    return reward


def compose_run_config(overrides: list[str], with_hydra: bool = False) -> Any:
    """The resolved run config for command-line ``overrides``; a clear ``ValueError`` otherwise.
    ``with_hydra``: keep hydra's own node (``cfg.hydra``: the sweeper, its search space, output dirs)."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    register_configs()
    overrides = normalise_overrides(list(overrides))
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        try:
            return with_league_reward(compose("config", overrides=overrides, return_hydra_config=with_hydra))
        except (HydraException, OmegaConfBaseException) as exc:
            groups = [o for o in overrides if o.lstrip("+").split("=", 1)[0] in GROUPS]
            try:
                base = compose("config", overrides=groups)
            except (HydraException, OmegaConfBaseException):
                base = None
            hint = _explain(overrides, base) if base is not None else _explain_choice(overrides)
            cause = f" ({exc.__cause__})" if exc.__cause__ is not None else ""
            raise ValueError(hint or f"{exc}{cause}".strip()) from exc
