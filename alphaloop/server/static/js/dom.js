// Small DOM helpers: elements, tables with column definitions, figures in tiles. Every text goes
// in through textContent (never markup): goals, reasons and notes are the user's own words.

export const $ = (sel, root = document) => root.querySelector(sel);
export const $$ = (sel, root = document) => [...root.querySelectorAll(sel)];

// el("a", {href: "#/x", class: "btn"}, "text", child...): attributes, then children.
export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "dataset") Object.assign(e.dataset, v);
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k === "value") e.value = v;
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) if (c != null && c !== false) e.append(c instanceof Node ? c : String(c));
  return e;
}

// A table: columns are {key, label, value(row) -> text or Node, cls, title, sort}; rows a list.
// Returns the scrolling wrapper (a wide table scrolls inside its panel, never the page).
export function table(columns, rows, opts = {}) {
  const head = el("tr", null, columns.map((c) => {
    const th = el("th", { class: c.num ? "num" : null, title: c.title, scope: "col" }, c.label);
    if (c.sort && opts.onSort) {
      const on = opts.sort === c.sort;
      th.classList.add("sortable");
      th.dataset.key = c.sort;
      th.append(el("span", { class: "arrow", "aria-hidden": "true" }, on ? (opts.order === "desc" ? " \u25bc" : " \u25b2") : " \u2195"));
      if (on) th.setAttribute("aria-sort", opts.order === "desc" ? "descending" : "ascending");
      th.addEventListener("click", () => opts.onSort(c.sort));
    }
    return th;
  }));
  const body = el("tbody", null, rows.map((r) => {
    const tr = el("tr", opts.rowAttrs ? opts.rowAttrs(r) : null, columns.map((c) => {
      const v = c.value(r);
      return el("td", { class: [c.num ? "num" : "", c.cls ? c.cls(r) : ""].join(" ").trim() || null, "data-label": c.label || null }, v instanceof Node ? v : String(v ?? ""));
    }));
    if (opts.onRow) { tr.classList.add("clickable"); tr.addEventListener("click", (ev) => { if (!ev.target.closest("a,button,input,select")) opts.onRow(r, ev); }); }
    return tr;
  }));
  // cards: on a phone each row is a block of "label value" lines (its buttons in reach)
  const t = el("table", { class: "grid" + (opts.cards ? " cards" : ""), id: opts.id }, el("thead", null, head), body);
  if (!rows.length && opts.empty) body.append(el("tr", null, el("td", { colspan: columns.length, class: "muted" }, opts.empty)));
  if (opts.sides && rows.length) { t.classList.add("sides"); return el("div", { class: "scroll" }, t, stacked(columns, rows, opts.id)); }
  return el("div", { class: "scroll" }, t);
}

// A comparison's sides stacked (shown on a phone in place of the side-by-side table): a card a
// side (each column after the first), its fields labelled by the first column's text.
function stacked(columns, rows, id) {
  const text = (v) => (v instanceof Node ? v.textContent : String(v ?? ""));
  const [key, ...sides] = columns;
  return el("table", { class: "grid cards stacked", id: id ? id + "-stacked" : null }, el("tbody", null, sides.map((c) =>
    el("tr", null, el("td", { class: "side" }, c.label), rows.map((r) => {
      const v = c.value(r);
      return el("td", { "data-label": text(key.value(r)) || null, class: c.cls ? c.cls(r) : null }, v instanceof Node ? v : String(v ?? ""));
    })))));
}

// Key figures as tiles: [[label, value, hint?], ...].
export function kpis(items, id) {
  return el("dl", { class: "kpis", id }, items.filter(Boolean).map(([label, value, hint, cls]) =>
    el("div", { class: "kpi" + (cls ? " " + cls : "") }, el("dt", null, label), el("dd", { title: hint || null }, value))));
}

export function section(title, ...children) {
  return el("section", { class: "panel" }, title ? el("h2", null, title) : null, ...children);
}
export function link(href, text, attrs = {}) { return el("a", { href, ...attrs }, text); }
export function badge(text, cls) { return el("span", { class: cls }, text); }
