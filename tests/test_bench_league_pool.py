"""``python -m arena.bench train --league-pool N``: a small pool, league and mirror play in turns."""

import re

import pytest

from arena.bench.train_sps import main


@pytest.mark.parametrize("league", ["selfplay", "alphastar"])
def test_the_league_pool_bench_prints_both_rates_their_ratio_and_memory(tmp_path, capsys, league):
    assert main(["--league-pool", "2", "--league", league, "--num-envs", "32", "--rounds", "2",
                 "--turn", "1", "--warmup", "0", "--pool-dir", str(tmp_path / "pool"),
                 "--override", "trainer.overlap=true"]) == 0
    out = capsys.readouterr().out
    assert "with 2 snapshots in the pool (2 made now" in out
    rates = {name: (float(sps.replace(",", "")), float(low.replace(",", "")))
             for name, sps, low in re.findall(r"^(\w+)\s+SPS\s+([\d,]+)\s+\(min (-?[\d,]+)", out, re.M)}
    assert set(rates) == {"mirror", league}
    assert all(sps > 0 and low > 0 for sps, low in rates.values()), rates
    assert re.search(r"league / mirror SPS \(learner samples\): \d+\.\d\dx", out)
    assert re.search(r"resident memory: [\d,]+ MiB now", out)
    assert "distinct frozen players per step: 2.0" in out
