// #/session/{id}[/tab]: one session, its key figures (the pick, its TEST, against 1/N and the
// default) and tabs for its history, trials, plots, validation report and notes.
import { api, post, toast } from "../api.js";
import { el, kpis, link, section } from "../dom.js";
import { num, statusClass, versus, when } from "../format.js";
import { historyFigure, previewHistory } from "../history.js";
import { chartBox, plot } from "../plot.js";
import { bestText } from "./sessions.js";

const TABS = ["history", "trials", "plots", "validation", "notes"];
const BIG = 2000;  // past this many rows the history is a sample: drawn first as a preview

function pickText(p) {
  const b = p.best;
  if (!b) return ["\u2013", "no trial has ranked yet"];
  const who = b.kind === "baseline" ? "the default" : `trial #${b.idx}`;
  return [`${num(b.objective)}`, `${b.final ? "finalize's pick" : "the incumbent so far"}: ${who}`, who];
}

function header(root, sid, tab) {
  const head = el("div", { class: "session-head" },
    el("div", { class: "crumbs" }, link("#/sessions", "Sessions"), " / ", el("span", { class: "mono" }, sid)),
    el("h1", { id: "session-goal" }, "\u2026"),
    el("div", { id: "session-kpis" }),
    el("div", { class: "row actions" },
      el("button", { type: "button", id: "research-stop", hidden: true }, "Stop after this trial"),
      link("#/compare", "Compare with\u2026", { id: "compare-with", class: "button" }),
      link(`#/report/session/${sid}`, "Tear sheet", { id: "tear-sheet", class: "button", hidden: true })));
  const nav = el("nav", { class: "tabs", "aria-label": "session views" }, TABS.map((t) =>
    link(`#/session/${sid}/${t}`, t, { class: t === tab ? "current" : null, "aria-current": t === tab ? "page" : null, dataset: { tab: t } })));
  root.append(head, nav);
  head.querySelector("#research-stop").addEventListener("click", async () => {
    try { const r = await post(`/api/research/${sid}/stop`); toast(`session ${r.session}: ${r.status}`); } catch (e) { toast(e.message); }
  });
}

function showPulse(p, row) {
  const s = p.session, [best, hint, who] = pickText(p);
  document.getElementById("session-goal").textContent = s.goal;
  const bestNode = p.best ? link(`#/session/${s.id}/trial/${p.best.idx}`, bestText(p)) : best;
  const box = document.getElementById("session-kpis");
  box.replaceChildren(kpis([
    ["status", el("span", { class: statusClass(p.status) }, p.status), s.final?.stop_reason || null],
    ["search trials", `${p.counted}/${s.budget}`, `${p.trials} journaled rows (baseline seeds, confirmations, TEST included)`],
    ["mode", s.mode, `proposer ${s.proposer}`, "secondary"],
    ["objective", p.objective.label, p.objective.explained, "wide"],
    ["limits", p.objective.admissible === false ? el("span", { class: "outside", id: "outside-limits" }, `NOT WITHIN THE LIMITS: ${p.objective.admissible_reason || p.objective.limits}`) : p.objective.limits || "none", p.objective.admissible_reason, p.objective.admissible === false ? "wide" : "secondary"],
    [p.best?.final ? "pick (validation)" : "best so far (validation)", bestNode, hint + (p.best?.sharpe != null ? `; Sharpe ${num(p.best.sharpe)}` : "")],
    row && ["pick TEST", num(row.best_test), "the pick's objective on the sealed TEST window"],
    row && ["default TEST", num(row.default_test)],
    row && ["vs 1/N (TEST)", versus(row.vs_equal_weight), null, row.vs_equal_weight?.note ? "wide" : ""],
    row && ["vs default (TEST)", versus(row.vs_default), null, row.vs_default?.note ? "wide" : ""],
    row && row.go != null && ["verdict", el("span", { class: row.go ? "go" : "nogo" }, row.go ? "GO" : "NO-GO")],
    ["started", when(s.created_at), null, "secondary"],
  ], "pulse"));
  document.getElementById("research-stop").hidden = !["running"].includes(p.status);
  // a tear sheet once finalize has evaluated the pick on TEST
  document.getElementById("tear-sheet").hidden = !s.final?.pick;
}

// The history tab: the optimisation history (a preview at once for a long one), then plotly.
async function historyTab(body, sid, ctx, first) {
  const chart = chartBox("research-chart");
  chart.dataset.session = sid;
  const read = el("div", { class: "read", id: "research-chart-read" });
  const analyze = el("button", { type: "button", class: "analyze" }, "Analyze");
  body.append(section(null, chart, el("div", { class: "row" }, analyze,
    el("span", { class: "muted" }, "a reading of this chart in 4\u20136 bullets, grounded in its data")), read));
  analyze.addEventListener("click", async () => {
    read.textContent = "reading\u2026";
    try {
      const r = await post("/api/charts/interpret", { kind: "research_progress", context: { session_id: sid } });
      read.replaceChildren(el("ul", null, r.bullets.map((b) => el("li", null, b))), el("div", { class: "sig" }, r.signature));
    } catch (e) { read.textContent = e.message; }
  });
  let sig = "";
  let label = "validation objective";
  const draw = async (h) => {
    if (!ctx.alive || !h.idx.length) { if (!h.idx.length) chart.replaceChildren(el("p", { class: "muted" }, "no search trial yet")); return; }
    // drawn at once on a canvas while plotly.js is not run yet (a cold load) or the history is
    // long (plotly's chart of thousands of points takes a tenth of a second or more)
    if ((h.total > BIG || !window.Plotly) && !chart.querySelector(".main-svg")) { previewHistory(chart, h); await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0))); }
    await plot(chart, historyFigure(h, "", label), 340);
  };
  return async (p) => {
    const next = `${p.trials}:${p.status}:${p.tail.map((t) => t.id + t.status).join(",")}`;
    if (next === sig) return;
    sig = next;
    label = p.objective?.label ?? label;
    await draw(await (first.history || api(`/api/sessions/${sid}/history`)));
    first.history = null;
  };
}

export async function render(root, params, ctx) {
  const sid = params.session, tab = TABS.includes(params.tab) ? params.tab : "history";
  // Asked for together at once: the pulse (key figures) and, for the history tab, the chart.
  const first = { history: tab === "history" ? api(`/api/sessions/${sid}/history`) : null };
  first.history?.catch(() => null);
  header(root, sid, tab);
  const body = el("div", { id: "tab-body", dataset: { tab } });
  root.append(body);
  let onPulse = null, row = null, rowAt = 0;
  if (tab === "history") onPulse = await historyTab(body, sid, ctx, first);
  const polled = ctx.every(1500, async () => {
    let p;
    try { p = await api(`/api/pulse?session_id=${encodeURIComponent(sid)}`); } catch (e) {
      // a session that does not exist: the server's words, in place of the figures, once
      if (e.status !== 404) throw e;
      ctx.stop();
      document.getElementById("session-goal").textContent = "no such session";
      document.getElementById("session-kpis").replaceChildren(el("p", { class: "error", id: "session-missing", role: "alert" }, e.message));
      body.replaceChildren();
      return;
    }
    if (!ctx.alive) return;
    // the verdict (TEST and the paired tests) from the session list, now and then
    if (!row || Date.now() - rowAt > 10000) {
      const list = await api("/api/dashboard/sessions");
      row = list.items.find((r) => r.id === sid) || null; rowAt = Date.now();
    }
    if (!ctx.alive) return;
    showPulse(p, row);
    if (onPulse) await onPulse(p);
  });
  if (tab !== "history") {
    const mod = await import(`./session_${tab}.js`);
    await mod.render(body, sid, ctx);
  }
  await polled;
}
