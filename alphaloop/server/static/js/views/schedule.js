// #/schedule: the scheduler's jobs, their next and last runs, and a button to run one now.
import { api, followJob, post, toast } from "../api.js";
import { el, section, table } from "../dom.js";
import { statusClass, when } from "../format.js";

export async function render(root, _params, ctx) {
  const state = el("p", { class: "muted", id: "scheduler-state" }), holder = el("div", { id: "jobs" });
  root.append(section("Scheduler", state, holder));
  const refresh = async () => {
    const s = await api("/api/schedule/jobs");
    if (!ctx.alive) return;
    state.textContent = s.scheduler_pid ? `scheduler running (pid ${s.scheduler_pid})` : "no scheduler running for this home (alphaloop scheduler start); a job still runs now from here";
    holder.replaceChildren(table([
      { label: "job", value: (j) => j.name }, { label: "cron (UTC)", value: (j) => j.cron, cls: () => "mono" },
      { label: "next run", value: (j) => when(j.next_run) }, { label: "last run", value: (j) => (j.last_run ? when(j.last_run.started_at) : "never") },
      { label: "outcome", value: (j) => (j.last_run ? el("span", { class: statusClass(j.last_run.outcome) }, j.last_run.outcome + (j.last_run.summary ? ": " + j.last_run.summary.slice(0, 120) : "")) : "\u2013"), cls: () => "wrap" },
      { label: "", value: (j) => el("button", { type: "button", class: "run-now", dataset: { job: j.name }, onclick: async () => {
        try { const r = await post(`/api/schedule/${j.name}/run`); toast(`${r.job} started (job ${r.job_id})`); followJob(r.job_id, () => ctx.alive).then(refresh).catch((e) => console.warn(e)); } catch (e) { toast(e.message); } } }, "run now") },
    ], s.jobs, { id: "jobs-table", cards: true, rowAttrs: (j) => ({ "data-job": j.name }) }));
  };
  await ctx.every(3000, refresh);
}
