"""The web page end to end in a real browser: Playwright drives Debian's Chromium (no Playwright
browser download), against the server running in this process on a free localhost port.

A whole round is played by clicking highlighted tiles and ends; the page's scores must equal the
server's record, and the downloaded record must validate.  A screenshot of a mid-round board is
taken (into the test's temp folder; ``SEVENROCKS_UPDATE_SCREENSHOT=1`` writes it to
docs/web_screenshot.png instead, the picture in the README).  Without /usr/bin/chromium this test FAILS (install it with
``apt-get install -y chromium``): it never passes silently.
"""

from __future__ import annotations

import json
import os
import re
import socket
import threading
import time
from pathlib import Path

import pytest
import uvicorn
from playwright.sync_api import sync_playwright

from sevenrocks_env import record as records
from sevenrocks_env.web.api import create_app
from sevenrocks_env.web.games import GameStore
from sevenrocks_env.web.origin import host_names_for

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
DOCS_SCREENSHOT = Path(__file__).resolve().parents[1] / "docs" / "web_screenshot.png"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    """The app served by uvicorn in a thread; yields (base url, app)."""
    app = create_app(GameStore(), host_names=host_names_for("127.0.0.1"))  # as `sevenrocks serve` makes it
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    instance = uvicorn.Server(config)
    thread = threading.Thread(target=instance.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not instance.started:
        if time.monotonic() > deadline:
            pytest.fail("the web server did not start within 10 s")
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}", app
    instance.should_exit = True
    thread.join(10)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: the browser test needs Debian's Chromium "
                    f"(apt-get install -y chromium; Playwright's own download does not work here)")
    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True,
            accept_downloads=True, viewport={"width": 1100, "height": 1000})
        yield context
        context.close()


def ply(page) -> int:
    return page.evaluate("App.ui.view ? App.ui.view.ply : -1")


def start_match(browser, base: str, delay: int, seat: int | None = None,
                target: int | None = None):
    """A new page that starts a match against three `greedy` bots, deal seed 4; returns the
    page and the list its JavaScript errors go to."""
    page = browser.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(base + "/")
    page.wait_for_function("document.querySelectorAll('select.agent option').length >= 12")
    for name in ("partner", "left", "right"):
        page.select_option(f"select[name={name}]", "greedy")
    if seat is not None:
        page.select_option("select[name=seat]", str(seat))
    if target is not None:
        page.fill("input[name=target]", str(target))
    page.fill("input[name=seed]", "4")
    page.evaluate(f"const d = document.getElementById('delay'); d.value = {delay};"
                  "d.dispatchEvent(new Event('input'))")
    page.click("#start-button")
    page.wait_for_selector("#game:not([hidden])")
    return page, errors


def wait_for_turn_or_summary(page) -> str:
    """Wait until the human must act or a round summary is open; say which."""
    page.wait_for_function(
        "document.getElementById('summary').open || (App.ui.view && App.ui.view.next === 'you'"
        " && !App.ui.busy)", timeout=20000)
    return "summary" if page.evaluate("document.getElementById('summary').open") else "turn"


def play_my_turn(page, notes: dict) -> None:
    """Click a highlighted tile, then a highlighted end if the tile fits more than one."""
    before = ply(page)
    if page.locator("#knock").is_visible():
        page.click("#knock")
    else:
        stuck = page.locator("#hand .hand-tile:not(.playable)")
        if stuck.count() and "illegal" not in notes:  # an illegal click says why (R3/R4)
            stuck.first.click()
            notes["illegal"] = page.locator("#notice").inner_text()
        if not page.locator("#hand .hand-tile.selected").count():
            page.locator("#hand .hand-tile.playable").first.click()
        if ply(page) == before and page.locator("#board .marker.target").count():
            notes["chose_end"] = True
            page.locator("#board .marker.target").first.click()
    page.wait_for_function(f"App.ui.view.ply > {before}", timeout=10000)


def test_play_a_round_in_chromium(server, browser, tmp_path, monkeypatch):
    base, app = server
    # an agent label is shown as text, never read as markup (labels name `--agent` specs)
    marked = "<i>greedy</i>"
    monkeypatch.setattr(app.state.store, "menu", [(spec, marked if spec == "greedy" else label)
                                                  for spec, label in app.state.store.menu])
    page, errors = start_match(browser, base, delay=30, seat=0)
    seats = page.inner_text("#seats")
    assert seats.count(marked) == 3 and "you" in seats and "seat 2" in seats, seats
    notes, screenshot_taken = {}, False
    while wait_for_turn_or_summary(page) == "turn":
        board = page.evaluate("App.ui.view.board")
        choice = page.evaluate("App.ui.view.hand.findIndex((t) => t.places.length > 1)")
        spinner = any(tile["spinner"] for tile in board["tiles"])
        if not screenshot_taken and spinner and len(board["tiles"]) >= 9 and choice >= 0:
            # mid-round, a tile picked that fits two ends: both ends highlighted
            page.locator("#hand .hand-tile").nth(choice).click()
            page.wait_for_selector("#board .marker.target")
            shot = (DOCS_SCREENSHOT if os.environ.get("SEVENROCKS_UPDATE_SCREENSHOT") == "1"
                    else tmp_path / "web_screenshot.png")
            page.screenshot(path=str(shot), full_page=True)
            assert shot.stat().st_size > 10_000  # a real picture, not an empty page
            screenshot_taken = True
        play_my_turn(page, notes)
    assert screenshot_taken, "seed 4 no longer gives a mid-round board with a spinner"
    assert notes.get("chose_end"), "no tile needed a click on a highlighted end"
    assert not errors, errors

    # the round summary and the score tracks agree with the server's record
    store = app.state.store
    game = store.get(page.evaluate("App.ui.view.id"))
    record = records.game_record(game.match)
    first = record["rounds"][0]
    page_scores = [int(page.inner_text(f"#score-{team}")) for team in (0, 1)]
    assert page_scores == first["scores"] == game.match.history[0].scores
    summary = page.inner_text("#summary-body")
    assert f"Scores: team 0 {first['scores'][0]}, team 1 {first['scores'][1]}" in summary
    if first["result"] != "won":
        assert "Deductions (R7)" in summary
    if "illegal" in notes:
        assert "(R3)" in notes["illegal"] or "(R4)" in notes["illegal"], notes["illegal"]

    # download the record and validate it
    page.click("#summary-continue")
    with page.expect_download() as download:
        page.click("#download")
    path = tmp_path / "record.json"
    download.value.save_as(path)
    saved = records.load(path)  # validates (raises RecordError otherwise)
    assert saved["rounds"][0]["scores"] == page_scores

    # the record replays with step controls; a broken one is refused with the reason
    page.click("#new-match")
    page.set_input_files("#record-file", str(path))
    page.wait_for_selector("#replay:not([hidden])")
    page.wait_for_function("document.getElementById('replay-position').textContent.startsWith('move 0')")
    page.click("#replay-controls [data-step=next]")
    page.wait_for_function("document.getElementById('replay-position').textContent.startsWith('move 1')")
    assert page.locator("#replay-board .domino").count() == 1
    page.click("#replay-controls [data-step=last]")
    page.wait_for_function("document.getElementById('replay-position').textContent.includes('"
                           + str(first["result"]) + "')")
    page.click("#replay-close")
    broken = tmp_path / "broken.json"
    saved["rounds"][0]["scores"] = [saved["rounds"][0]["scores"][0] + 5,
                                    saved["rounds"][0]["scores"][1]]
    broken.write_text(json.dumps(saved))
    page.set_input_files("#record-file", str(broken))
    page.wait_for_function("document.getElementById('start-error').textContent.length > 0")
    assert "not a valid game record" in page.inner_text("#start-error")
    assert not errors, errors


def test_phone_width_keeps_board_and_hand_on_screen(server, browser):
    base, _ = server
    page = browser.new_page()
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(base + "/")
    page.wait_for_function("document.querySelectorAll('select.agent option').length >= 12")
    for name in ("partner", "left", "right"):
        page.select_option(f"select[name={name}]", "greedy")
    page.click("#start-button")
    page.wait_for_selector("#hand .hand-tile")
    board = page.locator("#board").bounding_box()
    assert board["x"] >= 0 and board["x"] + board["width"] <= 390
    for index in range(page.locator("#hand .hand-tile").count()):
        box = page.locator("#hand .hand-tile").nth(index).bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # no sideways scroll


def _open(page, base: str) -> None:
    page.goto(base + "/")
    page.wait_for_function("document.querySelectorAll('select.agent option').length >= 12")


def _start(page, seat: int, seed: int) -> None:
    for name in ("partner", "left", "right"):
        page.select_option(f"select[name={name}]", "greedy")
    page.select_option("select[name=seat]", str(seat))
    page.fill("input[name=seed]", str(seed))
    page.evaluate("document.getElementById('delay').value = 0")
    page.click("#start-button")
    page.wait_for_selector("#game:not([hidden])")


def _your_first_turn(page) -> None:
    """Seed 0 with greedy bots, the human at seat 0: wait for the human's first turn."""
    _start(page, seat=0, seed=0)
    page.wait_for_function("App.ui.view && App.ui.view.next === 'you' && !App.ui.busy",
                           timeout=20000)


def _first_step_answer(page, then: str) -> None:
    """The page's first bot move reaches the server, then its answer meets ``then`` (a
    JavaScript statement: a delay, or an error as if the network lost it)."""
    page.evaluate("""() => { const fetch0 = window.fetch; let steps = 0;
        window.fetch = async (...args) => { const answer = await fetch0(...args);
          if (String(args[0]).endsWith('/step') && steps++ === 0) { %s; }
          return answer; }; }""" % then)


def _match_whose_first_answer(server, browser, then: str):
    """A new page with a match started where a bot opens (seed 3: a step is sent at once),
    the answer to that first step meeting ``then`` (:func:`_first_step_answer`)."""
    base, _ = server
    page = browser.new_page()
    _open(page, base)
    _first_step_answer(page, then)
    _start(page, seat=0, seed=3)
    return page


def test_a_new_match_is_not_taken_over_by_the_old_match_answers(server, browser):
    """A bot move of the old match still on its way when a new match starts must not replace
    the new match on the page (it used to, and the new one stalled at move 0)."""
    page = _match_whose_first_answer(
        server, browser, "await new Promise((done) => setTimeout(done, 1500))")
    page.wait_for_function("App.ui.busy", timeout=5000)
    first = page.evaluate("App.ui.view.id")
    page.click("#new-match")
    page.select_option("select[name=seat]", "1")
    page.click("#start-button")
    page.wait_for_function(f"App.ui.view && App.ui.view.id !== '{first}'")
    second = page.evaluate("App.ui.view.id")
    page.wait_for_timeout(2000)  # the old match's delayed answer has arrived
    assert page.evaluate("App.ui.view.id") == second
    page.wait_for_function("App.ui.view.ply > 0 || App.ui.view.next === 'you'", timeout=10000)


def test_a_tile_that_fits_two_ends_is_played_from_the_keyboard(server, browser):
    """Enter on the tile, then the highlighted ends are buttons in the tab order: Enter plays."""
    base, _ = server
    page = browser.new_page()
    _open(page, base)
    _your_first_turn(page)
    index = page.evaluate("App.ui.view.hand.findIndex((t) => t.places.length > 1)")
    assert index >= 0, "seed 0 no longer gives a first turn with a tile that fits two ends"
    before = ply(page)
    page.locator("#hand .hand-tile").nth(index).focus()
    page.keyboard.press("Enter")
    targets = page.locator("#board .marker.target[role=button][tabindex='0']")
    assert targets.count() == 2
    assert page.evaluate("document.activeElement.matches('#board .marker.target')")
    page.keyboard.press("Enter")
    page.wait_for_function(f"App.ui.view.ply > {before}", timeout=10000)


def test_the_final_summary_downloads_the_whole_match(server, browser, tmp_path):
    """At the match's end the summary is a modal that cannot be closed: the page's own
    Download record button was behind it, so the full record could not be had.  It says
    whether the human's team won; its rematch frees the old game and summarises the new
    match's rounds from its first."""
    base, app = server
    page, errors = start_match(browser, base, delay=0, target=100)
    notes = {}
    for _ in range(60):  # rounds
        while wait_for_turn_or_summary(page) == "turn":
            play_my_turn(page, notes)
        if page.evaluate("App.ui.view.over"):
            break
        page.click("#summary-continue")
    assert page.evaluate("App.ui.view.over")
    last = page.inner_text("#summary-last-move")  # the winning tile, its seat named as the page does
    assert re.match(r"Last move: (you|seat \d \(greedy\)): \d\|\d ", last), last
    with page.expect_download() as download:
        page.click("#summary-download")
    path = tmp_path / "match.json"
    download.value.save_as(path)
    saved = records.load(path)
    assert saved["winner"] in (0, 1) and max(saved["scores"]) >= 100
    won = saved["winner"] == page.evaluate("App.ui.view.seat") % 2  # the human's team (R1)
    assert page.inner_text("#match-result").endswith(
        ("your team wins!" if won else "your team loses.") + " (seed 4)")
    old = page.evaluate("App.ui.view.id")
    page.click("#rematch")
    page.wait_for_function(f"App.ui.view.id !== '{old}'")
    while wait_for_turn_or_summary(page) == "turn":
        play_my_turn(page, notes)
    # the new match's first round is summarised (the old match's count of rounds shown, kept,
    # hid as many of the new match's first summaries)
    assert page.inner_text("#summary-body h2").startswith("Round 1: ")
    assert len(saved["rounds"]) >= 2 and not page.evaluate("App.ui.view.over")
    assert old not in app.state.store._games
    assert not errors, errors


def test_a_lost_answer_does_not_leave_the_page_behind_the_game(server, browser):
    """A bot move that reached the server but whose answer was lost: the retry (the old move
    number) was refused as sent already, and the page stayed at move 0 for good.  It now asks
    the game where it is and goes on from there."""
    page = _match_whose_first_answer(server, browser,
                                     "throw new TypeError('the answer was lost')")
    page.wait_for_function("App.ui.view.ply >= 1 && !App.ui.busy", timeout=10000)
    assert "already sent" not in page.inner_text("#notice")


def test_a_step_refused_for_a_moment_is_sent_again(server, browser):
    """A 409 with Retry-After (the game busy with another request) is retried a second later;
    without the retry the bots stopped for good."""
    base, _ = server
    page = browser.new_page()
    _open(page, base)
    page.evaluate("""() => { const fetch0 = window.fetch; window.steps = 0;
        window.fetch = async (...args) => {
          if (String(args[0]).endsWith('/step') && window.steps++ === 0)
            return new Response(JSON.stringify({error: 'busy'}),
                                {status: 409, headers: {'retry-after': '1'}});
          return fetch0(...args); }; }""")
    _start(page, seat=0, seed=3)  # a bot opens: a step is sent at once
    page.wait_for_function("App.ui.view.ply >= 1", timeout=10000)
    assert page.evaluate("window.steps") >= 2  # refused once, then sent again


def test_a_move_whose_answer_was_lost_is_caught_up(server, browser):
    """The human's move reached the server but its answer was lost: the page asks the game
    where it is and goes on from there, rather than saying the move was not accepted."""
    base, _ = server
    page = browser.new_page()
    _open(page, base)
    page.evaluate("""() => { const fetch0 = window.fetch; window.moves = 0;
        window.fetch = async (...args) => { const answer = await fetch0(...args);
          if (String(args[0]).endsWith('/move') && window.moves++ === 0)
            throw new TypeError('the answer was lost');
          return answer; }; }""")
    _your_first_turn(page)  # the human opens
    before = ply(page)
    page.locator("#hand .hand-tile.playable").first.click()
    if ply(page) == before and page.locator("#board .marker.target").count():
        page.locator("#board .marker.target").first.click()
    page.wait_for_function(f"App.ui.view.ply > {before} && !App.ui.busy", timeout=10000)
    assert page.evaluate("window.moves") == 1
    assert "not accepted" not in page.inner_text("#notice")


def test_leaving_a_game_frees_its_place_on_the_server(server, browser):
    base, app = server
    page = browser.new_page()
    _open(page, base)
    _start(page, seat=1, seed=5)
    first = page.evaluate("App.ui.view.id")
    assert app.state.store.get(first)
    page.click("#new-match")
    assert page.evaluate("document.getElementById('tracks').childElementCount") == 0
    deadline = time.monotonic() + 5
    while first in app.state.store._games and time.monotonic() < deadline:
        time.sleep(0.05)
    assert first not in app.state.store._games


def _replay_of(match, server, browser, tmp_path):
    """A new page replaying ``match``'s record, loaded from a file as a user would."""
    path = tmp_path / "record.json"
    records.save(records.game_record(match), path)
    base, _ = server
    page = browser.new_page()
    _open(page, base)
    page.set_input_files("#record-file", str(path))
    page.wait_for_selector("#replay:not([hidden])")
    return page


def test_a_held_arrow_key_steps_the_replay_as_often_as_it_was_pressed(server, browser, tmp_path):
    """The replay's position moved only when a frame arrived: fifteen quick presses stepped
    five moves."""
    from sevenrocks_env.rules import Match, apply_action, legal_actions

    match = Match.new(9, target=250)
    for _ in range(20):  # into the first round: a record of one unfinished round
        apply_action(match, legal_actions(match)[0])
    page = _replay_of(match, server, browser, tmp_path)
    page.wait_for_function("document.getElementById('replay-position').textContent"
                           ".startsWith('move 0 of')")
    moves = page.evaluate("replay.info.rounds[0].moves")
    assert moves >= 15
    for _ in range(15):
        page.keyboard.press("ArrowRight")
    page.wait_for_function("document.getElementById('replay-position').textContent"
                           ".startsWith('move 15 of')", timeout=10000)
    page.wait_for_timeout(300)  # no earlier frame drawn over it afterwards
    assert page.inner_text("#replay-position").startswith("move 15 of")


def test_the_replay_shows_no_minus_zero_deduction(server, browser, tmp_path):
    """At a round's end the replay wrote "seat 1 −0" for a seat that lost nothing (the game
    page and the text board said "none" and "0"; Board.deductionText serves both pages)."""
    from sevenrocks_env.rules import Match, apply_action, legal_actions

    match = Match.new(11, target=250)
    match.seed = None  # stop at the round end: one finished round, with its deductions
    while not match.awaiting_deal:
        apply_action(match, legal_actions(match)[0])
    deductions = match.history[-1].deductions
    assert 0 in deductions and any(deductions)
    page = _replay_of(match, server, browser, tmp_path)
    page.click("button[data-step=last]")
    page.wait_for_function("document.getElementById('replay-hands').textContent"
                           ".includes('none')", timeout=10000)
    hands = page.inner_text("#replay-hands")
    assert not re.search("\u22120(?![0-9])", hands), hands
    for seat, points in enumerate(deductions):
        assert f"seat {seat} " + (f"\u2212{points}" if points else "none") in hands


def test_the_replay_says_a_match_was_cut_off_by_its_round_limit(server, browser, tmp_path):
    """A match cut off by its round limit read "no winner", as one still going did."""
    from sevenrocks_env.rules import Match, apply_action, legal_actions

    match = Match.new(3, target=100, max_rounds=2)
    while not match.over:
        apply_action(match, legal_actions(match)[0])
    page = _replay_of(match, server, browser, tmp_path)
    assert page.inner_text("#replay-info").endswith(
        "no winner: cut off by its round limit (max_rounds 2)")
    page.close()


def test_the_round_list_and_close_on_the_replay_page(server, browser, tmp_path):
    """After a round was picked from the list, the list kept the focus and an arrow key moved
    both it (a whole round) and the page (a move); Close only hid the replay, which held a
    place of --max-games on the server for its idle minutes."""
    from sevenrocks_env.rules import Match, apply_action, legal_actions

    match = Match.new(3, target=250)
    while match.round_index < 2 and not match.over:  # two finished rounds and the third begun
        apply_action(match, legal_actions(match)[0])
    for _ in range(4):
        apply_action(match, legal_actions(match)[0])
    page = _replay_of(match, server, browser, tmp_path)
    _, app = server
    replay_id = page.evaluate("replay.info.id")
    assert replay_id in app.state.store._games
    page.focus("#replay-round")  # as a click on the list leaves it
    page.select_option("#replay-round", "1")
    page.wait_for_function("replay.round === 1 && document.getElementById('replay-position')"
                           ".textContent.startsWith('move 0 of')")
    page.keyboard.press("ArrowRight")
    page.wait_for_function("document.getElementById('replay-position').textContent"
                           ".startsWith('move 1 of')", timeout=10000)
    page.wait_for_timeout(300)
    assert page.evaluate("[replay.round, replay.move]") == [1, 1]
    assert page.evaluate("document.getElementById('replay-round').value") == "1"
    page.click("#replay-close")
    deadline = time.monotonic() + 5
    while replay_id in app.state.store._games and time.monotonic() < deadline:
        time.sleep(0.05)
    assert replay_id not in app.state.store._games
    page.close()


def _play_to_the_summary(page) -> None:
    while wait_for_turn_or_summary(page) == "turn":
        play_my_turn(page, {})


def test_a_reload_mid_match_goes_on_with_the_same_match(server, browser):
    """A reload (or Back, then Forward) in the middle of a match showed the start panel: the
    match was lost to the page, and held a place of --max-games on the server until it expired.
    The tab keeps the match's id and goes on with it; after New match a reload starts afresh."""
    base, app = server
    page = browser.new_page()
    _open(page, base)
    _your_first_turn(page)
    play_my_turn(page, {})
    game, moved = page.evaluate("[App.ui.view.id, App.ui.view.ply]")
    page.reload()
    page.wait_for_selector("#game:not([hidden])", timeout=10000)
    assert page.locator("#start").is_hidden()
    assert page.evaluate("App.ui.view.id") == game and page.evaluate("App.ui.view.ply") >= moved
    page.evaluate("document.getElementById('delay').value = 0")
    _play_to_the_summary(page)  # the match goes on from the reloaded page
    assert page.inner_text("#summary-body h2").startswith("Round 1: ")
    page.click("#summary-continue")
    # the next round begun (a move in it; the human's own if the human opens it): a reload
    # then does not show the read summary again (with no move yet it would, by design)
    page.wait_for_function("App.ui.view.moves.length > 0 || "
                           "(App.ui.view.next === 'you' && !App.ui.busy)", timeout=20000)
    if page.evaluate("App.ui.view.moves.length") == 0:
        play_my_turn(page, {})
    page.wait_for_function("App.ui.view.moves.length > 0", timeout=20000)
    page.reload()
    page.wait_for_selector("#game:not([hidden])", timeout=10000)
    assert not page.evaluate("document.getElementById('summary').open")
    page.click("#new-match")
    page.reload()
    page.wait_for_function("document.querySelectorAll('select.agent option').length >= 12")
    page.wait_for_timeout(300)
    assert page.locator("#start").is_visible() and page.locator("#game").is_hidden()
    assert game not in app.state.store._games
    page.close()


def test_download_record_waits_for_a_bot_move_being_computed(server, browser, tmp_path):
    """The record asked for while a bot's move is computed is refused with 409 and Retry-After;
    the page said "try again" and downloaded nothing (with search bots and no delay, nearly
    every click during the bots' turns).  It now asks again a second later."""
    base, app = server
    page, errors = start_match(browser, base, delay=0)
    _play_to_the_summary(page)
    page.click("#summary-continue")
    game = app.state.store.get(page.evaluate("App.ui.view.id"))
    assert game.lock.acquire(timeout=10)  # as a bot's move being computed holds it
    threading.Timer(1.5, game.lock.release).start()
    with page.expect_download(timeout=10000) as download:
        page.click("#download")
    path = tmp_path / "record.json"
    download.value.save_as(path)
    assert len(records.load(path)["rounds"]) == 1
    assert "try again" not in page.inner_text("#notice")
    assert not errors, errors
    page.close()


def test_the_round_summary_fits_a_phone(server, browser):
    """At 360-412 px the summary's deduction column (R7) was cut off at the dialog's right
    edge (it scrolled sideways, with nothing showing it could); the start panel's record file
    field made a 320 px page scroll sideways."""
    base, _ = server
    page = browser.new_page()
    page.set_viewport_size({"width": 320, "height": 640})
    _open(page, base)
    assert page.evaluate("document.documentElement.scrollWidth") <= 320
    page.set_viewport_size({"width": 360, "height": 740})
    _start(page, seat=0, seed=5)
    _play_to_the_summary(page)
    assert page.locator("#summary-body table").count() == 1, "seed 5 no longer ends round 1 counted"
    sizes = page.evaluate("(() => { const d = document.getElementById('summary');"
                          " return [d.scrollWidth, d.clientWidth]; })()")
    assert sizes[0] <= sizes[1], sizes
    page.close()


def test_a_refused_start_is_not_shown_after_a_match_has_started(server, browser):
    """A start refused (a seed past 2^63 - 1) left its message on the start panel: it was still
    there after a match had started and New match brought the panel back."""
    base, _ = server
    page = browser.new_page()
    _open(page, base)
    page.fill("input[name=seed]", "9999999999999999999")
    page.click("#start-button")
    page.wait_for_function("document.getElementById('start-error').textContent.includes('seed')")
    _start(page, seat=0, seed=7)
    page.click("#new-match")
    assert page.inner_text("#start-error") == ""
    page.close()


def test_a_double_click_on_start_or_play_again_makes_one_game(server, browser):
    """*Start the match* (or *Play again*) clicked twice before the server answered made two
    games: the page showed one, and the other held one of the server's ``--max-games`` places
    until it expired (New match and Play again drop only the game the page shows)."""
    base, app = server
    games = app.state.store._games
    page = browser.new_page()
    _open(page, base)
    for name in ("partner", "left", "right"):
        page.select_option(f"select[name={name}]", "greedy")
    page.fill("input[name=target]", "1")  # the first scoring placement wins (R8): a short match
    page.fill("input[name=seed]", "4")
    page.evaluate("document.getElementById('delay').value = 0")
    before = set(games)
    page.dblclick("#start-button")
    page.wait_for_selector("#game:not([hidden])")
    page.wait_for_timeout(1000)  # a second game's answer would have come by now
    assert set(games) - before == {page.evaluate("App.ui.view.id")}
    for _ in range(30):  # rounds
        _play_to_the_summary(page)
        if page.evaluate("App.ui.view.over"):
            break
        page.click("#summary-continue")
    old = page.evaluate("App.ui.view.id")
    before = set(games)
    page.dblclick("#rematch")
    page.wait_for_function(f"App.ui.view.id !== '{old}'")
    page.wait_for_timeout(1000)
    assert set(games) - before == {page.evaluate("App.ui.view.id")}
    assert old not in games
    page.close()
