"""The web page with the keyboard on a desktop: the end that has the keyboard's focus stands
out from the other highlighted ends, a refusal of the start form goes once its values change,
the seat boxes keep their tile counts at the match's end, the board, the turn line and the
hand fit the screen together, a letterboxed board is felt to its edges, a double click plays
once and a page the match left behind says its move was not played (Playwright and Debian's
Chromium, as tests/browser_page.py sets them up)."""

from __future__ import annotations

import pytest

pytest.importorskip("playwright", reason="needs the [web-test] extra")

from browser_page import (_open, _start, module_fixtures, page_at_your_first_turn,  # noqa: E402
                          play_my_turn, start_match, wait_for_turn_or_summary)

server, browser = module_fixtures()  # (base url, app) and a Chromium context

MARKERS = """() => [...document.querySelectorAll('#board .marker.target')].map(g => ({
    focused: g === document.activeElement,
    width: getComputedStyle(g.querySelector('.hit')).strokeWidth}))"""


def test_the_keyboard_s_end_stands_out_from_the_other_highlighted_ends(server, browser):
    """The focus style lost to the later, as specific rule of a highlighted end: Tab between
    north and south showed two identical dashed rings."""
    base, _ = server
    page = browser.new_page()
    page.set_viewport_size({"width": 1920, "height": 1080})
    _open(page, base)
    _start(page, seat=0, seed=7)
    for _ in range(200):
        if wait_for_turn_or_summary(page) == "summary":
            page.keyboard.press("Enter")
            continue
        two_ends = page.evaluate("App.ui.view.hand.findIndex(t => t.playable && "
                                 "t.places.length > 1)")
        if two_ends < 0:
            play_my_turn(page, {})
            continue
        page.locator("#hand .hand-tile").nth(two_ends).focus()
        page.keyboard.press("Enter")
        page.wait_for_function("document.querySelectorAll('#board .marker.target').length > 1")
        page.evaluate("document.getAnimations().forEach(a => a.pause())")
        for _ in range(2):  # the first end, then the next one after Tab
            markers = page.evaluate(MARKERS)
            assert [m["focused"] for m in markers].count(True) == 1, markers
            assert {m["width"] for m in markers if m["focused"]} == {"6px"}, markers
            assert {m["width"] for m in markers if not m["focused"]} == {"3px"}, markers
            page.keyboard.press("Tab")
        break
    else:
        pytest.fail("no tile that fits two ends in 200 turns: pick another seed")
    page.close()


def test_a_refusal_of_the_start_form_goes_when_its_values_change(server, browser):
    """The message was cleared only by the next submit, which the browser's own check of the
    form may stop: the old refusal stood beside the browser's note."""
    base, _ = server
    page = browser.new_page()
    _open(page, base)
    page.fill("input[name=seed]", "9999999999999999999")  # past 2^63 - 1: the server says so
    page.click("#start-button")
    page.wait_for_function("document.getElementById('start-error').textContent !== ''")
    assert "9999999999999999999" in page.inner_text("#start-error")
    page.fill("input[name=seed]", "-5")
    assert page.inner_text("#start-error") == ""
    page.close()


SEAT_TILES = """[...document.querySelectorAll('#seats .seat')].map((seat) => seat.innerText)"""


def test_the_seat_boxes_keep_their_tile_counts_once_the_match_is_over(server, browser):
    """The counts of the final round's remaining tiles went from the seat boxes after a reload
    at the match's end, and once its summary was closed: the view has no counts then."""
    base, _ = server
    page, errors = start_match(browser, base, delay=0, target=1)  # over at the first points
    page.wait_for_function("App.ui.view.over || App.ui.view.next === 'you'", timeout=20000)
    while not page.evaluate("App.ui.view.over"):
        play_my_turn(page, {})
        page.wait_for_function("App.ui.view.over || (App.ui.view.next === 'you'"
                               " && !App.ui.busy)", timeout=20000)
    counts = page.evaluate(SEAT_TILES)
    assert all(" tile" in seat for seat in counts), counts
    page.click("#summary-close")  # the final table
    assert page.evaluate(SEAT_TILES) == counts
    page.reload()
    page.wait_for_function("document.getElementById('summary').open")
    assert page.evaluate(SEAT_TILES) == counts
    assert not errors, errors
    page.close()


def test_the_board_turn_line_and_hand_fit_the_screen_together(server, browser):
    """The board was only kept under 85% of the screen's height: with the end sum, the turn
    line and the hand under it, the hand was below the fold (868 px from the board's top to
    the hand's bottom on a 390 x 844 phone)."""
    base, _ = server
    for width, height in ((1920, 1080), (1366, 768), (390, 844)):
        page = browser.new_page()
        page.set_viewport_size({"width": width, "height": height})
        _open(page, base)
        _start(page, seat=0, seed=11)
        page.wait_for_function("App.ui.view.next === 'you' && !App.ui.busy", timeout=20000)
        board = page.locator("#board").bounding_box()
        hand = page.locator("#hand-row").bounding_box()
        assert hand["y"] + hand["height"] - board["y"] <= height, (width, height)
        if width > 1000:  # a desktop's board keeps its full size, 1080 x 605
            assert board["height"] >= 600, (width, board)
        else:  # a phone's is narrowed a little at most
            assert board["height"] >= 0.75 * height, (width, board)
        page.close()


def test_a_letterboxed_board_is_felt_from_edge_to_edge(server, browser):
    """A board held under its height limit is letterboxed: the felt rectangle started at the
    zoomed view's corner, leaving a dark strip on one side (844 x 390, a phone on its side)."""
    import io

    from PIL import Image
    base, _ = server
    page = browser.new_page()
    page.set_viewport_size({"width": 844, "height": 390})
    _open(page, base)
    _start(page, seat=0, seed=11)
    page.wait_for_function("App.ui.view.next === 'you' && !App.ui.busy", timeout=20000)
    page.locator("#board").scroll_into_view_if_needed()
    box = page.locator("#board").bounding_box()
    shot = Image.open(io.BytesIO(page.screenshot())).convert("RGB")
    middle = int(box["y"] + box["height"] / 2)
    felt = (0x18, 0x60, 0x3e)
    for x in (box["x"] + 12, box["x"] + box["width"] - 12):  # both sides, clear of the corners
        assert shot.getpixel((int(x), middle)) == felt, (x, shot.getpixel((int(x), middle)))
    page.close()


def test_a_double_click_on_a_tile_acts_once(server, browser):
    """A double click's second click acted too: with the bots at delay 0 it played the next
    turn's move as well.  A click the browser counts as the second of a double click is
    ignored; a single click still selects or plays."""
    page = page_at_your_first_turn(server, browser)
    before = page.evaluate("App.ui.view.ply")
    tile = page.locator("#hand .hand-tile.playable").first
    tile.dispatch_event("click", {"detail": 2})
    assert page.evaluate("App.ui.view.ply") == before and not page.evaluate("App.ui.busy")
    assert page.evaluate("App.ui.selected") is None
    tile.dispatch_event("click", {"detail": 1})
    page.wait_for_function(f"App.ui.view.ply > {before} || App.ui.selected !== null")
    page.close()


def test_a_move_from_a_page_the_match_left_behind_says_it_was_not_played(server, browser):
    """A second tab on the same match, behind it: its click was refused (409), the page
    caught up and showed 'Your turn' again without a word that the move was not played."""
    page = page_at_your_first_turn(server, browser)
    ply = page.evaluate("App.ui.view.ply")
    # the other tab plays the move (straight to the server; this page does not see it)
    status = page.evaluate("""async () => { const v = App.ui.view;
        const tile = v.hand.find(t => t.playable);
        const answer = await fetch(`/api/games/${v.id}/move`, {method: 'POST',
            headers: {'content-type': 'application/json'},
            body: JSON.stringify({ply: v.ply, action: tile.places[0].action})});
        return answer.status; }""")
    assert status == 200
    page.locator("#hand .hand-tile.playable").first.click()
    if page.evaluate(f"App.ui.view.ply === {ply}") and page.locator(
            "#board .marker.target").count():
        page.locator("#board .marker.target").first.click()
    page.wait_for_function(f"App.ui.view.ply > {ply} && !App.ui.busy", timeout=10000)
    assert "your move was not played" in page.inner_text("#notice")
    page.close()
