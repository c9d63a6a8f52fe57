"""The web page with a keyboard and a screen reader (Playwright and Debian's Chromium, as
tests/browser_page.py sets them up): focus stays in the hand while the bots move, the move list
is a log that only grows, and the table, the summary, its tiles and the replay's step buttons
have names."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("playwright", reason="needs the [web-test] extra")

from browser_page import (_play_to_the_summary, _replay_of, module_fixtures,  # noqa: E402
                          page_at_your_first_turn, play_my_turn, wait_for_turn_or_summary)
from positions import round_played_out  # noqa: E402

server, browser = module_fixtures()  # (base url, app) and a Chromium context

YOUR_TURN = "App.ui.view.next === 'you' && !App.ui.busy"


_your_first_turn = page_at_your_first_turn


def test_the_keyboard_stays_in_the_hand_while_the_bots_move(server, browser):
    """Every move redrew the hand and dropped the focus on the page's body: a keyboard user
    had to Tab back to the hand after each bot move."""
    page = _your_first_turn(server, browser)
    page.locator("#hand .hand-tile.playable").first.focus()
    ply = page.evaluate("App.ui.view.ply")
    page.keyboard.press("Enter")
    if page.locator("#board .marker.target").count():  # it fits two ends: the first one
        page.keyboard.press("Enter")
    page.wait_for_function(f"App.ui.view.ply > {ply} + 1 && {YOUR_TURN}", timeout=20000)
    assert page.evaluate("document.activeElement.closest('#hand') !== null")
    page.close()


def test_a_keyboard_knock_leaves_the_focus_in_the_hand(server, browser):
    """The Knock button, hidden while the bots moved, took the focus with it: the page's body
    had it at the next turn (seed 99: you knock in its second round)."""
    page = _your_first_turn(server, browser, seed=99)
    while not page.locator("#knock").is_visible():
        if wait_for_turn_or_summary(page) == "summary":
            assert page.evaluate("!App.ui.view.over"), "seed 99 no longer makes you knock"
            page.get_by_role("button", name="Continue").click()
        elif not page.locator("#knock").is_visible():
            play_my_turn(page, {"illegal": ""})
    ply = page.evaluate("App.ui.view.ply")
    page.locator("#knock").focus()
    page.keyboard.press("Enter")
    page.wait_for_function(f"App.ui.view.ply > {ply} && {YOUR_TURN}", timeout=20000)
    assert not page.evaluate("document.getElementById('summary').open")
    assert page.evaluate("document.activeElement.closest('#hand') !== null")
    page.close()


def test_the_move_list_is_a_log_that_only_grows(server, browser):
    """The list was rebuilt at every move and was no live region: a screen reader never said
    what the bots played."""
    page = _your_first_turn(server, browser)
    assert page.get_by_role("log", name="moves this round").count() == 1
    page.evaluate("""() => { window.changes = {added: 0, removed: 0};
        new MutationObserver((records) => records.forEach((r) => {
          window.changes.added += r.addedNodes.length;
          window.changes.removed += r.removedNodes.length; }))
        .observe(document.getElementById('moves'), {childList: true}); }""")
    before = page.evaluate("App.ui.view.moves.length")
    page.locator("#hand .hand-tile.playable").first.click()
    if page.locator("#board .marker.target").count():
        page.locator("#board .marker.target").first.click()
    page.wait_for_function(f"App.ui.view.moves.length > {before} + 1 && {YOUR_TURN}",
                           timeout=20000)
    after = page.evaluate("App.ui.view.moves.length")
    assert page.evaluate("window.changes") == {"added": after - before, "removed": 0}
    page.close()


def test_the_table_and_the_round_summary_have_names(server, browser):
    """The table read as 'group "the table": 1 4' (its discs' values), the score tracks as
    unnamed images, the summary as a dialog without a name, its remaining tiles as 'image'."""
    page = _your_first_turn(server, browser)
    table = page.get_by_role("group", name=re.compile(r"^the table: \d+ tiles?; open ends: "))
    assert table.count() == 1
    assert "counts" in page.locator("#board").get_attribute("aria-label")
    assert re.search(r"img|image", page.locator("#tracks").aria_snapshot()) is None
    assert page.get_by_role("group", name="scores").count() == 1
    _play_to_the_summary(page)
    summary = page.get_by_role("dialog", name=re.compile(r"^Round 1: round over"))
    assert summary.count() == 1
    tiles = summary.get_by_role("img", name=re.compile(r"^[0-6]\|[0-6]$"))
    assert tiles.count() >= 1
    page.close()


def test_the_replay_s_tiles_and_step_buttons_have_names(server, browser, tmp_path):
    """The step buttons were named by their glyphs ("|◀", "◀"...), the hands' tiles "image"."""
    page = _replay_of(round_played_out(263), server, browser, tmp_path)
    page.wait_for_function("document.getElementById('replay-position').textContent"
                           ".startsWith('move 0 of')")
    for name in ("round start", "back one move", "forward one move", "round end"):
        assert page.get_by_role("button", name=name, exact=True).count() == 1, name
    hands = page.locator("#replay-hands").get_by_role("img", name=re.compile(r"^[0-6]\|[0-6]$"))
    assert hands.count() == 28  # every hand at the round's start: 4 x 7
    page.close()


def test_continue_after_a_round_gives_the_keyboard_to_the_new_hand(server, browser):
    """Closing the round's summary left the focus on the page's body: the tile that had opened
    the dialog was gone, and a keyboard user had to Tab back to the hand every round."""
    page = _your_first_turn(server, browser)
    _play_to_the_summary(page)
    page.get_by_role("button", name="Continue").focus()
    page.keyboard.press("Enter")
    page.wait_for_function("!document.getElementById('summary').open")
    assert page.evaluate("document.activeElement.closest('#hand') !== null")
    page.close()


def test_behind_a_round_s_summary_the_page_shows_that_round(server, browser):
    """Behind the summary the turn line named the next round's opener and the move list was
    emptied for the next round: the round's last move (the one that ended it) was nowhere but
    in the dialog, and a screen reader heard the next round's turn."""
    page = _your_first_turn(server, browser)
    _play_to_the_summary(page)
    assert page.locator("#turn").inner_text() == "Round 1 is over."
    game = page.evaluate("App.ui.view.id")
    record = page.request.get(f"{server[0]}/api/games/{game}/record").json()
    moves = record["rounds"][0]["moves"]
    items = page.locator("#moves li").all_inner_texts()
    assert len(items) == len(moves)  # every move of the round, its last one included
    last = page.evaluate("App.ui.view.last_round.last_move.text")
    assert items[-1] == page.evaluate(f"withSeatNames(App.ui.view, {last!r})")
    page.reload()  # the summary, unread, is shown again; the fresh page has no list to complete
    page.wait_for_function("document.getElementById('summary').open", timeout=20000)
    assert page.locator("#turn").inner_text() == "Round 1 is over."
    assert page.locator("#moves li").count() == 0  # not the round's last move alone
    page.get_by_role("button", name="Continue").click()
    page.wait_for_function("!document.getElementById('summary').open")
    assert page.locator("#turn").inner_text() != "Round 1 is over."
    assert page.locator("#moves li").count() == page.evaluate("App.ui.view.moves.length")
    page.close()


def test_starting_from_the_keyboard_gives_it_the_hand(server, browser):
    """'Start the match', hidden once pressed, dropped the focus on the page's body: a keyboard
    user had to Tab through the page to reach the game."""
    base, _ = server
    page = browser.new_page()
    page.goto(base + "/")
    page.wait_for_function("document.querySelectorAll('select.agent option').length >= 12")
    page.fill("input[name=seed]", "11")
    page.locator("#start-button").focus()
    page.keyboard.press("Enter")
    page.wait_for_selector("#game:not([hidden])")
    assert page.evaluate("document.activeElement.closest('#hand') !== null")
    page.close()
