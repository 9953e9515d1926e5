// The tablebase explorer: plain JavaScript over the JSON API of the same server
// (no build step, no CDN: the machines that serve it are often offline).
// The page's state is in `S`; every change of position goes through `open()`,
// which asks /api/position and redraws. <body data-state> is "loading" or
// "ready" so a test (or a user's script) can wait for the page to settle.
"use strict";

const S = {
  variant: { stones: 50, pits: 5 },
  data: null,          // /api/position's answer for the position shown
  past: [],            // positions before this one: {position, human, note}
  moves: [],           // what was played to get here, one line a ply
  play: null,          // null, or {human: the human is the side to move now, seen: Map, over: text or null}
  mainline: null,      // /api/mainline's answer for the position shown, once asked for
};
const $ = (id) => document.getElementById(id);
const VALUE_WORD = { win: "wins", draw: "draws", loss: "loses" };

function compact(text) { return text.trim().split(/\s+/).join(","); }
function plies(n) { return n === 1 ? "1 ply" : `${n} plies`; }
function outcome(value, dtz) { return dtz === null || dtz === undefined ? value : `${value} ${dtz}`; }

async function api(path, options) {
  const answer = await fetch(path, options);
  let body;
  try { body = await answer.json(); } catch (e) { throw new Error(`the server answered ${answer.status} without JSON.`); }
  if (!answer.ok) {
    const failure = new Error(body.error || `the server answered ${answer.status}.`);
    failure.status = answer.status;  // 404: a layer the tablebase does not hold
    throw failure;
  }
  return body;
}

// Pits are not for the human to click while the oracle is to move or the game is over.
function locked() { return !!(S.play && (S.play.over || !S.play.human)); }

function busy(on) {
  document.body.dataset.state = on ? "loading" : "ready";
  for (const b of document.querySelectorAll("button")) {
    b.disabled = on || b.dataset.off === "1" || (b.classList.contains("pit") && locked());
  }
}

function say(text, kind) {
  const m = $("message");
  m.textContent = text || "";
  m.className = "message" + (kind ? " " + kind : "");
  delete m.dataset.substitute;
}

// -- opening a position --------------------------------------------------------------
async function open(position, how = {}) {
  busy(true);
  try {
    const data = await api(`/api/position?pos=${encodeURIComponent(compact(position))}`);
    S.data = data;
    S.mainline = null;
    if (how.address !== false) {
      const url = `?pos=${compact(data.position)}`;
      if (how.replace) history.replaceState({ pos: data.position }, "", url);
      else history.pushState({ pos: data.position }, "", url);
    }
    draw();
    return true;
  } catch (e) {
    say(e.message, "error");
    if (how.onError) how.onError(e);
    return false;
  } finally {
    busy(false);
    afterDraw();
  }
}

// -- drawing -------------------------------------------------------------------------
function who(bottom) {
  if (!S.play) return bottom ? "side to move" : "opponent";
  return bottom === S.play.human ? "you" : "oracle";
}

function draw() {
  const d = S.data, p = S.variant.pits;
  document.documentElement.style.setProperty("--pits", p);
  for (const el of document.querySelectorAll(".npits")) el.textContent = p;
  $("k1").textContent = d.k1;
  $("k2").textContent = d.k2;
  // The bottom row is always the side to move: in a game, say which player that is.
  $("label-bottom").textContent = S.play ? `${who(true)} (to move)` : who(true);
  $("label-top").textContent = who(false);
  $("board").dataset.position = d.position;
  $("position-text").textContent = d.position;
  $("api-link").href = `/api/position?pos=${compact(d.position)}`;
  $("api-link").textContent = `/api/position?pos=${compact(d.position)}`;

  const layer = `${d.k1}_${d.k2}`, select = $("layer-select");
  if ([...select.options].some((o) => o.value === layer)) select.value = layer;

  const byIndex = new Map(d.moves.map((m) => [m.index, m]));
  const best = d.moves.length ? d.moves[0].index : null;
  const bottom = $("row-bottom");
  bottom.replaceChildren();
  for (let i = 0; i < p; i++) {
    const m = byIndex.get(i);
    const el = document.createElement(m ? "button" : "div");
    el.className = "pit" + (m ? " " + m.category : "") + (i === best ? " best" : "");
    el.dataset.index = i;
    el.dataset.stones = d.pits[i];
    if (m) {
      el.type = "button";
      el.disabled = locked();
      el.dataset.value = m.category;
      el.dataset.dtz = m.dtz === null ? "" : m.dtz;
      el.title = moveTitle(m);
      el.addEventListener("click", () => play(m));
    }
    el.innerHTML = `<span class="name">pit ${i + 1}</span><span class="stones">${d.pits[i]}</span>` +
      `<span class="outcome">${m ? outcome(m.category, m.dtz) : ""}</span>`;
    bottom.appendChild(el);
  }
  const top = $("row-top");
  top.replaceChildren();
  for (let j = 2 * p - 1; j >= p; j--) {
    const el = document.createElement("div");
    el.className = "pit";
    el.dataset.index = j;
    el.dataset.stones = d.pits[j];
    el.innerHTML = `<span class="stones">${d.pits[j]}</span><span class="name">pit ${j - p + 1}</span>`;
    top.appendChild(el);
  }

  const v = $("verdict");
  v.className = "verdict " + d.category;
  v.dataset.value = d.category;
  v.dataset.dtz = d.dtz === null ? "" : d.dtz;
  const mover = S.play ? (S.play.human ? "You" : "The oracle") : "The side to move";
  if (!d.moves.length) v.textContent = `${mover} has no stone to sow: ${S.play ? (S.play.human ? "you lose" : "the oracle loses") : "it has lost"}.`;
  else v.textContent = `${mover} ${VALUE_WORD[d.category]}` + (d.dtz === null ? (d.category === "draw" ? " with best play." : " with best play (no distance table here).")
    : ` — ${plies(d.dtz)} to the next capture or the end, with best play.`);

  const body = $("moves").tBodies[0];
  body.replaceChildren();
  for (const m of d.moves) {
    const tr = document.createElement("tr");
    tr.dataset.pit = m.pit;
    tr.dataset.value = m.category;
    tr.dataset.dtz = m.dtz === null ? "" : m.dtz;
    tr.dataset.captured = m.captured;
    tr.title = moveTitle(m);
    tr.innerHTML = `<td>${m.pit}</td><td>${m.stones}</td><td>${m.captured || ""}${m.ends_game ? " (ends the game)" : ""}</td>` +
      `<td class="${m.category}">${m.category}</td><td>${m.dtz === null ? "" : m.dtz}</td>`;
    tr.addEventListener("click", () => play(m));
    body.appendChild(tr);
  }
  $("moves-note").textContent = d.moves.length
    ? `Best: pit ${d.best_move} (${d.best_move_reason}). Ties go to the larger capture, then the lower pit.` +
      (d.distances ? "" : " This layer has no distance table, so moves of one value are not ordered by length.")
    : d.best_move_reason;

  const hist = $("history");
  $("history-section").hidden = !S.moves.length;
  hist.replaceChildren();
  S.moves.forEach((text, i) => {
    const li = document.createElement("li");
    li.textContent = text;
    li.title = "go back to the position after this move";
    li.addEventListener("click", () => backTo(i + 1));
    hist.appendChild(li);
  });
  drawMainline();
  $("undo").dataset.off = S.past.length ? "0" : "1";
  $("play").hidden = !!S.play;
  $("play-side").disabled = !!S.play;
  $("stop-play").hidden = !S.play;
  document.body.dataset.game = S.play ? (S.play.over ? "over" : "playing") : "explore";
}

function moveTitle(m) {
  const took = m.captured ? `, captures ${m.captured}` : "";
  const end = m.ends_game ? " and ends the game" : ` → ${m.child}`;
  return `pit ${m.pit}: ${m.stones} stones${took}${end}; ${outcome(m.category, m.dtz)} for the mover`;
}

function drawMainline() {
  const list = $("mainline");
  list.replaceChildren();
  const line = S.mainline;
  if (!line) { $("mainline-note").textContent = "Perfect play from this position: press Mainline."; return; }
  const results = { win: "the side to move at the start wins", loss: "the side to move at the start loses",
    repetition: "a position came back (perfect play repeats: a draw)", limit: "stopped at the ply limit" };
  $("mainline-note").textContent = `${plies(line.plies)}; ${results[line.result]}.`;
  $("mainline-note").dataset.result = line.result;
  for (const m of line.moves) {
    const li = document.createElement("li");
    li.dataset.pit = m.pit;
    const took = m.captured ? `, captures ${m.captured}` : "";
    li.textContent = `pit ${m.pit}${took}` + (m.ends_game ? " — ends the game" : ` → ${outcome(m.after.category, m.after.dtz)} for the side then to move`);
    if (m.child) {
      li.title = `open ${m.child}`;
      li.addEventListener("click", () => { leavePlay(); S.past.push({ position: S.data.position, human: null }); S.moves.push(`pit ${m.pit} (mainline, jump)`); open(m.child); });
    }
    list.appendChild(li);
  }
}

// -- moves, play and undo ------------------------------------------------------------
function label(m) {
  const by = S.play ? (S.play.human ? "you" : "oracle") : "";
  return `pit ${m.pit}${m.captured ? `, captures ${m.captured}` : ""}${by ? ` (${by})` : ""}`;
}

async function play(m) {
  if (document.body.dataset.state !== "ready") return;
  if (S.play && (S.play.over || !S.play.human)) return;
  await apply(m);
}

async function apply(m) {
  const mover = S.play ? (S.play.human ? "You" : "The oracle") : "The side to move";
  S.past.push({ position: S.data.position, human: S.play ? S.play.human : null });
  S.moves.push(label(m));
  if (m.ends_game) {
    say(`${mover} played pit ${m.pit}${m.captured ? `, captured ${m.captured}` : ""} and won the game.`, m.category);
    if (S.play) S.play.over = $("message").textContent;
    draw();
    return;
  }
  if (S.play) S.play.human = !S.play.human;
  const ok = await open(m.child);
  if (!ok) { S.past.pop(); S.moves.pop(); if (S.play) S.play.human = !S.play.human; }
  else if (!S.play) say(`${mover} played pit ${m.pit}${m.captured ? ` and captured ${m.captured}` : ""}.`);
}

function afterDraw() {
  if (!S.data) return;
  if (S.play && !S.play.over) {
    const key = `${S.play.human}|${S.data.position}`;
    const seen = (S.play.seen.get(key) || 0) + 1;
    S.play.seen.set(key, seen);
    if (!S.data.moves.length) {
      S.play.over = S.play.human ? "You have no stone to sow: the oracle won the game." : "The oracle has no stone to sow: you won the game.";
    } else if (seen >= 3) {
      S.play.over = "The same position came back a third time: a draw.";
    }
    if (S.play.over) { say(S.play.over); document.body.dataset.game = "over"; busy(false); return; }
    if (!S.play.human) {
      const m = S.data.moves[0];
      say(`The oracle plays pit ${m.pit} (${S.data.best_move_reason}).`);
      setTimeout(() => apply(m), 250);
    }
  }
}

function startPlay() {
  const human = $("play-side").value === "mover";
  S.play = { human, seen: new Map(), over: null };
  S.past = []; S.moves = [];
  say(human ? "You move: click one of your pits along the bottom." : "The oracle moves first.");
  draw();
  afterDraw();
}

function leavePlay() {
  if (!S.play) return;
  S.play = null;
  say("");
}

async function backTo(n) {
  // keep the first n plies played
  if (n >= S.past.length) return;
  const target = S.past[n];
  if (S.play) S.play.human = target.human;
  S.past = S.past.slice(0, n);
  S.moves = S.moves.slice(0, n);
  if (S.play) { S.play.over = null; S.play.seen = new Map(); }
  say("");
  await open(target.position);
}

async function undo() {
  if (!S.past.length) return;
  let n = S.past.length - 1;
  // playing: back to the last position where it was the human's turn
  if (S.play) while (n > 0 && S.past[n].human === false) n--;
  await backTo(n);
}

// -- editing -------------------------------------------------------------------------
function showEditor() {
  const d = S.data, p = S.variant.pits;
  const make = (from, to) => Array.from({ length: to - from }, (_, k) =>
    `<input type="number" min="0" data-edit-index="${from + k}" value="${d ? d.pits[from + k] : 0}" aria-label="pit ${k + 1}">`).join(" ");
  $("edit-own").innerHTML = make(0, p);
  $("edit-other").innerHTML = make(p, 2 * p);
  $("edit-k1").value = d ? d.k1 : 0;
  $("edit-k2").value = d ? d.k2 : 0;
  $("edit-text").value = "";
  $("edit-error").textContent = "";
  $("editor").hidden = false;
}

async function applyEdit(event) {
  event.preventDefault();
  let text = $("edit-text").value.trim();
  if (!text) {
    const pits = [...document.querySelectorAll("[data-edit-index]")].map((el) => el.value.trim() || "0");
    text = [$("edit-k1").value || "0", $("edit-k2").value || "0", ...pits].join(" ");
  }
  leavePlay();
  const saved = [S.past, S.moves];
  S.past = []; S.moves = [];
  const ok = await open(text, { onError: (e) => { $("edit-error").textContent = e.message; } });
  if (ok) { $("editor").hidden = true; say(""); } else { [S.past, S.moves] = saved; }
}

// -- the start picker ----------------------------------------------------------------
async function loadLayers() {
  const info = await api("/api/layers");
  S.variant = info.variant;
  $("start-game").hidden = !info.start;
  const select = $("layer-select");
  select.replaceChildren();
  if (!info.layers) {
    $("picker-note").textContent = "This tablebase cannot list its layers: edit a position to open one.";
    $("random").dataset.off = "1";
    return info;
  }
  for (const l of info.layers) {
    const o = document.createElement("option");
    o.value = l.layer;
    o.textContent = `${l.layer}: ${l.board_stones} stones on the board, ${l.positions.toLocaleString("en")} positions` + (l.distances ? ", distances" : "");
    select.appendChild(o);
  }
  $("picker-note").textContent = `${info.layers.length} layers held` + (info.start ? "." : "; this tablebase holds an endgame only, so positions come from its layers.");
  return info;
}

async function randomPosition() {
  busy(true);
  let got;
  try {
    const sym = $("symmetric").checked ? "&symmetric=1" : "";
    got = await api(`/api/random?layer=${encodeURIComponent($("layer-select").value)}${sym}`);
  } catch (e) { say(e.message, "error"); busy(false); return; }
  busy(false);
  fresh();
  await open(got.position);
}

function fresh() { leavePlay(); S.past = []; S.moves = []; say(""); }

// -- start ---------------------------------------------------------------------------
async function main() {
  busy(true);
  let info;
  try { info = await loadLayers(); } catch (e) { say(e.message, "error"); busy(false); return; }
  const health = await api("/api/health").catch(() => null);
  if (health) $("source").textContent = `${health.tablebase} · ${health.variant.stones} stones, ${health.variant.pits} pits a side`;
  $("undo").addEventListener("click", undo);
  $("show-mainline").addEventListener("click", async () => {
    busy(true);
    try { S.mainline = await api(`/api/mainline?pos=${compact(S.data.position)}&max_plies=400`); drawMainline(); }
    catch (e) { say(e.message, "error"); }
    finally { busy(false); }
  });
  $("edit").addEventListener("click", showEditor);
  $("edit-cancel").addEventListener("click", () => { $("editor").hidden = true; });
  $("editor").addEventListener("submit", applyEdit);
  $("play").addEventListener("click", startPlay);
  $("stop-play").addEventListener("click", () => { leavePlay(); draw(); });
  $("start-game").addEventListener("click", () => { fresh(); open(info.start); });
  $("random").addEventListener("click", randomPosition);
  window.addEventListener("popstate", (e) => {
    const pos = (e.state && e.state.pos) || new URLSearchParams(location.search).get("pos");
    if (pos) { fresh(); open(pos, { address: false }); }
  });
  busy(false);
  const asked = new URLSearchParams(location.search).get("pos");
  let refused = null;  // why the asked position could not be shown
  if (asked && await open(asked, { replace: true, onError: (e) => { refused = e; } })) return;
  // Another position stands in for a refused one: the page says so, and why.
  const instead = (what) => {
    if (!refused) return;
    const [k1, k2] = compact(asked).split(",");
    const why = refused.status === 404 ? `layer ${k1}_${k2} is not in this tablebase` : refused.message.replace(/\.$/, "");
    say(`${why}; showing ${what} instead.`, "error");
    $("message").dataset.substitute = "1";
  };
  if (info.start && await open(info.start, { replace: true })) { instead("the game's start"); return; }
  if (info.layers && info.layers.length) {
    const got = await api(`/api/random?layer=${info.layers[0].layer}`).catch((e) => { say(e.message, "error"); return null; });
    if (got && await open(got.position, { replace: true })) instead(`a random position of layer ${got.layer}`);
  }
}

main();
