// Dealer display: renders /api/state, listens to /api/events (server-sent events).
// Plain JS, no dependencies; all data goes into the page via textContent (never innerHTML).
"use strict";

const RESULT_TEXT = { win: "WIN", lose: "LOSE", push: "PUSH", not_settled: "NOT SETTLED", in_play: "IN PLAY" };
const POS_NAME = (p) => (p === "dealer" ? "Dealer" : "Seat " + p);
const POS_ORDER = ["dealer", "1", "2", "3", "4", "5", "6", "7"];
// JS objects list integer-like keys first: put the positions back in table order (dealer first)
const byTable = (obj) => Object.entries(obj || {}).sort((a, b) => {
  const ia = POS_ORDER.indexOf(a[0]), ib = POS_ORDER.indexOf(b[0]);
  return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib);
});
const kindText = (k) => String(k || "alert").replace(/_/g, " ");
let lastRoundShown = null;
let freshRound = null;




function handCell(faces, name) {
  const td = el("td", {});
  td.append(el("span", { class: "tiles" }, faces && faces.length ? faces.join(" ") : "-"));
  if (name) td.append(el("span", { class: "hand-name" }, name));
  return td;
}

function alertCell(alerts) {
  const td = el("td", { class: "alert-cell" });
  for (const a of alerts || []) {
    td.append(el("span", { class: "alert-kind" }, kindText(a.kind)));
  }
  return td;
}

function renderPositions(st) {
  const body = document.getElementById("positions-body");
  const rows = [];
  for (const [pos, p] of byTable(st.positions)) {
    const res = p.result || "in_play";
    const resCell = el("td", {},
      el("span", { class: "result " + res }, RESULT_TEXT[res] || res.toUpperCase()));
    if (p.say) resCell.append(el("span", { class: "reason" }, p.say));
    if (p.mis_set) resCell.append(el("span", { class: "reason" }, "mis-set"));
    const tr = el("tr", { class: p.role === "banker" ? "banker" : "", data: { pos: pos } },
      el("td", {}, POS_NAME(pos) + (p.role === "banker" ? " (banker)" : "")),
      handCell(p.high, p.high_hand),
      handCell(p.low, p.low_hand),
      resCell,
      el("td", { class: "num net" }, money(p.net)),
      alertCell(p.alerts));
    if (freshRound && st.last_round && st.last_round.round_id === freshRound) {
      tr.classList.add("fresh");
    }
    rows.push(tr);
  }
  if (!rows.length) {
    rows.push(el("tr", { class: "empty" },
      el("td", { colspan: "6" }, "waiting for the first settled round")));
  }
  body.replaceChildren(...rows);
  freshRound = null;
}

function renderAlerts(listId, alerts, emptyText) {
  const ul = document.getElementById(listId);
  // plain words only (a.say), never the machine's detail (decoder messages)
  const items = (alerts || []).map((a) => el("li", {},
    a.say || ((a.position ? POS_NAME(a.position) + ": " : "") + kindText(a.kind))));
  if (!items.length && emptyText) items.push(el("li", { class: "none" }, emptyText));
  ul.replaceChildren(...items);
}

function renderLive(st) {
  const live = (st.live && st.live.positions) || {};
  const rows = byTable(live).map(([pos, p]) => el("tr", { data: { pos: pos } },
    el("td", {}, POS_NAME(pos)),
    el("td", { class: "tiles" }, (p.tiles || []).map((f) => f || "?").join(" ")),
    el("td", {}, p.high_hand ? p.high_hand + " / " + (p.low_hand || "") : ""),
    el("td", {}, p.status === "set" ? "set" : p.status === "dealing" ? "being dealt"
      : (p.say || "check the hand"))));
  if (!rows.length) rows.push(el("tr", { class: "empty" }, el("td", { colspan: "4" }, "nothing seen")));
  document.getElementById("live-body").replaceChildren(...rows);
  renderAlerts("live-alerts", st.live && st.live.alerts, null);
}

function renderHistory(st) {
  const items = (st.rounds || []).map((r) => {
    const res = Object.entries(r.results || {})
      .map(([p, v]) => p + ":" + (RESULT_TEXT[v] || v)).join(" ");
    return el("li", {}, r.round_id + "  " + (r.time || "") + "  " + res +
      (r.alerts ? "  (" + r.alerts + " alert" + (r.alerts > 1 ? "s" : "") + ")" : ""));
  });
  document.getElementById("history").replaceChildren(...items);
}

// The camera's state (st.feed, vision/web/health.py): a banner while it is lost, the gaps
function renderFeed(feed) {
  const cam = document.getElementById("camera");
  const banner = document.getElementById("camera-lost");
  if (!feed) {
    cam.textContent = "-"; cam.className = "status"; setText("gaps", "");
    banner.classList.add("hidden");
    return;
  }
  cam.textContent = feed.state;
  cam.className = "status " + feed.state;
  const lost = feed.state === "reconnecting" ? feed.current_gap_s : 0;
  const camText = lost > 0 ? "camera lost for " + Math.floor(lost) + " s -- reconnecting" +
    (feed.attempts ? " (attempt " + (feed.attempts + 1) + ")" : "") : "";
  // the audit store unreachable: "audit store unreachable, N round(s) spooled"
  const auditText = (feed.audit && feed.audit.message) || "";
  banner.textContent = [camText, auditText].filter(Boolean).join(" | ");
  banner.classList.toggle("hidden", !(camText || auditText));
  setText("gaps", feed.gaps ? "(" + feed.gaps + " gap" + (feed.gaps > 1 ? "s" : "") +
    ", last " + Number(feed.last_gap_s).toFixed(1) + " s)" : "");
}

function render(st) {
  if (st.title) { setText("title", st.title); document.title = st.title; }
  setText("table-id", st.table_id || "-");
  const status = document.getElementById("status");
  status.textContent = st.status;
  status.className = "status " + st.status;
  setText("frame-index", st.frame_index === null ? "-" : st.frame_index);
  setText("fps", st.fps ? "(" + st.fps + " fps)" : "");
  document.getElementById("no-picture").classList.toggle("hidden", !!st.has_picture);
  const err = document.getElementById("error");
  err.textContent = st.error || "";
  err.classList.toggle("hidden", !st.error);
  const last = st.last_round;
  setText("round-id", last ? last.round_id : "none yet");
  setText("round-time", last ? (last.time || "") : "");
  if (!last || last.round_id !== lastRoundShown || freshRound) {
    lastRoundShown = last ? last.round_id : null;
    renderPositions(st);
    renderAlerts("alerts", st.alerts, "none");
    const bank = last && last.bank;
    setText("bank", bank ? "Bank: net " + money(bank.net) + ", commission " + bank.commission +
      ", house net " + money(bank.house_net) : "");
  }
  renderFeed(st.feed);
  renderLive(st);
  renderHistory(st);
  document.getElementById("control").classList.toggle("hidden", !st.control);
}

let refreshing = false;
let again = false;  // a refresh was asked for while one was in flight: run one more after it
async function refresh() {
  if (refreshing) { again = true; return; }
  refreshing = true;
  try {
    do {
      again = false;
      const r = await fetch("api/state", { cache: "no-store" });
      if (r.ok) render(await r.json());
      else if (r.status === 401 || r.status === 403) tokenNeeded();
    } while (again);
  } catch (e) {
    setText("status", "unreachable");
    document.getElementById("status").className = "status error";
  } finally {
    refreshing = false;
  }
}

// The server has a viewer token (docs/web-api.md, Access) and this tab has no valid one
function tokenNeeded() {
  const status = document.getElementById("status");
  status.textContent = "viewer token needed: open this page as ?token=...";
  status.className = "status error";
}

function listen() {
  const es = new EventSource("api/events");
  const st = document.getElementById("events-status");
  es.onopen = () => { st.textContent = "live"; st.className = "status live"; };
  es.onerror = () => { st.textContent = "reconnecting"; st.className = "status lost"; };
  es.addEventListener("round", (msg) => {
    let ev;
    try { ev = JSON.parse(msg.data); } catch (e) { return; }
    freshRound = ev.round_id;
    refresh();
  });
}

function video() {
  const img = document.getElementById("video");
  img.addEventListener("error", () => {
    setTimeout(() => { img.src = "video.mjpeg?t=" + Date.now(); }, 2000);
  });
}

function control() {
  const form = document.getElementById("control");
  const input = document.getElementById("token");
  input.value = sessionStorage.getItem("paigow-token") || "";
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    sessionStorage.setItem("paigow-token", input.value);
    const r = await fetch("api/control/reset", {
      method: "POST", headers: { Authorization: "Bearer " + input.value } });
    setText("control-msg", r.ok ? "new round started" : "refused (" + r.status + ")");
  });
}

document.addEventListener("DOMContentLoaded", () => {
  video();
  control();
  refresh();
  listen();
  setInterval(refresh, 1000);
});
