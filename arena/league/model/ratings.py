"""TrueSkill ratings of league players (the `trueskill` package does the math).

Every player is rated the same way, scripted bots included: they anchor the scale by being players whose
skill never changes, not by having frozen ratings.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

import trueskill

from arena.envs.outcomes import Result, ResultLike

DEFAULT_MU = 25.0


@dataclass(frozen=True)
class RatingEntry:
    """One leaderboard row."""

    player_id: str
    mu: float
    sigma: float

    @property
    def conservative(self) -> float:
        """mu - 3 sigma: a rating the player is very likely (~99.9%) to be above."""
        return self.mu - 3.0 * self.sigma


class Ratings:
    """TrueSkill ratings keyed by player id, over 1v1 and team matches with draws."""

    def __init__(
        self,
        mu: float = DEFAULT_MU,
        sigma: float = DEFAULT_MU / 3,
        beta: float = DEFAULT_MU / 6,
        tau: float = DEFAULT_MU / 300,
        draw_probability: float = 0.1,
    ) -> None:
        for name, value, ok, allowed in (
            ("sigma", sigma, sigma > 0, "> 0"),
            ("beta", beta, beta > 0, "> 0"),
            ("tau", tau, tau >= 0, ">= 0"),
            ("draw_probability", draw_probability, 0 <= draw_probability < 1, "in [0, 1)"),
        ):
            if not ok:
                raise ValueError(f"TrueSkill {name}={value!r} must be {allowed}")
        self.env = trueskill.TrueSkill(
            mu=mu, sigma=sigma, beta=beta, tau=tau, draw_probability=draw_probability
        )
        # (mu, sigma) exactly as rated or set: trueskill.Rating keeps precision (1/sigma^2) and
        # precision-adjusted mean, and a round trip through it can move the last bit, so replaying the
        # same matches from the store would not give bit-identical ratings.
        self._ratings: dict[str, tuple[float, float]] = {}

    def config(self) -> dict[str, float]:
        """The TrueSkill parameters, for persistence (`Ratings(**config)` rebuilds the environment)."""
        return {
            "mu": self.env.mu,
            "sigma": self.env.sigma,
            "beta": self.env.beta,
            "tau": self.env.tau,
            "draw_probability": self.env.draw_probability,
        }

    # -- get / set ---------------------------------------------------------------------------------

    def get(self, player_id: str) -> tuple[float, float]:
        """(mu, sigma) of a player; the environment's initial rating for a player never rated."""
        rating = self._ratings.get(player_id)
        return rating if rating is not None else (float(self.env.mu), float(self.env.sigma))

    def set(self, player_id: str, mu: float, sigma: float) -> None:
        """Set a player's rating (used when resuming from the league store)."""
        if not (math.isfinite(mu) and math.isfinite(sigma) and sigma > 0):
            raise ValueError(f"rating of {player_id!r} must have finite mu and sigma > 0; got {mu}, {sigma}")
        self._ratings[player_id] = (float(mu), float(sigma))

    def __contains__(self, player_id: object) -> bool:
        return player_id in self._ratings

    def as_dict(self) -> dict[str, tuple[float, float]]:
        """(mu, sigma) of every player that has a rating."""
        return dict(self._ratings)

    def conservative(self, player_id: str) -> float:
        mu, sigma = self.get(player_id)
        return mu - 3.0 * sigma

    # -- updates -----------------------------------------------------------------------------------

    def updated(
        self, team_a: Sequence[str], team_b: Sequence[str], outcome: ResultLike
    ) -> dict[str, tuple[float, float]]:
        """The ratings every player of both teams would have after this match, without applying them.

        outcome is from team A's point of view. A player may not be on both teams: a match against
        yourself carries no information about your skill (rate mirror self-play matches not at all).
        """
        result = Result.parse(outcome)
        a, b = check_team(team_a, "team_a"), check_team(team_b, "team_b")
        both = sorted(set(a) & set(b))
        if both:
            raise ValueError(f"players {both} are on both teams; a player cannot be rated against itself")
        ranks = {1: [0, 1], 0: [0, 0], -1: [1, 0]}[result]
        groups = [{p: self._rating(p) for p in a}, {p: self._rating(p) for p in b}]
        new_a, new_b = self.env.rate(groups, ranks=ranks)
        return {p: (float(r.mu), float(r.sigma)) for p, r in (*new_a.items(), *new_b.items())}

    def rate(
        self, team_a: Sequence[str], team_b: Sequence[str], outcome: ResultLike
    ) -> dict[str, tuple[float, float]]:
        """Update the ratings with one match (outcome from team A's view); returns the new ratings."""
        new = self.updated(team_a, team_b, outcome)
        for player_id, (mu, sigma) in new.items():
            self.set(player_id, mu, sigma)
        return new

    # -- read-outs ---------------------------------------------------------------------------------

    def leaderboard(self, players: Iterable[str] | None = None) -> list[RatingEntry]:
        """Players (all rated ones by default) sorted by conservative rating mu - 3 sigma, best first."""
        ids = list(self._ratings) if players is None else list(dict.fromkeys(players))
        entries = [RatingEntry(p, *self.get(p)) for p in ids]
        return sorted(entries, key=lambda e: (-e.conservative, -e.mu, e.player_id))

    def win_probability(self, a: str | Sequence[str], b: str | Sequence[str]) -> float:
        """P(a beats b) from the ratings, for players or teams (sums of skills).

        Phi((sum mu_a - sum mu_b) / sqrt(n beta^2 + sum sigma^2)), n = players in both teams: the
        standard TrueSkill formula. It ignores draws (the draw margin), so P(a) + P(b) = 1.
        """
        team_a = check_team([a] if isinstance(a, str) else a, "a")
        team_b = check_team([b] if isinstance(b, str) else b, "b")
        ratings = [self.get(p) for p in team_a + team_b]
        split = len(team_a)
        delta = sum(mu for mu, _ in ratings[:split]) - sum(mu for mu, _ in ratings[split:])
        denom = math.sqrt(len(ratings) * self.env.beta**2 + sum(sigma**2 for _, sigma in ratings))
        return NormalDist().cdf(delta / denom)

    def _rating(self, player_id: str) -> trueskill.Rating:
        return self.env.create_rating(*self.get(player_id))


def check_team(team: Sequence[str], name: str) -> list[str]:
    """The team's player ids as a list, or a ``ValueError`` naming what is wrong."""
    if isinstance(team, str) or not isinstance(team, Sequence):
        raise ValueError(f"{name} {team!r} must be a list of player ids")
    players = list(team)
    if not players:
        raise ValueError(f"{name} is empty; a team needs at least one player")
    if len(set(players)) != len(players):
        raise ValueError(f"{name} {players} names a player more than once")
    for p in players:
        if not isinstance(p, str) or not p:
            raise ValueError(f"{name} has a bad player id {p!r}; ids are non-empty strings")
    return players


class TwoTeamRatings(Ratings):
    """``Ratings`` with the closed-form two-team update (every other method is inherited).

    TrueSkill for two-team matches in closed form: the same ratings as ``Ratings``, about 20x faster.

    Every league match has two teams, and for two teams TrueSkill's factor graph is a tree whose single
    pass gives the classic update (Herbrich, Minka and Graepel 2007): with s_i^2 = sigma_i^2 + tau^2,
    c^2 = n beta^2 + sum s_i^2, t = (sum mu_winners - sum mu_losers) / c and eps = draw_margin / c,

        mu_i    += +-(s_i^2 / c) v(t, eps)          (+ for the winners, - for the losers)
        sigma_i^2 = s_i^2 (1 - (s_i^2 / c^2) w(t, eps))

    with v, w and the draw margin taken from the ``trueskill`` package itself, so the numbers agree with
    its message passing to rounding (~1e-12). The package builds and runs a factor graph per match
    (~0.5 ms); training rates thousands of matches a minute, which this keeps off the critical path.
    """

    @classmethod
    def like(cls, ratings: Ratings) -> TwoTeamRatings:
        """A copy of ``ratings`` (settings and every player's rating)."""
        out = cls(**ratings.config())
        for player_id, (mu, sigma) in ratings.as_dict().items():
            out.set(player_id, mu, sigma)
        return out

    def updated(
        self, team_a: Sequence[str], team_b: Sequence[str], outcome: ResultLike
    ) -> dict[str, tuple[float, float]]:
        result = Result.parse(outcome)
        a, b = check_team(team_a, "team_a"), check_team(team_b, "team_b")
        both = sorted(set(a) & set(b))
        if both:
            raise ValueError(f"players {both} are on both teams; a player cannot be rated against itself")
        env = self.env
        if result == Result.DRAW and env.draw_probability == 0:
            return super().updated(a, b, result)  # a "draw that cannot happen": the package's own answer
        tau2, n = env.tau**2, len(a) + len(b)
        rated = [(p, *self.get(p)) for p in (*a, *b)]
        spread = {p: sigma**2 + tau2 for p, _, sigma in rated}  # s_i^2: the prior widened by tau
        c2 = n * env.beta**2 + sum(spread.values())
        c = math.sqrt(c2)
        diff = (sum(mu for p, mu, _ in rated[: len(a)]) - sum(mu for p, mu, _ in rated[len(a):])) / c
        margin = trueskill.calc_draw_margin(env.draw_probability, n, env) / c
        if result == Result.DRAW:
            v, w = env.v_draw(diff, margin), env.w_draw(diff, margin)
        elif result == Result.WIN:
            v, w = env.v_win(diff, margin), env.w_win(diff, margin)
        else:  # team B won: the same update seen from B, with A's sign flipped
            v, w = -env.v_win(-diff, margin), env.w_win(-diff, margin)
        out = {}
        for k, (p, mu, _) in enumerate(rated):
            sign = 1.0 if k < len(a) else -1.0
            s2 = spread[p]
            out[p] = (mu + sign * (s2 / c) * v, math.sqrt(s2 * (1.0 - (s2 / c2) * w)))
        return out
