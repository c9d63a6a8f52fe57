"""The web page's match records in a real browser (as test_web_browser.py, through
tests/browser_page.py): the final summary downloads the whole match, a download waits for a bot
move being computed, and the replay page steps once per held arrow key press, lists the rounds,
shows no minus-zero deduction and says when a match was cut off by its round limit; the page
runs under the server's Content-Security-Policy without a violation.  Without
/usr/bin/chromium these tests FAIL (``apt-get install -y chromium``): they never pass silently."""

from __future__ import annotations

import re
import threading
import time

from sevenrocks_env import record as records

from browser_page import (_play_to_the_summary, _replay_of, module_fixtures, play_my_turn,
                          report_policy_violations, start_match, wait_for_turn_or_summary)

server, browser = module_fixtures()  # (base url, app) and a Chromium context


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
    for seat, points in enumerate(deductions):  # ("seat 0 none" read as a seat with no tiles)
        assert (f"seat {seat} \u00b7 deduction " + (f"\u2212{points}" if points else "none")
                in hands)
    # the move list follows the position: its last move in view (it stayed at the first ten)
    scroll = page.evaluate("(() => { const l = document.getElementById('replay-moves');"
                           " return [l.scrollTop, l.clientHeight, l.scrollHeight]; })()")
    assert scroll[2] > scroll[1] and scroll[0] + scroll[1] >= scroll[2] - 1, scroll


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


def test_a_replay_s_start_says_who_opens_and_the_empty_table_once(server, browser, tmp_path):
    """At move 0 the felt said "the table is empty: the opener plays any tile (R3)" and the
    end-sum line said it again, and nothing said which seat opens."""
    from sevenrocks_env.rules import Match, apply_action, legal_actions

    match = Match.new(9, target=250)
    for _ in range(5):
        apply_action(match, legal_actions(match)[0])
    page = _replay_of(match, server, browser, tmp_path)
    page.wait_for_function("document.getElementById('replay-position').textContent"
                           ".startsWith('move 0 of')")
    opener = match.history[0].opener
    assert page.inner_text("#replay-position") == f"move 0 of 5 \u2013 seat {opener} opens"
    felt = page.text_content("#replay-board text.empty-table")  # (an SVG element)
    assert felt == "the table is empty: the opener plays any tile (R3)"
    assert page.inner_text("#replay-end-sum") == "no end sum yet: nothing is on the table (R5)"
    page.keyboard.press("ArrowRight")
    page.wait_for_function("document.getElementById('replay-position').textContent"
                           " === 'move 1 of 5'")


def test_the_page_runs_under_its_content_security_policy(server, browser, tmp_path):
    """The server's Content-Security-Policy allows only the page's own files (and its ``data:``
    icon): a round played to its summary, its record downloaded and replayed, report no
    violation (Chromium logs each one to the console: ``report_policy_violations``)."""
    base, _ = server
    match, errors = start_match(browser, base, delay=0)
    _play_to_the_summary(match)
    match.click("#summary-continue")
    with match.expect_download(timeout=10000) as download:
        match.click("#download")
    path = tmp_path / "record.json"
    download.value.save_as(path)
    replay = browser.new_page()
    report_policy_violations(replay, errors)
    policy = replay.goto(base + "/").headers.get("content-security-policy")
    assert policy == "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'"
    replay.wait_for_function("document.querySelectorAll('select.agent option').length >= 12")
    replay.set_input_files("#record-file", str(path))
    replay.wait_for_selector("#replay:not([hidden])")
    replay.keyboard.press("ArrowRight")
    replay.wait_for_function("document.getElementById('replay-position').textContent"
                             ".startsWith('move 1 of')")
    assert not errors, errors
    match.close()
    replay.close()
