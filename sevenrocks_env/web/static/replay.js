// Replaying a game record: the server validates it (record.validate) and serves one frame per
// move; the step controls walk through a round, the select picks the round.
"use strict";

// round and move: the position asked for last (a held arrow key steps on from it before its
// frame arrives); request: that ask's number, so a slower earlier answer is not drawn over it
const replay = {info: null, round: 0, move: 0, request: 0};

async function loadRecord(file) {
  const error = document.getElementById("start-error");
  error.textContent = "";
  let text;
  try { text = await file.text(); } catch (e) { error.textContent = "cannot read the file"; return; }
  try {
    const loaded = await App.api("POST", "/api/replays", text);
    dropReplay();  // the one shown before: its place on the server is free
    replay.info = loaded;
  } catch (problem) {
    error.textContent = problem.message;
    return;
  }
  const select = document.getElementById("replay-round");
  select.replaceChildren();
  for (const round of replay.info.rounds) {
    const option = document.createElement("option");
    option.value = round.round;
    option.textContent = `${round.round + 1} (${round.result || "unfinished"})`;
    select.appendChild(option);
  }
  const info = replay.info;
  document.getElementById("replay-info").textContent =
    `Record: ${info.rounds.length} round${info.rounds.length === 1 ? "" : "s"}, ` +
    `target ${info.target}, final scores ` +
    `${info.scores[0]} \u2013 ${info.scores[1]}, ${info.ending}`;
  document.getElementById("start").hidden = true;
  document.getElementById("replay").hidden = false;
  await goTo(0, 0);
}

// Tell the server the replay shown is no longer needed (it counts against --max-games).
function dropReplay() {
  if (replay.info) fetch(`/api/replays/${replay.info.id}`, {method: "DELETE"}).catch(() => {});
  replay.info = null;
}

async function goTo(round, move) {
  const rounds = replay.info.rounds;
  round = Math.max(0, Math.min(rounds.length - 1, round));
  move = Math.max(0, Math.min(rounds[round].moves, move));
  const before = {round: replay.round, move: replay.move};
  replay.round = round;
  replay.move = move;
  const request = ++replay.request;
  let frame;
  try {
    frame = await App.api("GET", `/api/replays/${replay.info.id}/${round}/${move}`);
  } catch (error) {  // e.g. the replay expired after the server's idle minutes
    if (request !== replay.request) return;
    Object.assign(replay, before);
    document.getElementById("replay-position").textContent = error.message;
    return;
  }
  if (request !== replay.request) return;  // a later step was asked for meanwhile
  document.getElementById("replay-round").value = round;
  document.getElementById("replay-position").textContent =
    `move ${move} of ${frame.moves_in_round}` +
    (move === 0 ? ` \u2013 seat ${frame.opener} opens` : "") +
    (frame.result ? ` \u2013 ${frame.result}` : "");
  const seats = ["seat 0 & 2", "seat 1 & 3"];
  Board.drawTracks(document.getElementById("tracks"), frame.scores, frame.target, seats, null);
  document.getElementById("replay-end-sum").textContent =
    Board.drawBoard(document.getElementById("replay-board"), frame.board, null, null);
  const hands = document.getElementById("replay-hands");
  hands.replaceChildren();
  frame.hands.forEach((tiles, seat) => {
    const row = document.createElement("div");
    row.className = "replay-hand";
    row.append(Board.swatch(Board.TEAM_COLOURS[seat % 2]),
               `seat ${seat}` + (frame.deductions
                                 ? ` \u00b7 deduction ${Board.deductionText(frame.deductions[seat])}`
                                 : ""));
    for (const name of tiles) row.appendChild(Board.tileIcon(name.split("|").map(Number), 16));
    hands.appendChild(row);
  });
  const list = document.getElementById("replay-moves");
  list.replaceChildren();
  for (const entry of frame.moves) {
    const item = document.createElement("li");
    item.textContent = entry.text;
    item.style.borderLeftColor = Board.TEAM_COLOURS[entry.seat % 2];
    if (entry.points) item.className = "scored";
    list.appendChild(item);
  }
  list.scrollTop = list.scrollHeight;  // the latest move in view, as in the game's list
}

function stepReplay(kind) {
  const rounds = replay.info.rounds;
  const {round, move} = replay;
  if (kind === "first") return goTo(round, 0);
  if (kind === "last") return goTo(round, rounds[round].moves);
  if (kind === "next") {
    if (move < rounds[round].moves) return goTo(round, move + 1);
    if (round + 1 < rounds.length) return goTo(round + 1, 0);
    return null;
  }
  if (move > 0) return goTo(round, move - 1);
  if (round > 0) return goTo(round - 1, rounds[round - 1].moves);
  return null;
}

document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("record-file").addEventListener("change", (event) => {
    if (event.target.files.length) loadRecord(event.target.files[0]);
    event.target.value = "";
  });
  for (const button of document.querySelectorAll("#replay-controls [data-step]")) {
    button.addEventListener("click", () => stepReplay(button.dataset.step));
  }
  window.addEventListener("resize", () => {  // turned to another board shape: the same frame in it
    const shown = replay.info && !document.getElementById("replay").hidden;
    if (shown && Board.boardShape() !== App.ui.shape) goTo(replay.round, replay.move);
  });
  document.getElementById("replay-round").addEventListener("change", (event) => {
    event.target.blur();  // so that the arrow keys step moves again, not rounds
    goTo(Number(event.target.value), 0);
  });
  document.getElementById("replay-close").addEventListener("click", () => {
    dropReplay();
    document.getElementById("replay").hidden = true;
    document.getElementById("start").hidden = false;
    document.getElementById("tracks").replaceChildren();
  });
  document.addEventListener("keydown", (event) => {
    // the round list, focused, moves on its own arrow keys: one step, not two at once
    if (document.getElementById("replay").hidden || event.target.tagName === "SELECT") return;
    if (event.key === "ArrowRight") stepReplay("next");
    if (event.key === "ArrowLeft") stepReplay("prev");
  });
});
