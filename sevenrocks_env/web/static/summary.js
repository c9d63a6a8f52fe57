// The round and match summaries: a dialog after every round (hands, deductions, scores) and at
// the match's end (who won, Play again, Download record, New match).  Uses app.js's ui, api,
// show, begin and forget, and board.js's Board.
"use strict";

function showSummary(view, summary) {
  ui.paused = true;
  clearTimeout(ui.timer);
  const body = $("summary-body");
  body.replaceChildren();
  const title = document.createElement("h2");
  title.id = "summary-title";  // the dialog's name
  title.textContent = `Round ${summary.round + 1}: ` + withSeatNames(view, summary.text);
  body.appendChild(title);
  if (summary.last_move) {
    const last = document.createElement("p");
    last.id = "summary-last-move";
    last.textContent = "Last move: " + withSeatNames(view, summary.last_move.text);
    body.appendChild(last);
  }
  if (summary.hands.length) {
    const table = document.createElement("table");
    table.innerHTML = "<tr><th>seat</th><th>remaining hand</th><th>pips</th><th>rounded</th><th>deduction</th></tr>";
    for (const hand of summary.hands) {
      const row = table.insertRow();
      row.insertCell().textContent = hand.seat === view.seat ? `${hand.seat} (you)` : `${hand.seat} (${view.seats[hand.seat].label})`;
      const cell = row.insertCell();
      for (const name of hand.tiles) cell.appendChild(Board.tileIcon(name.split("|").map(Number), 16));
      if (!hand.tiles.length) cell.textContent = "(empty)";
      row.insertCell().textContent = hand.pips;
      row.insertCell().textContent = hand.rounded;
      row.insertCell().textContent = "team " + hand.team + (hand.deduction ? " " : ": ") +
        Board.deductionText(hand.deduction);
    }
    body.appendChild(table);
    const lost = document.createElement("p");
    const [lost0, lost1] = summary.team_deductions.map(Board.deductionText);
    lost.textContent = `Deductions (R7): team 0 ${lost0}, team 1 ${lost1}`;
    body.appendChild(lost);
  }
  const scores = document.createElement("p");
  scores.className = "summary-scores";
  scores.textContent = `Scores: team 0 ${summary.scores[0]}, team 1 ${summary.scores[1]}`;
  body.appendChild(scores);
  if (view.over) {
    const result = document.createElement("h2");
    const mine = view.winner === view.team;
    result.id = "match-result";
    result.textContent = `Team ${view.winner} wins ${view.scores[0]} \u2013 ${view.scores[1]}: ` +
      (mine ? "your team wins!" : "your team loses.") + ` (seed ${view.seed})`;
    body.appendChild(result);
  }
  $("summary-continue").hidden = view.over;
  $("rematch").hidden = !view.over;
  $("summary-download").hidden = !view.over;  // the page's own button is behind the dialog
  $("summary-new").hidden = !view.over;
  $("summary-close").hidden = !view.over;  // the final table, behind the dialog
  $("summary").showModal();
}

// The next round: its hand takes the keyboard (the dialog gave it back to the button that
// opened it, a tile the round's end had removed, so it fell to the page's body)
function closeSummary() {
  $("summary").close();
  ui.paused = false;
  show(ui.view);
  $("hand").querySelector(".hand-tile")?.focus({preventScroll: true});
}

async function rematch() {
  if (ui.starting) return;  // a double click: one new match, not a second holding a place
  ui.starting = true;
  try {
    const old = ui.view;
    const view = await api("POST", `/api/games/${ui.view.id}/rematch`);
    $("summary").close();
    forget(old);
    begin(view);
  } catch (error) {  // shown in the dialog: the page's notice line is behind it
    const problem = document.createElement("p");
    problem.className = "warn";
    problem.textContent = error.message;
    $("summary-body").appendChild(problem);
  } finally {
    ui.starting = false;
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("summary-continue").addEventListener("click", closeSummary);
  // Escape: the next round, or at the match's end the final table (the dialog closes itself)
  $("summary").addEventListener("cancel", (event) => {
    if (!ui.view.over) { event.preventDefault(); closeSummary(); }
  });
  $("summary-close").addEventListener("click", () => $("summary").close());
  $("show-result").addEventListener("click", () => showSummary(ui.view, ui.view.last_round));
  $("rematch").addEventListener("click", rematch);
});
