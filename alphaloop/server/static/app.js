// alphaloop's page: plain JS over the REST API, plotly.js served by the server itself.
"use strict";

const state = { sessionId: null, trialsAfter: 0, trials: new Map(), sortKey: "idx", sortAsc: true,
                lastResearchSig: "", lastTrainSig: "", lastRatioSig: "" };
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

// plotly.js is deferred after this file: charts wait for it, the API calls do not.
const plotlyReady = new Promise((resolve) => {
  if (window.Plotly) return resolve();
  document.getElementById("plotly-js").addEventListener("load", resolve, { once: true });
});

async function plot(id, fig) {
  await plotlyReady;
  const div = document.getElementById(id);
  Plotly.react(div, fig.data, { ...fig.layout, autosize: true, height: 320 }, { responsive: true, displaylogo: false });
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
// Follows one session (the newest when id is null): its status, chart and trials.
function follow(id) {
  state.sessionId = id; state.trialsAfter = 0; state.trials.clear(); state.lastResearchSig = "";
  pollResearch().catch((e) => console.warn(e));
}
$("#research-form").addEventListener("submit", (ev) => { ev.preventDefault(); startResearch(ev.target); });
$("#research-stop").addEventListener("click", async () => {
  if (!state.sessionId) return toast("no session to stop");
  try { const r = await api(`/api/research/${state.sessionId}/stop`, { method: "POST" }); toast(`session ${r.session}: ${r.status}`); }
  catch (e) { toast(e.message); }
});

function renderTrials() {
  const rows = [...state.trials.values()];
  const key = state.sortKey, dir = state.sortAsc ? 1 : -1;
  const val = (t) => key === "changes" ? Object.keys(t.delta?.changes || {}).join(",") : key === "clips" ? (t.clips || []).length : t[key];
  rows.sort((a, b) => { const x = val(a), y = val(b); return (x === y ? 0 : (x ?? -Infinity) > (y ?? -Infinity) ? 1 : -1) * dir; });
  const body = $("#trials-table tbody"); body.replaceChildren();
  for (const t of rows) {
    const tr = document.createElement("tr");
    const changes = Object.entries(t.delta?.changes || {}).map(([k, v]) => `${k}=${typeof v === "number" ? +v.toPrecision(4) : v}`).join(", ");
    const clips = (t.clips || []).map((c) => `${c.knob} ${c.proposed}\u2192${c.applied}`).join("; ");
    tr.append(cell(t.idx), cell(t.kind), cell(t.status, "status-" + t.status), cell(fmt(t.objective)), cell(changes), cell(clips));
    body.append(tr);
  }
}
document.querySelectorAll("#trials-table th").forEach((th) => th.addEventListener("click", () => {
  const key = th.dataset.key; state.sortAsc = state.sortKey === key ? !state.sortAsc : true; state.sortKey = key; renderTrials();
}));

// One call a tick: the snapshot holds the trials after the cursor with their clips. The first
// one also carries the progress chart, so the page draws it without a second round trip.
async function pollResearch() {
  const q = new URLSearchParams({ after: state.trialsAfter });
  if (state.sessionId) q.set("session_id", state.sessionId);
  if (!state.lastResearchSig) q.set("chart", "true");
  const snap = await api("/api/research/current?" + q);
  if (!snap.session) return;
  if (state.sessionId !== snap.session.id) { state.sessionId = snap.session.id; state.trials.clear(); }
  for (const t of snap.trials) state.trials.set(t.id, t);
  state.trialsAfter = snap.next_after;
  const s = snap.session;
  $("#research-status").textContent = `${s.id} \u2014 ${s.status}, ${snap.counted_trials}/${s.budget} trials, ` +
    `best ${snap.best ? fmt(snap.best.objective) + " (#" + snap.best.idx + ")" : "-"} \u2014 ${s.goal}`;
  const sig = `${s.id}:${s.status}:${[...state.trials.values()].map((t) => t.id + t.status).join(",")}`;
  if (sig !== state.lastResearchSig && state.trials.size) {
    state.lastResearchSig = sig;
    // The chart first, then the table: a long session's table is the slower of the two.
    try { await plot("research-chart", snap.chart || await api(`/api/charts/research_progress?session_id=${s.id}`)); }
    catch (e) { /* no trial finished yet */ }
    renderTrials();
  }
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
    tr.append(cell(p.id), cell(p.kind), cell(p.source), cell(p.session_id), cell(fmt(p.val_objective)),
      cell(fmt(p.test_metrics?.sharpe)), cell((p.gates_passed == null ? "-" : p.gates_passed ? "pass" : "fail") + (p.override ? ` (overridden: ${p.override})` : "")));
    const td = document.createElement("td");
    if (p.active) td.textContent = "active";
    else { const btn = document.createElement("button"); btn.textContent = "activate"; btn.className = "activate"; btn.dataset.id = p.id;
      btn.onclick = async () => {
        // Without a GO from its gates the server refuses unless a person overrides with a reason.
        let q = "";
        if (p.gates_passed !== true) {
          const why = prompt(`policy ${p.id}'s gates gave no GO; activate anyway? Give the reason (journaled):`);
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

// 6. preference learning
async function pollPrefs() {
  let stats, runs, decisions;
  try { [stats, runs, decisions] = await Promise.all([api("/api/preferences/stats"), api("/api/dpo/runs"), api("/api/decisions")]); }
  catch (e) { $("#pref-stats").textContent = e.message; return; }
  $("#pref-stats").textContent = `preference pairs: ${stats.total} (${stats.labelled} labelled, ${stats.new_since_training ?? 0} new since the last DPO run)` +
    (stats.counts ? " \u2014 " + Object.entries(stats.counts).map(([k, v]) => `${k}: ${JSON.stringify(v)}`).join("; ") : "");
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
      cell(j.last_run ? j.last_run.outcome + (j.last_run.detail ? ": " + j.last_run.detail.slice(0, 80) : "") : "-", j.last_run ? "status-" + j.last_run.outcome : ""));
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
// The research panel first, alone: its first answer carries the first chart. The other panels
// start once it is drawn, so they do not compete with it for the server.
every(1500, pollResearch).finally(() => {
  loadEnv().catch((e) => toast(e.message));
  every(1500, pollTrain);
  every(5000, pollRatio);
  every(4000, pollPolicies);
  every(4000, pollBook);
  every(4000, pollPrefs);
  every(3000, pollSchedule);
});
