// The REST API as the page calls it. Every call says it comes from this page (X-Alphaloop: 1):
// the server refuses a request that changes state without it or a JSON body, which no other
// web site can send here. The token, when the server asks for one, is kept in this browser.

const TOKEN_KEY = "alphaloop-token";
export function token() { return localStorage.getItem(TOKEN_KEY) || ""; }
export function setToken(value) { localStorage.setItem(TOKEN_KEY, value); }

function headers(extra = {}) {
  const h = { "Content-Type": "application/json", "X-Alphaloop": "1", ...extra };
  if (token()) h.Authorization = "Bearer " + token();
  return h;
}

export class ApiError extends Error {
  constructor(message, status, body) { super(message); this.status = status; this.body = body; }
}

export async function api(path, options = {}) {
  const response = await fetch(path, { ...options, headers: headers(options.headers) });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new ApiError(body.detail || response.statusText, response.status, body);
  return body;
}
export function post(path, body, extra = {}) {
  return api(path, { method: "POST", body: body === undefined ? undefined : JSON.stringify(body), ...extra });
}
// A file the server answers (the CSV export): fetched with the token, saved by the browser.
export async function download(path, name) {
  const response = await fetch(path, { headers: headers() });
  if (!response.ok) throw new ApiError((await response.json().catch(() => ({}))).detail || response.statusText, response.status);
  const a = document.createElement("a");
  a.href = URL.createObjectURL(await response.blob());
  a.download = name; document.body.append(a); a.click(); a.remove();
  return name;
}

export function toast(text) {
  const t = document.getElementById("toast");
  t.textContent = text; t.hidden = false;
  clearTimeout(toast.timer); toast.timer = setTimeout(() => { t.hidden = true; }, 6000);
}

// A random key per start: the server starts one session per key, so a second click (or a
// retry) sent before the first answer gets that answer instead of a second session.
export function newKey() {
  if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
  return "k-" + Date.now().toString(36) + "-" + Math.random().toString(36).slice(2, 12);
}

// Reads a job the page started until it ends; resolves with the job (its error, if any).
export async function followJob(jobId, alive = () => true) {
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    if (!alive()) return null;
    const job = await api(`/api/jobs/${jobId}`);
    if (job.status !== "queued" && job.status !== "running") return job;
  }
}
