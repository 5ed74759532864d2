"""The league recipe of a training run (``+league=selfplay|pfsp|alphastar``): every rule is a value here.

These dataclasses are hydra structured configs (registered in ``arena.config``); the YAML presets in
``configs/league/`` choose the values. ``league_config(node)`` turns a composed node (or a plain dict)
into a checked ``LeagueConfig``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from arena.agents.scripted import SCRIPTED_BOTS
from arena.games import GAMES
from arena.league.matchmaking.exploiters import EXPLOITER_WAITS, FROZEN_TARGETS, MAIN_EXPLOITER_TARGETS
from arena.league.matchmaking.pfsp import SOURCES, WEIGHTINGS
from arena.league.model.players import EXPLOITER_KINDS, PLAYER_KINDS
from arena.league.model.published import BY_EXPLOITERS, PUBLISH_MODES
from arena.player_specs import SB3_PREFIX, SCRIPTED_PREFIX
from arena.replay.file import REPLAY_GAMES

EXPLOITER_INITS = ("fresh", "learner")  # what a new exploiter generation's weights start from
EXPLOITER_REWARDS = ("learner", "game")  # the exploiters' reward: the main learner's, or the game's own


@dataclass
class MixConfig:
    """Probability of each matchmaking source (they must sum to 1); one field per source, so a
    misspelt source fails at start-up."""

    mirror: float = 0.35
    latest: float = 0.0
    uniform: float = 0.0
    pfsp: float = 0.5
    scripted: float = 0.15
    learners: float = 0.0
    pfsp_scripted: float = 0.0
    pfsp_exploiters: float = 0.0  # PFSP over the exploiters' snapshots only
    nash: float = 0.0  # PSRO: the meta-game's Nash mixture over the main learner's snapshots

    def as_dict(self) -> dict[str, float]:
        """The sources with a non-zero probability."""
        return {s: float(getattr(self, s)) for s in SOURCES if getattr(self, s)}


@dataclass
class MatchmakingConfig:
    """How a learner's opponents are drawn at each episode end (see ``arena.league.matchmaking.pfsp``)."""

    mix: MixConfig = field(default_factory=MixConfig)
    weighting: str = "hard"  # PFSP: hard (1-x)^p | var x(1-x) | linear_capped min(0.5, 1-x)
    p: float = 2.0
    min_games: float = 5.0  # decayed games before the score counts (0.5 until then)
    pool_kinds: list[str] = field(default_factory=lambda: ["snapshot"])  # who uniform/pfsp draw from


@dataclass
class SnapshotConfig:
    """When a learner is frozen into a snapshot: every ``every_steps`` learner samples and/or when it
    scores above ``beat_all_threshold`` against every player of ``vs_kinds`` with ``min_games`` each,
    the latter never within ``min_steps`` samples of its last snapshot (``SnapshotGate``)."""

    every_steps: int | None = 1_000_000
    beat_all_threshold: float | None = 0.7
    min_games: int = 20
    min_steps: int = 0
    vs_kinds: list[str] = field(default_factory=lambda: ["snapshot", "scripted"])


@dataclass
class RatingsConfig:
    """TrueSkill settings (the ``trueskill`` package's defaults)."""

    mu: float = 25.0
    sigma: float = 25.0 / 3
    beta: float = 25.0 / 6
    tau: float = 25.0 / 300
    draw_probability: float = 0.1


@dataclass
class MainExploiterConfig:
    """AlphaStar's main exploiter: trains against the main learner only, leaves a snapshot of itself in
    the league once it beats it (score above ``snapshot.beat_all_threshold``) or after
    ``snapshot.every_steps`` samples, and then restarts (``reset_prob``) from fresh weights or from
    the learner's (``init``)."""

    num_envs: int | None = None  # None: a quarter of the main learner's (at least 2)
    # "live": the main learner's live weights (AlphaStar). "newest": the main learner's newest snapshot
    # when the exploiter joined or left its last snapshot, frozen until it leaves the next, as
    # `arena.bench exploit` trains against a fixed target; judged against it alone (the live learner,
    # judged as with "live", while the learner has no snapshot newer than the last one it had).
    # "candidate": as "newest", among the learner's candidates to publish only (snapshots whose
    # gauntlet cleared league.gauntlet.guard_bar, each set of weights once), so the league attacks
    # what it could publish; league.publish=held then publishes the one that held longest.
    target: str = "live"
    # With a frozen target (newest or candidate), what it does while it has none (the learner has no
    # new snapshot, or no new candidate, since its last): "live", play the live learner as "live" does;
    # "rest", sit out its turns (no rollout, no update), so the main learner has the whole machine and
    # every sample of a generation, its snapshot budget included, goes to its target.
    wait: str = "live"
    # Against the live learner by default; while its score against it is below low_score, half the
    # time (snapshot_prob) PFSP with `weighting` over the learner's snapshots instead.
    low_score: float = 0.2
    snapshot_prob: float = 0.5
    weighting: str = "var"
    min_games: float = 5.0
    # min_steps: one that goes on after a snapshot (reset_prob < 1) is judged against the learner
    # alone, on the same games, so without a wait it would be due again at its next update (AlphaStar:
    # half the snapshot period).
    snapshot: SnapshotConfig = field(
        default_factory=lambda: SnapshotConfig(every_steps=4_000_000, beat_all_threshold=0.7, min_games=20,
                                               min_steps=2_000_000, vs_kinds=["learner"])
    )
    # After each snapshot it restarts (a new generation) with this probability (AlphaStar: 1); else it
    # goes on training against the learner from where it is.
    reset_prob: float = 1.0
    # What a new generation starts from: "fresh" weights, or a copy of the main "learner"'s weights
    # then (it can fly from its first match, and sets out from the learner's own style).
    init: str = "fresh"
    # When its first generation starts: None, with the main learner; a score, once one of the main
    # learner's snapshots has scored at least that in its gauntlet against every reference (the
    # guard's score), so that the learner has the whole compute until it has learnt to fight.
    start_score: float | None = None
    # With target "candidate": how many generations attack each candidate. A generation that gives up
    # at its budget (snapshot.every_steps) with the candidate unbeaten hands it to the next, until
    # `attacks` generations have held it or one beats it; only then does the next generation take the
    # newest candidate. An attacker's time to win varies a lot with its seed, so one generation that
    # held is weak evidence (docs/results/exploitability.md, "Trial AV").
    attacks: int = 1


@dataclass
class LeagueExploiterConfig:
    """AlphaStar's league exploiter: PFSP over the whole league; on each snapshot it restarts from
    fresh weights with probability ``reset_prob``."""

    num_envs: int | None = None  # None: a quarter of the main learner's (at least 2)
    matchmaking: MatchmakingConfig = field(
        default_factory=lambda: MatchmakingConfig(mix=MixConfig(mirror=0.0, pfsp=1.0, scripted=0.0),
                                                  weighting="hard",
                                                  pool_kinds=["snapshot", "scripted"])
    )
    snapshot: SnapshotConfig = field(
        default_factory=lambda: SnapshotConfig(every_steps=2_000_000, beat_all_threshold=0.7, min_games=20,
                                               vs_kinds=["snapshot", "scripted"])
    )
    reset_prob: float = 0.25


@dataclass
class AnswerConfig:
    """The answer (``arena.league.run.answer``), with ``enabled``: once a main exploiter generation
    beats a candidate to publish, the main learner goes back to that candidate's weights
    (``restore``) and from then on draws its opponents from ``mix`` (by default half the
    exploiters' snapshots by PFSP, half the bots by PFSP), without its kickstarting teacher unless
    ``teacher``. A league that finds a hole then trains the learner on it, against the bots too so
    it keeps them."""

    enabled: bool = False
    mix: MixConfig = field(default_factory=lambda: MixConfig(mirror=0.0, pfsp=0.0, scripted=0.0,
                                                              pfsp_scripted=0.5, pfsp_exploiters=0.5))
    restore: bool = True  # the learner restarts from the beaten candidate's weights
    teacher: bool = False  # keep the kickstarting teacher's pull (trainer.kickstart_*) while answering


MAX_VIEW_PLAYERS = 100  # 100 x 100 cells: W&B's 10,000-row table limit


@dataclass
class RetentionConfig:
    """What a long league keeps on disk (``arena.league.run.retention``). After each new snapshot, the
    snapshots outside the kept set are retired: each leaves the pool and its file is deleted, while
    its ratings, matches and gauntlet rows stay in the store. Kept: each learning player's
    ``keep_recent`` newest snapshots, the ``keep_top`` best rated, the guard's best and every
    snapshot the league publishes (or holds in PSRO's meta-game), and any snapshot an env is playing
    now. Files of the guard's rejected candidates (``league/rejected``) and gauntlet replays
    (``replays/``, with their GIFs) are capped at their newest ``max_rejected`` and ``max_replays``.
    ``enabled: false`` keeps everything."""

    enabled: bool = True
    keep_recent: int = 200
    keep_top: int = 64
    max_rejected: int = 20
    max_replays: int = 100


@dataclass
class GauntletConfig:
    """A new snapshot of the main learner plays ``games`` side-swapped, seed-paired games against
    each reference: ``players`` (``scripted:<name>`` or a checkpoint path; None: the game's
    ``REFERENCE_BOTS``), when at least ``every_steps`` learner samples have passed since the last gauntlet
    (0: every snapshot). A game lasts up to the time limit whoever plays, so a gauntlet costs seconds;
    spacing them keeps its share of the wall time small. ``games: 0`` turns the gauntlet off.
    ``replays: N`` saves the first N games of each reference as ``RUN_DIR/replays/<snapshot>-vs-<ref>.npz``
    (watch one with ``python -m arena.replay FILE --html OUT.html``); 0: none.
    ``guard`` (default on): a snapshot of the main learner due to play the gauntlet plays it first,
    and when the best gauntleted snapshot's lowest score lies above its interval by more than
    ``guard_margin``, the snapshot publishes the best snapshot's weights instead; after
    ``guard_patience`` such rejections in a row the learner itself is restored from the best snapshot
    (``arena.league.run.guard``). ``guard_bar`` (null: none) caps the scores the guard compares: the
    latest snapshot that clears it is the best, and only a clear drop below it is rejected."""

    players: list[str] | None = None
    games: int = 200
    every_steps: int = 4_000_000
    seed: int = 12345  # the same spawns for every snapshot: differences come from the players
    replays: int = 0  # games per reference saved as replay files (midrange), 0: none
    guard: bool = True  # restore the learner from the best snapshot when a gauntlet shows a clear drop
    guard_margin: float = 0.0  # extra drop tolerated beyond the candidate's 95% interval
    guard_patience: int = 3  # rejections in a row before the learner is restored (1: at every one)
    guard_bar: float | None = None  # scores compared capped at it: the latest snapshot clearing it is best


@dataclass
class LeagueConfig:
    """A league: who plays whom, when snapshots are taken, how players are rated, what is logged."""

    name: str = "selfplay"
    learner_id: str = "learner"
    # The league's fixed players: the game's scripted bots by name, and Stable-Baselines3 models as
    # sb3:PATH.zip (arena.agents.sb3); None: the game's REFERENCE_BOTS
    scripted: list[str] | None = None
    matchmaking: MatchmakingConfig = field(default_factory=MatchmakingConfig)
    snapshot: SnapshotConfig = field(default_factory=SnapshotConfig)
    decay: float = 0.99  # payoff decay per new result of a pair (1.0: plain totals)
    ratings: RatingsConfig = field(default_factory=RatingsConfig)
    cache_size: int = 32  # frozen players kept loaded per learner (LRU; assigned ones always stay)
    log_interval: int = 20  # updates between leaderboard / payoff heatmap / per-player ratings
    # updates between two drawings of the payoff heatmap as a PNG (RUN_DIR/league/payoff.png and the
    # logger's league/payoff image), at a view: drawing takes ~1 s, the chart's data is logged at every view
    image_interval: int = 100
    # players the views show (the logged leaderboard, payoff heatmap and per-player ratings, and
    # ``arena.league show`` without --all): every player that is not a snapshot, the main learner's
    # newest snapshots, then the best rated (arena.league.view.plots.shown_players); the store keeps all
    view_players: int = 64
    seed: int | None = None  # matchmaking seed; None: the trainer's seed
    main_exploiter: MainExploiterConfig | None = None
    league_exploiter: LeagueExploiterConfig | None = None
    # with answer.enabled, once a main exploiter generation beats a candidate to publish, the main
    # learner answers it (AnswerConfig; needs main_exploiter.target=candidate)
    answer: AnswerConfig = field(default_factory=AnswerConfig)
    gauntlet: GauntletConfig = field(default_factory=GauntletConfig)
    retention: RetentionConfig = field(default_factory=RetentionConfig)
    # Opening a league again checks each snapshot file's sha256 only where its size or mtime changed
    # since the last check (the hash is taken when the file is written); true: hash every file
    verify_all: bool = False
    # Under torchrun: the last E ranks each run one of the E exploiters, concurrently with the main
    # learner, which is data-parallel over the other ranks (``arena.league.run.exploiter_ranks``).
    exploiter_ranks: bool = False
    # What the league publishes (``league:RUN_DIR``, ``arena.league.model.published``): ``newest``, the main
    # learner's newest (judged) snapshot; ``mixture``, its last ``publish_window`` snapshots with
    # equal weights, one drawn per match (an average of recent policies, as fictitious play averages);
    # or ``nash``, PSRO's meta-strategy over its snapshots (``arena.league.model.meta``); or ``held``, the
    # candidate (a snapshot whose gauntlet cleared league.gauntlet.guard_bar) that held the main
    # exploiter's generations longest (``arena.league.model.time_to_exploit.held_longest``), the newest
    # snapshot until one has been attacked; or ``unbeaten``, the newest candidate no main exploiter
    # generation has beaten (attacked or not yet), else held's choice.
    publish: str = "newest"
    publish_window: int = 8
    # PSRO's meta-game (with publish: nash or the matchmaking source nash): games each new snapshot of
    # the main learner plays against each earlier one
    meta_games: int = 200
    # true: the exploiters' snapshots join the meta-game too (PSRO's population is every best response
    # found, not only the learner's copies), so the Nash mixture may hold an exploiter's snapshot and
    # an attacker must beat the styles that beat the learner as well
    meta_exploiters: bool = False
    # a main-learner snapshot joins the meta-game only once its gauntlet scored at least this against
    # every reference (its guard score; null: every snapshot joins): PSRO's Nash is then taken over
    # snapshots that also hold the bots, so head-to-head wins alone cannot publish a narrow early one.
    # Until one clears it the league publishes its newest judged snapshot. Exploiters' snapshots
    # (meta_exploiters) play no gauntlet and join regardless.
    meta_bar: float | None = None
    # Reward terms the league's recipe adds for a game, keyed by the game's name (env.name): each term
    # joins reward.terms when composing the run's config, unless reward.terms already names it (the
    # run's own terms win). The robust league adds midrange's shot-selection and arena-edge terms;
    # other games get none.
    reward_terms: dict[str, Any] = field(default_factory=dict)
    # The exploiters' reward: ``learner``, the main learner's (the run's reward with reward_terms
    # joined); ``game``, the run's reward without the terms reward_terms adds: an exploiter estimates a
    # best response, which the game's own payoff defines, as `arena.bench exploit`'s attacker trains
    # on it, so shaping meant to teach the learner good play does not steer what it looks for.
    exploiter_reward: str = "learner"

    def validate(self, game: str | None = None) -> LeagueConfig:
        """Checks every value; raises ``ValueError`` naming the key and what is allowed."""
        if not isinstance(self.learner_id, str) or not self.learner_id or ":" in self.learner_id:
            raise ValueError(f"league.learner_id={self.learner_id!r} must be a non-empty id without ':'")
        _check_matchmaking(self.matchmaking, "league.matchmaking")
        _check_snapshot(self.snapshot, "league.snapshot")
        if not (isinstance(self.decay, int | float) and 0.0 < self.decay <= 1.0):
            raise ValueError(f"league.decay={self.decay!r} must be in (0, 1]")
        for name in ("cache_size", "log_interval", "image_interval", "view_players"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"league.{name}={value!r} must be an integer >= 1")
        if self.view_players > MAX_VIEW_PLAYERS:  # the payoff heatmap's table has a row per pair
            raise ValueError(f"league.view_players={self.view_players} must be at most {MAX_VIEW_PLAYERS}: "
                             f"its payoff table holds view_players^2 rows and W&B keeps 10,000 "
                             "(`python -m arena.league show RUN_DIR --all` draws every player)")
        if not isinstance(self.reward_terms, dict):
            raise ValueError(f"league.reward_terms={self.reward_terms!r} must map game names to reward terms")
        for name, terms in self.reward_terms.items():
            if name not in GAMES:
                raise ValueError(f"league.reward_terms.{name}: unknown game {name!r}; "
                                 f"games: {', '.join(GAMES)}")
            if not isinstance(terms, dict):
                raise ValueError(f"league.reward_terms.{name}={terms!r} must map term names to terms "
                                 "({_target_: ..., weight: ...})")
        if self.exploiter_reward not in EXPLOITER_REWARDS:
            raise ValueError(f"league.exploiter_reward={self.exploiter_reward!r} must be one of "
                             f"{list(EXPLOITER_REWARDS)}")
        g = self.gauntlet
        if isinstance(g.games, bool) or not isinstance(g.games, int) or g.games < 0:
            raise ValueError(f"league.gauntlet.games={g.games!r} must be an integer >= 0 (0: no gauntlet)")
        if isinstance(g.every_steps, bool) or not isinstance(g.every_steps, int) or g.every_steps < 0:
            raise ValueError(f"league.gauntlet.every_steps={g.every_steps!r} must be an integer >= 0")
        if g.players is not None and (not isinstance(g.players, list) or not all(
                isinstance(p, str) and p for p in g.players)):
            raise ValueError(f"league.gauntlet.players={g.players!r} must be a list of player specs or null")
        if isinstance(g.replays, bool) or not isinstance(g.replays, int) or not 0 <= g.replays <= g.games:
            raise ValueError(f"league.gauntlet.replays={g.replays!r} must be an integer in [0, "
                             f"league.gauntlet.games={g.games}] (games saved per reference; 0: none)")
        if not isinstance(g.guard, bool):
            raise ValueError(f"league.gauntlet.guard={g.guard!r} must be true or false")
        if isinstance(g.guard_margin, bool) or not isinstance(g.guard_margin, int | float) or not (
                0.0 <= g.guard_margin <= 1.0):
            raise ValueError(f"league.gauntlet.guard_margin={g.guard_margin!r} must be a number in [0, 1]")
        _check_bar(g.guard_bar, "league.gauntlet.guard_bar", "no bar")
        patience = g.guard_patience
        if isinstance(patience, bool) or not isinstance(patience, int) or patience < 1:
            raise ValueError(f"league.gauntlet.guard_patience={g.guard_patience!r} must be an integer >= 1 "
                             "(rejections in a row before the learner is restored)")
        if g.replays and game is not None:
            if game not in REPLAY_GAMES:
                raise ValueError(f"league.gauntlet.replays={g.replays}: replays record {list(REPLAY_GAMES)} "
                                 f"games, not {game!r}; set it to 0")
        if game is not None and self.scripted is not None:
            bots = SCRIPTED_BOTS.get(game, ())
            models = [b for b in self.scripted if b.startswith(SB3_PREFIX)]  # fixed SB3 players
            missing = [m for m in models if not os.path.isfile(m.removeprefix(SB3_PREFIX))]
            if missing:
                raise ValueError(f"league.scripted names Stable-Baselines3 models {missing} whose files do "
                                 "not exist")
            unknown = [b for b in self.scripted
                       if b not in models and b.removeprefix(SCRIPTED_PREFIX) not in bots]
            if unknown:
                raise ValueError(f"league.scripted names bots {unknown} that {game!r} does not have; "
                                 f"available: {list(SCRIPTED_BOTS.get(game, ()))}")

        if self.publish not in PUBLISH_MODES:
            raise ValueError(f"league.publish={self.publish!r} must be one of {list(PUBLISH_MODES)}")
        if isinstance(self.publish_window, bool) or not isinstance(self.publish_window, int) or (
                self.publish_window < 1):
            raise ValueError(f"league.publish_window={self.publish_window!r} must be an integer >= 1 "
                             "(snapshots in the published mixture)")
        if isinstance(self.meta_games, bool) or not isinstance(self.meta_games, int) or self.meta_games < 2:
            raise ValueError(f"league.meta_games={self.meta_games!r} must be an integer >= 2 (games of each "
                             "new snapshot against each earlier one)")
        r = self.retention
        if not isinstance(r.enabled, bool):
            raise ValueError(f"league.retention.enabled={r.enabled!r} must be true or false")
        for name in ("keep_recent", "keep_top", "max_rejected", "max_replays"):
            value = getattr(r, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"league.retention.{name}={value!r} must be an integer >= 0")
        if r.enabled and r.keep_recent < 1:
            raise ValueError("league.retention.keep_recent=0 would retire the newest snapshot; keep at "
                             "least 1 (or set league.retention.enabled=false)")
        if not isinstance(self.verify_all, bool):
            raise ValueError(f"league.verify_all={self.verify_all!r} must be true or false")
        if not isinstance(self.exploiter_ranks, bool):
            raise ValueError(f"league.exploiter_ranks={self.exploiter_ranks!r} must be true or false")
        if self.main_exploiter is not None:
            m = self.main_exploiter
            _check_num_envs(m.num_envs, "league.main_exploiter.num_envs")
            for name in ("low_score", "snapshot_prob"):
                _check_unit(getattr(m, name), f"league.main_exploiter.{name}")
            if m.weighting not in WEIGHTINGS:
                raise ValueError(
                    f"league.main_exploiter.weighting={m.weighting!r} must be one of {sorted(WEIGHTINGS)}")
            _check_snapshot(m.snapshot, "league.main_exploiter.snapshot")
            _check_unit(m.reset_prob, "league.main_exploiter.reset_prob")
            if m.init not in EXPLOITER_INITS:
                raise ValueError(
                    f"league.main_exploiter.init={m.init!r} must be one of {list(EXPLOITER_INITS)}")
            if m.target not in MAIN_EXPLOITER_TARGETS:
                raise ValueError(f"league.main_exploiter.target={m.target!r} must be one of "
                                 f"{list(MAIN_EXPLOITER_TARGETS)}")
            if m.wait not in EXPLOITER_WAITS:
                raise ValueError(
                    f"league.main_exploiter.wait={m.wait!r} must be one of {list(EXPLOITER_WAITS)}")
            if m.wait == "rest" and m.target not in FROZEN_TARGETS:
                raise ValueError(
                    "league.main_exploiter.wait=rest rests while a frozen target has none to give; "
                    f"league.main_exploiter.target={m.target!r} is not one of {list(FROZEN_TARGETS)}")
            if m.wait == "rest" and self.exploiter_ranks:
                raise ValueError(
                    "league.main_exploiter.wait=rest is not supported with league.exploiter_ranks=true (an "
                    "exploiter rank trains every round, and its rest would free no compute for the main "
                    "learner); set one of them to live/false")
            if isinstance(m.attacks, bool) or not isinstance(m.attacks, int) or m.attacks < 1:
                raise ValueError(f"league.main_exploiter.attacks={m.attacks!r} must be an integer >= 1")
            if m.attacks > 1 and (m.target != "candidate" or m.snapshot.every_steps is None):
                raise ValueError(
                    f"league.main_exploiter.attacks={m.attacks} attacks a candidate to publish again after "
                    "a generation gives up at its budget; it needs league.main_exploiter.target=candidate "
                    f"(not {m.target!r}) and a league.main_exploiter.snapshot.every_steps (not "
                    f"{m.snapshot.every_steps!r}), or attacks=1")
            if m.start_score is not None:
                _check_unit(m.start_score, "league.main_exploiter.start_score")
                if self.gauntlet.games <= 0:
                    raise ValueError(
                        f"league.main_exploiter.start_score={m.start_score} waits for a gauntlet score, but "
                        f"league.gauntlet.games={self.gauntlet.games} plays no gauntlet; give it games or "
                        "set league.main_exploiter.start_score=null")
                if self.exploiter_ranks:
                    raise ValueError(
                        f"league.main_exploiter.start_score={m.start_score} is not supported with "
                        "league.exploiter_ranks=true (an exploiter rank trains from the first round); set "
                        "one of them to null/false")
        if self.league_exploiter is not None:
            e = self.league_exploiter
            _check_num_envs(e.num_envs, "league.league_exploiter.num_envs")
            _check_matchmaking(e.matchmaking, "league.league_exploiter.matchmaking")
            _check_snapshot(e.snapshot, "league.league_exploiter.snapshot")
            _check_unit(e.reset_prob, "league.league_exploiter.reset_prob")
        if self.matchmaking.mix.learners > 0:
            for kind in EXPLOITER_KINDS:
                exploiter = getattr(self, kind)
                if exploiter is not None and exploiter.reset_prob > 0:
                    raise ValueError(
                        f"league.matchmaking.mix.learners={self.matchmaking.mix.learners} (the learner plays "
                        f"the exploiters' live weights) needs league.{kind}.reset_prob=0, not "
                        f"{exploiter.reset_prob}: a restarted exploiter's old generation has no live weights "
                        "to play")
        if not isinstance(self.meta_exploiters, bool):
            raise ValueError(f"league.meta_exploiters={self.meta_exploiters!r} must be true or false")
        if self.meta_exploiters and not self.uses_meta_game:
            raise ValueError("league.meta_exploiters=true adds the exploiters' snapshots to PSRO's "
                             "meta-game, which this league does not keep: set league.publish=nash or give "
                             "league.matchmaking.mix.nash a share")
        _check_bar(self.meta_bar, "league.meta_bar", "every snapshot joins the meta-game")
        if self.meta_bar is not None:
            if not self.uses_meta_game:
                raise ValueError(f"league.meta_bar={self.meta_bar} filters PSRO's meta-game, which this "
                                 "league does not keep: set league.publish=nash or give "
                                 "league.matchmaking.mix.nash a share, or league.meta_bar=null")
            if g.games == 0:
                raise ValueError(f"league.meta_bar={self.meta_bar} reads the gauntlet's scores, but "
                                 "league.gauntlet.games=0 turns the gauntlet off; set league.meta_bar=null")
        a = self.answer
        for name in ("enabled", "restore", "teacher"):
            if not isinstance(getattr(a, name), bool):
                raise ValueError(f"league.answer.{name}={getattr(a, name)!r} must be true or false")
        if a.enabled:
            _check_matchmaking(MatchmakingConfig(mix=a.mix), "league.answer")
            if self.main_exploiter is None or self.main_exploiter.target != "candidate":
                target = None if self.main_exploiter is None else self.main_exploiter.target
                raise ValueError("league.answer.enabled=true answers a main exploiter that beat a candidate "
                                 "to publish; it needs league.main_exploiter with target=candidate, not "
                                 f"{'no main exploiter' if target is None else f'target={target}'}")
            if self.exploiter_ranks:
                raise ValueError("league.answer.enabled=true is not supported with "
                                 "league.exploiter_ranks=true (the exploiters' rounds do not report their "
                                 "defeats of candidates); set one of them to false")
        needs_candidates = [name for name, on in (
            (f"league.publish={self.publish}", self.publish in BY_EXPLOITERS),
            ("league.main_exploiter.target=candidate",
             self.main_exploiter is not None and self.main_exploiter.target == "candidate")) if on]
        if needs_candidates:
            what = " and ".join(needs_candidates)
            if g.games == 0 or g.guard_bar is None:
                raise ValueError(f"{what} reads the candidates to publish, the snapshots whose gauntlet "
                                 "cleared league.gauntlet.guard_bar; this league has "
                                 f"league.gauntlet.games={g.games} and guard_bar={g.guard_bar}: give the "
                                 "gauntlet games and a guard_bar (e.g. league.gauntlet.guard_bar=0.8)")
            if self.publish in BY_EXPLOITERS and self.main_exploiter is None:
                raise ValueError(f"league.publish={self.publish} publishes by the main exploiter's games "
                                 "against the candidates; this league has no league.main_exploiter")
        if self.meta_exploiters and all(getattr(self, kind) is None for kind in EXPLOITER_KINDS):
            raise ValueError("league.meta_exploiters=true needs an exploiter (league.main_exploiter or "
                             "league.league_exploiter); this league has none")
        return self

    @property
    def uses_meta_game(self) -> bool:
        """Whether the league keeps PSRO's meta-game (``arena.league.model.meta``)."""
        return self.publish == "nash" or self.matchmaking.mix.nash > 0

    def ratings_config(self) -> dict[str, float]:
        r = self.ratings
        return {"mu": r.mu, "sigma": r.sigma, "beta": r.beta, "tau": r.tau,
                "draw_probability": r.draw_probability}


def league_config(node: Any, game: str | None = None) -> LeagueConfig:
    """A checked ``LeagueConfig`` from a composed hydra node, a plain mapping or a ``LeagueConfig``."""
    from omegaconf import OmegaConf

    if isinstance(node, LeagueConfig):
        return node.validate(game)
    if OmegaConf.is_config(node):
        node = OmegaConf.to_container(node, resolve=True)
    if not isinstance(node, Mapping):
        raise ValueError(f"the league config must be a mapping, got {type(node).__name__}")
    merged = OmegaConf.merge(OmegaConf.structured(LeagueConfig), dict(node))
    config = OmegaConf.to_object(merged)
    assert isinstance(config, LeagueConfig)
    return config.validate(game)


def _check_matchmaking(m: MatchmakingConfig, where: str) -> None:
    values = [float(getattr(m.mix, s)) for s in SOURCES]
    if any(not math.isfinite(v) or v < 0 for v in values) or abs(sum(values) - 1.0) > 1e-6:
        raise ValueError(f"{where}.mix {m.mix.as_dict()} must hold probabilities >= 0 that sum to 1")
    if m.weighting not in WEIGHTINGS:
        raise ValueError(f"{where}.weighting={m.weighting!r} must be one of {sorted(WEIGHTINGS)}")
    if not (math.isfinite(m.p) and m.p > 0):
        raise ValueError(f"{where}.p={m.p!r} must be > 0")
    if not (math.isfinite(m.min_games) and m.min_games >= 0):
        raise ValueError(f"{where}.min_games={m.min_games!r} must be >= 0")
    _check_kinds(m.pool_kinds, f"{where}.pool_kinds")


def _check_snapshot(s: SnapshotConfig, where: str) -> None:
    if s.every_steps is None and s.beat_all_threshold is None:
        raise ValueError(f"{where} needs every_steps and/or beat_all_threshold; both are null")
    if s.every_steps is not None and (isinstance(s.every_steps, bool) or s.every_steps < 1):
        raise ValueError(f"{where}.every_steps={s.every_steps!r} must be a positive integer or null")
    if s.beat_all_threshold is not None and not 0.0 <= s.beat_all_threshold < 1.0:
        raise ValueError(f"{where}.beat_all_threshold={s.beat_all_threshold!r} must be in [0, 1) or null")
    if s.min_games < 0:
        raise ValueError(f"{where}.min_games={s.min_games!r} must be >= 0")
    _check_kinds(s.vs_kinds, f"{where}.vs_kinds")


def _check_kinds(kinds: list[str], where: str) -> None:
    unknown = sorted(set(kinds) - set(PLAYER_KINDS))
    if not kinds or unknown:
        raise ValueError(f"{where}={list(kinds)} must be a non-empty list of kinds {list(PLAYER_KINDS)}")


def _check_unit(value: float, where: str) -> None:
    if not (isinstance(value, int | float) and 0.0 <= value <= 1.0):
        raise ValueError(f"{where}={value!r} must be in [0, 1]")


def _check_bar(value: float | None, where: str, when_null: str) -> None:
    """A score bar: a number in (0, 1], or null (``when_null`` says what null means)."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                              or not 0.0 < value <= 1.0):
        raise ValueError(f"{where}={value!r} must be a number in (0, 1] or null ({when_null})")


def _check_num_envs(value: int | None, where: str) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"{where}={value!r} must be a positive integer or null")
