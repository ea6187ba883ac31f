// #/session/{id}/trial/{idx}: one trial in full: its verdict and why, metrics, the folds it was
// scored on, its config (changed knobs marked), clips, the exact prompt, its equity and
// drawdown over VALIDATION's dates, and a note.
import { api } from "../api.js";
import { el, kpis, link, section, table } from "../dom.js";
import { METRICS, knob, metric, num, pct, seconds, statusClass, when } from "../format.js";
import { noteEditor } from "../notes.js";
import { chartBox, layout, plot } from "../plot.js";

// The dates of a trial's daily returns: its folds' windows one after the other (the returns
// it was scored on), else the window's (VALIDATION or TEST) last days; null when unknown.
export function datesOf(full, cal) {
  if (!cal) return null;
  const n = (full.trial.val_returns || []).length;
  if (full.row.kind === "test") return cal.test;
  if (!full.folds.length) return cal.validation;
  // each fold's days: the n_days trading days that end on its last date
  const joined = full.folds.flatMap((f) => {
    const end = cal.days.lastIndexOf(f.end_date);
    return end < 0 ? [] : cal.days.slice(Math.max(0, end - f.n_days + 1), end + 1);
  });
  return joined.length === n ? joined : null;
}

export function equitySeries(returns, dates) {
  let equity = 1, peak = 1;
  const eq = [], dd = [];
  for (const r of returns) { equity *= 1 + r; peak = Math.max(peak, equity); eq.push(equity); dd.push(equity / peak - 1); }
  // the returns are the window's last days (a lookback may come first)
  const x = dates && dates.length >= returns.length ? dates.slice(dates.length - returns.length) : returns.map((_, i) => i + 1);
  return { x, eq, dd, dated: !!(dates && dates.length >= returns.length) };
}

export function equityFigure(series, title) {
  const data = [], any = series.find((s) => s.returns?.length), one = series.length === 1;
  for (const s of series) {
    if (!s.returns?.length) continue;
    const { x, eq, dd } = equitySeries(s.returns, s.dates);
    data.push({ type: "scatter", mode: "lines", name: s.name, x, y: eq, line: { color: s.color }, hovertemplate: "%{x}: %{y:.4f}<extra>" + s.name + "</extra>" });
    data.push({ type: "scatter", mode: "lines", name: s.name + " drawdown", x, y: dd, yaxis: "y2", line: { color: s.color, width: 1 }, fill: one ? "tozeroy" : "none", showlegend: false, hovertemplate: "%{x}: %{y:.1%}<extra>drawdown</extra>" });
  }
  const dated = any && equitySeries(any.returns, any.dates).dated;
  return { data, layout: layout({ title, xaxis: { title: { text: dated ? "date" : "trading day" }, type: dated ? "date" : "linear", anchor: "y2" },
    yaxis: { title: { text: "growth of 1" }, domain: [0.35, 1], tickformat: ".3~g" }, yaxis2: { title: { text: "drawdown" }, domain: [0, 0.27], tickformat: ".0%" }, hovermode: "x unified" }) };
}

export async function render(root, params, ctx) {
  const { session: sid, idx } = params;
  const full = await api(`/api/sessions/${sid}/trials/at/${idx}`);
  if (!ctx.alive) return;
  const t = full.trial, r = full.row;
  const changed = t.delta?.changes || {};
  root.append(el("div", { class: "session-head" },
    el("div", { class: "crumbs" }, link("#/sessions", "Sessions"), " / ", link(`#/session/${sid}`, sid, { class: "mono" }), " / ", link(`#/session/${sid}/trials`, "trials"), ` / #${idx}`),
    el("h1", null, `Trial #${idx} (${r.kind})`),
    kpis([
      ["status", el("span", { class: statusClass(r.status) }, r.status)],
      [r.kind === "test" ? "TEST objective" : "objective", num(r.kind === "test" ? r.test_objective : r.objective), "comparable: the mean over all its folds"],
      r.partial_objective != null && ["partial (raced out)", `${num(r.partial_objective)} on ${r.folds_run}/${r.n_folds} folds`],
      r.seed_mean != null && ["mean over seeds", `${num(r.seed_mean)} (${r.n_seeds} seeds)`],
      ["seed", String(r.seed ?? "\u2013")], ["proposer", r.proposer ?? "\u2013"], ["time", seconds(r.elapsed_s)], ["finished", when(r.finished_at)],
    ], "trial-kpis"),
    el("div", { class: "row actions" },
      idx > 0 ? link(`#/session/${sid}/trial/${idx - 1}`, "\u2190 previous trial", { class: "button" }) : null,
      link(`#/session/${sid}/trial/${idx + 1}`, "next trial \u2192", { class: "button" }),
      full.parent ? link(`#/compare/${sid}:${full.parent.idx}/${sid}:${idx}`, `compare with its parent #${full.parent.idx}`, { class: "button" }) : null)));
  const why = [r.reason && ["verdict", r.reason], r.error && ["error", r.error], r.violation && ["limit", r.violation], t.rationale && ["rationale", t.rationale],
    ...full.clips.map((c) => ["clipped", `${c.knob}: ${knob(c.proposed)} \u2192 ${knob(c.applied)} (${c.reason})`])].filter(Boolean);
  const metrics = METRICS.filter(([k]) => t.metrics && k in t.metrics).map(([k, label]) => [label, metric(k, t.metrics[k])]);
  const chart = chartBox("trial-equity");
  root.append(
    ...(why.length ? [section("Why", el("dl", { class: "facts", id: "trial-facts" }, why.map(([k, v]) => el("div", null, el("dt", null, k), el("dd", null, v)))))] : []),
    section(r.kind === "test" ? "Metrics on TEST" : r.status === "raced out" ? "Metrics on the folds it ran" : full.folds.length ? "Metrics on its folds" : "Metrics on VALIDATION", kpis(metrics, "trial-metrics"), chart),
    section("Folds", el("p", { class: "muted", id: "trial-folds-note" }, full.folds.length ? `scored on ${full.folds[0].n_folds} walk-forward folds` +
      (full.folds.length < full.folds[0].n_folds ? ` (${full.folds.length} run: raced out)` : "") : "no folds: scored on VALIDATION alone"),
    full.folds.length ? table([
      { label: "fold", value: (f) => `${f.fold + 1}/${f.n_folds}` }, { label: "window", value: (f) => `${f.start_date} \u2192 ${f.end_date}` },
      { label: "days", num: true, value: (f) => f.n_days }, { label: "objective", num: true, value: (f) => num(f.objective) },
      { label: "Sharpe", num: true, value: (f) => num(f.metrics?.sharpe) }, { label: "max drawdown", num: true, value: (f) => pct(f.metrics?.max_drawdown, 1) },
      { label: "annual return", num: true, value: (f) => pct(f.metrics?.annual_return, 1) }, { label: "CVaR 95%", num: true, value: (f) => pct(f.metrics?.cvar_95, 2) },
      { label: "turnover", num: true, value: (f) => num(f.metrics?.annual_turnover, 3) }], full.folds, { id: "trial-folds" }) : null),
    section("Config", table([
      { label: "knob", value: ([k]) => k }, { label: "value", num: true, value: ([, v]) => knob(v) },
      { label: "changed", value: ([k]) => (k in changed ? (full.parent ? `from ${knob(full.parent.config?.[k])}` : "changed") : "") }],
    Object.entries(t.config), { id: "trial-config", rowAttrs: ([k]) => ({ class: k in changed ? "changed" : null }) })),
    section("Prompt", el("details", null, el("summary", null, "the exact prompt"), el("pre", { id: "trial-prompt" }, t.prompt || "(no prompt: this trial was not proposed by a language model)"))));
  const note = noteEditor(sid, "trial", t.id);
  root.append(section("Note", note.box));
  note.load().catch((e) => console.warn(e));
  const returns = t.val_returns || [];
  if (!returns.length) { chart.replaceChildren(el("p", { class: "muted" }, "no daily returns journaled")); return; }
  const cal = await api(`/api/sessions/${sid}/calendar`).catch(() => null);
  if (!ctx.alive) return;
  const dates = datesOf(full, cal);
  const over = r.kind === "test" ? "TEST" : full.folds.length ? "its folds" : "VALIDATION";
  await plot(chart, equityFigure([{ name: `#${idx}`, returns, dates, color: "#1d5fbf" }], `Equity and drawdown over ${over}`), 380);
  chart.dataset.points = String(returns.length);
}
