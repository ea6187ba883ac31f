// The trials tab: one page at a time, sorted, filtered and counted by the server (a session of
// any length puts one page of rows in the DOM), with a column chooser for metrics and knobs and
// the table's state in the address. TEST rows are apart, below: another window.
import { api, download, toast } from "../api.js";
import { el, link, section, table } from "../dom.js";
import { METRICS, STATUSES, knob, metric, metricLabel, num, seconds, statusClass } from "../format.js";
import { parseHash, setQuery } from "../address.js";

const LIMIT = 50;
// The knobs' names, read from /api/knobs when the tab opens (the server's one list, never a copy).
let KNOBS = [];
const DEFAULT_COLS = ["sharpe", "max_drawdown", "annual_return"];
const SEARCH_KINDS = ["search", "baseline", "confirm"];

// Each changed knob as it ran (the config's value), its clip beside it: a proposal out of bounds
// ran at the bound, and the proposed value is not what the objective measured.
function changes(r, clips) {
  const clipped = Object.fromEntries((clips?.[r.id] || []).map((c) => [c.knob, c]));
  return Object.entries(r.changes || {}).map(([k, v]) => {
    const c = clipped[k], ran = r.config?.[k] ?? (c ? c.applied : v);
    return `${k}=${knob(ran)}` + (c ? ` (proposed ${knob(c.proposed)}, clipped: ${c.reason})` : "");
  }).join(", ");
}
function reason(r) {
  const parts = [r.error || r.reason || ""];
  if (r.status === "raced out" && r.partial_objective != null) parts.unshift(`${num(r.partial_objective)} on ${r.folds_run} of ${r.n_folds} folds`);
  if (r.violation && !parts[0].includes(r.violation)) parts.push(r.violation);
  return parts.filter(Boolean).join("; ");
}

function state(query) {
  return {
    sort: query.get("sort") || "idx", order: query.get("order") || "asc", offset: Number(query.get("offset") || 0),
    status: query.get("status") || "", kind: query.get("kind") || "", knob: query.get("knob") || "",
    low: query.get("low") || "", high: query.get("high") || "",
    cols: (query.get("cols") ?? DEFAULT_COLS.join(",")).split(",").filter(Boolean),
  };
}
function toQuery(st) {
  const q = new URLSearchParams();
  for (const k of ["sort", "order", "offset", "status", "kind", "knob", "low", "high"]) {
    const v = st[k]; if (v !== "" && v != null && !(k === "sort" && v === "idx") && !(k === "order" && v === "asc") && !(k === "offset" && v === 0)) q.set(k, v);
  }
  if (st.cols.join(",") !== DEFAULT_COLS.join(",")) q.set("cols", st.cols.join(","));
  return q;
}
function apiQuery(st, extra = {}) {
  const q = new URLSearchParams({ sort: st.sort, order: st.order });
  if (st.status) q.set("status", st.status);
  for (const k of st.kind ? [st.kind] : SEARCH_KINDS) q.append("kind", k);
  if (st.knob) { q.set("knob", st.knob); if (st.low !== "") q.set("low", st.low); if (st.high !== "") q.set("high", st.high); }
  for (const [k, v] of Object.entries(extra)) q.set(k, v);
  return q;
}

function columns(sid, st, clips = {}, label = "") {
  const cols = [
    { label: "#", num: true, sort: "idx", value: (r) => link(`#/session/${sid}/trial/${r.idx}`, String(r.idx)) },
    { label: "kind", sort: "kind", value: (r) => r.kind },
    // a trial outside the user's limits is marked so, whatever its status
    { label: "status", sort: "status", value: (r) => el("span", null, el("span", { class: statusClass(r.status) }, r.status),
      r.violation ? el("span", { class: "outside limit-mark", title: r.violation }, " \u2717 outside the limits") : null) },
    { label: label ? `objective: ${label}` : "objective", num: true, sort: "objective", value: (r) => num(r.objective), title: "comparable: over all of the trial's folds (a raced-out trial's partial score is in its reason)" },
  ];
  for (const c of st.cols) {
    if (KNOBS.includes(c)) cols.push({ label: c, num: true, sort: c, value: (r) => knob(r.config?.[c]) });
    else cols.push({ label: metricLabel(c), num: true, sort: "metric_" + c, value: (r) => metric(c, r.metrics?.[c]) });
  }
  cols.push(
    { label: "changed knobs (as run)", value: (r) => changes(r, clips), cls: () => "wrap" },
    { label: "reason", value: reason, cls: () => "wrap reason" },
    { label: "time", num: true, sort: "elapsed_s", value: (r) => seconds(r.elapsed_s) });
  return cols;
}

function chooser(st, onChange) {
  const box = (name, label) => el("label", { class: "check" }, el("input", { type: "checkbox", name, checked: st.cols.includes(name) }), label);
  const d = el("details", { class: "chooser", id: "column-chooser" }, el("summary", null, "Columns"),
    el("fieldset", null, el("legend", null, "metrics"), METRICS.map(([k, label]) => box(k, label))),
    el("fieldset", null, el("legend", null, "knobs"), KNOBS.map((k) => box(k, k))));
  d.addEventListener("change", () => onChange([...d.querySelectorAll("input:checked")].map((i) => i.name)));
  return d;
}

function filterForm(st, onApply, onCsv) {
  const sel = (name, options, value) => el("select", { name }, [["", "any"], ...options.map((o) => [o, o])].map(([v, t]) => el("option", { value: v, selected: v === value }, t)));
  const f = el("form", { id: "trials-filter", class: "row" },
    el("label", null, "status", sel("status", STATUSES, st.status)),
    el("label", null, "kind", sel("kind", SEARCH_KINDS, st.kind)),
    el("label", null, "knob", sel("knob", KNOBS, st.knob)),
    el("label", null, "from", el("input", { name: "low", type: "number", step: "any", value: st.low, class: "short" })),
    el("label", null, "to", el("input", { name: "high", type: "number", step: "any", value: st.high, class: "short" })),
    el("button", { type: "submit", id: "trials-apply" }, "Filter"),
    el("button", { type: "button", id: "trials-csv" }, "Export CSV"));
  f.addEventListener("submit", (ev) => { ev.preventDefault(); const d = new FormData(f); onApply({ status: d.get("status"), kind: d.get("kind"), knob: d.get("knob"), low: d.get("low"), high: d.get("high") }); });
  f.querySelector("#trials-csv").addEventListener("click", onCsv);
  return f;
}

export async function render(body, sid, ctx) {
  const st = state(parseHash().query);
  const [{ knobs }, first] = await Promise.all([api("/api/knobs"), api(`/api/pulse?session_id=${encodeURIComponent(sid)}`)]);
  KNOBS = knobs.map((k) => k.name);
  const label = first.objective?.label ?? "";
  const holder = el("div", { id: "trials-holder" }), range = el("span", { id: "trials-range", class: "muted" });
  const prev = el("button", { type: "button", id: "trials-prev" }, "\u2190 previous"), next = el("button", { type: "button", id: "trials-next" }, "next \u2192");
  const tests = el("div", { id: "test-rows" });
  let total = 0;
  const refresh = async () => {
    setQuery(toQuery(st));
    const page = await api(`/api/sessions/${sid}/trials?` + apiQuery(st, { offset: st.offset, limit: LIMIT }));
    if (!ctx.alive) return;
    total = page.total;
    holder.replaceChildren(table(columns(sid, st, page.clips, label), page.items, { id: "trials-table", sort: st.sort, order: st.order, empty: "no trial matches",
      rowAttrs: (r) => ({ "data-id": r.id, "data-idx": r.idx, class: r.violation ? "outside-row" : null }),
      onRow: (r) => { location.hash = `#/session/${sid}/trial/${r.idx}`; },
      onSort: (key) => { st.order = st.sort === key && st.order === "asc" ? "desc" : "asc"; st.sort = key; st.offset = 0; refresh().catch((e) => toast(e.message)); } }));
    range.textContent = total ? `${st.offset + 1}\u2013${st.offset + page.items.length} of ${total.toLocaleString("en-US")}` : "no trial matches";
    prev.disabled = st.offset === 0; next.disabled = st.offset + LIMIT >= total;
  };
  const apply = (changes) => { Object.assign(st, changes, { offset: 0 }); refresh().catch((e) => toast(e.message)); };
  const csv = async () => {
    try { body.dataset.exported = await download(`/api/sessions/${sid}/trials.csv?` + apiQuery(st), `${sid}-trials.csv`); } catch (e) { toast(e.message); }
  };
  prev.addEventListener("click", () => { st.offset = Math.max(0, st.offset - LIMIT); refresh().catch((e) => toast(e.message)); });
  next.addEventListener("click", () => { st.offset += LIMIT; refresh().catch((e) => toast(e.message)); });
  body.append(
    section("Trials", el("p", { class: "muted" }, "Search, baseline and confirmation runs on VALIDATION's folds. A raced-out trial ran only its first folds: its partial score is in its reason, not in the objective column. Click a row for the trial in full."),
      el("div", { class: "row" }, filterForm(st, apply, csv), chooser(st, (cols) => { st.cols = cols; refresh().catch((e) => toast(e.message)); })),
      holder, el("div", { class: "row pager" }, prev, range, next)),
    section("TEST window", el("p", { class: "muted" }, "Evaluated once, at finalize, for the pick and the default: another window, not comparable with the objectives above."), tests));
  await refresh();
  const testPage = await api(`/api/sessions/${sid}/trials?kind=test&limit=50`);
  tests.replaceChildren(table([
    { label: "#", num: true, value: (r) => link(`#/session/${sid}/trial/${r.idx}`, String(r.idx)) },
    { label: "evaluates", value: (r) => r.reason || "test window" },
    { label: "TEST objective", num: true, value: (r) => num(r.test_objective) },
    ...DEFAULT_COLS.map((c) => ({ label: metricLabel(c), num: true, value: (r) => metric(c, r.metrics?.[c]) })),
  ], testPage.items, { id: "test-table", empty: "not evaluated yet: TEST is sealed until finalize" }));
  let sig = "";
  await ctx.every(3000, async () => {
    const p = await api(`/api/pulse?session_id=${encodeURIComponent(sid)}`);
    const s = `${p.trials}:${p.tail.map((t) => t.id + t.status).join(",")}`;
    if (sig && s !== sig) await refresh();
    sig = s;
  });
}
