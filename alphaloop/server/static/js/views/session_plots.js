// The plots tab: the plots an optuna-dashboard user reaches for, all drawn when the tab opens,
// from one answer of the server (the search as columns) and the knob importance it fits.
import { api } from "../api.js";
import { el, section } from "../dom.js";
import { num } from "../format.js";
import { chartBox, layout, plot } from "../plot.js";

const COLOR = { keep: "#1b7f3b", discard: "#9aa3b2", "raced out": "#c98a00", crash: "#b3261e", timeout: "#b3261e", invalid: "#8e3fa0", running: "#1d5fbf", ran: "#5a6375" };
const SCALE = [[0, "#dfe9f7"], [0.5, "#6f9fd8"], [1, "#123e7c"]];

function scored(s) { return s.objective.map((o, i) => [o, i]).filter(([o]) => o != null); }

// One small chart per knob that varied: its value against the objective.
function sliceFigures(s, logKnobs) {
  const pts = scored(s);
  return Object.entries(s.knobs).map(([k, values]) => ({ knob: k, fig: {
    data: [{ type: "scatter", mode: "markers", x: pts.map(([, i]) => values[i]), y: pts.map(([o]) => o),
      marker: { size: 5, color: pts.map(([, i]) => s.idx[i]), colorscale: SCALE, showscale: false }, text: pts.map(([, i]) => "#" + s.idx[i]),
      hovertemplate: `%{text}: ${k} %{x:.4g}, objective %{y:.4g}<extra></extra>` }],
    layout: layout({ title: k, xaxis: { title: { text: k }, type: logKnobs.has(k) ? "log" : "linear" }, yaxis: { title: { text: s.metric } }, showlegend: false }) } }));
}

// The mean objective on a grid over two knobs (empty cells left blank), the trials on top.
function contourFigure(s, kx, ky) {
  const pts = scored(s).filter(([, i]) => s.knobs[kx][i] != null && s.knobs[ky][i] != null);
  const xs = pts.map(([, i]) => s.knobs[kx][i]), ys = pts.map(([, i]) => s.knobs[ky][i]);
  const n = 16, [x0, x1] = [Math.min(...xs), Math.max(...xs)], [y0, y1] = [Math.min(...ys), Math.max(...ys)];
  const sum = Array.from({ length: n }, () => Array(n).fill(0)), cnt = Array.from({ length: n }, () => Array(n).fill(0));
  const cell = (v, lo, hi) => Math.min(n - 1, Math.floor(((v - lo) / ((hi - lo) || 1)) * n));
  pts.forEach(([o], j) => { const cx = cell(xs[j], x0, x1), cy = cell(ys[j], y0, y1); sum[cy][cx] += o; cnt[cy][cx] += 1; });
  const z = sum.map((row, r) => row.map((v, c) => (cnt[r][c] ? v / cnt[r][c] : null)));
  const mid = (lo, hi) => Array.from({ length: n }, (_, k) => lo + ((k + 0.5) * (hi - lo)) / n);
  return { data: [
    { type: "contour", x: mid(x0, x1), y: mid(y0, y1), z, connectgaps: true, colorscale: SCALE, contours: { coloring: "heatmap" },
      colorbar: { title: { text: s.metric, side: "right" }, thickness: 12 }, hovertemplate: `${kx} %{x:.4g}, ${ky} %{y:.4g}: mean %{z:.4g}<extra></extra>` },
    { type: "scatter", mode: "markers", x: xs, y: ys, marker: { size: 4, color: "#1d2330" }, name: "trials", hovertemplate: `${kx} %{x:.4g}, ${ky} %{y:.4g}<extra></extra>` }],
    layout: layout({ title: `Contour: ${s.metric} over ${kx} and ${ky}`, margin: { l: 64, r: 16, t: 64, b: 60 }, xaxis: { title: { text: kx } }, yaxis: { title: { text: ky } }, showlegend: false }) };
}

function parallelFigure(s) {
  const pts = scored(s);
  const dims = Object.entries(s.knobs).map(([k, v]) => ({ label: k, values: pts.map(([, i]) => v[i]), tickformat: ".3~g" }));
  dims.push({ label: s.metric, values: pts.map(([o]) => o), tickformat: ".3~g" });
  return { data: [{ type: "parcoords", line: { color: pts.map(([o]) => o), colorscale: SCALE, showscale: true, colorbar: { thickness: 12 } }, dimensions: dims }],
    layout: layout({ title: "Parallel coordinates", margin: { l: 60, r: 60, t: 80, b: 30 } }) };
}

// The share of scored trials at or below each objective (exact quantiles from the server).
function edfFigure(s) {
  const n = s.edf.length;
  return { data: [{ type: "scatter", mode: "lines", line: { shape: "hv", color: "#1d5fbf" }, x: s.edf, y: s.edf.map((_, k) => (k + 1) / n), name: "search",
    hovertemplate: `${s.metric} %{x:.4g}: %{y:.1%} of trials at or below<extra></extra>` }],
    layout: layout({ title: `Empirical distribution of ${s.metric} (${s.edf_total.toLocaleString("en-US")} scored trials)`, xaxis: { title: { text: s.metric } }, yaxis: { title: { text: "share of trials" }, tickformat: ".0%", range: [0, 1.02] }, showlegend: false }) };
}

// Each trial as a bar from its start to its finish, by status, on a time axis.
function timelineFigure(s) {
  const by = {};
  s.idx.forEach((idx, i) => {
    const st = s.status[i], end = s.finished_at[i] || new Date().toISOString();
    const t = (by[st] = by[st] || { type: "scatter", mode: "lines", name: st, x: [], y: [], line: { color: COLOR[st] || "#888", width: 5 }, connectgaps: false, hovertemplate: `#%{y} ${st}<extra></extra>` });
    t.x.push(s.started_at[i], end, null); t.y.push(idx, idx, null);
  });
  return { data: Object.values(by), layout: layout({ title: "Timeline", xaxis: { title: { text: "time (UTC)" }, type: "date" }, yaxis: { title: { text: "trial #" } } }) };
}

// Each trial's objective fold by fold (what a race is decided on), best trials on top.
function intermediateFigure(s) {
  const rows = s.idx.map((idx, i) => ({ idx, folds: s.folds[i], status: s.status[i] })).filter((r) => r.folds.length);
  const shown = rows.slice(-300);
  return { data: shown.map((r) => ({ type: "scatter", mode: "lines+markers", x: r.folds.map((_, k) => k + 1), y: r.folds, name: "#" + r.idx, showlegend: false,
    line: { width: 1, color: COLOR[r.status] || "#888" }, marker: { size: 4 }, hovertemplate: `#${r.idx} (${r.status}): fold %{x}, %{y:.4g}<extra></extra>` })),
    layout: layout({ title: `Intermediate values: ${s.metric} by fold${rows.length > shown.length ? ` (last ${shown.length} of ${rows.length})` : ""}`,
      xaxis: { title: { text: "fold" }, dtick: 1 }, yaxis: { title: { text: s.metric } } }) };
}

// Feasibility, as optuna-dashboard's Pareto front draws a constrained study: each scored trial's
// objective against its max drawdown, the drawdown limit drawn, a trial that broke a limit marked.
function feasibilityFigure(s) {
  const pts = scored(s).filter(([, i]) => s.max_drawdown[i] != null), limit = s.max_drawdown_limit;
  const side = (out) => pts.filter(([, i]) => Boolean(s.violation[i]) === out);
  const trace = (name, rows, marker) => ({ type: "scatter", mode: "markers", name, x: rows.map(([, i]) => s.max_drawdown[i]), y: rows.map(([o]) => o), marker,
    text: rows.map(([, i]) => `#${s.idx[i]}` + (s.violation[i] ? ` (${s.violation[i]})` : "")), hovertemplate: `%{text}: max drawdown %{x:.1%}, ${s.metric} %{y:.4g}<extra></extra>` });
  const data = [trace("within the limits", side(false), { size: 6, color: "#1d5fbf" }), trace("outside the limits", side(true), { size: 8, color: "#a4262c", symbol: "x" })];
  return { data, layout: layout({ title: limit == null ? "Feasibility: no limit set" : `Feasibility: the drawdown limit ${num(100 * limit, 3)}%`, hovermode: "closest",
    xaxis: { title: { text: "max drawdown (the trial's folds)" }, tickformat: ".1%" }, yaxis: { title: { text: s.metric } },
    shapes: limit == null ? [] : [{ type: "line", xref: "x", yref: "paper", x0: limit, x1: limit, y0: 0, y1: 1, line: { color: "#a4262c", dash: "dash", width: 1 } }] }) };
}

function knobSelect(name, knobs, value) {
  return el("label", null, name, el("select", { name }, knobs.map((k) => el("option", { selected: k === value }, k))));
}

export async function render(body, sid, ctx) {
  const status = el("p", { class: "muted", id: "plots-status", role: "status" }, "reading the search\u2026");
  const grid = el("div", { class: "plots" });
  body.append(section("Search plots", status, grid));
  // a knob searched on a log scale is drawn on one: the scales are the server's (/api/knobs)
  const [s, known, pulse] = await Promise.all([api(`/api/sessions/${sid}/study`), api("/api/knobs"), api(`/api/pulse?session_id=${encodeURIComponent(sid)}`)]);
  const logKnobs = new Set(known.knobs.filter((k) => /log/.test(k.scale)).map((k) => k.name));
  if (!ctx.alive) return;
  // every axis, colour bar and title names the objective as what it is, not the bare metric
  s.metric = pulse.objective?.label ?? s.metric;
  const knobs = Object.keys(s.knobs);
  status.textContent = `${s.total.toLocaleString("en-US")} search trials` + (s.sampled ? `, ${s.idx.length.toLocaleString("en-US")} drawn (the best and an even spread of the rest)` : "") +
    `; ${knobs.length} knobs varied` + (s.n_folds ? `; ${s.n_folds} folds` : "");
  const feasible = chartBox("feasibility-chart");
  grid.append(el("div", { class: "plot-box", dataset: { plot: "feasibility" } }, feasible));
  if (s.edf.length) await plot(feasible, feasibilityFigure(s), 320); else feasible.replaceChildren(el("p", { class: "muted" }, "no scored search trial yet"));
  if (!s.edf.length || !knobs.length) { grid.append(el("p", { class: "muted" }, "the other plots need scored search trials with a knob that varies")); return; }
  const box = (id, title) => { const c = chartBox(id); grid.append(el("div", { class: "plot-box", dataset: { plot: title } }, c)); return c; };
  const imp = box("importance-chart", "importance"), contour = box("contour-chart", "contour"), parallel = box("parallel-chart", "parallel");
  const edf = box("edf-chart", "edf"), timeline = box("timeline-chart", "timeline"), inter = box("intermediate-chart", "intermediate");
  const slices = el("div", { class: "slices", id: "slice-charts" });
  grid.append(el("div", { class: "plot-box wide", dataset: { plot: "slice" } }, el("h3", null, "Slice: each knob against ", s.metric), slices));
  // the contour's two knobs: the two most important once known, chosen by the user after
  const controls = el("form", { class: "row", id: "contour-knobs" }, knobSelect("x", knobs, knobs[0]), knobSelect("y", knobs, knobs[1] || knobs[0]));
  contour.before(controls);
  const drawContour = () => { const f = new FormData(controls); return plot(contour, contourFigure(s, f.get("x"), f.get("y")), 360); };
  controls.addEventListener("change", () => drawContour());
  await plot(parallel, parallelFigure(s), 360);
  await drawContour();
  await plot(edf, edfFigure(s), 300);
  await plot(timeline, timelineFigure(s), 300);
  await plot(inter, intermediateFigure(s), 300);
  for (const { knob, fig } of sliceFigures(s, logKnobs)) { const c = chartBox("slice-" + knob, "chart small"); slices.append(c); await plot(c, fig, 240); if (!ctx.alive) return; }
  try {
    const r = await api(`/api/sessions/${sid}/plots/importance?evaluator=fanova`);
    if (!ctx.alive) return;
    const names = Object.keys(r.importances);
    await plot(imp, { data: [{ type: "bar", orientation: "h", x: names.map((k) => r.importances[k]).reverse(), y: [...names].reverse(),
      marker: { color: "#1d5fbf" }, hovertemplate: "%{y}: %{x:.1%}<extra></extra>" }],
      layout: layout({ title: `Knob importance (fANOVA over ${r.n_trials} scored trials)`, xaxis: { title: { text: "share of the objective's variance" }, tickformat: ".0%" }, margin: { l: 130, r: 16, t: 40, b: 48 } }) }, 300);
    if (names.length > 1) {
      controls.querySelector("[name=x]").value = names[0]; controls.querySelector("[name=y]").value = names[1];
      await drawContour();
    }
    status.textContent += `; most important: ${names[0]} (${num(100 * r.importances[names[0]], 3)}%)`;
  } catch (e) { imp.replaceChildren(el("p", { class: "muted" }, "importance: " + e.message)); }
}
