"""The web page with the keyboard on a desktop: the end that has the keyboard's focus stands
out from the other highlighted ends, and a refusal of the start form goes once its values
change (Playwright and Debian's Chromium, as tests/browser_page.py sets them up)."""

from __future__ import annotations

import pytest

pytest.importorskip("playwright", reason="needs the [web-test] extra")

from browser_page import (_open, _start, module_fixtures, play_my_turn,  # noqa: E402
                          wait_for_turn_or_summary)

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
