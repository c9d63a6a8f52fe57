"""The page on screens of several shapes, in a real browser (as test_web_browser.py: Debian's
Chromium through Playwright; it FAILS without /usr/bin/chromium): a replay's tiles stay put
from frame to frame, turning the screen lays the table out again, the board is never taller
than the screen, seat boxes wrap instead of hiding the tile counts, score-track holes stay
apart, and the move list says "you knock"."""

from __future__ import annotations

from browser_page import _open, _replay_of, _start, module_fixtures
from positions import round_played_out

server, browser = module_fixtures()  # (base url, app) and a Chromium context

SEED = 263  # round 0: a 17-tile line, whose west arm turns in the tall box

VIEWBOX = "document.getElementById('%s').getAttribute('viewBox')"


def _frame(page, move: int) -> None:
    page.wait_for_function("document.getElementById('replay-position').textContent"
                           f".startsWith('move {move} of')")


def test_a_replays_tiles_stay_put_from_frame_to_frame(server, browser, tmp_path):
    """Frames of a round are laid out by its final layout, and the page keeps the whole box
    in view: the opening tile stays where it is (it moved and shrank at every move)."""
    page = _replay_of(round_played_out(SEED), server, browser, tmp_path)
    page.set_viewport_size({"width": 375, "height": 667})
    page.click("#replay-controls [data-step=first]")
    _frame(page, 0)
    placed, views = set(), set()
    for move in range(1, 12):
        page.click("#replay-controls [data-step=next]")
        _frame(page, move)
        views.add(page.evaluate(VIEWBOX % "replay-board"))
        faces = {tuple(face) for face in page.evaluate("""[...document.querySelectorAll(
            '#replay-board .tile-face')].map((face) => { const r = face.getBoundingClientRect();
            return [r.x, r.y, r.width, r.height].map(Math.round); })""")}
        assert placed <= faces, (move, sorted(placed - faces))  # every earlier tile where it was
        assert len(faces) >= len(placed)
        placed = faces
    assert views == {"0 0 560 1000"}, views
    page.close()


def test_turning_the_screen_lays_the_table_out_again(server, browser):
    base, _ = server
    page = browser.new_page()
    page.set_viewport_size({"width": 375, "height": 667})
    _open(page, base)
    page.evaluate("document.getElementById('delay').value = 1000")
    _start(page, seat=0, seed=0)
    page.wait_for_function("App.ui.view && App.ui.view.next === 'you' && !App.ui.busy",
                           timeout=20000)
    def aspect():  # the viewBox's width / height (a small layout is zoomed, keeping it)
        _, _, width, height = map(float, page.evaluate(VIEWBOX % "board").split())
        return width / height

    assert page.evaluate("App.ui.view.board.width") == 560 and abs(aspect() - 0.56) < 0.01
    ply = page.evaluate("App.ui.view.ply")
    page.set_viewport_size({"width": 667, "height": 375})
    page.wait_for_function("App.ui.view.board.width === 1000")
    assert abs(aspect() - 1000 / 560) < 0.01 and page.evaluate("App.ui.shape") == "wide"
    assert page.evaluate("App.ui.view.ply") == ply  # the same move, laid out again
    height = page.evaluate("document.getElementById('board').getBoundingClientRect().height")
    assert height <= 0.85 * 375 + 1  # never taller than the screen
    page.close()


def test_a_tall_board_is_no_taller_than_the_screen(server, browser, tmp_path):
    page = _replay_of(round_played_out(SEED), server, browser, tmp_path)
    for width, height in ((375, 667), (673, 841)):
        page.set_viewport_size({"width": width, "height": height})
        page.click("#replay-controls [data-step=last]")
        page.wait_for_function(f"({VIEWBOX % 'replay-board'}).startsWith('0 0 560')")
        board = page.evaluate("document.getElementById('replay-board')"
                              ".getBoundingClientRect().height")
        assert board <= 0.85 * height + 1, (width, board)
    page.close()


def test_seat_boxes_wrap_and_track_holes_stay_apart(server, browser):
    base, _ = server
    for width in (375, 768):
        page = browser.new_page()
        page.set_viewport_size({"width": width, "height": 900})
        _open(page, base)
        _start(page, seat=0, seed=0)
        page.wait_for_function("App.ui.view && !App.ui.busy", timeout=20000)
        seats = page.evaluate("""[...document.querySelectorAll('#seats .seat')].map((s) =>
            [s.scrollWidth <= s.clientWidth + 1, s.innerText])""")
        assert len(seats) == 4 and all(fits and "tiles" in text for fits, text in seats), seats
        centres = page.evaluate("""[...document.querySelectorAll('#tracks .track')].map((t) =>
            [...t.querySelectorAll('circle')].map((c) => { const r = c.getBoundingClientRect();
            return [r.x + r.width / 2, r.width, r.height]; }))""")
        for track in centres:
            assert track and all(abs(w - h) < 0.5 for _, w, h in track)  # round
            gaps = [b[0] - a[0] for a, b in zip(track, track[1:])]
            assert min(gaps) >= 6.5, (width, min(gaps))
        page.close()


def test_the_move_list_says_you_knock(server, browser):
    base, _ = server
    page = browser.new_page()
    _open(page, base)
    texts = {text: page.evaluate(
        """(text) => withSeatNames({seat: 1, seats: [0, 1, 2, 3].map((s) =>
             ({seat: s, label: 'greedy'}))}, text)""", text)
        for text in ("seat 1 knocks", "seat 2 knocks", "seat 1: 0|6 west", "round over: "
                     "seat 1 dominoed")}
    assert texts == {"seat 1 knocks": "you knock", "seat 2 knocks": "seat 2 (greedy) knocks",
                     "seat 1: 0|6 west": "you: 0|6 west",
                     "round over: seat 1 dominoed": "round over: you dominoed"}
    page.close()
