// #/sessions: every research session with its pick and verdict, and a form to start one.
import { api, newKey, post, toast } from "../api.js";
import { el, link, section, table } from "../dom.js";
import { num, statusClass, versus, when } from "../format.js";

export function bestText(r) {
  // "best" is the session's pick: finalize's once it ran, the incumbent before.
  if (!r.best) return "\u2013";
  const who = r.best.kind === "baseline" ? "default" : "#" + r.best.idx;
  return `${num(r.best.objective)} (${who}${r.best.final ? "" : ", so far"})`;
}
function verdict(r) {
  if (r.go === true) return el("span", { class: "go" }, "GO");
  if (r.go === false) return el("span", { class: "nogo" }, "NO-GO");
  return "\u2013";
}

// The session's limits, and a result outside them said so.
export function limits(r) {
  const o = r.objective;
  if (!o || !o.limits) return "none";
  if (o.admissible === false) return el("span", { class: "outside", title: o.admissible_reason || "" }, `outside: ${o.limits}`);
  return o.limits + (o.admissible === true ? " \u2713" : "");
}

const COLUMNS = [
  { label: "", value: (r) => el("input", { type: "checkbox", class: "pick-compare", "aria-label": `compare ${r.id}`, dataset: { id: r.id } }) },
  { label: "#", num: true, value: (r) => r.n },
  { label: "session", value: (r) => link(`#/session/${r.id}`, r.id, { class: "mono" }) },
  { label: "goal", value: (r) => r.goal, cls: () => "wrap" },
  { label: "mode", value: (r) => `${r.mode} \u00b7 ${r.proposer}`, title: "mode \u00b7 proposer", cls: () => "wrap short" },
  { label: "status", value: (r) => el("span", { class: statusClass(r.status) }, r.status) },
  { label: "trials", num: true, value: (r) => `${r.trials}/${r.budget}`, title: "search trials counted against the budget" },
  { label: "objective", value: (r) => r.objective?.label ?? "\u2013", title: "what the best's number is: the metric, over the folds (mean \u2212 1 SE)", cls: () => "wrap short" },
  { label: "best (validation)", num: true, value: bestText, title: "the session's pick: finalize's once it ran, the incumbent before" },
  { label: "limits", value: limits, cls: () => "wrap short" },
  { label: "pick TEST", num: true, value: (r) => num(r.best_test) },
  { label: "default TEST", num: true, value: (r) => num(r.default_test) },
  { label: "vs 1/N (TEST)", value: (r) => versus(r.vs_equal_weight), cls: () => "wrap short" },
  { label: "verdict", value: verdict },
  { label: "started", value: (r) => when(r.created_at) },
];

function researchForm() {
  const progress = el("div", { class: "muted", role: "status", id: "research-progress" });
  const form = el("form", { id: "research-form", class: "row" },
    el("label", { class: "grow" }, "goal", el("input", { name: "goal", value: "maximise Sharpe, max drawdown under 15%", required: true, maxlength: 500 })),
    el("label", null, "mode", el("select", { name: "mode" }, ["cufolio_only", "ppo_only", "unified"].map((m) => el("option", null, m)))),
    el("label", null, "budget", el("input", { name: "budget", type: "number", value: 10, min: 1, max: 100000, required: true, class: "short" })),
    el("label", null, "data", el("input", { name: "data", value: "sp500", required: true, class: "short" })),
    el("label", null, "metric", el("select", { name: "metric" }, ["sharpe", "sortino", "calmar", "return"].map((m) => el("option", null, m)))),
    el("button", { type: "submit", id: "research-start" }, "Start"));
  let key = null;
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const button = form.querySelector("#research-start");
    if (button.disabled || !form.reportValidity()) return;
    key = key || newKey();
    const f = new FormData(form), t0 = Date.now();
    button.disabled = true; button.textContent = "Starting\u2026";
    const tick = () => { progress.textContent = `starting a worker\u2026 ${((Date.now() - t0) / 1000).toFixed(0)} s`; };
    tick(); const timer = setInterval(tick, 500);
    try {
      const started = await post("/api/research", { goal: f.get("goal"), mode: f.get("mode"), budget: Number(f.get("budget")),
        data: f.get("data"), metric: f.get("metric") }, { headers: { "Idempotency-Key": key } });
      key = null;
      progress.textContent = started.session_id ? `session ${started.session_id} started (job ${started.job_id}, worker ${started.pid})`
        : `job ${started.job_id} started (worker ${started.pid}); its session is not journaled yet`;
      if (started.session_id) location.hash = `#/session/${started.session_id}`;
    } catch (e) { key = null; progress.textContent = ""; toast(e.message); }
    finally { clearInterval(timer); button.disabled = false; button.textContent = "Start"; }
  });
  return el("details", { class: "panel", id: "new-session" }, el("summary", null, "Start a research session"), form, progress,
    el("p", { class: "muted" }, "The 16 knobs a proposer may change and their bounds: ", link("#/knobs", "knob reference"), "."));
}

export async function render(root, _params, ctx) {
  const list = el("div", { id: "sessions-list" }, el("p", { class: "muted" }, "loading\u2026"));
  const compare = el("a", { id: "compare-link", class: "button disabled", href: "#/compare", "aria-disabled": "true" }, "Compare 2 selected");
  root.append(
    section("Research sessions", el("p", { class: "muted" },
      "Newest first. Best is the session's pick on VALIDATION (the incumbent while it runs); TEST is the held-out window, evaluated once; \u201cvs 1/N\u201d is the pick's Sharpe against the equal-weight portfolio (paired test)."),
      el("div", { class: "row" }, compare), list),
    researchForm());
  const chosen = [];
  list.addEventListener("change", (ev) => {
    const box = ev.target.closest("input.pick-compare"); if (!box) return;
    const i = chosen.indexOf(box.dataset.id);
    if (box.checked && i < 0) chosen.push(box.dataset.id); else if (!box.checked && i >= 0) chosen.splice(i, 1);
    while (chosen.length > 2) { const old = chosen.shift(); const o = list.querySelector(`input[data-id="${old}"]`); if (o) o.checked = false; }
    const ok = chosen.length === 2;
    compare.href = ok ? `#/compare/${chosen[0]}/${chosen[1]}` : "#/compare";
    compare.classList.toggle("disabled", !ok); compare.setAttribute("aria-disabled", String(!ok));
  });
  let sig = "";
  await ctx.every(4000, async () => {
    const page = await api("/api/dashboard/sessions");
    const next = JSON.stringify(page.items);
    if (next === sig) return;
    sig = next;
    list.replaceChildren(table(COLUMNS, page.items, { id: "sessions-table", cards: true, empty: "no research session yet: start one below",
      rowAttrs: (r) => ({ "data-id": r.id, class: r.go === false ? "nogo-row" : null }) }));
    for (const id of chosen) { const box = list.querySelector(`input[data-id="${id}"]`); if (box) box.checked = true; }
  });
}
