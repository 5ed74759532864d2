"""Who drives team 1 of each env, and the opponents' batched inference.

The learner always drives team 0. Team 1 of env ``e`` is driven by the player the assignment names:
- ``"mirror"``: the learner itself (mirror self-play). Those rows are learner rows too and enter the
  training batch;
- ``"scripted:<name>"``: a scripted player (anything with ``act(obs) -> actions``);
- ``"checkpoint:<path>"`` (or a bare path to an existing file): a frozen policy, with its own LSTM
  state per row, reset at episode starts;
- any id registered with ``add_player`` (the league registers its snapshots this way).

The assignment of an env changes only when its match ends: the trainer calls ``episodes_ended``,
which tells the matchmaker (``Matchmaker``: ``MatchesEnded -> player ids``, the one interface between
the trainer and whoever chooses its opponents, the league included) which matches ended, how and
how long they lasted, and takes its picks for those envs.

Inference over the half of the envs being stepped: the opponent rows are sorted by player, and the
frozen policies of one architecture step together through ``FrozenPolicies``
(``arena.agents.frozen``, the same code evaluation plays with): their weights stacked in one bank,
one gather of observations and LSTM states, one batched matrix product per layer over all players,
one sampling call, one scatter. The cost of a step therefore barely grows with the number of
distinct frozen players (a league's pool). Each scripted player acts once on its own rows: on the
env's numpy buffer, or with ``torch_side`` on the observation tensor (``ScriptedAgent.act_torch``,
no host copy) where the player has a torch version (``host_bound_players`` lists those without). The LSTM
states of all opponent rows live in one table indexed by row. Adding a player again (``add_player``
with the same id) refreshes its weights in the bank.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor

from arena.agents.frozen import FrozenPolicies
from arena.agents.grouped import ArchitectureKey, architecture_key
from arena.agents.players import Agent
from arena.agents.policy import Policy, load_policy
from arena.agents.sb3 import load_sb3_model, sb3_agent
from arena.agents.scripted import SCRIPTED_BOTS, make_scripted
from arena.player_specs import MIRROR, SCRIPTED_PREFIX, parse_player
from arena.trainer.events import MatchesEnded, Matchmaker

logger = logging.getLogger(__name__)

FROZEN_POLICIES = "policy"  # the value class of every frozen policy (snapshots, checkpoints, exploiters)


def opponent_value_classes(game: str) -> list[str]:
    """The opponent classes a critic with one value per opponent tells apart in ``game``, in head
    order: the learner itself (mirror), frozen policies, then each of the game's scripted bots."""
    return [MIRROR, FROZEN_POLICIES] + [f"{SCRIPTED_PREFIX}{name}" for name in SCRIPTED_BOTS[game]]



@dataclass
class Player:
    player_id: str
    agent: Policy | Agent | None  # None: the learner (mirror)

    @property
    def is_policy(self) -> bool:
        return isinstance(self.agent, Policy)


@dataclass
class PolicyBatch:
    """The rows of the frozen policies of one architecture, sorted by player: player ``players[k]``
    drives rows ``rows[bounds[k][0]:bounds[k][1]]``."""

    players: list[int]
    bounds: list[tuple[int, int]]
    rows_np: np.ndarray
    rows: Tensor
    key: ArchitectureKey


@dataclass
class RowGroups:
    """How the rows of envs ``[begin, end)`` split among players (a cached view of the assignment)."""

    learner: slice | Tensor  # learner rows (global indices), a slice when contiguous
    learner_count: int
    scripted: list[tuple[int, np.ndarray]]  # (player index, rows) of players that act on numpy obs
    policies: list[PolicyBatch]  # frozen policies, one batch per architecture
    scripted_rows: list[Tensor] = field(default_factory=list)  # the rows of ``scripted``, on the device

    @property
    def opponent_count(self) -> int:
        return sum(len(rows) for _, rows in self.scripted) + sum(len(b.rows_np) for b in self.policies)


class FixedMix:
    """A matchmaker drawing each env's opponent from fixed weights, with a seeded generator.

    With ``redraw=False`` an env keeps the player drawn for it at the start; with ``redraw=True``
    it draws again at every episode end. ``FixedMix("mirror")`` is plain mirror self-play.
    """

    def __init__(
        self, players: str | Sequence[str] | Mapping[str, float], *, redraw: bool = False, seed: int = 0
    ) -> None:
        if isinstance(players, str):
            players = {players: 1.0}
        elif not isinstance(players, Mapping):
            players = {p: 1.0 for p in players}
        weights = np.array([float(w) for w in players.values()], dtype=np.float64)
        if len(weights) == 0 or (weights < 0).any() or not np.isfinite(weights).all() or weights.sum() <= 0:
            raise ValueError(
                f"FixedMix needs players with non-negative weights and a positive sum, got {players}"
            )
        self.player_ids = list(players)
        self.probs = weights / weights.sum()
        self.redraw = redraw
        self.rng = np.random.default_rng(seed)
        self._choice = np.full(0, -1, dtype=np.int64)  # per env id, index into player_ids

    def __call__(self, event: MatchesEnded) -> list[str]:
        env_ids = np.asarray(event.env_ids, dtype=np.int64)
        if len(env_ids) and env_ids.max() >= len(self._choice):
            grown = np.full(int(env_ids.max()) + 1, -1, dtype=np.int64)
            grown[: len(self._choice)] = self._choice
            self._choice = grown
        draw = env_ids if self.redraw else env_ids[self._choice[env_ids] < 0]
        if len(draw):
            self._choice[draw] = self.rng.choice(len(self.player_ids), size=len(draw), p=self.probs)
        return [self.player_ids[i] for i in self._choice[env_ids]]

    def state_dict(self) -> dict[str, Any]:
        return {"rng": self.rng.bit_generator.state, "choice": self._choice.tolist()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.rng.bit_generator.state = dict(state["rng"])
        self._choice = np.asarray(state["choice"], dtype=np.int64)


class Opponents:
    """The env -> player assignment for team 1, and the inference of every non-learner player."""

    def __init__(
        self,
        *,
        num_envs: int,
        team_sizes: tuple[int, int],
        game: str,
        matchmaker: Matchmaker | None = None,
        device: torch.device | str = "cpu",
        seed: int = 0,
        params: Mapping[str, Any] | None = None,
        learner_step: Callable[[], int] | None = None,
        value_classes: Sequence[str] | None = None,
    ) -> None:
        """``value_classes``: the opponent classes of a critic with one value per class
        (``opponent_value_classes``); ``value_class_of_row`` then gives each row's (a player of
        none of the named classes is a frozen policy's class). None: class 0 for every row."""
        self.num_envs, self.team_sizes, self.game = num_envs, tuple(team_sizes), game
        self.learner_step = learner_step if learner_step is not None else (lambda: 0)
        self.params = dict(params or {})  # the game's parameter values (the scripted bots' layout)
        self.agents_per_env = team_sizes[0] + team_sizes[1]
        self.rows = num_envs * self.agents_per_env
        self.matchmaker: Matchmaker = matchmaker if matchmaker is not None else FixedMix(MIRROR)
        self.device = torch.device(device)
        self.seed = seed
        self.players: list[Player] = [Player(MIRROR, None)]
        self._index = {MIRROR: 0}
        self.player_of_env = np.zeros(num_envs, dtype=np.int64)
        slot_team = np.array([0] * team_sizes[0] + [1] * team_sizes[1], dtype=bool)
        self._team1_row = np.tile(slot_team, num_envs)
        self.learner_row_mask = np.ones(self.rows, dtype=bool)  # updated with the assignment
        self.value_classes = list(value_classes) if value_classes is not None else [MIRROR]
        if self.value_classes[0] != MIRROR or len(set(self.value_classes)) != len(self.value_classes):
            raise ValueError(f"value_classes must start with {MIRROR!r} and name each class once, "
                             f"got {self.value_classes}")
        self.value_class_of_row = np.zeros(self.rows, dtype=np.int64)  # updated with the assignment
        self._groups: dict[tuple[int, int], RowGroups] = {}
        self.frozen = FrozenPolicies(self.rows, self.device)  # every frozen policy, one state per row
        if callable(getattr(self.matchmaker, "bind", None)):
            # A matchmaker that loads its players on demand (the league's) registers them here.
            self.matchmaker.bind(self)  # type: ignore[attr-defined]

    # ------------------------------------------------------------------ players

    def add_player(self, player_id: str, agent: Policy | Agent) -> None:
        """Registers a player under ``player_id`` (a frozen ``Policy`` or an object with ``act``)."""
        if player_id == MIRROR:
            raise ValueError(f"{MIRROR!r} is reserved for the learner itself")
        if not isinstance(agent, Policy) and not callable(getattr(agent, "act", None)):
            raise TypeError(
                f"player {player_id!r} must be a Policy or have act(obs), got {type(agent).__name__}"
            )
        if isinstance(agent, Policy):
            agent = agent.to(self.device).eval().requires_grad_(False)
        if player_id in self._index:
            index = self._index[player_id]
            self.frozen.drop(index)
            self.players[index].agent = agent
        else:
            index = self._index[player_id] = len(self.players)
            self.players.append(Player(player_id, agent))
        if isinstance(agent, Policy):
            self.frozen.put(index, agent)
        self._groups.clear()

    @property
    def collective(self) -> bool:
        """Whether the matchmaker is asked at every half-step, finished envs or not (a data-parallel
        run's ``SharedMatchmaker``: every rank asks in step)."""
        return bool(getattr(self.matchmaker, "collective", False))

    def has_player(self, player_id: str) -> bool:
        """Whether ``player_id`` is registered and not released."""
        index = self._index.get(player_id)
        return index is not None and (index == 0 or self.players[index].agent is not None)

    def release_player(self, player_id: str) -> None:
        """Drops the agent of a player no env is assigned to (a cache evicting a frozen policy); it
        must be added again with ``add_player`` before an env is assigned to it."""
        index = self._index.get(player_id, 0)
        if index == 0:
            raise ValueError(f"{player_id!r} is not a registered opponent: {sorted(self._index)}")
        if (self.player_of_env == index).any():
            raise ValueError(f"player {player_id!r} still drives team 1 of some envs; it cannot be released")
        self.frozen.drop(index)
        self.players[index].agent = None

    def player_index(self, player_id: str) -> int:
        """The index of ``player_id``, building scripted and checkpoint players on first use."""
        if player_id in self._index:
            index = self._index[player_id]
            if index and self.players[index].agent is None:
                raise ValueError(f"player {player_id!r} was released; add_player it again before use")
            return index
        parsed = parse_player(player_id)
        if parsed.kind == "scripted":
            agent: Policy | Agent = make_scripted(
                parsed.name, self.game, team_sizes=self.team_sizes, params=self.params,
                seed=self.seed + len(self.players)
            )
        elif parsed.kind == "checkpoint":
            agent = load_policy(parsed.name, device=self.device)
        elif parsed.kind == "sb3":  # acts on numpy rows, one LSTM state per row (arena.agents.sb3)
            agent = sb3_agent(load_sb3_model(parsed.name), self.game, self.team_sizes, self.params,
                              num_rows=self.rows, seed=self.seed + len(self.players))
        elif parsed.kind == "league":
            raise ValueError(f"player id {player_id!r}: a league's published policy reaches a trainer as its "
                             "members' checkpoints (arena.config.opponent_mix expands 'league:<run_dir>')")
        else:
            raise ValueError(
                f"unknown player id {player_id!r}: use {MIRROR!r}, 'scripted:<name>', 'checkpoint:<path>', "
                "'sb3:<path>.zip' "
                f"or an id registered with add_player (registered: {sorted(self._index)})"
            )
        self.add_player(player_id, agent)
        return self._index[player_id]

    # ------------------------------------------------------------------ assignment

    def assignment(self) -> list[str]:
        """The player id driving team 1 of each env."""
        return [self.players[i].player_id for i in self.player_of_env]

    def start(self) -> None:
        """Asks the matchmaker for every env's first opponent."""
        envs = np.arange(self.num_envs, dtype=np.int64)
        self.set_assignment(envs, self.matchmaker(MatchesEnded.starting(envs, self.learner_step())))

    def episodes_ended(self, env_ids: np.ndarray, outcomes: np.ndarray, lengths: np.ndarray | None = None
                       ) -> None:
        """Envs ``env_ids`` finished a match with ``outcomes`` (``Outcome`` codes, team 0's view) after
        ``lengths`` decisions: the matchmaker hears it (``MatchesEnded``) and names their next opponents."""
        env_ids = np.asarray(env_ids, dtype=np.int64)
        lengths = np.zeros(len(env_ids)) if lengths is None else np.asarray(lengths, dtype=np.float64)
        event = MatchesEnded(env_ids, np.asarray(outcomes, dtype=np.int8), lengths, int(self.learner_step()))
        self.set_assignment(env_ids, self.matchmaker(event))

    def set_assignment(self, env_ids: np.ndarray, player_ids: Sequence[str]) -> None:
        """Call only for envs at an episode start: their rows' LSTM states are reset by the rollout."""
        env_ids = np.asarray(env_ids, dtype=np.int64)
        if len(player_ids) != len(env_ids):
            raise ValueError(f"the matchmaker returned {len(player_ids)} player ids for {len(env_ids)} envs")
        if len(env_ids) == 0:
            return
        names, inverse = np.unique(np.asarray(player_ids, dtype=object).astype(str), return_inverse=True)
        unique = [self.player_index(str(n)) for n in names]
        index = np.array(unique, dtype=np.int64)[inverse]
        if np.array_equal(self.player_of_env[env_ids], index):
            return
        self.player_of_env[env_ids] = index
        rows = (env_ids[:, None] * self.agents_per_env + np.arange(self.agents_per_env)).ravel()
        mirror = np.repeat(index == 0, self.agents_per_env)
        self.learner_row_mask[rows] = ~self._team1_row[rows] | mirror
        classes = np.array([self.value_class(i) for i in unique], dtype=np.int64)[inverse]
        self.value_class_of_row[rows] = np.repeat(classes, self.agents_per_env)
        self._groups.clear()

    def value_class(self, index: int) -> int:
        """The value class (index into ``value_classes``) of the player at ``index``."""
        player_id = self.players[index].player_id
        if player_id in self.value_classes:
            return self.value_classes.index(player_id)
        if FROZEN_POLICIES in self.value_classes:
            return self.value_classes.index(FROZEN_POLICIES)
        return 0

    # ------------------------------------------------------------------ rows and inference

    def groups(self, begin: int, end: int) -> RowGroups:
        """The learner's rows and each opponent's rows among envs ``[begin, end)``."""
        key = (begin, end)
        if key not in self._groups:
            self._groups[key] = self._make_groups(begin, end)
        return self._groups[key]

    def _make_groups(self, begin: int, end: int) -> RowGroups:
        a = self.agents_per_env
        lo, hi = begin * a, end * a
        is_learner = self.learner_row_mask[lo:hi]
        learner: slice | Tensor
        if is_learner.all():
            learner = slice(lo, hi)
        else:
            learner = torch.from_numpy(np.flatnonzero(is_learner) + lo).to(self.device)
        opponent_rows = np.flatnonzero(~is_learner)
        player_of_row = np.repeat(self.player_of_env[begin:end], a)[opponent_rows]
        order = np.argsort(player_of_row, kind="stable")  # rows by player, ascending within each
        sorted_rows, sorted_players = opponent_rows[order] + lo, player_of_row[order]
        players, starts = np.unique(sorted_players, return_index=True)
        ends = np.append(starts[1:], len(sorted_rows))[: len(starts)]
        scripted: list[tuple[int, np.ndarray]] = []
        by_architecture: dict[ArchitectureKey, list[tuple[int, np.ndarray]]] = {}
        for p, first, last in zip(players.tolist(), starts.tolist(), ends.tolist(), strict=True):
            agent = self.players[p].agent
            rows = sorted_rows[first:last]
            if isinstance(agent, Policy):
                by_architecture.setdefault(architecture_key(agent), []).append((p, rows))
            else:
                scripted.append((p, rows))
        batches = []
        for key, members in by_architecture.items():
            rows_np = np.concatenate([rows for _, rows in members])
            edges = np.cumsum([0] + [len(rows) for _, rows in members]).tolist()
            batches.append(PolicyBatch(
                players=[p for p, _ in members], bounds=list(zip(edges[:-1], edges[1:], strict=True)),
                rows_np=rows_np, rows=torch.from_numpy(rows_np).to(self.device), key=key,
            ))
        scripted_rows = [torch.from_numpy(rows).to(self.device) for _, rows in scripted]
        return RowGroups(learner, int(is_learner.sum()), scripted, batches, scripted_rows)

    def acts_on_tensors(self, index: int) -> bool:
        """Whether player ``index`` is a scripted player with a torch version (``act_torch``)."""
        agent = self.players[index].agent
        return not isinstance(agent, Policy) and bool(getattr(agent, "supports_torch", False))

    def needs_host_obs(self, groups: RowGroups, torch_side: bool) -> bool:
        """Whether acting on ``groups`` reads the env's numpy observations (a scripted player
        without a torch version, or any scripted player when not ``torch_side``)."""
        return any(not (torch_side and self.acts_on_tensors(p)) for p, _ in groups.scripted)

    def host_bound_players(self) -> list[str]:
        """The ids of the registered scripted players without a torch version: each one copies the
        observations of its rows to the host every step in a rollout with the env on the GPU."""
        return [player.player_id for index, player in enumerate(self.players)
                if index and player.agent is not None and not player.is_policy
                and not self.acts_on_tensors(index)]

    def act(
        self,
        groups: RowGroups,
        obs_np: np.ndarray,
        obs: Tensor,
        episode_start: Tensor,
        actions_out: Tensor,
        noise: Tensor,
        *,
        torch_side: bool = False,
    ) -> None:
        """Writes the opponents' actions for ``groups`` into ``actions_out`` (int64 [rows, dims]).

        ``obs_np`` is the env's observation buffer (every row); ``obs`` and ``episode_start`` the
        same rows as tensors on the policy device; ``noise`` every row's uniform numbers of this step
        (``[rows, action dims]``, see ``arena.trainer.rollout``), with which the frozen policies sample.
        With ``torch_side`` the scripted players with a torch version act on ``obs`` (no host copy;
        ``obs_np`` is then not read for them), in the same order, so with the same actions.
        """
        for batch in groups.policies:
            rows = batch.rows
            logits = self.frozen.step(batch.players, batch.bounds, rows, obs.index_select(0, rows),
                                      episode_start.index_select(0, rows))
            sampler = self.players[batch.players[0]].agent
            assert isinstance(sampler, Policy)
            acts, _ = sampler.sample_actions(logits, noise=noise.index_select(0, rows))  # same heads
            actions_out[batch.rows_np] = acts.to(actions_out.device)
        starts_np: np.ndarray | None = None
        for (p, rows_np), rows in zip(groups.scripted, groups.scripted_rows, strict=True):
            agent = self.players[p].agent
            assert agent is not None and not isinstance(agent, Policy)
            if torch_side and self.acts_on_tensors(p):
                acts_t = agent.act_torch(obs.index_select(0, rows.to(obs.device)))  # type: ignore[attr-defined]
                actions_out.index_copy_(0, rows.to(actions_out.device), acts_t.to(actions_out))
                continue
            if getattr(agent, "keeps_rows", False):  # per-row memory (``VariedPilot``): its rows, starts
                if starts_np is None:
                    starts_np = episode_start.cpu().numpy().astype(bool, copy=False)
                acts_np = np.asarray(agent.act(obs_np[rows_np], rows_np, starts_np[rows_np]))
            else:
                acts_np = np.asarray(agent.act(obs_np[rows_np]))
            acts = torch.from_numpy(acts_np.astype(np.int64, copy=False))
            actions_out[rows_np] = acts.to(actions_out.device)

    def row_states(self) -> dict[int, tuple[Tensor, Tensor]]:
        """Every opponent row's LSTM state, per LSTM size (for checkpoints that continue matches)."""
        return self.frozen.row_states()

    def load_row_states(self, states: Mapping[int, tuple[Tensor, Tensor]]) -> None:
        self.frozen.load_row_states(states)

    def reset_states(self) -> None:
        self.frozen.reset_states()

    # ------------------------------------------------------------------ checkpoints

    def state_dict(self) -> dict[str, Any]:
        """The assignment, the matchmaker's state and the scripted players' generators."""
        state: dict[str, Any] = {"assignment": self.assignment(), "players": {}}
        if callable(getattr(self.matchmaker, "state_dict", None)):
            state["matchmaker"] = self.matchmaker.state_dict()  # type: ignore[attr-defined]
        for player in self.players[1:]:
            agent = player.agent
            if isinstance(agent, Policy):
                continue  # frozen: nothing changes
            if callable(getattr(agent, "state_dict", None)):
                state["players"][player.player_id] = {"state_dict": agent.state_dict()}
            elif isinstance(getattr(agent, "rng", None), np.random.Generator):
                state["players"][player.player_id] = {"rng": agent.rng.bit_generator.state}
        return state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if "matchmaker" in state and callable(getattr(self.matchmaker, "load_state_dict", None)):
            self.matchmaker.load_state_dict(state["matchmaker"])  # type: ignore[attr-defined]
        self.set_assignment(np.arange(self.num_envs), list(state["assignment"]))
        for player_id, saved in state.get("players", {}).items():
            agent = self.players[self.player_index(player_id)].agent
            if "state_dict" in saved:
                agent.load_state_dict(saved["state_dict"])  # type: ignore[union-attr]
            elif "rng" in saved:
                agent.rng.bit_generator.state = dict(saved["rng"])  # type: ignore[union-attr]
