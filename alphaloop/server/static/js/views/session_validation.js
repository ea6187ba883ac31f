// The validation tab: the newest `alphaloop validate` report (gates with their reasons, PBO,
// deflated Sharpe, the configs against the default under BH and Holm, walk-forward, stress)
// next to what finalize found against 1/N and the
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

// The search's configs against the default on the folds' days, as `alphaloop validate` prints
// them: which beat it at the false discovery rate (Benjamini-Hochberg), family-wise (Holm) and
// under the Rademacher Anti-Serum's bound, then each config's test.
function multiplicity(r) {
  const m = r.multiplicity;
  if (!m) return [el("p", { id: "validation-multiplicity", class: "muted" }, `configs against the default: not computed (${r.multiplicity_note || "no search config to compare"})`)];
  const named = (trials) => trials.map((i) => `#${i}`).join(", ") || "none";
  const holm = m.configs.filter((c) => c.holm).map((c) => c.trial), ras = m.configs.filter((c) => (c.ras_lower || 0) > 0).map((c) => c.trial);
  const reach = m.ras_reach == null ? "" : `; blind below ${m.ras_reach.toFixed(1)} of excess Sharpe at this length`;
  const yes = (b) => el("span", { class: b ? "go" : "muted" }, b ? "beats" : "no");
  return [
    el("div", { id: "validation-multiplicity" },
      el("p", null, `configs that beat the default at ${pct(m.q, 0)} FDR (Benjamini-Hochberg), of ${m.configs.length}: ${named(m.beat_default_fdr)}`),
      el("p", null, `at ${pct(m.alpha, 0)} family-wise (Holm): ${named(holm)}; with a Rademacher Anti-Serum lower bound above 0 (${pct(1 - m.delta, 0)}, all at once${reach}): ${named(ras)}`)),
    table([
      { label: "trial", num: true, value: (c) => `#${c.trial}` }, { label: "days", num: true, value: (c) => c.n_days },
      { label: "Sharpe less the default's", num: true, value: (c) => signed(c.sharpe_difference, 3) }, { label: "p-value", num: true, value: (c) => num(c.p_value, 3) },
      { label: `BH at ${pct(m.q, 0)} FDR`, value: (c) => yes(c.fdr) }, { label: `Holm at ${pct(m.alpha, 0)}`, value: (c) => yes(c.holm) },
      { label: "RAS lower bound", num: true, value: (c) => (c.ras_lower == null ? "\u2013" : signed(c.ras_lower, 3)) }], m.configs, { id: "validation-configs", empty: "no search config" }),
  ];
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
    el("h3", null, "Many configs tried: each against the default on the folds' days"),
    ...multiplicity(r),
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
