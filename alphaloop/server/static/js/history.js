// A session's optimisation history as plotly draws it and, until plotly.js has run, as a
// canvas preview of the same sampled points (exact incumbent steps, the default's line, axes).
import { layout } from "./plot.js";

// The status vocabulary's names, as the trials table shows them, and their colours.
const STATUS_COLORS = { keep: "#1b7f3b", discard: "#9aa3b2", ran: "#3d6fb6", "raced out": "#c98a00" };
const OTHER_COLOR = "#b0b6c2";
const ORDER = Object.keys(STATUS_COLORS);
const statusColor = (s) => STATUS_COLORS[s] || OTHER_COLOR;
// The statuses that have a score in h, in the vocabulary's order (any other last).
const scored = (h) => [...new Set(h.status.filter((s, i) => h.objective[i] != null))]
  .sort((a, b) => (ORDER.includes(a) ? ORDER.indexOf(a) : ORDER.length) - (ORDER.includes(b) ? ORDER.indexOf(b) : ORDER.length));

// Trial numbers are whole: a short history gets one tick a trial, never 3.5.
export function trialAxis(idx, title = "trial #") {
  const span = idx.length ? idx[idx.length - 1] - idx[0] : 0;
  return { title: { text: title }, tickformat: "d", ...(span <= 12 ? { dtick: 1 } : {}) };
}

export function historyFigure(h, name = "", label = "validation objective") {
  // one series a status, named as the trials table names it; a raced-out trial's score is
  // its first folds' only: drawn open, apart from the comparable ones
  const hover = "#%{x}: %{y:.4g}<extra>%{fullData.name}</extra>";
  const data = scored(h).map((s) => {
    const x = [], y = [];
    h.idx.forEach((v, i) => { if (h.status[i] === s && h.objective[i] != null) { x.push(v); y.push(h.objective[i]); } });
    const raced = s === "raced out";
    return { type: "scatter", mode: "markers", name: name + (raced ? "raced out (partial)" : s), x, y,
      marker: { size: s === "keep" || raced ? 5 : 4, color: statusColor(s), ...(raced ? { symbol: "circle-open" } : {}) },
      hovertemplate: raced ? "#%{x}: %{y:.4g} on its first folds<extra></extra>" : hover };
  });
  // the incumbent's steps to the last trial: the default until a trial is kept (the journal's
  // incumbent is null until then, and a line of nulls draws nothing)
  const by = h.incumbent.map((b) => b ?? h.baseline ?? null);
  data.push({ type: "scatter", mode: "lines", name: name + "best so far", x: h.idx, y: by, line: { color: "#e07b00", shape: "hv", width: 2 }, hovertemplate: hover });
  if (h.baseline != null && h.idx.length) data.push({ type: "scatter", mode: "lines", name: name + "default", x: [h.idx[0], h.idx[h.idx.length - 1]], y: [h.baseline, h.baseline], line: { dash: "dot", color: "#5a6375" }, hovertemplate: "default: %{y:.4g}<extra></extra>" });
  const shown = h.sampled ? `, ${h.idx.length.toLocaleString("en-US")} drawn` : "";
  return { data, layout: layout({ title: `Optimisation history (${h.total.toLocaleString("en-US")} search trials${shown})`, hovermode: "closest",
    xaxis: trialAxis(h.idx), yaxis: { title: { text: label }, tickformat: ".3~g" } }) };
}

// About n round values from lo to hi (an axis's ticks).
function niceTicks(lo, hi, n = 5) {
  const rough = (hi - lo || Math.abs(hi) || 1) / n, mag = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map((k) => k * mag).find((v) => v >= rough);
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step / 1e6; v += step) out.push(+v.toPrecision(6));
  return out;
}

// Draws h at once on a canvas in div (plotly's chart replaces it). Returns whether it drew.
export function previewHistory(div, h, height = 340) {
  if (!h.idx.length) return false;
  if (window.Plotly && div.querySelector(".main-svg")) Plotly.purge(div);
  const w = div.clientWidth || 600, dpr = window.devicePixelRatio || 1, c = document.createElement("canvas");
  c.className = "preview"; c.width = w * dpr; c.height = height * dpr; c.style.width = w + "px"; c.style.height = height + "px";
  const g = c.getContext("2d"); g.scale(dpr, dpr);
  const ys = [...h.objective, ...h.incumbent, h.baseline].filter((v) => v != null && Number.isFinite(v));
  const pad = (Math.max(...ys) - Math.min(...ys)) * 0.05 || 0.5, y0 = Math.min(...ys) - pad, y1 = Math.max(...ys) + pad;
  const x0 = h.idx[0], x1 = h.idx[h.idx.length - 1];
  const left = w < 600 ? 48 : 64, right = w - 16, top = 70, bottom = height - 48;
  const X = (x) => left + (x - x0) / ((x1 - x0) || 1) * (right - left), Y = (y) => top + (y1 - y) / ((y1 - y0) || 1) * (bottom - top);
  g.font = "12px system-ui, sans-serif"; g.fillStyle = "#1d2330"; g.strokeStyle = "#e3e6eb"; g.lineWidth = 1;
  g.textAlign = "right"; g.textBaseline = "middle";
  for (const v of niceTicks(y0, y1, 4)) { g.beginPath(); g.moveTo(left, Y(v)); g.lineTo(right, Y(v)); g.stroke(); g.fillText(String(v), left - 6, Y(v)); }
  g.textAlign = "center"; g.textBaseline = "top";
  for (const v of niceTicks(x0, x1)) g.fillText(String(v), X(v), bottom + 6);
  g.fillText("trial #", (left + right) / 2, bottom + 24);
  g.textAlign = "left"; g.font = "14px system-ui, sans-serif";
  g.fillText(`Optimisation history (${h.total.toLocaleString("en-US")} search trials${h.sampled ? `, ${h.idx.length.toLocaleString("en-US")} drawn` : ""})`, left, 10);
  g.font = "12px system-ui, sans-serif";
  const legend = [...scored(h).map((s) => [s, statusColor(s)]), ["best so far", "#e07b00"]];
  if (h.baseline != null) legend.push(["default", "#5a6375"]);
  let lx = left, ly = 38;  // a second row where a narrow chart cannot hold them all
  for (const [name, color] of legend) {
    const wide = 30 + g.measureText(name).width;
    if (lx > left && lx + wide > right) { lx = left; ly += 15; }
    g.fillStyle = color; g.fillRect(lx, ly + 2, 14, 8); g.fillStyle = "#1d2330"; g.fillText(name, lx + 18, ly); lx += wide;
  }
  let drawn = 0;
  h.idx.forEach((x, i) => { const o = h.objective[i]; if (o == null) return;
    g.fillStyle = statusColor(h.status[i]); g.fillRect(X(x) - 1.5, Y(o) - 1.5, 3, 3); drawn++; });
  g.strokeStyle = "#e07b00"; g.lineWidth = 2; g.beginPath();
  let last = null;
  h.idx.forEach((x, i) => { const v = h.incumbent[i] ?? h.baseline; if (v == null) return;
    if (last == null) g.moveTo(X(x), Y(v)); else { g.lineTo(X(x), Y(last)); g.lineTo(X(x), Y(v)); } last = v; });
  if (last != null) g.lineTo(X(x1), Y(last));
  g.stroke();
  if (h.baseline != null) { g.strokeStyle = "#5a6375"; g.setLineDash([3, 3]); g.beginPath(); g.moveTo(X(x0), Y(h.baseline)); g.lineTo(X(x1), Y(h.baseline)); g.stroke(); }
  div.replaceChildren(c); div.dataset.points = String(drawn);
  return true;
}
