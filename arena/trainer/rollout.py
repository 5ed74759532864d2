"""Experience collection, double-buffered: C++ steps one half of the envs while the policy acts on the other.

One rollout fills ``Experience`` with ``rollout_steps`` steps of every row. With ``overlap`` the envs are
split in two halves; the step of a half runs in a worker thread (``env.step_envs`` releases the GIL)
while the main thread stores the other half's results and computes its next actions. Without it, one
"half" holds every env and steps in the main thread. Both give identical experience.

Step ``t`` of a half: store obs, episode starts and learner mask; the learner acts on its rows (one
batched forward); launch the env step. Where the first half has opponents, they act once a step on
both halves (once the second half is back, before the first is launched): every frozen player in
play reads its weights once a step, not once a half, and the first half is simulated while the
learner acts on the second. When the step is back: store rewards and end flags, bootstrap truncated
learner rows from the final observation's value (with the state before the reset), mark the next
episode starts, report finished matches and let the matchmaker pick the next opponents. A
``reward_fn``, if given, sees every row of a step at once, after both halves.

Random numbers: at each step one generator draws a uniform number per row and action dimension for
every row of the run (``total_rows``; this process's rows are ``[row_offset, row_offset + rows)``),
and the learner and the frozen opponents sample their actions with their rows' numbers. A row's
action therefore does not depend on how the envs are split into halves, or among the ranks of a
data-parallel run (``arena.trainer.distributed``). Envs are seeded by their index in the run.

An env on the GPU (``env.device=cuda``, with the policy there too) is read through ``env.tensors()``:
observations, rewards and flags go from the core's device buffers into the experience without
touching the host, and actions go back with ``env.step_envs_tensor``. What the host needs comes over
in small copies: the finished envs' flags, outcomes and lengths, and the events for the match
statistics; the whole observation only for a numpy ``reward_fn`` or a scripted opponent, through the
env's page-locked mirrors (``sync_host``). The halves are not overlapped there (a GPU step is queued,
not waited for).

The torch side (``torch_side``, on by default with the env on the GPU, selectable on the CPU): a
``reward_fn`` with a torch version (``supports_torch`` and ``torch_call``, as
``arena.rewards.CompositeReward`` whose terms all have one) is computed from the experience's tensors
(``arena.rewards.TorchStepBatch``), and the scripted opponents with a torch version act on the
observation tensor (``ScriptedAgent.act_torch``): neither needs ``sync_host`` or a copy of the
observations to the host. The parts without a torch version keep the numpy path, host copy included;
``host_bound_parts`` names them. Both sides give the same experience (see the torch versions' docs).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import torch
from torch import Tensor

from arena import _core
from arena.agents.policy import Policy
from arena.envs.vector import VectorEnv
from arena.rewards import StepBatch, TorchStepBatch
from arena.trainer.experience import Experience, team_labels
from arena.trainer.opponents import Opponents, RowGroups
from arena.trainer.stats import RolloutStats

logger = logging.getLogger(__name__)

StepFn = Callable[..., tuple[list[Tensor], Tensor, tuple[Tensor, Tensor]]]
# reward_fn(arena.rewards.StepBatch) -> (total [rows] float32, {term: [rows]}); optional .reset(done_rows)
RewardFn = Callable[[Any], tuple[np.ndarray, dict[str, np.ndarray]]]


def reward_on_tensors(reward_fn: RewardFn | None) -> bool:
    """Whether ``reward_fn`` can be computed from tensors: it has ``torch_call`` and says
    ``supports_torch`` (``arena.rewards.CompositeReward`` does when every term has a torch version)."""
    return (reward_fn is not None and callable(getattr(reward_fn, "torch_call", None))
            and bool(getattr(reward_fn, "supports_torch", False)))


def host_bound_parts(reward_fn: RewardFn | None, opponents: Opponents) -> list[str]:
    """The parts in play without a torch version, by name: each copies the observations to the host
    every step when the env is on the GPU. Reward terms by their label (``"reward term 'my_term'
    (my_pkg.MyReward)"``), a reward function that is not a composed reward as ``"reward function
    <type>"``, then the registered scripted players by id (``"scripted:xyz"``). Empty: nothing does."""
    parts: list[str] = []
    if reward_fn is not None:
        terms = getattr(reward_fn, "host_bound_terms", None)
        if callable(terms):
            parts.extend(terms())
        elif not reward_on_tensors(reward_fn):
            parts.append(f"reward function {type(reward_fn).__qualname__}")
    parts.extend(opponents.host_bound_players())
    return parts


class Rollout:
    """Plays the learner and its opponents in ``env`` and writes what happens into ``experience``."""

    def __init__(
        self,
        env: VectorEnv,
        policy: Policy,
        opponents: Opponents,
        experience: Experience,
        stats: RolloutStats,
        *,
        overlap: bool = True,
        reward_fn: RewardFn | None = None,
        generator: torch.Generator | None = None,
        step_fn: StepFn | None = None,
        device: torch.device | str = "cpu",
        bootstrap_truncation: bool = True,
        env_offset: int = 0,
        total_envs: int | None = None,
        torch_side: bool | None = None,
    ) -> None:
        """``env_offset``/``total_envs``: this env batch is envs ``[env_offset, env_offset + num_envs)``
        of a run of ``total_envs`` (a rank's share of a data-parallel run; default: the whole run).
        ``torch_side``: compute the reward and the scripted opponents' actions on tensors where they
        have a torch version (module doc); None: only with the env on the GPU."""
        self.env, self.policy, self.opponents = env, policy, opponents
        self.exp, self.stats = experience, stats
        self.reward_fn, self.generator = reward_fn, generator
        self.bootstrap_truncation = bootstrap_truncation  # False: a time limit ends the game (no value after)
        self.step_fn: StepFn = step_fn if step_fn is not None else policy.forward_step
        self.device = torch.device(device)
        self.on_cpu = self.device.type == "cpu"
        self.core = env.host  # the core's output buffers (zero-copy); step_envs writes into them
        self.env_on_gpu = getattr(env, "device", "cpu") == "cuda"
        if self.env_on_gpu and self.device.type != "cuda":
            raise ValueError("an env on the GPU (env.device=cuda) needs the policy there too: "
                             "trainer.device=cuda")
        if self.env_on_gpu:
            overlap = False
        self.torch_side = self.env_on_gpu if torch_side is None else bool(torch_side)
        self.torch_reward = self.torch_side and reward_on_tensors(reward_fn)
        self.out = env.tensors()  # the core's outputs as tensors (CPU: views of the numpy buffers)
        self.a = env.agents_per_env
        rows = env.num_agents
        n = env.num_envs
        self.env_offset = int(env_offset)
        self.total_envs = n if total_envs is None else int(total_envs)
        if not 0 <= self.env_offset <= self.total_envs - n:
            raise ValueError(f"envs [{env_offset}, {env_offset + n}) are not within a run of "
                             f"{self.total_envs} envs")
        self.row_offset, self.total_rows = self.env_offset * self.a, self.total_envs * self.a
        self.halves = [(0, n // 2), (n // 2, n)] if overlap and n >= 2 else [(0, n)]
        self._executor = (
            ThreadPoolExecutor(1, thread_name_prefix="arena-sim") if len(self.halves) > 1 else None
        )
        self._pending: list[Future[None] | None] = [None] * len(self.halves)

        self.h, self.c = policy.initial_state(rows, self.device)
        self.next_start_np = np.ones(rows, dtype=bool)
        self.next_start = torch.from_numpy(self.next_start_np)
        self.learner_mask = torch.from_numpy(opponents.learner_row_mask)  # a view: follows the assignment
        # the critic's head of each row (its opponent's class), where the policy has more than one
        self.value_class = torch.from_numpy(opponents.value_class_of_row)  # a view, as above
        self.per_class = policy.value_heads > 1
        # a team critic's labels: rows of one team of one env share one (env * 2 + team)
        self.team_label = None
        if policy.team_critic is not None:
            slots = torch.as_tensor(env.team_of_row[: self.a], dtype=torch.int64, device=self.device)
            self.team_label = team_labels(torch.arange(rows, device=self.device), slots)
        dims = len(env.action_space.nvec)
        act_device = self.device if self.env_on_gpu else torch.device("cpu")
        self.actions = torch.zeros(rows, dims, dtype=torch.int64, device=act_device)  # this step's, every row
        self.noise = torch.zeros(rows, dims, device=self.device)  # this step's sampling numbers
        self.env_actions = np.zeros((rows, dims), dtype=np.int32)  # what the core reads (CPU)
        self.env_actions_t = (torch.zeros(rows, dims, dtype=torch.int32, device=self.device)
                              if self.env_on_gpu else torch.from_numpy(self.env_actions))
        self.episode_return = np.zeros(rows, dtype=np.float64)
        self._obs = self.out.obs
        self._events = np.zeros_like(self.core.events)  # this step's, per row
        self.episode_events = np.zeros(self.core.events.shape, dtype=np.float64)  # summed over the match
        self.event_names = tuple(env.event_names)
        if reward_fn is not None and self.torch_reward:  # the step's results, kept on the device
            self._obs_after_t = torch.zeros(self.out.obs.shape, dtype=self.out.obs.dtype, device=self.device)
            self._events_t = torch.zeros(self.out.events.shape, dtype=self.out.events.dtype,
                                         device=self.device)
            self._team_of_row_t = torch.as_tensor(np.asarray(env.team_of_row), device=self.device)
        elif reward_fn is not None:
            self._obs_after = np.zeros_like(self.core.obs)
        if self.torch_side:
            host_bound = self.host_bound_parts()
            if host_bound:
                logger.info("on the torch side, these parts have no torch version and copy the "
                            "observations to the host every step: %s", ", ".join(host_bound))

    def host_bound_parts(self) -> list[str]:
        """The reward terms and registered scripted opponents without a torch version
        (``host_bound_parts``): what keeps a rollout with the env on the GPU copying to the host."""
        return host_bound_parts(self.reward_fn, self.opponents)

    # ------------------------------------------------------------------ lifecycle

    def restart(self, seed: int) -> None:
        """Starts fresh matches in every env (seeded) with zero LSTM states everywhere."""
        self._drain()

        first = self.env_offset
        seeds = [_core.env_seed(seed, first + e) for e in range(self.env.num_envs)]  # as env.reset(seed)
        self.env.reset_envs(np.array(seeds, dtype=np.uint64))
        self.h.zero_()
        self.c.zero_()
        self.opponents.reset_states()
        self.next_start_np[:] = True
        self.episode_return[:] = 0.0
        self.episode_events[:] = 0.0
        if self.reward_fn is not None and callable(getattr(self.reward_fn, "reset", None)):
            self.reward_fn.reset(np.ones(self.env.num_agents, dtype=bool))

    def inflight_state(self) -> dict[str, Any]:
        """What continues the matches in flight exactly (between two rollouts): every env's state,
        the LSTM states, episode-start flags and the running episode sums of every row, and the
        opponents' per-row LSTM states."""
        self._drain()
        return {
            "env": self.env.env_state(),
            "h": self.h.detach().cpu().clone(), "c": self.c.detach().cpu().clone(),
            "next_start": torch.from_numpy(self.next_start_np.copy()),
            "episode_return": torch.from_numpy(self.episode_return.copy()),
            "episode_events": torch.from_numpy(self.episode_events.copy()),
            "opponents": self.opponents.row_states(),
        }

    def load_inflight_state(self, state: dict[str, Any]) -> None:
        """Restores ``inflight_state()``: the next rollout continues those matches."""
        self._drain()
        self.env.set_env_state(state["env"])
        with torch.no_grad():
            self.h.copy_(state["h"].to(self.h.device))
            self.c.copy_(state["c"].to(self.c.device))
        self.next_start_np[:] = state["next_start"].numpy()
        self.episode_return[:] = state["episode_return"].numpy()
        self.episode_events[:] = state["episode_events"].numpy()
        self.opponents.load_row_states(state["opponents"])

    def close(self) -> None:
        self._drain()
        if self._executor is not None:
            self._executor.shutdown(wait=True)

    def _drain(self) -> None:
        for k, pending in enumerate(self._pending):
            if pending is not None:
                pending.result()
                self._pending[k] = None

    # ------------------------------------------------------------------ collection

    def collect(self) -> None:
        """Fills every step of the experience and the bootstrap values after its last step."""
        exp = self.exp
        exp.clear_step_outputs()
        last = len(self.halves) - 1
        with torch.inference_mode():
            for t in range(exp.steps):
                self._draw_noise()
                if last == 0:
                    if t > 0:
                        self._wait(0)
                        self._store_results(0, t - 1)
                        self._finish_step(t - 1)
                    self._act(0, t)
                    self._launch(0)
                    continue
                # Halves: the learner acts on each half as it comes back. Where the first half has
                # opponents, they act once on both halves (a frozen player's weights are read once a
                # step, not once a half) when the second is back; the first half is then simulated
                # while the learner acts on the second. Otherwise the first half goes at once.
                if t > 0:
                    self._wait(0)
                    self._store_results(0, t - 1)
                self._act(0, t, opponents=False)
                at_once = not self._has_opponents(0)
                if at_once:
                    self._emit_actions(0, t)
                    self._launch(0)
                if t > 0:
                    self._wait(1)
                    self._store_results(1, t - 1)
                    self._finish_step(t - 1)
                if at_once:
                    self._act(1, t)
                else:
                    self._opponents_act(0, self.env.num_envs, t)
                    self._emit_actions(0, t)
                    self._launch(0)
                    self._act(1, t, opponents=False)
                    self._emit_actions(1, t)
                self._launch(1)
            for k in range(len(self.halves)):
                self._wait(k)
                self._store_results(k, exp.steps - 1)
            self._finish_step(exp.steps - 1)
            for k in range(len(self.halves)):
                self._bootstrap(k)

    def _draw_noise(self) -> None:
        """This step's uniform numbers for every row of the run; this process keeps its own rows."""
        dims = self.noise.shape[1]
        every = torch.rand(self.total_rows, dims, generator=self.generator, device=self.device)
        self.noise = every[self.row_offset : self.row_offset + self.env.num_agents]

    def _rows(self, k: int) -> slice:
        begin, end = self.halves[k]
        return slice(begin * self.a, end * self.a)

    def _launch(self, k: int) -> None:
        begin, end = self.halves[k]
        if self.env_on_gpu:  # queued on the GPU; the actions are sampled in range
            self.env.step_envs_tensor(self.env_actions_t, begin, end, check=False)
        elif self._executor is None:
            t0 = time.perf_counter()
            self.env.step_envs(self.env_actions, begin, end)
            self.stats.add_time("sim", time.perf_counter() - t0)
        else:
            self._pending[k] = self._executor.submit(self.env.step_envs, self.env_actions, begin, end)

    def _wait(self, k: int) -> None:
        pending = self._pending[k]
        if pending is not None:
            t0 = time.perf_counter()
            pending.result()
            self.stats.add_time("sim", time.perf_counter() - t0)
            self._pending[k] = None

    def _device_rows(self, t: int) -> tuple[Tensor, Tensor]:
        """Every row's current obs and episode-start flags on the policy device (rows of the half
        being handled are current)."""
        if self.on_cpu:
            return self._obs, self.next_start
        return self.exp.obs[t], self.exp.episode_starts[t]

    def _act(self, k: int, t: int, opponents: bool = True) -> None:
        """Half ``k``'s inputs of step ``t`` into the experience and the learner's actions on its
        rows; with ``opponents``, the opponents' actions too, and the half's actions are emitted."""
        exp, s = self.exp, self._rows(k)
        exp.obs[t, s] = self._obs[s]
        exp.episode_starts[t, s] = self.next_start[s]
        exp.learner_mask[t, s] = self.learner_mask[s]
        if self.per_class:
            exp.value_class[t, s] = self.value_class[s]
        if t % exp.horizon == 0:
            exp.state_h[t // exp.horizon, s] = self.h[s]
            exp.state_c[t // exp.horizon, s] = self.c[s]
        t0 = time.perf_counter()
        groups = self.opponents.groups(*self.halves[k])
        if groups.learner_count:
            obs, starts = self._device_rows(t)
            self._learner_act(groups, obs, starts, t)
        self.stats.add_time("inference", time.perf_counter() - t0)
        if opponents:
            self._opponents_act(*self.halves[k], t)
            self._emit_actions(k, t)

    def _has_opponents(self, k: int) -> bool:
        """Whether any row of half ``k`` is an opponent's (a scripted bot or a frozen policy)."""
        groups = self.opponents.groups(*self.halves[k])
        return bool(groups.scripted or groups.policies)

    def _opponents_act(self, begin: int, end: int, t: int) -> None:
        """The opponents' actions on envs ``[begin, end)`` (their inputs of step ``t`` stored)."""
        groups = self.opponents.groups(begin, end)
        if not (groups.scripted or groups.policies):
            return
        t0 = time.perf_counter()
        if self.env_on_gpu and self.opponents.needs_host_obs(groups, self.torch_side):
            self.env.sync_host(begin, end)  # scripted bots without a torch version read numpy
        obs, starts = self._device_rows(t)
        self.opponents.act(groups, self.core.obs, obs, starts, self.actions, self.noise,
                           torch_side=self.torch_side)
        spent = time.perf_counter() - t0
        self.stats.add_time("inference_opponents", spent)
        self.stats.add_time("inference", spent)

    def _emit_actions(self, k: int, t: int) -> None:
        """Half ``k``'s actions of step ``t`` into the experience and the buffer the core reads."""
        s = self._rows(k)
        self.exp.actions[t, s] = self.actions[s]
        self.env_actions_t[s] = self.actions[s]

    def _learner_act(self, groups: RowGroups, obs: Tensor, starts: Tensor, t: int) -> None:
        rows, exp = groups.learner, self.exp
        if isinstance(rows, slice):
            logits, value, (h, c) = self.step_fn(obs[rows], (self.h[rows], self.c[rows]), starts[rows],
                                                 self._classes(rows), self._teams(rows))
            actions, logp = self.policy.sample_actions(logits, noise=self.noise[rows])
            self.h[rows], self.c[rows] = h, c
            exp.logprobs[t, rows], exp.values[t, rows] = logp, value
            self.actions[rows] = actions.to(self.actions.device)
            return
        state = (self.h.index_select(0, rows), self.c.index_select(0, rows))
        logits, value, (h, c) = self.step_fn(obs.index_select(0, rows), state, starts.index_select(0, rows),
                                             self._classes(rows), self._teams(rows))
        actions, logp = self.policy.sample_actions(logits, noise=self.noise.index_select(0, rows))
        self.h.index_copy_(0, rows, h)
        self.c.index_copy_(0, rows, c)
        exp.logprobs[t].index_copy_(0, rows, logp)
        exp.values[t].index_copy_(0, rows, value)
        self.actions.index_copy_(0, rows.to(self.actions.device), actions.to(self.actions.device))

    def _teams(self, rows: slice | Tensor) -> Tensor | None:
        """The team critic's labels of ``rows`` on the policy device; None where the policy has none.
        Every call hands the policy whole teams: a half, the learner's rows, the truncated ones."""
        if self.team_label is None:
            return None
        if isinstance(rows, slice):
            return self.team_label[rows]
        return self.team_label.index_select(0, rows.to(self.device))

    def _classes(self, rows: slice | Tensor) -> Tensor | None:
        """The critic's head of ``rows`` on the policy device; None where the policy has one."""
        if not self.per_class:
            return None
        if isinstance(rows, slice):
            return self.value_class[rows].to(self.device)
        return self.value_class.index_select(0, rows.cpu()).to(self.device)

    def _host(self, name: str, index: Any) -> np.ndarray:
        """``index`` of the core's output ``name`` on the host (a copy from the GPU's buffer there)."""
        if self.env_on_gpu:
            return getattr(self.out, name)[torch.as_tensor(index, device=self.device)
                                           if isinstance(index, np.ndarray) else index].cpu().numpy()
        return getattr(self.core, name)[index]

    def _store_results(self, k: int, t: int) -> None:
        exp, core, out, s = self.exp, self.core, self.out, self._rows(k)
        begin, end = self.halves[k]
        exp.rewards[t, s] = out.rewards[s]
        exp.terminals[t, s] = out.terminals[s]
        exp.truncations[t, s] = out.truncations[s]
        self._events[s] = self._host("events", s)
        if self.torch_reward:
            self._obs_after_t[s] = out.obs[s]
            self._events_t[s] = out.events[s]
        elif self.reward_fn is not None:
            if self.env_on_gpu:
                self.env.sync_host(begin, end)  # a numpy reward function reads the host mirrors
            self._obs_after[s] = core.obs[s]
        self.next_start_np[s] = False
        done = self._host("done", slice(begin, end))
        if not done.any():
            if self.opponents.collective:  # every rank asks at every half-step, in step
                self.opponents.episodes_ended(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int8))
            return
        envs = np.flatnonzero(done) + begin
        rows = (envs[:, None] * self.a + np.arange(self.a)).ravel()
        outcomes = self._host("outcome", envs).copy()
        lengths = self._host("episode_length", envs).copy()
        self.stats.record_matches(
            self.opponents.player_of_env[envs], [p.player_id for p in self.opponents.players], outcomes,
            lengths,
        )
        truncated = rows[self._host("truncations", rows) & self.opponents.learner_row_mask[rows]]
        if len(truncated) and self.bootstrap_truncation:
            self._bootstrap_truncated(truncated, t)
        if self.torch_reward:
            final_rows = torch.from_numpy(rows).to(self.out.final_obs.device)
            self._obs_after_t[torch.from_numpy(rows).to(self.device)] = (
                self.out.final_obs.index_select(0, final_rows).to(self.device))
        elif self.reward_fn is not None:
            self._obs_after[rows] = core.final_obs[rows]
        self.next_start_np[rows] = True
        self.opponents.episodes_ended(envs, outcomes, lengths)

    def _bootstrap_truncated(self, rows_np: np.ndarray, t: int) -> None:
        """Value of the final observation of truncated learner rows, with the state before the reset."""
        t0 = time.perf_counter()
        rows = torch.from_numpy(rows_np).to(self.device)
        final = self.out.final_obs.index_select(0, rows.to(self.out.final_obs.device)).to(self.device)
        state = (self.h.index_select(0, rows), self.c.index_select(0, rows))
        no_start = torch.zeros(len(rows_np), dtype=torch.bool, device=self.device)
        value = self.step_fn(final, state, no_start, self._classes(rows), self._teams(rows))[1]
        self.exp.final_values[t].index_copy_(0, rows, value)
        self.stats.add_time("inference", time.perf_counter() - t0)

    def _finish_step(self, t: int) -> None:
        """Once every half has stepped: the reward function (all rows at once) and episode returns."""
        exp = self.exp
        done_rows = (exp.terminals[t] | exp.truncations[t]).cpu().numpy()
        if self.reward_fn is not None:
            self._apply_reward_fn(t, done_rows)
        learner = exp.learner_mask[t].cpu().numpy()
        self.episode_return += exp.rewards[t].cpu().numpy()
        self.episode_events += self._events
        if done_rows.any():
            self.stats.record_returns(self.episode_return[done_rows & learner])
            ended = np.flatnonzero(done_rows & learner)
            slots = ended % self.a if self.a > 2 else None  # a team game: per fighter slot too
            self.stats.record_events(self.episode_events[ended], self.event_names, slots)
            self.episode_return[done_rows] = 0.0
            self.episode_events[done_rows] = 0.0

    def _apply_reward_fn(self, t: int, done_rows: np.ndarray) -> None:
        if self.torch_reward:
            self._apply_reward_fn_torch(t, done_rows)
            return

        exp, env = self.exp, self.env
        batch = StepBatch(
            obs_before=exp.obs[t].cpu().numpy(),
            obs_after=self._obs_after,
            actions=exp.actions[t].cpu().numpy().astype(np.int32),
            events=self._events,
            event_names=tuple(env.event_names),
            outcome_reward=exp.rewards[t].cpu().numpy().copy(),
            terminals=exp.terminals[t].cpu().numpy(),
            truncations=exp.truncations[t].cpu().numpy(),
            done_rows=done_rows,
            team_of_row=env.team_of_row,
            game=env.game,
            team_sizes=tuple(env.team_sizes),
            params=dict(env.params),
        )
        result = self.reward_fn(batch)
        total, terms = result if isinstance(result, tuple) else (result, {})
        exp.rewards[t] = torch.as_tensor(np.asarray(total, dtype=np.float32), device=exp.rewards.device)
        self.stats.record_terms(terms, exp.learner_mask[t].cpu().numpy())
        if callable(getattr(self.reward_fn, "reset", None)):
            self.reward_fn.reset(done_rows)

    def _apply_reward_fn_torch(self, t: int, done_rows: np.ndarray) -> None:
        """``_apply_reward_fn`` on the experience's tensors (``reward_fn.torch_call``): no host copy
        but the per-term sums over the learner rows, for the statistics."""
        exp, env = self.exp, self.env
        batch = TorchStepBatch(
            obs_before=exp.obs[t],
            obs_after=self._obs_after_t,
            actions=exp.actions[t].to(torch.int32),
            events=self._events_t,
            event_names=tuple(env.event_names),
            outcome_reward=exp.rewards[t].clone(),
            terminals=exp.terminals[t],
            truncations=exp.truncations[t],
            done_rows=exp.terminals[t] | exp.truncations[t],
            team_of_row=self._team_of_row_t,
            game=env.game,
            team_sizes=tuple(env.team_sizes),
            params=dict(env.params),
        )
        total, terms = self.reward_fn.torch_call(batch)  # type: ignore[union-attr]
        exp.rewards[t] = total
        learner = exp.learner_mask[t]
        count = int(learner.sum())
        if terms and count:
            values = torch.stack([value.to(torch.float64) for value in terms.values()])
            sums = torch.where(learner, values, 0.0).sum(dim=1).cpu().tolist()
            # RolloutStats sums each term over the learner rows; the sums are taken here, so each term
            # goes as its sum followed by zeros for the other learner rows (same sum, same row count)
            padded = {name: np.concatenate(([total_sum], np.zeros(count - 1)))
                      for name, total_sum in zip(terms, sums, strict=True)}
            self.stats.record_terms(padded, np.ones(count, dtype=bool))
        if callable(getattr(self.reward_fn, "reset", None)):
            self.reward_fn.reset(done_rows)  # type: ignore[union-attr]

    def _bootstrap(self, k: int) -> None:
        """The value of the observation after the rollout's last step (no state change)."""
        exp, s = self.exp, self._rows(k)
        exp.next_mask[s] = self.learner_mask[s]
        groups = self.opponents.groups(*self.halves[k])
        if not groups.learner_count:
            return
        t0 = time.perf_counter()
        obs, starts = self._obs.to(self.device), self.next_start.to(self.device)  # no copy on CPU
        rows = groups.learner
        if isinstance(rows, slice):
            exp.next_value[rows] = self.step_fn(obs[rows], (self.h[rows], self.c[rows]), starts[rows],
                                                self._classes(rows), self._teams(rows))[1]
        else:
            state = (self.h.index_select(0, rows), self.c.index_select(0, rows))
            value = self.step_fn(obs.index_select(0, rows), state, starts.index_select(0, rows),
                                 self._classes(rows), self._teams(rows))[1]
            exp.next_value.index_copy_(0, rows, value)
        self.stats.add_time("inference", time.perf_counter() - t0)
