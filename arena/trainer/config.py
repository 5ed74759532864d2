"""Every hyperparameter of the trainer and the policy, as flat typed dataclasses (hydra mirrors them)."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any

from arena.player_specs import SCRIPTED_PREFIX


def available_cores() -> int:
    """This process's share of the machine's cores: all of them, or an equal share of them for each
    of the ranks torchrun started on this machine (``LOCAL_WORLD_SIZE``)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    ranks = max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
    return max(1, cores // ranks)


@dataclass
class PolicyConfig:
    """Sizes of the learner's network (see ``arena.agents.policy.Policy``)."""

    hidden_size: int = 128
    lstm_size: int = 128
    encoder_layers: int = 1
    # Per action head, the probabilities a fresh policy acts with (None: uniform). The game presets
    # set it: midrange fires rarely at first, so a fresh policy keeps missiles for closer range.
    action_prior: list[list[float]] | None = None
    # One critic value per class of opponent (mirror, frozen policies, each scripted bot of the game):
    # the trainer tells the critic whom each match is against, which the actor never sees
    # (``Policy._value``). False: one value for every opponent.
    critic_per_opponent: bool = False
    # A team critic (MAPPO's centralised value): each fighter's value also reads its living teammates'
    # LSTM features; the actor still sees only its own row (``Policy._team_context``). Team games only
    # change: a one-fighter team's value is the plain critic's.
    team_critic: bool = False

    def validate(self) -> PolicyConfig:
        for name in ("hidden_size", "lstm_size", "encoder_layers"):
            _require_int(self, name, low=1)
        return self


@dataclass
class TrainerConfig:
    """PPO+LSTM hyperparameters. Step counts are agent steps of learner rows (samples)."""

    num_envs: int = 1024  # the run's total: under torchrun each rank steps num_envs / ranks
    num_threads: int | None = None  # simulator threads; None: every core (a rank: its share)
    torch_threads: int | None = None  # torch intra-op threads; None: every core (a rank: its share)
    seed: int = 0
    device: str = "cpu"  # "cpu" or "cuda": where the policy runs and learns
    total_timesteps: int = 10_000_000
    bptt_horizon: int = 64  # steps per training segment (LSTM state stored at each start)
    rollout_steps: int = 64  # steps per row per evaluate(); a multiple of bptt_horizon
    minibatch_size: int = 16384  # samples per minibatch; a multiple of bptt_horizon
    update_epochs: int = 1
    learning_rate: float = 3e-4
    anneal_lr: bool = True
    # the annealed rate: learning_rate * (1 - progress) ** lr_anneal_power, progress = samples / total
    # (1: linear, CleanRL's; 2: the rate falls faster and the run spends longer at small steps)
    lr_anneal_power: float = 1.0
    adam_eps: float = 1e-5
    gamma: float = 0.99
    gae_lambda: float = 0.95
    # True: a match cut by the time limit is bootstrapped with the value of its final observation (the
    # limit is outside the game). False: the limit ends the game like any terminal state (right when
    # the observation shows the time left, as midrange's does, and when timeouts are scored).
    bootstrap_truncation: bool = True
    clip_coef: float = 0.2
    vf_coef: float = 0.5
    vf_clip_coef: float = 0.2
    ent_coef: float = 0.01
    # None: the entropy bonus stays ent_coef. A number: the bonus moves linearly from ent_coef to
    # ent_coef_end over total_timesteps, with the learning rate's progress (a high bonus first keeps
    # every action in play; the policy then follows the regularised equilibrium as the bonus falls)
    ent_coef_end: float | None = None
    max_grad_norm: float = 0.5
    norm_adv: bool = True
    compile: bool = False  # torch.compile the policy's step and sequence paths
    # double buffering: simulate half the envs while the policy acts on the other. "auto": on, except
    # where frozen policies can be opponents and the policy runs on the CPU (a league: one piece, so
    # no step is split; docs/architecture.md has the measurements)
    overlap: bool | str = "auto"
    # kickstarting: cross-entropy toward a scripted teacher's actions, weight annealed to kickstart_coef_end
    kickstart_teacher: str | None = None  # e.g. "scripted:heuristic"; None: off
    kickstart_coef: float = 1.0  # weight of the teacher loss at step 0
    kickstart_steps: int = 0  # learner samples over which the weight falls linearly to kickstart_coef_end
    kickstart_coef_end: float = 0.0  # the weight from kickstart_steps on (0: the teacher leaves)
    # The magnet (regularised self-play, as in magnetic mirror descent and R-NaD): the loss adds
    # magnet_coef * KL(policy || magnet) over the learner's decisions, the magnet being a frozen copy
    # of the policy refreshed every magnet_every updates (0: never; it stays the initial, near-uniform
    # policy, a pull toward uniform play). Self-play in a game with mixed equilibria cycles without
    # it; with it the policy settles near a regularised equilibrium, and each refresh moves that
    # equilibrium's centre to where the policy stands. 0 turns it off.
    magnet_coef: float = 0.0
    magnet_every: int = 0
    checkpoint_interval: int = 0  # samples between checkpoints; 0: not by samples
    # wall-clock minutes between checkpoints; 0: not by time (``python -m arena.train`` defaults to 5)
    checkpoint_minutes: float = 0.0
    checkpoint_dir: str = "checkpoints"

    def validate(self) -> TrainerConfig:
        """Checks every field; raises ``ValueError`` naming the field and the allowed values."""
        _require_int(self, "num_envs", low=1)
        _require_int(self, "num_threads", low=1, optional=True)
        _require_int(self, "torch_threads", low=1, optional=True)
        _require_int(self, "seed", low=0)
        if self.device not in ("cpu", "cuda"):
            raise ValueError(f"device={self.device!r} is not allowed: use 'cpu' or 'cuda'")
        _require_int(self, "total_timesteps", low=1)
        _require_int(self, "bptt_horizon", low=1)
        _require_int(self, "rollout_steps", low=1)
        _require_int(self, "minibatch_size", low=1)
        _require_int(self, "update_epochs", low=1)
        _require_int(self, "checkpoint_interval", low=0)
        _require_float(self, "checkpoint_minutes", low=0.0)
        _require_int(self, "kickstart_steps", low=0)
        _require_float(self, "kickstart_coef", low=0.0)
        _require_float(self, "kickstart_coef_end", low=0.0)
        teacher = self.kickstart_teacher
        if teacher is not None and (not isinstance(teacher, str) or not teacher.startswith(SCRIPTED_PREFIX)):
            raise ValueError(
                f"kickstart_teacher={teacher!r} is not allowed: use a scripted bot 'scripted:<name>' or None"
            )
        if teacher is not None and self.kickstart_steps == 0:
            raise ValueError(
                f"kickstart_teacher={teacher!r} needs kickstart_steps > 0 (the steps over which its "
                f"weight falls to kickstart_coef_end)"
            )
        if self.rollout_steps % self.bptt_horizon:
            raise ValueError(
                f"rollout_steps={self.rollout_steps} must be a multiple of bptt_horizon={self.bptt_horizon}"
            )
        if self.minibatch_size % self.bptt_horizon:
            raise ValueError(
                f"minibatch_size={self.minibatch_size} must be a multiple of "
                f"bptt_horizon={self.bptt_horizon} (minibatches are made of whole segments)"
            )
        _require_float(self, "learning_rate", low=0.0, low_open=True)
        _require_float(self, "lr_anneal_power", low=0.0, low_open=True)
        _require_float(self, "adam_eps", low=0.0, low_open=True)
        _require_float(self, "gamma", low=0.0, high=1.0)
        _require_float(self, "gae_lambda", low=0.0, high=1.0)
        _require_float(self, "clip_coef", low=0.0, low_open=True)
        _require_float(self, "vf_coef", low=0.0)
        _require_float(self, "vf_clip_coef", low=0.0)
        _require_float(self, "ent_coef", low=0.0)
        _require_float(self, "ent_coef_end", low=0.0, optional=True)
        _require_float(self, "magnet_coef", low=0.0)
        _require_int(self, "magnet_every", low=0)
        _require_float(self, "max_grad_norm", low=0.0, low_open=True)
        if self.overlap not in (True, False, "auto") or not isinstance(self.overlap, bool | str):
            raise ValueError(f"overlap={self.overlap!r} is not allowed: use true, false or 'auto'")
        for name in ("anneal_lr", "norm_adv", "compile", "bootstrap_truncation"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name}={getattr(self, name)!r} must be true or false")
        if not isinstance(self.checkpoint_dir, str) or not self.checkpoint_dir:
            raise ValueError(f"checkpoint_dir={self.checkpoint_dir!r} must be a non-empty path")
        return self

    @property
    def resolved_torch_threads(self) -> int:
        return self.torch_threads if self.torch_threads is not None else available_cores()

    @property
    def resolved_num_threads(self) -> int:
        return self.num_threads if self.num_threads is not None else available_cores()


def config_from_dict(cls: type[Any], values: dict[str, Any]) -> Any:
    """Builds ``cls`` from a plain dict (a checkpoint's copy), naming unknown keys."""
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - names)
    if unknown:
        raise ValueError(f"unknown {cls.__name__} keys {unknown}; valid keys: {sorted(names)}")
    return cls(**values).validate()


def _require_int(cfg: object, name: str, low: int, optional: bool = False) -> None:
    value = getattr(cfg, name)
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        extra = " or None" if optional else ""
        raise ValueError(f"{name}={value!r} is out of range: allowed an integer >= {low}{extra}")


def _require_float(
    cfg: object, name: str, low: float, high: float | None = None, low_open: bool = False,
    optional: bool = False,
) -> None:
    value = getattr(cfg, name)
    if optional and value is None:
        return
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    ok = ok and (value > low if low_open else value >= low) and (high is None or value <= high)
    if not ok:
        bound = f"> {low}" if low_open else f">= {low}"
        bound += f" and <= {high}" if high is not None else ""
        raise ValueError(f"{name}={value!r} is out of range: allowed a number {bound}"
                         + (" or None" if optional else ""))
