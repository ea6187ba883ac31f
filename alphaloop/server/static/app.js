// alphaloop's page: plain JS over the REST API, plotly.js served by the server itself.
"use strict";

const state = { sessionId: null, lastResearchSig: "", lastTrainSig: "", lastRatioSig: "", sessionsSig: "",
                selectedTrial: null, knobs: [],
                table: { offset: 0, limit: 50, sort: "idx", order: "asc", status: "", knob: "", low: "", high: "", total: 0 } };
const $ = (sel) => document.querySelector(sel);
const tokenInput = $("#token");
tokenInput.value = localStorage.getItem("alphaloop-token") || "";
tokenInput.addEventListener("change", () => localStorage.setItem("alphaloop-token", tokenInput.value));

// Every call says it comes from this page (X-Alphaloop: 1): the server refuses a request that
// changes state without it or a JSON body, which no other web site can send here.
async function api(path, options = {}) {
  const headers = { "Content-Type": "application/json", "X-Alphaloop": "1", ...(options.headers || {}) };
  if (tokenInput.value) headers.Authorization = "Bearer " + tokenInput.value;
  const response = await fetch(path, { ...options, headers });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(body.detail || response.statusText);
  return body;
}
function toast(text) {
  const t = $("#toast"); t.textContent = text; t.style.display = "block";
  clearTimeout(toast.timer); toast.timer = setTimeout(() => { t.style.display = "none"; }, 6000);
}
// Reads a job the page started until it ends; a failure is told with its journaled error.
async function followJob(jobId, label) {
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const job = await api(`/api/jobs/${jobId}`);
    if (job.status === "queued" || job.status === "running") continue;
    if (job.error) return toast(`${label} ${job.status}: ${job.error.type}: ${job.error.message}`);
    return toast(`${label} finished`);
  }
}
function cell(text, cls) { const td = document.createElement("td"); td.textContent = text ?? ""; if (cls) td.className = cls; return td; }
function fmt(x, digits = 4) { return typeof x === "number" ? x.toFixed(digits) : (x ?? "-"); }
// Counted on the plotted traces: plotly.js has decoded any binary-encoded arrays by then.
function countPoints(div) { return (div.data || []).reduce((n, tr) => n + ((tr.x || tr.y || []).length || 0), 0); }

// plotly.js is preloaded by the page and run here, once, when the first chart is drawn: after
// the next frame, so that what is drawn already (the table, a preview) is painted before it.
let plotlyLoaded = null;
function plotlyReady() {
  if (window.Plotly) return Promise.resolve();
  plotlyLoaded = plotlyLoaded || new Promise((resolve, reject) => requestAnimationFrame(() => setTimeout(() => {
    const script = document.createElement("script");
    script.src = $("#plotly-js").href; script.onload = resolve; script.onerror = reject;
    document.head.append(script);
  }, 0)));
  return plotlyLoaded;
}

async function plot(id, fig, height = 320) {
  await plotlyReady();
  const div = document.getElementById(id);
  div.querySelector("canvas.preview")?.remove();
  Plotly.react(div, fig.data, { ...fig.layout, autosize: true, height }, { responsive: true, displaylogo: false });
  div.dataset.points = String(countPoints(div));
}

// 1. the env
async function loadEnv() {
  const env = await api("/api/env");
  $("#env-summary").textContent =
    `${env.env_id}: observation ${env.observation_space.kind}${JSON.stringify(env.observation_space.shape)} ` +
    `(${env.observation_space.layout}); action ${env.action_space.kind}${JSON.stringify(env.action_space.shape)} in ` +
    `[${env.action_space.low}, ${env.action_space.high}] (${env.action_space.layout}); reward: ${env.reward}. ` +
    `Config: ${Object.entries(env.config).map(([k, v]) => k + "=" + v).join(", ")} (shown for ${env.n_assets} assets).`;
  const body = $("#knobs-table tbody"); body.replaceChildren();
  state.knobs = env.knobs.map((k) => k.name);
  $("#trials-filter select[name=knob]").append(...state.knobs.map((name) => { const o = document.createElement("option"); o.textContent = name; return o; }));
  for (const k of env.knobs) {
    const tr = document.createElement("tr");
    for (const v of [k.name, k.group, k.low, k.high, k.scale, k.default]) tr.append(cell(String(v)));
    body.append(tr);
  }
}

// 2. AutoResearch
// A random key per start: the server starts one session per key, so a second click (or a
// retry) sent before the first answer gets that answer instead of a second session.
function newKey() {
  if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
  return "k-" + Date.now().toString(36) + "-" + Math.random().toString(36).slice(2, 12);
}
async function startResearch(form) {
  const button = $("#research-start"), progress = $("#research-progress");
  if (button.disabled) return;
  state.startKey = state.startKey || newKey();
  const f = new FormData(form), t0 = Date.now();
  button.disabled = true; button.textContent = "Starting\u2026";
  const tick = () => { progress.textContent = `starting a worker\u2026 ${((Date.now() - t0) / 1000).toFixed(0)} s`; };
  tick(); const timer = setInterval(tick, 500);
  try {
    const started = await api("/api/research", { method: "POST", headers: { "Idempotency-Key": state.startKey },
      body: JSON.stringify({ goal: f.get("goal"), mode: f.get("mode"), budget: Number(f.get("budget")),
        data: f.get("data"), metric: f.get("metric") }) });
    state.startKey = null;
    follow(started.session_id);
    progress.textContent = started.session_id ? `session ${started.session_id} started (job ${started.job_id}, worker ${started.pid})`
                                              : `job ${started.job_id} started (worker ${started.pid}); its session is not journaled yet`;
  } catch (e) { state.startKey = null; progress.textContent = ""; toast(e.message); }
  finally { clearInterval(timer); button.disabled = false; button.textContent = "Start"; }
}
// Follows one session (the newest when id is null): its status, chart and trial table. Given
// its number of trials (the session list knows it), its table page and chart data are asked
// for right after its pulse rather than once it is back: a round trip less before they are
// drawn. (pollResearch sends the pulse before it first waits, and reads these after.)
function follow(id, trials) {
  state.sessionId = id; state.lastResearchSig = ""; state.table.offset = 0; state.tableSig = "";
  $("#trial-detail").hidden = true; state.selectedTrial = null;
  const followed = pollResearch();
  state.ahead = id && trials != null ? { sid: id, big: trials > BIG, chart: chartData(id, trials), page: trialsPage(id) } : null;
  followed.then(() => Promise.all([loadNote("session"), loadValidation()])).catch((e) => console.warn(e));
}
// What follow() asked for ahead, when it is for this session and the right kind of chart.
function takeAhead(sid, trials) {
  const a = state.ahead; state.ahead = null;
  if (a) a.page.catch(() => null);  // one not used is dropped without an unhandled rejection
  return a && a.sid === sid && a.big === trials > BIG ? a : null;
}
$("#research-form").addEventListener("submit", (ev) => { ev.preventDefault(); startResearch(ev.target); });
$("#research-stop").addEventListener("click", async () => {
  if (!state.sessionId) return toast("no session to stop");
  try { const r = await api(`/api/research/${state.sessionId}/stop`, { method: "POST" }); toast(`session ${r.session}: ${r.status}`); }
  catch (e) { toast(e.message); }
});

// The trial table: one page at a time, sorted, filtered and counted by the server, so a
// session of any length puts at most one page of rows in the DOM.
const SORTABLE = new Set(["idx", "kind", "status", "objective"]);
function tableQuery(extra = {}) {
  const t = state.table, q = new URLSearchParams({ sort: t.sort, order: t.order });
  if (t.status) q.set("status", t.status);
  if (t.knob) { q.set("knob", t.knob); if (t.low !== "") q.set("low", t.low); if (t.high !== "") q.set("high", t.high); }
  for (const [k, v] of Object.entries(extra)) q.set(k, v);
  return q;
}
// A baseline or confirmation seed, or the test run, earns no verdict of its own (journaled keep
// once it ran): it shows "ran", as in the command line's tables.
function statusOf(t) { return ["baseline", "confirm", "test"].includes(t.kind) && t.status === "keep" ? "ran" : t.status; }
function changesOf(t) { return Object.entries(t.delta?.changes || {}).map(([k, v]) => `${k}=${typeof v === "number" ? +v.toPrecision(4) : v}`).join(", "); }
function trialRow(t, clips) {
  const tr = document.createElement("tr"); tr.dataset.id = t.id;
  if (t.id === state.selectedTrial) tr.className = "selected";
  const clipText = (clips || []).map((c) => `${c.knob} ${c.proposed}\u2192${c.applied}`).join("; ");
  tr.append(cell(t.idx), cell(t.kind), cell(statusOf(t), "status-" + statusOf(t)), cell(fmt(t.objective)), cell(changesOf(t)), cell(clipText));
  tr.addEventListener("click", () => showTrial(t.id));
  return tr;
}
function trialsPage(sid) { const t = state.table; return api(`/api/sessions/${sid}/trials?` + tableQuery({ offset: t.offset, limit: t.limit })); }
// Draws the table's page (``pending``: one asked for already, with the table as it is).
async function refreshTrials(pending) {
  if (!state.sessionId) return;
  const t = state.table, sid = state.sessionId;
  const page = await (pending || trialsPage(sid));
  if (sid !== state.sessionId) return;
  t.total = page.total;
  $("#trials-table tbody").replaceChildren(...page.items.map((row) => trialRow(row, page.clips[row.id])));
  $("#trials-range").textContent = page.total ? `${t.offset + 1}\u2013${t.offset + page.items.length} of ${page.total}` : "no trial matches";
  $("#trials-prev").disabled = t.offset === 0;
  $("#trials-next").disabled = t.offset + t.limit >= t.total;
}
document.querySelectorAll("#trials-table th").forEach((th) => th.addEventListener("click", () => {
  const key = th.dataset.key; if (!SORTABLE.has(key)) return;
  const t = state.table; t.order = t.sort === key && t.order === "asc" ? "desc" : "asc"; t.sort = key; t.offset = 0;
  refreshTrials().catch((e) => toast(e.message));
}));
$("#trials-filter").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const f = new FormData(ev.target), t = state.table;
  Object.assign(t, { status: f.get("status"), knob: f.get("knob"), low: f.get("low"), high: f.get("high"), offset: 0 });
  refreshTrials().catch((e) => toast(e.message));
});
$("#trials-prev").addEventListener("click", () => { state.table.offset = Math.max(0, state.table.offset - state.table.limit); refreshTrials().catch((e) => toast(e.message)); });
$("#trials-next").addEventListener("click", () => { state.table.offset += state.table.limit; refreshTrials().catch((e) => toast(e.message)); });
// The export goes through fetch so that it carries the token when the server asks for one.
$("#trials-csv").addEventListener("click", async (ev) => {
  ev.preventDefault();
  if (!state.sessionId) return toast("no session to export");
  const headers = { "X-Alphaloop": "1" };
  if (tokenInput.value) headers.Authorization = "Bearer " + tokenInput.value;
  const r = await fetch(`/api/sessions/${state.sessionId}/trials.csv?` + tableQuery(), { headers });
  if (!r.ok) return toast((await r.json().catch(() => ({}))).detail || r.statusText);
  const a = document.createElement("a"); a.href = URL.createObjectURL(await r.blob());
  a.download = `${state.sessionId}-trials.csv`; document.body.append(a); a.click(); a.remove();
  state.lastExport = a.download;
});

// One trial in full: config (changed knobs marked), facts, clips, the exact prompt, and the
// equity curve of its validation returns.
async function showTrial(id) {
  const sid = state.sessionId;
  const full = await api(`/api/sessions/${sid}/trials/${id}`);
  const t = full.trial; state.selectedTrial = t.id;
  document.querySelectorAll("#trials-table tbody tr").forEach((tr) => tr.classList.toggle("selected", Number(tr.dataset.id) === t.id));
  $("#trial-detail").hidden = false; $("#trial-detail").dataset.trial = t.id;
  $("#trial-title").textContent = `trial #${t.idx} (${t.kind}, ${statusOf(t)}) \u2014 objective ${fmt(t.objective)}`;
  const metrics = Object.entries(t.metrics || {}).map(([k, v]) => `${k} ${fmt(v, 3)}`).join(", ");
  const clips = full.clips.map((c) => `${c.knob} ${c.proposed}\u2192${c.applied} (${c.reason})`).join("; ");
  $("#trial-facts").textContent = [`proposer ${t.proposer ?? "-"}`, `seed ${t.seed ?? "-"}`, `${fmt(t.elapsed_s, 2)} s`,
    t.rationale ? `rationale: ${t.rationale}` : "", metrics ? `metrics: ${metrics}` : "", clips ? `clips: ${clips}` : "",
    t.reason ? `verdict: ${t.reason}` : "", t.error ? `error: ${t.error}` : ""].filter(Boolean).join(" \u00b7 ");
  showFolds(full.folds || []);
  const changed = t.delta?.changes || {};
  $("#trial-config tbody").replaceChildren(...Object.entries(t.config).map(([k, v]) => {
    const tr = document.createElement("tr"); tr.append(cell(k), cell(String(v)), cell(k in changed ? "changed" : "")); return tr; }));
  $("#trial-prompt").textContent = t.prompt || "(no prompt: this trial was not proposed by a language model)";
  loadNote("trial").catch((e) => console.warn(e));
  const returns = t.val_returns || [];
  let equity = 1; const ys = returns.map((r) => (equity *= 1 + r));
  await plot("trial-equity", { data: [{ y: ys, mode: "lines", name: "equity (validation)" }],
    layout: { title: { text: `trial #${t.idx}: equity over the validation window` }, xaxis: { title: { text: "day" } }, yaxis: { title: { text: "growth of 1" } } } }, 240);
}

// The walk-forward folds the trial was scored on, oldest window first.
function showFolds(folds) {
  $("#trial-folds").hidden = !folds.length;
  $("#trial-folds-note").textContent = folds.length ? `scored on ${folds[0].n_folds} walk-forward folds` +
    (folds.length < folds[0].n_folds ? ` (${folds.length} journaled)` : "") : "no folds: scored on VALIDATION alone";
  rows("trial-folds", folds.map((f) => { const m = f.metrics || {};
    return [`${f.fold + 1}/${f.n_folds}`, `${f.start_date} \u2192 ${f.end_date}`, f.n_days, fmt(f.objective, 3), fmt(m.sharpe, 3),
      fmt(m.sortino, 3), fmt(m.max_drawdown, 3), fmt(m.annual_return, 3), fmt(m.cvar_95, 4), fmt(m.annual_turnover, 2)]; }));
}

// The session list: every session with its verdict; a click follows it.
async function pollSessions() {
  const page = await api("/api/dashboard/sessions");
  const sig = JSON.stringify(page.items.map((r) => [r.id, r.status, r.trials, r.best_validation]));
  if (sig === state.sessionsSig) return;
  state.sessionsSig = sig;
  $("#sessions-table tbody").replaceChildren(...page.items.map((r) => {
    const tr = document.createElement("tr"); tr.dataset.id = r.id;
    if (r.id === state.sessionId) tr.className = "selected";
    if (r.go === false) tr.classList.add("nogo");
    tr.append(cell(r.n), cell(r.goal), cell(r.mode), cell(r.proposer), cell(r.status, "status-" + r.status), cell(`${r.trials}/${r.budget}`),
      cell(fmt(r.best_validation)), cell(fmt(r.best_test)), cell(fmt(r.default_test)), cell(r.pick ?? "-"), cell(versus(r.vs_equal_weight)));
    tr.addEventListener("click", () => { follow(r.id, r.trials); document.querySelectorAll("#sessions-table tr.selected").forEach((x) => x.classList.remove("selected")); tr.classList.add("selected"); $("#panel-research").scrollIntoView(); });
    return tr;
  }));
}
// Search plots of the followed session, on demand (importance fits a model of the search).
$("#plots-draw").addEventListener("click", async () => {
  const sid = state.sessionId; if (!sid) return toast("follow a session first");
  const status = $("#plots-status"); status.textContent = "drawing\u2026";
  try {
    const [par, imp] = await Promise.all([api(`/api/sessions/${sid}/plots/parallel`),
      api(`/api/sessions/${sid}/plots/importance?evaluator=${$("#importance-evaluator").value}`)]);
    await plot("parallel-chart", par, 360);
    await plot("importance-chart", imp.figure);
    document.getElementById("parallel-chart").dataset.points = String(par.data[0].dimensions[0].values.length);
    status.textContent = `${imp.n_trials} scored trials; most important: ${Object.keys(imp.importances)[0]}`;
  } catch (e) { status.textContent = e.message; }
});

// The efficient frontier, traced by the server off its event loop: seconds of solving, told
// as they pass; one trace at a time from this page.
function frontierFigure(run) {
  const pct = (x) => 100 * x, top = (w) => Object.entries(w).filter(([, v]) => v > 0.005).sort((a, b) => b[1] - a[1])
    .slice(0, 5).map(([k, v]) => `${k} ${(100 * v).toFixed(0)}%`).join(", ");
  return { data: [{ type: "scatter", mode: "lines+markers", name: "frontier", x: run.points.map((p) => pct(p.cvar)),
    y: run.points.map((p) => pct(p.expected_return)), text: run.points.map((p) => top(p.weights)),
    hovertemplate: "CVaR %{x:.2f}%, return %{y:.2f}%<br>%{text}<extra></extra>", line: { color: "#1d5fbf" } }],
  layout: { title: { text: `Mean-CVaR frontier: ${run.symbols.length} assets, ${run.horizon_days}-day horizon, CVaR at ${run.alpha}` },
    xaxis: { title: { text: `CVaR ${run.alpha} of the ${run.horizon_days}-day loss (%)` } }, yaxis: { title: { text: `expected ${run.horizon_days}-day return (%)` } } } };
}
$("#frontier-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const button = $("#frontier-draw"), status = $("#frontier-status"), f = new FormData(ev.target), t0 = Date.now();
  if (button.disabled) return;
  button.disabled = true;
  const tick = () => { status.textContent = `tracing\u2026 ${((Date.now() - t0) / 1000).toFixed(0)} s`; };
  tick(); const timer = setInterval(tick, 500);
  try {
    const run = await api(`/api/frontier?` + new URLSearchParams({ assets: f.get("assets"), points: f.get("points") }));
    await plot("frontier-chart", frontierFigure(run), 360);
    status.textContent = `${run.points.length} points, solved in ${run.solve_seconds.toFixed(1)} s; ${run.scenarios} scenarios ` +
      `(${run.distinct_scenarios} distinct) from ${run.window[0]} to ${run.window[1]}, cap ${(100 * run.max_weight).toFixed(0)}% an asset`;
  } catch (e) { status.textContent = e.message; }
  finally { clearInterval(timer); button.disabled = false; }
});

// Notes on the followed session and the open trial: saved as a new version of the one read;
// an edit made meanwhile elsewhere is a 409, and the note is reloaded instead of overwritten.
state.notes = { session: 0, trial: 0 };
function noteUrl(which) {
  const q = which === "trial" && state.selectedTrial ? `?trial_id=${state.selectedTrial}` : "";
  return `/api/sessions/${state.sessionId}/notes${q}`;
}
async function loadNote(which) {
  if (!state.sessionId) return;
  const n = await api(noteUrl(which));
  state.notes[which] = n.version;
  $(`#${which}-note`).value = n.text;
  $(`#${which}-note-version`).textContent = n.version ? `version ${n.version}, ${n.history[n.history.length - 1].created_at.slice(0, 19)}` : "no note yet";
}
for (const which of ["session", "trial"]) {
  $(`#${which}-note-save`).addEventListener("click", async () => {
    if (!state.sessionId) return toast("follow a session first");
    const body = { text: $(`#${which}-note`).value, base_version: state.notes[which] };
    if (which === "trial") body.trial_id = state.selectedTrial;
    try {
      const n = await api(`/api/sessions/${state.sessionId}/notes`, { method: "PUT", body: JSON.stringify(body) });
      state.notes[which] = n.version; $(`#${which}-note-version`).textContent = `saved as version ${n.version}`;
    } catch (e) {
      toast(e.message);
      const mine = $(`#${which}-note`).value; await loadNote(which);
      $(`#${which}-note-version`).textContent += " (reloaded: it was edited meanwhile; your edit is appended below)";
      $(`#${which}-note`).value = $(`#${which}-note`).value + "\n--- your edit ---\n" + mine;
    }
  });
}

// The validation report of the followed session, next to the pick against 1/N and the default.
function rows(id, list) { $(`#${id} tbody`).replaceChildren(...list.map((values) => { const tr = document.createElement("tr"); tr.append(...values.map((v) => cell(v))); return tr; })); }
function byStrategy(metrics, key) { return Object.entries(metrics || {}).map(([k, m]) => `${k} ${fmt(m?.[key], 2)}`).join(", "); }
async function loadValidation() {
  if (!state.sessionId) return;
  const v = await api(`/api/sessions/${state.sessionId}/validation`);
  const verdict = v.verdict, r = v.report;
  rows("validation-compare", verdict ? [verdict.vs_equal_weight, verdict.vs_default].filter(Boolean).map((c) =>
    [c.reference === "equal_weight" ? "1/N (equal weight)" : "the default config", fmt(c.sharpe_pick, 3), fmt(c.sharpe_reference, 3),
     c.note || fmt(c.difference, 3), c.note ? "-" : fmt(c.p_value, 3)]) : []);
  if (!r) {
    $("#validation-summary").textContent = `no validation report yet for ${state.sessionId}: run \`${v.command}\`` +
      (verdict && verdict.pick ? ` (finalize picked the ${verdict.pick}${verdict.go === false ? "; NO-GO" : ""})` : "");
    for (const id of ["validation-gates", "validation-wf", "validation-stress"]) rows(id, []);
    return;
  }
  const g = r.gates;
  $("#validation-summary").textContent = `${v.headline} \u2014 ` +
    `trial #${r.trial_idx} (${r.reported}), PBO ${fmt(r.pbo.pbo, 2)}${r.pbo.interval ? ` (95% ${fmt(r.pbo.interval[0], 2)}–${fmt(r.pbo.interval[1], 2)})` : ""} over ${r.pbo.n_trials} trials × ${r.pbo.n_days} days, deflated Sharpe ${fmt(r.deflated_sharpe.dsr, 3)}` +
    (r.unseen_start ? ` \u2014 unseen data (no search scored it): ${r.unseen_start} on, ${r.unseen_days} days` : "") +
    (r.walk_forward_note ? ` \u2014 walk-forward: ${r.walk_forward_note}` : "");
  rows("validation-gates", g.results.map((x) => [x.gate, x.passed ? "pass" : "FAIL", fmt(x.value, 3), `${x.comparison} ${x.threshold}`, x.reason]));
  rows("validation-wf", (r.walk_forward?.summaries || []).map((w) => [w.scheme, w.n_windows, fmt(w.mean_sharpe, 2), fmt(w.worst_sharpe, 2), `${w.positive_windows}/${w.n_windows}`, `${w.beat_equal_weight}/${w.n_windows}`, fmt(w.pooled_sharpe, 2)]));
  const data = (c) => (!r.unseen_start ? "-" : c.start >= r.unseen_start ? "unseen" : "in sample");
  rows("validation-stress", (r.stress?.cases || []).map((c) => [c.scenario, `${c.start} \u2192 ${c.end}`, data(c), byStrategy(c.metrics, "sharpe"), byStrategy(c.metrics, "max_drawdown")]));
}

// "-0.12 Sharpe (p 0.71)": the pick against a reference on TEST, or why there is no comparison.
function versus(c) {
  if (!c) return "-";
  if (c.note) return c.note;
  const d = c.difference; return `${d >= 0 ? "+" : ""}${fmt(d, 2)} Sharpe (p ${fmt(c.p_value, 2)})${c.beats ? " \u2713" : ""}`;
}

// The status line polls the session's pulse: the session, its trial count, its last trials
// and its best, read at a cost that does not grow with the session. On a change the table's
// page comes first, then the chart: the server's progress chart for a session of up to BIG
// trials; past that, the history drawn here from columns the server sampled down to what the
// chart's pixels can show (every change of the incumbent kept: its step line is exact).
const BIG = 2000;
function historyFigure(h) {
  const pick = (keep) => { const x = [], y = [];
    h.idx.forEach((v, i) => { if ((h.status[i] === "keep") === keep && h.objective[i] != null) { x.push(v); y.push(h.objective[i]); } });
    return { x, y }; };
  const kept = pick(true), other = pick(false);
  const data = [
    { type: "scatter", mode: "markers", name: "kept", ...kept, marker: { size: 4, color: "#1b7f3b" } },
    { type: "scatter", mode: "markers", name: "discarded", ...other, marker: { size: 3, color: "#9aa3b2" } },
    { type: "scatter", mode: "lines", name: "best so far", x: h.idx, y: h.incumbent, line: { color: "#e07b00", shape: "hv" } },
  ];
  if (h.baseline != null) data.push({ type: "scatter", mode: "lines", name: "default", x: [h.idx[0], h.idx[h.idx.length - 1]], y: [h.baseline, h.baseline], line: { dash: "dot", color: "#5a6375" } });
  const shown = h.sampled ? `, ${h.idx.length} drawn` : "";
  return { data, layout: { title: { text: `optimisation history (${h.total} search trials${shown})` }, hovermode: "closest",
    xaxis: { title: { text: "trial" } }, yaxis: { title: { text: "validation objective" } } } };
}
// Until plotly.js has drawn a long history (a second or more on a cold load, while plotly.js
// runs; a tenth of a second or more on a session switch) it is drawn at once on a canvas: the
// same sampled points, exact incumbent steps, the default's line and the axes, without
// plotly's hover and zoom. Returns whether it drew.
function previewHistory(div, h) {
  if (!h.idx.length) return false;
  if (window.Plotly && div.querySelector(".main-svg")) Plotly.purge(div);
  const w = div.clientWidth || 600, ht = 320, dpr = window.devicePixelRatio || 1, c = document.createElement("canvas");
  c.className = "preview"; c.width = w * dpr; c.height = ht * dpr; c.style.width = w + "px"; c.style.height = ht + "px";
  const g = c.getContext("2d"); g.scale(dpr, dpr);
  const ys = [...h.objective, ...h.incumbent, h.baseline].filter((v) => v != null && Number.isFinite(v));
  const pad = (Math.max(...ys) - Math.min(...ys)) * 0.05 || 0.5, y0 = Math.min(...ys) - pad, y1 = Math.max(...ys) + pad;
  const x0 = h.idx[0], x1 = h.idx[h.idx.length - 1];
  // plotly's default margins, its legend on the right: the chart keeps its place when plotly's replaces it
  const left = 80, right = w - 180, top = 100, bottom = ht - 80;
  const X = (x) => left + (x - x0) / ((x1 - x0) || 1) * (right - left), Y = (y) => top + (y1 - y) / ((y1 - y0) || 1) * (bottom - top);
  g.font = "12px system-ui, sans-serif"; g.fillStyle = "#1d2330"; g.strokeStyle = "#e3e6eb"; g.lineWidth = 1;
  g.textAlign = "right"; g.textBaseline = "middle";
  for (const v of niceTicks(y0, y1, 3)) { g.beginPath(); g.moveTo(left, Y(v)); g.lineTo(right, Y(v)); g.stroke(); g.fillText(String(v), left - 6, Y(v)); }
  g.textAlign = "center"; g.textBaseline = "top";
  for (const v of niceTicks(x0, x1)) g.fillText(String(v), X(v), bottom + 6);
  g.font = "14px system-ui, sans-serif"; g.fillText("trial", (left + right) / 2, bottom + 40);
  g.save(); g.translate(30, (top + bottom) / 2); g.rotate(-Math.PI / 2); g.fillText("validation objective", 0, -10); g.restore();
  g.font = "17px system-ui, sans-serif"; g.textBaseline = "middle";
  g.fillText(`optimisation history (${h.total} search trials${h.sampled ? `, ${h.idx.length} drawn` : ""})`, w / 2, 45);
  g.font = "12px system-ui, sans-serif"; g.textAlign = "left";
  const legend = [["kept", "#1b7f3b"], ["discarded", "#9aa3b2"], ["best so far", "#e07b00"]];
  if (h.baseline != null) legend.push(["default", "#5a6375"]);
  legend.forEach(([name, color], i) => { g.fillStyle = color; g.fillRect(right + 24, top + 19 * i - 4, 14, 8); g.fillStyle = "#1d2330"; g.fillText(name, right + 44, top + 19 * i); });
  let drawn = 0;
  h.idx.forEach((x, i) => { const o = h.objective[i]; if (o == null) return;
    g.fillStyle = h.status[i] === "keep" ? "#1b7f3b" : "#9aa3b2"; g.fillRect(X(x) - 1.5, Y(o) - 1.5, 3, 3); drawn++; });
  g.strokeStyle = "#e07b00"; g.lineWidth = 2; g.beginPath();
  let last = null;
  h.idx.forEach((x, i) => { const v = h.incumbent[i]; if (v == null) return;
    if (last == null) g.moveTo(X(x), Y(v)); else { g.lineTo(X(x), Y(last)); g.lineTo(X(x), Y(v)); } last = v; });
  if (last != null) g.lineTo(X(x1), Y(last));
  g.stroke();
  if (h.baseline != null) { g.strokeStyle = "#5a6375"; g.setLineDash([3, 3]); g.beginPath(); g.moveTo(X(x0), Y(h.baseline)); g.lineTo(X(x1), Y(h.baseline)); g.stroke(); }
  div.replaceChildren(c); div.dataset.points = String(drawn);
  return true;
}
// About n round values from lo to hi (an axis's ticks).
function niceTicks(lo, hi, n = 5) {
  const rough = (hi - lo || Math.abs(hi) || 1) / n, mag = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map((k) => k * mag).find((v) => v >= rough);
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step / 1e6; v += step) out.push(+v.toPrecision(10));
  return out;
}
const nextFrame = () => new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
let firstRendered;
const firstRender = new Promise((resolve) => { firstRendered = resolve; });
// The chart's data, asked for at once (alongside the table's page); null when there is none yet.
function chartData(sid, trials) {
  const data = trials > BIG ? api(`/api/sessions/${sid}/history`).then((h) => ({ h, fig: historyFigure(h) }))
                            : api(`/api/charts/research_progress?session_id=${sid}`).then((fig) => ({ fig }));
  return data.catch(() => null);
}
async function pollResearch() {
  const q = new URLSearchParams();
  if (state.sessionId) q.set("session_id", state.sessionId);
  const asked = state.sessionId, p = await api("/api/pulse?" + q);
  if (!p.session || state.sessionId !== asked) return;  // another session was followed meanwhile
  const s = p.session, found = state.sessionId !== s.id;
  if (found) { state.sessionId = s.id; state.table.offset = 0; }
  $("#research-status").textContent = `${s.id} \u2014 ${p.status}, ${p.trials} trials (budget ${s.budget}), ` +
    `best ${p.best ? fmt(p.best.objective) + " (#" + p.best.idx + ")" : "-"} \u2014 ${s.goal}`;
  const sig = `${s.id}:${p.status}:${p.trials}:${p.best?.id}:${p.tail.map((t) => t.id + t.status).join(",")}`;
  if (sig === state.lastResearchSig) return;
  state.lastResearchSig = sig;
  const ahead = takeAhead(s.id, p.trials);
  const chart = ahead ? ahead.chart : chartData(s.id, p.trials);
  await refreshTrials(ahead?.page);
  const drawn = await chart;
  const div = $("#research-chart");
  if (drawn && s.id === state.sessionId) {
    // Another session's chart (or none) is shown: the preview first, painted before plotly.js
    // draws the same points with its hover and zoom (a few ms against a tenth of a second or
    // more for its two thousand markers). Before plotly.js has run, plot() waits a frame itself.
    if (drawn.h && div.dataset.session !== s.id && previewHistory(div, drawn.h) && window.Plotly) await nextFrame();
    firstRendered();
    div.dataset.session = s.id;
    await plot("research-chart", drawn.fig);
  }
  // Its note and report only once its table and chart are drawn: they do not hold them up.
  if (found) { loadNote("session").catch((e) => console.warn(e)); loadValidation().catch((e) => console.warn(e)); }
}

// 3. manual PPO training
$("#train-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const f = new FormData(ev.target);
  let knobs = {};
  try { knobs = f.get("knobs") ? JSON.parse(f.get("knobs")) : {}; } catch (e) { return toast("knobs must be JSON, e.g. {\"learning_rate\": 0.001}"); }
  const symbols = String(f.get("symbols") || "").split(",").map((s) => s.trim()).filter(Boolean);
  try {
    const started = await api("/api/train", { method: "POST", body: JSON.stringify({
      symbols: symbols.length ? symbols : null, total_timesteps: Number(f.get("total_timesteps")), knobs, data: f.get("data") }) });
    toast(`manual run ${started.session_id ?? "(not journaled yet)"} started (job ${started.job_id}, worker ${started.pid})`);
  } catch (e) { toast(e.message); }
});
async function pollTrain() {
  const st = await api("/api/train/status");
  if (!st.session) return;
  const t = st.trial;
  $("#train-status").textContent = `${st.session.id} \u2014 ${t ? t.status : st.session.status}, ${st.curve.length} curve points` +
    (t && t.objective != null ? `, validation ${fmt(t.objective)}` : "");
  const sig = st.session.id + ":" + st.curve.length + ":" + (t && t.status);
  if (sig === state.lastTrainSig) return;
  state.lastTrainSig = sig;
  plot("train-chart", { data: [{ x: st.curve.map((p) => p[0]), y: st.curve.map((p) => p[1]), mode: "lines+markers", name: "mean episode reward" }],
    layout: { title: { text: "manual PPO run: mean episode reward" }, xaxis: { title: { text: "env steps" } }, yaxis: { title: { text: "reward" } } } });
  document.getElementById("train-chart").dataset.session = st.session.id;
}

// 4. ratio curve
async function pollRatio() {
  const sessions = await api("/api/sessions");
  const sig = sessions.items.map((s) => s.id + s.status).join(",");
  if (sig === state.lastRatioSig) return;
  state.lastRatioSig = sig;
  try { plot("ratio-chart", await api("/api/ratio-curve")); } catch (e) { /* nothing completed yet */ }
}

// every chart: Analyze
document.querySelectorAll("button.analyze").forEach((b) => b.addEventListener("click", async () => {
  const div = document.getElementById(b.dataset.chart), out = document.getElementById(b.dataset.chart + "-read");
  const context = {};
  if (div.dataset.kind === "research_progress" && state.sessionId) context.session_id = state.sessionId;
  if (div.dataset.kind === "training_curve" && div.dataset.session) context.session_id = div.dataset.session;
  out.textContent = "reading\u2026";
  try {
    const r = await api("/api/charts/interpret", { method: "POST", body: JSON.stringify({ kind: div.dataset.kind, context }) });
    const ul = document.createElement("ul");
    for (const line of r.bullets) { const li = document.createElement("li"); li.textContent = line; ul.append(li); }
    const sig = document.createElement("div"); sig.className = "sig"; sig.textContent = r.signature;
    out.replaceChildren(ul, sig);
  } catch (e) { out.textContent = e.message; }
}));

// 5. policy library
async function pollPolicies() {
  const page = await api("/api/policies");
  const body = $("#policies-table tbody"); body.replaceChildren();
  for (const p of page.items.slice().reverse()) {
    const tr = document.createElement("tr"); if (p.active) tr.className = "active";
    // The policy's own gates next to what its session concluded against 1/N and the default:
    // a policy from a session that does not beat 1/N is no GO, whatever its gates say.
    const v = p.session_verdict, go = p.gates_passed === true && v != null && v.go === true;
    const gates = (p.gates_passed == null ? "-" : p.gates_passed ? "gates pass" : "gates fail") +
      (v && v.go === false ? ` \u2014 NO-GO: ${v.pick === "default" ? "the default was picked" : "does not beat 1/N"}` : "") +
      (v && v.go == null ? " \u2014 no session verdict yet" : "") + (p.override ? ` (overridden: ${p.override})` : "");
    const vs = v ? `vs 1/N ${versus(v.vs_equal_weight)}; vs default ${versus(v.vs_default)}` : "no session verdict";
    if (v && v.go === false) tr.classList.add("nogo");
    tr.append(cell(p.id), cell(p.kind), cell(p.source), cell(p.session_id), cell(fmt(p.val_objective)),
      cell(fmt(p.test_metrics?.sharpe)), cell(gates), cell(vs));
    const td = document.createElement("td");
    if (p.active) td.textContent = "active";
    else { const btn = document.createElement("button"); btn.textContent = go ? "activate" : "activate anyway\u2026"; btn.className = "activate"; btn.dataset.id = p.id;
      btn.onclick = async () => {
        // Without a GO (its gates, and its session beating 1/N) activating is an override
        // with a reason, journaled; the server refuses a policy whose gates failed without one.
        let q = "";
        if (!go) {
          const why = prompt(`policy ${p.id} has no GO (${gates}; ${vs}); activate anyway? Give the reason (journaled):`);
          if (!why || !why.trim()) return;
          q = `?force=true&reason=${encodeURIComponent(why.trim())}`;
        }
        try { await api(`/api/policies/${p.id}/activate${q}`, { method: "POST" }); toast(`policy ${p.id} is active`); pollPolicies(); } catch (e) { toast(e.message); } };
      td.append(btn); }
    tr.append(td); body.append(tr);
  }
}

// The main book: its halt state and who halted or resumed it, why, from where.
async function pollBook() {
  let st;
  try { st = await api("/api/pm/status"); } catch (e) { $("#book-status").textContent = e.message; return; }
  const b = st.book;
  $("#book-status").textContent = `book ${b.name} (${b.broker}), as of ${b.as_of ?? "-"}` + (b.halted ? ` \u2014 HALTED: ${b.halted}` : "");
  const body = $("#book-events tbody");
  body.replaceChildren(...st.events.map((e) => { const tr = document.createElement("tr"); tr.append(cell(e.created_at.slice(0, 19)), cell(e.kind), cell(e.origin), cell(e.reason)); return tr; }));
}

// The main book over time: equity before each tick, and its target weights (stacked). Approve,
// reject and override are in the preference panel; halt and resume need a reason.
async function pollBookHistory() {
  const h = await api("/api/pm/history");
  const sig = h.dates.length + ":" + h.dates[h.dates.length - 1];
  if (sig === state.bookSig || !h.dates.length) return;
  state.bookSig = sig;
  await plot("book-equity", { data: [{ x: h.dates, y: h.equity, mode: "lines+markers", name: "equity before the tick" }],
    layout: { title: { text: `book ${h.book}: equity` }, yaxis: { title: { text: "equity" } } } }, 240);
  await plot("book-weights", { data: Object.entries(h.weights).map(([sym, ws]) => ({ x: h.dates, y: ws, name: sym, stackgroup: "w", mode: "lines" })),
    layout: { title: { text: `book ${h.book}: target weights` }, yaxis: { title: { text: "weight" }, range: [0, 1] } } }, 240);
  document.getElementById("book-equity").dataset.points = String(h.dates.length);
}
for (const [id, action] of [["book-halt", "halt"], ["book-resume", "resume"]]) {
  $("#" + id).addEventListener("click", async () => {
    const why = $("#book-why").value.trim();
    if (!why) return toast(`give the reason to ${action} (it is journaled)`);
    try {
      if (action === "halt") await api("/api/pm/halt", { method: "POST", body: JSON.stringify({ why }) });
      else await api(`/api/pm/resume?why=${encodeURIComponent(why)}`, { method: "POST" });
      toast(`book main: ${action === "halt" ? "halted" : "resumed"}`); $("#book-why").value = ""; pollBook();
    } catch (e) { toast(e.message); }
  });
}

// 6. preference learning
// {"labelled": 3, "unlabelled": 1} -> "3 labelled, 1 unlabelled"
function countsText(v) {
  if (v == null || typeof v !== "object") return String(v ?? 0);
  return Object.entries(v).map(([k, n]) => `${typeof n === "object" ? countsText(n) : n} ${k.replace(/_/g, " ")}`).join(", ");
}
async function pollPrefs() {
  let stats, runs, decisions;
  try { [stats, runs, decisions] = await Promise.all([api("/api/preferences/stats"), api("/api/dpo/runs"), api("/api/decisions")]); }
  catch (e) { $("#pref-stats").textContent = e.message; return; }
  $("#pref-stats").textContent = `preference pairs: ${stats.total} (${stats.labelled} labelled, ${stats.new_since_training ?? 0} new since the last DPO run)` +
    (stats.counts && Object.keys(stats.counts).length ? " \u2014 by source: " + Object.entries(stats.counts).map(([k, v]) => `${k}: ${countsText(v)}`).join("; ") : "");
  const last = runs.items[runs.items.length - 1];
  $("#dpo-last").textContent = last ? `last DPO run #${last.id}: ${last.status}` + (last.accuracy_after != null ? `, held-out accuracy ${fmt(last.accuracy_before, 3)} \u2192 ${fmt(last.accuracy_after, 3)}` : "") + (last.reason ? ` (${last.reason})` : "") : "no DPO run yet";
  const body = $("#decisions-table tbody"); body.replaceChildren();
  for (const d of decisions.items) {
    const tr = document.createElement("tr");
    const w = Object.entries(d.target_weights).map(([k, v]) => `${k} ${(100 * v).toFixed(1)}%`).join(", ");
    tr.append(cell(d.id), cell(d.book), cell(d.date), cell(w));
    const td = document.createElement("td");
    for (const verdict of ["approve", "override", "reject"]) {
      const btn = document.createElement("button"); btn.textContent = verdict; btn.className = "verdict-" + verdict; btn.dataset.id = d.id;
      btn.onclick = async () => {
        const body = { verdict };
        if (verdict === "override") {
          const text = prompt("override weights as JSON", JSON.stringify(d.target_weights)); if (text == null) return;
          try { body.weights = JSON.parse(text); } catch (e) { return toast("weights must be JSON"); }
        }
        try { await api(`/api/decisions/${d.id}/verdict`, { method: "POST", body: JSON.stringify(body) }); toast(`decision ${d.id}: ${verdict}`); pollPrefs(); }
        catch (e) { toast(e.message); }
      };
      td.append(btn);
    }
    tr.append(td); body.append(tr);
  }
}

// 7. scheduler
async function pollSchedule() {
  const s = await api("/api/schedule/jobs");
  $("#scheduler-state").textContent = s.scheduler_pid ? `scheduler running (pid ${s.scheduler_pid})` : "no scheduler running for this home (alphaloop scheduler start)";
  const body = $("#jobs-table tbody"); body.replaceChildren();
  for (const j of s.jobs) {
    const tr = document.createElement("tr"); tr.dataset.job = j.name;
    tr.append(cell(j.name), cell(j.cron), cell(j.next_run), cell(j.last_run ? j.last_run.started_at : "never"),
      cell(j.last_run ? j.last_run.outcome + (j.last_run.summary ? ": " + j.last_run.summary.slice(0, 80) : "") : "-", j.last_run ? "status-" + j.last_run.outcome : ""));
    const td = document.createElement("td"); const btn = document.createElement("button");
    btn.textContent = "run now"; btn.className = "run-now"; btn.dataset.job = j.name;
    btn.onclick = async () => { try { const r = await api(`/api/schedule/${j.name}/run`, { method: "POST" }); toast(`${r.job} started (job ${r.job_id}, worker ${r.pid})`); followJob(r.job_id, r.job).catch((e) => console.warn(e)); } catch (e) { toast(e.message); } };
    td.append(btn); tr.append(td); body.append(tr);
  }
}

// Runs fn now and every ms after each run ends; resolves when the first run has ended.
function every(ms, fn) {
  let first;
  const run = () => fn().catch((e) => console.warn(e)).finally(() => setTimeout(run, ms));
  const started = new Promise((resolve) => { first = resolve; });
  fn().catch((e) => console.warn(e)).finally(() => { first(); setTimeout(run, ms); });
  return started;
}
// The research panel first, alone: its first answer carries the first table and chart. The
// other panels start once those are drawn (not once plotly.js has run), so they do not compete
// with them for the server.
every(1500, () => pollResearch().finally(firstRendered));
firstRender.then(() => {
  loadEnv().catch((e) => toast(e.message));
  every(1500, pollTrain);
  every(5000, pollRatio);
  every(5000, pollSessions);
  every(4000, pollPolicies);
  every(4000, pollBook);
  every(6000, pollBookHistory);
  every(4000, pollPrefs);
  every(3000, pollSchedule);
});
