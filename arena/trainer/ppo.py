"""The PPO+LSTM trainer, in PuffeRL's shape: ``evaluate()`` collects, ``train()`` learns,
``mean_and_log()`` reports.

```python
config = TrainerConfig(num_envs=1024)
env = trainer_env(config, "midrange")  # or any arena.make(...) env of config.num_envs matches
trainer = PPOTrainer(config, env=env, matchmaker=FixedMix("mirror"))
while not trainer.done:
    trainer.evaluate()
    trainer.train()
    metrics = trainer.mean_and_log()
trainer.save()
```

Determinism: the policy is initialised from ``seed``; actions are drawn from the trainer's own torch
generator, minibatches shuffled and env reset seeds drawn from its own numpy generators. With the
same config on CPU (same ``torch_threads``), two runs compute the same losses.

Checkpoints are episode boundaries: after ``save`` (and after ``load``) the next rollout starts fresh
matches seeded from the env seed stream, with zero LSTM states. The env's in-flight matches are not
part of a checkpoint, so this is what lets a resumed run continue exactly like the run that wrote the
file. The matches cut short count as truncations: the rollout already bootstrapped their last step.
The exception is a checkpoint by wall time (``checkpoint_minutes``): it lands at whichever update the
clock says, so it leaves the matches in flight alone (a run is the same on a fast machine and a slow
one) and the file carries them: every env's state (``VectorEnv.env_state``), every row's LSTM state
and running sums, the opponents' LSTM states. A resume from it continues those very matches.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import math
import random
import time
import warnings
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

import arena
from arena.agents.policy import Policy, load_policy
from arena.atomic import sha256_file
from arena.envs.vector import VectorEnv
from arena.games import DEFAULT_GAME, spec
from arena.player_specs import MIRROR, parse_player
from arena.trainer.advantage import compute_gae
from arena.trainer.checkpoint import CHECKPOINT_FORMAT, CHECKPOINT_VERSION, CheckpointError, atomic_save
from arena.trainer.checkpoint import load_checkpoint as read_checkpoint
from arena.trainer.config import PolicyConfig, TrainerConfig, config_from_dict
from arena.trainer.distributed import Collective, Shard
from arena.trainer.events import Matchmaker, UpdateFinished, UpdateListener
from arena.trainer.experience import Experience, Minibatch
from arena.trainer.kickstart import Kickstart, KickstartSchedule
from arena.trainer.opponents import FixedMix, Opponents, opponent_value_classes
from arena.trainer.rollout import RewardFn, Rollout
from arena.trainer.shared_matchmaker import SharedMatchmaker
from arena.trainer.stats import RolloutStats
from arena.trainer.telemetry.metric_names import sb3_metrics
from arena.trainer.value_heads import adapt_checkpoint, file_value_classes, same_but_heads

logger = logging.getLogger(__name__)

CHECKPOINT_NAME = "trainer.pt"
# What a resume may change in the checkpoint's config: how long to train, and where and how often to
# checkpoint (``PPOTrainer.resume``'s ``config_overrides``).
RESUME_OVERRIDES = ("total_timesteps", "checkpoint_dir", "checkpoint_interval", "checkpoint_minutes")
LOSS_KEYS = ("policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac", "loss")


def trainer_env(
    config: TrainerConfig,
    game: str = DEFAULT_GAME,
    *,
    team_sizes: tuple[int, int] = (1, 1),
    env_overrides: Mapping[str, Any] | None = None,
    num_envs: int | None = None,
    device: str = "cpu",
) -> VectorEnv:
    """The env a trainer with ``config`` steps: ``num_envs`` (default ``config.num_envs``) matches of
    ``game`` on ``config``'s threads, seeded with its seed, on ``device`` (``env.device``)."""
    try:
        return arena.make(game, num_envs=config.num_envs if num_envs is None else num_envs,
                          num_threads=config.resolved_num_threads, seed=config.seed,
                          team_sizes=tuple(team_sizes), device=device, **dict(env_overrides or {}))
    except RuntimeError as exc:  # env.device=cuda where it cannot run: the core names why
        raise ValueError(f"env.device={device}: {exc}") from exc


class PPOTrainer:
    """PPO with an LSTM policy on team 0 of every env (and team 1 in mirror self-play).

    The trainer receives its env (``env``: a ``VectorEnv`` of the rank's share of ``config.num_envs``
    matches, e.g. from ``trainer_env``; the command line builds it so) or, given none, builds one from
    ``game``, ``team_sizes``, ``env_overrides`` and ``env_device`` (as ``resume`` does from a
    checkpoint). It builds its policy (``policy_config``). ``reward_fn(StepBatch) -> (total, terms)``
    shapes the training reward (None: the core's outcome reward, +1/-1 at a win/loss);
    ``matchmaker(MatchesEnded) -> player ids`` (``arena.trainer.opponents``) hears which matches
    ended (envs, outcomes, lengths, learner step) and picks team 1's player of each of those envs
    (None: mirror self-play everywhere).

    ``collective``: a data-parallel run's process group (``arena.trainer.distributed``): this trainer
    is one rank, stepping its share of ``config.num_envs`` (the run's total); its updates, metrics and
    checkpoints are the run's. Rank 0's ``matchmaker`` decides for every rank.
    """

    def __init__(
        self,
        config: TrainerConfig,
        policy_config: PolicyConfig | None = None,
        *,
        env: VectorEnv | None = None,
        game: str = DEFAULT_GAME,
        team_sizes: tuple[int, int] = (1, 1),
        env_overrides: Mapping[str, Any] | None = None,
        reward_fn: RewardFn | None = None,
        matchmaker: Matchmaker | None = None,
        collective: Collective | None = None,
        env_device: str = "cpu",
    ) -> None:
        self.config = dataclasses.replace(config).validate()
        self.policy_config = dataclasses.replace(policy_config or PolicyConfig()).validate()
        cfg = self.config
        if cfg.device == "cuda" and not torch.cuda.is_available():
            raise ValueError("trainer.device='cuda' was asked for, but torch sees no usable GPU; use "
                             "trainer.device=cpu")
        self.device = torch.device(cfg.device)
        torch.set_num_threads(cfg.resolved_torch_threads)
        self.collective = collective if collective is not None and collective.world > 1 else None
        self.shard = self.collective.shard(cfg.num_envs) if self.collective else Shard.of(0, 1, cfg.num_envs)
        if env is None:
            env = trainer_env(cfg, game, team_sizes=team_sizes, env_overrides=env_overrides,
                              num_envs=self.shard.num_envs, device=env_device)
        elif env.num_envs != self.shard.num_envs:
            raise ValueError(f"the env has {env.num_envs} matches, the trainer steps {self.shard.num_envs} "
                             f"(trainer.num_envs={cfg.num_envs}"
                             + (f" over {self.collective.world} ranks)" if self.collective else ")"))
        game, team_sizes = env.game, tuple(env.team_sizes)
        defaults = spec(game).params
        self.env_spec = {"game": game, "team_sizes": list(team_sizes),
                         "overrides": {k: v for k, v in env.params.items() if v != defaults[k].default}}
        given_matchmaker = matchmaker
        if self.collective is not None and not self.collective.from_main(_mirror_only(matchmaker)):
            matchmaker = self._shared(matchmaker)  # rank 0's matchmaker decides for every rank
        self.env = env
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(cfg.seed)
            mask = spec(game).action_mask
            architecture = dataclasses.asdict(self.policy_config)
            value_classes = opponent_value_classes(game) if architecture.pop("critic_per_opponent") else None
            self.value_classes = value_classes  # the critic's head per opponent class, in order (or None)
            self.policy = Policy(
                self.env.obs_dim, list(self.env.action_space.nvec), **architecture,
                action_mask=None if mask is None else mask(self.env.params, self.env.team_sizes),
                value_heads=len(value_classes) if value_classes else 1,
            ).to(self.device)
        self.optimizer = torch.optim.Adam(self.policy.parameters(), lr=cfg.learning_rate, eps=cfg.adam_eps)
        self.generator = torch.Generator(device=self.device).manual_seed(cfg.seed)
        self.shuffle_rng = np.random.default_rng([cfg.seed, 1])
        self.env_seed_rng = np.random.default_rng([cfg.seed, 2])
        self.reward_fn = reward_fn
        self.opponents = Opponents(
            num_envs=self.shard.num_envs, team_sizes=tuple(team_sizes), game=game, matchmaker=matchmaker,
            device=self.device, seed=cfg.seed, params=self.env.params,
            learner_step=lambda: int(getattr(self, "global_step", 0)), value_classes=value_classes,
        )
        self.opponents.start()
        self.experience = Experience(
            self.env.num_agents, cfg.rollout_steps, cfg.bptt_horizon, self.env.obs_dim,
            len(self.env.action_space.nvec), self.policy.lstm_size, self.device,
            team_of_slot=self.env.team_of_row[: self.env.agents_per_env] if self.policy.team_critic else None,
        )
        self._step_fn = torch.compile(self.policy.forward_step) if cfg.compile else self.policy.forward_step
        self._sequence_fn = (
            torch.compile(self.policy.forward_sequence) if cfg.compile else self.policy.forward_sequence
        )
        if self.collective is not None:  # the update's forward goes through DDP: its backward averages
            from torch.nn.parallel import DistributedDataParallel

            with warnings.catch_warnings():  # its replacement (torch >= 2.13) is not in older versions
                warnings.filterwarnings("ignore", message=".*broadcast_buffers.*", category=FutureWarning)
                # over the collective's own group where it has one (the main learner's ranks when
                # exploiters train on ranks of their own), else the whole run
                self._sequence_fn = DistributedDataParallel(
                    _SequenceModule(self.policy), broadcast_buffers=False,
                    process_group=getattr(self.collective, "group", None))
        self._pending_restore: dict[str, Tensor] | None = None  # rank 0's restore, for the other ranks
        # the magnet (TrainerConfig.magnet_coef): a frozen copy of the policy the loss pulls toward
        self.magnet: Policy | None = None
        if cfg.magnet_coef > 0.0:
            self.magnet = copy.deepcopy(self.policy).eval().requires_grad_(False)
        self.kickstart: Kickstart | None = None
        self.kickstart_paused = False  # pause_kickstart: the teacher's weight is 0 while True
        if cfg.kickstart_teacher is not None:
            self.kickstart = Kickstart(
                KickstartSchedule(cfg.kickstart_teacher, cfg.kickstart_coef, cfg.kickstart_steps,
                                  cfg.kickstart_coef_end),
                game, self.env.team_sizes, self.env.params, seed=cfg.seed,
            )
        self.stats = RolloutStats()
        overlap = cfg.overlap
        if overlap == "auto":  # every rank decides as rank 0 does: they must step their halves alike
            frozen = _may_play_frozen_policies(given_matchmaker)
            if self.collective is not None:
                frozen = bool(self.collective.from_main(frozen))
            overlap = not (frozen and self.device.type == "cpu")
        self.rollout = Rollout(
            self.env, self.policy, self.opponents, self.experience, self.stats, overlap=bool(overlap),
            reward_fn=reward_fn, generator=self.generator, step_fn=self._step_fn, device=self.device,
            bootstrap_truncation=cfg.bootstrap_truncation, env_offset=self.shard.env_offset,
            total_envs=self.shard.total_envs,
        )
        self.global_step = 0  # learner samples collected
        self.update = 0  # PPO updates done (train() calls)
        self._steps_before_batch = 0
        self._last_checkpoint_step = 0
        self._last_checkpoint_time = time.monotonic()
        self.checkpoints_written = 0  # tags the league's matches (see arena.league.model.store's rollback)
        self._restart_pending = True
        self._losses: dict[str, float] = {}
        self._log_time, self._log_step = time.perf_counter(), 0
        self._update_listeners: list[UpdateListener] = []

    def _shared(self, matchmaker: Matchmaker | None) -> Matchmaker:
        assert self.collective is not None
        inner = matchmaker if matchmaker is not None else FixedMix(MIRROR)
        return SharedMatchmaker(self.collective, self.shard, inner if self.shard.is_main else None)

    def set_matchmaker(self, matchmaker: Matchmaker) -> None:
        """Replaces the matchmaker (for the envs' next matches). In a data-parallel run every rank
        calls it at the same update and rank 0's ``matchmaker`` decides for every rank."""
        current = self.opponents.matchmaker
        if self.collective is None:
            self.opponents.matchmaker = matchmaker
        elif hasattr(current, "inner"):
            current.inner = matchmaker if self.shard.is_main else None  # type: ignore[attr-defined]
        else:
            shared = self._shared(matchmaker)
            shared.bind(self.opponents)  # type: ignore[attr-defined]
            self.opponents.matchmaker = shared

    def add_update_listener(self, listener: UpdateListener) -> None:
        """``listener(UpdateFinished)`` is called at the end of every ``mean_and_log``, in the order
        added; the metrics it returns join the update's (``arena.trainer.events``)."""
        self._update_listeners.append(listener)

    def start_from(self, path: str | Path, what: str = "init") -> str:
        """Starts the learner from the weights in the policy file ``path`` (a trainer checkpoint or a
        snapshot of this learner's architecture) instead of fresh ones: ``trainer.init`` of
        ``python -m arena.train``, ``--init`` of ``arena.bench exploit``. Only before the first update
        (the optimizer holds nothing yet); a magnet, where there is one, starts as the same weights.
        In a data-parallel run every rank calls it with the same file. Returns the file's sha256.
        ``FileNotFoundError`` or ``ValueError`` naming ``what`` and the path for a missing file, one that
        is not a policy file, or one of another architecture (both named)."""
        if self.update or self.global_step:
            raise RuntimeError(f"{what}={path}: a learner starts from a file before it learns; this one "
                               f"has made {self.global_step} samples")
        try:
            source = load_policy(path)
        except (FileNotFoundError, ValueError) as exc:
            raise type(exc)(f"{what}={path}: {exc}") from None
        if source.spec != self.policy.spec:
            raise ValueError(f"{what}={path} holds a policy of another architecture than this learner's: "
                             f"{source.spec} against {self.policy.spec}")
        weights = source.state_dict()
        with torch.no_grad():
            self.policy.load_state_dict(weights)
            if self.magnet is not None:
                self.magnet.load_state_dict(weights)
        return sha256_file(path)

    def restore_policy(self, weights: Mapping[str, Tensor]) -> None:
        """Replaces the learner's weights (a ``Policy.state_dict`` of the same architecture) and
        clears the optimizer's moments, which belong to the weights left behind. The league's guard
        restores a learner from its best snapshot this way. In a data-parallel run rank 0 calls it
        (the league lives there) and every other rank takes the same weights at the start of the
        next ``evaluate`` (``_sync_restore``), before any of them steps or learns again."""
        self._apply_restore(weights)
        if self.collective is not None:
            self._pending_restore = {k: v.detach().cpu().clone() for k, v in weights.items()}

    def pause_kickstart(self, paused: bool = True) -> None:
        """Turns the kickstarting teacher's loss off (``paused``) or back on at its schedule's weight
        for the step; nothing without a teacher. Not saved in the checkpoint: whoever pauses it (the
        league's answer, ``arena.league.run.answer``) pauses it again on resume."""
        self.kickstart_paused = bool(paused)

    def _apply_restore(self, weights: Mapping[str, Tensor]) -> None:
        with torch.no_grad():
            self.policy.load_state_dict(dict(weights))
        self.optimizer.state.clear()

    def _sync_restore(self) -> None:
        """Data-parallel: rank 0's restore since the last update (or None) reaches every rank."""
        restore = self.collective.from_main(self._pending_restore if self.shard.is_main else None)
        self._pending_restore = None
        if restore is not None and not self.shard.is_main:
            self._apply_restore(restore)

    # ------------------------------------------------------------------ the loop

    @property
    def done(self) -> bool:
        return self.global_step >= self.config.total_timesteps

    @property
    def learning_rate(self) -> float:
        cfg = self.config
        if not cfg.anneal_lr:
            return cfg.learning_rate
        left = max(0.0, 1.0 - self._steps_before_batch / cfg.total_timesteps)
        return cfg.learning_rate * left**cfg.lr_anneal_power

    @property
    def ent_coef(self) -> float:
        """The entropy bonus now: ``ent_coef``, or on its way to ``ent_coef_end`` with the run's progress."""
        cfg = self.config
        if cfg.ent_coef_end is None:
            return cfg.ent_coef
        progress = min(1.0, self._steps_before_batch / cfg.total_timesteps)
        return cfg.ent_coef + (cfg.ent_coef_end - cfg.ent_coef) * progress

    def evaluate(self) -> int:
        """Collects one rollout of ``rollout_steps`` steps per row; returns the learner samples."""
        if self.collective is not None:
            self._sync_restore()
        if self._restart_pending:
            self.rollout.restart(int(self.env_seed_rng.integers(0, 2**63)))
            self._restart_pending = False
        self._steps_before_batch = self.global_step
        if callable(getattr(self.reward_fn, "set_step", None)):
            self.reward_fn.set_step(self.global_step)  # scheduled reward weights
        self.rollout.collect()
        samples = self.experience.learner_samples()
        if self.collective is not None:
            samples = int(self.collective.sum(torch.tensor([samples], dtype=torch.int64)).item())
        self.global_step += samples
        return samples

    def train(self) -> dict[str, float]:
        """PPO epochs over the last rollout; returns the update's mean losses."""
        t0 = time.perf_counter()
        cfg, exp = self.config, self.experience
        lr = self.learning_rate
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        with torch.no_grad():
            terminals, truncations = exp.terminals, exp.truncations
            if not cfg.bootstrap_truncation:  # the time limit is part of the game: its end is terminal
                terminals, truncations = terminals | truncations, torch.zeros_like(truncations)
            advantages = compute_gae(  # the buffer is step-major; GAE takes [rows, T]
                exp.rewards.t(), exp.values.t(), terminals.t(), truncations.t(),
                exp.final_values.t(), exp.next_value, cfg.gamma, cfg.gae_lambda,
                exp.learner_mask.t(), exp.next_mask,
            ).t().contiguous()
            returns = advantages + exp.values
        kick_coef = (self.kickstart.coef_at(self._steps_before_batch)
                     if self.kickstart and not self.kickstart_paused else 0.0)
        teacher = self.kickstart.labels(exp.obs, self.update) if self.kickstart and kick_coef > 0.0 else None
        segments, rows_of_shard = exp.learner_segments(), None
        if self.collective is not None:  # the run's segments: every rank cuts the same minibatches
            segments = exp.learner_segments(self.collective.cat(exp.segment_has_learner(), dim=1))
            rows_of_shard = (self.rollout.row_offset, self.rollout.total_rows)
        sums: dict[str, float] = defaultdict(float)
        minibatches = 0
        replay_error = float("nan")
        if len(segments) == 0:
            logger.warning("the rollout holds no learner step; skipping the update")
        self.policy.train()
        per_minibatch = max(1, cfg.minibatch_size // cfg.bptt_horizon)
        for _ in range(cfg.update_epochs):
            for mb in exp.minibatches(advantages, returns, segments, per_minibatch, self.shuffle_rng,
                                      teacher_actions=teacher, shard_rows=rows_of_shard):
                losses, error = self._update(mb, measure_replay=minibatches == 0, kickstart_coef=kick_coef)
                if minibatches == 0:
                    replay_error = error
                for key, value in losses.items():
                    sums[key] += value
                minibatches += 1
        self.update += 1
        if self.magnet is not None and cfg.magnet_every and self.update % cfg.magnet_every == 0:
            with torch.no_grad():
                self.magnet.load_state_dict(self.policy.state_dict())
        out = {key: value / max(1, minibatches) for key, value in sums.items()}
        out["explained_variance"] = _explained_variance(exp.values, returns, exp.learner_mask,
                                                        self.collective)
        out["learning_rate"] = lr
        if cfg.ent_coef_end is not None:
            out["ent_coef"] = self.ent_coef
        # the learner's steps with no decision (a shot-down fighter's rows), left out of the policy's loss
        decides = self.policy.has_decision(exp.obs)[exp.learner_mask]
        out["no_decision_fraction"] = 1.0 - float(decides.float().mean()) if decides.numel() else 0.0
        if self.kickstart is not None:
            out["kickstart_coef"] = kick_coef
        out["replay_logprob_error"] = replay_error
        self._losses = out
        self.stats.add_time("learn", time.perf_counter() - t0)
        due = self.checkpoint_due()
        if self.collective is not None:
            due = self.collective.from_main(due)  # rank 0's clock decides for every rank
        if due is not None:
            # A checkpoint by samples lands at the same update in every run and restarts the matches;
            # one by wall time lands wherever the clock says, so it leaves the matches alone (the run
            # is the same whatever the machine's speed) and carries them in the file instead.
            self.save(restart=due == "samples")
        return dict(out)

    def _update(
        self, mb: Minibatch, measure_replay: bool, kickstart_coef: float = 0.0
    ) -> tuple[dict[str, float], float]:
        cfg, group = self.config, self.collective
        logits, values = self._sequence_fn(mb.obs, mb.state, mb.episode_starts, mb.value_class, mb.team)
        new_logprobs, entropy = self.policy.log_prob_and_entropy(logits, mb.actions)
        weight = mb.learner_mask.to(values.dtype)
        # The policy's terms (its loss, the entropy bonus, kickstarting, the advantages' statistics)
        # count only the learner's steps with a decision to make: a shot-down fighter's zeroed rows in
        # a team match (no legal action) would add gradient noise and pull the heads toward uniform on
        # an action the game ignores. The critic still learns their values, which GAE reads to pass the
        # team's outcome back to the fighter's live steps.
        acting = weight * self.policy.has_decision(mb.obs).to(values.dtype)
        # Means over the minibatch's learner steps on every rank: each rank's masked_mean is its share
        # of the run's mean (its sum over the run's count), and the ranks' shares add up.
        counts = torch.stack([weight.sum(), acting.sum()])
        count, acting_count = (counts if group is None else group.sum(counts)).clamp_min(1.0)

        def masked_mean(x: Tensor, w: Tensor = acting, n: Tensor = acting_count) -> Tensor:
            return (x * w).sum() / n

        def run_mean(x: Tensor) -> Tensor:  # no gradient: a statistic of the whole minibatch
            share = masked_mean(x.detach())
            return share if group is None else group.sum(share)

        log_ratio = new_logprobs - mb.logprobs
        ratio = log_ratio.exp()
        advantages = mb.advantages
        if cfg.norm_adv:
            mean = run_mean(advantages)
            std = run_mean((advantages - mean) ** 2).sqrt()
            advantages = (advantages - mean) / (std + 1e-8)
        clipped_ratio = ratio.clamp(1.0 - cfg.clip_coef, 1.0 + cfg.clip_coef)
        policy_loss = masked_mean(torch.max(-advantages * ratio, -advantages * clipped_ratio))
        value_error = (values - mb.returns) ** 2
        if cfg.vf_clip_coef > 0:
            clipped = mb.values + (values - mb.values).clamp(-cfg.vf_clip_coef, cfg.vf_clip_coef)
            value_error = torch.max(value_error, (clipped - mb.returns) ** 2)
        value_loss = 0.5 * masked_mean(value_error, weight, count)
        entropy_mean = masked_mean(entropy)
        loss = policy_loss - self.ent_coef * entropy_mean + cfg.vf_coef * value_loss
        magnet_kl = None
        if self.magnet is not None:
            with torch.no_grad():
                magnet_logits, _ = self.magnet.forward_sequence(mb.obs, mb.state, mb.episode_starts)
                magnet_logp = self.magnet.heads.log_softmax(Policy._flat(magnet_logits))
            logp = self.policy.heads.log_softmax(Policy._flat(logits))
            magnet_kl = masked_mean((logp.exp() * (logp - magnet_logp)).sum(dim=(-2, -1)))
            loss = loss + cfg.magnet_coef * magnet_kl
        kick_loss = None
        if mb.teacher_actions is not None and kickstart_coef > 0.0:
            kick_loss = masked_mean(-self.policy.log_prob(logits, mb.teacher_actions))
            loss = loss + kickstart_coef * kick_loss

        self.optimizer.zero_grad(set_to_none=True)
        # DDP averages the ranks' gradients; the ranks' shares of the loss add up to the run's loss.
        (loss if group is None else loss * group.world).backward()
        torch.nn.utils.clip_grad_norm_(self.policy.parameters(), cfg.max_grad_norm)
        self.optimizer.step()

        with torch.no_grad():
            approx_kl = masked_mean((ratio - 1.0) - log_ratio)
            clipfrac = masked_mean(((ratio - 1.0).abs() > cfg.clip_coef).to(values.dtype))
            error_t = (log_ratio.abs() * acting).max() if measure_replay else None
            values_t = [policy_loss, value_loss, entropy_mean, approx_kl, clipfrac, loss]
            if kick_loss is not None:
                values_t.append(kick_loss)
            if magnet_kl is not None:
                values_t.append(magnet_kl)
            stacked = torch.stack([v.detach() for v in values_t])
            if group is not None:
                stacked = group.sum(stacked)
                if error_t is not None:
                    error_t = group.max(error_t)
        stats = stacked.tolist()
        out = dict(zip(LOSS_KEYS, stats[: len(LOSS_KEYS)], strict=True))
        extra = stats[len(LOSS_KEYS):]
        if kick_loss is not None:
            out["kickstart_loss"] = extra.pop(0)
        if magnet_kl is not None:
            out["magnet_kl"] = extra.pop(0)
        return out, float(error_t) if error_t is not None else float("nan")

    def mean_and_log(self) -> dict[str, float]:
        """Metrics since the previous call: SPS, episodes, outcomes per opponent, losses, time split; and
        the Stable-Baselines3 names of these (``train/approx_kl``, ``rollout/ep_rew_mean``, ``time/fps``,
        ... see ``arena.trainer.telemetry.metric_names``). Then the update is over: its
        ``UpdateFinished`` goes to the update listeners, whose metrics join these."""
        now = time.perf_counter()
        elapsed = max(now - self._log_time, 1e-9)
        metrics: dict[str, float] = {
            "SPS": (self.global_step - self._log_step) / elapsed,
            "global_step": float(self.global_step),
            "update": float(self.update),
        }
        if self.collective is not None:  # the run's episodes and outcomes, every rank's
            self.stats.merge(self.collective.all_objects(self.stats.to_state()))
        metrics.update(self.stats.summary())
        busy = sum(metrics.get(f"time/{part}", 0.0) for part in ("sim", "inference", "learn"))
        metrics["time/other"] = max(0.0, elapsed - busy)
        metrics.update(self._losses)
        metrics.setdefault("learning_rate", self.learning_rate)
        metrics.update(sb3_metrics(metrics))
        self._losses = {}
        self._log_time, self._log_step = now, self.global_step
        if self._update_listeners:
            event = UpdateFinished(self.global_step, self.update, self.checkpoints_written, self.policy,
                                   dict(metrics))
            for listener in self._update_listeners:
                metrics.update(listener(event))
        return metrics

    # ------------------------------------------------------------------ checkpoints

    def checkpoint_due(self) -> str | None:
        """``"samples"`` when ``checkpoint_interval`` samples have passed since the last checkpoint,
        else ``"minutes"`` when ``checkpoint_minutes`` of wall time have (since the last checkpoint or
        the start of this process), else None."""
        cfg = self.config
        samples = self.global_step - self._last_checkpoint_step
        if cfg.checkpoint_interval > 0 and samples >= cfg.checkpoint_interval:
            return "samples"
        seconds = time.monotonic() - self._last_checkpoint_time
        if cfg.checkpoint_minutes > 0 and seconds >= 60.0 * cfg.checkpoint_minutes:
            return "minutes"
        return None

    def checkpoint_path(self) -> Path:
        return Path(self.config.checkpoint_dir) / CHECKPOINT_NAME

    def state_dict(self) -> dict[str, Any]:
        """Everything a resumed run needs, as tensors and plain types."""
        state: dict[str, Any] = {
            "format": CHECKPOINT_FORMAT,
            "version": CHECKPOINT_VERSION,
            "config": dataclasses.asdict(self.config),
            "policy_config": dataclasses.asdict(self.policy_config),
            "env": dict(self.env_spec),
            "policy_spec": self.policy.spec,
            "value_classes": self.value_classes,
            "policy": {k: v.detach().cpu().clone() for k, v in self.policy.state_dict().items()},
            "optimizer": self.optimizer.state_dict(),
            "rng": {
                "torch": torch.get_rng_state(),
                "sample": self.generator.get_state(),
                "shuffle": self.shuffle_rng.bit_generator.state,
                "env_seed": self.env_seed_rng.bit_generator.state,
                "python": random.getstate(),
            },
            "counters": {
                "global_step": self.global_step,
                "update": self.update,
                "last_checkpoint_step": self._last_checkpoint_step,
                "checkpoints_written": self.checkpoints_written,
            },
            "opponents": self._opponents_state(),
        }
        if callable(getattr(self.reward_fn, "state_dict", None)):
            state["reward_fn"] = self.reward_fn.state_dict()
        if self.magnet is not None:
            state["magnet"] = {k: v.detach().cpu().clone() for k, v in self.magnet.state_dict().items()}
        return state

    def _opponents_state(self) -> dict[str, Any]:
        """The opponents' state; in a data-parallel run, the run's (a collective): every env's player
        in run order, rank 0's matchmaker, and each rank's scripted players' generators."""
        state = self.opponents.state_dict()
        if self.collective is None:
            return state
        every = self.collective.all_objects({"assignment": state["assignment"], "players": state["players"]})
        state["assignment"] = [p for part in every for p in part["assignment"]]
        state["players_by_rank"] = [part["players"] for part in every]
        return state

    def _load_opponents(self, state: Mapping[str, Any]) -> None:
        """Restores ``_opponents_state()`` (of a run on any number of ranks) into this rank."""
        state = dict(state)
        assignment = list(state["assignment"])
        if len(assignment) != self.shard.total_envs:
            raise ValueError(f"the checkpoint assigns opponents to {len(assignment)} envs; this run has "
                             f"trainer.num_envs={self.shard.total_envs}")
        by_rank = state.pop("players_by_rank", None)
        if by_rank is not None and len(by_rank) == self.shard.world:
            state["players"] = by_rank[self.shard.rank]
        elif self.shard.rank > 0 or (by_rank is not None and len(by_rank) != self.shard.world):
            if state.get("players"):
                logger.warning("the checkpoint's scripted players' generators were saved by %s ranks: "
                               "this run of %d starts them afresh", len(by_rank) if by_rank else 1,
                               self.shard.world)
            state["players"] = {}
        restore = getattr(self.opponents.matchmaker, "restore", None)
        if callable(restore):
            restore(assignment)
        first = self.shard.env_offset
        state["assignment"] = assignment[first : first + self.shard.num_envs]
        self.opponents.load_state_dict(state)

    def save(self, path: str | Path | None = None, *, restart: bool = True) -> Path:
        """Writes a checkpoint atomically (default ``checkpoint_dir/trainer.pt``). With ``restart`` the
        next rollout starts fresh matches, as a resumed run does; without, the matches in flight go
        on, and the file holds them (every env's state, every row's LSTM state and running sums) so
        that a resumed run continues them too. Either way the two continue alike.

        In a data-parallel run every rank calls it (it gathers the run's state) and rank 0 writes; the
        matches always restart (a rank's matches in flight are not gathered)."""
        restart = restart or self.collective is not None
        self._last_checkpoint_step = self.global_step
        self._last_checkpoint_time = time.monotonic()
        state = self.state_dict()
        if not restart and not self._restart_pending:
            state["inflight"] = self.rollout.inflight_state()
        state["counters"]["checkpoints_written"] = self.checkpoints_written + 1  # this one included
        target = Path(path if path is not None else self.checkpoint_path())
        written = atomic_save(state, target) if self.shard.is_main else target
        if self.collective is not None:
            self.collective.barrier()  # the file exists for every rank once save returns
        self.checkpoints_written += 1
        self._restart_pending = self._restart_pending or restart
        logger.info("checkpoint written: %s (step %d, update %d)", written, self.global_step, self.update)
        return written

    def load(self, path: str | Path) -> None:
        """Restores a checkpoint written by a trainer of the same architecture."""
        self._load_payload(read_checkpoint(path, map_location=self.device), str(path))

    def _load_payload(self, payload: dict[str, Any], source: str) -> None:
        file_spec = {"value_heads": 1, **payload["policy_spec"]}  # older files: one head
        old = None if self.value_classes is None else file_value_classes(payload, self.value_classes)
        if self.value_classes is not None and old is not None and old != self.value_classes and (
                same_but_heads(file_spec, self.policy.spec)):
            # the game's bots changed since the file was written: its heads move by class
            try:
                payload = adapt_checkpoint(payload, old, self.value_classes, self.policy.state_dict(),
                                           [name for name, _ in self.policy.named_parameters()])
            except (KeyError, TypeError, ValueError, RuntimeError, IndexError) as exc:
                raise CheckpointError(f"checkpoint {source}: its critic's heads ({old}) do not move to "
                                      f"this trainer's classes: {exc!r}") from exc
            file_spec = {"value_heads": 1, **payload["policy_spec"]}
        if file_spec != self.policy.spec:
            raise CheckpointError(
                f"checkpoint {source} holds a policy {payload['policy_spec']}, "
                f"this trainer's is {self.policy.spec}"
            )
        try:
            self.policy.load_state_dict(payload["policy"])
            self.optimizer.load_state_dict(payload["optimizer"])
            rng = payload["rng"]
            torch.set_rng_state(rng["torch"].cpu())
            self.generator.set_state(rng["sample"].cpu())
            self.shuffle_rng.bit_generator.state = dict(rng["shuffle"])
            self.env_seed_rng.bit_generator.state = dict(rng["env_seed"])
            random.setstate(rng["python"])
            counters = payload["counters"]
            self.global_step, self.update = int(counters["global_step"]), int(counters["update"])
            self._last_checkpoint_step = int(counters["last_checkpoint_step"])
            self.checkpoints_written = int(counters.get("checkpoints_written", 1))
            if "opponents" in payload:
                self._load_opponents(payload["opponents"])
            if self.magnet is not None:  # a file without one: the magnet is the policy it holds
                self.magnet.load_state_dict(payload.get("magnet", payload["policy"]))
            if "reward_fn" in payload and callable(getattr(self.reward_fn, "load_state_dict", None)):
                self.reward_fn.load_state_dict(payload["reward_fn"])
            inflight = "inflight" in payload and self.collective is None
            if inflight:
                self.rollout.load_inflight_state(payload["inflight"])
            elif "inflight" in payload:
                logger.warning("checkpoint %s holds one process's matches in flight: this data-parallel "
                               "run starts fresh matches", source)
        except (KeyError, TypeError, ValueError, RuntimeError) as exc:
            raise CheckpointError(f"checkpoint {source} does not load into this trainer: {exc!r}") from exc
        self._steps_before_batch = self.global_step
        self._log_step = self.global_step
        self._restart_pending = not inflight

    @classmethod
    def resume(
        cls,
        path: str | Path,
        *,
        reward_fn: RewardFn | None = None,
        matchmaker: Matchmaker | None = None,
        config_overrides: Mapping[str, Any] | None = None,
        collective: Collective | None = None,
        env_device: str = "cpu",
    ) -> PPOTrainer:
        """A trainer rebuilt from a checkpoint's config and env, with every state restored."""
        payload = read_checkpoint(path)
        try:
            values = {**payload["config"], **dict(config_overrides or {})}
            config = config_from_dict(TrainerConfig, values)
            policy_config = config_from_dict(PolicyConfig, payload["policy_config"])
            env = payload["env"]
        except (KeyError, TypeError) as exc:
            raise CheckpointError(f"checkpoint {path} has no usable config: {exc!r}") from exc
        trainer = cls(
            config, policy_config, game=env["game"], team_sizes=tuple(env["team_sizes"]),
            env_overrides=env["overrides"], reward_fn=reward_fn, matchmaker=matchmaker, collective=collective,
            env_device=env_device,
        )
        if trainer.device.type != "cpu":
            payload = read_checkpoint(path, map_location=trainer.device)
        trainer._load_payload(payload, str(path))
        return trainer

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        self.rollout.close()
        self.env.close()

    def __enter__(self) -> PPOTrainer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _SequenceModule(torch.nn.Module):
    """The policy's sequence pass as a module's ``forward``, for ``DistributedDataParallel``."""

    def __init__(self, policy: Policy) -> None:
        super().__init__()
        self.policy = policy

    def forward(
        self, obs: Tensor, state: tuple[Tensor, Tensor], starts: Tensor, value_class: Tensor | None = None,
        team: Tensor | None = None,
    ) -> tuple[list[Tensor], Tensor]:
        return self.policy.forward_sequence(obs, state, starts, value_class, team)


def _may_play_frozen_policies(matchmaker: Matchmaker | None) -> bool:
    """Whether ``matchmaker`` may hand out frozen policies: anything but a ``FixedMix`` of the learner
    itself and scripted bots (a league's matchmaker, a mix with checkpoints, one it cannot tell)."""
    if matchmaker is None:
        return False
    if isinstance(matchmaker, FixedMix):
        return any(parse_player(p).kind not in ("mirror", "scripted") for p in matchmaker.player_ids)
    return True


def _mirror_only(matchmaker: Matchmaker | None) -> bool:
    """A matchmaker that can only answer ``mirror`` (no rank needs to hear from another)."""
    return matchmaker is None or (isinstance(matchmaker, FixedMix) and matchmaker.player_ids == [MIRROR])


def _explained_variance(
    values: Tensor, returns: Tensor, mask: Tensor, group: Collective | None = None
) -> float:
    """1 - Var(returns - values) / Var(returns) over the learner's steps (NaN if returns are constant);
    with ``group``, over every rank's."""
    y, pred = returns[mask], values[mask]
    if group is not None:
        y64, d64 = y.double(), (y - pred).double()
        n, sy, syy, sd, sdd = group.sum(torch.stack([
            torch.tensor(float(y.numel()), dtype=torch.float64), y64.sum(), (y64 * y64).sum(), d64.sum(),
            (d64 * d64).sum()])).tolist()
        if n < 2:
            return float("nan")
        var_y, var_d = syy - sy * sy / n, sdd - sd * sd / n
        return float("nan") if var_y <= 0.0 else 1.0 - var_d / var_y
    if y.numel() < 2:
        return float("nan")
    var_y = float(y.var())
    if var_y == 0.0 or math.isnan(var_y):
        return float("nan")
    return 1.0 - float((y - pred).var()) / var_y
