// alphaloop's page: one app with a view per task, its state in the address (hash routes), so
// every view survives a reload and can be shared. Each view is a module of views/ with
// render(root, params, ctx); ctx.every(ms, fn) polls while the view is shown, and stops when
// another view replaces it.
import { setToken, toast, token } from "./api.js";
import { parseHash } from "./address.js";
import { $, $$ } from "./dom.js";

const ROUTES = [
  [/^#\/sessions$/, "sessions", () => ({})],
  [/^#\/session\/([\w-]+)\/trial\/(\d+)$/, "trial", (m) => ({ session: m[1], idx: Number(m[2]) })],
  [/^#\/session\/([\w-]+)(?:\/(history|trials|plots|validation|notes))?$/, "session", (m) => ({ session: m[1], tab: m[2] || "history" })],
  [/^#\/report\/(session|policy)\/([\w-]+)$/, "report", (m) => ({ kind: m[1], id: m[2] })],
  [/^#\/compare(?:\/([\w:-]+)\/([\w:-]+))?$/, "compare", (m) => ({ a: m[1], b: m[2] })],
  [/^#\/deploy$/, "deploy", () => ({})],
  [/^#\/feedback$/, "feedback", () => ({})],
  [/^#\/schedule$/, "schedule", () => ({})],
  [/^#\/lab$/, "lab", () => ({})],
  [/^#\/knobs$/, "knobs", () => ({})],
  [/^#\/walks$/, "walks", () => ({})],
  [/^#\/walk\/([\w-]+)$/, "walk", (m) => ({ walk: m[1] })],
];
// The header's link of each view (a trial and a session light "Sessions").
const NAV = { trial: "sessions", session: "sessions", report: "sessions", walk: "walks" };

let current = null;
async function route() {
  const { path, query } = parseHash();
  const found = ROUTES.map(([re, name, params]) => [re.exec(path), name, params]).find(([m]) => m);
  if (current) current.stop();
  const root = $("#view");
  const ctx = lifetime();
  current = ctx;
  if (!found) {
    root.replaceChildren(Object.assign(document.createElement("p"), { className: "muted", textContent: `no view at ${path}: see the links above` }));
    return;
  }
  const [m, name, params] = found;
  for (const a of $$("#nav a[data-view]")) a.classList.toggle("current", a.dataset.view === (NAV[name] || name));
  document.body.dataset.view = name;
  root.dataset.view = name;
  try {
    const view = await import(`./views/${name}.js`);
    if (!ctx.alive) return;
    root.replaceChildren();
    await view.render(root, params(m), { ...ctx, query });
  } catch (e) {
    if (!ctx.alive) return;
    console.warn(e);
    root.replaceChildren(Object.assign(document.createElement("p"), { className: "error", textContent: e.message }));
  }
}

// A view's lifetime: its polls run until the next route.
function lifetime() {
  const timers = new Set();
  const ctx = {
    alive: true,
    stop() { ctx.alive = false; for (const t of timers) clearTimeout(t); timers.clear(); },
    // Runs fn now and every ms after each run ends; resolves when the first run has ended.
    every(ms, fn) {
      const run = () => Promise.resolve().then(fn).catch((e) => console.warn(e)).finally(() => {
        if (ctx.alive) { const t = setTimeout(() => { timers.delete(t); run(); }, ms); timers.add(t); }
      });
      return run();
    },
  };
  return ctx;
}

const tokenInput = $("#token");
tokenInput.value = token();
tokenInput.addEventListener("change", () => { setToken(tokenInput.value); toast("token saved in this browser"); route(); });
window.addEventListener("hashchange", route);
if (!location.hash || location.hash === "#" || location.hash === "#/") history.replaceState(null, "", "#/sessions");
route();
