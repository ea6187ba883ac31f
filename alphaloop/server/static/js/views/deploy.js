// #/deploy: the portfolio manager's book (equity and P&L as `pm status` says them, positions,
// the last tick's orders and fills, a tick, halt and resume) and the policy library with its
// activation form. Nothing here needs a terminal.
import { api, followJob, post, toast } from "../api.js";
import { el, kpis, section, table } from "../dom.js";
import { money, num, pct, signedMoney, signedPct, versus, when } from "../format.js";
import { chartBox, dateAxis, layout, plot } from "../plot.js";

function bookPanel(ctx) {
  const box = el("div", { id: "book-kpis" }, el("p", { class: "muted" }, "loading\u2026"));
  const tickForm = el("form", { class: "row", id: "tick-form" },
    el("label", null, "day (blank: the next one)", el("input", { name: "date", type: "date", id: "tick-date" })),
    el("button", { type: "submit", id: "book-tick" }, "Tick now"), el("span", { class: "muted", id: "tick-status", role: "status" }));
  const haltForm = el("form", { class: "row", id: "book-halt-form" },
    el("label", { class: "grow" }, "reason (journaled)", el("input", { name: "why", id: "book-why", required: true, maxlength: 500, placeholder: "why halt or resume the main book" })),
    el("button", { type: "submit", id: "book-halt", value: "halt" }, "Halt"), el("button", { type: "submit", id: "book-resume", value: "resume" }, "Resume"));
  const equity = chartBox("book-equity", "chart"), weights = chartBox("book-weights", "chart small");
  const positions = el("div", { id: "book-positions" }), orders = el("div", { id: "book-orders" }), events = el("div", { id: "book-events" });
  tickForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const status = tickForm.querySelector("#tick-status"), date = new FormData(tickForm).get("date");
    try {
      const job = await post("/api/pm/tick", date ? { date } : {});
      status.textContent = `tick queued (job ${job.job_id})\u2026`;
      const done = await followJob(job.job_id, () => ctx.alive);
      if (!done) return;
      status.textContent = done.error ? `tick ${done.status}: ${done.error.message}` : `tick done: ${done.result?.status ?? done.status}`;
      refresh();
    } catch (e) { status.textContent = ""; toast(e.message); }
  });
  haltForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const action = ev.submitter?.value || "halt", why = haltForm.querySelector("#book-why").value.trim();
    if (!why) { haltForm.querySelector("#book-why").setCustomValidity(`give the reason to ${action} (it is journaled)`); haltForm.reportValidity(); return; }
    try {
      if (action === "halt") await post("/api/pm/halt", { why }); else await post(`/api/pm/resume?why=${encodeURIComponent(why)}`);
      toast(`book main: ${action === "halt" ? "halted" : "resumed"}`); haltForm.reset(); refresh();
    } catch (e) { toast(e.message); }
  });
  haltForm.querySelector("#book-why").addEventListener("input", (ev) => ev.target.setCustomValidity(""));
  let sig = "";
  const refresh = async () => {
    let st;
    try { st = await api("/api/pm/status"); } catch (e) { box.replaceChildren(el("p", { class: "muted", id: "book-status" }, e.message + " \u2014 activate a policy below, then tick.")); return; }
    const h = await api("/api/pm/history");
    if (!ctx.alive) return;
    const b = st.book, last = st.decisions[0];
    box.replaceChildren(kpis([
      ["equity", money(st.equity), `marked at the close of ${st.marked_at ?? "\u2013"} (as \`alphaloop pm status\`)`, "equity"],
      ["P&L", st.pnl == null ? "\u2013" : `${signedMoney(st.pnl)} (${signedPct(st.pnl / b.initial_cash)})`, `since the book opened with ${money(b.initial_cash)}`, "pnl"],
      ["marked at", st.marked_at ?? "\u2013", "the close its positions are valued at"],
      ["cash", money(b.cash)], ["positions", String(Object.keys(b.positions).length)],
      ["last tick", b.as_of ?? "\u2013"], ["broker", b.broker],
      ["state", b.halted ? `HALTED: ${b.halted}` : "trading", null, b.halted ? "halted" : ""],
    ], "book-status"));
    const value = (s) => st.values?.[s];
    positions.replaceChildren(table([
      { label: "symbol", value: ([s]) => s }, { label: "shares", num: true, value: ([, n]) => num(n, 5) },
      { label: "value", num: true, value: ([s]) => money(value(s)) }, { label: "weight", num: true, value: ([s]) => pct(st.equity ? value(s) / st.equity : null, 1) }],
    Object.entries(b.positions).sort((x, y) => (value(y[0]) ?? 0) - (value(x[0]) ?? 0)), { id: "positions-table", cards: true, empty: "no position" }));
    orders.replaceChildren(el("p", { class: "muted" }, last ? `tick of ${last.date}: ${last.status}${last.halt_reason ? ` (${last.halt_reason})` : ""}, ${last.orders.length} orders, ${last.fills.length} fills` : "no tick yet"),
      table([
        { label: "symbol", value: (o) => o.symbol }, { label: "side", value: (o) => o.side ?? ((o.shares ?? o.qty) >= 0 ? "buy" : "sell") },
        { label: "shares", num: true, value: (o) => num(Math.abs(o.shares ?? o.qty ?? 0), 5) }, { label: "price", num: true, value: (o) => money(o.price, 2) },
        { label: "cost", num: true, value: (o) => money(o.cost, 2) }, { label: "status", value: (o) => o.status ?? "\u2013" }, { label: "client order id", value: (o) => o.client_order_id || o.broker_order_id || "\u2013", cls: () => "mono" }],
      last ? last.orders : [], { id: "orders-table", cards: true, empty: "no order" }));
    events.replaceChildren(table([
      { label: "when", value: (e) => when(e.created_at) }, { label: "halt / resume", value: (e) => e.kind }, { label: "origin", value: (e) => e.origin },
      { label: "reason", value: (e) => e.reason, cls: () => "wrap" }], st.events, { id: "events-table", cards: true, empty: "never halted" }));
    const next = JSON.stringify([h.dates, st.equity, st.marked_at]);
    if (next === sig) return;
    sig = next;
    // Equity before each tick (valued at the close before it), in date order; then the book
    // at its last close. A mark no later than the last tick values the book after that tick at
    // an earlier close: drawn as its own point, never joined after a later date (which drew a
    // cost as a gain).
    const pts = h.dates.map((d, i) => [d, h.equity[i]]).filter(([, y]) => y != null).sort((p, q) => (p[0] < q[0] ? -1 : p[0] > q[0] ? 1 : 0));
    const xs = pts.map((p) => p[0]), ys = pts.map((p) => p[1]);
    const lastTick = xs[xs.length - 1];
    const after = st.equity != null && st.marked_at && (!lastTick || st.marked_at > lastTick);
    const text = xs.map(() => "before the tick");
    if (after) { xs.push(st.marked_at); ys.push(st.equity); text.push("at the close"); }
    const data = [{ type: "scatter", mode: "lines+markers", name: "equity before each tick", x: xs, y: ys, line: { color: "#1d5fbf" }, text, hovertemplate: "%{x} %{text}: %{y:,.0f}<extra></extra>" }];
    if (st.equity != null && st.marked_at && !after) {
      data.push({ type: "scatter", mode: "markers", name: `after the tick of ${lastTick}, at the close of ${st.marked_at}`, x: [st.marked_at], y: [st.equity],
        marker: { color: "#b3261e", size: 10, symbol: "diamond" }, hovertemplate: `after the tick of ${lastTick}, valued at the close of %{x}: %{y:,.0f}<extra></extra>` });
    }
    const span = [...xs, st.marked_at].filter(Boolean).sort();
    if (span.length) data.push({ type: "scatter", mode: "lines", name: "opened with", x: [span[0], span[span.length - 1]], y: [b.initial_cash, b.initial_cash], line: { dash: "dot", color: "#5a6375" }, hoverinfo: "skip" });
    await plot(equity, { data, layout: layout({ title: `Equity: before each tick, and at the close of ${st.marked_at ?? "\u2013"}`, xaxis: dateAxis(span, { title: { text: "date" } }), yaxis: { title: { text: "equity" }, tickformat: ",.0f" } }) }, 300);
    equity.dataset.last = String(st.equity ?? ys[ys.length - 1]);
    equity.dataset.order = JSON.stringify(xs);
    // one tick is a point, not a line (a one-point line draws nothing): markers too
    await plot(weights, { data: Object.entries(h.weights).map(([sym, ws]) => ({ x: h.dates, y: ws, name: sym, stackgroup: "w", mode: "lines+markers", hovertemplate: `${sym} %{y:.1%}<extra></extra>` })),
      layout: layout({ title: "Target weights at each tick", xaxis: dateAxis(h.dates, { title: { text: "date" } }), yaxis: { title: { text: "weight" }, range: [0, 1], tickformat: ".0%" } }) }, 260);
  };
  const panel = section("Portfolio manager: book main", box, tickForm, haltForm, equity,
    el("div", { class: "two" }, el("div", null, el("h3", null, "Positions"), positions), el("div", null, el("h3", null, "The last tick's orders and fills"), orders)),
    weights, el("h3", null, "Halts and resumes"), events);
  panel.id = "pm-panel";
  return { panel, refresh };
}

function activationForm(p, go, why, done) {
  const form = el("form", { class: "activate-form", id: `activate-${p.id}` },
    el("p", null, go ? `Activate policy ${p.id}: it has a GO.` : `Policy ${p.id} has no GO (${why}). Activating it is an override, journaled with its reason.`),
    go ? null : el("label", { class: "grow" }, "reason (journaled)", el("textarea", { name: "reason", rows: 2, required: true, minlength: 3, maxlength: 500 })),
    go ? null : el("label", { class: "check" }, el("input", { type: "checkbox", name: "confirm", required: true }), "I activate it without a GO"),
    el("div", { class: "row" }, el("button", { type: "submit", class: "confirm-activate" }, go ? "Activate" : "Activate anyway"), el("button", { type: "button", class: "cancel" }, "Cancel")));
  form.querySelector(".cancel").addEventListener("click", () => form.remove());
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (!form.reportValidity()) return;
    const reason = new FormData(form).get("reason");
    const q = go ? "" : `?force=true&reason=${encodeURIComponent(String(reason).trim())}`;
    try { await post(`/api/policies/${p.id}/activate${q}`); toast(`policy ${p.id} is active`); form.remove(); done(); } catch (e) { toast(e.message); }
  });
  return form;
}

function libraryPanel(ctx, afterActivate) {
  const holder = el("div", { id: "policies" }), formBox = el("div", { id: "activation" });
  const refresh = async () => {
    const page = await api("/api/policies");
    if (!ctx.alive) return;
    const rows = page.items.slice().reverse();
    holder.replaceChildren(table([
      { label: "id", num: true, value: (p) => p.id }, { label: "kind", value: (p) => p.kind },
      { label: "session", value: (p) => (p.session_id ? el("a", { href: `#/session/${p.session_id}`, class: "mono" }, p.session_id) : p.source) },
      { label: "val objective", num: true, value: (p) => num(p.val_objective) }, { label: "TEST Sharpe", num: true, value: (p) => num(p.test_metrics?.sharpe) },
      { label: "gates", value: (p) => (p.gates_passed == null ? "\u2013" : p.gates_passed ? "pass" : "fail") },
      { label: "vs 1/N (TEST)", value: (p) => versus(p.session_verdict?.vs_equal_weight), cls: () => "wrap" },
      { label: "verdict", value: (p) => { const v = p.session_verdict; const go = p.gates_passed === true && v?.go === true;
        return el("span", { class: go ? "go" : "nogo" }, go ? "GO" : v?.go == null ? "no verdict yet" : v.pick === "default" ? "NO-GO: default picked" : "NO-GO"); } },
      { label: "override", value: (p) => (p.override ? el("span", { class: "override" }, `activated without a GO: ${p.override}`) : "\u2013"), cls: () => "wrap" },
      { label: "", value: (p) => el("a", { href: `#/report/policy/${p.id}`, class: "sheet-link" }, "tear sheet") },
      { label: "", value: (p) => {
        if (p.active) return el("strong", { class: "active-mark" }, "active");
        const v = p.session_verdict, go = p.gates_passed === true && v?.go === true;
        const why = [p.gates_passed === false ? "gates fail" : null, v?.go === false ? (v.pick === "default" ? "the default was picked" : "does not beat 1/N") : null, v?.go == null ? "no session verdict yet" : null].filter(Boolean).join("; ");
        return el("button", { type: "button", class: "activate", dataset: { id: p.id }, onclick: () => {
          formBox.replaceChildren(activationForm(p, go, why, async () => { await refresh(); afterActivate(); }));
          formBox.scrollIntoView({ block: "nearest" }); formBox.querySelector("textarea, button")?.focus(); } }, go ? "activate" : "activate anyway\u2026"); } },
    ], rows, { id: "policies-table", cards: true, empty: "no policy yet: a finished session publishes its pick", rowAttrs: (p) => ({ class: p.active ? "active" : null, "data-id": p.id }) }));
  };
  return { panel: section("Policy library", el("p", { class: "muted" }, "A policy with a GO (its gates pass and its session's pick beats 1/N on TEST) activates at once; any other is an override with a reason."), holder, formBox), refresh };
}

export async function render(root, _params, ctx) {
  const book = bookPanel(ctx), lib = libraryPanel(ctx, () => book.refresh());
  root.append(book.panel, lib.panel);
  await Promise.all([ctx.every(5000, book.refresh), ctx.every(5000, lib.refresh)]);
}
