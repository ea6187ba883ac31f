// #/walk/{id}: one walk. While it runs: its epochs as they begin and trade. Once finished: the
// verdict with the edge its record could detect, the record's equity and drawdowns against the
// default and 1/N, the pick of each epoch as a timeline, each period's Sharpe, each rule's
// record and the epochs (the figures are the tear sheet's: `alphaloop report WALK_ID`).
import { api, post, toast } from "../api.js";
import { el, kpis, link, section, table } from "../dom.js";
import { count, num, pct, signed, statusClass, when } from "../format.js";
import { chartBox, ours, plot } from "../plot.js";
import { edges, verdictBadge } from "./walks.js";

const CHARTS = [["equity", "walk-equity", 460], ["picks", "walk-picks", null], ["epoch_sharpe", "walk-sharpe", 320]];

// "-0.18 (p 0.926)": a record's test against a reference, or why there is none
function test(e) {
  if (!e) return "\u2013";
  if (e.note) return el("span", { title: e.note }, "none");
  return `${signed(e.test.difference, 2)} (p ${num(e.test.p_value, 3)})`;
}

const RECORD_COLUMNS = (own) => [
  { label: "rule", value: (r) => (r.rule === own ? `${r.rule} (decides)` : r.rule) },
  { label: "verdict", value: (r) => verdictBadge(r.go) },
  { label: "Sharpe", num: true, value: (r) => num(r.metrics.sharpe, 3) },
  { label: "max drawdown", num: true, value: (r) => pct(r.metrics.max_drawdown, 1) },
  { label: "vs default", num: true, value: (r) => test(r.excess.default), title: "Sharpe difference (one-sided paired test's p)" },
  { label: "edge vs default", num: true, value: (r) => signed(r.detectable.default, 2), title: "the minimum detectable edge over the default (80% power)" },
  { label: "vs 1/N", num: true, value: (r) => test(r.excess.equal_weight) },
  { label: "edge vs 1/N", num: true, value: (r) => signed(r.detectable.equal_weight, 2), title: "the minimum detectable edge over 1/N (80% power)" },
  { label: "on the default", num: true, value: (r) => r.n_default, title: "epochs that traded the default config" },
  { label: "changes", num: true, value: (r) => r.n_changes, title: "epochs whose pick differs from the epoch before's" },
];

// A short name for each searched config the walk traded, by hash: "config A", "config B"...
// in the order they first traded, as the pick timeline (alphaloop.charts.walk) names them.
export function configNames(epochs) {
  const letters = (i) => { let n = ""; for (i += 1; i; i = Math.floor((i - 1) / 26)) n = String.fromCharCode(65 + ((i - 1) % 26)) + n; return n; };
  const names = {};
  for (const e of epochs) if (e.trial_id != null && !(e.config_hash in names)) names[e.config_hash] = `config ${letters(Object.keys(names).length)}`;
  return names;
}

const EPOCH_COLUMNS = (names) => [
  { label: "#", num: true, value: (e) => e.epoch },
  { label: "period", value: (e) => `${e.start} \u2192 ${e.end}` },
  { label: "traded", value: (e) => (e.trial_id == null ? "default config" : el("span", { title: `trial ${e.trial_id}, config hash ${e.config_hash}` }, names[e.config_hash])) },
  { label: "new pick", value: (e) => (e.changed ? "yes" : "") },
  { label: "Sharpe", num: true, value: (e) => num(e.sharpe_pick, 3) },
  { label: "default", num: true, value: (e) => num(e.sharpe_default, 3) },
  { label: "1/N", num: true, value: (e) => num(e.sharpe_equal_weight, 3) },
  { label: "session", value: (e) => link(`#/session/${e.session_id}`, e.session_id, { class: "mono" }) },
];

const BEGUN_COLUMNS = [
  { label: "#", num: true, value: (e) => e.epoch },
  { label: "period", value: (e) => `${e.first_day} \u2192 ${e.last_day}` },
  { label: "traded", value: (e) => (e.traded ? "yes" : "running or waiting") },
  { label: "session", value: (e) => link(`#/session/${e.session_id}`, e.session_id, { class: "mono" }) },
];

function header(view) {
  const w = view.walk, s = w.spec.session;
  return el("div", { class: "session-head" },
    el("div", { class: "crumbs" }, link("#/walks", "Walks"), " / ", el("span", { class: "mono" }, w.id)),
    el("h1", { id: "walk-goal" }, w.goal),
    el("p", { class: "muted" }, el("span", { class: statusClass(w.status), id: "walk-status" }, w.status),
      ` \u00b7 ${w.spec.cadence} epochs, ${w.spec.rule} rule \u00b7 ${s.mode} \u00b7 ${s.data} \u00b7 ${s.proposer}, ${s.budget} trials an epoch \u00b7 started ${when(w.created_at)}`));
}

function progressPanel(view) {
  const w = view.walk, traded = view.epochs.filter((e) => e.traded).length;
  const resume = el("button", { type: "button", id: "walk-resume", hidden: !view.resume }, "Resume");
  resume.addEventListener("click", async () => {
    resume.disabled = true;
    try { const r = await post(`/api/walks/${w.id}/resume`); toast(`walk ${r.walk_id} resumed (job ${r.job_id})`); } catch (e) { toast(e.message); }
    finally { resume.disabled = false; }
  });
  return section("Progress",
    el("p", { id: "walk-where" }, `${view.epochs.length} epoch(s) begun, ${traded} traded`),
    w.error ? el("p", { class: "error", id: "walk-error" }, w.error) : null,
    el("div", { class: "row actions" }, resume),
    table(BEGUN_COLUMNS, view.epochs, { id: "walk-begun", cards: true, empty: "no epoch has begun yet" }));
}

function verdictPanel(id, report) {
  const own = report.records.find((r) => r.rule === report.rule);
  const best = report.records.find((r) => r.rule === "best");
  // an edge over the default cannot be read off a record that always traded it: the best rule's
  const fromBest = own.detectable.default == null && own !== best;
  return section("Verdict",
    kpis([
      ["verdict", verdictBadge(report.go), null, report.go ? "" : "halted"],
      ["detectable edge over the default", signed(fromBest ? best.detectable.default : own.detectable.default, 2),
        "the Sharpe difference the record's test detects with 80% power" + (fromBest ? " (read off the best rule's record: every epoch traded the default)" : "")],
      ["detectable edge over 1/N", signed(own.detectable.equal_weight, 2), "the Sharpe difference the record's test detects with 80% power"],
      ["out of sample", `${count(report.n_days)} days`, `${report.first_day} \u2192 ${report.last_day}, each day looked at once`],
      ["epochs", `${report.epochs.length} ${report.cadence}`],
      ["on the default", `${own.n_default} of ${report.epochs.length}`, "epochs whose rule traded the default config"],
      ["pick changes", String(own.n_changes)],
      ["preference pairs", String(report.pairs.n_pairs), report.pairs.n_checked ? `the period after agreed on ${report.pairs.n_agree} of ${report.pairs.n_checked}` : null],
    ], "walk-kpis"),
    el("p", { class: "headline", id: "walk-verdict" }, report.verdict),
    el("p", { class: "muted" }, "Its tear sheet, as one offline HTML file: ", el("code", { class: "mono" }, `alphaloop report ${id} --out walk.html`)));
}

async function finished(root, view, ctx) {
  const report = view.walk.report;
  const boxes = CHARTS.map(([name, id]) => [name, chartBox(id)]);
  root.append(
    verdictPanel(view.walk.id, report),
    section("The record, end to end", el("div", { class: "plots" }, boxes.map(([name, box]) => el("div", { class: "plot-box wide", dataset: { figure: name } }, box)))),
    section("Each rule's record", el("p", { class: "muted" }, "Every rule traded the same epochs' sessions: strict (the session's own pick), kept (the best kept config) or best (the best-estimated config). Each record is tested against the default and 1/N over all its days."),
      table(RECORD_COLUMNS(report.rule), report.records, { id: "walk-records", cards: true })),
    section(`Epochs (${report.rule} rule)`, table(EPOCH_COLUMNS(configNames(report.epochs)), report.epochs, { id: "walk-epochs", cards: true })));
  const { figures } = await api(`/api/walks/${view.walk.id}/figures`);
  if (!ctx.alive) return;
  for (const [name, id, height] of CHARTS) {
    const fig = figures[name];
    await plot(id, ours(fig), height || fig.layout.height || 320);
    if (!ctx.alive) return;
  }
}

export async function render(root, params, ctx) {
  let view = await api(`/api/walks/${params.walk}`);
  if (!ctx.alive) return;
  root.append(header(view));
  if (view.walk.report) { await finished(root, view, ctx); return; }
  const panel = el("div", { id: "walk-running" });
  root.append(panel);
  let sig = "", done = false;
  await ctx.every(3000, async () => {
    if (done) return;
    view = await api(`/api/walks/${params.walk}`);
    if (!ctx.alive) return;
    if (view.walk.report) { done = true; root.replaceChildren(header(view)); await finished(root, view, ctx); return; }
    const next = JSON.stringify([view.walk.status, view.walk.error, view.epochs, view.resume]);
    if (next === sig) return;
    sig = next;
    root.querySelector("#walk-status").textContent = view.walk.status;
    root.querySelector("#walk-status").className = statusClass(view.walk.status);
    panel.replaceChildren(progressPanel(view));
  });
}
