// The validation tab: the newest `alphaloop validate` report (gates with their reasons, PBO,
// deflated Sharpe, walk-forward, stress) next to what finalize found against 1/N and the
// default on TEST.
import { api, followJob, post, toast } from "../api.js";
import { el, section, table } from "../dom.js";
import { num, pct, signed } from "../format.js";

function byStrategy(metrics, key, f) { return Object.entries(metrics || {}).map(([k, m]) => `${k} ${f(m?.[key])}`).join(", "); }

// What finalize computed already: PBO over the search and the pick's deflated Sharpe.
function finalizeText(f) {
  if (!f) return "finalize has not run yet";
  const pbo = f.pbo != null ? `PBO ${pct(f.pbo, 0)}` : `PBO: ${f.pbo_note || "not computed"}`;
  const dsr = f.deflated_sharpe != null ? `deflated Sharpe ${num(f.deflated_sharpe, 3)}` + (f.dsr_n_trials ? ` over ${f.dsr_n_trials} trials` + (f.dsr_set ? ` (${f.dsr_set})` : "") : "") : "deflated Sharpe: not computed";
  const psr = f.probabilistic_sharpe != null ? `, probabilistic Sharpe ${num(f.probabilistic_sharpe, 3)}` : "";
  return `finalize computed: ${pbo}, ${dsr}${psr}` + (f.gates_summary ? `; gates: ${f.gates_summary}` : "");
}

function validateButton(sid, ctx, body) {
  const status = el("span", { class: "muted", id: "validate-status", role: "status" });
  const button = el("button", { type: "button", id: "validate-run" }, "Run the full validation");
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      const job = await post(`/api/sessions/${sid}/validate`, {});
      status.textContent = `validation running (job ${job.job_id})\u2026`;
      const done = await followJob(job.job_id, () => ctx.alive);
      if (!done) return;
      if (done.error) { status.textContent = `validation ${done.status}: ${done.error.message}`; return; }
      body.replaceChildren(); await render(body, sid, ctx);
    } catch (e) { toast(e.message); status.textContent = ""; } finally { button.disabled = false; }
  });
  return el("div", { class: "row" }, button, status);
}

export async function render(body, sid, ctx = { alive: true }) {
  const v = await api(`/api/sessions/${sid}/validation`);
  const verdict = v.verdict, r = v.report;
  const compare = table([
    { label: "the pick against", value: (c) => (c.reference === "equal_weight" ? "1/N (equal weight)" : "the default config") },
    { label: "Sharpe of the pick", num: true, value: (c) => num(c.sharpe_pick) },
    { label: "Sharpe of the reference", num: true, value: (c) => num(c.sharpe_reference) },
    { label: "difference", num: true, value: (c) => c.note || signed(c.difference, 3) },
    { label: "p-value", num: true, value: (c) => (c.note ? "\u2013" : num(c.p_value, 3)) },
  ], verdict ? [verdict.vs_equal_weight, verdict.vs_default].filter(Boolean) : [], { id: "validation-compare", empty: "finalize has not run yet" });
  const summary = el("p", { id: "validation-summary", class: "headline" });
  body.append(section("Validation", summary, el("p", { id: "validation-finalize" }, finalizeText(v.finalize)), validateButton(sid, ctx, body),
    el("h3", null, "TEST: the pick against the references (paired Sharpe test)"), compare));
  if (!r) {
    summary.textContent = `no full validation report yet: run it here or \`${v.command}\`` + (verdict && verdict.pick ? ` (finalize picked the ${verdict.pick}${verdict.go === false ? "; NO-GO" : ""})` : "");
    return;
  }
  const pbo = r.pbo;
  summary.textContent = `${v.headline} \u2014 trial #${r.trial_idx} (${r.reported}), PBO ${pct(pbo.pbo, 0)}` +
    (pbo.interval ? ` (95% ${pct(pbo.interval[0], 0)}\u2013${pct(pbo.interval[1], 0)})` : "") +
    ` over ${pbo.n_trials} trials \u00d7 ${pbo.n_days} days, deflated Sharpe ${num(r.deflated_sharpe.dsr, 3)}` +
    (r.unseen_start ? ` \u2014 unseen data (no search scored it): ${r.unseen_start} on, ${r.unseen_days} days` : "") +
    (r.walk_forward_note ? ` \u2014 walk-forward: ${r.walk_forward_note}` : "");
  const data = (c) => (!r.unseen_start ? "\u2013" : c.start >= r.unseen_start ? "unseen" : "in sample");
  body.lastChild.append(
    el("h3", null, "Go/no-go gates"),
    table([
      { label: "gate", value: (g) => g.gate }, { label: "passed", value: (g) => el("span", { class: g.passed ? "go" : "nogo" }, g.passed ? "pass" : "FAIL") },
      { label: "value", num: true, value: (g) => num(g.value, 3) }, { label: "rule", value: (g) => `${g.comparison} ${num(g.threshold, 3)}` },
      { label: "reason", value: (g) => g.reason, cls: () => "wrap" }], r.gates.results, { id: "validation-gates" }),
    el("h3", null, "Walk-forward"),
    table([
      { label: "scheme", value: (w) => w.scheme }, { label: "windows", num: true, value: (w) => w.n_windows },
      { label: "mean Sharpe", num: true, value: (w) => num(w.mean_sharpe, 3) }, { label: "worst Sharpe", num: true, value: (w) => num(w.worst_sharpe, 3) },
      { label: "positive", num: true, value: (w) => `${w.positive_windows}/${w.n_windows}` }, { label: "beat 1/N", num: true, value: (w) => `${w.beat_equal_weight}/${w.n_windows}` },
      { label: "pooled Sharpe", num: true, value: (w) => num(w.pooled_sharpe, 3) }], r.walk_forward?.summaries || [], { id: "validation-wf", empty: "no walk-forward windows" }),
    el("h3", null, "Stress"),
    table([
      { label: "scenario", value: (c) => c.scenario }, { label: "window", value: (c) => `${c.start} \u2192 ${c.end}` }, { label: "data", value: data },
      { label: "Sharpe by strategy", value: (c) => byStrategy(c.metrics, "sharpe", (x) => num(x, 3)), cls: () => "wrap" },
      { label: "max drawdown by strategy", value: (c) => byStrategy(c.metrics, "max_drawdown", (x) => pct(x, 1)), cls: () => "wrap" }], r.stress?.cases || [], { id: "validation-stress", empty: "no stress case" }));
}
