// Shared DOM helpers of the dealer display pages (index.html, dealer.html): loaded first.

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k === "data") for (const [dk, dv] of Object.entries(v)) e.dataset[dk] = dv;
    else e.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function setText(id, text) { document.getElementById(id).textContent = text; }

function money(v) {
  if (v === null || v === undefined) return "";
  const s = String(v);
  return (s.startsWith("-") || s === "0" || /^0(\.0*)?$/.test(s)) ? s : "+" + s;
}
