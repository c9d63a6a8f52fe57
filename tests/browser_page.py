"""Driving the web page in a real browser for the browser tests (test_web_browser.py,
test_web_browser_records.py): Playwright drives Debian's Chromium (no Playwright browser
download) against the server running in this process on a free localhost port, under the
server's Content-Security-Policy (a page's ``wait_for_function`` takes its expression as a
function: :func:`wait_by_function`); the pages' common steps (start a match, play a turn,
replay a record)."""

from __future__ import annotations

import contextlib
import functools
import os
import socket
import threading
import time

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


@contextlib.contextmanager
def served_app():
    """The app served by uvicorn in a thread; yields (base url, app)."""
    # as `sevenrocks serve` makes it
    app = create_app(GameStore(), host_names=host_names_for("127.0.0.1"))
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
    try:
        yield f"http://127.0.0.1:{port}", app
    finally:
        instance.should_exit = True
        thread.join(10)


def module_fixtures():
    """The ``server`` (base url, app) and ``browser`` (a Chromium context) fixtures of a browser
    test module, module-scoped: ``server, browser = module_fixtures()``."""
    @pytest.fixture(scope="module")
    def server():
        with served_app() as served:
            yield served

    @pytest.fixture(scope="module")
    def browser(tmp_path_factory):
        with chromium(tmp_path_factory.mktemp("chromium-profile")) as context:
            yield context
    return server, browser


@contextlib.contextmanager
def chromium(profile):
    """A Chromium context with its own fresh profile folder ``profile``; fails (never skips)
    without /usr/bin/chromium."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: the browser test needs Debian's Chromium "
                    f"(apt-get install -y chromium; Playwright's own download does not work here)")
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True,
            accept_downloads=True, viewport={"width": 1100, "height": 1000})
        new_page = context.new_page

        def new_page_waiting_by_function(**options):
            page = new_page(**options)
            page.wait_for_function = functools.partial(wait_by_function, page.wait_for_function)
            return page
        context.new_page = new_page_waiting_by_function
        try:
            yield context
        finally:
            context.close()


def wait_by_function(wait, expression: str, **options):
    """``page.wait_for_function(expression)`` with ``expression`` as a function: Playwright
    polls a bare expression with ``eval``, which the server's Content-Security-Policy forbids
    (as it should: the page needs no ``eval``), and a function's body it does not."""
    if not expression.lstrip().startswith(("()", "function", "async")):
        expression = f"() => ({expression})"
    return wait(expression, **options)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def ply(page) -> int:
    return page.evaluate("App.ui.view ? App.ui.view.ply : -1")


def report_policy_violations(page, errors: list) -> None:
    """Chromium's console reports of what the server's Content-Security-Policy blocked (an
    inline style or script, a file from elsewhere) go to ``errors``."""
    page.on("console", lambda message: errors.append(message.text)
            if "Content Security Policy" in message.text else None)


def start_match(browser, base: str, delay: int, seat: int | None = None,
                target: int | None = None):
    """A new page that starts a match against three `greedy` bots, deal seed 4; returns the
    page and the list its JavaScript errors (and Content-Security-Policy violations) go to."""
    page = browser.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    report_policy_violations(page, errors)
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


def page_at_your_first_turn(server, browser, seed: int = 11):
    """A new page with a match against greedy bots (you at seat 0, deal ``seed``), at your
    first turn."""
    base, _ = server
    page = browser.new_page()
    _open(page, base)
    _start(page, seat=0, seed=seed)
    page.wait_for_function("App.ui.view.next === 'you' && !App.ui.busy", timeout=20000)
    return page


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


def _play_to_the_summary(page) -> None:
    while wait_for_turn_or_summary(page) == "turn":
        play_my_turn(page, {})
