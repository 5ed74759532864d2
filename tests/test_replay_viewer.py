"""The HTML replay viewer: one self-contained file, driven in a real headless Chromium.

The browser tests skip when chromium, chromedriver or selenium is missing, unless
ARENA_REQUIRE_CHROMIUM=1 (CI) makes that a failure. ARENA_VIEWER_SCREENSHOT=PATH saves a screenshot
of the page at a late frame (the README's picture).
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import re
from pathlib import Path

import imageio.v3 as iio
import numpy as np
import pytest

from arena.agents.players import game_spaces, resolve_player
from arena.evaluation.runner import MatchSettings, play_match
from arena.replay.file import PlayerRef, Replay
from arena.replay.html import viewer_data, viewer_html, write_html
from arena.replay.record import ReplayRecorder

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
CLOSE = {"time_limit_s": 120, "spawn_distance_min_m": 15000, "spawn_distance_max_m": 20000}


@pytest.fixture(scope="module")
def replay() -> Replay:
    """A 2v2 game that ends by kills: missiles in flight, launches, kills and several pair ranges."""
    settings = MatchSettings(game="midrange", team_sizes=(2, 2), games=2, num_envs=2, seed=1, num_threads=1,
                             overrides=CLOSE)
    spaces = game_spaces("midrange", (2, 2), CLOSE)
    a, b = (resolve_player(f"scripted:{p}", "midrange", (2, 2), spaces=spaces)
            for p in ("heuristic_6km", "random"))
    recorder = ReplayRecorder("first", 1)
    result = play_match(a, b, settings, recorder=recorder)
    (game,) = recorder.replays(result.matches)
    assert game.events[:, :, game.event_names.index("kills")].sum() > 0
    return game


def embedded_data(page: str) -> dict:
    match = re.search(r'<script id="replay-data" type="application/json">(.*?)</script>', page, re.S)
    assert match is not None
    return json.loads(match.group(1))


def test_the_page_is_self_contained(replay):
    page = viewer_html(replay)
    assert not re.search(r"\b(src|href)\s*=", page)  # no file, script, style or image fetched
    assert "http://" not in page and "https://" not in page
    for element_id in ("canvas", "range", "play", "scrub", "speed"):
        assert f'id="{element_id}"' in page
    data = embedded_data(page)
    assert data == json.loads(json.dumps(viewer_data(replay)))
    assert data["frames"] == replay.length and len(data["fighters"]) == 4
    assert len(data["pairs"]) == 4 and len(data["ranges"][0]) == replay.length
    kinds = {m["kind"] for m in data["markers"]}
    assert {"launch", "kill"} <= kinds
    assert data["flights"]


def test_each_missile_carries_its_shooters_and_targets_labels(replay):
    data = viewer_data(replay)
    labels = [f["label"] for f in data["fighters"]]
    assert labels == ["A1", "A2", "B1", "B2"]
    for flight in data["flights"]:
        assert flight["label"] == f"{labels[flight['owner']]}>{labels[flight['target']]}"
    shooters = {flight["owner"] for flight in data["flights"]}
    assert len({labels[s][0] for s in shooters}) >= 1


def test_player_names_cannot_break_out_of_the_data_element(replay):
    name = 'evil</script><script>alert("x")</script>'
    page = viewer_html(dataclasses.replace(replay, players=(PlayerRef(name), replay.players[1])))
    assert page.count("</script>") == 2  # the data's and the code's own
    assert embedded_data(page)["title"].startswith(name)
    assert "<title>evil&lt;/script&gt;" in page


# ---------------------------------------------------------------------- in Chromium


@pytest.fixture(scope="module")
def browser():
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.path.exists(p)]
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        missing.append("the selenium package")
    if missing:
        reason = f"the viewer test needs {', '.join(missing)}"
        if os.environ.get("ARENA_REQUIRE_CHROMIUM") == "1":
            pytest.fail(f"{reason} (ARENA_REQUIRE_CHROMIUM=1)")
        pytest.skip(reason)
    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1240,1250"):
        options.add_argument(arg)
    options.binary_location = CHROMIUM
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def page(browser, replay, tmp_path_factory):
    path = write_html(replay, tmp_path_factory.mktemp("viewer") / "game.html")
    browser.get(Path(path).as_uri())
    return browser


def scrub_to(driver, frame: int) -> None:
    driver.execute_script("const s = document.getElementById('scrub'); s.value = arguments[0];"
                          "s.dispatchEvent(new Event('input'));", frame)


def canvas_pixels(driver, element_id: str) -> np.ndarray:
    png = driver.find_element("id", element_id).screenshot_as_png
    return iio.imread(io.BytesIO(png))


def test_the_viewer_draws_another_picture_when_the_scrubber_moves(page, replay):
    from selenium.webdriver.common.keys import Keys

    assert page.execute_script("return window.replayViewer.frames") == replay.length
    early, late = 3, replay.length - 40
    scrub_to(page, early)
    assert page.execute_script("return window.replayViewer.frame") == early
    before, chart_before = canvas_pixels(page, "canvas"), canvas_pixels(page, "range")
    scrub_to(page, late)
    assert page.execute_script("return window.replayViewer.frame") == late
    after, chart_after = canvas_pixels(page, "canvas"), canvas_pixels(page, "range")
    drawn = (after[..., :3] < 200).any(axis=-1).sum()  # dark pixels: tracks, fighters, text
    assert drawn > 500
    assert (before[..., :3] != after[..., :3]).any(axis=-1).sum() > 500
    assert (chart_before[..., :3] != chart_after[..., :3]).any(axis=-1).sum() > 50  # the time cursor moved
    page.find_element("id", "scrub").send_keys(Keys.ARROW_LEFT)  # the keyboard moves it too
    assert page.execute_script("return window.replayViewer.frame") == late - 1
    assert page.find_element("id", "scrub").get_attribute("value") == str(late - 1)
    if os.environ.get("ARENA_VIEWER_SCREENSHOT"):  # just after the first kill, its cross and the tracks
        kills = [m["frame"] for m in viewer_data(replay)["markers"] if m["kind"] == "kill"]
        scrub_to(page, min(kills[0] + 6, replay.length - 1))
        page.save_screenshot(os.environ["ARENA_VIEWER_SCREENSHOT"])


def test_a_team_games_missile_is_drawn_with_its_label(page, replay):
    data = viewer_data(replay)
    flight = max(data["flights"], key=lambda f: len(f["x"]))
    frame = flight["start"] + len(flight["x"]) // 2
    scrub_to(page, frame)
    box = page.find_element("id", "labels")
    assert box.is_selected()  # on by default in a team game
    with_labels = canvas_pixels(page, "canvas")
    box.click()
    without = canvas_pixels(page, "canvas")
    box.click()
    assert box.is_selected()
    assert (with_labels[..., :3] != without[..., :3]).any(axis=-1).sum() > 20  # the text's pixels


def test_play_advances_the_frame_and_pause_stops_it(page):
    from selenium.webdriver.support.ui import Select, WebDriverWait

    scrub_to(page, 0)
    Select(page.find_element("id", "speed")).select_by_value("32")
    play = page.find_element("id", "play")
    play.click()
    WebDriverWait(page, 20).until(lambda d: d.execute_script("return window.replayViewer.frame") > 5)
    assert page.execute_script("return window.replayViewer.playing") is True
    play.click()
    assert page.execute_script("return window.replayViewer.playing") is False
    assert play.text == "Play"
    stopped = page.execute_script("return window.replayViewer.frame")
    assert page.execute_script("return window.replayViewer.setFrame(arguments[0])", stopped) == stopped
    assert page.find_element("id", "scrub").get_attribute("value") == str(stopped)


def test_the_page_runs_without_script_errors(page):
    logs = page.get_log("browser")
    assert not [entry for entry in logs if entry["level"] == "SEVERE"], logs
