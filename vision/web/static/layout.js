// Layout editor (vision/web/layout_editor.py): positions as draggable polygons over the live
// picture, checked by the server as they are edited, saved to the layout file.
"use strict";
const NS = "http://www.w3.org/2000/svg";
let token = "", layout = null, size = [1280, 720], proposal = null, checkTimer = null;
const $ = (id) => document.getElementById(id);

function say(text, bad) {
  const s = $("l-status");
  s.textContent = text;
  s.classList.toggle("bad", !!bad);
}

async function api(path, body) {
  const opt = { headers: { "X-Token": token } };
  if (body !== undefined) {
    opt.method = "POST";
    opt.headers["Content-Type"] = "application/json";
    opt.body = JSON.stringify(body);
  }
  const r = await fetch(path, opt);
  const data = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(data.detail || ("HTTP " + r.status));
  return data;
}

function el(name, attrs, parent) {
  const e = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (parent) parent.appendChild(e);
  return e;
}

function draw(bad) {
  const svg = $("l-svg");
  svg.replaceChildren();
  svg.setAttribute("viewBox", `0 0 ${size[0]} ${size[1]}`);
  el("image", { href: "snapshot.jpg?t=" + Date.now(), x: 0, y: 0, width: size[0],
                height: size[1], preserveAspectRatio: "none" }, svg);
  if (!layout) return;
  const r = Math.max(size[0] / 160, 6);
  for (const [pos, poly] of Object.entries(layout.positions)) {
    const g = el("g", { "data-position": pos }, svg);
    const p = el("polygon", { points: poly.map((q) => q.join(",")).join(" ") }, g);
    if (bad && bad.includes(pos)) p.classList.add("bad");
    const t = el("text", { x: poly[0][0], y: poly[0][1] - 6 }, g);
    t.textContent = pos;
    poly.forEach((q, k) => {
      const c = el("circle", { cx: q[0], cy: q[1], r, "data-position": pos, "data-vertex": k },
                   g);
      c.addEventListener("pointerdown", startDrag);
    });
  }
  for (const grp of (proposal && proposal.left_out) || []) {
    const xs = grp.polygon.map((q) => q[0]), ys = grp.polygon.map((q) => q[1]);
    el("rect", { class: "left", x: Math.min(...xs), y: Math.min(...ys),
                 width: Math.max(...xs) - Math.min(...xs),
                 height: Math.max(...ys) - Math.min(...ys) }, svg);
  }
}

function toSvg(evt) {
  const svg = $("l-svg");
  const pt = svg.createSVGPoint();
  pt.x = evt.clientX; pt.y = evt.clientY;
  return pt.matrixTransform(svg.getScreenCTM().inverse());
}

function startDrag(evt) {
  evt.preventDefault();
  const c = evt.target, pos = c.dataset.position, k = +c.dataset.vertex;
  const move = (e) => {
    const p = toSvg(e);
    layout.positions[pos][k] = [Math.round(p.x * 10) / 10, Math.round(p.y * 10) / 10];
    c.setAttribute("cx", p.x); c.setAttribute("cy", p.y);
    const poly = c.parentNode.querySelector("polygon");
    poly.setAttribute("points", layout.positions[pos].map((q) => q.join(",")).join(" "));
  };
  const up = () => {
    window.removeEventListener("pointermove", move);
    window.removeEventListener("pointerup", up);
    check();
  };
  window.addEventListener("pointermove", move);
  window.addEventListener("pointerup", up);
}

async function check() {
  try {
    const r = await api("api/layout/check", layout);
    if (r.ok) { say("layout valid: not saved yet"); draw(); }
    else {
      const named = Object.keys(layout.positions).filter((p) => r.error.includes(`'${p}'`));
      say(r.error, true); draw(named);
    }
  } catch (e) { say(e.message, true); }
}

async function load() {
  try {
    const dealer = $("l-dealer").value.trim();
    const r = await api("api/layout" + (dealer ? "?dealer_at=" + encodeURIComponent(dealer) : ""));
    size = r.frame_size || size;
    proposal = r.proposal;
    layout = r.layout || (proposal && proposal.layout) || null;
    const left = $("l-left");
    left.replaceChildren();
    for (const g of (proposal && proposal.left_out) || []) {
      const li = document.createElement("li");
      li.textContent = `left out: ${g.tiles} tile(s) at (${g.centre.map(Math.round)}): ${g.why}`;
      left.appendChild(li);
    }
    draw();
    say(layout ? `editing ${r.layout ? "the layout in use" : "the proposal"}` +
        (r.file ? ` (file ${r.file})` : " (no file: serve --layout FILE to save)") :
        (proposal && proposal.error) || "no layout yet", !layout);
  } catch (e) { say(e.message, true); }
}

function useProposal() {
  if (proposal && proposal.layout) {
    layout = Object.assign({}, layout || {}, { positions: proposal.layout.positions });
    draw(); check();
  } else say((proposal && proposal.error) || "no proposal: load first", true);
}

async function save() {
  try {
    const r = await api("api/layout", layout);
    say(`saved to ${r.saved}: in use from the next frame`);
  } catch (e) { say(e.message, true); }
}

document.addEventListener("DOMContentLoaded", () => {
  const t = $("l-token");
  t.value = token = sessionStorage.getItem("paigow-token") || "";
  t.addEventListener("input", () => { token = t.value; sessionStorage.setItem("paigow-token", token); });
  $("l-load").addEventListener("click", load);
  $("l-propose").addEventListener("click", useProposal);
  $("l-save").addEventListener("click", save);
});
