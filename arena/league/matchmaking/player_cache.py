"""The league players one trainer's opponents need, loaded on demand and registered with its ``Opponents``.

- Snapshots (frozen learners) load from their file, verified against the sha256 the league recorded,
  into an LRU cache of ``capacity`` players; the least recently used ones that no env is assigned to
  are released again. Players still assigned are never released, so the cache may hold more than
  ``capacity`` while that many distinct snapshots are in play.
- Other learning players (AlphaStar's main learner seen by an exploiter) play with their live weights:
  a frozen copy, refreshed by ``sync_live`` after each update of the original.
- Scripted bots need nothing: ``Opponents`` builds them from their ``scripted:<name>`` id.
"""

from __future__ import annotations

import logging
import os
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import torch

from arena.agents.policy import Policy, policy_from_payload
from arena.league.model.players import Player, Pool
from arena.league.model.snapshots import load_snapshot, snapshot_file
from arena.league.timing import LeagueTimer

logger = logging.getLogger(__name__)


def load_frozen_policy(run_dir: str | os.PathLike[str], player: Player) -> Policy:
    """A snapshot's policy (eval mode, no gradients), after checking the file against its sha256."""
    assert player.sha256 is not None
    path = snapshot_file(run_dir, player)
    payload = load_snapshot(path, player.sha256)
    policy = policy_from_payload(payload, source=f"snapshot {player.player_id} ({path})")
    return policy.eval().requires_grad_(False)


class PlayerCache:
    """Registers league players with one ``Opponents`` as they are chosen; evicts unused frozen ones."""

    def __init__(
        self,
        pool: Pool,
        run_dir: str | os.PathLike[str],
        *,
        owner: str,
        capacity: int = 32,
        live: Mapping[str, Policy] | None = None,
        timer: LeagueTimer | None = None,
    ) -> None:
        if capacity < 1:
            raise ValueError(f"player cache capacity={capacity} must be >= 1")
        self.pool, self.run_dir, self.owner, self.capacity = pool, Path(run_dir), owner, capacity
        self.live_sources: Mapping[str, Policy] = live if live is not None else {}
        self.timer = timer if timer is not None else LeagueTimer()
        self.opponents: Any = None
        self._frozen: OrderedDict[str, None] = OrderedDict()  # loaded snapshots, least recent first
        self._live: dict[str, Policy] = {}  # live copies registered, by player id
        self.loads = 0
        self.evictions = 0

    def bind(self, opponents: Any) -> None:
        """The ``Opponents`` to register players with (anything with add_player / release_player)."""
        self.opponents = opponents
        self._frozen.clear()
        self._live.clear()

    @property
    def loaded(self) -> list[str]:
        """Snapshots loaded now, least recently used first."""
        return list(self._frozen)

    def ensure(self, player_ids: Iterable[str], in_use: Callable[[], set[str]] | None = None) -> None:
        """Makes every player in ``player_ids`` playable, then evicts down to capacity, sparing the
        players ``in_use()`` names (those assigned to an env)."""
        if self.opponents is None:
            raise RuntimeError("PlayerCache.ensure before bind(opponents)")
        for player_id in dict.fromkeys(player_ids):
            if player_id == self.owner:
                continue  # the learner itself: mirror play
            player = self.pool.get(player_id)
            if player.kind == "snapshot":
                self._use_frozen(player)
            elif player.is_learning:
                self._use_live(player_id)
        if len(self._frozen) > self.capacity:
            self._evict(in_use() if in_use is not None else set())

    def sync_live(self) -> None:
        """Copies the current weights of every live player into its frozen copy."""
        if not self._live:
            return
        with self.timer.measure("loading"):
            for player_id, copy in self._live.items():
                copy.load_state_dict(self.live_sources[player_id].state_dict())
                self.opponents.add_player(player_id, copy)  # refreshes its weights for grouped inference

    def _use_frozen(self, player: Player) -> None:
        if player.player_id in self._frozen:
            self._frozen.move_to_end(player.player_id)
            return
        # The trainer asks for players inside its rollout's inference mode; tensors made there could
        # never be used outside it, so the policy is built with inference mode off.
        with self.timer.measure("loading"), torch.inference_mode(False):
            policy = load_frozen_policy(self.run_dir, player)
            self.opponents.add_player(player.player_id, policy)
        self._frozen[player.player_id] = None
        self.loads += 1

    def _use_live(self, player_id: str) -> None:
        if player_id in self._live:
            return
        source = self.live_sources.get(player_id)
        if source is None:
            raise ValueError(
                f"{player_id!r} is a learning player with no live weights in this run; live players: "
                f"{sorted(self.live_sources)}"
            )
        with self.timer.measure("loading"), torch.inference_mode(False):
            copy = Policy(**source.spec)
            copy.load_state_dict(source.state_dict())
            copy.eval().requires_grad_(False)
            self.opponents.add_player(player_id, copy)
            # add_player may move the module to the opponents' device: keep the object it holds
            self._live[player_id] = self.opponents.players[self.opponents.player_index(player_id)].agent

    def _evict(self, in_use: set[str]) -> None:
        excess = len(self._frozen) - self.capacity
        for player_id in list(self._frozen):
            if excess <= 0:
                break
            if player_id in in_use:
                continue
            self.opponents.release_player(player_id)
            del self._frozen[player_id]
            self.evictions += 1
            excess -= 1
        if excess > 0:
            logger.debug("player cache holds %d frozen players (capacity %d): all are assigned",
                         len(self._frozen), self.capacity)
