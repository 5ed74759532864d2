"""``python -m arena.bench league-scale`` on tiny stores: every phase runs on a real store and the record
holds what the results page copies."""

from __future__ import annotations

import json
import sqlite3

from arena.bench.league_scale import MATCHES_PER_CHECKPOINT, fill, first_open, main, training_process
from arena.league.model.league import League
from arena.league.model.store import LEAGUE_DB, LeagueStore


def test_the_synthetic_league_resumes_from_its_checkpoint_mark_and_rolls_back_what_followed(tmp_path):
    total = MATCHES_PER_CHECKPOINT + 500
    fill(tmp_path, 30, total)  # up to the learner's last checkpoint
    conn = sqlite3.connect(tmp_path / LEAGUE_DB)
    assert conn.execute("SELECT COUNT(*) FROM matches").fetchone()[0] == MATCHES_PER_CHECKPOINT
    first_open(tmp_path, total)  # a replay of all of it, a mark, then the matches after the checkpoint
    tags = dict(conn.execute("SELECT checkpoint, COUNT(*) FROM match_learners GROUP BY checkpoint"))
    assert tags == {0: MATCHES_PER_CHECKPOINT, 1: 500}
    conn.close()
    with LeagueStore(tmp_path / LEAGUE_DB, create=False) as store:
        assert store.latest_mark().match_id == MATCHES_PER_CHECKPOINT
    figures = training_process(tmp_path, total)
    assert figures["rolled_back"] == 500
    league = League.open(tmp_path)
    assert len(league.pool.snapshots()) == 30 and league.match_count == MATCHES_PER_CHECKPOINT + 40
    assert league.store.latest_mark().match_id == MATCHES_PER_CHECKPOINT  # the rollback kept it
    league.close()


def test_the_bench_prints_every_size_and_writes_its_record(tmp_path, capsys):
    record = tmp_path / "scale.json"
    assert main(["--snapshots", "5", "12", "--matches", "600", "--dir", str(tmp_path / "stores"),
                 "--json", str(record)]) == 0
    out = capsys.readouterr().out
    assert "resume + rollback from a mark (s)" in out and "12 / 0.0006M" in out
    data = json.loads(record.read_text())
    assert data["bench"] == "league-scale" and [s["snapshots"] for s in data["sizes"]] == [5, 12]
    for size in data["sizes"]:
        for key in ("open_without_mark_s", "resume_s", "record_ms", "matchmaking_ms", "gate_ms", "view_ms",
                    "chart_view_ms", "rss_mib", "show_s", "show_peak_mib", "store_mib"):
            assert size[key] > 0, key
