"""The web page end to end in a real browser: Playwright drives Debian's Chromium (no Playwright
browser download), against the server running in this process on a free localhost port.

A whole round is played by clicking highlighted tiles and ends; the page's scores must equal the
server's record, and the downloaded record must validate.  A screenshot of a mid-round board is
taken (into the test's temp folder; ``SEVENROCKS_UPDATE_SCREENSHOT=1`` writes it to
docs/web_screenshot.png instead, the picture in the README).  Without /usr/bin/chromium this test
FAILS (install it with ``apt-get install -y chromium``): it never passes silently.  The
pages' common steps: ``browser_page.py``; records and replays: ``test_web_browser_records.py``.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from sevenrocks_env import record as records

from browser_page import (_match_whose_first_answer, _open, _play_to_the_summary, _start,
                          _your_first_turn, module_fixtures, play_my_turn, ply, start_match,
                          wait_for_turn_or_summary)

DOCS_SCREENSHOT = Path(__file__).resolve().parents[1] / "docs" / "web_screenshot.png"

server, browser = module_fixtures()  # (base url, app) and a Chromium context


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
    # the seat boxes under it count the tiles held at the round's end (they showed the next
    # round's seven)
    left = [bin(hand).count("1") for hand in game.match.history[0].remaining_hands()]
    for seat in range(4):
        text = page.inner_text(f"#seats .seat[data-seat='{seat}']")
        assert text.endswith(f" {left[seat]} tile" + ("" if left[seat] == 1 else "s")), text
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
    # every seat box shows its whole text, the tiles it holds included (it was cut: "seat 1 ...")
    for index in range(4):
        seat = page.locator("#seats .seat").nth(index)
        assert seat.evaluate("node => node.scrollWidth <= node.clientWidth")
        assert " tiles" in seat.inner_text() or " tile" in seat.inner_text()


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
    # the refusal's words went with it (they stayed beside "Your turn")
    page.wait_for_function("App.ui.view.next === 'you' && !App.ui.busy", timeout=10000)
    assert page.inner_text("#notice") == ""


def test_a_click_while_the_bots_move_is_answered_until_they_have_moved(server, browser):
    """'wait: it is seat 3's turn' stayed on screen beside 'Your turn' once the bots had moved;
    a notice that is not about their turn stays."""
    base, _ = server
    page = browser.new_page()
    _open(page, base)
    page.evaluate("const d = document.getElementById('delay'); d.value = 1500;"
                  "d.dispatchEvent(new Event('input'))")
    for name in ("partner", "left", "right"):
        page.select_option(f"select[name={name}]", "greedy")
    page.select_option("select[name=seat]", "0")
    page.fill("input[name=seed]", "0")  # seat 1 opens: three bot moves before yours
    page.click("#start-button")
    page.wait_for_selector("#game:not([hidden])")
    assert page.evaluate("App.ui.view.ply === 0 && App.ui.view.next === 'bot'")
    page.locator("#hand .hand-tile").first.click()
    assert page.inner_text("#notice") == "wait: it is seat 1 (greedy)'s turn"
    page.wait_for_function("App.ui.view.ply >= 1", timeout=10000)
    assert page.inner_text("#notice") == ""
    page.evaluate("App.notice('a word of the page', 'warn')")  # not about the bots' turn
    ply = page.evaluate("App.ui.view.ply")
    page.wait_for_function(f"App.ui.view.ply > {ply}", timeout=10000)
    assert page.inner_text("#notice") == "a word of the page"
    page.close()


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


def test_the_turn_is_said_in_words_and_the_final_table_can_be_seen(server, browser):
    """Whose turn it was showed only as a border; at the match's end the result dialog could not
    be closed (no button, Escape ignored), hiding the final table."""
    base, _ = server
    page = browser.new_page()
    _open(page, base)
    page.fill("input[name=target]", "1")  # the first scoring placement wins (R8): a short match
    _start(page, seat=0, seed=4)
    page.wait_for_function("App.ui.view && !App.ui.busy && App.ui.view.next === 'you'"
                           " || document.getElementById('summary').open", timeout=20000)
    assert page.evaluate("App.ui.view.next") == "you", "seed 4 no longer gives seat 0 a turn"
    turn = page.inner_text("#turn")
    assert turn.startswith("Your turn: "), turn
    for _ in range(30):  # rounds
        _play_to_the_summary(page)
        if page.evaluate("App.ui.view.over"):
            break
        page.click("#summary-continue")
    assert page.inner_text("#turn") == "The match is over."
    # the winner's "/ 1  wins" did not shorten its score track: equal scores line up
    widths = page.evaluate("[...document.querySelectorAll('#tracks .track')]"
                           ".map(t => t.getBoundingClientRect().width)")
    assert len(widths) == 2 and abs(widths[0] - widths[1]) < 0.5, widths
    assert page.is_visible("#summary-close") and not page.is_visible("#summary-continue")
    page.click("#summary-close")
    assert not page.evaluate("document.getElementById('summary').open")
    page.click("#show-result")  # and back, to play again
    assert page.evaluate("document.getElementById('summary').open")
    assert page.is_visible("#rematch")
    page.keyboard.press("Escape")  # Escape closes it too at the match's end
    assert not page.evaluate("document.getElementById('summary').open")
    page.close()
