// #/compare/{a}/{b}: two sessions side by side (their picks, TEST, verdicts, histories on one
// chart) or two trials ("{session}:{idx}": metrics, configs, equity curves on the same dates).
import { api } from "../api.js";
import { el, link, section, table } from "../dom.js";
import { METRICS, knob, metric, num, statusClass, versus } from "../format.js";
import { historyFigure, trialAxis } from "../history.js";
import { chartBox, layout, plot } from "../plot.js";
import { bestText, limits } from "./sessions.js";
import { datesOf, equityFigure } from "./trial.js";

const COLORS = ["#1d5fbf", "#c2410c"];

async function chooser(root) {
  const list = (await api("/api/dashboard/sessions")).items;
  const select = (name) => el("select", { name, required: true }, list.map((s) => el("option", { value: s.id }, `${s.id} \u2014 ${s.goal}`)));
  const trialIn = (name) => el("input", { name, type: "number", min: 0, placeholder: "trial # (blank: the session)", class: "short" });
  const form = el("form", { class: "row", id: "compare-form" },
    el("label", { class: "grow" }, "first", select("a")), el("label", null, "trial", trialIn("ia")),
    el("label", { class: "grow" }, "second", select("b")), el("label", null, "trial", trialIn("ib")),
    el("button", { type: "submit" }, "Compare"));
  if (list.length > 1) form.querySelector("[name=b]").selectedIndex = 1;
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const f = new FormData(form), part = (s, i) => (i !== "" ? `${s}:${i}` : s);
    location.hash = `#/compare/${part(f.get("a"), f.get("ia"))}/${part(f.get("b"), f.get("ib"))}`;
  });
  root.append(section("Compare two sessions or two trials", list.length ? form : el("p", { class: "muted" }, "no session yet")));
}

async function sessions(root, ids, ctx) {
  const list = (await api("/api/dashboard/sessions")).items;
  const rows = ids.map((id) => list.find((s) => s.id === id) || { id, goal: "(no such session)" });
  const fields = [
    ["goal", (r) => r.goal], ["mode", (r) => r.mode], ["proposer", (r) => r.proposer], ["status", (r) => r.status],
    ["search trials", (r) => (r.budget ? `${r.trials}/${r.budget}` : "\u2013")], ["objective", (r) => r.objective?.label ?? "\u2013"], ["best (validation)", bestText], ["limits", (r) => (r.objective ? limits(r) : "\u2013")],
    ["pick", (r) => r.pick ?? "\u2013"], ["pick TEST", (r) => num(r.best_test)], ["default TEST", (r) => num(r.default_test)],
    ["vs 1/N (TEST)", (r) => versus(r.vs_equal_weight)], ["vs default (TEST)", (r) => versus(r.vs_default)],
    ["verdict", (r) => (r.go == null ? "\u2013" : r.go ? "GO" : "NO-GO")]];
  root.append(section("Sessions side by side", table([
    { label: "", value: ([name]) => name },
    ...rows.map((r, i) => ({ label: `${"AB"[i]}: ${r.id}`, value: ([, f]) => f(r), cls: () => "wrap side-" + i }))], fields, { id: "compare-table", sides: true })));
  const chart = chartBox("compare-history");
  root.append(section("Optimisation histories", chart));
  const hs = await Promise.all(ids.map((id) => api(`/api/sessions/${id}/history`).catch(() => null)));
  if (!ctx.alive) return;
  // two objectives that are not the same number (Sharpe and Sortino, say) never share an axis
  const labels = rows.map((r) => r.objective?.label ?? "validation objective");
  const apart = labels[0] !== labels[1];
  const data = [];
  hs.forEach((h, i) => { if (!h) return;
    const fig = historyFigure(h, `${"AB"[i]}: `);
    for (const tr of fig.data) { if (tr.marker) tr.marker.color = COLORS[i]; if (tr.line) tr.line.color = COLORS[i]; tr.opacity = tr.mode === "markers" ? 0.5 : 1; if (apart && i === 1) tr.yaxis = "y2"; data.push(tr); } });
  const axis = (i) => ({ title: { text: apart ? `${"AB"[i]}: ${labels[i]}` : labels[0] }, tickformat: ".3~g" });
  await plot(chart, { data, layout: layout({ title: "Optimisation histories of A and B", hovermode: "closest",
    xaxis: { ...trialAxis(hs.flatMap((h) => h?.idx ?? []).sort((x, y) => x - y)) }, yaxis: axis(0),
    ...(apart ? { yaxis2: { ...axis(1), overlaying: "y", side: "right", showgrid: false }, margin: { r: 64 } } : {}) }) }, 380);
  chart.dataset.axes = JSON.stringify(apart ? [labels[0], labels[1]] : [labels[0]]);
}

async function trials(root, parts, ctx) {
  const fulls = await Promise.all(parts.map(([sid, idx]) => api(`/api/sessions/${sid}/trials/at/${idx}`)));
  if (!ctx.alive) return;
  const names = parts.map(([sid, idx], i) => `${"AB"[i]}: #${idx}` + (parts[0][0] === parts[1][0] ? "" : ` of ${sid}`));
  const m = METRICS.filter(([k]) => fulls.some((f) => f.trial.metrics && k in f.trial.metrics));
  root.append(section("Trials side by side", table([
    { label: "", value: ([label]) => label },
    ...fulls.map((f, i) => ({ label: names[i], num: true, value: ([, g]) => g(f) }))], [
    ["status", (f) => el("span", { class: statusClass(f.row.status) }, f.row.status)], ["objective", (f) => num(f.row.objective)],
    ...m.map(([k, label]) => [label, (f) => metric(k, f.trial.metrics?.[k])])], { id: "compare-metrics", sides: true }),
  el("h3", null, "Knobs that differ"),
  table([{ label: "knob", value: (k) => k }, ...fulls.map((f, i) => ({ label: names[i], num: true, value: (k) => knob(f.trial.config[k]) }))],
    Object.keys(fulls[0].trial.config).filter((k) => fulls[0].trial.config[k] !== fulls[1].trial.config[k]), { id: "compare-config", empty: "the same config", sides: true })));
  const chart = chartBox("compare-equity");
  root.append(section("Equity and drawdown", chart));
  const cals = await Promise.all(parts.map(([sid]) => api(`/api/sessions/${sid}/calendar`).catch(() => null)));
  if (!ctx.alive) return;
  await plot(chart, equityFigure(fulls.map((f, i) => ({ name: names[i], returns: f.trial.val_returns || [],
    dates: datesOf(f, cals[i]), color: COLORS[i] })), "Equity and drawdown"), 400);
}

export async function render(root, params, ctx) {
  root.append(el("div", { class: "crumbs" }, link("#/sessions", "Sessions"), " / compare"));
  if (!params.a || !params.b) return chooser(root);
  const parts = [params.a, params.b].map((p) => p.split(":"));
  if (parts.every((p) => p.length === 2)) return trials(root, parts.map(([s, i]) => [s, Number(i)]), ctx);
  return sessions(root, parts.map((p) => p[0]), ctx);
}
