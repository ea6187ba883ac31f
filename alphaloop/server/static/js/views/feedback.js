// #/feedback: the preference flywheel: pairs and the last DPO run, and the portfolio manager's
// decisions awaiting a verdict, each decided with a form (approve, reject, or override with
// weights checked here and by the server).
import { api, post, toast } from "../api.js";
import { el, kpis, section, table } from "../dom.js";
import { counts, num, pct } from "../format.js";

function overrideForm(d, done) {
  const symbols = Object.keys(d.target_weights);
  const inputs = symbols.map((s) => el("label", { class: "weight" }, s, el("input", { type: "number", name: s, min: 0, max: 100, step: 0.1, required: true, value: (100 * d.target_weights[s]).toFixed(1), class: "short" })));
  const sum = el("span", { class: "muted sum", role: "status" });
  const form = el("form", { class: "override-form", id: `override-${d.id}` },
    el("p", null, `Override decision ${d.id} (${d.date}): the weights you would have held, in percent.`),
    el("div", { class: "row" }, inputs), sum,
    el("label", { class: "grow" }, "note (optional)", el("input", { name: "__note", maxlength: 500 })),
    el("div", { class: "row" }, el("button", { type: "submit", class: "confirm-override" }, "Record override"), el("button", { type: "button", class: "cancel" }, "Cancel")));
  const check = () => {
    const total = symbols.reduce((a, s) => a + Number(form.elements[s].value || 0), 0);
    sum.textContent = `sum ${total.toFixed(1)}%` + (Math.abs(total - 100) > 0.05 ? " \u2014 the weights must sum to 100%" : "");
    form.elements[symbols[0]].setCustomValidity(Math.abs(total - 100) > 0.05 ? "the weights must sum to 100%" : "");
  };
  form.addEventListener("input", check); check();
  form.querySelector(".cancel").addEventListener("click", () => form.remove());
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault(); check();
    if (!form.reportValidity()) return;
    const weights = Object.fromEntries(symbols.map((s) => [s, Number(form.elements[s].value) / 100]));
    const note = form.elements.__note.value.trim() || undefined;
    try { await post(`/api/decisions/${d.id}/verdict`, { verdict: "override", weights, note }); toast(`decision ${d.id}: override`); form.remove(); done(); } catch (e) { toast(e.message); }
  });
  return form;
}

export async function render(root, _params, ctx) {
  const stats = el("div", { id: "pref-stats" }), dpo = el("p", { class: "muted", id: "dpo-last" });
  const holder = el("div", { id: "decisions" }), formBox = el("div", { id: "verdict-form" });
  root.append(section("Preference learning", stats, dpo), section("Decisions awaiting a verdict", el("p", { class: "muted" },
    "Each tick of the portfolio manager, oldest first. Approve or reject it, or override it with the weights you would have held; the T+5 outcome labels the pair."), holder, formBox));
  const refresh = async () => {
    const [s, runs, decisions] = await Promise.all([api("/api/preferences/stats"), api("/api/dpo/runs"), api("/api/decisions")]);
    if (!ctx.alive) return;
    stats.replaceChildren(kpis([["preference pairs", String(s.total)], ["labelled", String(s.labelled)], ["new since the last DPO run", String(s.new_since_training ?? 0)],
      ...Object.entries(s.counts || {}).map(([k, v]) => [k.replace(/_/g, " "), counts(v)])], "pref-kpis"));
    const last = runs.items[runs.items.length - 1];
    dpo.textContent = last ? `last DPO run #${last.id}: ${last.status}` + (last.accuracy_after != null ? `, held-out accuracy ${pct(last.accuracy_before, 1)} \u2192 ${pct(last.accuracy_after, 1)}` : "") + (last.reason ? ` (${last.reason})` : "") : "no DPO run yet";
    const decide = async (d, verdict) => {
      try { await post(`/api/decisions/${d.id}/verdict`, { verdict }); toast(`decision ${d.id}: ${verdict}`); refresh(); } catch (e) { toast(e.message); }
    };
    holder.replaceChildren(table([
      { label: "id", num: true, value: (d) => d.id }, { label: "book", value: (d) => d.book }, { label: "day", value: (d) => d.date },
      { label: "held before", value: (d) => Object.entries(d.pre_weights || {}).filter(([, w]) => w > 0.0005).map(([k, w]) => `${k} ${pct(w, 1)}`).join(", ") || "cash", cls: () => "wrap" },
      { label: "target weights", value: (d) => Object.entries(d.target_weights).filter(([, w]) => w > 0.0005).map(([k, w]) => `${k} ${pct(w, 1)}`).join(", "), cls: () => "wrap" },
      { label: "verdict", value: (d) => el("div", { class: "buttons" },
        el("button", { type: "button", class: "verdict-approve", dataset: { id: d.id }, onclick: () => decide(d, "approve") }, "approve"),
        el("button", { type: "button", class: "verdict-reject", dataset: { id: d.id }, onclick: () => decide(d, "reject") }, "reject"),
        el("button", { type: "button", class: "verdict-override", dataset: { id: d.id }, onclick: () => { formBox.replaceChildren(overrideForm(d, refresh)); formBox.scrollIntoView({ block: "nearest" }); } }, "override\u2026")) },
    ], decisions.items, { id: "decisions-table", cards: true, empty: "no decision awaits a verdict" }));
  };
  await ctx.every(5000, refresh);
  void num;
}
