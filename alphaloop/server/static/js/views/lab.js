// #/lab: a manual PPO run (knobs in a form with their bounds), the cross-run ratio curve and the
// Mean-CVaR efficient frontier.
import { api, post, toast } from "../api.js";
import { el, section } from "../dom.js";
import { knob, num, pct } from "../format.js";
import { chartBox, layout, ours, plot } from "../plot.js";

function trainForm(knobs) {
  const ppo = knobs.filter((k) => k.group === "ppo" || k.group === "env");
  const fields = ppo.map((k) => el("label", { class: "knob-field" }, k.name,
    el("input", { type: "number", name: "knob:" + k.name, min: k.low, max: k.high, step: k.scale === "int" || k.scale === "int (log)" ? 1 : "any", placeholder: `default ${knob(k.default)}`, class: "short", title: `${knob(k.low)} \u2013 ${knob(k.high)} (${k.scale})` })));
  const form = el("form", { id: "train-form" },
    el("div", { class: "row" },
      el("label", null, "symbols", el("input", { name: "symbols", placeholder: "AAPL,MSFT (blank: all)", pattern: "^[A-Za-z0-9.,_ -]*$" })),
      el("label", null, "total timesteps", el("input", { name: "total_timesteps", type: "number", value: 16384, min: 64, max: 10000000, required: true, class: "short" })),
      el("label", null, "data", el("input", { name: "data", value: "sp500", required: true, class: "short" }))),
    el("fieldset", { class: "knob-grid" }, el("legend", null, "knobs (blank: the default; bounds as in the knob reference)"), fields),
    el("button", { type: "submit", id: "train-start" }, "Train"));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (!form.reportValidity()) return;
    const f = new FormData(form), knobs = {};
    for (const [k, v] of f.entries()) if (k.startsWith("knob:") && v !== "") knobs[k.slice(5)] = Number(v);
    const symbols = String(f.get("symbols") || "").split(",").map((s) => s.trim()).filter(Boolean);
    try {
      const started = await post("/api/train", { symbols: symbols.length ? symbols : null, total_timesteps: Number(f.get("total_timesteps")), knobs, data: f.get("data") });
      toast(`manual run ${started.session_id ?? "(not journaled yet)"} started (job ${started.job_id})`);
    } catch (e) { toast(e.message); }
  });
  return form;
}

async function frontierPanel() {
  const chart = chartBox("frontier-chart"), status = el("span", { id: "frontier-status", class: "muted", role: "status" });
  const form = el("form", { id: "frontier-form", class: "row" },
    el("label", null, "assets", el("input", { name: "assets", type: "number", value: 10, min: 5, max: 20, required: true, class: "short" })),
    el("label", null, "points", el("input", { name: "points", type: "number", value: 12, min: 2, max: 60, required: true, class: "short" })),
    el("button", { type: "submit", id: "frontier-draw" }, "Trace"), status);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const button = form.querySelector("button"), f = new FormData(form), t0 = Date.now();
    if (button.disabled || !form.reportValidity()) return;
    button.disabled = true;
    const timer = setInterval(() => { status.textContent = `tracing\u2026 ${((Date.now() - t0) / 1000).toFixed(0)} s`; }, 500);
    try {
      const run = await api(`/api/frontier?` + new URLSearchParams({ assets: f.get("assets"), points: f.get("points") }));
      const top = (w) => Object.entries(w).filter(([, v]) => v > 0.005).sort((a, b) => b[1] - a[1]).slice(0, 5).map(([k, v]) => `${k} ${pct(v, 0)}`).join(", ");
      await plot(chart, { data: [{ type: "scatter", mode: "lines+markers", name: "frontier", x: run.points.map((p) => p.cvar), y: run.points.map((p) => p.expected_return),
        text: run.points.map((p) => top(p.weights)), hovertemplate: "CVaR %{x:.2%}, return %{y:.2%}<br>%{text}<extra></extra>", line: { color: "#1d5fbf" } }],
      layout: layout({ title: `Mean-CVaR frontier: ${run.symbols.length} assets, ${run.horizon_days}-day horizon, CVaR at ${run.alpha}`,
        xaxis: { title: { text: `CVaR ${run.alpha} of the ${run.horizon_days}-day loss` }, tickformat: ".1%" }, yaxis: { title: { text: `expected ${run.horizon_days}-day return` }, tickformat: ".1%" } }) }, 360);
      status.textContent = `${run.points.length} points, solved in ${num(run.solve_seconds, 3)} s; ${run.scenarios} scenarios (${run.distinct_scenarios} distinct) from ${run.window[0]} to ${run.window[1]}, cap ${pct(run.max_weight, 0)} an asset`;
    } catch (e) { status.textContent = e.message; }
    finally { clearInterval(timer); button.disabled = false; }
  });
  return section("Efficient frontier", el("p", { class: "muted" }, "Mean-CVaR frontier of the first assets of the embedded S&P 500 set, each point certified (as `alphaloop frontier`)."), form, chart);
}

export async function render(root, _params, ctx) {
  const { knobs } = await api("/api/knobs");
  const trainStatus = el("p", { class: "muted", id: "train-status" }, "no manual run yet"), trainChart = chartBox("train-chart");
  const ratio = chartBox("ratio-chart");
  root.append(section("Manual PPO training", trainForm(knobs), trainStatus, trainChart), section("Cross-run ratio curve", ratio), await frontierPanel());
  let trainSig = "", ratioSig = "";
  await Promise.all([
    ctx.every(2000, async () => {
      const st = await api("/api/train/status");
      if (!st.session || !ctx.alive) return;
      const t = st.trial;
      trainStatus.textContent = `${st.session.id} \u2014 ${t ? t.status : st.session.status}, ${st.curve.length} curve points` + (t && t.objective != null ? `, validation ${num(t.objective)}` : "");
      const sig = st.session.id + ":" + st.curve.length + ":" + (t && t.status);
      if (sig === trainSig) return;
      trainSig = sig;
      await plot(trainChart, { data: [{ x: st.curve.map((p) => p[0]), y: st.curve.map((p) => p[1]), mode: "lines+markers", name: "mean episode reward", hovertemplate: "%{x:,} steps: %{y:.4g}<extra></extra>" }],
        layout: layout({ title: "Manual PPO run: mean episode reward", xaxis: { title: { text: "env steps" } }, yaxis: { title: { text: "reward" } } }) });
    }),
    ctx.every(10000, async () => {
      const sessions = await api("/api/sessions");
      const sig = sessions.items.map((s) => s.id + s.status).join(",");
      if (sig === ratioSig || !ctx.alive) return;
      ratioSig = sig;
      try { await plot(ratio, ours(await api("/api/ratio-curve")), 360); } catch (e) { ratio.replaceChildren(el("p", { class: "muted" }, "no completed trial yet")); }
    }),
  ]);
}
