"""A long line on a phone, in a real browser (as test_web_browser.py: Debian's Chromium through
Playwright; it FAILS without /usr/bin/chromium): held upright, the page asks for the tall
board box (``Sevenrocks-Board: tall``), and a round's long line turns, so its tiles stay
readable."""

from __future__ import annotations

from browser_page import _replay_of, module_fixtures
from positions import round_played_out

server, browser = module_fixtures()  # (base url, app) and a Chromium context

#: round 0 of this deal, played out: a 17-tile line; straight in the wide box a phone showed
#: its tiles about 11 pixels across, in the tall box about 22
SEED = 263


def _smallest_tile_side(page) -> float:
    return page.evaluate("""() => Math.min(...[...document.querySelectorAll(
        '#replay-board .tile-face')].map((face) => { const r = face.getBoundingClientRect();
        return Math.min(r.width, r.height); }))""")


def _round_end(page) -> None:
    """Step to the end of round 0 (the replay's "round end" button) and wait for it."""
    moves = len(round_played_out(SEED).history[0].moves)
    page.click("#replay-controls [data-step=last]")
    page.wait_for_function("document.getElementById('replay-position').textContent"
                           f".startsWith('move {moves} of')")


def test_a_phone_held_upright_gets_a_tall_board_with_readable_tiles(server, browser,
                                                                     tmp_path):
    page = _replay_of(round_played_out(SEED), server, browser, tmp_path)
    asked = []
    page.on("request", lambda request: asked.append(request.headers.get("sevenrocks-board")))
    page.set_viewport_size({"width": 375, "height": 667})
    _round_end(page)
    assert asked and set(asked) == {"tall"}, asked
    assert page.evaluate("document.getElementById('replay-board').viewBox.baseVal.width") <= 560
    assert _smallest_tile_side(page) >= 18
    board = page.locator("#replay-board").bounding_box()
    assert board["x"] >= 0 and board["x"] + board["width"] <= 375
    assert page.evaluate("document.documentElement.scrollWidth") <= 375  # no sideways scroll
    page.close()


def test_a_wide_screen_keeps_the_wide_board(server, browser, tmp_path):
    page = _replay_of(round_played_out(SEED), server, browser, tmp_path)
    asked = []
    page.on("request", lambda request: asked.append(request.headers.get("sevenrocks-board")))
    _round_end(page)  # the context's 1100 x 1000 window
    assert asked and set(asked) == {"wide"}, asked
    assert page.evaluate("document.getElementById('replay-board').viewBox.baseVal.height") \
        <= 560
    page.close()


def test_the_score_tracks_holes_stay_round_on_a_phone(server, browser, tmp_path):
    """The score tracks stretch to the screen's width; their holes are circles whatever it is
    (a stretched viewBox drew them as ovals, 1-2 pixels wide on a phone)."""
    page = _replay_of(round_played_out(SEED), server, browser, tmp_path)
    page.set_viewport_size({"width": 375, "height": 667})
    _round_end(page)
    holes = page.evaluate("""[...document.querySelectorAll('#tracks .track circle')].map(
        (hole) => { const r = hole.getBoundingClientRect(); return [r.width, r.height]; })""")
    assert 2 * 10 <= len(holes) < 2 * 50  # two teams; of the 50 holes to 250, those with room
    assert all(abs(width - height) < 0.5 and height >= 3.5 for width, height in holes), holes[:4]
    assert page.inner_text("#replay-info").startswith("Record: 1 round, target 250")  # (1 round(s))
    page.close()
