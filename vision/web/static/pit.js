// The pit view: every table's feed state, camera / processed / skipped fps (the table's live
// figures, "stats"), last round and open alerts (GET /api/pit, polled each second); each row
// links to the table's dealer display (/tables/<id>/).
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
  } catch (e) {
    const up = document.getElementById("updated");
    up.textContent = "unreachable"; up.className = "status error";
  }
}

document.addEventListener("DOMContentLoaded", () => { refresh(); setInterval(refresh, 1000); });
