// #/report/session/{id} and #/report/policy/{id}: the tear sheet of a session's pick or of a
// library policy, the same content and figures as `alphaloop report` writes to one HTML file:
// the pick against the default config and 1/N on TEST, monthly returns, rolling Sharpe,
// turnover and weights, the gates with the test that decided each, the search and the notes.
import { api } from "../api.js";
import { el, kpis, link, section, table } from "../dom.js";
import { METRICS, metric, num } from "../format.js";
import { chartBox, ours, plot } from "../plot.js";

const TITLES = { equity: "Equity on TEST", drawdown: "Drawdown", monthly_returns: "Monthly returns",
  rolling_sharpe: "Rolling Sharpe", turnover: "Turnover", weights: "Weights over time" };

export async function render(root, params, ctx) {
  const url = params.kind === "policy" ? `/api/policies/${params.id}/report` : `/api/sessions/${params.id}/report`;
  const status = el("p", { class: "muted", role: "status", id: "report-status" }, "replaying TEST for the sheet\u2026");
  root.append(el("div", { class: "crumbs" }, link("#/sessions", "Sessions"), " / tear sheet"), status);
  const { sheet, figures } = await api(url);
  if (!ctx.alive) return;
  status.remove();
  const s = sheet.search;
  root.append(el("div", { class: "session-head" },
    el("h1", null, sheet.title),
    el("p", { class: "muted" }, sheet.goal, " \u2014 ", link(`#/session/${sheet.session_id}`, sheet.session_id, { class: "mono" }),
      ` \u00b7 ${sheet.mode} \u00b7 ${sheet.data} \u00b7 TEST ${sheet.dates[0]} \u2192 ${sheet.dates[sheet.dates.length - 1]}`),
    kpis([
      ["pick", s.pick ?? "\u2013", s.pick_reason], ["trial", `#${s.pick_trial_idx}`],
      ["gates", sheet.gates == null ? "\u2013" : sheet.gates.passed ? "GO" : "NO-GO", sheet.gates_summary, sheet.gates?.passed ? "" : "halted"],
      ["search", `${s.n_trials} trials, ${s.n_kept} kept`, `${s.n_discarded} discarded, ${s.n_failed} failed, ${s.n_invalid} invalid; stopped: ${s.stop_reason}`],
      sheet.limits && ["limits", sheet.outside_limits != null ? el("span", { class: "outside", id: "report-outside" }, `NOT WITHIN THE LIMITS: ${sheet.outside_limits}`) : `${sheet.limits}, met`,
        null, sheet.outside_limits != null ? "wide" : ""],
    ], "report-kpis")));
  const shown = METRICS.filter(([k]) => sheet.lines.some((l) => k in (l.metrics || {})));
  root.append(section("On TEST: the pick, the default and 1/N", table([
    { label: "", value: ([, label]) => label },
    ...sheet.lines.map((l) => ({ label: l.label, num: true, value: ([k]) => metric(k, l.metrics?.[k]) }))], shown, { id: "report-metrics", sides: true })));
  const grid = el("div", { class: "plots" });
  root.append(section("Charts", grid));
  const boxes = Object.keys(figures).map((name) => { const c = chartBox("report-" + name); grid.append(el("div", { class: "plot-box" }, c)); return [name, c]; });
  root.append(
    section("Gates", table([
      { label: "gate", value: (g) => g.gate }, { label: "passed", value: (g) => el("span", { class: g.passed ? "go" : "nogo" }, g.passed ? "pass" : "FAIL") },
      { label: "value", num: true, value: (g) => num(g.value, 3) }, { label: "rule", value: (g) => `${g.comparison} ${num(g.threshold, 3)}` },
      { label: "the test's words", value: (g) => g.reason, cls: () => "wrap" }], sheet.gates?.results || [], { id: "report-gates", empty: "no gates were checked" })),
    ...(sheet.notes.length ? [section("Notes", el("ul", { id: "report-notes" }, sheet.notes.map((n) => el("li", null, n))))] : []));
  for (const [name, box] of boxes) {
    const f = figures[name], layout = f.layout || {};
    await plot(box, ours({ ...f, layout: { ...layout, title: layout.title?.text ? layout.title : TITLES[name] || name } }), 320);
    if (!ctx.alive) return;
  }
}
