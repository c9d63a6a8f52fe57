// The match page: start panel, the table, your hand, bot moves one at a time, round summaries.
// The server decides everything; this script shows its answers and sends your clicks.
"use strict";

const $ = (id) => document.getElementById(id);
const ui = {
  view: null,          // the latest game state from the server
  selected: null,      // tile index picked from the hand, waiting for an end
  shownRounds: 0,      // ended rounds already summarised
  busy: false,         // a request is in flight
  starting: false,     // a new match (Start, Play again) is being made: a double click makes one
  generation: 0,       // bumped by a new match: answers to an older match's requests are dropped
  timer: null,
  paused: false,       // a summary is open
  botsNotice: false,   // the notice is about the bots' turn: a bot's move clears it
  labels: {},
  shape: null,         // the board shape ("wide", "tall") the latest request asked for
};

async function api(method, path, body) {
  // the board box to lay the table out in, shaped like this screen (the server's BOARD_BOXES)
  ui.shape = Board.boardShape();  // what the answer's boards are laid out for
  const options = {method, headers: {"sevenrocks-board": ui.shape}};
  if (body !== undefined) {
    options.headers["content-type"] = "application/json";
    options.body = typeof body === "string" ? body : JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, options);
  } catch (e) {  // no answer at all: worth another try
    throw Object.assign(new Error("no answer from the server: " + e.message), {retry: true});
  }
  let data = null;
  try { data = await response.json(); } catch (e) { data = {error: "the server sent no JSON"}; }
  if (!response.ok) {
    // Retry-After: the game was busy (a download, another request); the same request may pass
    throw Object.assign(new Error(data.error || response.statusText),
                        {status: response.status, retry: response.headers.has("retry-after")});
  }
  return data;
}

// ``ofTheBots``: a notice about the bots' turn (a click while they move, a refused step),
// stale once one of them has moved; other notices stay until the page replaces them
function notice(text, kind, ofTheBots = false) {
  const node = $("notice");
  node.textContent = text || "";
  node.className = kind || "";
  ui.botsNotice = ofTheBots;
  placeNotice();  // (a refusal while a tile is still selected: clear of its ends too)
}

// The toast keeps clear of the ends it asks you to choose from: over one of them at the top of
// the screen (the board scrolled up to it) it goes to the bottom, unless one is under it there
function placeNotice() {
  const node = $("notice");
  const ends = [...document.querySelectorAll("#board .marker.target")];
  const covers = () => {
    const box = node.getBoundingClientRect();
    return ends.some((end) => {
      const r = end.getBoundingClientRect();
      return r.bottom > box.top && r.top < box.bottom && r.right > box.left && r.left < box.right;
    });
  };
  node.classList.remove("low");
  if (!ends.length || !node.textContent || !covers()) return;
  node.classList.add("low");
  if (covers()) node.classList.remove("low");
}

// ---- start panel -----------------------------------------------------------------------------

async function loadAgents() {
  const data = await api("GET", "/api/agents");
  for (const select of document.querySelectorAll("select.agent")) {
    for (const agent of data.agents) {
      const option = document.createElement("option");
      option.value = agent.spec;
      option.textContent = agent.label;
      if (agent.label === "heuristic") option.selected = true;
      select.appendChild(option);
    }
    ui.labels = Object.fromEntries(data.agents.map((a) => [a.spec, a.label]));
  }
}

async function startMatch(event) {
  event.preventDefault();
  $("start-error").textContent = "";  // an earlier attempt's refusal is not this one's
  const form = new FormData($("start-form"));
  const body = {seat: Number(form.get("seat")), partner: form.get("partner"),
                left: form.get("left"), right: form.get("right"),
                target: Number(form.get("target") || 250)};
  let text = JSON.stringify(body);
  const seed = String(form.get("seed") || "").trim();
  if (seed !== "") {
    // the digits as typed: Number() would round a seed past 2^53 and deal other hands
    if (!/^[0-9]{1,19}$/.test(seed)) {
      $("start-error").textContent = "the seed is a whole number (at most 19 digits)";
      return;
    }
    text = text.slice(0, -1) + `,"seed":${seed.replace(/^0+(?=[0-9])/, "")}}`;
  }
  // a second click before the answer made a second game: the page showed one, and the other
  // held one of the server's --max-games places until it expired
  if (ui.starting) return;
  ui.starting = true;
  try {
    begin(await api("POST", "/api/games", text));
  } catch (error) {
    $("start-error").textContent = error.message;
  } finally {
    ui.starting = false;
  }
}

// The tab keeps the id of the match it shows, so a reload (or Back, then Forward) goes on with
// it instead of losing it (it would hold a place of --max-games on the server until it expired).
const KEPT = "sevenrocks-game";

function keep(id) {
  try {
    if (id) sessionStorage.setItem(KEPT, id); else sessionStorage.removeItem(KEPT);
  } catch (e) { /* storage turned off: a reload starts afresh, as before */ }
}

// After a reload: the kept match as the server has it now, its latest ended round summarised
// again only if the next round has no move yet (its summary may not have been read).
async function resume() {
  let id = null;
  try { id = sessionStorage.getItem(KEPT); } catch (e) { return; }
  if (!id) return;
  let view;
  try {
    view = await api("GET", `/api/games/${encodeURIComponent(id)}`);
  } catch (error) {  // expired, or the server restarted: the start panel, as after New match
    if (error.status === 404) keep(null);
    return;
  }
  if (ui.view) return;  // a match was started meanwhile
  const unread = !view.over && view.rounds_ended > 0 && view.moves.length === 0;
  begin(view, view.rounds_ended - (unread ? 1 : 0));
}

function begin(view, shownRounds = 0) {
  ui.generation += 1;
  ui.busy = false;
  clearTimeout(ui.timer);
  keep(view.id);
  ui.shownRounds = shownRounds;
  ui.selected = null;
  ui.paused = false;
  $("start").hidden = true;
  $("replay").hidden = true;
  $("game").hidden = false;
  notice("");
  show(view);
  // a keyboard that started (or rematched) goes to the game: its button, hidden, dropped it
  $("hand").querySelector(".hand-tile")?.focus({preventScroll: true});
}

// ---- showing the game ------------------------------------------------------------------------

function seatName(view, seat) {
  return seat === view.seat ? "you" : `seat ${seat} (${view.seats[seat].label})`;
}

// The server's words name seats by number ("seat 2: 0|6 ...", "round over: seat 0 dominoed"):
// the first one named gets its label, or "you" ("you knock", not "you knocks")
function withSeatNames(view, text) {
  return text.replace(/\bseat (\d)\b( knocks\b)?/, (_, s, knocks) => {
    const name = seatName(view, Number(s));
    return name + (knocks ? (name === "you" ? " knock" : knocks) : "");
  });
}

function show(view) {
  ui.view = view;
  reshape();  // the screen may have turned while this answer, in the old shape, was on its way
  const teamSeats = [0, 1].map((team) => view.seats.filter((s) => s.team === team)
    .map((s) => s.seat === view.seat ? "you" : `seat ${s.seat}`).join(" & "));
  Board.drawTracks($("tracks"), view.scores, view.target, teamSeats, view.winner);
  const finished = view.last_round;
  const justEnded = view.rounds_ended > ui.shownRounds;
  // under a round's summary, the tiles each seat held at its end, not the next round's seven;
  // once the match is over, the final round's (the view has no counts then)
  drawSeats(justEnded || view.over ? {...view, seats: view.seats.map((seat) =>
    ({...seat, to_move: false, tiles: finished.tiles_left[seat.seat]}))} : view);
  // under a round's summary, that round's turn line and moves (the view's are the next round's)
  const roundOver = justEnded && !view.over;
  $("turn").textContent = roundOver ? `Round ${finished.round + 1} is over.` : turnLine(view);
  $("show-result").hidden = !view.over;
  drawTable(view, justEnded || !view.board ? finished.board : view.board);
  drawHand(justEnded ? {...view, hand: []} : view);  // the next round's hand after the summary
  drawMoves(view, roundOver ? finished : null);
  const knockGone = !(view.next === "you" && view.knock.required);
  // a keyboard that knocked goes back to the hand: hidden, the button dropped it on the body
  if (knockGone && document.activeElement === $("knock")) {
    $("hand").firstElementChild?.focus({preventScroll: true});
  }
  $("knock").hidden = knockGone;
  if (justEnded) {
    ui.shownRounds = view.rounds_ended;
    showSummary(view, finished);
    return;
  }
  if (view.over) { showSummary(view, finished); return; }
  schedule();
}

// The table: the board (the round in play's, or the one just ended under its summary), with
// the ends the selected tile fits highlighted
function drawTable(view, board) {
  const targets = {};
  const tile = selectedTile(view);
  if (tile) for (const place of tile.places) targets[place.slot] = true;
  if (board) $("end-sum").textContent = Board.drawBoard($("board"), board, targets, clickEnd);
}

// The screen turned (or was resized) to another board shape: the table of the same move again,
// laid out for it (nothing else changes; with a request in flight, show() calls it once more)
async function reshape() {
  const view = ui.view;
  if (!view || ui.busy || $("game").hidden || Board.boardShape() === ui.shape) return;
  try {
    const fresh = await api("GET", `/api/games/${encodeURIComponent(view.id)}`);
    if (ui.view !== view || fresh.ply !== view.ply) return;
    ui.view = fresh;
    drawTable(fresh, ui.paused || !fresh.board ? fresh.last_round.board : fresh.board);
  } catch (error) { /* the next answer comes in the new shape */ }
}

// Whose turn it is, in words (the seat boxes only mark it with a border)
function turnLine(view) {
  if (view.over) return "The match is over.";
  if (view.next !== "you") return `${seatName(view, view.turn)} to move.`;
  return view.knock.required ? "Your turn: no tile of yours fits, so you knock."
                             : "Your turn: pick a tile from your hand.";
}

function drawSeats(view) {
  const node = $("seats");
  node.replaceChildren();
  for (const seat of view.seats) {
    const item = document.createElement("div");
    item.className = "seat" + (seat.to_move ? " to-move" : "") + (seat.seat === view.seat ? " me" : "");
    const name = document.createElement("b");
    name.textContent = seat.seat === view.seat ? "you" : seat.label;  // text, never markup
    item.append(Board.swatch(Board.TEAM_COLOURS[seat.team]), name, ` seat ${seat.seat}` +
      (seat.tiles === null ? "" : ` \u00b7 ${seat.tiles} tile${seat.tiles === 1 ? "" : "s"}`));
    item.dataset.seat = seat.seat;
    node.appendChild(item);
  }
}

function selectedTile(view) {
  return view.hand.find((t) => t.tile === ui.selected) || null;
}

// Keyboard focus in the hand stays there when it is redrawn (after every move): on the same
// tile, or on the one that took the played tile's place
function drawHand(view) {
  const node = $("hand");
  const focused = document.activeElement;
  const kept = node.contains(focused) ? [focused.dataset.tile, [...node.children].indexOf(focused)]
                                      : null;
  node.replaceChildren();
  const myTurn = view.next === "you";
  for (const tile of view.hand) {
    const button = document.createElement("button");
    button.className = "hand-tile" + (myTurn && tile.playable ? " playable" : "") +
      (tile.tile === ui.selected ? " selected" : "");
    button.dataset.tile = tile.tile;
    button.title = tile.name + (tile.playable ? ": " + tile.places.map((p) => p.words).join("; ")
                                              : tile.reason ? ": " + tile.reason : "");
    button.setAttribute("aria-label", button.title);
    button.appendChild(Board.tileIcon(tile.halves, 30));
    // a double click's second click acted too: at delay 0 it played the next turn's move
    button.addEventListener("click", (event) => { if (event.detail < 2) clickTile(tile); });
    node.appendChild(button);
  }
  if (kept) {
    const [tile, place] = kept;
    const again = node.querySelector(`[data-tile="${tile}"]`) ||
                  node.children[Math.min(place, node.children.length - 1)];
    if (again) again.focus({preventScroll: true});  // not back down to the hand each move
  }
}

// A log (role="log"): a screen reader says what is added, so the round's list only grows; a
// new round (or match) starts it afresh.  Under a round's summary (``ended``) the view's moves
// are the next round's: the ended round's list gets the move that ended it instead (a page
// reloaded since has no list of that round to complete).
function drawMoves(view, ended = null) {
  const node = $("moves");
  const round = `${view.id} ${view.round}`;
  if (ended) {
    if (ended.last_move && node.dataset.round === `${view.id} ${ended.round}`) {
      node.appendChild(moveItem(view, ended.last_move));
    }
  } else {
    if (node.dataset.round !== round || node.children.length > view.moves.length) {
      node.replaceChildren();
      node.dataset.round = round;
    }
    for (const move of view.moves.slice(node.children.length)) {
      node.appendChild(moveItem(view, move));
    }
  }
  node.scrollTop = node.scrollHeight;
}

function moveItem(view, move) {
  const item = document.createElement("li");
  item.textContent = withSeatNames(view, move.text);
  item.style.borderLeftColor = Board.TEAM_COLOURS[move.seat % 2];
  if (move.points) item.className = "scored";
  return item;
}

// ---- your moves ------------------------------------------------------------------------------

function clickTile(tile) {
  const view = ui.view;
  if (view.next !== "you") {
    notice(view.over ? "the match is over" : `wait: it is ${seatName(view, view.turn)}'s turn`, "warn",
           !view.over);
    return;
  }
  if (!tile.playable) {
    ui.selected = null;
    notice(tile.reason, "warn");
    show(view);
    return;
  }
  if (tile.places.length === 1) { sendMove(tile.places[0].action); return; }
  ui.selected = tile.tile;
  notice(`${tile.name}: choose a highlighted end (` + tile.places.map((p) => p.words).join("; ") + ")");
  const fromHand = document.activeElement && document.activeElement.closest("#hand");
  show(view);  // redraws the hand: the focused tile is gone, so focus moves to the first end
  const first = document.querySelector("#board .marker.target");
  if (first && fromHand) first.focus();
  placeNotice();  // its ends are drawn now
}

function clickEnd(slot) {
  const view = ui.view;
  if (view.next !== "you") return;
  const tile = selectedTile(view);
  if (!tile) { notice("pick a tile from your hand first", "warn"); return; }
  // the keyboard goes back to the hand: the end it is on is gone once the tile is played
  if ($("board").contains(document.activeElement)) {
    $("hand").querySelector(`[data-tile="${tile.tile}"]`)?.focus({preventScroll: true});
  }
  sendMove(4 * tile.tile + slot);  // the server says why if it does not fit
}

async function sendMove(action) {
  if (ui.busy) return;
  ui.busy = true;
  const generation = ui.generation;
  try {
    const view = await api("POST", `/api/games/${ui.view.id}/move`, {ply: ui.view.ply, action});
    if (generation !== ui.generation) return;  // a new match started meanwhile
    ui.selected = null;
    notice("");
    ui.busy = false;
    show(view);
  } catch (error) {
    if (generation !== ui.generation) return;
    const current = await caughtUp(generation);  // the move may have landed, its answer lost
    if (generation !== ui.generation) return;
    ui.busy = false;
    if (current) {
      ui.selected = null;
      show(current);
      // refused as stale (409): the game moved on without this page (another tab?)
      notice(error.status === 409 ? "the match had moved on (in another tab?): your move was " +
                                    "not played" : "", "warn");
      return;
    }
    notice("not accepted: " + error.message, "warn");
  }
}

// A move or step whose answer was lost may still have been played (its retry then answers
// 409, "already sent"): the game's own view says. Returns it if the game is past the page.
async function caughtUp(generation) {
  try {
    const view = await api("GET", `/api/games/${ui.view.id}`);
    if (generation === ui.generation && view.ply !== ui.view.ply) return view;
  } catch (error) { /* no answer either: the caller says so and may try again */ }
  return null;
}

// A game the page leaves (a new match, a rematch) is dropped at once rather than holding one
// of the server's open-game places until it expires; failing that, it expires as before.
function forget(view) {
  if (view) fetch(`/api/games/${view.id}`, {method: "DELETE"}).catch(() => {});
}

// ---- the bots' moves, one at a time ----------------------------------------------------------

function delay() { return Number($("delay").value); }

function schedule() {
  clearTimeout(ui.timer);
  const view = ui.view;
  if (!view || view.over || ui.paused) return;
  if (view.next === "bot") {
    ui.timer = setTimeout(step, delay());
  } else if (view.knock.required && $("auto-knock").checked) {
    ui.timer = setTimeout(() => sendMove(view.knock.action), delay());
  } else if (view.knock.required) {
    notice("no tile of yours fits an open end: knock (R6)");
  }
}

async function step() {
  if (ui.busy || ui.paused || !ui.view) return;
  ui.busy = true;
  const generation = ui.generation;
  try {
    const view = await api("POST", `/api/games/${ui.view.id}/step`, {ply: ui.view.ply});
    if (generation !== ui.generation) return;  // the old match's bot move: not shown
    ui.busy = false;
    if (ui.botsNotice) notice("");  // "wait: it is seat 3's turn", a busy retry: stale now
    show(view);
  } catch (error) {
    if (generation !== ui.generation) return;
    const current = await caughtUp(generation);
    if (generation !== ui.generation) return;
    ui.busy = false;
    if (current) { notice(""); show(current); return; }
    notice(error.message, "warn", true);
    if (error.retry) ui.timer = setTimeout(step, 1000);  // busy game or lost connection
  }
}

async function downloadRecord() {
  const id = ui.view.id;
  let waited = false;
  try {
    let record;
    for (let tries = 1; ; tries++) {
      try {
        record = await api("GET", `/api/games/${id}/record`);
        break;
      } catch (error) {  // 409 with Retry-After: a bot's move is being computed; it takes a moment
        if (!error.retry || error.status !== 409 || tries === 5) throw error;
        notice("a bot is moving: the record follows in a moment");
        await new Promise((done) => setTimeout(done, 1000));
        waited = true;
      }
    }
    if (waited) notice("");
    const blob = new Blob([JSON.stringify(record, null, 1) + "\n"], {type: "application/json"});
    const link = document.createElement("a");
    link.href = URL.createObjectURL(blob);
    link.download = "sevenrocks-record.json";
    document.body.appendChild(link);
    link.click();
    link.remove();
  } catch (error) { notice(error.message, "warn"); }
}

function newMatch() {
  ui.generation += 1;  // answers still on their way for this match are dropped
  ui.busy = false;
  clearTimeout(ui.timer);
  if ($("summary").open) $("summary").close();
  forget(ui.view);
  keep(null);
  ui.view = null;
  $("tracks").replaceChildren();  // the old match's scores are not the start panel's
  $("game").hidden = true;
  $("start").hidden = false;
}

document.addEventListener("DOMContentLoaded", () => {
  loadAgents().catch((error) => { $("start-error").textContent = error.message; });
  resume();
  $("start-form").addEventListener("submit", startMatch);
  // a refusal is of the values then: gone once they change (the browser's own checks of the
  // form may stop the next submit before startMatch clears it)
  $("start-form").addEventListener("input", () => { $("start-error").textContent = ""; });
  $("knock").addEventListener("click", () => sendMove(ui.view.knock.action));
  $("delay").addEventListener("input", () => {
    $("delay-value").textContent = (delay() / 1000).toFixed(delay() < 100 ? 2 : 1) + " s";
  });
  $("auto-knock").addEventListener("change", schedule);
  $("download").addEventListener("click", downloadRecord);
  $("new-match").addEventListener("click", newMatch);
  $("summary-new").addEventListener("click", newMatch);
  $("summary-download").addEventListener("click", downloadRecord);
  window.addEventListener("resize", reshape);
  window.addEventListener("scroll", placeNotice, {passive: true});
});

window.App = {ui, api, notice, newMatch};
