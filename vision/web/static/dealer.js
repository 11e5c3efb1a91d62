// Dealer mode: what the dealer needs, readable from two metres. Only plain-language text
// ("say") is shown, never the machine's reasons. Plain JS; data via textContent only.
"use strict";

const RESULT_TEXT = { win: "WIN", lose: "LOSE", push: "PUSH", not_settled: "NOT SETTLED",
  in_play: "IN PLAY" };
const POS_ORDER = ["dealer", "1", "2", "3", "4", "5", "6", "7"];
const NAME = (p) => (p === "dealer" ? "Dealer" : "Seat " + p);
const FACES = [];
for (let a = 1; a <= 6; a++) for (let b = a; b <= 6; b++) FACES.push(a + "-" + b);
const rank = (p) => { const i = POS_ORDER.indexOf(p); return i < 0 ? 99 : i; };
const byTable = (obj) => Object.entries(obj || {}).sort((a, b) => rank(a[0]) - rank(b[0]));


function card(pos, p, manual) {
  const res = p.result || "in_play";
  const c = el("article", { class: "d-card" + (p.role === "banker" ? " banker" : ""),
    data: { pos: pos } },
    el("div", { class: "d-name" }, NAME(pos) + (p.role === "banker" ? " (banker)" : "")),
    el("span", { class: "d-result " + res }, RESULT_TEXT[res] || res.toUpperCase()),
    el("div", { class: "d-hand" }, el("span", { class: "d-tiles" },
      p.high ? p.high.join(" ") : "- -"), " ", p.high_hand || ""),
    el("div", { class: "d-hand" }, el("span", { class: "d-tiles" },
      p.low ? p.low.join(" ") : "- -"), " ", p.low_hand || ""),
    el("div", { class: "d-money" },
      el("span", { class: "d-bet" }, p.bet ? "Bet " + p.bet : ""),
      el("span", { class: "d-net" }, money(p.net))));
  if (p.say) c.append(el("div", { class: "d-say" }, p.say));
  if (manual && manual.has(pos)) c.append(el("div", { class: "d-manual-mark" },
    "tile entered by supervisor"));
  return c;
}

let token = "";
let lastKey = null;

async function post(path, body) {
  const r = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json",
    Authorization: "Bearer " + token }, body: JSON.stringify(body) });
  let d = {};
  try { d = await r.json(); } catch (e) { /* not JSON */ }
  setText("d-msg", r.ok ? "recorded" : "refused (" + r.status + ")" +
    (d.error && r.status < 500 ? ": " + d.error.split(":").slice(-1)[0] : ""));
  refresh();
  return r.ok;
}

function render(st) {
  setText("d-table", st.table_id || "-");
  const last = st.last_round;
  setText("round-id", last ? last.round_id : "none yet");
  const state = document.getElementById("d-state");
  const manual = st.settled_by === "manual";
  // once the table changed (a new deal, or cleared), the round shown is the last round
  const was = last && st.last_round_on_table === false ? "LAST ROUND: " : "";
  state.textContent = !last ? "waiting" : was + (manual ? "SETTLED BY MANUAL ENTRY" :
    last.settled ? "SETTLED" : "NOT SETTLED");
  state.className = "d-state " + (!last ? "" : manual ? "manual" : last.settled ? "settled"
    : "not_settled");
  const bank = last && last.bank;
  setText("d-bank", bank ? "House net " + money(bank.house_net) : "");
  const key = JSON.stringify([last && last.round_id, last && last.kind, st.alerts]);
  if (key !== lastKey) {
    lastKey = key;
    const entered = new Set(((manual && last.manual && last.manual.entries) || [])
      .map((e) => e.position));
    const cards = byTable(st.positions).map(([pos, p]) => card(pos, p, entered));
    if (!cards.length) cards.push(el("p", { class: "d-empty" }, "waiting for the first round"));
    document.getElementById("d-seats").replaceChildren(...cards);
    renderAlerts(st);
    renderManual(st);
  }
  const live = byTable((st.live && st.live.positions) || {}).map(([pos, p]) =>
    el("li", {}, p.status === "dealing" ? NAME(pos) + ": being dealt" :
      p.status === "reading" ? NAME(pos) + ": reading the deal" :
      p.status === "set" ? NAME(pos) + ": set" : (p.say || NAME(pos) + ": check the hand")));
  if (!live.length) live.push(el("li", { class: "none" }, "nothing seen"));
  document.getElementById("d-live").replaceChildren(...live);
  document.getElementById("d-control").classList.toggle("hidden", !st.control);
}

function renderAlerts(st) {
  const rid = st.last_round && st.last_round.round_id;
  const items = (st.alerts || []).map((a) => {
    const li = el("li", { class: a.acknowledged ? "acked" : "" }, a.say || "check the table");
    if (st.control && st.audit && !a.acknowledged) {
      const b = el("button", { type: "button", class: "ack" }, "Acknowledge");
      b.addEventListener("click", () => post("api/control/ack", { round_id: rid, kind: a.kind,
        position: a.position, by: document.getElementById("d-by").value }));
      li.append(b);
    }
    return li;
  });
  if (!items.length) items.push(el("li", { class: "none" }, "none"));
  document.getElementById("d-alerts").replaceChildren(...items);
}

function renderManual(st) {
  const last = st.last_round;
  const entered = new Set(((last && last.manual && last.manual.entries) || []).map((e) => e.tile));
  const unread = ((last && last.tiles) || []).map((t, i) => [i, t])
    .filter(([i, t]) => t.state === "unknown" && t.position && !entered.has(i));
  const box = document.getElementById("d-manual");
  box.classList.toggle("hidden", !(st.control && st.audit && unread.length));
  const items = unread.map(([i, t]) => {
    const sel = el("select", { class: "face", data: { tile: String(i) } },
      el("option", { value: "" }, "tile?"),
      // only the faces the set still holds for this tile (the server's manual_faces)
      ...((st.manual_faces && st.manual_faces[String(i)]) || FACES)
        .map((f) => el("option", { value: f }, f)));
    const b = el("button", { type: "button", class: "enter" }, "Enter");
    b.addEventListener("click", () => { if (sel.value) post("api/control/manual", {
      round_id: last.round_id, tile: i, face: sel.value,
      by: document.getElementById("d-by").value }); });
    return el("li", { data: { tile: String(i) } }, NAME(t.position) + " ", sel, b);
  });
  document.getElementById("d-manual-list").replaceChildren(...items);
}

// The tile set check (58 Pa. Code 621a.4): the 32 tiles laid out face up, read from the
// newest camera picture; the answer in words ("set complete ..." or what is missing, extra,
// foreign or unread), recorded in the audit store by the server.
async function setCheck() {
  const out = document.getElementById("d-setcheck-result");
  out.textContent = "checking the set\u2026"; out.className = "d-setcheck";
  let r, d = {};
  try {
    r = await fetch("api/control/setcheck", { method: "POST", headers: {
      "Content-Type": "application/json", Authorization: "Bearer " + token },
      body: JSON.stringify({ by: document.getElementById("d-by").value }) });
    try { d = await r.json(); } catch (e) { /* not JSON */ }
  } catch (e) { out.textContent = "set check: display unreachable"; return; }
  if (!r.ok) {
    out.textContent = "set check refused (" + r.status + ")" +
      (d.error && r.status < 500 ? ": " + d.error : "");
    out.className = "d-setcheck refused";
    return;
  }
  out.textContent = d.summary + (d.record != null ? " (recorded)" : "");
  out.className = "d-setcheck " + (d.complete ? "complete" : "incomplete");
}

let busy = false;
async function refresh() {
  if (busy) return;
  busy = true;
  try {
    const r = await fetch("api/state", { cache: "no-store" });
    if (r.ok) render(await r.json());
  } catch (e) { setText("d-state", "display unreachable"); }
  finally { busy = false; }
}

document.addEventListener("DOMContentLoaded", () => {
  const t = document.getElementById("d-token");
  t.value = token = sessionStorage.getItem("paigow-token") || "";
  t.addEventListener("input", () => { token = t.value; sessionStorage.setItem("paigow-token", token); });
  document.getElementById("d-control").addEventListener("submit", (e) => e.preventDefault());
  document.getElementById("d-setcheck").addEventListener("click", setCheck);
  const es = new EventSource("api/events");
  es.addEventListener("round", () => { refresh(); });
  refresh();
  setInterval(refresh, 1000);
});
