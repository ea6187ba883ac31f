// #/walks: every walk (the research loop replayed over history) with its verdict and the edge
// its record could detect, and a form to start one.
import { api, newKey, post, toast } from "../api.js";
import { el, link, section, table } from "../dom.js";
import { count, signed, statusClass, when } from "../format.js";

export function verdictBadge(go) {
  if (go === true) return el("span", { class: "go" }, "GO");
  if (go === false) return el("span", { class: "nogo" }, "NO-GO");
  return "\u2013";
}
// "+0.32 / +0.43": the Sharpe edges the record detects with 80% power (default / 1/N)
export function edges(d) { return d ? `${signed(d.default, 2)} / ${signed(d.equal_weight, 2)}` : "\u2013"; }

const COLUMNS = [
  { label: "walk", value: (w) => link(`#/walk/${w.id}`, w.id, { class: "mono" }) },
  { label: "goal", value: (w) => w.goal, cls: () => "wrap" },
  { label: "status", value: (w) => el("span", { class: statusClass(w.status) }, w.status) },
  { label: "epochs", value: (w) => `${w.cadence} \u00b7 ${w.rule} rule`, title: "cadence \u00b7 the rule that chose what each epoch traded" },
  { label: "out of sample", value: (w) => (w.first_day ? `${w.first_day} \u2192 ${w.last_day}` : "\u2013") },
  { label: "days", num: true, value: (w) => count(w.n_days) },
  { label: "verdict", value: (w) => verdictBadge(w.go) },
  { label: "detectable edge", num: true, value: (w) => edges(w.detectable), title: "the Sharpe edge over the default / over 1/N its record detects with 80% power" },
  { label: "started", value: (w) => when(w.created_at) },
];

function startForm() {
  const progress = el("div", { class: "muted", role: "status", id: "walk-progress" });
  const select = (name, options) => el("select", { name }, options.map((o) => el("option", { value: o === "default" ? "" : o }, o)));
  const form = el("form", { id: "walk-form", class: "row" },
    el("label", { class: "grow" }, "goal", el("input", { name: "goal", value: "maximise Sharpe", required: true, maxlength: 500 })),
    el("label", null, "data", el("input", { name: "data", value: "sp500", required: true, class: "short" })),
    el("label", null, "budget", el("input", { name: "budget", type: "number", value: 10, min: 1, max: 100000, required: true, class: "short", title: "search trials of each epoch's session" })),
    el("label", null, "cadence", select("cadence", ["yearly", "quarterly", "monthly"])),
    el("label", null, "rule", select("rule", ["default", "strict", "kept", "best"])),
    el("label", null, "start", el("input", { name: "start", type: "date", title: "blank: the first day the sessions' folds fit before" })),
    el("button", { type: "submit", id: "walk-start" }, "Start"));
  let key = null;
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const button = form.querySelector("#walk-start");
    if (button.disabled || !form.reportValidity()) return;
    key = key || newKey();
    const f = new FormData(form);
    const body = { goal: f.get("goal"), data: f.get("data"), budget: Number(f.get("budget")), cadence: f.get("cadence") };
    if (f.get("rule")) body.rule = f.get("rule");  // left out: the server's default rule
    if (f.get("start")) body.start = f.get("start");
    button.disabled = true; button.textContent = "Starting\u2026"; progress.textContent = "checking the epochs and starting a worker\u2026";
    try {
      const started = await post("/api/walks", body, { headers: { "Idempotency-Key": key } });
      key = null;
      location.hash = `#/walk/${started.walk_id}`;
    } catch (e) { key = null; progress.textContent = ""; toast(e.message); }
    finally { button.disabled = false; button.textContent = "Start"; }
  });
  return el("details", { class: "panel", id: "new-walk" }, el("summary", null, "Start a walk"), form, progress,
    el("p", { class: "muted" }, "Each epoch runs a research session of this budget on the data cut there; a start or cadence the data cannot hold is refused, naming what fits."));
}

export async function render(root, _params, ctx) {
  const list = el("div", { id: "walks-list" }, el("p", { class: "muted" }, "loading\u2026"));
  root.append(
    section("Walks", el("p", { class: "muted" },
      "A walk replays the research loop over history: at each epoch a research session runs on the data cut there, and its pick trades the period after it beside the default config and 1/N. ",
      "The periods end to end are its out-of-sample record, each day seen once; the verdict tests it against both, and says the smallest Sharpe edge it could have detected."), list),
    startForm());
  let sig = "";
  await ctx.every(4000, async () => {
    const page = await api("/api/walks");
    // the form's "default" leaves the rule to the server, and says which one that is
    const fallback = root.querySelector("#walk-form [name=rule] option[value='']");
    if (fallback) fallback.textContent = `default (${page.default_rule})`;
    const next = JSON.stringify(page.items);
    if (next === sig) return;
    sig = next;
    list.replaceChildren(table(COLUMNS, page.items, { id: "walks-table", cards: true, empty: "no walk yet: start one below, or with `alphaloop walk GOAL`",
      rowAttrs: (w) => ({ "data-id": w.id }), onRow: (w) => { location.hash = `#/walk/${w.id}`; } }));
  });
}
