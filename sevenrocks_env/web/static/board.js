// Drawing in SVG, in the picture renderer's visual language (sevenrocks_env/render/picture.py):
// ivory tiles with pips, doubles crosswise, the spinner outlined in orange, counted ends as gold
// discs showing their value, open ends that count 0 as rings, the last tile outlined in its
// team's colour, score pegs on a track.  Positions come from the server (render/geometry.py).
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
const TEAM_COLOURS = ["#468ceb", "#e14b4b"];
const PIPS = {
  0: [], 1: [[.5, .5]], 2: [[.25, .25], [.75, .75]], 3: [[.25, .25], [.5, .5], [.75, .75]],
  4: [[.25, .25], [.75, .25], [.25, .75], [.75, .75]],
  5: [[.25, .25], [.75, .25], [.5, .5], [.25, .75], [.75, .75]],
  6: [[.25, .22], [.25, .5], [.25, .78], [.75, .22], [.75, .5], [.75, .78]],
};

function svg(tag, attrs, parent) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
  if (parent) parent.appendChild(node);
  return node;
}

// A domino in the box [x0, y0, x1, y1]: `first` in the left/top square, `second` in the other.
function drawDomino(parent, box, first, second, vertical, extraClass) {
  const [x0, y0, x1, y1] = box;
  const w = x1 - x0, h = y1 - y0, short = Math.min(w, h);
  const group = svg("g", {class: "domino " + (extraClass || "")}, parent);
  svg("rect", {x: x0, y: y0, width: w, height: h, rx: Math.max(2, short / 7),
               class: "tile-face", "stroke-width": Math.max(1, short / 18)}, group);
  const pip = Math.max(1.2, short * 0.085);
  let halves;
  if (vertical) {
    const mid = (y0 + y1) / 2;
    svg("line", {x1: x0 + short * .15, y1: mid, x2: x1 - short * .15, y2: mid,
                 class: "tile-line", "stroke-width": Math.max(1, short / 20)}, group);
    halves = [[x0, y0, x1, mid, first], [x0, mid, x1, y1, second]];
  } else {
    const mid = (x0 + x1) / 2;
    svg("line", {x1: mid, y1: y0 + short * .15, x2: mid, y2: y1 - short * .15,
                 class: "tile-line", "stroke-width": Math.max(1, short / 20)}, group);
    halves = [[x0, y0, mid, y1, first], [mid, y0, x1, y1, second]];
  }
  for (const [hx0, hy0, hx1, hy1, number] of halves) {
    for (const [fx, fy] of PIPS[number]) {
      svg("circle", {cx: hx0 + fx * (hx1 - hx0), cy: hy0 + fy * (hy1 - hy0), r: pip,
                     class: "pip"}, group);
    }
  }
  return group;
}

// The table: tiles, spinner outline, last tile, end markers and the end sum.
// `targets` maps slot -> true for the ends the selected tile may go to (highlighted).
function drawBoard(node, board, targets, onMarker) {
  node.replaceChildren();
  svg("rect", {x: 0, y: 0, width: board.width, height: board.height, class: "felt"}, node);
  if (board.empty) {  // two lines: one was wider than the tall box (cut off on a phone)
    const text = svg("text", {x: board.width / 2, y: board.height / 2, class: "empty-table"}, node);
    ["the table is empty: ", "the opener plays any tile (R3)"].forEach((line, n) => {
      svg("tspan", {x: board.width / 2, dy: n ? "1.3em" : "-0.2em"}, text).textContent = line;
    });
  }
  const ends = [];  // the open ends in words: the table's name for a screen reader
  for (const tile of board.tiles) {
    const [x0, y0, x1, y1] = tile.box;
    const unit = Math.min(x1 - x0, y1 - y0);
    drawDomino(node, tile.box, tile.halves[0], tile.halves[1], tile.vertical);
    if (tile.last) {
      svg("rect", {x: x0, y: y0, width: x1 - x0, height: y1 - y0, rx: Math.max(2, unit * .14),
                   class: "last-tile", stroke: TEAM_COLOURS[tile.seat % 2],
                   "stroke-width": Math.max(2, unit * .1)}, node);
    }
    if (tile.spinner) {
      const pad = Math.max(2, unit * .1), width = Math.max(3, unit * .16);
      svg("rect", {x: x0 - pad, y: y0 - pad, width: x1 - x0 + 2 * pad, height: y1 - y0 + 2 * pad,
                   rx: width + 2, class: "spinner", "stroke-width": width}, node);
    }
  }
  for (const marker of board.markers) {
    const [cx, cy] = marker.center;
    const target = Boolean(targets && targets[marker.slot]);
    const group = svg("g", {class: "marker" + (target ? " target" : ""),
                            "data-slot": marker.slot}, node);
    const title = svg("title", {}, group);
    title.textContent = marker.place + ": open " + marker.number +
      (marker.counted ? ", counts " + marker.value : ", counts 0 for now (R5)");
    ends.push(title.textContent);
    if (marker.counted) {
      svg("circle", {cx, cy, r: marker.radius, class: "counted"}, group);
      const text = svg("text", {x: cx, y: cy, class: "counted-value",
                                "font-size": marker.radius * 1.15, "aria-hidden": "true"}, group);
      text.textContent = marker.value;
    } else {
      svg("circle", {cx, cy, r: marker.radius, class: "hollow",
                     "stroke-width": Math.max(2, marker.radius / 4)}, group);
    }
    // a larger invisible disc makes the end easy to hit on a phone
    svg("circle", {cx, cy, r: Math.max(marker.radius * 1.6, 22), class: "hit"}, group);
    if (onMarker) {
      group.addEventListener("click", () => onMarker(marker.slot));
      if (target) {  // where the picked tile fits: reachable by Tab, played by Enter or Space
        group.setAttribute("tabindex", "0");
        group.setAttribute("role", "button");
        group.setAttribute("aria-label", "play it at the " + title.textContent);
        group.addEventListener("keydown", (event) => {
          if (event.key === "Enter" || event.key === " ") {
            event.preventDefault();
            onMarker(marker.slot);
          }
        });
      }
    }
  }
  node.setAttribute("aria-label", board.empty ? "the table, empty"
    : `the table: ${board.tiles.length} tile${board.tiles.length === 1 ? "" : "s"}; ` +
      `open ends: ${ends.join("; ")}`);
  fitView(node, board);
  return endSumText(board);
}

// The board box to ask the server for (the Sevenrocks-Board header; render/geometry.py lays
// the tiles out in it): "tall" on a narrow portrait screen (a phone held upright), where the
// wide box's long lines would be a strip of tiny tiles; "wide" otherwise.
function boardShape() {
  return window.innerWidth <= 700 && window.innerHeight > window.innerWidth ? "tall" : "wide";
}

// Zoom in on a small layout (up to 1.8x) so early tiles stay readable on a phone; a replay
// frame (board.framed: laid out by its round's final layout) keeps the whole box, so that no
// tile moves from one frame to the next.
function fitView(node, board) {
  const xs = [], ys = [];
  for (const tile of board.tiles) { xs.push(tile.box[0], tile.box[2]); ys.push(tile.box[1], tile.box[3]); }
  for (const m of board.markers) {
    xs.push(m.center[0] - m.radius, m.center[0] + m.radius);
    ys.push(m.center[1] - m.radius, m.center[1] + m.radius);
  }
  let [x0, y0, w, h] = [0, 0, board.width, board.height];
  if (xs.length && !board.framed) {
    const scale = Math.max(1 / 1.8, (Math.max(...xs) - Math.min(...xs) + 40) / board.width,
                           (Math.max(...ys) - Math.min(...ys) + 40) / board.height);
    w = Math.min(board.width, board.width * scale);
    h = Math.min(board.height, board.height * scale);
    const cx = (Math.max(...xs) + Math.min(...xs)) / 2, cy = (Math.max(...ys) + Math.min(...ys)) / 2;
    x0 = Math.max(0, Math.min(board.width - w, cx - w / 2));
    y0 = Math.max(0, Math.min(board.height - h, cy - h / 2));
  }
  node.setAttribute("viewBox", `${x0} ${y0} ${w} ${h}`);
  node.firstChild.setAttribute("x", x0);  // the felt fills the view
  node.firstChild.setAttribute("y", y0);
}

// "end sum 20 = 3 + 5 + 6 + 6 · last tile: 20 points" (R5).
function endSumText(board) {
  if (board.empty) return "no end sum yet: nothing is on the table (R5)";  // the felt says R3
  const points = board.end_sum > 0 && board.end_sum % 5 === 0 ? board.end_sum : 0;
  return "end sum " + board.end_sum +
    (board.counted.length > 1 ? " = " + board.counted.join(" + ") : "") +
    " \u00b7 " + (points ? "a multiple of 5: the last tile scored " + points : "no points");
}

// Both partnerships' scores as pegs on a track with a hole every `step` points (R1, R8).
// A team's colour swatch: the small square before a seat's or a team's name.
function swatch(colour) {
  const node = document.createElement("i");
  node.style.background = colour;
  return node;
}

function drawTracks(node, scores, target, seatsOfTeam, winner) {
  node.replaceChildren();
  const step = Math.max(5, Math.ceil(target / 100 / 5) * 5);
  const holes = Math.max(1, Math.floor(target / step));
  for (const team of [0, 1]) {
    const row = document.createElement("div");
    row.className = "track-row";
    const label = document.createElement("span");
    label.className = "track-label";
    const seats = document.createElement("small");
    seats.textContent = `(${seatsOfTeam[team]})`;  // agent labels: text, never markup
    label.append(swatch(TEAM_COLOURS[team]), `team ${team} `, seats);
    row.appendChild(label);
    // no viewBox: the track stretches to its width, its holes stay round (placed in percent
    // of the width, sized in pixels; a stretched viewBox drew them as ovals on a phone)
    const track = svg("svg", {class: "track", "aria-hidden": "true"});  // the row says it
    svg("rect", {x: 0, y: 0, width: "100%", height: 16, rx: 6, class: "track-wood"}, track);
    row.appendChild(track);
    const value = document.createElement("span");
    value.className = "track-score";
    value.id = "score-" + team;
    value.textContent = scores[team];
    const of = document.createElement("small");
    of.className = "track-of";  // of one width whatever it says: the two tracks stay aligned
    of.textContent = " / " + target + (winner === team ? "  wins" : "");
    row.appendChild(value);
    row.appendChild(of);
    node.appendChild(row);
    // every hole drawn at least 7 px from the next: on a narrow screen every second (fifth...)
    const width = track.getBoundingClientRect().width;
    const every = width > 0 ? Math.max(1, Math.ceil(7 * (holes + 1) / width)) : 1;
    for (let hole = every - 1; hole < holes; hole += every) {
      const filled = scores[team] >= (hole + 1) * step;
      svg("circle", {cx: `${(100 * (hole + 1) / (holes + 1)).toFixed(3)}%`, cy: 8,
                     r: filled ? 3.4 : 2, fill: filled ? TEAM_COLOURS[team] : "#462d19"}, track);
    }
  }
}

// A tile of a hand as a small standalone SVG (for buttons and summaries).
function tileIcon(halves, size) {
  const s = size || 28;
  const node = svg("svg", {viewBox: `0 0 ${2 * s + 2} ${s + 2}`, width: 2 * s + 2, height: s + 2,
                           class: "tile-icon", role: "img", "aria-label": halves.join("|")});
  drawDomino(node, [1, 1, 2 * s + 1, s + 1], halves[0], halves[1], false);
  return node;
}

// A deduction (R7) as shown: "\u221212", or "none" when there is none (never "-0").
function deductionText(points) {
  return points ? `\u2212${points}` : "none";
}

window.Board = {drawBoard, endSumText, drawDomino, drawTracks, swatch, tileIcon, deductionText,
                boardShape, TEAM_COLOURS};
