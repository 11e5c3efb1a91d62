// The pit view: every table's feed state, camera / processed / skipped fps (the table's live
// figures, "stats"), last round and open alerts (GET /api/pit, polled each second); each row
// links to the table's dealer display (/tables/<id>/); above it, a card per table (thumbnail,
// alerts in words with acknowledge, pace).
"use strict";

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
}

function lastRound(r) {
  if (!r) return el("span", { class: "reason" }, "none yet");
  const results = Object.entries(r.results || {})
    .map(([pos, res]) => pos + " " + String(res).toUpperCase()).join(", ");
  return el("span", {}, el("b", { class: "round-id" }, r.round_id), " ",
            el("span", { class: "reason" }, (r.time || "") + (results ? " \u2014 " + results : "")
               + (r.banker_net != null ? " \u2014 bank " + r.banker_net : "")));
}

function alerts(list) {
  if (!list || !list.length) return el("span", { class: "reason" }, "none");
  const ul = el("ul", { class: "alerts" });
  for (const a of list.slice(0, 5)) {
    ul.append(el("li", {}, a.kind + (a.position ? " (" + a.position + ")" : "")));
  }
  if (list.length > 5) ul.append(el("li", {}, "+" + (list.length - 5) + " more"));
  return ul;
}

function worker(w) {
  const td = el("td", { class: "worker" },
                el("span", { class: "status " + w.state }, w.state),
                " pid " + (w.pid == null ? "-" : w.pid));
  if (w.note) td.append(el("span", { class: "reason restart-note" }, w.note));
  return td;
}

function fps(x) { return x == null ? "-" : Number(x).toFixed(1); }

// camera fps, processed fps (with the "falling behind" / "detector stuck" mark), skipped fps
function rates(t) {
  const s = t.stats;
  const proc = el("td", { class: "num processed-fps" }, s ? fps(s.processed_fps) : fps(t.fps));
  if (s && (s.stuck || s.behind)) {
    proc.append(el("span", { class: "lag-mark " + (s.stuck ? "stuck" : "behind"),
                             title: (s.reasons || []).join("; ") },
                   s.stuck ? "detector stuck" : "falling behind"));
  }
  return [el("td", { class: "num camera-fps" }, s ? fps(s.camera_fps) : "-"), proc,
          el("td", { class: "num skipped-fps" }, s ? fps(s.skipped_fps) : "-")];
}

function render(st) {
  document.getElementById("table-count").textContent = st.tables.length;
  const up = document.getElementById("updated");
  up.textContent = st.time; up.className = "status live";
  const body = document.getElementById("pit-body");
  const rows = [];
  for (const t of st.tables) {
    const link = el("a", { href: t.url, class: "table-link" }, t.table_id);
    const tr = el("tr", { "data-table": t.table_id },
      el("td", {}, link, el("span", { class: "reason" }, t.source)),
      el("td", {}, el("span", { class: "status feed-status " + t.status }, t.status),
         t.error ? el("span", { class: "reason" }, t.error) : ""),
      ...rates(t),
      el("td", { class: "last-round" }, lastRound(t.last_round)),
      el("td", { class: "num round-count" }, t.round_count),
      el("td", { class: "alert-cell" }, alerts(t.alerts)),
      worker(t.worker));
    rows.push(tr);
  }
  body.replaceChildren(...rows);
}

async function refresh() {
  try {
    const r = await fetch("/api/pit", { cache: "no-store" });
    if (r.ok) render(await r.json());
    else if (r.status === 401 || r.status === 403) {  // a viewer token is set (docs/web-api.md)
      const up = document.getElementById("updated");
      up.textContent = "viewer token needed: open this page as /?token=..."; up.className = "status error";
    }
  } catch (e) {
    const up = document.getElementById("updated");
    up.textContent = "unreachable"; up.className = "status error";
  }
}

// --- the table cards (GET /api/pit/tables): a live thumbnail per table (its snapshot.jpg,
// refreshed every THUMB_MS), its alerts in the dealer display's words, each once, with an
// Acknowledge button (the table's own POST api/control/ack, recorded in the audit store), and
// the game pace (rounds per hour from the table's rounds).
const THUMB_MS = 3000;
const cards = new Map();  // table id -> {card, img, pace, alerts}
let pitToken = "";
let control = false;

function paceText(p) {
  if (!p) return "pace -";
  const n = p.rounds + " round" + (p.rounds === 1 ? "" : "s");
  return p.rounds_per_hour == null ? "pace - (" + n + ")"
    : "pace " + Number(p.rounds_per_hour).toFixed(1) + " rounds/hour (" + n + ")";
}

async function acknowledge(t, a) {
  const r = await fetch(t.url + "api/control/ack", { method: "POST", headers: {
    "Content-Type": "application/json", Authorization: "Bearer " + pitToken },
    body: JSON.stringify({ round_id: a.round_id, kind: a.kind, position: a.position,
                           by: document.getElementById("pit-by").value }) });
  let d = {};
  try { d = await r.json(); } catch (e) { /* not JSON */ }
  document.getElementById("pit-msg").textContent = r.ok ? t.table_id + ": acknowledged"
    : t.table_id + ": refused (" + r.status + ")" + (d.error ? ": " + d.error : "");
  refreshCards();
}

function alertItems(t) {
  if (!t.alerts.length) return [el("li", { class: "none reason" }, "no alerts")];
  return t.alerts.map((a) => {
    const li = el("li", { class: "pit-alert" + (a.acknowledged ? " acked" : "") }, a.say);
    if (control && t.audit && a.round_id && !a.acknowledged) {
      const b = el("button", { type: "button", class: "ack" }, "Acknowledge");
      b.addEventListener("click", () => acknowledge(t, a));
      li.append(b);
    }
    return li;
  });
}

function card(t) {
  let c = cards.get(t.table_id);
  if (!c) {
    const img = el("img", { class: "pit-thumb", alt: t.table_id + " camera" });
    const pace = el("div", { class: "pit-pace" });
    const alerts = el("ul", { class: "pit-alerts" });
    const box = el("article", { class: "pit-card", "data-table": t.table_id },
      el("h2", {}, el("a", { href: t.url }, t.table_id)), img, pace, alerts);
    c = { card: box, img, pace, alerts, snapshot: t.snapshot, has: false };
    cards.set(t.table_id, c);
  }
  c.has = t.has_picture;
  if (c.has && !c.img.getAttribute("src")) c.img.src = c.snapshot + "?t=" + Date.now();
  c.pace.textContent = paceText(t.pace);
  const key = JSON.stringify([t.alerts, control, t.audit]);
  if (key !== c.key) { c.key = key; c.alerts.replaceChildren(...alertItems(t)); }
  return c.card;
}

async function refreshCards() {
  try {
    const r = await fetch("/api/pit/tables", { cache: "no-store" });
    if (!r.ok) return;
    const d = await r.json();
    control = d.control;
    document.getElementById("pit-control").classList.toggle("hidden", !control);
    document.getElementById("pit-cards").replaceChildren(...d.tables.map(card));
  } catch (e) { /* the row table says unreachable */ }
}

function refreshThumbs() {
  for (const c of cards.values()) if (c.has) c.img.src = c.snapshot + "?t=" + Date.now();
}

document.addEventListener("DOMContentLoaded", () => {
  const t = document.getElementById("pit-token");
  t.value = pitToken = sessionStorage.getItem("paigow-token") || "";
  t.addEventListener("input", () => { pitToken = t.value;
    sessionStorage.setItem("paigow-token", pitToken); });
  document.getElementById("pit-control").addEventListener("submit", (e) => e.preventDefault());
  refresh(); setInterval(refresh, 1000);
  refreshCards(); setInterval(refreshCards, 2000);
  setInterval(refreshThumbs, THUMB_MS);
});
