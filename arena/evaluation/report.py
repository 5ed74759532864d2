"""Plain-text reports of head-to-head matches and round robins (the CLI prints them)."""

from __future__ import annotations

import math

from arena.evaluation.round_robin import RoundRobinResult
from arena.evaluation.runner import MatchResult
from arena.league.model.stats import sprt_bounds


def _elo(x: float) -> str:
    return f"{x:+.0f}" if math.isfinite(x) else ("+inf" if x > 0 else "-inf")


def format_match(result: MatchResult) -> str:
    """W/D/L, score with its 95% Wilson interval, Elo difference, SPRT, the game's events per match
    (each side's fighters summed) and speed, one per line."""
    st = result.settings
    n0, n1 = st.team_sizes
    s, s_lo, s_hi = result.score()
    e, e_lo, e_hi = result.elo()
    lines = [
        f"{result.a} vs {result.b}: {st.game} {n0}v{n1}, {result.games} games "
        f"({result.games // 2} side-swapped, seed-paired pairs), {st.envs} envs, seed {st.seed}",
        f"  W/D/L     {result.wins} / {result.draws} / {result.losses}  (from {result.a}'s side)",
        f"  score     {s:.3f}  95% CI [{s_lo:.3f}, {s_hi:.3f}]",
        f"  Elo diff  {_elo(e)}  95% CI [{_elo(e_lo)}, {_elo(e_hi)}]",
    ]
    if st.sprt is not None:
        t = st.sprt
        lower, upper = sprt_bounds(t.alpha, t.beta)
        verdict = {"H1": f"H1 accepted: Elo {t.elo1:+g} is more likely than {t.elo0:+g}",
                   "H0": f"H0 accepted: Elo {t.elo0:+g} is more likely than {t.elo1:+g}"}.get(
                       result.sprt_verdict or "", "undecided")
        llr = "n/a" if result.sprt_llr is None else f"{result.sprt_llr:.2f}"
        stop = f"; stopped after {result.games} of {st.even_games} games" if result.stopped_early else ""
        lines.append(f"  SPRT      {verdict}{stop}")
        lines.append(f"            LLR {llr}, bounds [{lower:.2f}, {upper:.2f}] "
                     f"(elo0 {t.elo0:g}, elo1 {t.elo1:g}, alpha {t.alpha:g}, beta {t.beta:g})")
    elif st.games != st.even_games:
        lines.append(f"  note      {st.games} games asked, {st.even_games} played: games come in pairs")
    shown = {name: ab for name, ab in result.events.items() if any(ab)}
    if shown:
        for label, k in ((result.a, 0), (result.b, 1)):
            counts = ", ".join(f"{name} {ab[k]:.2f}" for name, ab in shown.items())
            lines.append(f"  {'per match' if k == 0 else '':9} {label}: {counts}")
    if max(n0, n1) > 1:  # a team game: each fighter by its place in its team
        for label, k in ((result.a, 0), (result.b, 1)):
            for place, fighter in enumerate(result.fighters[k]):
                counts = ", ".join(f"{name} {v:.2f}" for name, v in fighter.items()
                                   if name in shown or name == "died_first")
                head = "fighter" if k == 0 and place == 0 else ""
                lines.append(f"  {head:9} {label} #{place}: {counts}")
    lines.append(f"  speed     {result.games_per_second:.1f} games/s ({result.elapsed_s:.2f} s, "
                 f"{result.steps} steps)")
    return "\n".join(lines)


def format_round_robin(rr: RoundRobinResult) -> str:
    """The Bradley-Terry Elo table (best first) and the pairwise score table (row's score vs column)."""
    ratings = rr.fit.as_dict()
    order = sorted(rr.players, key=lambda p: -ratings[p][0])
    width = max(len(p) for p in rr.players)
    anchor = f"anchored on {rr.fit.anchor} = 0" if rr.fit.anchor else "anchored on the mean = 0"
    lines = [f"Bradley-Terry Elo ({anchor}), 95% intervals", ""]
    lines.append(f"  {'#':>2}  {'player':<{width}}  {'Elo':>6}  {'95% CI':>15}  {'games':>6}")
    for rank, p in enumerate(order, 1):
        e, lo, hi = ratings[p]
        lines.append(f"  {rank:>2}  {p:<{width}}  {_elo(e):>6}  {f'[{_elo(lo)}, {_elo(hi)}]':>15}  "
                     f"{rr.games_of(p):>6}")
    lines += ["", "Pairwise scores (row against column; 1 = row won every game)", ""]
    header = "".join(f"{f'#{i}':>7}" for i in range(1, len(order) + 1))
    lines.append(f"  {'#':>2}  {'player':<{width}}{header}")
    for i, p in enumerate(order, 1):
        cells = []
        for q in order:
            s = None if p == q else rr.score(p, q)
            cells.append(f"{'-' if s is None else f'{s:.2f}':>7}")
        lines.append(f"  {i:>2}  {p:<{width}}{''.join(cells)}")
    lines.append(f"\n  {sum(sum(r) for r in rr.results.values())} games in {rr.elapsed_s:.1f} s")
    return "\n".join(lines)
