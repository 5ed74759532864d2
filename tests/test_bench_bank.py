"""python -m arena.bench bank: both ways of stepping a bank are timed on the same rows, and the plan it
reports is the one the bank uses."""

from __future__ import annotations

import pytest

from arena.agents import grouped
from arena.bench.bank import main

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_the_bank_benchmark_times_one_pass_and_the_plan_for_even_and_skewed_rows(capsys):
    assert main(["--players", "20", "--rows", "2000", "--reps", "1", "--turns", "1"]) == 0
    out = capsys.readouterr().out
    even, skewed = [line for line in out.splitlines() if "one pass" in line and "planned" in line]
    assert even.startswith("even") and skewed.startswith("two favourites")
    assert "2 pass(es)" in skewed  # 20% of 2000 rows on one player: padding the rest costs more than a pass
    assert grouped.plan_passes.__name__ == "plan_passes"  # the bank's own plan is back in place
